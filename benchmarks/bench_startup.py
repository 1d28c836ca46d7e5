"""Start-up benchmark: the wall time of ``ranklens --version``, ``--help`` and ``why`` from a
fresh process, this checkout against an older commit in the same run (issue #26, part 4).

    python benchmarks/bench_startup.py [--against c14ba8d] [--runs 5]

The older commit is checked out with ``git worktree add --detach`` into a temporary folder
(removed at the end). Each command runs ``--runs`` times per checkout, alternating between the
two so that a load change on a shared machine hits both alike, as
``python -m ranklens ...`` with ``PYTHONPATH`` set to that checkout, from an empty folder; the
figure is the median wall time from spawn to exit. The target is 0.15 s for ``--version``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
COMMANDS = {
    "--version": ["--version"],
    "--help": ["--help"],
    "why README.md": ["why", "README.md", "--root", "{root}"],
}
TARGET_VERSION_S = 0.15


def wall(checkout: Path, args: list[str], cwd: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(checkout), "RANKLENS_DEEP": "0"}
    args = [a.replace("{root}", str(checkout)) for a in args]
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "ranklens", *args], cwd=cwd, env=env, capture_output=True)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{checkout}: ranklens {' '.join(args)} failed: {proc.stderr.decode()[-500:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="c14ba8d", help="the older commit (default: c14ba8d)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ranklens-startup-") as tmp:
        old = Path(tmp) / "old"
        subprocess.run(
            ["git", "-C", str(HERE), "worktree", "add", "--detach", "-q", str(old), args.against], check=True
        )
        empty = Path(tmp) / "cwd"
        empty.mkdir()
        try:
            for checkout in (HERE, old):  # one unmeasured start each: byte-code compiled, files cached
                wall(checkout, ["--version"], str(empty))
            print(f"median wall of {args.runs} runs, this checkout against {args.against}, same run")
            print(f"{'command':<16}{'this':>9}{args.against:>10}{'ratio':>8}")
            for name, cmd in COMMANDS.items():
                new_t, old_t = [], []
                for _ in range(args.runs):
                    new_t.append(wall(HERE, cmd, str(empty)))
                    old_t.append(wall(old, cmd, str(empty)))
                new_m, old_m = statistics.median(new_t), statistics.median(old_t)
                print(f"{name:<16}{new_m:>8.3f}s{old_m:>9.3f}s{new_m / old_m:>7.2f}x")
                if name == "--version":
                    met = "met" if new_m <= TARGET_VERSION_S else "not met"
                    version = f"--version target {TARGET_VERSION_S} s: {met}"
            print(version)
        finally:
            subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force", str(old)], check=False)


if __name__ == "__main__":
    main()
