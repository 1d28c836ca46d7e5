"""The arm registry: each arm's module gives its spec, and everything else reads the registry.

A toy arm (``tests/toy_arm.py``) registered with one line is built into every generation,
updated with it, searched, fused with its shipped weight and listed by the command line, with
no other change anywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import toy_arm

from ranklens.core import arms
from ranklens.core.engine import Engine
from ranklens.core.query import config

TESTS = Path(__file__).resolve().parent


def test_the_registry_gives_the_defaults_as_shipped():
    assert arms.DEFAULT_ARMS == ("bm25", "fts5", "dense", "symbols")
    assert list(arms.REGISTRY) == ["bm25", "fts5", "dense", "symbols", "deep", "hybrid", "lexical+ctx"]
    assert config.DEFAULT_WEIGHTS == {"bm25": 0.4, "fts5": 0.4, "dense": 0.8, "symbols": 0.4}
    assert config.DEFAULT_WEIGHTS_DEEP == {"bm25": 0.8, "fts5": 0.4, "dense": 0.4, "symbols": 0.8, "deep": 1.4}
    assert arms.ARM_FAMILIES == {
        "bm25": "lexical",
        "fts5": "lexical",
        "dense": "semantic",
        "symbols": "structural",
        "deep": "semantic",
        "hybrid": "semantic",
        "lexical+ctx": "lexical",
    }
    # Every arm but the two that build nothing of their own (hybrid reads bm25's and dense's
    # files; deep commits its vectors after the index, as a sidecar) has a part in the build.
    assert [n for n, s in arms.REGISTRY.items() if s.build is None] == ["deep", "hybrid"]


@pytest.fixture
def names(monkeypatch):
    monkeypatch.setitem(arms.REGISTRY, toy_arm.SPEC.name, toy_arm.SPEC)  # the registry line
    return toy_arm


def test_a_registered_arm_is_built_updated_searched_and_fused(names, sample_repo):
    assert "names" in arms.default_arms() and arms.ARM_FAMILIES["names"] == "structural"
    assert config.default_weights(False)["names"] == 0.3 and config.DEFAULT_WEIGHTS_DEEP["names"] == 0.2
    engine = Engine(sample_repo)
    engine.ensure_index()
    assert (engine.view.gen_dir / names.FILE).exists()
    result = engine.search("hash password")
    assert "names" in result.answered and result.weights["names"] == 0.3
    assert result.hits[0].path == "app/auth.py" and "names" in result.hits[0].provenance
    (sample_repo / "app" / "extra.py").write_text("def shiny_new_function():\n    return 42\n")
    assert engine.ensure_index().added == 1
    assert engine.run_arm("names", "shiny new").hits[0].path == "app/extra.py"
    (sample_repo / "app" / "extra.py").unlink()
    assert engine.ensure_index().removed == 1
    assert not engine.run_arm("names", "shiny new").hits
    assert engine.run_arm("names", "hash password").hits


def test_an_index_built_without_an_arm_is_rebuilt_with_it(sample_repo, monkeypatch):
    Engine(sample_repo).ensure_index()
    monkeypatch.setitem(arms.REGISTRY, toy_arm.SPEC.name, toy_arm.SPEC)
    engine = Engine(sample_repo)
    assert engine.ensure_index().rebuilt == "the retriever arms changed"
    assert engine.run_arm("names", "hash password").ok


def test_the_command_line_lists_and_fuses_a_registered_arm(sample_repo):
    # The registry line runs before the command line is imported, as it would in the package.
    code = (
        "import sys, toy_arm\n"
        "from ranklens.core import arms\n"
        "arms.REGISTRY[toy_arm.SPEC.name] = toy_arm.SPEC\n"
        "from ranklens.cli import cli\n"
        "cli(sys.argv[1:], prog_name='ranklens')\n"
    )
    env = {
        **os.environ,
        "COLUMNS": "200",
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120)

    help_text = " ".join(run("query", "--help").stdout.split())
    assert "fuse bm25, fts5, dense, symbols, names, plus deep where `index --deep` turned it on" in help_text
    assert "lexical+ctx, names" in help_text
    out = run("query", "hash password", "--root", str(sample_repo), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["weights"]["names"] == 0.3 and "names" in data["retrievers"]
