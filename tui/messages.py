"""Messages the app's thread workers post back to the UI thread.

Workers never touch a widget: each ends (or reports progress) by posting one of these, and
the app's handlers, which run on the UI thread, update the screen. A worker's message may land
after the app began closing: its handlers are wrapped in :func:`while_open`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from textual.app import App
from textual.css.query import NoMatches
from textual.message import Message

from ranklens.core.arms.protocol import IndexStats
from ranklens.core.engine import ArmResult
from ranklens.core.index.indexer import Progress
from ranklens.core.storage.store import Partial


@dataclass
class ArmFinished(Message):
    """One arm answered (or was skipped, or failed) for query ``query_id``.

    The app drops it when ``query_id`` is not the current query's id.
    """

    query_id: int
    result: ArmResult


@dataclass
class IndexOpened(Message):
    """The existing index was opened (``ok``) or there is none usable yet."""

    ok: bool


@dataclass
class IndexProgress(Message):
    """A step of indexing; a newer one supersedes a pending older one."""

    progress: Progress
    #: The status line's words for it, made on the indexing thread from every step, so a step
    #: collapsed away still counts (:class:`tui.indexing.ProgressNote`).
    note: str = ""

    def can_replace(self, message: Message) -> bool:
        # Only the latest step matters for a one-line status: collapse the backlog.
        return isinstance(message, IndexProgress)


@dataclass
class IndexPartial(Message):
    """A pass still going on committed a generation holding ``partial`` of its files, and the
    engine opened it: queries answer from it (again) meanwhile."""

    partial: Partial


@dataclass
class IndexDone(Message):
    """The index is up to date and open; ``stats`` says what the pass did."""

    stats: IndexStats


@dataclass
class DeepProgress(Message):
    """The deep arm's background build has embedded ``done`` of the ``total`` texts it lacks."""

    done: int
    total: int

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, DeepProgress)


@dataclass
class DeepDone(Message):
    """The deep arm's background build ended: its vectors match the index (``complete``), or
    it was stopped."""

    complete: bool


def while_open(handler: Callable[..., None]) -> Callable[..., None]:
    """Drop a worker's late message once the app is closing (its widgets are gone)."""

    @wraps(handler)
    def guarded(self: App[Any], *args: object) -> None:
        try:
            handler(self, *args)
        except NoMatches:
            if not (self._exit or self._closing):
                raise

    return guarded
