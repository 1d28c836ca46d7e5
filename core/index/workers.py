"""An ordered map over a child interpreter, for the indexer's chunking of a large update.

Why not :mod:`multiprocessing`: its ``spawn`` and ``forkserver`` start methods run the parent's
main script again in the child (a script without an ``if __name__ == "__main__":`` guard that
builds an index would fail, after running its top level a second time), and ``fork`` is unsafe
in a threaded process (the terminal UI indexes from a thread, and the indexer's embedder thread
is already running). A plain ``python -c`` child that imports only this module, fed pickles
through its stdin and answering through its stdout, has neither problem.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import Any

_CHILD = "from {module} import _serve; _serve()"


class WorkerError(RuntimeError):
    """The child process failed (its traceback is the message) or died."""


def ordered_map(fn: Callable[..., Any], jobs: list[tuple], processes: int = 1) -> OrderedMap:
    """``fn(*job)`` for each job, computed in child processes, yielded in order.

    ``fn`` must be importable by name (a module-level function). The children start now, not at
    the first ``next``: a caller with other work before it asks for a result (the indexer
    loading its embedding model) overlaps their start-up (~0.3 s of imports each) with it. Job
    ``i`` goes to child ``i % processes``. Each job is sent as its child takes it and its slot
    in ``jobs`` is then cleared, so large inputs are freed as the work goes on. A child waits
    when the caller falls behind: the pipes are the only buffers. Closing the iterator early
    (an error or Ctrl-C in the caller) kills the children.

    Raises
    ------
    WorkerError
        From ``next``, when ``fn`` raised in a child, or a child died.
    """
    return OrderedMap(fn, jobs, processes)


class OrderedMap(Iterator[Any]):
    """The iterator :func:`ordered_map` returns; :meth:`close` stops its children."""

    def __init__(self, fn: Callable[..., Any], jobs: list[tuple], processes: int) -> None:
        code = _CHILD.format(module=__name__)
        self._count = len(jobs)
        self._next = 0
        self._procs: list[subprocess.Popen] = []
        self._writers: list[threading.Thread] = []
        self._closed = False
        processes = max(1, min(processes, len(jobs)))
        try:
            for k in range(processes if jobs else 0):
                proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                self._procs.append(proc)
                writer = threading.Thread(
                    target=_send, args=(proc.stdin, fn, jobs, k, processes), name="ranklens-worker-feed", daemon=True
                )
                writer.start()
                self._writers.append(writer)
        except BaseException:
            self._finish(kill=True)
            raise

    def __next__(self) -> Any:
        if self._closed or self._next >= self._count:
            self._finish(kill=False)
            raise StopIteration
        proc = self._procs[self._next % len(self._procs)]
        try:
            try:
                ok, value = pickle.load(proc.stdout)
            except EOFError:
                raise WorkerError(f"a worker process exited with status {proc.wait()}") from None
            if not ok:
                raise WorkerError(f"in a worker process: {value}")
        except BaseException:
            self._finish(kill=True)
            raise
        self._next += 1
        if self._next >= self._count:
            self._finish(kill=False)
        return value

    def close(self) -> None:
        """Stop: the children still at work are killed."""
        self._finish(kill=self._next < self._count)

    def _finish(self, *, kill: bool) -> None:
        if self._closed:
            return
        self._closed = True
        for proc in self._procs:
            if kill:
                proc.kill()
            proc.stdout.close()
            proc.wait()
        for writer in self._writers:
            writer.join()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self.close()


def _send(stream, fn: Callable[..., Any], jobs: list[tuple], first: int, step: int) -> None:
    try:
        with stream:
            for i in range(first, len(jobs), step):
                pickle.dump((fn, jobs[i]), stream, protocol=pickle.HIGHEST_PROTOCOL)
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
        try:
            pickle.dump(result, out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()
        except BrokenPipeError:  # the parent stopped reading (it exited, or closed the map)
            break
