"""The real ``ranklens`` CLI as a subprocess, for the tests that drive it."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys


def run(*args, cwd=None, env=None):
    """``python -m core.cli ARGS`` with a wide terminal (tables are not wrapped); ``env`` adds
    to the environment."""
    return subprocess.run(
        [sys.executable, "-m", "ranklens", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        timeout=300,
    )


def assert_python_prints_ok(code: str) -> None:
    """Run ``code`` in a fresh interpreter (import order and missing modules are per process);
    it must exit 0 after printing ``ok``."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


@contextlib.contextmanager
def lock_held_elsewhere(path):
    """Hold the file lock ``path`` from another process (as another ranklens would) for the
    ``with`` block."""
    code = (
        "import sys\nfrom filelock import FileLock\n"
        "lock = FileLock(sys.argv[1])\nlock.acquire()\nprint('held', flush=True)\nsys.stdin.read()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.stdin.close()
        holder.wait(30)
