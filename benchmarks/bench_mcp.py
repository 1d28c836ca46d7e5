"""MCP server benchmark: warm ``search`` round trips through the SDK's own stdio client, on
the ~50k-chunk corpus of ``bench_engine.py``.

    python benchmarks/bench_mcp.py [--root DIR] [--cache DIR] [--repeat N] [--checkout DIR ...]

It starts ``ranklens mcp ROOT`` as a subprocess, exactly as an MCP client would, and times each
``tools/call`` at the client (JSON-RPC over the pipes, argument validation, the freshness
probe, the search, the span texts under the default 12,000-character budget, the JSON both
ways), and ``ping`` (the JSON-RPC round trip alone: stdio, the SDK's parsing and dispatch at
both ends). The first call builds the index (its progress notifications are counted); a pass over
the queries warms the arms; then ``--repeat`` passes are measured. Also: ``read_span``,
``check_handoff`` of a 10-hit result, and (on the temp copy only) an edit's way into the
answers. The index goes to
``--cache`` (default: a temp folder), so a second run with the same folder skips the build.
The deep arm is off, as in ``bench_engine.py``'s main figures.

``--checkout DIR`` (an older checkout, e.g. ``git worktree add --detach /tmp/old-X X``; more
than one allowed) instead starts one server of each (this checkout first, named ``now``) from
the one client and asks every question of each in turn, the order alternating, so a machine
whose load drifts weighs on all alike: per server the round trip, ``query_ms`` and the round
trip less ``query_ms`` (the protocol's share). The checkouts share ``--cache``, so they must
read one index format.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_engine import QUERIES, _copy_corpus, pct  # the same corpus and questions (a sibling script)

HERE = Path(__file__).resolve().parent


def ms_row(name: str, values: list[float]) -> str:
    return f"  {name:<34} p50 {statistics.median(values):7.2f} ms   p95 {pct(values, 0.95):7.2f} ms   (n={len(values)})"


async def run(root: Path, cache: Path, repeat: int, edit: bool) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {
        **os.environ,
        "RANKLENS_CACHE_DIR": str(cache),
        "RANKLENS_DEEP": "0",
        "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "ranklens", "mcp", str(root)], env=env)
    t_start = time.perf_counter()
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=1800) as session:
            await session.initialize()
            print(f"server started and initialized in {time.perf_counter() - t_start:.2f} s")
            notes: list[str] = []

            async def on_progress(done, total, message):
                notes.append(message)

            async def search(query: str, **kwargs) -> tuple[float, dict]:
                t0 = time.perf_counter()
                result = await session.call_tool("search", {"query": query, **kwargs}, progress_callback=on_progress)
                wall = (time.perf_counter() - t0) * 1000
                assert not result.is_error, result.content[0].text
                return wall, json.loads(result.content[0].text)

            wall, data = await search(QUERIES[0])
            status = json.loads((await session.call_tool("index_status", {})).content[0].text)
            print(
                f"first search (opens or builds the index): {wall / 1000:.2f} s, {len(notes)} progress "
                f"notifications; {status['files']} files, {status['chunks']} chunks, generation {status['generation']}"
            )
            for q in QUERIES:  # warm-up pass, not measured
                await search(q)
            walls, inproc, sizes = [], [], []
            for _ in range(repeat):
                for q in QUERIES:
                    wall, data = await search(q)
                    walls.append(wall)
                    inproc.append(data["query_ms"])
                    sizes.append(sum(len(r["text"] or "") for r in data["results"]))
            print(
                f"warm search, top_k 10, default text budget ({statistics.median(sizes):,.0f} characters of "
                f"span text per answer, median), arms answering: {', '.join(data['retrievers'])}"
                + (f"; skipped: {data['skipped']}" if data["skipped"] else "")
                + ":"
            )
            print(ms_row("round trip at the client", walls) + "   (targets p50 <= 15 ms, p95 <= 40 ms)")
            print(ms_row("query_ms (in the server)", inproc))
            walls_nt = []
            for q in QUERIES:
                wall, _ = await search(q, max_chars=0)
                walls_nt.append(wall)
            print(ms_row("round trip, max_chars 0 (no text)", walls_nt))
            pings = []
            for _ in range(50):
                t0 = time.perf_counter()
                await session.send_ping()
                pings.append((time.perf_counter() - t0) * 1000)
            print(ms_row("ping (JSON-RPC over stdio alone)", pings))

            top = data["results"][0]
            spans = []
            for _ in range(50):
                t0 = time.perf_counter()
                r = await session.call_tool(
                    "read_span", {"path": top["path"], "start_line": top["start_line"], "end_line": top["end_line"]}
                )
                spans.append((time.perf_counter() - t0) * 1000)
                assert not r.is_error
            print(ms_row("read_span", spans))
            checks = []
            for _ in range(20):
                t0 = time.perf_counter()
                r = await session.call_tool("check_handoff", {"handoff": data})
                checks.append((time.perf_counter() - t0) * 1000)
                assert not r.is_error
            print(ms_row(f"check_handoff ({len(data['results'])} spans)", checks))

            if not edit:
                return
            # An edit reaches the answers: the next call after the probe interval updates first.
            target = root / top["path"]
            with open(target, "a", encoding="utf-8") as fh:
                fh.write("\n\ndef bench_mcp_freshly_added_function():\n    return 42\n")
            await asyncio.sleep(1.1)
            wall, data = await search("bench_mcp_freshly_added_function", top_k=1)
            found = data["results"][0]["path"] == top["path"] and "bench_mcp_freshly" in (
                data["results"][0]["text"] or ""
            )
            print(
                f"edit then search (1-file incremental update first): {wall:.0f} ms, found: {found}, "
                f"generation {data['generation']}, notes: {data['notes'] or 'none'}"
            )


async def run_ab(root: Path, cache: Path, repeat: int, checkouts: list[Path]) -> None:
    from contextlib import AsyncExitStack

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    names = ["now", *(str(c) for c in checkouts)]
    sessions = []
    async with AsyncExitStack() as stack:
        for checkout in [HERE.parent, *checkouts]:
            env = {**os.environ, "RANKLENS_CACHE_DIR": str(cache), "RANKLENS_DEEP": "0", "PYTHONPATH": str(checkout)}
            # cwd: `python -m` puts it first on sys.path, so the checkout's own package is imported
            params = StdioServerParameters(
                command=sys.executable, args=["-m", "ranklens", "mcp", str(root)], env=env, cwd=str(checkout)
            )
            read, write = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(ClientSession(read, write, read_timeout_seconds=1800))
            await session.initialize()
            for q in QUERIES * 2:  # the first call opens (or builds) the index; then a warm-up pass
                await session.call_tool("search", {"query": q})
            sessions.append(session)
        walls: list[list[float]] = [[] for _ in sessions]
        inproc: list[list[float]] = [[] for _ in sessions]
        turn = 0
        for _ in range(repeat):
            for q in QUERIES:
                turn += 1
                order = range(len(sessions)) if turn % 2 else reversed(range(len(sessions)))
                for i in order:
                    t0 = time.perf_counter()
                    result = await sessions[i].call_tool("search", {"query": q})
                    walls[i].append((time.perf_counter() - t0) * 1000)
                    inproc[i].append(json.loads(result.content[0].text)["query_ms"])
    print(f"warm search, top_k 10, default text budget, each question asked of each server in turn ({repeat} passes):")
    for name, wall, ms in zip(names, walls, inproc):
        print(f"{name}:")
        print(ms_row("round trip at the client", wall))
        print(ms_row("query_ms (in the server)", ms))
        print(ms_row("round trip less query_ms", [w - m for w, m in zip(wall, ms)]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", help="corpus folder (default: a copy of the stdlib and scipy, as bench_engine.py)")
    ap.add_argument("--cache", help="index cache folder (default: a temp folder)")
    ap.add_argument("--repeat", type=int, default=10, help="measured passes over the 20 queries")
    ap.add_argument(
        "--checkout",
        action="append",
        default=[],
        help="an older checkout to ask in turn with this one (A/B; repeatable); needs --root and --cache",
    )
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ranklens-bench-mcp-"))
    try:
        if args.root:
            root = Path(args.root).resolve()
        else:
            root = work / "corpus"
            _copy_corpus(root)
        cache = Path(args.cache).resolve() if args.cache else work / "cache"
        print(f"corpus: {root}")
        if args.checkout:
            asyncio.run(run_ab(root, cache, args.repeat, [Path(c).resolve() for c in args.checkout]))
        else:
            asyncio.run(run(root, cache, args.repeat, edit=not args.root))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
