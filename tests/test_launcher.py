"""The README's first command, ``python3 start.py``: where it opens the UI and when it runs pip
(issue 27). The full install from a fresh clone is checked by hand and by `.ci/run`; here a
venv without pip stands in for ``.venv``, so any pip run fails loudly."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import start  # noqa: E402  (the launcher is a script beside the package, not in it)

sys.path.remove(str(ROOT))


def test_inside_a_repository_it_opens_the_ui_there_and_passes_arguments_on(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "sub").mkdir()
    ranklens = str(start.BIN / "ranklens")
    assert start.command([], tmp_path / "sub") == [ranklens]  # ranklens's own default root: "."
    assert start.command(["query", "x"], tmp_path) == [ranklens, "query", "x"]


def test_outside_a_repository_it_opens_the_shipped_sample(tmp_path, capsys):
    assert start.command([], tmp_path) == [str(start.BIN / "ranklens"), str(start.SAMPLE)]
    assert "not a repository" in capsys.readouterr().err
    # The sample is the one the package ships (ranklens.SAMPLE_REPO), real files in several languages.
    import ranklens

    assert start.SAMPLE.resolve() == ranklens.SAMPLE_REPO.resolve()
    assert {p.suffix for p in start.SAMPLE.rglob("*.*")} >= {".py", ".js", ".go", ".rs", ".md"}


@pytest.fixture
def bare_venv(tmp_path, monkeypatch):
    """``.venv`` as a venv with no pip in it: ensure() succeeds only if it does not run pip."""
    env = tmp_path / ".venv"
    venv.EnvBuilder(with_pip=False).create(env)
    monkeypatch.setattr(start, "VENV", env)
    monkeypatch.setattr(start, "BIN", env / "bin")
    monkeypatch.setattr(start, "PYTHON", env / "bin" / "python")
    monkeypatch.setattr(start, "STAMP", env / "ranklens-install.json")
    return env


def test_a_matching_stamp_skips_pip_and_a_superset_of_extras_serves_fewer(bare_venv):
    start.STAMP.write_text(json.dumps({"deep,milvus,test": start.fingerprint()}))
    assert start.ensure(("test",)) == start.PYTHON
    assert start.ensure() == start.PYTHON


def test_a_changed_pyproject_runs_pip_again(bare_venv, capsys):
    start.STAMP.write_text(json.dumps({"": "the hash of an older pyproject.toml"}))
    with pytest.raises(SystemExit, match="pip failed"):  # it ran pip (this venv has none)
        start.ensure()
    err = capsys.readouterr().err
    assert "installing ranklens into .venv" in err
    assert "No module named pip" in err  # pip's own words, shown when it fails
    assert json.loads(start.STAMP.read_text()) == {"": "the hash of an older pyproject.toml"}  # not marked done


#: A pip that installs nothing, slowly: what the real one prints, and a silence as long as
#: the real one's while it installs the wheels it collected.
SLOW_PIP = """
import sys, time
print("Looking in indexes: https://pypi.org/simple", flush=True)
print("Requirement already satisfied: numpy in ./site-packages", flush=True)
print("Collecting textual>=0.80", flush=True)
print("Installing collected packages: textual, ranklens", flush=True)
time.sleep(1.5)
print("Successfully installed ranklens-0.1 textual-1.0", flush=True)
"""


def test_the_install_says_what_pip_is_doing_while_it_runs(bare_venv, capsys, monkeypatch):
    """Issue 43: not silent for the install's ~48 s. pip's steps are shown as they come, and
    its silences get a line every few seconds naming what it is on."""
    (site,) = bare_venv.glob("lib/python3*/site-packages")
    (site / "pip").mkdir()
    (site / "pip" / "__main__.py").write_text(SLOW_PIP)
    monkeypatch.setattr(start, "TICK_S", 0.4)
    start.STAMP.write_text(json.dumps({"": "the hash of an older pyproject.toml"}))
    assert start.ensure(("test",)) == start.PYTHON
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert "start: Collecting textual>=0.80" in lines
    assert "start: Installing collected packages: textual, ranklens" in lines
    ticks = [line for line in lines if "so far; its last step: Installing collected packages" in line]
    assert ticks, err  # the silence while it installs
    assert "Requirement already satisfied" not in err  # pip's chatter, shown only on failure
    assert lines[-1].startswith("start: pip took ")
    assert json.loads(start.STAMP.read_text())["test"] == start.fingerprint()
