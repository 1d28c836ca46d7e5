"""Index time per repository of the code-search benchmark, against an older checkout.

    python benchmarks/bench_index_repos.py --baseline OLD_CHECKOUT [--bench ../shared/bench] [--rounds N]

Each benchmark repository is indexed from scratch (a fresh cache folder each time, the deep
arm off) by this checkout and by ``OLD_CHECKOUT`` (a ``git worktree`` of the commit to compare
with), one after the other in alternating order, so both see the same machine load: on a
shared machine the ratio of the two is the figure to quote, not either wall time alone.
Prints, per repository, the wall and CPU seconds of each (whole processes, from start to exit),
then the means, medians and the ratio new/old. Fetches nothing: the repositories are the
benchmark's ``repos.tar.xz``, unpacked by its ``run.py`` into ``$TMPDIR/ranklens-bench/repos``
(this script unpacks them the same way when they are missing).

``OLD_CHECKOUT`` may predate the ``ranklens`` package (its entry point then was ``core.cli``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NEW = HERE.parent


def entry(checkout: Path) -> list[str]:
    """The command that runs ``checkout``'s CLI with its own sources first on the path."""
    if (checkout / "ranklens" / "__main__.py").is_file():
        return [sys.executable, "-m", "ranklens"]
    return [sys.executable, "-c", "import sys; from core.cli import main; sys.exit(main())"]


def index_once(checkout: Path, root: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one cold ``index`` of ``root`` by ``checkout``."""
    cache = Path(tempfile.mkdtemp(prefix="bench-index-"))
    env = dict(os.environ, RANKLENS_DEEP="0", RANKLENS_CACHE_DIR=str(cache), PYTHONPATH=str(checkout))
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        # run from the cache folder: the current directory comes first on `-c`'s path
        proc = subprocess.run(
            [*entry(checkout), "index", str(root)], env=env, cwd=cache, capture_output=True, text=True
        )
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if proc.returncode:
        sys.exit(f"bench_index_repos: {checkout} failed on {root}: {proc.stderr.strip().splitlines()[-1:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, required=True, help="an older checkout (git worktree) to compare with")
    ap.add_argument("--bench", type=Path, default=NEW.parent / "shared" / "bench", help="the benchmark folder")
    ap.add_argument("--rounds", type=int, default=1, help="passes over the repositories (default 1)")
    args = ap.parse_args()

    # the benchmark's own runner, loaded from its file: its unpack() and its folder
    spec = importlib.util.spec_from_file_location("bench_run", args.bench / "run.py")
    bench_run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_run)

    repos_dir = bench_run.WORK / "repos"
    bench_run.unpack(repos_dir)
    repos = json.loads((args.bench / "repos.json").read_text(encoding="utf-8"))
    sides = {"old": args.baseline.resolve(), "new": NEW}
    figures: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
    print(f"{'repository':<20} {'old wall':>9} {'new wall':>9} {'old cpu':>8} {'new cpu':>8}  load")
    for n in range(args.rounds):
        for i, repo in enumerate(repos):
            root = repos_dir / repo["name"] / (repo.get("benchmark_root") or "")
            order = ["old", "new"] if (i + n) % 2 == 0 else ["new", "old"]
            row = {side: index_once(sides[side], root) for side in order}
            for side in row:
                figures[side].append(row[side])
            print(
                f"{repo['name']:<20} {row['old'][0]:8.2f}s {row['new'][0]:8.2f}s {row['old'][1]:7.2f}s {row['new'][1]:7.2f}s"
                f"  {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    for side in ("old", "new"):
        walls, cpus = [f[0] for f in figures[side]], [f[1] for f in figures[side]]
        print(
            f"{side}: wall mean {statistics.mean(walls):.3f} s, median {statistics.median(walls):.3f} s; "
            f"CPU mean {statistics.mean(cpus):.3f} s"
        )
    ratio = statistics.mean(f[0] for f in figures["new"]) / statistics.mean(f[0] for f in figures["old"])
    cpu_ratio = statistics.mean(f[1] for f in figures["new"]) / statistics.mean(f[1] for f in figures["old"])
    print(f"new / old: wall {ratio:.2f}x, CPU {cpu_ratio:.2f}x")


if __name__ == "__main__":
    main()
