"""A hit's runners-up in its file (``alternatives``): the units the chunk step ranked next,
carried by the first hit of each file it placed, in Python, ``query --json``, ``--batch``,
MCP ``search`` and the terminal UI, the same in each whatever the list's length (the UI's
rows: tests/tui/test_runners_up.py)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import anyio
import pytest
from cli_helpers import run
from test_chunkstep import QUEUE
from test_mcp import call, server

from ranklens.core.base.handoff_schema import validate_handoff
from ranklens.core.base.types import ConsolidatedHit
from ranklens.core.engine import Engine
from ranklens.core.query import chunkstep

#: Asks for one method of jobqueue.py in other words: the file comes first, its other
#: methods are its runners-up.
QUERY = "how long does a failed job wait before it is tried again"

#: Topics of the filler functions of tasks.py: more chunks than the arms' candidates cover,
#: so the file has more units than places in the list.
TOPICS = [
    ("colour", "paint the label in a colour"),
    ("font", "choose the font of a heading"),
    ("margin", "widen the page margin"),
    ("invoice", "total an invoice with tax"),
    ("weather", "guess tomorrow's weather"),
    ("garden", "water the garden beds"),
    ("recipe", "scale a recipe for guests"),
    ("ticket", "print a train ticket"),
    ("planet", "name the outer planets"),
    ("violin", "tune a violin string"),
    ("harbour", "moor a boat in the harbour"),
    ("glacier", "measure a glacier's retreat"),
]


def _function(name: str, doc: str, body: list[str]) -> str:
    pad = [f"    {name}_{i} = {i} * 7" for i in range(16 - len(body))]
    return "\n".join([f"def {name}(job):", f'    """{doc}"""', *body, *pad, "    return job", "", ""])


TASKS = "\n".join(
    [
        _function(
            "retry_delay", "Seconds a failed job sleeps before its next attempt.", ["    pause = 2 ** job.attempts"]
        ),
        _function("retry_limit", "How many attempts a failed job gets.", ["    tries = job.max_attempts"]),
        *[_function(f"{word}_task", doc, [f"    {word} = job.{word}"]) for n in range(3) for word, doc in TOPICS],
    ]
)


@pytest.fixture
def queue_root(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "jobqueue.py").write_text(QUEUE)
    (root / "tasks.py").write_text(TASKS)
    (root / "worker.py").write_text("def work(queue):\n    while queue.size():\n        queue.pop()\n")
    (root / "README.md").write_text("# Jobs\n\nA job queue with workers.\n")
    return root


@pytest.fixture
def engine(queue_root):
    engine = Engine(queue_root)
    engine.ensure_index(deep=False)
    yield engine
    engine.close()


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return not (a[1] < b[0] or a[0] > b[1])


def check_alternatives(results: list[dict]) -> list[dict]:
    """Every hit's ``alternatives`` (JSON) as the schema and the chunk step say they are; the
    first hit carrying some, which must exist."""
    carriers = [r for r in results if r.get("alternatives")]
    assert carriers, "no hit carries runners-up"
    for hit in carriers:
        alternatives = hit["alternatives"]
        assert 1 <= len(alternatives) <= chunkstep.ALTERNATIVES
        # The first hit of its file carries them; they overlap it and each other nowhere (the
        # file's hits below it may be among them: what is shown does not change them).
        assert hit is next(r for r in results if r["path"] == hit["path"])
        shown = [(hit["start_line"], hit["end_line"])]
        spans = []
        for alt in alternatives:
            span = (alt["start_line"], alt["end_line"])
            assert alt["docid"] == f"{hit['path']}:{span[0]}-{span[1]}"
            assert not any(_overlap(span, s) for s in shown + spans), (span, shown, spans)
            assert "of the file's" in alt["why"]
            spans.append(span)
        scores = [a["score"] for a in alternatives]
        assert scores == sorted(scores, reverse=True)  # the chunk step's own order
    return carriers


def test_the_first_hit_of_a_file_carries_its_runners_up(engine):
    hits = engine.search(QUERY, top_k=10).hits
    data = [h.to_dict() for h in hits]
    (first,) = [r for r in check_alternatives(data) if r["path"] == "jobqueue.py"]
    names = {n for a in first["alternatives"] for n in a["names"]}
    assert names and names <= {"JobQueue", "push", "size", "backoff_delay", "close"}
    assert "backoff_delay" not in names  # the hit's own
    # Not in a hit's repr: the stored rankings' digests are the same as before.
    assert "alternatives" not in repr(hits[0])


def runners_up(hits: list[ConsolidatedHit], path: str) -> list[tuple[int, int]]:
    first = next(h for h in hits if h.path == path)
    return [(a.start_line, a.end_line) for a in first.alternatives]


def test_a_hits_runners_up_are_the_same_whatever_the_lists_length(engine):
    """One set of runners-up for a hit (issue 43): the list cut after the file's first hit,
    at the CLI's 10, the UI's 50 or uncut, the file's next units in the chunk step's order,
    its second hit first."""
    whole = engine.search(QUERY, top_k=50).hits
    of_file = [h for h in whole if h.path == "jobqueue.py"]
    assert len(of_file) >= 2
    expected = runners_up(whole, "jobqueue.py")
    assert expected[0] == (of_file[1].start_line, of_file[1].end_line)
    for top_k in (of_file[0].rank, whole.index(of_file[1]), 10, 1000):
        assert runners_up(engine.search(QUERY, top_k=top_k).hits, "jobqueue.py") == expected, top_k


def test_runners_up_change_nothing_of_the_ranking(engine, monkeypatch):
    """The hits with runners-up are the hits without them, to every field and bit."""
    with_them = engine.search(QUERY, top_k=10)
    monkeypatch.setattr(chunkstep, "ALTERNATIVES", 0)
    without = engine.fuse(list(with_them.results.values()), with_them.settings, top_k=10)
    assert not any(h.alternatives for h in without)

    def plain(hits: list[ConsolidatedHit]) -> list[dict]:
        return [{k: v for k, v in h.to_dict().items() if k != "alternatives"} for h in hits]

    assert plain(without) == plain(with_them.hits)
    assert any(h.alternatives for h in with_them.hits)


def test_no_stage_no_runners_up(engine):
    hits = engine.search(QUERY, top_k=10, priors=False).hits
    assert hits and not any(h.alternatives for h in hits)
    assert all("alternatives" not in h.to_dict() for h in hits)


def test_query_json_carries_alternatives_in_a_valid_envelope(queue_root):
    out = run("query", QUERY, "--root", str(queue_root), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    validate_handoff(data)
    (first,) = [r for r in check_alternatives(data["results"]) if r["path"] == "jobqueue.py"]
    lines = (queue_root / "jobqueue.py").read_text().splitlines()
    for alt in first["alternatives"]:
        assert alt["end_line"] <= len(lines)
    # --no-priors: the plain fused list, no chunk step, no runners-up.
    plain = json.loads(run("query", QUERY, "--root", str(queue_root), "--json", "--no-priors").stdout)
    assert not any("alternatives" in r for r in plain["results"])


def test_the_schema_refuses_a_malformed_alternative(queue_root):
    from ranklens.core.base.handoff_schema import HandoffError

    data = json.loads(run("query", QUERY, "--root", str(queue_root), "--json").stdout)
    hit = next(r for r in data["results"] if r.get("alternatives"))
    hit["alternatives"][0]["start_line"] = "ten"
    with pytest.raises(HandoffError, match="alternatives/0/start_line"):
        validate_handoff(data)


def test_mcp_search_carries_alternatives_and_read_span_reads_one(queue_root):
    async def ask():
        async with server(queue_root) as session:
            found = await call(session, "search", {"query": QUERY, "top_k": 5})
            hit = next(r for r in found["results"] if r.get("alternatives"))
            alt = hit["alternatives"][0]
            span = await call(
                session,
                "read_span",
                {"path": hit["path"], "start_line": alt["start_line"], "end_line": alt["end_line"]},
            )
            return found, alt, span

    found, alt, span = anyio.run(ask)
    validate_handoff(found)
    check_alternatives(found["results"])
    assert alt["names"] and any(f"def {name}" in span["text"] for name in alt["names"])


def json_runners_up(results: list[dict], path: str) -> list[tuple[int, int]]:
    first = next(r for r in results if r["path"] == path)
    return [(a["start_line"], a["end_line"]) for a in first.get("alternatives", [])]


def test_the_cli_batch_mcp_and_the_ui_show_a_hit_the_same_runners_up(queue_root):
    """Each front end at its own length (the CLI's 10, a batch line's 3, MCP's 5, the UI's 50)."""
    from ranklens.tui.app import ROW_LIMIT, RanklensApp

    env = {**os.environ, "RANKLENS_DEEP": "0"}
    cli = run("query", QUERY, "--root", str(queue_root), "--json", env={"RANKLENS_DEEP": "0"})
    assert cli.returncode == 0, cli.stderr
    results = json.loads(cli.stdout)["results"]
    expected = json_runners_up(results, "jobqueue.py")
    assert len(expected) == 3  # the file's three other methods, under the cap
    # tasks.py has more units than places: its runners-up fill the cap, never more.
    assert len(json_runners_up(results, "tasks.py")) == chunkstep.ALTERNATIVES
    batch = subprocess.run(
        [sys.executable, "-m", "ranklens", "query", "--batch", "--root", str(queue_root)],
        input=json.dumps({"id": 1, "query": QUERY, "top_k": 3}) + "\n",
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert batch.returncode == 0, batch.stderr
    assert json_runners_up(json.loads(batch.stdout)["results"], "jobqueue.py") == expected

    async def ask() -> dict:
        async with server(queue_root) as session:
            return await call(session, "search", {"query": QUERY, "top_k": 5, "max_chars": 0})

    assert json_runners_up(anyio.run(ask)["results"], "jobqueue.py") == expected

    async def in_the_ui() -> list:
        engine = Engine(queue_root)
        engine.ensure_index(deep=False)
        app = RanklensApp(engine)
        try:
            async with app.run_test(size=(120, 36)) as pilot:
                app.query_input.value = QUERY
                await pilot.press("enter")
                for _ in range(1500):
                    if app.query_text == QUERY and app.query_complete and app.table.hits:
                        break
                    await asyncio.sleep(0.02)
                return list(app.table.hits)
        finally:
            engine.close()

    rows = asyncio.run(in_the_ui())
    assert len(rows) > 10 and len(rows) <= ROW_LIMIT
    assert runners_up(rows, "jobqueue.py") == expected
