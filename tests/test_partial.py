"""Answers while the first index builds (issue 36): a long pass commits its work in steps, each
a consistent generation; queries answer from what is committed, saying how much of the files
it holds, and the index the pass ends with ranks as a build nobody asked anything of.

The engine in process, its first steps made small (tests/partial_steps.py); ``ranklens query``
(--max-wait, --batch) and ``ranklens mcp`` as the real subprocesses, their first steps made
small by a sitecustomize in the child; the terminal UI in tests/tui/test_partial_ui.py.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from cli_helpers import run
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from partial_steps import FIRST_STEP_CHUNKS, small_steps_code

from ranklens.core.base.handoff_schema import validate_handoff
from ranklens.core.engine import Engine
from ranklens.core.index import batches
from ranklens.core.index.batches import index_order
from ranklens.core.storage.store import Partial

QUESTIONS = ["parse the configuration file", "retry a failed request", "Scheduler", "render the template"]


def rankings(engine: Engine) -> dict[str, list[tuple]]:
    out = {}
    for q in QUESTIONS:
        result = engine.search(q, top_k=20)
        out[q] = [(h.docid, round(h.score, 9), h.agreement, tuple(h.provenance)) for h in result.hits]
        for arm in ("bm25", "fts5", "dense", "symbols"):
            out[f"{q} / {arm}"] = sorted((h.docid, round(h.score, 9)) for h in result.results[arm].hits)
    return out


def whole_build(root: Path, cache: Path, monkeypatch) -> Engine:
    """The same tree indexed in one step (a pass nobody asked anything of)."""
    with monkeypatch.context() as m:
        m.setattr(batches, "FIRST_SEGMENT_CHUNKS", 10**9)
        m.setattr(batches, "SEGMENT_CHUNKS", 10**9)
        engine = Engine(root, cache_dir=cache)
        stats = engine.ensure_index(deep=False)
    assert stats.generation == 1 and engine.view.partial is None
    return engine


def test_a_first_build_answers_from_each_step_and_ends_ranking_as_a_whole_build(
    stepped_repo, tmp_path, small_steps, monkeypatch
):
    repo = stepped_repo
    engine = Engine(repo, cache_dir=tmp_path / "steps")
    seen: list[tuple[Partial, int, list[str]]] = []

    def on_partial(partial: Partial) -> None:
        # Called on the indexing thread once the engine opened the step: a query answers from it.
        result = engine.search("retry a failed request")
        assert result.partial == partial == engine.view.partial
        seen.append((partial, engine.view.manifest.live, [h.path for h in result.hits]))

    stats = engine.ensure_index(deep=False, on_partial=on_partial)
    assert len(seen) >= 3
    files = [p.files for p, _chunks, _paths in seen]
    chunks = [c for _p, c, _paths in seen]
    assert files == sorted(files) and files[-1] < stats.files  # more lands at each step
    assert {p.total for p, _c, _paths in seen} == {stats.files}
    assert chunks[0] <= 2 * FIRST_STEP_CHUNKS and chunks == sorted(chunks) and chunks[-1] < stats.chunks
    assert all(paths for _p, _c, paths in seen)  # each step answered
    assert seen[0][0].describe() == f"from {seen[0][0].files:,} of {seen[0][0].total:,} files"
    # The pass's last generation is whole: no partial, and the envelope says nothing of it.
    assert engine.view.partial is None and engine.search("Scheduler").partial is None
    # The ranking of the stepped build is the one-step build's (every arm's scores, the fused list).
    whole = whole_build(repo, tmp_path / "whole", monkeypatch)
    assert rankings(engine) == rankings(whole)


def test_a_build_killed_between_steps_answers_partially_until_the_next_pass_ends_it(
    stepped_repo, tmp_path, small_steps
):
    repo = stepped_repo

    class Stop(BaseException):
        pass

    engine = Engine(repo, cache_dir=tmp_path / "cache")

    def stop(_partial: Partial) -> None:
        raise Stop

    with pytest.raises(Stop):
        engine.ensure_index(deep=False, on_partial=stop)
    # Another process opening the index knows it is partial (the meta says so).
    other = Engine(repo, cache_dir=tmp_path / "cache")
    assert other.open() and other.view.partial is not None
    first = other.view.partial
    assert other.search("Scheduler").partial == first
    # The next pass goes on from the committed step, and its end makes the index whole.
    stats = other.ensure_index(deep=False)
    assert stats.added == first.total - first.files and stats.files == first.total
    assert other.view.partial is None


def test_files_are_indexed_code_first_then_docs_then_what_the_priors_demote():
    paths = [
        "tests/test_app.py",
        "README.md",
        "docs/guide.md",
        "src/pkg/deep/module.py",
        "src/app.py",
        "examples/demo.py",
        "setup.cfg",
        "main.go",
    ]
    assert sorted(paths, key=index_order) == [
        "main.go",
        "src/app.py",
        "src/pkg/deep/module.py",
        "docs/guide.md",
        "setup.cfg",  # x0.5, at the top
        "examples/demo.py",  # x0.5, a folder down
        "tests/test_app.py",  # x0.25, code
        "README.md",  # x0.25, prose
    ]


# -- the command line and the MCP server, as subprocesses --------------------------------------


def shim(tmp_path: Path, *lines: str) -> dict[str, str]:
    """Environment for a child whose first steps are small (and ``lines`` run at its start)."""
    folder = tmp_path / "shim"
    folder.mkdir(exist_ok=True)
    code = [*small_steps_code(), *lines, ""]
    (folder / "sitecustomize.py").write_text("\n".join(code))
    return {"PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}


def test_query_waits_for_the_whole_index_unless_max_wait_takes_a_partial_answer(stepped_repo, tmp_path):
    repo = stepped_repo
    env = shim(tmp_path)
    partial = run("query", "retry a failed request", "--root", str(repo), "--max-wait", "0", "--json", env=env)
    assert partial.returncode == 0, partial.stderr
    data = json.loads(partial.stdout)
    validate_handoff(data)
    assert 0 < data["partial"]["files"] < data["partial"]["total"]
    assert f"partial answer, from {data['partial']['files']:,} of" in partial.stderr
    # Batch lines answered from the same part; the pass stopped, keeping what it committed.
    lines = "\n".join(json.dumps({"id": i, "query": q}) for i, q in enumerate(QUESTIONS)) + "\n"
    batch = subprocess_run(["query", "--batch", "--root", str(repo), "--max-wait", "0"], lines, env)
    assert batch.returncode == 0, batch.stderr
    answers = [json.loads(line) for line in batch.stdout.splitlines()]
    assert len(answers) == len(QUESTIONS) and all(a["partial"]["total"] == data["partial"]["total"] for a in answers)
    assert all(a["partial"]["files"] >= data["partial"]["files"] for a in answers)
    # By default a query waits for the whole index: no partial field, and the ranking of a
    # build done in one `ranklens index` (another cache, no steps).
    whole = run("query", "retry a failed request", "--root", str(repo), "--json", env=env)
    assert whole.returncode == 0, whole.stderr
    complete = json.loads(whole.stdout)
    assert "partial" not in complete and "partial answer" not in whole.stderr
    other = {"RANKLENS_CACHE_DIR": str(tmp_path / "other")}
    assert run("index", str(repo), env=other).returncode == 0
    reference = json.loads(run("query", "retry a failed request", "--root", str(repo), "--json", env=other).stdout)
    assert [(h["docid"], h["score"]) for h in complete["results"]] == [
        (h["docid"], h["score"]) for h in reference["results"]
    ]


def test_max_wait_is_checked():
    out = run("query", "x", "--max-wait", "-1")
    assert out.returncode == 2 and "--max-wait" in out.stderr


def subprocess_run(args: list[str], stdin: str, env: dict[str, str]):
    import subprocess

    return subprocess.run(
        [sys.executable, "-m", "ranklens", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )


@pytest.mark.slow
async def test_mcp_search_answers_during_a_first_build_with_partial_set_then_whole(stepped_repo, tmp_path):
    repo = stepped_repo
    gate = tmp_path / "go-on"
    # The server's build waits after its first step until the test lets it go on.
    env = {
        **os.environ,
        **shim(
            tmp_path,
            "import os, time, ranklens.core.agent as _agent",
            "_landed = _agent.AgentService._landed",
            "def _held(self, partial):",
            "    _landed(self, partial)",
            f"    while not os.path.exists({str(gate)!r}):",
            "        time.sleep(0.05)",
            "_agent.AgentService._landed = _held",
        ),
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "ranklens", "mcp", str(repo)], env=env)
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=120) as session:
                await session.initialize()
                first = await call(session, "search", {"query": "retry a failed request", "top_k": 5})
                assert 0 < first["partial"]["files"] < first["partial"]["total"]
                assert any("still being built" in note for note in first["notes"])
                assert first["results"] and all(r["text"] for r in first["results"])  # served from the step
                status = await call(session, "index_status", {})
                assert status["partial"] == first["partial"] and status["updating"]
                gate.write_text("")
                with anyio.fail_after(120):
                    while (await call(session, "index_status", {}))["updating"]:
                        await anyio.sleep(0.1)
                last = await call(session, "search", {"query": "retry a failed request", "top_k": 5})
                assert "partial" not in last and not any("still being built" in n for n in last.get("notes", []))
    reference = json.loads(
        run(
            "query",
            "retry a failed request",
            "--root",
            str(repo),
            "--json",
            "--top-k",
            "5",
            env={"RANKLENS_CACHE_DIR": str(tmp_path / "other")},
        ).stdout
    )
    assert [r["docid"] for r in last["results"]] == [r["docid"] for r in reference["results"]]


async def call(session: ClientSession, tool: str, arguments: dict) -> dict:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)
