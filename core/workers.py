"""An ordered map over a child interpreter, for the indexer's chunking of a large update.

Why not :mod:`multiprocessing`: its ``spawn`` and ``forkserver`` start methods run the parent's
main script again in the child (a script without an ``if __name__ == "__main__":`` guard that
builds an index would fail, after running its top level a second time), and ``fork`` is unsafe
in a threaded process (the terminal UI indexes from a thread, and the indexer's embedder thread
is already running). A plain ``python -c`` child that imports only this module, fed pickles
through its stdin and answering through its stdout, has neither problem.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import Any

_CHILD = "import sys, json; sys.path[:0] = json.loads(sys.argv[1]); from {module} import _serve; _serve()"


class WorkerError(RuntimeError):
    """The child process failed (its traceback is the message) or died."""


def ordered_map(fn: Callable[..., Any], jobs: list[tuple]) -> Iterator[Any]:
    """``fn(*job)`` for each job, computed in one child process, yielded in order.

    ``fn`` must be importable by name (a module-level function). Each job is sent as the child
    takes it and its slot in ``jobs`` is then cleared, so large inputs are freed as the work
    goes on. The child waits when the caller falls behind: the pipe is the only buffer. Closing
    the iterator early (an error or Ctrl-C in the caller) kills the child.

    Raises
    ------
    WorkerError
        When ``fn`` raised in the child, or the child died.
    """
    code = _CHILD.format(module=__name__)
    proc = subprocess.Popen(
        [sys.executable, "-c", code, json.dumps(sys.path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    writer = threading.Thread(target=_send, args=(proc.stdin, fn, jobs), name="ranklens-worker-feed", daemon=True)
    writer.start()
    finished = False
    try:
        for _ in range(len(jobs)):
            try:
                ok, value = pickle.load(proc.stdout)
            except EOFError:
                raise WorkerError(f"the worker process exited with status {proc.wait()}") from None
            if not ok:
                raise WorkerError(f"in the worker process: {value}")
            yield value
        finished = True
    finally:
        if not finished:
            proc.kill()
        proc.stdout.close()
        proc.wait()
        writer.join()


def _send(stream, fn: Callable[..., Any], jobs: list[tuple]) -> None:
    try:
        with stream:
            for i, job in enumerate(jobs):
                pickle.dump((fn, job), stream, protocol=pickle.HIGHEST_PROTOCOL)
                stream.flush()
                jobs[i] = None
    except (BrokenPipeError, OSError, ValueError):
        pass  # the child died or was killed: the reading side reports why


def _serve() -> None:
    """The child's loop: a job in from stdin, ``(ok, result or traceback)`` out to stdout."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it kills us
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a stray print must not corrupt the stream of results
    source = sys.stdin.buffer
    while True:
        try:
            fn, job = pickle.load(source)
        except EOFError:
            break
        try:
            result = (True, fn(*job))
        except Exception:
            result = (False, traceback.format_exc())
        pickle.dump(result, out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()
