#!/usr/bin/env python3
"""The second command: ``python3 run_tests.py [pytest arguments]``.

Sets up ``.venv`` as ``start.py`` does, with the extras ``[deep,milvus,test]`` (the test
tools, and the optional deep arm and Milvus Lite, whose tests would otherwise be skipped), then
runs the whole suite on two cores: ``python -m pytest -q -n 2``. It says so first, with about
how long that takes, and prints how long it took at the end. Arguments are passed on to pytest
(``python3 run_tests.py tests/test_cli.py -n 0`` runs one file on one process). ``--lint``
first runs the pinned ruff (what ``.ci/run`` does), so a finding fails in seconds, before the
minutes of tests.

pytest's temporary folders (hundreds of MB) go to one folder per checkout in the system's
temporary folder, which each run clears first: removed after a green run, kept after a red one
(to look at) and named. Not inside the checkout: the tests make repositories there, and one
inside a git work tree is read as part of it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from start import ROOT, ensure

EXTRAS = ("deep", "milvus", "test")
#: The README's test command and CI's, after ``python -m pytest``.
PYTEST_ARGS = ["-q", "-n", "2"]
RUFF = "ruff==0.17.6"  # pinned: a new ruff release cannot fail a clean tree with rules it adds
#: About how long the whole suite takes on two idle cores: ~18 min of CPU (measured for issue
#: 43: 1,344 tests; 33 min of wall at load 8-16 on this 2-core VM, 12 at load 3-6).
SUITE_MINUTES = 9
#: pytest's --basetemp: one per checkout (two checkouts' suites may run at once), per user.
BASETEMP = Path(tempfile.gettempdir()) / (
    f"ranklens-tests-{os.getuid() if hasattr(os, 'getuid') else 0}-{hashlib.sha256(str(ROOT).encode()).hexdigest()[:10]}"
)


def say(line: str) -> None:
    print(f"run_tests: {line}", file=sys.stderr, flush=True)


def cpu() -> str:
    """The CPU time the children took (pytest, its workers and what they ran): on a busy
    machine the wall time says little, this divided by the cores says what an idle one takes."""
    try:
        import resource
    except ImportError:  # Windows
        return ""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return f" ({took(used.ru_utime + used.ru_stime)} of CPU)"


def took(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def main(args: list[str]) -> int:
    t0 = time.monotonic()
    whole = not any(not a.startswith("-") for a in args)  # no test file or folder named
    say(
        f"installs ranklens[{','.join(EXTRAS)}] into .venv when pyproject.toml changed, then runs "
        + (f"the whole suite on two cores (about {SUITE_MINUTES} min on an idle machine)" if whole else "pytest")
    )
    python = str(ensure(EXTRAS))
    os.chdir(ROOT)
    if "--lint" in args:
        args = [a for a in args if a != "--lint"]
        quiet = ["--quiet", "--disable-pip-version-check"]
        if subprocess.run([python, "-m", "pip", "install", *quiet, RUFF]).returncode != 0:
            return 1
        for check in (["check", "."], ["format", "--check", "."]):
            if subprocess.run([python, "-m", "ruff", *check]).returncode != 0:
                return 1
    temp = [] if any(a.startswith("--basetemp") for a in args) else [f"--basetemp={BASETEMP}"]
    status = subprocess.run([python, "-m", "pytest", *PYTEST_ARGS, *temp, *args]).returncode
    if status == 0 and temp:
        shutil.rmtree(BASETEMP, ignore_errors=True)
    kept = f"; its temporary files are in {BASETEMP}" if status != 0 and temp and BASETEMP.exists() else ""
    say(f"{'passed' if status == 0 else f'failed (exit {status})'} in {took(time.monotonic() - t0)}{cpu()}{kept}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
