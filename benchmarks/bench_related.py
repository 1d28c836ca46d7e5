"""What following the code costs, on the ~50k-chunk corpus of bench_engine.py (the standard
library with its tests, and scipy):

1. ``related`` in process: a warm engine, 40 definitions spread over the corpus, each asked
   once with its files unread (first) and once more (warm); p50 / p95 in ms;
2. a fresh ``ranklens related`` and a fresh ``ranklens query`` on the same index, in turns,
   five of each (median wall of the whole process);
3. the edges' cost: a cold ``ranklens index`` and the index's size on disk, this checkout
   against ``--baseline`` (another checkout's Python, e.g. a worktree of the commit before
   the edges with its own venv), in turns, three of each.

    python benchmarks/bench_related.py [--root DIR] [--baseline PYTHON] [--rounds 3]

Every index goes to a temp cache folder; nothing of the user's is touched.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import _copy_corpus, pct


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def timed(cmd: list[str], env: dict, cwd: Path, cpu: list | None = None) -> float:
    """The wall seconds of ``cmd``; ``cpu`` gets its process tree's CPU seconds (user and
    system of every process it waited for: on a shared machine the steadier figure)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{cmd} failed: {out.stderr[-500:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cpu is not None:
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return time.perf_counter() - t0


def in_process(root: Path, cache: Path) -> list[str]:
    os.environ["RANKLENS_CACHE_DIR"] = str(cache)
    from ranklens.core.chunking import references
    from ranklens.core.engine import Engine
    from ranklens.core.navigate import neighbourhood

    engine = Engine(root)
    engine.ensure_index()
    n = len(engine.view.chunks)
    paths = sorted(p for p in engine.view.chunks.distinct_paths() if p.endswith(".py"))
    picks = []
    for path in paths[:: max(1, len(paths) // 40)]:
        defs = references(path, (root / path).read_text(encoding="utf-8", errors="replace")).defs
        named = [d for d in defs if d.symbol and d.end_line > d.start_line]
        if named:
            picks.append((path, named[len(named) // 2].start_line))
    first, warm, counts = [], [], []
    for path, line in picks[:40]:
        t0 = time.perf_counter()
        found = neighbourhood(engine, path, line)
        first.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        neighbourhood(engine, path, line)
        warm.append((time.perf_counter() - t0) * 1000)
        counts.append(sum(found.counts.values()))
    engine.close()
    return [
        f"corpus: {n} chunks; {len(first)} definitions, {statistics.median(counts):.0f} related places each (median)",
        f"related in process, files unread: p50 {pct(first, 0.5):.1f} ms, p95 {pct(first, 0.95):.1f} ms",
        f"related in process, warm:         p50 {pct(warm, 0.5):.1f} ms, p95 {pct(warm, 0.95):.1f} ms",
    ], picks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, help="a corpus folder (default: stdlib + scipy, copied)")
    ap.add_argument("--baseline", help="the Python of another checkout to compare the cold index with")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-related-"))
    root = args.root
    if root is None:
        root = work / "corpus"
        _copy_corpus(root)
    env = {**os.environ, "RANKLENS_DEEP": "0"}
    here = sys.executable
    lines = []
    # 3. cold index and size, in turns with the baseline
    builds: dict[str, list[float]] = {"head": [], "baseline": []}
    cpus: dict[str, list[float]] = {"head": [], "baseline": []}
    sizes: dict[str, int] = {}
    for _ in range(args.rounds):
        for label, python in (("head", here), ("baseline", args.baseline)):
            if python is None:
                continue
            cache = work / f"cache-{label}"
            shutil.rmtree(cache, ignore_errors=True)
            index_env = {**env, "RANKLENS_CACHE_DIR": str(cache)}
            builds[label].append(timed([python, "-m", "ranklens", "index", str(root)], index_env, work, cpus[label]))
            sizes[label] = du(cache)
    for label, walls in builds.items():
        if walls:
            lines.append(
                f"cold index ({label}): median {statistics.median(walls):.1f} s of {[round(w, 1) for w in walls]}, "
                f"CPU {statistics.median(cpus[label]):.1f} s; size {sizes[label] / 1e6:.1f} MB"
            )
    if builds["baseline"]:
        lines.append(
            f"edges' cost: index time x{statistics.median(builds['head']) / statistics.median(builds['baseline']):.3f}, "
            f"CPU x{statistics.median(cpus['head']) / statistics.median(cpus['baseline']):.3f}, "
            f"size x{sizes['head'] / sizes['baseline']:.3f}"
        )
    cache = work / "cache-head"
    found, picks = in_process(root, cache)
    lines += found
    # 2. fresh CLI processes, in turns
    rel, qry = [], []
    cli_env = {**env, "RANKLENS_CACHE_DIR": str(cache)}
    for i in range(5):
        path, line = picks[i * 3 % len(picks)]
        rel.append(timed([here, "-m", "ranklens", "related", f"{path}:{line}", "--root", str(root)], cli_env, work))
        qry.append(
            timed([here, "-m", "ranklens", "query", "parse command line arguments", "--root", str(root)], cli_env, work)
        )
    lines.append(
        f"fresh CLI: related median {statistics.median(rel):.2f} s, query median {statistics.median(qry):.2f} s (in turns)"
    )
    print("\n".join(lines))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
