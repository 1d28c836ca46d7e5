"""Concurrency stress loop (issue #19): counts the rounds that hang or raise.

    python benchmarks/stress_concurrency.py [--rounds N] [--binding sqlean|pysqlite3|sqlite3]
                                            [--timeout S] [--batch N]

One round, in one process: a file of a small repository changes, ``Engine(root).ensure_index()``
brings the index up to date (its prewarm thread opening the committed generation meanwhile)
while two threads each open a fresh engine on the same index and search it with every arm.
That is the pattern that deadlocked SQLite 3.51.1's unix VFS (an open on one thread against a
WAL close on another) and that raced Python 3.11's AST construction (``np.load`` parsing
``.npy`` headers on several threads at once).

Rounds run in child processes of ``--batch`` rounds each, with a watchdog: a round that takes
longer than ``--timeout`` seconds dumps every thread's stack (faulthandler) and kills its
child; it counts as a hang and the next child goes on with the next round. A round whose
index pass, engine or arm raised counts as an error. ``--binding`` sets ``RANKLENS_SQLITE``
(:mod:`core.base._sqlite`); run with another checkout on ``PYTHONPATH`` to measure older code
(which may ignore it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERIES = ["parse the config file", "retry_connection timeout", "LRUCache get put", "render a template"]


def make_repo(root: Path, files: int = 24) -> None:
    """A small repository: enough segments and arms to load on every open."""
    for i in range(files):
        folder = root / f"pkg{i % 4}"
        folder.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(
            f"def handler_{i}_{j}(request, retry_connection=3):\n"
            f'    """Parse the config file {i}.{j} and render a template for the request."""\n'
            f"    timeout = {j} * retry_connection\n"
            f"    return request.get('value_{j}', timeout)\n"
            for j in range(12)
        )
        (folder / f"module_{i}.py").write_text(body + "\n", encoding="utf-8")
    (root / "cache.py").write_text(
        "class LRUCache:\n    def get(self, key):\n        return key\n\n    def put(self, key, value):\n        pass\n",
        encoding="utf-8",
    )


def change(root: Path, n: int) -> None:
    """Round ``n``'s edit: one file rewritten with a function named after the round."""
    path = root / "pkg0" / "changing.py"
    path.write_text(
        f"def changed_in_round_{n}(config):\n    '''Parse the config file, round {n}.'''\n    return config[{n}]\n",
        encoding="utf-8",
    )


def child(root: Path, first: int, count: int, timeout: float) -> None:
    """Run rounds ``first..first+count-1``; one JSON line each on stdout."""
    import faulthandler
    import threading

    from ranklens.core.engine import Engine

    def reader(errors: list[str], query: str) -> None:
        try:
            engine = Engine(root)
            try:
                if engine.open():
                    result = engine.search(query)
                    errors.extend(f"{r.arm}: {r.error}" for r in result.results.values() if r.error)
            finally:
                engine.close()
        except Exception as exc:
            errors.append(f"reader: {type(exc).__name__}: {exc}")

    for n in range(first, first + count):
        faulthandler.dump_traceback_later(timeout, exit=True)  # a hang: stacks, then exit 1
        change(root, n)
        errors: list[str] = []
        threads = [
            threading.Thread(target=reader, args=(errors, QUERIES[(n + k) % len(QUERIES)]), name=f"reader-{k}")
            for k in range(2)
        ]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        try:
            engine = Engine(root)
            try:
                engine.ensure_index()
                result = engine.search(f"changed_in_round_{n}")
                errors.extend(f"{r.arm}: {r.error}" for r in result.results.values() if r.error)
            finally:
                engine.close()
        except Exception as exc:
            errors.append(f"index: {type(exc).__name__}: {exc}")
        for t in threads:
            t.join()
        faulthandler.cancel_dump_traceback_later()
        print(json.dumps({"round": n, "errors": errors, "seconds": time.perf_counter() - t0}), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--binding", choices=["sqlean", "pysqlite3", "sqlite3"], help="sets RANKLENS_SQLITE")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds before a round counts as hung")
    ap.add_argument("--batch", type=int, default=50, help="rounds per child process")
    ap.add_argument("--child", nargs=3, metavar=("ROOT", "FIRST", "COUNT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(Path(args.child[0]), int(args.child[1]), int(args.child[2]), args.timeout)
        return 0

    env = dict(os.environ, RANKLENS_DEEP="0")
    if args.binding:
        env["RANKLENS_SQLITE"] = args.binding
    work = Path(tempfile.mkdtemp(prefix="ranklens-stress-"))
    env["RANKLENS_CACHE_DIR"] = str(work / "cache")
    root = work / "repo"
    make_repo(root)
    hangs, errors, done, seconds = [], [], 0, []
    t_start = time.perf_counter()
    stacks = work / "stacks.txt"
    n = 0
    while n < args.rounds:
        count = min(args.batch, args.rounds - n)
        with open(stacks, "a", encoding="utf-8") as err:
            proc = subprocess.Popen(
                [sys.executable, __file__, "--timeout", str(args.timeout), "--child", str(root), str(n), str(count)],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=env,
            )
            last = n - 1
            for line in proc.stdout:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                last = rec["round"]
                done += 1
                seconds.append(rec["seconds"])
                if rec["errors"]:
                    errors.append((last, rec["errors"]))
                    print(f"round {last}: error: {rec['errors'][0][:300]}", flush=True)
            proc.wait()
        if last < n + count - 1:  # the watchdog (or a crash) ended the child mid-batch
            hangs.append(last + 1)
            print(f"round {last + 1}: hung or crashed (exit {proc.returncode}); stacks in {stacks}", flush=True)
            n = last + 2
        else:
            n += count
    seconds.sort()
    p50 = seconds[len(seconds) // 2] if seconds else 0.0
    binding = args.binding or "default"
    print(
        f"binding {binding}: {args.rounds} rounds, {len(hangs)} hung, {len(errors)} with errors, "
        f"{done} completed (round p50 {p50:.2f} s), {time.perf_counter() - t_start:.0f} s in all"
    )
    if hangs:
        print(f"hung rounds: {hangs}; stacks: {stacks}")
    else:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 1 if hangs or errors else 0


if __name__ == "__main__":
    sys.exit(main())
