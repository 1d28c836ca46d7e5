"""Cross-process file locks with a budget: every wait in ``core/`` goes through :func:`hold`.

A lock held by another process is waited for at most ``budget`` seconds. Past a short grace
(:data:`NOTE_AFTER_S`) the waiter says once, in one line, what it waits for; when the budget
is spent it raises :class:`LockBusy`, whose one line names the lock, what holds it and how
long it waited. A budget of 0 never waits.

The locks (all in a root's index folder, :func:`core.storage.store.index_dir`):

* ``index.lock``: one indexer writes a root's index at a time (:class:`core.index.indexer.Indexer`),
  and the deep arm's build takes it to commit its sidecar. Budget :func:`index_wait`.
* ``deep.lock``: one process embeds for the deep arm at a time
  (:func:`core.arms.deep.build_vectors`). Never waited for: whoever finds it held answers
  without deep (and says so once).
* ``judgments.jsonl.lock``: one writer of the relevance judgments at a time
  (:func:`core.judgments.record_judgment`). Budget :data:`JUDGMENTS_WAIT_S`.

In-process ``threading`` locks guard short critical sections and are not waited on for
another process's work.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

#: Seconds a waiter stays quiet before saying what it waits for (most waits end sooner).
NOTE_AFTER_S = 0.5
#: How long an indexer waits for another indexer of the same root (a cold build of a large
#: repository takes minutes; past this the other process is likely stuck, or the user would
#: rather know). ``RANKLENS_LOCK_WAIT`` (seconds) overrides it.
INDEX_WAIT_S = 600.0
LOCK_WAIT_ENV = "RANKLENS_LOCK_WAIT"
#: A judgment is one small file write: a writer holds the lock for milliseconds.
JUDGMENTS_WAIT_S = 10.0


class LockBusy(TimeoutError):
    """Another process held a lock past the waiter's budget (one line, shown to the user). A
    :class:`TimeoutError`, so an ``except OSError`` that reports a failed write reports it too."""


def index_wait() -> float:
    """The budget of a wait for another indexer of the same root: :data:`INDEX_WAIT_S`, or
    ``RANKLENS_LOCK_WAIT`` seconds when that is set to a number."""
    value = os.environ.get(LOCK_WAIT_ENV, "").strip()
    if value:
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if seconds >= 0 and seconds == seconds:  # not NaN
            return seconds
    return INDEX_WAIT_S


def _seconds(s: float) -> str:
    return f"{s:g} s" if s < 120 else f"{s / 60:g} min"


@contextmanager
def hold(
    path: Path | str,
    what: str,
    budget: float,
    notify: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Hold the file lock ``path`` for the ``with`` block.

    Parameters
    ----------
    path
        The lock file.
    what
        What holds the lock, for the messages: "another ranklens indexing this root".
    budget
        Most seconds to wait for it (0: take it now or not at all).
    notify
        Told once, after :data:`NOTE_AFTER_S`, what the wait is for.

    Raises
    ------
    LockBusy
        When ``budget`` seconds pass with the lock still held elsewhere.
    """
    from filelock import FileLock, Timeout

    lock = FileLock(str(path))
    t0 = time.monotonic()
    try:
        lock.acquire(timeout=min(budget, NOTE_AFTER_S), poll_interval=0.05)
    except Timeout:
        rest = budget - (time.monotonic() - t0)
        if rest <= 0:
            raise LockBusy(f"{what} holds {Path(path).name}") from None
        if notify is not None:
            notify(f"waiting for {what} ({Path(path).name}), up to {_seconds(budget)}")
        try:
            lock.acquire(timeout=rest, poll_interval=0.1)
        except Timeout:
            raise LockBusy(
                f"waited {_seconds(budget)} for {what} ({Path(path).name}); it still holds it: try again when it finishes"
            ) from None
    try:
        yield
    finally:
        lock.release()


def try_hold(path: Path | str) -> object | None:
    """The lock ``path`` taken now (release it with ``.release()``), or None when another
    process holds it: for a waiter whose budget is 0 and who goes on without it."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return None
    return lock
