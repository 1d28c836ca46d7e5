#!/usr/bin/env python3
"""The second command: ``python3 run_tests.py [pytest arguments]``.

Sets up ``.venv`` as ``start.py`` does, with the test extras (and the optional deep arm and
Milvus Lite, whose tests would otherwise be skipped), then runs the whole suite on two cores:
``python -m pytest -q -n 2``. Arguments are passed on to pytest (``python3 run_tests.py
tests/test_cli.py -n 0`` runs one file on one process). ``--lint`` first runs the pinned ruff
(what ``.ci/run`` does), so a finding fails in seconds, before the minutes of tests.
"""

from __future__ import annotations

import os
import subprocess
import sys

from start import ROOT, ensure

EXTRAS = ("deep", "milvus", "test")
#: The README's test command and CI's, after ``python -m pytest``.
PYTEST_ARGS = ["-q", "-n", "2"]
RUFF = "ruff==0.17.6"  # pinned: a new ruff release cannot fail a clean tree with rules it adds


def main(args: list[str]) -> int:
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
    return subprocess.run([python, "-m", "pytest", *PYTEST_ARGS, *args]).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
