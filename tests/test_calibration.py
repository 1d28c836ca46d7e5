"""The confidence calibration has one measured source (core/calibration.json, written by
``evals/codesearch.py --calibration``): the README and the docs quote its numbers, and the
script that writes it counts what it says it counts."""

from __future__ import annotations

import json
from pathlib import Path

from evals.codesearch import Repo, Task, calibration, collect, score
from ranklens.core.query import calibration as measured

REPO = Path(__file__).resolve().parent.parent


def test_the_file_is_one_consistent_measurement() -> None:
    data = measured.load()
    levels = data["levels"]
    assert list(levels) == list(measured.LEVELS)
    assert sum(v["hits"] for v in levels.values()) == data["hits"] == data["questions"] * data["top_k"]
    for v in levels.values():
        assert 0 <= v["relevant"] <= v["hits"]
        assert v["share"] == round(v["hits"] / data["hits"], 4)
        assert v["relevant_share"] == round(v["relevant"] / v["hits"], 4)
    # The rule it measures: a high hit is right more often than a medium one, a medium than a low.
    right = measured.relevant_percents()
    assert right["high"] > right["medium"] > right["low"]


def test_the_readme_quotes_the_measured_figures() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    share, right = measured.share_percents(), measured.relevant_percents()
    for level in measured.LEVELS:
        row = f"| {level} | {share[level]} % | {right[level]} % |"
        assert row in text, f"README.md should have the row {row!r} (core/calibration.json)"


def test_docs_agents_quotes_the_measured_figures() -> None:
    text = " ".join((REPO / "docs" / "agents.md").read_text(encoding="utf-8").split())
    right = measured.relevant_percents()
    said = (
        f"{right['high']} % of such hits answer the question), `medium` ({right['medium']} %), `low` ({right['low']} %)"
    )
    assert said in text, f"docs/agents.md should say {said!r} (core/calibration.json)"


def test_docs_evaluation_quotes_the_measured_figures() -> None:
    text = (REPO / "docs" / "evaluation.md").read_text(encoding="utf-8")
    levels = measured.load()["levels"]
    share, right = measured.share_percents(), measured.relevant_percents()
    for level in measured.LEVELS:
        row = f"| {level} | {share[level]} % ({levels[level]['hits']:,}) | {right[level]} % |"
        assert row in text, f"docs/evaluation.md should have the row {row!r} (core/calibration.json)"


def test_the_eval_script_counts_each_level_and_the_hits_that_overlap_a_target(tmp_path) -> None:
    root = tmp_path / "repo"
    (root / "auth").mkdir(parents=True)
    (root / "auth" / "hashing.py").write_text(
        "def hash_password(password, salt):\n    return sha256(salt + password)\n\n\n"
        "def check_password(password, salt, digest):\n    return hash_password(password, salt) == digest\n"
    )
    (root / "server.py").write_text("def serve(port):\n    listen(port)\n    accept_connections()\n")
    (root / "README.md").write_text("# demo\n\nA server that hashes passwords.\n")
    tasks = [
        Task("demo", "python", "symbol", "hash_password", [("auth/hashing.py", 1, 2)]),
        Task("demo", "python", "semantic", "listen on a port", [("server.py", None, None)]),
    ]
    repo = Repo("demo", "python", root, root, tasks)
    run = collect(repo, arms=["bm25", "fts5", "symbols"], cache_dir=tmp_path / "cache")
    try:
        rows = score([run], k=10)
        cal = calibration(rows, [run], k=10)
    finally:
        run.engine.close()
    hits = [h for r in rows for h in r["hits"]]
    assert cal["questions"] == 2 and cal["top_k"] == 10 and cal["hits"] == len(hits)
    assert sum(v["hits"] for v in cal["levels"].values()) == len(hits)
    # Every hit of the target's file and lines counts as relevant, at its own level.
    relevant = sum(
        (h.path == "auth/hashing.py" and h.start_line <= 2 and r["query"] == "hash_password")
        or (h.path == "server.py" and r["query"] == "listen on a port")
        for r in rows
        for h in r["hits"]
    )
    assert sum(v["relevant"] for v in cal["levels"].values()) == relevant >= 2
    json.dumps(cal)  # what --calibration writes
