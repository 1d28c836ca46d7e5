"""Terminal UI benchmark: first paint on a warm index, query to complete table, and the
re-fuse + redraw that a slider move costs at 500 candidates.

    python benchmarks/bench_tui.py [--root DIR] [--repeats N]

The app runs headless (Textual's ``run_test``) at 140x40 over ``--root`` (default: this
repository), indexed first into a temp cache folder so every figure is a warm start.
Figures are medians over the repeats.

- first paint: from creating the engine and the app to Textual's ``Ready`` event (the first
  frame is on screen), in this process; and from spawning a fresh ``python`` (imports
  included) to that event.
- index open: from the app starting to the existing index being open (queries can run).
- query to complete table: from a query starting to the table holding every arm's answer
  (``app.last_query_ms``), warm arms; typing adds the 150 ms debounce on top.
- re-fuse + redraw at 500 candidates: four arms' cached rankings that consolidate into 500
  distinct hits (top 50 shown). A slider key press re-fuses them (no arm runs) and updates
  the table and the preview's trace (``app.last_refuse_ms``); "frame" is the time Textual
  then takes to lay out and render the screen (the compositor refresh that follows), the
  full cost being their sum. Targets: the handler <= 16 ms, ``engine.fuse`` <= 1.25x of
  6aeda67's: run that checkout's own ``benchmarks/bench_tui.py`` (``PYTHONPATH=DIR``, its
  dependencies installed) over the same ``--root`` in the same minutes, taking turns
  (``bench_ab.py`` measures the same ``engine.fuse`` against older checkouts in one run).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ranklens.core.base.types import Hit, make_docid
from ranklens.core.engine import ArmResult, Engine
from ranklens.tui.app import RanklensApp

ROOT = Path(__file__).resolve().parents[1]

SIZE = (140, 40)
CANDIDATES = 500
PER_ARM = 150
QUERIES = [
    "reciprocal rank fusion",
    "slider value step",
    "export hits to json",
    "index progress by stage",
    "open the editor at a line",
    "tokenize identifiers camel case",
    "sqlite full text search",
    "dense embedding model",
    "worker thread message",
    "confidence of a hit",
    "incremental index update",
    "query too long error",
]

CHILD = r"""
import sys, time
from ranklens.core.engine import Engine
from ranklens.tui.app import RanklensApp

class Timed(RanklensApp):
    def on_ready(self):
        print("READY", flush=True)
        self.exit()

Timed(Engine(sys.argv[1])).run(headless=True, size=(140, 40))
"""


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


class ReadyApp(RanklensApp):
    """The app, noting when the first frame is on screen."""

    def __init__(self, engine: Engine, t0: float) -> None:
        super().__init__(engine)
        self.t0 = t0
        self.first_paint_ms: float | None = None

    def on_ready(self) -> None:
        self.first_paint_ms = (time.perf_counter() - self.t0) * 1000


async def wait_for(pilot, condition, timeout: float = 120.0) -> None:
    # A plain sleep, not pilot.pause(): a pause forces a screen refresh each time, and
    # polling with it would steal the CPU from the arms being timed.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError("the app did not get there in time")
        await asyncio.sleep(0.002)


# -- first paint -----------------------------------------------------------------------


async def first_paint_once(root: Path) -> tuple[float, float]:
    t0 = time.perf_counter()
    app = ReadyApp(Engine(root), t0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine.ready)
        opened = (time.perf_counter() - t0) * 1000
        await wait_for(pilot, lambda: app.first_paint_ms is not None)
        paint = app.first_paint_ms
        await wait_for(pilot, lambda: app.index_ready)
    app.engine.close()
    return paint, opened


def first_paint_process(root: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("READY"):
            elapsed = (time.perf_counter() - t0) * 1000
            break
    else:
        raise RuntimeError("the app never painted")
    proc.wait(timeout=60)
    return elapsed


# -- queries ---------------------------------------------------------------------------


async def query_times(root: Path, repeats: int) -> tuple[float, list[float], int]:
    engine = Engine(root)
    app = RanklensApp(engine)
    times: list[float] = []
    rows = 0
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.index_ready)
        await app.workers.wait_for_complete()
        first = None
        for i in range(repeats * len(QUERIES) + 1):
            query = QUERIES[i % len(QUERIES)]
            if i and query == app.query_text:
                continue
            app.search(query, force=True)
            await wait_for(pilot, lambda q=query: app.query_text == q and app.last_query_ms is not None)
            if first is None:
                first = app.last_query_ms  # the arms' first use opens their artifacts
            else:
                times.append(app.last_query_ms)
            rows = max(rows, app.table.row_count)
            await pilot.pause()
    engine.close()
    return first or float("nan"), times, rows


# -- re-fuse at 500 candidates ---------------------------------------------------------


def synthetic_rankings(root: Path, arms: list[str], seed: int = 7) -> dict[str, ArmResult]:
    """Four rankings of 150 one-line spans of real files that consolidate into 500 hits.

    The spans are three lines apart so none overlap or touch (consolidation would merge
    them); arm i ranks spans i*125 .. i*125+149 (wrapping), so together they cover 500 and
    the middle ones are found by two arms.
    """
    rng = random.Random(seed)
    files = sorted(p for p in root.rglob("*.py") if ".git" not in p.parts and p.stat().st_size > 2000)
    spans: list[tuple[str, int]] = []
    for path in files:
        lines = path.read_text(encoding="utf-8", errors="replace").count("\n")
        rel = path.relative_to(root).as_posix()
        spans += [(rel, line) for line in range(1, lines, 3)]
        if len(spans) >= CANDIDATES:
            break
    spans = spans[:CANDIDATES]
    if len(spans) < CANDIDATES:
        raise SystemExit(f"{root} is too small for {CANDIDATES} synthetic candidates")
    results: dict[str, ArmResult] = {}
    step = -(-(CANDIDATES - PER_ARM) // max(1, len(arms) - 1))  # ceil: the last arm reaches the end
    for i, arm in enumerate(arms):
        chosen = [spans[(i * step + j) % CANDIDATES] for j in range(PER_ARM)]
        rng.shuffle(chosen)
        hits = [
            Hit(arm, make_docid(path, line, line), path, line, line, rank, 100.0 / rank, context=path)
            for rank, (path, line) in enumerate(chosen, start=1)
        ]
        results[arm] = ArmResult(arm, hits=hits, elapsed_ms=1.0)
    return results


async def refuse_times(root: Path, repeats: int) -> dict[str, list[float] | int]:
    engine = Engine(root)
    app = RanklensApp(engine)
    handler: list[float] = []
    frames: list[float] = []
    fuse_only: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.index_ready)
        await app.workers.wait_for_complete()
        # A query whose arms "answered" the synthetic rankings: every arm is cached.
        results = synthetic_rankings(engine.root, app.arms)
        app.search("synthetic candidates")
        await wait_for(pilot, lambda: app.query_complete)
        qid = app.session.start(app.query_text)  # drop the real answers; install the synthetic ones
        for result in results.values():
            app._record(qid, result)
        candidates = len(app.hits)
        app.table.focus()
        await pilot.press("down", "down")
        await pilot.pause()

        # Time every compositor refresh (layout + render of what changed) from here on.
        screen = app.screen
        real_refresh = screen._compositor_refresh
        frame_log: list[float] = []

        def timed_refresh() -> None:
            t = time.perf_counter()
            real_refresh()
            frame_log.append((time.perf_counter() - t) * 1000)

        screen._compositor_refresh = timed_refresh
        await pilot.press("t")
        await pilot.pause(0.2)
        for i in range(repeats):
            key = "right" if i % 2 == 0 else "left"  # bm25 1.0 <-> 1.1
            app.last_refuse_ms = None
            frame_log.clear()
            await pilot.press(key)
            await wait_for(pilot, lambda: app.last_refuse_ms is not None)
            await pilot.pause()
            await pilot.pause()
            handler.append(app.last_refuse_ms)
            frames.append(sum(frame_log))
        screen._compositor_refresh = real_refresh
        for i in range(repeats):
            weights = dict(app.weights, bm25=1.0 + 0.1 * (i % 2))
            t = time.perf_counter()
            engine.fuse(list(app.results.values()), weights=weights, k=app.k)
            fuse_only.append((time.perf_counter() - t) * 1000)
    engine.close()
    return {
        "candidates": candidates,
        "handler": handler,
        "frame": frames,
        "total": [h + f for h, f in zip(handler, frames)],
        "fuse": fuse_only,
    }


# -- main ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="repository to explore (default: this one)")
    parser.add_argument("--repeats", type=int, default=15, help="repeats per figure (default 15)")
    args = parser.parse_args(argv)
    root = args.root.resolve()

    # The four arms always installed: a deep build in the background would share the cores
    # with what is measured here (bench_engine.py measures deep).
    os.environ["RANKLENS_DEEP"] = "0"
    with tempfile.TemporaryDirectory(prefix="ranklens-bench-") as cache:
        os.environ["RANKLENS_CACHE_DIR"] = cache
        t = time.perf_counter()
        stats = Engine(root).ensure_index()
        print(f"root {root}: {stats.files} files, {stats.chunks} chunks (indexed in {time.perf_counter() - t:.1f} s)")
        print(f"terminal {SIZE[0]}x{SIZE[1]}, medians of {args.repeats} repeats\n")

        paints, opens = [], []
        for _ in range(max(3, args.repeats // 3)):
            paint, opened = asyncio.run(first_paint_once(root))
            paints.append(paint)
            opens.append(opened)
        process = [first_paint_process(root) for _ in range(max(3, args.repeats // 3))]
        print("first paint, warm index")
        print(f"  in process (engine + app -> first frame)   {median(paints):8.1f} ms   target <= 1000 ms")
        print(f"  fresh process, imports included           {median(process):8.1f} ms")
        print(f"  index open (queries can run)              {median(opens):8.1f} ms")

        first, times, rows = asyncio.run(query_times(root, max(1, args.repeats // len(QUERIES) + 1)))
        print(f"\nquery to complete table ({len(times)} queries, {rows} rows max)")
        print(f"  first query (arms open their artifacts)   {first:8.1f} ms")
        print(f"  median, warm                              {median(times):8.1f} ms")
        print(f"  p90, warm                                 {statistics.quantiles(times, n=10)[-1]:8.1f} ms")

        refuse = asyncio.run(refuse_times(root, args.repeats))
        print(f"\nslider move: re-fuse + redraw at {refuse['candidates']} candidates (4 arms x {PER_ARM})")
        print(f"  engine.fuse alone                         {median(refuse['fuse']):8.1f} ms")
        print(f"  handler: fuse + table + trace update      {median(refuse['handler']):8.1f} ms   target <= 16 ms")
        print(
            f"    of which the UI (handler - fuse)        {median(refuse['handler']) - median(refuse['fuse']):8.1f} ms"
        )
        print(f"  frame: layout + render that follows       {median(refuse['frame']):8.1f} ms")
        print(f"  total (handler + frame)                   {median(refuse['total']):8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
