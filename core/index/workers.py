"""An ordered map over a child interpreter, for the indexer's chunking of a large update.

Why not :mod:`multiprocessing`: its ``spawn`` and ``forkserver`` start methods run the parent's
main script again in the child (a script without an ``if __name__ == "__main__":`` guard that
builds an index would fail, after running its top level a second time), and ``fork`` is unsafe
in a threaded process (the terminal UI indexes from a thread, and the indexer's embedder thread
is already running). A plain ``python -c`` child that imports only this module, fed pickles
through its stdin and answering through its stdout, has neither problem.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import signal
import struct
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import Any

_CHILD = "from {module} import _serve; _serve()"
#: Results a child may have done and not yet taken (read off its pipe by a thread here, ~1 MB
#: each for the indexer): one slow job then holds up only its own child, and the children go
#: on while the indexer commits a generation (~1.3 s for the kernel's). With the pipe alone as
#: buffer (64 KB), a child whose result was next-but-one waited for the other's, and the
#: children ran ~70 % of the time.
READ_AHEAD = 8
_HEADER = struct.Struct("<Q")  # a result's pickled length, before it on the pipe
_EOF = object()


class WorkerError(RuntimeError):
    """The child process failed (its traceback is the message) or died."""


def ordered_map(fn: Callable[..., Any], jobs: list[tuple], processes: int = 1) -> OrderedMap:
    """``fn(*job)`` for each job, computed in child processes, yielded in order.

    ``fn`` must be importable by name (a module-level function). The children start now, not at
    the first ``next``: a caller with other work before it asks for a result (the indexer
    loading its embedding model) overlaps their start-up (~0.3 s of imports each) with it. Job
    ``i`` goes to child ``i % processes``. Each job is sent as its child takes it and its slot
    in ``jobs`` is then cleared, so large inputs are freed as the work goes on. A child waits
    when the caller falls behind by :data:`READ_AHEAD` results of its own. Closing the
    iterator early (an error or Ctrl-C in the caller) kills the children.

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
        self._readers: list[threading.Thread] = []
        self._results: list[queue.Queue] = []
        self._closed = False
        processes = max(1, min(processes, len(jobs)))
        try:
            for k in range(processes if jobs else 0):
                # -P: the working folder is not put on the child's path, so a folder holding
                # another ranklens (a checkout) cannot lend the child its modules.
                argv = [sys.executable, "-P", "-c", code]
                proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                self._procs.append(proc)
                writer = threading.Thread(
                    target=_send, args=(proc.stdin, fn, jobs, k, processes), name="ranklens-worker-feed", daemon=True
                )
                writer.start()
                self._writers.append(writer)
                results: queue.Queue = queue.Queue(READ_AHEAD)
                reader = threading.Thread(
                    target=_receive, args=(proc.stdout, results), name="ranklens-worker-read", daemon=True
                )
                reader.start()
                self._results.append(results)
                self._readers.append(reader)
        except BaseException:
            self._finish(kill=True)
            raise

    def __next__(self) -> Any:
        if self._closed or self._next >= self._count:
            self._finish(kill=False)
            raise StopIteration
        k = self._next % len(self._procs)
        try:
            data = self._results[k].get()
            if data is _EOF:
                raise WorkerError(f"a worker process exited with status {self._procs[k].wait()}")
            ok, value = pickle.loads(data)
            del data
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
        for results, reader in zip(self._results, self._readers):
            while reader.is_alive():  # a reader blocked on a full queue: make room until it ends
                with contextlib.suppress(queue.Empty):
                    results.get(timeout=0.05)
            reader.join()
        for proc in self._procs:
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


def _receive(stream, results: queue.Queue) -> None:
    """A child's results, each as its pickled bytes (read with the GIL let go; unpickled by the
    caller), then :data:`_EOF`."""
    try:
        while True:
            header = stream.read(_HEADER.size)
            if len(header) < _HEADER.size:
                break
            (size,) = _HEADER.unpack(header)
            data = stream.read(size)
            if len(data) < size:
                break
            results.put(data)
    except (OSError, ValueError):
        pass  # the pipe was closed under us: the child was killed
    results.put(_EOF)


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
        data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        del result
        try:
            out.write(_HEADER.pack(len(data)))
            out.write(data)
            out.flush()
        except BrokenPipeError:  # the parent stopped reading (it exited, or closed the map)
            break
