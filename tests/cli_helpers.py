"""The real ``ranklens`` CLI as a subprocess, for the tests that drive it."""

from __future__ import annotations

import os
import subprocess
import sys


def run(*args, cwd=None):
    """``python -m core.cli ARGS`` with a wide terminal (tables are not wrapped)."""
    return subprocess.run(
        [sys.executable, "-m", "core.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},
        timeout=300,
    )
