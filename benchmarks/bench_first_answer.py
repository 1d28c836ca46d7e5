"""The first answer on a repository never indexed: a question asked at once, while the first
index builds (issue 36).

    python benchmarks/bench_first_answer.py ROOT [--via ui|mcp] [--question TEXT] [--repeats N]
                                                 [--checkout DIR]

Each run starts a fresh ``python`` with an empty index cache and times, from its spawn (imports
included, as a user's start):

- ``ui`` (default): the terminal UI, headless at 140x40 (Textual's ``run_test``), the question
  typed as soon as the first frame is on screen; ``frame`` is the first frame, ``first hits`` the
  table's first rows for the question (and the status line's note then: "partial: from 1,200 of
  4,902 files"), ``index done`` the whole index committed, ``final`` the table once the question
  has run on it.
- ``mcp``: ``ranklens mcp ROOT`` driven by the MCP SDK's stdio client, ``search`` called as soon
  as the session is initialized; ``first hits`` is its answer (with ``partial``), ``index done``
  when ``index_status`` stops saying ``updating`` (polled every 0.25 s), ``final`` a second
  ``search`` then.

``--checkout DIR`` runs another checkout's code (``PYTHONPATH=DIR``): ef07fb4, before this
benchmark, answers only once the whole index is built, which is what its ``first hits`` then
measure. Take turns with it in the same minutes: the 2-core machine is shared, and its load
(printed with every run) moves these figures by 2-3x.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUESTION = "how are task retries scheduled"

UI_CHILD = r"""
import asyncio, json, sys, time
T = {}
from ranklens.core.engine import Engine
from ranklens.tui.app import RanklensApp

class Timed(RanklensApp):
    def on_ready(self):
        T.setdefault("frame", time.time())
        self.query_input.value = sys.argv[2]  # typed at once

async def main():
    app = Timed(Engine(sys.argv[1]))
    async with app.run_test(size=(140, 40)) as pilot:
        while True:
            if "first hits" not in T and app.query_text == sys.argv[2] and app.table.row_count:
                T["first hits"] = time.time()
                T["note"] = app.notes.query
                T["rows"] = app.table.row_count
            if "index done" not in T and app.index_ready:
                T["index done"] = time.time()
            if "index done" in T and app.query_complete and not app.notes.query and app.table.row_count:
                T["final"] = time.time()
                break
            await asyncio.sleep(0.01)
        view = app.engine.view
        T["files"] = view.connection().execute("SELECT COUNT(*) FROM files").fetchone()[0]
        T["chunks"] = view.manifest.live
    print("TIMES " + json.dumps(T), flush=True)

asyncio.run(main())
"""


def load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def ui_run(root: Path, question: str, env: dict) -> dict:
    t0 = time.time()
    out = subprocess.run(
        [sys.executable, "-c", UI_CHILD, str(root), question],
        capture_output=True,
        text=True,
        env=env,
        cwd=env["RANKLENS_CACHE_DIR"],  # not a checkout: `python -c` imports from its folder first
        timeout=3600,
    )
    line = next((x for x in out.stdout.splitlines() if x.startswith("TIMES ")), None)
    if line is None:
        raise RuntimeError(f"the app child failed:\n{out.stderr[-3000:]}")
    times = json.loads(line[6:])
    return {k: (v - t0 if isinstance(v, float) else v) for k, v in times.items()}


async def mcp_run(root: Path, question: str, env: dict) -> dict:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ranklens", "mcp", str(root)], env=env, cwd=env["RANKLENS_CACHE_DIR"]
    )
    t0 = time.time()
    out: dict = {}
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=3600) as session:
                await session.initialize()
                out["initialized"] = time.time() - t0
                first = json.loads((await session.call_tool("search", {"query": question})).content[0].text)
                out["first hits"] = time.time() - t0
                out["note"] = json.dumps(first.get("partial"))
                out["rows"] = len(first.get("results", []))
                while True:
                    status = json.loads((await session.call_tool("index_status", {})).content[0].text)
                    if not status.get("updating"):
                        break
                    await anyio.sleep(0.25)
                out["index done"] = time.time() - t0
                await session.call_tool("search", {"query": question})
                out["final"] = time.time() - t0
                out["files"], out["chunks"] = status.get("files"), status.get("chunks")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path)
    parser.add_argument("--via", choices=("ui", "mcp"), default="ui")
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--checkout", type=Path, default=HERE.parent, help="the checkout whose code runs")
    args = parser.parse_args()
    root = args.root.resolve()
    runs = []
    for i in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="ranklens-first-") as cache:
            env = {
                **os.environ,
                "RANKLENS_CACHE_DIR": cache,
                "RANKLENS_DEEP": "0",
                "PYTHONPATH": os.pathsep.join([str(args.checkout.resolve()), os.environ.get("PYTHONPATH", "")]),
            }
            before = load()
            if args.via == "ui":
                got = ui_run(root, args.question, env)
            else:
                import anyio

                got = anyio.run(mcp_run, root, args.question, env)
            got["load"] = f"{before} -> {load()}"
            runs.append(got)
            shown = ", ".join(
                f"{k} {got[k]:.2f} s" for k in ("frame", "initialized", "first hits", "index done", "final") if k in got
            )
            print(
                f"run {i + 1} ({args.via}, {args.checkout.name}): {shown}; {got['rows']} rows first "
                f"({got['note'] or 'whole index'}); {got['files']} files, {got['chunks']} chunks; load {got['load']}",
                flush=True,
            )
    if len(runs) > 1:
        for key in ("first hits", "index done", "final"):
            print(f"  {key:<10} median {statistics.median(r[key] for r in runs):.2f} s (n={len(runs)})")


if __name__ == "__main__":
    main()
