"""A/B of the query path against older checkouts, in one run: all-arm query and re-fuse
medians of each checkout over the same index, run in alternating rounds so a machine whose
speed drifts (3-6x here between hours) weighs on both alike.

    python benchmarks/bench_ab.py ROOT --checkout /tmp/old-bed1507 [--checkout DIR ...]

ROOT must already be indexed by each checkout (``ranklens index ROOT``) in the cache
folder given for it (``--checkout DIR[=CACHE]``; default ``RANKLENS_CACHE_DIR``: checkouts
of one index format can share it); each checkout is imported through ``PYTHONPATH`` in a
process of its own per round (this checkout first, named ``now``). The questions are
``bench_engine.py``'s. Printed: per checkout the median of the rounds' medians, and each
one's ratio to ``now``: the query's wall time, the CPU its process spent on it (every thread:
less moved by other jobs on the machine than the wall time), a re-fuse's wall time (the
questions' cached rankings, other weights and k), and a slider move's ``engine.fuse`` at 500
candidates (``bench_tui.py``'s: four arms' made-up rankings of 150 one-line spans of ROOT's
files, every hit made, the bm25 weight moved); the deep arm is off.

Every checkout runs under this interpreter: give it one that has each checkout's
dependencies (6aeda67 scans its int8 vectors with simsimd and opens SQLite through
pysqlite3-binary; without them it falls back to slower paths and the comparison flatters now).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: Runs inside each checkout's process: warm the arms, then time the queries and re-fuses.
PROBE = r"""
import json, os, statistics, sys, time
if os.path.isdir(os.path.join(sys.argv[4], "ranklens")):
    from ranklens.core.engine import Engine
else:  # a checkout from before the one package: core/ was the top package
    from core.engine import Engine
    assert os.path.dirname(sys.modules["core"].__file__).startswith(sys.argv[4])
root, queries, passes = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
e = Engine(root)
e.open() if hasattr(e, "open") else e.ensure_index()
for q in queries:
    e.search(q)
search, refuse, cpu, slider = [], [], [], []
for _ in range(passes):
    for q in queries:
        c = time.process_time(); t = time.perf_counter(); r = e.search(q)
        search.append((time.perf_counter() - t) * 1000); cpu.append((time.process_time() - c) * 1000)
        for i in range(3):
            w = {"bm25": 1 + i / 10, "dense": 2 - i / 10}
            t = time.perf_counter(); e.fuse(r.results.values(), weights=w, k=20 + i)
            refuse.append((time.perf_counter() - t) * 1000)
engine_module = sys.modules[type(e).__module__]
core_package = engine_module.__name__.rsplit(".", 1)[0]  # types: core/base/types.py, before that core/types.py
made = engine_module.ArmResult, sys.modules.get(core_package + ".base.types") or sys.modules[core_package + ".types"]
candidates = json.loads(sys.argv[5])
results = [
    made[0](arm, hits=[made[1].Hit(arm, made[1].make_docid(p, n, n), p, n, n, rank, 100.0 / rank, context=p)
                       for rank, (p, n) in enumerate(spans, start=1)])
    for arm, spans in candidates.items()
]
for i in range(10 * passes + 2):
    t = time.perf_counter(); e.fuse(results, weights={"bm25": 1.0 + 0.1 * (i % 2)}, k=5)
    slider.append((time.perf_counter() - t) * 1000)
print(json.dumps({"search": statistics.median(search), "refuse": statistics.median(refuse), "cpu": statistics.median(cpu),
                  "slider": statistics.median(slider[2:])}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root")
    ap.add_argument("--checkout", action="append", default=[], help="an older checkout's folder[=its cache folder]")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--passes", type=int, default=2, help="passes over the questions per round")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_engine import QUERIES
    from bench_tui import synthetic_rankings

    made = synthetic_rankings(Path(args.root), ["bm25", "fts5", "dense", "symbols"])
    candidates = json.dumps({arm: [(h.path, h.start_line) for h in r.hits] for arm, r in made.items()})

    checkouts = {"now": (HERE.parent, os.environ.get("RANKLENS_CACHE_DIR"))}
    for given in args.checkout:
        folder, _, cache = given.partition("=")
        checkouts[Path(folder).name] = (Path(folder).resolve(), cache or os.environ.get("RANKLENS_CACHE_DIR"))
    figures_of = ("search", "refuse", "cpu", "slider")
    got: dict[str, dict[str, list[float]]] = {name: {key: [] for key in figures_of} for name in checkouts}
    for r in range(args.rounds):
        for name, (folder, cache) in checkouts.items() if r % 2 == 0 else reversed(list(checkouts.items())):
            env = {**os.environ, "PYTHONPATH": str(folder), "RANKLENS_DEEP": "0"}
            if cache:
                env["RANKLENS_CACHE_DIR"] = cache
            out = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    PROBE,
                    args.root,
                    json.dumps(QUERIES),
                    str(args.passes),
                    str(folder),
                    candidates,
                ],
                capture_output=True,
                text=True,
                env=env,
                cwd=folder,  # python -c puts the working folder first on the path
                check=True,
            )
            figures = json.loads(out.stdout.strip().splitlines()[-1])
            for key, value in figures.items():
                got[name][key].append(value)
    base = {key: statistics.median(got["now"][key]) for key in figures_of}
    for name, figures in got.items():
        s, f, c, m = (statistics.median(figures[key]) for key in figures_of)
        print(
            f"{name:>16}: all-arm query p50 {s:7.2f} ms (x{s / base['search']:.2f} of now), "
            f"its CPU {c:6.2f} ms (x{c / base['cpu']:.2f})   re-fuse p50 {f:6.2f} ms (x{f / base['refuse']:.2f})   "
            f"slider fuse at 500 p50 {m:6.2f} ms (x{m / base['slider']:.2f})   rounds {len(figures['search'])}"
        )
    print("targets: all-arm query <= 1.2x and slider fuse <= 1.25x of 6aeda67's; re-fuse p50 <= 2 ms")


if __name__ == "__main__":
    main()
