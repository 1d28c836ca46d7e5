"""``ranklens mcp``: the real server as a subprocess, driven through the MCP SDK's stdio client."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from ranklens.core.agent import _find_moved
from ranklens.core.base.handoff_schema import validate_handoff
from ranklens.core.handoff import span_text, text_sha256
from ranklens.core.index.indexer import STAGE_WORDS

TOOLS = {"search", "related", "read_span", "check_handoff", "index_status"}


@contextlib.asynccontextmanager
async def server(root: Path, probe_every_s: float | None = None, gate: Path | None = None):
    """An initialized client session with ``ranklens mcp ROOT`` (its own index cache, deep off).

    ``probe_every_s`` replaces the server's once-a-second limit on looking for changes (a
    sitecustomize in the child sets :data:`ranklens.core.agent.PROBE_EVERY_S`), so a test need not wait
    it out; the limit itself is tested in-process with a fake clock. ``gate``: every index
    update of the server waits until this file exists (an update still running when a call
    comes).
    """
    env = dict(os.environ)
    lines = []
    if probe_every_s is not None:
        lines.append(f"ranklens.core.agent.PROBE_EVERY_S = {probe_every_s!r}")
    if gate is not None:
        lines += [
            "import os, time",
            "_update = ranklens.core.agent.AgentService._update",
            "def _gated(self, job):",
            f"    while not os.path.exists({str(gate)!r}):",
            "        time.sleep(0.05)",
            "    _update(self, job)",
            "ranklens.core.agent.AgentService._update = _gated",
        ]
    if lines:
        shim = root.parent / "mcp-shim"
        shim.mkdir(exist_ok=True)
        (shim / "sitecustomize.py").write_text("\n".join(["import ranklens.core.agent", *lines, ""]))
        env["PYTHONPATH"] = os.pathsep.join([str(shim), env.get("PYTHONPATH", "")])
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ranklens", "mcp", str(root)], env=env, cwd=str(root)
    )
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=120) as session:
                await session.initialize()
                yield session


async def call(session: ClientSession, tool: str, arguments: dict, **kwargs) -> dict:
    result = await session.call_tool(tool, arguments, **kwargs)
    assert not result.is_error, result.content[0].text
    data = json.loads(result.content[0].text)
    assert result.structured_content == data
    return data


async def refused(session: ClientSession, tool: str, arguments: dict) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error
    return result.content[0].text


async def test_tools_are_listed_with_schemas_and_the_first_search_builds_the_index(sample_repo):
    async with server(sample_repo) as session:
        assert session.server_info.name == "ranklens"
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert tool.description and tool.input_schema["type"] == "object"
            assert tool.annotations.read_only_hint is True
        assert tools["search"].input_schema["required"] == ["query"]
        assert set(tools["read_span"].input_schema["required"]) == {"path", "start_line", "end_line"}

        progress = []

        async def on_progress(done, total, message):
            progress.append((done, total, message))

        data = await call(session, "search", {"query": "hash_password", "top_k": 3}, progress_callback=on_progress)
        assert progress and all(m.startswith("indexing: ") for _, _, m in progress)
        assert [p[0] for p in progress] == sorted(p[0] for p in progress)  # never goes back
        # One count, files indexed of files found, and the stage in words, as the UI says it.
        counted = [re.fullmatch(r"indexing: (\d+) of \d+ files · ([a-z ]+)", m) for _, _, m in progress[:-1]]
        counted = [c for c in counted if c]
        # (None when the build outran the 0.2 s between notifications: a small repository on a
        # quick machine goes from comparing straight to done.)
        assert {c[2] for c in counted} <= set(STAGE_WORDS.values()), progress
        assert [int(c[1]) for c in counted] == sorted(int(c[1]) for c in counted)
        # The last notification says the build is done: progress reaches the total there only.
        done, total, message = progress[-1]
        assert done == total and message == "indexing: done (generation 1)"
        assert all(p[0] < p[1] for p in progress[:-1])
        validate_handoff(data)
        top = data["results"][0]
        assert top["path"] == "app/auth.py" and "def hash_password" in top["text"]
        assert top["sha256"] == text_sha256(span_text(sample_repo, top["path"], top["start_line"], top["end_line"]))
        assert top["agreement"] >= 2 and top["confidence"] in ("high", "medium")
        assert data["query_ms"] > 0 and data["generation"] == 1 and data["root"] == str(sample_repo.resolve())

        span = await call(session, "read_span", {"path": "app/auth.py", "start_line": 9, "end_line": 11})
        assert span["text"] == span_text(sample_repo, "app/auth.py", 9, 11)
        assert span["text"].lstrip().startswith("def hash_password")
        assert span["sha256"] == text_sha256(span["text"]) and span["truncated"] is False
        assert span["lines_in_file"] == 25

        # Files written less than 2 s before they were listed are "racy" (core.index.freshness): the
        # next check reads them again, so the server may be re-checking them at first. Once it
        # has, nothing changed: the same generation, not stale.
        deadline = time.monotonic() + 60
        while True:
            status = await call(session, "index_status", {})
            if not status["updating"] or time.monotonic() > deadline:
                break
            await anyio.sleep(0.1)
        # the sample repository's code and docs; .gitignore is hidden (skipped without --hidden)
        assert status["files"] == 6 and status["chunks"] >= 6 and status["generation"] == 1
        assert status["stale"] is False and status["updating"] is False
        assert all(arm["answers"] for arm in status["arms"].values())
        assert status["skipped_files"] == {"secret": 1, "private key": 1, "binary": 1}


async def test_check_handoff_reports_changed_moved_and_gone_spans(sample_repo):
    async with server(sample_repo) as session:
        doc = await call(session, "search", {"query": "LRUCache get put", "top_k": 10, "max_chars": 0})
        assert all(item["text"] is None for item in doc["results"])
        cache = next(item for item in doc["results"] if item["path"] == "app/cache.py")
        router = next(item for item in doc["results"] if item["path"] == "web/router.js")
        doc["results"] = [cache, router]
        checked = await call(session, "check_handoff", {"handoff": doc})
        assert [s["status"] for s in checked["spans"]] == ["unchanged", "unchanged"]

        # An edit inside the span: changed, and its old text is nowhere.
        path = sample_repo / "app/cache.py"
        path.write_text(path.read_text().replace("self.capacity = capacity", "self.capacity = max(1, capacity)"))
        # Two lines before the router's span: the same text, two lines down.
        router_file = sample_repo / "web/router.js"
        router_file.write_text("// moved\n// down\n" + router_file.read_text())
        checked = await call(session, "check_handoff", {"handoff": doc})
        cache_now, router_now = checked["spans"]
        assert cache_now["status"] == "changed" and cache_now["moved_to"] is None
        assert cache_now["sha256_now"] != cache["sha256"]
        assert router_now["status"] == "changed"
        assert router_now["moved_to"] == {"start_line": router["start_line"] + 2, "end_line": router["end_line"] + 2}
        assert checked["summary"] == {"changed": 2}

        path.unlink()
        checked = await call(session, "check_handoff", {"handoff": doc})
        assert checked["spans"][0]["status"] == "gone"

        # A document that is not a handoff is a tool error, not a crash.
        text = await refused(session, "check_handoff", {"handoff": {"results": []}})
        assert "not a ranklens handoff" in text


async def test_check_handoff_refuses_paths_out_of_the_root_and_folds_dot_dot_within_it(sample_repo, tmp_path):
    """docs/agents.md: `..`, an absolute path outside the root or a symlink out of it is
    refused (never "gone"); a path that only passes through `..` inside the root is judged
    as the file it names."""
    outside = tmp_path / "outside.py"
    outside.write_text("x = 1\n")
    async with server(sample_repo) as session:
        doc = await call(session, "search", {"query": "LRUCache", "top_k": 1, "max_chars": 0})
        hit = doc["results"][0]
        assert hit["path"] == "app/cache.py"
        paths = [
            "../outside.py",
            "..",
            str(outside),
            "/etc/passwd",
            "app/../../outside.py",
            "app/../app/cache.py",
            "./app/cache.py",
            str(sample_repo / "app" / ".." / "app" / "cache.py"),
            "app/../app/nothing_here.py",
        ]
        doc["results"] = [dict(hit, path=p) for p in paths]
        checked = await call(session, "check_handoff", {"handoff": doc})
        statuses = [s["status"] for s in checked["spans"]]
        assert statuses == ["refused"] * 5 + ["unchanged"] * 3 + ["gone"], checked["spans"]
        assert [s["path"] for s in checked["spans"]] == paths  # as the handoff names them
        assert "'..' leads outside the repository" in checked["spans"][0]["reason"]
        assert "outside the repository" in checked["spans"][2]["reason"]
        assert all("sha256_now" not in s for s in checked["spans"][:5])
        # read_span folds them the same way.
        span = await call(session, "read_span", {"path": "app/../app/cache.py", "start_line": 1, "end_line": 1})
        assert span["path"] == "app/cache.py" and span["text"] == "class LRUCache:"


async def test_index_status_is_true_from_the_first_call(sample_repo):
    """On an index that is up to date the first call says so (issue 43): not stale, not
    updating, the last pass's figures; a file changed afterwards makes it stale."""
    from cli_helpers import run

    # Files changed within 2 s of a listing are read again by the next check (racy,
    # core.index.freshness): an index built after that is up to date for the server's check.
    await anyio.sleep(2.1)
    assert run("index", str(sample_repo)).returncode == 0
    async with server(sample_repo) as session:
        status = await call(session, "index_status", {})
        assert status["indexed"] and status["files"] == 6, status
        assert status["stale"] is False and status["updating"] is False, status
        assert "progress" not in status and status["last_update"]["added"] == 0, status
        found = await call(session, "search", {"query": "hash_password", "top_k": 3})
        assert not found["notes"] and found["generation"] == status["generation"]


async def test_check_handoff_before_the_index_is_ready_says_not_ready(sample_repo, tmp_path):
    from cli_helpers import run

    # A handoff of the repository and an index on disk; the server's first update of it is held.
    out = run("query", "LRUCache get put", "--root", str(sample_repo), "--json", "--top-k", "3")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    # A file added since: the server's first call must update (an index it finds up to date
    # it takes at once, with no update to hold).
    (sample_repo / "app" / "added.py").write_text("def added():\n    return 1\n")
    gate = tmp_path / "release-the-update"
    async with server(sample_repo, gate=gate) as session:
        progress = []

        async def on_progress(done, total, message):
            progress.append((done, total, message))

        checked = await call(session, "check_handoff", {"handoff": doc}, progress_callback=on_progress)
        assert [s["status"] for s in checked["spans"]] == ["not_ready"] * len(doc["results"])
        assert checked["summary"] == {"not_ready": len(doc["results"])}
        assert "still being built" in checked["spans"][0]["reason"]
        # The call's last notification: the update goes on while this call answers.
        assert progress[-1][2] == "indexing: continues in the background; answering from generation 1"
        gate.touch()
        deadline = time.monotonic() + 60
        while (await call(session, "index_status", {}))["updating"] and time.monotonic() < deadline:
            await anyio.sleep(0.1)
        checked = await call(session, "check_handoff", {"handoff": doc})
        assert checked["summary"] == {"unchanged": len(doc["results"])}


async def until_indexed(session, seconds: float = 120) -> dict:
    """``index_status`` once the server's first build has ended (it builds in the background:
    under load, seconds after the first call)."""
    deadline = time.monotonic() + seconds
    while True:
        status = await call(session, "index_status", {})
        if status["indexed"] and not status["updating"]:
            return status
        assert time.monotonic() < deadline, status
        await anyio.sleep(0.1)


async def test_paths_outside_the_root_ignored_and_secret_files_are_refused(sample_repo, tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text("def secret_outside(): pass\n")
    (sample_repo / "app" / "link.py").symlink_to(outside)
    async with server(sample_repo) as session:
        await until_indexed(session)  # before it, every path is "not ready yet"
        for path in ("../outside.py", str(outside), "app/../../outside.py", "app/link.py"):
            text = await refused(session, "read_span", {"path": path, "start_line": 1, "end_line": 1})
            assert "outside" in text or "not a file ranklens serves" in text, text
        for path in (".env", "keys/server.pem", "ignored/skip.py", "debug.log", "logo.png", "nothing/here.py"):
            text = await refused(session, "read_span", {"path": path, "start_line": 1, "end_line": 1})
            assert "not a file ranklens serves" in text, text
        # An absolute path inside the root is fine.
        span = await call(
            session, "read_span", {"path": str(sample_repo / "app/cache.py"), "start_line": 1, "end_line": 1}
        )
        assert span["path"] == "app/cache.py" and span["text"] == "class LRUCache:"
        # check_handoff is no hash oracle for files it does not serve.
        doc = await call(session, "search", {"query": "LRUCache", "top_k": 1})
        doc["results"][0].update(path=".env", start_line=1, end_line=1, sha256=text_sha256("API_TOKEN=supersecret"))
        checked = await call(session, "check_handoff", {"handoff": doc})
        assert checked["spans"][0]["status"] == "refused" and "sha256_now" not in checked["spans"][0]
        data = await call(session, "search", {"query": "supersecret API_TOKEN secret_outside", "top_k": 20})
        assert not any(r["path"] in (".env", "app/link.py") for r in data["results"])


async def test_a_malformed_call_gets_an_error_and_the_next_call_succeeds(sample_repo):
    async with server(sample_repo) as session:
        for tool, arguments, message in [
            ("search", {"top_k": 3}, "search: query is required"),
            ("search", {"query": "cache", "top_k": "many"}, 'top_k must be an integer from 1 to 100, got "many"'),
            ("search", {"query": "cache", "top_k": 0}, "top_k must be an integer from 1 to 100, got 0"),
            ("search", {"query": "cache", "top_k": "abc", "max_chars": -1}, "top_k must be an integer"),
            # Every bad argument of a call, in one line: the schema's and the tool's own.
            (
                "search",
                {"query": "cache", "top_k": "abc", "max_chars": -1},
                'top_k must be an integer from 1 to 100, got "abc"; max_chars must be an integer from 0 to',
            ),
            (
                "search",
                {"query": "cache", "retrievers": ["nope"], "language": "klingon"},
                "unknown retriever 'nope'",
            ),
            ("search", {"query": "cache", "retrievers": ["nope"], "language": "klingon"}, "unknown language 'klingon'"),
            (
                "search",
                {"query": "cache", "top_k": 0, "weights": {"vibes": 1}, "language": "klingon"},
                "top_k must be an integer from 1 to 100, got 0; weights names an unknown retriever 'vibes'",
            ),
            ("search", {"query": "cache", "top_k": 0, "weights": {"vibes": 1}, "language": "klingon"}, "'klingon'"),
            ("search", {"query": "   ", "k": -1}, "the query is empty"),
            ("search", {"query": "   "}, "the query is empty"),
            ("search", {"query": "cache", "language": "klingon"}, "unknown language 'klingon' (known: "),
            ("search", {"query": "cache", "retrievers": ["nope"]}, "unknown retriever 'nope'"),
            ("search", {"query": "cache", "weights": {"bm25": -1}}, "bad weight in weights"),
            ("search", {"query": "cache", "weights": {"vibes": 1}}, "weights names an unknown retriever 'vibes'"),
            ("search", {"query": "cache", "weights": {"bm25": "a"}}, "weights.bm25 must be a valid number"),
            ("search", {"query": "cache", "weights": [1]}, "weights must be"),
            (
                "read_span",
                {"path": "app/cache.py", "start_line": 0, "end_line": 2},
                "start_line must be an integer >= 1",
            ),
            ("read_span", {"path": "app/cache.py", "start_line": 1}, "end_line is required"),
            ("read_span", {"path": "app/cache.py", "start_line": 5, "end_line": 2}, "before start_line"),
            ("read_span", {"path": "app/cache.py", "start_line": 500, "end_line": 501}, "past its end"),
            ("check_handoff", {"handoff": "x"}, 'handoff must be a JSON object, got "x"'),
            ("nonexistent_tool", {}, "Unknown tool"),
        ]:
            text = await refused(session, tool, arguments)
            assert message in text, text
            # One line in MCP's own words: no pydantic report, link or command-line flag.
            assert "\n" not in text and "pydantic" not in text and "http" not in text, text
            assert "--" not in text and "validation error" not in text, text
        data = await call(session, "search", {"query": "LRUCache", "top_k": 2, "retrievers": ["fts5"]})
        assert data["mode"] == "fts5" and data["results"][0]["path"] == "app/cache.py"


async def test_a_change_on_disk_is_indexed_before_the_next_answer(sample_repo):
    async with server(sample_repo, probe_every_s=0.0) as session:
        await call(session, "search", {"query": "LRUCache"})
        (sample_repo / "app" / "quota.py").write_text(
            "def enforce_storage_quota(user):\n    return user.used < user.limit\n"
        )
        data = await call(session, "search", {"query": "enforce_storage_quota", "top_k": 1})
        assert data["results"][0]["path"] == "app/quota.py" and data["generation"] == 2
        assert "enforce_storage_quota" in data["results"][0]["text"] and data["notes"] == []
        span = await call(session, "read_span", {"path": "app/quota.py", "start_line": 1, "end_line": 9})
        assert span["end_line"] == 2 and span["lines_in_file"] == 2


class _Clock:
    """Stands in for :mod:`time` inside core.agent: time moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def perf_counter(self) -> float:
        return self.now


def test_a_burst_of_calls_looks_for_changes_at_most_once_a_second(sample_repo, monkeypatch):
    from ranklens.core import agent

    clock = _Clock()
    monkeypatch.setattr(agent, "time", clock)
    service = agent.AgentService(sample_repo, fresh=True)  # no watcher: each look stats the tree
    try:
        first = service.prepare()  # the first call indexes
        assert first is not None and first.done.wait(120) and first.error is None
        probes = []
        stale = service._stale
        monkeypatch.setattr(service, "_stale", lambda snapshot: probes.append(clock.now) or stale(snapshot))
        (sample_repo / "app" / "quota.py").write_text("def enforce_storage_quota(user):\n    return True\n")
        clock.now += agent.PROBE_EVERY_S * 0.99
        assert service.prepare() is None and probes == []  # within the second: not even looked at
        clock.now += agent.PROBE_EVERY_S * 0.02
        job = service.prepare()
        assert probes == [clock.now] and job is not None
        assert job.done.wait(120) and job.error is None and service.stats.generation == 2
        assert service.prepare() is None and len(probes) == 1  # the update restarted the second
    finally:
        service.engine.close()


def test_a_moved_span_is_found_nearest_to_where_it_was():
    text = "a\nb\nx\na\nb\n"
    assert _find_moved(text, 4, 5, text_sha256("a\nb")) == {"start_line": 4, "end_line": 5}
    assert _find_moved(text, 2, 3, text_sha256("a\nb")) == {"start_line": 1, "end_line": 2}
    assert _find_moved(text, 1, 2, text_sha256("zz\nb")) is None


@pytest.mark.parametrize("args", [["/nonexistent/root"], ["--model"]])
def test_bad_mcp_invocations_exit_with_one_line(args):
    from cli_helpers import run

    out = run("mcp", *args)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_file_texts_are_kept_between_calls_until_the_file_changes(sample_repo):
    """A warm search reads and redacts a hit's file once; an edit (a new stat) is read anew."""
    from ranklens.core.agent import AgentService

    svc = AgentService(sample_repo)
    job = svc.prepare(force_probe=True)
    assert job is not None and job.done.wait(120) and job.error is None
    first = svc.read_span("app/auth.py", 1, 3)
    assert svc.read_span("app/auth.py", 1, 3) == first
    assert any(key[0] == "app/auth.py" for key in svc._texts)
    path = sample_repo / "app" / "auth.py"
    path.write_text("# rewritten header line\n" + path.read_text())
    job = svc.prepare(force_probe=True)  # the edit is indexed before it is served
    assert job is None or (job.done.wait(120) and job.error is None)
    again = svc.read_span("app/auth.py", 1, 3)
    assert again["text"].startswith("# rewritten header line") and again["sha256"] != first["sha256"]
    # A search's spans, cut from the kept texts, hash as the file's lines read afresh do.
    from ranklens.core.discovery import read_text
    from ranklens.core.handoff import span_lines, text_sha256

    for query in ("token", "login password", "rewritten header"):
        for item in svc.search(query, top_k=20)["results"]:
            fresh = read_text(sample_repo, item["path"], svc.engine.settings.options.max_bytes)[0]
            assert item["sha256"] == text_sha256(span_lines(fresh, item["start_line"], item["end_line"]))
    svc.engine.close()


async def test_searches_while_a_file_is_saved_every_quarter_second(sample_repo):
    """Issue #19: two clients' calls at once while a file changes every 250 ms. Nothing
    freezes (each call answers within its deadline), every answer comes from one committed
    generation (the churned file's span is one saved version's; generations never go back)."""
    from churn import CHURN_PATH, CHURN_QUERY, Churn, consistent_spans

    async with server(sample_repo, probe_every_s=0.0) as session:
        await call(session, "search", {"query": "LRUCache"})  # the first build
        answers: list[tuple[int, int]] = []  # (generation, version) per answer naming the file
        seen: list[int] = []

        def done() -> bool:
            # Counted in answers and saves, not seconds, so a loaded machine only makes it
            # slower: six answers, and on until two generations answered (or the saver stopped).
            return len(seen) >= 6 and (len({g for g, _ in answers}) >= 2 or not churn.running)

        async def client(name: str) -> None:
            last = 0
            while not done():
                with anyio.fail_after(60):  # a frozen server fails here, not at CI's limit
                    data = await call(session, "search", {"query": CHURN_QUERY, "top_k": 5})
                    status = await call(session, "index_status", {})
                assert data["generation"] >= last, (name, data["generation"], last)
                last = data["generation"]
                seen.append(last)
                spans = [(r["start_line"], r["end_line"]) for r in data["results"] if r["path"] == CHURN_PATH]
                if spans:
                    version = consistent_spans(spans, churn.saved)
                    assert version is not None, (spans, churn.saved)
                    answers.append((last, version))
                assert status["generation"] >= 1

        with Churn(sample_repo, every=0.25, limit=40) as churn:
            async with anyio.create_task_group() as group:
                group.start_soon(client, "a")
                group.start_soon(client, "b")
        assert len(seen) >= 6 and churn.errors == []
        assert len({g for g, _ in answers}) >= 2  # it saw the file change under it
