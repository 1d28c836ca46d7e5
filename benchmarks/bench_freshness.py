"""Freshness benchmark (issue #26, part 3): what a query and a nothing-changed ``index`` cost on a
large tree, and what a long-lived process's refresh costs with the inotify watcher, this
checkout against an older commit in the same run.

    python benchmarks/bench_freshness.py [--files 20000] [--against c14ba8d] [--runs 5] [--no-git]

It builds a synthetic tree of ``--files`` C files (2-8 small functions each) in ~``files/12``
folders up to six deep, as a git work tree with everything committed unless ``--no-git`` (the
Linux sources, 78k files, are too big to index twice on this shared machine; the check's cost is
per file and folder, so it scales). The older commit is checked out with ``git worktree add
--detach``; each checkout indexes the tree into a cache folder of its own (the cold builds are
not measured). Every command runs as ``python -m ranklens …`` with ``PYTHONPATH`` set to its
checkout, ``RANKLENS_DEEP=0`` and byte-code cached under a temporary ``PYTHONPYCACHEPREFIX`` (as
an installed package has it, whatever ``PYTHONDONTWRITEBYTECODE`` says here), alternating
between the two checkouts so a load change on a shared machine hits both alike:

1. nothing-changed ``ranklens index TREE`` (median wall of ``--runs``);
2. ``ranklens query`` from a fresh process, nothing changed (median wall);
3. ``ranklens query`` right after one file was saved (a function appended: median wall);
4. in one process, ``Engine.ensure_index()`` with nothing changed (what the terminal UI and the
   MCP server run before answering; median of 20): this checkout with its watcher, this checkout
   without one (``--fresh`` servers, other systems), and the older commit.

The temporary folder is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
WORDS = "alpha beta gamma delta sched irq page slab inode mutex spin lock queue buffer device driver net core".split()
QUERY = "mutex lock queue buffer"
EDITED = "sched/edited_target.c"

DRIVER = r"""
import json, statistics, sys, time
from pathlib import Path
from ranklens.core.engine import Engine
root, cache, watch = sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "1"
engine = Engine(root, cache_dir=cache)
if watch:
    assert engine.watch(), "no inotify watcher here"
for _ in range(3):  # the whole checks after the watches were added
    engine.ensure_index(deep=False)
times = []
for _ in range(20):
    t0 = time.perf_counter()
    stats = engine.ensure_index(deep=False)
    times.append((time.perf_counter() - t0) * 1000)
    assert stats.up_to_date
print(json.dumps({"ms": statistics.median(times), "check": stats.check}))
"""


def make_tree(root: Path, n: int, git: bool) -> None:
    rng = random.Random(7)
    dirs = [""]
    for i in range(n // 12):
        parent = rng.choice(dirs[-200:])
        if parent.count("/") >= 5:
            parent = ""
        dirs.append((parent + "/" if parent else "") + f"{rng.choice(WORDS)}{i}")
    for i in range(n - 1):
        path = root / rng.choice(dirs[1:]) / f"{rng.choice(WORDS)}_{i}.c"
        path.parent.mkdir(parents=True, exist_ok=True)
        funcs = [
            f"int {rng.choice(WORDS)}_{rng.choice(WORDS)}_{i}_{k}(int x)\n{{\n    return x + {k};\n}}\n"
            for k in range(rng.randint(2, 8))
        ]
        path.write_text(f"/* file {i} */\n" + "\n".join(funcs))
    (root / EDITED).parent.mkdir(parents=True, exist_ok=True)
    (root / EDITED).write_text("int edited_target(int x)\n{\n    return x;\n}\n")
    if git:
        env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
        for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "t"]):
            subprocess.run(["git", *cmd], cwd=root, check=True, env=env)


class Checkout:
    def __init__(self, name: str, path: Path, tmp: Path) -> None:
        self.name, self.path = name, path
        self.cache = tmp / f"cache-{name}"
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.env.update(
            PYTHONPATH=str(path),
            RANKLENS_DEEP="0",
            RANKLENS_CACHE_DIR=str(self.cache),
            PYTHONPYCACHEPREFIX=str(tmp / f"pyc-{name}"),
        )

    def wall(self, *args: str, cwd: Path) -> float:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "ranklens", *args], cwd=cwd, env=self.env, capture_output=True)
        took = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"{self.name}: ranklens {' '.join(args)} failed: {proc.stderr.decode()[-800:]}")
        return took

    def refresh_ms(self, tree: Path, watch: bool, cwd: Path) -> dict:
        proc = subprocess.run(
            [sys.executable, "-c", DRIVER, str(tree), str(self.cache), "1" if watch else "0"],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise SystemExit(f"{self.name}: the refresh driver failed: {proc.stderr[-800:]}")
        return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--against", default="c14ba8d")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-git", action="store_true", help="a plain folder (walk mode), not a git work tree")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ranklens-fresh-") as tmp_name:
        tmp = Path(tmp_name)
        tree, cwd, old = tmp / "tree", tmp / "cwd", tmp / "old"
        cwd.mkdir()
        t0 = time.perf_counter()
        make_tree(tree, args.files, not args.no_git)
        print(
            f"tree: {args.files:,} files, {'walk mode' if args.no_git else 'git work tree'} ({time.perf_counter() - t0:.1f} s)"
        )
        subprocess.run(
            ["git", "-C", str(HERE), "worktree", "add", "--detach", "-q", str(old), args.against], check=True
        )
        try:
            new, older = Checkout("this", HERE, tmp), Checkout(args.against, old, tmp)
            pair = (new, older)
            for c in pair:
                took = c.wall("index", str(tree), cwd=cwd)
                print(f"cold index, {c.name}: {took:.1f} s (not a figure here)")
            for c in pair:  # out of the racy window: the files are seconds old by now
                c.wall("index", str(tree), cwd=cwd)
            rows: list[tuple[str, float, float, str]] = []
            walls = {c.name: [] for c in pair}
            for _ in range(args.runs):
                for c in pair:
                    walls[c.name].append(c.wall("index", str(tree), cwd=cwd))
            rows.append(("index, nothing changed", *(statistics.median(walls[c.name]) for c in pair), "s"))
            walls = {c.name: [] for c in pair}
            for _ in range(args.runs):
                for c in pair:
                    walls[c.name].append(c.wall("query", QUERY, "--root", str(tree), cwd=cwd))
            rows.append(("query, nothing changed", *(statistics.median(walls[c.name]) for c in pair), "s"))
            walls = {c.name: [] for c in pair}
            for i in range(args.runs):
                with open(tree / EDITED, "a") as fh:
                    fh.write(f"\nint saved_function_{i}(int x)\n{{\n    return x * {i};\n}}\n")
                for c in pair:
                    walls[c.name].append(c.wall("query", f"saved_function_{i}", "--root", str(tree), cwd=cwd))
            rows.append(("query after a one-file save", *(statistics.median(walls[c.name]) for c in pair), "s"))
            watched = new.refresh_ms(tree, True, cwd)
            unwatched = new.refresh_ms(tree, False, cwd)
            before = older.refresh_ms(tree, False, cwd)
            rows.append(("refresh (UI, MCP), watcher", watched["ms"], before["ms"], "ms"))
            rows.append(("refresh, no watcher (--fresh)", unwatched["ms"], before["ms"], "ms"))
            print(f"\nmedian wall, this checkout against {args.against}, same run")
            print(f"{'':<32}{'this':>10}{args.against:>10}{'ratio':>8}")
            for name, a, b, unit in rows:
                print(f"{name:<32}{a:>8.3f}{unit:<2}{b:>8.3f}{unit:<2}{a / b:>7.2f}x")
            print(
                f"\nwatcher's check: {watched['check']['files']} files stat'ed (by {watched['check']['by']}); "
                f"without: {unwatched['check']['files']:,} files and {unwatched['check']['folders']:,} folders"
            )
        finally:
            subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force", str(old)], check=False)


if __name__ == "__main__":
    main()
