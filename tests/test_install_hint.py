"""The extra-install hint names a command that works for the way ranklens was installed
(issue 27): a checkout gets an editable install into it, with this interpreter. The installed
wheel's case is checked in tests/test_packaging.py."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def hint_from(cwd: Path, extra: str = "deep") -> str:
    run = subprocess.run(
        [sys.executable, "-c", f"from ranklens.core.base.install_hint import pip_hint; print(pip_hint({extra!r}))"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_from_the_checkout_the_hint_installs_the_extra_into_it_by_a_short_path():
    words = shlex.split(hint_from(ROOT))
    assert words[1:5] == ["-m", "pip", "install", "-e"] and words[5] == ".[deep]"
    assert Path(ROOT / words[0]).resolve() == Path(sys.executable).resolve()


def test_from_elsewhere_the_hint_names_the_checkout_and_the_interpreter_by_full_paths(tmp_path):
    words = shlex.split(hint_from(tmp_path, "milvus"))
    assert words[0] == sys.executable or Path(words[0]).resolve() == Path(sys.executable).resolve()
    assert words[1:5] == ["-m", "pip", "install", "-e"]
    assert words[5] == f"{ROOT}[milvus]"
    # What the hint installs from is this checkout: its pyproject names the extra.
    assert "milvus = [" in (Path(words[5].removesuffix("[milvus]")) / "pyproject.toml").read_text()
