"""The real ``ranklens`` CLI as a subprocess, for the tests that drive it."""

from __future__ import annotations

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
