"""The threads the app's thread workers run in: daemons that never hold up quitting.

Textual runs a thread worker through the event loop's default executor. asyncio's stock one
(a ``ThreadPoolExecutor``) is joined twice on the way out: ``asyncio.run`` waits for its
threads when the loop closes, and the interpreter joins every pool thread at exit. An arm
still searching, the indexer between two progress reports or the deep arm's batch in flight
then kept ``q`` waiting for seconds. Here each job gets a daemon thread of its own and
shutting the executor down does not wait, so the app exits at once; the work in flight is
dropped where it stands, which the index is built for (every write is atomic: a pass killed
at any point keeps what it committed, and the next one resumes). Tests that need the threads
gone call :func:`join_all`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

#: The name every such thread has (tests and ``join_all`` find them by it).
THREAD_NAME = "ranklens-ui-worker"

_live: set[threading.Thread] = set()
_lock = threading.Lock()


class DaemonExecutor(ThreadPoolExecutor):
    """A thread per job, each a daemon; :meth:`shutdown` never waits for them.

    A ``ThreadPoolExecutor`` only by type (asyncio's ``set_default_executor`` wants one): none
    of the pool's threads is ever started, so the interpreter has none to join at exit.
    """

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix=THREAD_NAME)
        self._shutdown = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        if self._shutdown:
            raise RuntimeError("cannot schedule new futures after shutdown")
        future: Future = Future()

        def run() -> None:
            try:
                if not future.set_running_or_notify_cancel():
                    return
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:  # the worker reports it, as with the stock pool
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            finally:
                with _lock:
                    _live.discard(thread)

        thread = threading.Thread(target=run, name=THREAD_NAME, daemon=True)
        with _lock:
            _live.add(thread)
        thread.start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        # Never waits: quitting must not wait for a search or an indexing pass in flight.
        self._shutdown = True


def live() -> list[threading.Thread]:
    """The worker threads still running (any app's)."""
    with _lock:
        return [t for t in _live if t.is_alive()]


def join_all(timeout: float) -> bool:
    """Wait up to ``timeout`` seconds in all for every worker thread to end; whether they did."""
    import time

    deadline = time.monotonic() + timeout
    for thread in live():
        thread.join(max(0.0, deadline - time.monotonic()))
    return not live()


def exit_now(code: int = 0) -> None:
    """End the process as soon as the app has quit (its terminal restored), without the
    interpreter's finalization.

    Finalizing would join the engine's thread pool, run a worker thread still in flight on
    until it next needs the interpreter, and tear down every object the index holds: 0.2 s
    after an idle session, over a second after ctrl+q during a first build (tmux, 1,000
    files). What a worker was writing is left as a killed pass leaves it (see above); the
    app's own files are written and closed as they go (judgments, exports, the index).
    """
    import contextlib
    import os
    import sys

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed or broken stream: nothing to say on it
            stream.flush()
    os._exit(code)
