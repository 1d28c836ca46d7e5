"""The fts5 arm on each SQLite binding (issue #19): CPU per query and identical rankings.

    python benchmarks/bench_fts5_binding.py [--root DIR] [--rounds N] [--repeat N] [--apsw]
                                            [--bindings sqlean,pysqlite3,sqlite3] [--questions FILE]

Each binding (``RANKLENS_SQLITE``, :mod:`core.base._sqlite`) builds its own index of the corpus
(default: bench_engine.py's ~50k chunks of the stdlib and scipy) in a cache folder of its own,
then, in fresh processes taking turns (round 1: a, b, c; round 2: b, c, a ...), runs the fts5
arm alone over the questions (default: bench_engine.py's 20) ``--repeat`` times, timing each
query's CPU (``time.thread_time``) after one pass to warm up. Printed: each binding's SQLite,
its median CPU per query (the median over rounds of each round's median), the ratio to the
first binding, and whether every question's ranking (chunk ids and scores, top 30) is the same
on every binding. ``--questions``: a JSON file of ``[{"query": ...}]`` (the code-search
benchmark's annotations). Then the arm's SQL alone (its MATCH expressions, no Python around
them) on the first binding's index, by each binding and, with ``--apsw``, by apsw (another
API, which the arm cannot run on).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, os, sys, time
from pathlib import Path
from ranklens.core.base._sqlite import sqlite3
from ranklens.core.engine import Engine
root, queries, repeat, build = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
engine = Engine(root)
if build:
    engine.ensure_index()
assert engine.open()
arm = engine.arm("fts5")
ranks = {q: [(h.docid, round(h.score, 9)) for h in arm.search(q, 30)] for q in queries}
from ranklens.core.arms.fts5 import match_plan
plans = {q: match_plan(q, arm.common) for q in queries}
# Every statement a plan may run (its rest query too, which the arm runs only when needed).
plans = {q: p.exprs + ([p.rest] if p.rest else []) for q, p in plans.items()}
cpu = []
for _ in range(repeat):
    for q in queries:
        t0 = time.thread_time()
        arm.search(q, 30)
        cpu.append((time.thread_time() - t0) * 1000)
print(json.dumps({"version": sqlite3.sqlite_version, "module": sqlite3.__name__, "cpu": cpu, "ranks": ranks,
                  "plans": plans, "db": str(engine.view.db_path)}))
"""

#: The arm's own SQL (the MATCH expressions it runs, from the sqlean child) timed alone in a
#: process on one binding; ``{connect}`` opens the index read-only and names ``version``. apsw
#: has another API, so the arm itself cannot run on it: this is its figure.
SQL_TIMING = r"""
import json, sys, time
{connect}
db, plans, repeat = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
conn = open_ro(db)
sql = "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts), rowid LIMIT 30"
rows = {{q: [list(r) for e in exprs for r in conn.execute(sql, (e,))] for q, exprs in plans.items()}}
cpu = []
for _ in range(repeat):
    for q, exprs in plans.items():
        t0 = time.thread_time()
        for e in exprs:
            conn.execute(sql, (e,)).fetchall()
        cpu.append((time.thread_time() - t0) * 1000)
print(json.dumps({{"version": version, "cpu": cpu, "rows": rows}}))
"""
APSW_CHILD = SQL_TIMING.format(
    connect="import apsw\nversion = apsw.sqlite_lib_version()\n"
    "open_ro = lambda db: apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)"
)
SQL_CHILD = SQL_TIMING.format(
    connect="from ranklens.core.base._sqlite import sqlite3\nversion = sqlite3.sqlite_version\n"
    'open_ro = lambda db: sqlite3.connect(f"file:{db}?mode=ro", uri=True)'
)


def run_sql(binding: str, db: str, plans: dict, repeat: int) -> dict:
    """The arm's SQL alone on ``binding`` (``apsw``: through apsw)."""
    env = dict(os.environ, RANKLENS_SQLITE=binding)
    code = APSW_CHILD if binding == "apsw" else SQL_CHILD
    out = subprocess.run(
        [sys.executable, "-c", code, db, json.dumps(plans), str(repeat)],
        capture_output=True,
        text=True,
        env=env,
        cwd=HERE.parent,
    )
    if out.returncode != 0:
        raise SystemExit(f"{binding}: {out.stderr.strip()[-500:]}")
    return json.loads(out.stdout)


def run(binding: str, root: Path, cache: Path, queries: list[str], repeat: int, build: bool) -> dict:
    env = dict(os.environ, RANKLENS_SQLITE=binding, RANKLENS_CACHE_DIR=str(cache), RANKLENS_DEEP="0")
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), json.dumps(queries), str(repeat), "1" if build else "0"],
        capture_output=True,
        text=True,
        env=env,
        cwd=HERE.parent,
    )
    if out.returncode != 0:
        raise SystemExit(f"{binding}: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", help="corpus folder (default: a copy of the stdlib and scipy)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5, help="passes over the questions per round")
    ap.add_argument("--bindings", default="sqlean,pysqlite3,sqlite3")
    ap.add_argument("--questions", help="JSON list of {query} (default: bench_engine.py's)")
    ap.add_argument("--apsw", action="store_true", help="also time the arm's SQL through apsw")
    args = ap.parse_args()

    sys.path.insert(0, str(HERE))
    import bench_engine

    work = Path(tempfile.mkdtemp(prefix="ranklens-fts5-"))
    if args.root:
        root = Path(args.root).resolve()
    else:
        root = work / "corpus"
        bench_engine._copy_corpus(root)
    queries = (
        [q["query"] for q in json.loads(Path(args.questions).read_text())] if args.questions else bench_engine.QUERIES
    )
    bindings = args.bindings.split(",")
    caches = {b: work / f"cache-{b}" for b in bindings}
    results: dict[str, list[dict]] = {b: [] for b in bindings}
    for b in bindings:  # each binding builds its own index (its FTS5 tables are what it wrote)
        results[b].append(run(b, root, caches[b], queries, 1, build=True))
    for r in range(args.rounds):
        order = bindings[r % len(bindings) :] + bindings[: r % len(bindings)]
        for b in order:
            results[b].append(run(b, root, caches[b], queries, args.repeat, build=False))
    print(f"corpus: {root}; {len(queries)} questions x {args.repeat}, {args.rounds} rounds interleaved")
    base = None
    for b in bindings:
        first = results[b][0]
        p50 = statistics.median(statistics.median(x["cpu"]) for x in results[b][1:])
        base = base or p50
        print(
            f"  {b:<10} SQLite {first['version']:<7} fts5 CPU per query p50 {p50:6.2f} ms  ({p50 / base:.2f}x {bindings[0]})"
        )
    # The SQL alone, the first binding's index read by each binding and by apsw, interleaved.
    first = results[bindings[0]][0]
    sql_bindings = bindings + (["apsw"] if args.apsw else [])
    sql: dict[str, list[dict]] = {b: [] for b in sql_bindings}
    for r in range(args.rounds):
        order = sql_bindings[r % len(sql_bindings) :] + sql_bindings[: r % len(sql_bindings)]
        for b in order:
            sql[b].append(run_sql(b, first["db"], first["plans"], args.repeat))
    print(f"  the arm's SQL alone on {bindings[0]}'s index:")
    base = statistics.median(statistics.median(x["cpu"]) for x in sql[sql_bindings[0]])
    for b in sql_bindings:
        p50 = statistics.median(statistics.median(x["cpu"]) for x in sql[b])
        same = sql[b][0]["rows"] == sql[sql_bindings[0]][0]["rows"]
        print(
            f"  {b:<10} SQLite {sql[b][0]['version']:<7} CPU per query p50 {p50:6.2f} ms  ({p50 / base:.2f}x)"
            f"  rows and scores {'the same' if same else 'DIFFER'}"
        )
    ref = results[bindings[0]][0]["ranks"]
    for b in bindings[1:]:
        ranks = results[b][0]["ranks"]
        same = sum(ranks[q] == ref[q] for q in queries)
        ids = sum([d for d, _ in ranks[q]] == [d for d, _ in ref[q]] for q in queries)
        print(f"  rankings {b} vs {bindings[0]}: {same}/{len(queries)} identical (ids and scores), {ids} same ids")
    import shutil

    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
