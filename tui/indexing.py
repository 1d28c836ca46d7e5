"""The app's index and deep-vector orchestration: the workers that open, refresh and extend the
index, and what their messages change on screen.

On mount the index is opened (fast) and brought up to date in one thread worker; a refresh
asked for while one runs (the editor handed back, say) runs once after it. A long pass (a first
build, a large change) commits its work in steps: the query runs on each step as it lands
(the status line says "partial: from 1,200 of 4,902 files"), and once more when the pass ends,
the cursor staying on its hit. When the index
commits and ``deep`` is among the arms, the deep arm's vectors are embedded in a worker of
their own (minutes of work, stoppable): until they are ready, ``deep`` shows their progress
in its status cell instead of "skipped", and runs again for the current query once built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.worker import Worker, WorkerState

from ranklens.core.arms.protocol import IndexStats
from ranklens.core.index.indexer import STAGE_WORDS, Progress
from ranklens.tui.messages import (
    DeepDone,
    DeepProgress,
    IndexDone,
    IndexOpened,
    IndexPartial,
    IndexProgress,
    while_open,
)
from ranklens.tui.notes import one_line

if TYPE_CHECKING:
    from ranklens.core.engine import ArmResult


def describe_stats(stats: IndexStats, first_build: bool) -> str:
    """The status-line note after an indexing pass."""
    size = f"{stats.files:,} files · {stats.chunks:,} chunks"
    if first_build or stats.rebuilt:
        return f"indexed {size}"
    if stats.up_to_date:
        return f"index up to date · {size}"
    return f"index refreshed (+{stats.added} ~{stats.changed} -{stats.removed}) · {size}"


class ProgressNote:
    """The status-line note while a pass indexes: one count that only grows, the files indexed
    of the files to index (the chunking stage's), and the stage in words
    (:data:`core.index.indexer.STAGE_WORDS`). Called on the indexing and the embedding threads:
    only the first writes the count."""

    def __init__(self) -> None:
        self.files: tuple[int, int] | None = None  # (indexed, to index) so far this pass
        self.found = 0  # files listed, until chunking counts

    def line(self, progress: Progress) -> str:
        stage, done, total = progress.stage, progress.done, progress.total
        if stage == "chunk" and total > 0:
            self.files = (max(done, self.files[0] if self.files else 0), total)
        elif stage == "read":
            self.found = max(self.found, total)
        words = STAGE_WORDS.get(stage, stage)
        if self.files is not None:
            return f"indexing: {self.files[0]:,} of {self.files[1]:,} files · {words}"
        if self.found > 1:
            return f"indexing: {self.found:,} files found · {words}"
        return f"indexing: {words}…"


#: How often the terminal UI drains the watcher's events (seconds).
WATCH_EVERY_S = 0.5


class IndexOrchestration:
    """Mixin of :class:`~tui.app.RanklensApp`: the index and deep-vector workers.

    It relies on what the app provides: ``session``, ``engine``, ``arms``, ``results``,
    ``query_text``, ``query_id``, the ``status`` and ``preview`` widgets, ``search``,
    ``_start_arm``, ``_pending`` (a query waiting for the index) and ``_set_index_note``.

    Its message handlers are found by name (``on_index_opened`` …): Textual's ``@on``
    registers handlers only in classes its metaclass builds (apps, screens, widgets), not in
    a plain mixin (``tests/tui/test_app.py`` checks that no mixin of the app uses it).
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._index_worker: Worker | None = None
        self._index_again = False  # a refresh was asked for while one ran: run it after
        self._generation: int | None = None  # the generation the last whole pass left
        self._query_generation: int | None = None  # the one the current query ran on
        self._index_refreshed = False
        self._discovery_warning: str | None = None  # the last one notified
        # The deep arm's vectors are built in a worker of their own, after the index commits.
        self._deep_worker: Worker | None = None
        self._deep_again = False
        self._deep_progress: tuple[int, int] | None = None  # (done, total) while building
        self._deep_recheck: int | None = None  # a query whose deep answer was in flight when built

    @property
    def index_ready(self) -> bool:
        """The index is open and the refresh pass started on mount has finished."""
        return self.engine.ready and self._index_refreshed

    @property
    def deep_building(self) -> bool:
        """The deep arm's vectors are being built in the background."""
        return self._deep_worker is not None and not self._deep_worker.is_finished

    # -- the index ------------------------------------------------------------------------

    def _start_index(self) -> None:
        if self._index_worker is not None and not self._index_worker.is_finished:
            self._index_again = True
            return
        self._index_again = False
        self._index_worker = self.run_worker(
            self._index_job, name="index", group="index", thread=True, exit_on_error=False
        )

    def _index_job(self) -> None:
        """Worker body: open what is there (fast), then bring it up to date."""
        self.post_message(IndexOpened(self.session.open_index()))
        # Not the deep arm's vectors: minutes of work, done by _deep_job once this commits.
        note = ProgressNote()
        stats = self.session.update_index(
            lambda p: self.post_message(IndexProgress(p, note.line(p))), lambda p: self.post_message(IndexPartial(p))
        )
        self.post_message(IndexDone(stats))

    @while_open
    def on_index_opened(self, message: IndexOpened) -> None:
        if getattr(self.engine, "shared", False):  # a shared store: its state, never a build here
            self._set_index_note(self.engine.state)
            if message.ok and self._pending is not None:
                self.search(self._pending)
            elif not message.ok and not self.query_text:
                self.preview.clear(f"The index cannot be searched: {self.engine.state}.")
            return
        if message.ok:
            self._generation = self._current_generation()
            self._set_index_note("checking the index for changes…")
            if self._pending is not None:
                self.search(self._pending)
        else:
            self._set_index_note("building the index (first run)…")
            if not self.query_text:
                self.preview.clear(
                    "Building the index of this folder (first run). You can type a query now: it "
                    "runs on the first files as soon as they are indexed, and again as more land."
                )

    @while_open
    def on_index_partial(self, message: IndexPartial) -> None:
        """A step of a long pass landed (and is open): answer from it, or again."""
        if self._pending is not None:
            self.search(self._pending)
        elif self.query_text and self._query_generation != self._current_generation():
            self.search(self.query_text, force=True)
        elif not self.query_text and self._generation is None:
            self.preview.clear(
                f"Building the index of this folder (first run): {message.partial.files:,} of "
                f"{message.partial.total:,} files are searchable so far. Type a query."
            )

    @while_open
    def on_index_progress(self, message: IndexProgress) -> None:
        self._set_index_note(message.note or ProgressNote().line(message.progress))

    @while_open
    def on_index_done(self, message: IndexDone) -> None:
        first_build = self._generation is None
        generation = self._current_generation()
        self._generation = generation
        self._index_refreshed = True
        self._set_index_note(
            self.engine.state if getattr(self.engine, "shared", False) else describe_stats(message.stats, first_build)
        )
        warning = message.stats.warning
        if warning and warning != self._discovery_warning:
            # Said once per distinct warning, not on every refresh.
            self.notify(warning, title="Discovery", severity="warning", timeout=15)
        self._discovery_warning = warning
        if self._pending is not None:
            self.search(self._pending)
        elif self.query_text and self._query_generation != generation:
            # A partial answer, or rows that may point at lines that moved: ask the arms again.
            self.search(self.query_text, force=True)
        elif first_build and not self.query_text:
            if warning and not message.stats.kept:
                self.preview.clear(f"Nothing to search: {warning}.")
            else:
                self.preview.clear("Type a query: every arm searches as you type, and their rankings are fused.")
        if "deep" in self.arms:
            self._start_deep()

    def _rebuild_gone_index(self) -> None:
        """The index folder was deleted while the app ran: say so once, rebuild it, and run the
        query again on the new one (as on a first build)."""
        if self._generation is None:
            return  # already said, and rebuilding
        self._generation = None
        self._pending = self._pending or self.query_text or None
        self.notify("The index folder was deleted: rebuilding it.", title="Index", severity="warning", timeout=10)
        self._set_index_note("the index folder was deleted: rebuilding it…")
        self._start_index()

    def _current_generation(self) -> int | None:
        return self.session.generation()

    # -- the deep arm's vectors -----------------------------------------------------------

    def _start_deep(self) -> None:
        if self.deep_building:
            self._deep_again = True  # it may have checked the generation already: go again after
            return
        self._deep_again = False
        self._deep_worker = self.run_worker(
            self._deep_job, name="deep vectors", group="deep", thread=True, exit_on_error=False
        )

    def _deep_job(self) -> None:
        """Worker body: embed what the committed index lacks for the deep arm (stoppable)."""
        build = self.session.build_deep(lambda done, total: self.post_message(DeepProgress(done, total)))
        self.post_message(DeepDone(build.complete))

    @while_open
    def on_deep_progress(self, message: DeepProgress) -> None:
        self._deep_progress = (message.done, message.total)
        result = self.results.get("deep")
        if result is not None and result.skipped is not None:
            self.status.set_indexing("deep", message.done, message.total)

    @while_open
    def on_deep_done(self, message: DeepDone) -> None:
        self._deep_progress = None
        result = self.results.get("deep")
        if not (message.complete and self.query_text and "deep" in self.arms):
            return
        if result is None:
            self._deep_recheck = self.query_id  # it may have looked before they were ready
        elif not result.ok:
            # Its vectors are ready: only deep runs again, and its ranking joins the table.
            self._start_arm("deep", self.query_id, self.query_text)

    def _show_skipped(self, result: ArmResult) -> None:
        """An arm skipped the query; ``deep`` may only be waiting for its vectors."""
        if result.arm == "deep" and self.deep_building:
            self.status.set_indexing("deep", *(self._deep_progress or (None, None)))
            return
        self.status.set_skipped(result.arm, result.skipped)
        if result.arm == "deep" and self._deep_recheck == self.query_id:
            self._deep_recheck = None
            self._start_arm("deep", self.query_id, self.query_text)

    def on_unmount(self) -> None:
        # Whatever ended the app: an indexing pass stops at its next progress report, a deep
        # build after its batch (the cache keeps it); neither is waited for (tui.threads).
        self.session.stop_workers()

    # -- the watcher ------------------------------------------------------------------------

    def _start_watching(self) -> None:
        """With inotify (Linux), look for changes twice a second: a file saved in an editor
        elsewhere is re-indexed and the query asked again, as after an edit handed off here."""
        if self.session.watch():
            self.set_interval(WATCH_EVERY_S, self._watch_tick)

    def _watch_tick(self) -> None:
        if self._index_worker is not None and not self._index_worker.is_finished:
            return  # the pass running now takes what the watcher saw
        self.run_worker(self._watch_job, name="watch", group="watch", thread=True, exclusive=True, exit_on_error=False)

    def _watch_job(self) -> None:
        if self.session.changed():  # nothing is stat'ed unless an event named it
            self.call_from_thread(self._start_index)

    # -- their workers ----------------------------------------------------------------------

    def _index_worker_changed(self, event: Worker.StateChanged) -> bool:
        """The index or deep worker changed state (a failure is said, a pending pass started);
        False when ``event`` is about another worker."""
        worker = event.worker
        finished = event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED)
        if worker is self._index_worker:
            if event.state == WorkerState.ERROR and getattr(self.engine, "shared", False):
                self._set_index_note(self.engine.state)  # the store down, refusing, missing …
                if not self.engine.ready:
                    self.preview.clear(f"The index cannot be searched: {one_line(worker.error)}")
            elif event.state == WorkerState.ERROR:
                self._set_index_note(f"indexing failed: {one_line(worker.error)}")
                if not self.engine.ready:
                    self.preview.clear(f"Indexing failed: {one_line(worker.error)}")
            if finished and self._index_again:
                self._start_index()
            return True
        if worker is self._deep_worker:
            if event.state == WorkerState.ERROR:
                reason = f"its vectors could not be built: {one_line(worker.error)}"
                self._deep_progress = None
                if "deep" in self.results and not self.results["deep"].ok:
                    self.status.set_skipped("deep", reason)
                self.notify(f"deep arm: {reason}", severity="error")
            if finished and self._deep_again and not self.session.deep_stop.is_set():
                self._start_deep()
            return True
        return False
