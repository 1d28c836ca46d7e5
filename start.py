#!/usr/bin/env python3
"""The first command: ``python3 start.py [ranklens arguments]``.

Makes a project-local virtual environment (``.venv`` beside this file, never the system
Python), installs ranklens into it (editable, so the checkout is what runs) and opens the
terminal UI: on the current directory when it is a repository (a git work tree), else on the
small sample repository that ships inside the package. Arguments go to ``ranklens`` as given
(``python3 start.py path/to/repo``, ``python3 start.py query "…"``).

Idempotent and quick when nothing changed: pip runs only when ``pyproject.toml`` (or the
extras asked for) differ from what the stamp in ``.venv`` records. Standard library only, so
it runs on any Python 3.11+ (Debian's included: ``sudo apt install python3-venv``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / "ranklens-install.json"
SAMPLE = ROOT / "ranklens" / "sample_repo"
#: pip's lines shown as they come (the rest, "Requirement already satisfied" and the like, only
#: when it fails) ...
PIP_SHOWN = ("Obtaining", "Collecting", "Downloading", "Building", "Installing", "Successfully", "ERROR")
#: ... and while it says nothing for this long (unpacking, building, installing large wheels:
#: the install's longest stretches), a line saying what it is on and for how long.
TICK_S = 5.0


def say(line: str) -> None:
    print(f"start: {line}", file=sys.stderr, flush=True)


def pip(argv: list[str]) -> int:
    """Run pip (``argv``) showing what it does (:data:`PIP_SHOWN`, and a line every
    :data:`TICK_S` seconds of silence); its whole output when it fails. Its exit status."""
    t0 = time.monotonic()
    out: list[str] = []
    last = ["starting pip"]
    quiet = threading.Event()

    def tick() -> None:
        while not quiet.wait(TICK_S):
            say(f"pip, {time.monotonic() - t0:.0f} s so far; its last step: {last[0]}")

    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    threading.Thread(target=tick, daemon=True).start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.append(line)
            text = line.strip()
            if text.startswith(PIP_SHOWN):
                last[0] = text if len(text) <= 100 else text[:97] + "..."
                say(last[0])
        status = proc.wait()
    finally:
        quiet.set()
    if status != 0:
        sys.stderr.write("".join(out))
    else:
        say(f"pip took {time.monotonic() - t0:.0f} s")
    return status


def fingerprint() -> str:
    """What an install depends on: the project's metadata and the build hook."""
    digest = hashlib.sha256()
    for name in ("pyproject.toml", "hatch_build.py"):
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def _venv_works() -> bool:
    try:
        return subprocess.run([str(PYTHON), "-c", "import sys"], capture_output=True, timeout=60).returncode == 0
    except OSError:
        return False


def ensure(extras: tuple[str, ...] = ()) -> Path:
    """``.venv`` with ranklens and ``extras`` installed; returns its interpreter."""
    if sys.version_info < (3, 11):  # noqa: UP036  (the launcher runs on whatever python3 is)
        sys.exit(f"start: ranklens needs Python 3.11 or newer; this is {sys.version.split()[0]} ({sys.executable})")
    if not _venv_works():
        say(f"creating {VENV.relative_to(ROOT)} with {sys.executable}")
        made = subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)])
        if made.returncode != 0 or not _venv_works():
            sys.exit(
                "start: could not create the virtual environment; on Debian or Ubuntu: sudo apt install python3-venv"
            )
    want = fingerprint()
    try:
        stamp = json.loads(STAMP.read_text())
    except (OSError, ValueError):
        stamp = {}
    # One stamp per set of extras; a set that holds the extras asked for serves them too.
    if not any(h == want and set(extras) <= set(key.split(",")) - {""} for key, h in stamp.items()):
        spec = f"{ROOT}[{','.join(extras)}]" if extras else str(ROOT)
        say(f"installing ranklens{'[' + ','.join(extras) + ']' if extras else ''} into .venv (a few minutes, once)")
        argv = [str(PYTHON), "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off", "-e", spec]
        if pip(argv) != 0:
            sys.exit("start: pip failed (its message is above); nothing else was changed")
        stamp = {key: h for key, h in stamp.items() if h == want}
        stamp[",".join(sorted(extras))] = want
        STAMP.write_text(json.dumps(stamp, indent=1) + "\n")
    return PYTHON


def in_repository(folder: Path) -> bool:
    """Whether ``folder`` lies in a git work tree."""
    try:
        run = subprocess.run(
            ["git", "rev-parse", "--is-inside-work-tree"], cwd=folder, capture_output=True, text=True, timeout=30
        )
    except OSError:  # no git: a .git above is enough
        return any((p / ".git").exists() for p in (folder, *folder.parents))
    return run.returncode == 0 and run.stdout.strip() == "true"


def command(args: list[str], cwd: Path) -> list[str]:
    """The ``ranklens`` command line to run for these arguments."""
    ranklens = str(BIN / "ranklens")
    if args or in_repository(cwd):
        return [ranklens, *args]
    say(f"{cwd} is not a repository: opening the sample repository ({SAMPLE})")
    return [ranklens, str(SAMPLE)]


def main() -> None:
    ensure()
    argv = command(sys.argv[1:], Path.cwd())
    if os.name == "nt":
        sys.exit(subprocess.run(argv).returncode)
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
