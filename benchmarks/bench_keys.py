"""Keys answer at once: the help opening and quit ending the process while arms search or the
index builds, in a real terminal.

    python benchmarks/bench_keys.py [--root DIR] [--repeats N]

Each repeat starts the terminal UI in a pseudo-terminal (120x36, as ``ranklens ROOT`` starts
it: the same engine, session and app, ended by ``exit_now``) and presses keys as a person
would, timing from the key's bytes being written to what the terminal shows:

- search: every query's ``bm25`` arm is held (it never answers while the repeat lasts), so the
  other arms answer and the table waits for it. The query is typed and sent; once the other
  arms' hits are drawn, ``?`` opens the help (timed until its title is drawn), ``escape``
  closes it, and ``ctrl+q`` quits (timed until the process has ended).
- index: a cold first build of a copy of ``--root`` into an empty cache folder. Once the build
  has reported progress, ``f1`` opens the help (the query has the focus: ``?`` would type a
  ``?``), ``escape`` closes it and ``ctrl+q`` quits while the build is still running.

The process ends with ``os._exit`` once Textual has restored the terminal (as the CLI does), so
the quit figure is the key to the process gone, the terminal given back (without waiting for
Textual's input thread, ``tui/driver.py``: that wait was 0.1-0.2 s of every quit). The issue's target is
0.2 s for each. Medians and the worst repeat are printed, with the load average, since the
figures move with what else the machine runs. Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import re
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLUMNS, LINES = 120, 36
TARGET_S = 0.2
#: Escape sequences (colours, cursor moves) between the characters drawn.
ESCAPES = re.compile(rb"\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|[()][0-9A-Za-z]|[@-_])")

#: The UI as the CLI starts it, with the bm25 arm held (search) or the first build's progress
#: noted (index). It touches FLAG once the held arm or the build has started.
CHILD = r"""
import sys, threading
from pathlib import Path

from ranklens.core.service import open_engine
from ranklens.core.session import Session
from ranklens.tui.app import RanklensApp
from ranklens.tui.threads import exit_now

root, mode, flag = sys.argv[1], sys.argv[2], Path(sys.argv[3])
engine = open_engine(root, None, lambda _line: None, None, None)
never = threading.Event()
if mode == "search":
    real_arm = engine.run_arm

    def run_arm(name, query, **kwargs):
        if name == "bm25":
            flag.touch()
            never.wait(600)
        return real_arm(name, query, **kwargs)

    engine.run_arm = run_arm
else:
    real_index = engine.ensure_index

    def ensure_index(progress=None, **kwargs):
        def report(p):
            flag.touch()
            if progress is not None:
                progress(p)

        return real_index(report, **kwargs)

    engine.ensure_index = ensure_index
app = RanklensApp(session=Session(engine), watch=False)
app.run()
exit_now(app.return_code or 0)
"""


class Terminal:
    """A child process on a pseudo-terminal, and what it has drawn so far."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the UI
            os.execve(argv[0], argv, env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
        self.seen = b""
        self.status: int | None = None

    def read(self, timeout: float) -> bool:
        """Read what is there within ``timeout``; False once the child closed the terminal."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # EIO: the child is gone
            return False
        self.seen += chunk
        return bool(chunk)

    def wait_for(self, pattern: str, start: int, limit: float = 60.0) -> float:
        """Seconds until ``pattern`` (a regular expression) matches what is drawn after offset
        ``start``, its escape sequences left out."""
        t0 = time.perf_counter()
        wanted = re.compile(pattern.encode())
        while not wanted.search(ESCAPES.sub(b"", self.seen[start:])):
            if time.perf_counter() - t0 > limit or not self.read(0.005):
                raise RuntimeError(f"{pattern!r} did not appear within {limit} s")
        return time.perf_counter() - t0

    def press(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def wait_gone(self, limit: float = 60.0) -> None:
        t0 = time.perf_counter()
        while True:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
                return
            if time.perf_counter() - t0 > limit:
                os.kill(self.pid, signal.SIGKILL)
                raise RuntimeError(f"the UI did not exit within {limit} s")
            self.read(0.001)


def wait_flag(flag: Path, term: Terminal, limit: float = 120.0) -> None:
    t0 = time.perf_counter()
    while not flag.exists():
        if time.perf_counter() - t0 > limit:
            raise RuntimeError("the arm or the build never started")
        term.read(0.01)


def settle(term: Terminal, seconds: float) -> None:
    """Read what the UI draws for ``seconds`` (a pseudo-terminal not read would block it)."""
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        term.read(0.01)


def one(mode: str, root: Path, work: Path, env: dict[str, str]) -> tuple[float, float, bool]:
    """(help, quit, still in flight at quit) for one repeat."""
    flag = work / "started"
    flag.unlink(missing_ok=True)
    script = work / "child.py"
    script.write_text(CHILD)
    if mode == "index":
        shutil.rmtree(work / "cache", ignore_errors=True)  # a cold first build every time
    term = Terminal([sys.executable, str(script), str(root), mode, str(flag)], env)
    try:
        term.wait_for("Search the code", 0)
        if mode == "search":
            # The index is warm (built before the repeats): type the query, search now.
            term.wait_for("index up to date", 0)
            term.press(b"password hash\r")
            wait_flag(flag, term)
            term.wait_for("results · (top|[0-9])", 0)  # the other arms answered: their hits are drawn
            settle(term, 1.0)  # and the preview of the first (bm25 is still held)
            key = b"?"
        else:
            wait_flag(flag, term)
            key = b"\x1bOP"  # f1
        start = len(term.seen)
        term.press(key)
        help_s = term.wait_for("ranklens help", start)
        term.press(b"\x1b")
        settle(term, 0.3)
        in_flight = mode == "search" or b"indexing" in ESCAPES.sub(b"", term.seen[-20000:])
        t0 = time.perf_counter()
        term.press(b"\x11")  # ctrl+q
        term.wait_gone()
        quit_s = time.perf_counter() - t0
        return help_s, quit_s, in_flight
    finally:
        if term.status is None:
            os.kill(term.pid, signal.SIGKILL)
            os.waitpid(term.pid, 0)
        os.close(term.fd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=ROOT, help="repository to explore (default: this one)")
    parser.add_argument("--repeats", type=int, default=5, help="repeats per mode (default 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-keys-") as tmp:
        work = Path(tmp)
        copy = work / "repo"
        shutil.copytree(args.root, copy, ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__"))
        subprocess.run(["git", "init", "-q", str(copy)], check=True)
        env = {**os.environ, "TERM": "xterm-256color", "RANKLENS_CACHE_DIR": str(work / "cache")}
        env.pop("TEXTUAL", None)
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
        for mode in ("search", "index"):
            if mode == "search":  # a warm index, so the arms are what is in flight
                subprocess.run(
                    [sys.executable, "-m", "ranklens", "index", str(copy)], env=env, check=True, capture_output=True
                )
            helps, quits, flights = [], [], []
            for _ in range(args.repeats):
                help_s, quit_s, in_flight = one(mode, copy, work, env)
                helps.append(help_s)
                quits.append(quit_s)
                flights.append(in_flight)
            what = "while an arm searches" if mode == "search" else "while the first build runs"
            for name, values in (("help opens", helps), ("quit exits", quits)):
                print(
                    f"{name} {what}: median {statistics.median(values):.3f} s, worst {max(values):.3f} s "
                    f"over {len(values)} (target {TARGET_S} s)"
                )
            if not all(flights):
                print(f"  ({flights.count(False)} of {len(flights)} builds had ended before quit)")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
