"""One ranking everywhere: the same query and settings rank alike in Python, ``query --top-k N``
for any N (a prefix of a longer list), ``query --batch`` and MCP ``search`` (the terminal UI's
rows: tests/tui/test_app.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anyio
import pytest
from cli_helpers import run
from test_mcp import call, server

from ranklens.core.engine import CANDIDATE_DEPTH, Engine

QUERIES = ["verify the password of a user", "evict the least recently used entry from the cache"]


def spans(results) -> list[tuple[str, int, int]]:
    return [(r["path"], r["start_line"], r["end_line"]) for r in results]


def hit_spans(hits) -> list[tuple[str, int, int]]:
    return [(h.path, h.start_line, h.end_line) for h in hits]


@pytest.fixture
def indexed(sample_repo):
    engine = Engine(sample_repo)
    engine.ensure_index(deep=False)
    yield sample_repo, engine
    engine.close()


@pytest.mark.parametrize("query", QUERIES)
def test_every_top_k_is_a_prefix_of_a_longer_list(indexed, query):
    _root, engine = indexed
    longest = engine.search(query, top_k=50)
    for n in (1, 3, 5, 10, 20):
        result = engine.search(query, top_k=n)
        assert hit_spans(result.hits) == hit_spans(longest.hits[:n]), n
        assert [h.score for h in result.hits] == [h.score for h in longest.hits[:n]]
    for arm in longest.answered:  # the arms' depth is one setting, not the number shown
        assert len(engine.search(query, top_k=1).results[arm].hits) == len(longest.results[arm].hits)
        assert len(longest.results[arm].hits) <= CANDIDATE_DEPTH


def test_the_cli_top_k_and_batch_give_the_engines_order(indexed):
    root, engine = indexed
    env = {"RANKLENS_DEEP": "0"}
    batch_in = "".join(json.dumps({"id": i, "query": q, "top_k": 10}) + "\n" for i, q in enumerate(QUERIES))
    for query in QUERIES:
        ten = run("query", query, "--root", str(root), "--top-k", "10", "--json", env=env)
        three = run("query", query, "--root", str(root), "--top-k", "3", "--json", env=env)
        assert ten.returncode == 0 and three.returncode == 0, ten.stderr + three.stderr
        ten_spans = spans(json.loads(ten.stdout)["results"])
        assert spans(json.loads(three.stdout)["results"]) == ten_spans[:3]
        assert ten_spans == hit_spans(engine.search(query, top_k=10).hits)
    proc = subprocess.run(
        [sys.executable, "-m", "ranklens", "query", "--batch", "--root", str(root)],
        input=batch_in,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )
    assert proc.returncode == 0, proc.stderr
    answers = {}
    for line in proc.stdout.splitlines():
        if line.strip():
            obj = json.loads(line)
            answers[obj["id"]] = spans(obj["results"])
    for i, query in enumerate(QUERIES):
        assert answers[i] == hit_spans(engine.search(query, top_k=10).hits)


def test_mcp_search_gives_the_engines_order(indexed):
    root, engine = indexed
    expected = {q: hit_spans(engine.search(q, top_k=10).hits) for q in QUERIES}

    async def ask() -> dict[str, list]:
        out = {}
        async with server(root) as session:
            for query in QUERIES:
                data = await call(session, "search", {"query": query, "top_k": 10, "max_chars": 0})
                out[query] = spans(data["results"])
        return out

    assert anyio.run(ask) == expected
