"""The ranklens terminal UI: type a query, watch every arm answer, read the fused ranking.

The app is a view of a :class:`core.session.Session`, which holds the query, the arms'
results, the fusion settings, the judgments and the worker bodies; the app runs those bodies
in its workers and wires what they return to widgets.

Data flow. Every arm runs in its own thread worker (its own group, so a new query for one
arm does not cancel the others) and posts :class:`~tui.messages.ArmFinished` tagged with
the query id; results of an older query are dropped. Each landing arm re-consolidates the
cached rankings (``engine.fuse``) and redraws the table, so ``agree`` grows live. The
tuning sliders and the ranking stage toggle (``p``) re-fuse the same cached rankings; no arm runs
again. ``+`` / ``-`` judge the hit under the cursor relevant / not relevant for the query
(:mod:`core.judgments` keeps the marks per root); the status line then shows the query's
MRR@10 and nDCG@10 against them, recomputed after every re-fuse. Only handlers on the UI
thread touch widgets.

The class here is the wiring: layout, keys, the query, fusion, judgments and preview handlers.
Two mixins hold the rest: :class:`~tui.indexing.IndexOrchestration` (the index and the deep
arm's vectors, built in workers of their own) and :class:`~tui.handoff.HandoffActions` (the
export modal and the editor hand-off); :class:`~tui.notes.StatusNotes` is the status note.
"""

from __future__ import annotations

import asyncio
import time
from functools import partial
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.timer import Timer
from textual.widgets import Footer, Input
from textual.worker import Worker, WorkerState

from ranklens.core.base.types import ConsolidatedHit
from ranklens.core.engine import ArmResult, Engine, QueryError
from ranklens.core.judgments import QueryJudgments
from ranklens.core.query.settings import FusedBy, FusionSettings
from ranklens.core.session import Session
from ranklens.tui.handoff import HandoffActions
from ranklens.tui.indexing import IndexOrchestration
from ranklens.tui.messages import ArmFinished, while_open
from ranklens.tui.notes import STAGE, StatusNotes, one_line
from ranklens.tui.screens.help import HelpScreen
from ranklens.tui.threads import DaemonExecutor
from ranklens.tui.walk import WalkActions
from ranklens.tui.widgets.arm_status import ArmStatus
from ranklens.tui.widgets.breadcrumbs import Breadcrumbs
from ranklens.tui.widgets.neighbourhood import NeighbourhoodList
from ranklens.tui.widgets.preview import Preview, describe_runner_up
from ranklens.tui.widgets.results_table import ResultsTable, rank_shifts, via_legend
from ranklens.tui.widgets.tuning import TuningPanel

#: Rows in the table (each arm ranks ``core.engine.CANDIDATE_DEPTH`` candidates, as everywhere).
ROW_LIMIT = 50
#: Pause after the last keystroke before the query runs.
DEBOUNCE_SECONDS = 0.15
#: Pause before the preview highlights a newly selected span (see _update_preview).
PREVIEW_DELAY = 0.04
#: What the help screen lists under "Keys" (the footer shows the same, contextually).
HELP_KEYS: list[tuple[str, str]] = [
    ("type", "search as you type (runs 150 ms after the last key)"),
    ("enter (in the query)", "search now and move to the results"),
    ("↓ / esc (in the query)", "move to the results"),
    ("↑ ↓ pgup pgdn home end", "move in the results; the preview follows"),
    ("space", "select / unselect the hit (● in the table)"),
    ("a", "show / hide the hit's runners-up: the next parts of its file the chunk step ranked (↳ rows)"),
    ("c", "clear the selection"),
    ("+ / -", "judge the hit relevant (✓) / not relevant (✗) for the query; again clears it"),
    ("p", f"{STAGE} on / off (code-aware signals, priors and diversity; off: the plain fused list)"),
    ("enter / o", "open the hit in $EDITOR at its first line"),
    ("r", "the hit's neighbourhood: callers, callees and tests (enter goes to one, the preview follows)"),
    ("m", "more like this: units like the hit (its names and code as the question), without it"),
    ("backspace / b", "back one step along the walk (the breadcrumbs above the results)"),
    ("e", "export the selected hits (all shown if none is selected) as JSON, with how each was reached"),
    ("t", "show / hide the tuning panel (weights per arm, RRF k)"),
    ("← → (tuning)", "change the focused slider; shift+← → by 10 steps; ↑ ↓ next slider"),
    ("r (tuning)", "reset the weights and k to the root's tuned config, else the shipped defaults"),
    ("/", "back to the query"),
    ("tab / shift+tab", "move between query, results, preview and tuning"),
    ("?  or f1", "this help"),
    ("q / ctrl+q", "quit (q types a q in the query: press esc first)"),
]


class RanklensApp(IndexOrchestration, HandoffActions, WalkActions, FusedBy, App[None]):
    """Query a repository with several retrievers at once and explore the fused ranking.

    Parameters
    ----------
    engine:
        The engine of the root to explore (its index is opened or built on mount).
    query:
        A query to run as soon as the index is ready.
    """

    # Absolute, so a subclass defined elsewhere (tests, benchmarks) finds it too.
    CSS_PATH = Path(__file__).parent / "app.tcss"
    TITLE = "ranklens"
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (110, "-wide")]

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", priority=True),
        Binding("q", "quit", "Quit", show=False),
        Binding("question_mark", "help", "Help"),
        # In the query "?" types a "?": the footer offers f1 there instead.
        Binding("f1", "help_from_query", "Help"),
        Binding("f1", "help", "Help", show=False),
        Binding("t", "toggle_tuning", "Tuning"),
        Binding("e", "export", "Export"),
        Binding("plus", "judge(True)", "Relevant"),
        Binding("minus", "judge(False)", "Not relevant"),
        Binding("p", "toggle_stage", STAGE.capitalize()),
        Binding("r", "related", "Related"),
        Binding("m", "more_like", "Like this"),
        Binding("backspace", "walk_back", "Back"),
        Binding("b", "walk_back", "Back", show=False),
        Binding("slash", "focus_query", "Query"),
        Binding("c", "clear_selection", "Clear selection", show=False),
        Binding("escape", "leave_query", "Results"),
        Binding("escape", "close_tuning", "Close tuning", show=False),
        Binding("down", "leave_query", "Results", show=False),
    ]

    #: Show arm timings in the status line (snapshot tests turn it off: timings vary).
    show_timings: bool = True

    def __init__(
        self, engine: Engine | None = None, *, query: str = "", session: Session | None = None, watch: bool = False
    ) -> None:
        super().__init__()
        if session is None:
            if engine is None:
                raise TypeError("RanklensApp needs an engine or a session")
            session = Session(engine)
        #: Everything but the widgets: the query and its results, the fusion settings (the
        #: root's tuned config over the shipped defaults; `r` in the tuning panel comes back
        #: to these), the judgments, the worker bodies.
        self.session = session
        self.initial_query = query
        #: Watch the tree with inotify and re-index what is saved meanwhile (the command line's
        #: default; tests leave it off so a refresh never lands mid-snapshot).
        self.watch_tree = watch
        #: Set by quit: the terminal is given back at once (tui.driver).
        self.quitting = False
        # Figures for the status line and the benchmark.
        self.last_query_ms: float | None = None
        self.last_refuse_ms: float | None = None
        self._query_started = 0.0
        self._shown_query_id = -1
        self._pending: str | None = None  # a query waiting for the index
        self._again_query_id: int | None = None  # a query asked again (see _start_query)
        self._debounce: Timer | None = None
        self._arm_workers: dict[Worker, tuple[str, int]] = {}
        self.notes = StatusNotes()
        self._preview_key: tuple[str, int] | None = None  # (docid, fuse version) shown
        self._preview_code: tuple[str, str] | None = None  # (docid, query) highlighted
        self._preview_timer: Timer | None = None
        self._fuse_version = 0
        self._judgments_error: str | None = None  # the last load error notified

    # -- the session's state, read by the handlers and the tests ----------------------------

    @property
    def engine(self) -> Engine:
        return self.session.engine

    @property
    def arms(self) -> list[str]:
        return self.session.arms

    @property
    def query_id(self) -> int:
        return self.session.query_id

    @property
    def query_text(self) -> str:
        return self.session.query_text

    @property
    def results(self) -> dict[str, ArmResult]:
        return self.session.results

    @property
    def hits(self) -> list[ConsolidatedHit]:
        return self.session.hits

    @property
    def settings(self) -> FusionSettings:
        """The fusion settings in force (``weights``, ``k`` and ``priors`` read them)."""
        return self.session.settings

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Input(
            self.initial_query,
            placeholder="Search the code…  (enter: search now · ↓ results · f1 help · ctrl+q quit)",
            id="query",
        )
        yield Breadcrumbs(id="trail")
        with Horizontal(id="main"):
            yield ResultsTable(id="results")
            yield NeighbourhoodList(id="walk")
            yield Preview(id="preview")
        yield TuningPanel(self.arms, weights=self.weights, k=self.k, id="tuning")
        yield ArmStatus(self.arms, id="arm-status")
        yield Footer()

    @property
    def table(self) -> ResultsTable:
        return self.query_one("#results", ResultsTable)

    @property
    def preview(self) -> Preview:
        return self.query_one("#preview", Preview)

    @property
    def status(self) -> ArmStatus:
        return self.query_one("#arm-status", ArmStatus)

    @property
    def query_input(self) -> Input:
        return self.query_one("#query", Input)

    @property
    def tuning(self) -> TuningPanel:
        return self.query_one("#tuning", TuningPanel)

    def on_mount(self) -> None:
        # Thread workers run in daemon threads that quitting does not wait for (tui.threads).
        asyncio.get_running_loop().set_default_executor(DaemonExecutor())
        table = self.table
        table.border_title = "results"
        table.border_subtitle = via_legend(self.arms)
        self.preview.border_title = "preview"
        self.preview.clear("Type a query: every arm searches as you type, and their rankings are fused.")
        self.query_input.focus()
        if self.session.config_error:
            self.notify(f"{self.session.config_error}; using the default weights", severity="warning")
        self._start_index()
        if self.watch_tree:
            self._start_watching()
        if self.initial_query:
            self.search(self.initial_query)

    # -- querying ---------------------------------------------------------------------------

    @on(Input.Changed, "#query")
    def _query_changed(self, event: Input.Changed) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        self._debounce = self.set_timer(DEBOUNCE_SECONDS, partial(self.search, event.value))

    @on(Input.Submitted, "#query")
    def _query_submitted(self, event: Input.Submitted) -> None:
        # A query that cannot run keeps the focus, so it can be fixed.
        if self.search(event.value):
            self.table.focus()

    def search(self, text: str, *, force: bool = False) -> bool:
        """Run ``text`` on every arm (unless it is the query already shown and not ``force``).

        Returns whether ``text`` is a valid query (running, shown, or waiting for the index).
        """
        if self._debounce is not None:
            self._debounce.stop()
            self._debounce = None
        try:
            checked = self.session.check(text)
        except QueryError as error:
            self._abandon_query()
            blank = not text.strip()
            self._set_query_note("" if blank else str(error))
            self.preview.clear("Type a query to search." if blank else f"Cannot search: {error}.")
            return False
        if checked != self.query_text:
            self.walk_new_question(checked)
        if checked == self.query_text and not force and self._pending is None:
            return True
        if not self.engine.ready:
            self._pending = checked
            self.status.reset(self.arms)
            self._set_query_note("the query runs when the index is ready")
            if self.session.index_gone():
                self._rebuild_gone_index()
            return True
        self._pending = None
        self._start_query(checked, again=force and checked == self.query_text)
        return True

    def _start_query(self, text: str, *, again: bool = False) -> None:
        """Run ``text`` on every arm. ``again``: the query shown, asked again on a newer index
        (a step of a first build landed, files changed): its rows stay until every arm has
        answered, and the cursor then stays on its hit where it still is."""
        qid = self.session.start(text)
        self._again_query_id = qid if again else None
        self._query_generation = self._current_generation()
        self.last_query_ms = None
        self._preview_code = None  # re-read the file: it may have changed since
        self._query_started = time.perf_counter()
        partial = self.session.partial()
        self._set_query_note(f"partial: {partial.describe()}" if partial is not None else "")
        status = self.status
        status.reset(self.arms)
        for arm in self.arms:
            self._start_arm(arm, qid, text)

    def _start_arm(self, arm: str, qid: int, text: str) -> None:
        self.status.set_running(arm)
        worker = self.run_worker(
            partial(self._run_arm, arm, qid, text),
            name=f"{arm} #{qid}",
            group=f"arm-{arm}",
            exclusive=True,
            thread=True,
            exit_on_error=False,
        )
        self._arm_workers[worker] = (arm, qid)

    def _run_arm(self, arm: str, qid: int, text: str) -> None:
        """Worker body (in a thread): one arm, one query, one message."""
        result = self.session.run_arm(arm, qid, text)
        if result is not None:  # None: superseded while waiting for a thread
            self.post_message(ArmFinished(qid, result))

    def _abandon_query(self) -> None:
        """Forget the current query (its late results will be dropped)."""
        self.session.abandon()
        self.walk_new_question("")
        self._pending = None
        self._shown_query_id = -1
        self.table.clear_hits()
        self.status.reset(self.arms)
        self._update_titles()
        self._update_metrics()

    @on(ArmFinished)
    @while_open
    def _arm_finished(self, message: ArmFinished) -> None:
        self._record(message.query_id, message.result)

    def _record(self, query_id: int, result: ArmResult) -> None:
        if not self.session.accept(query_id, result):
            return  # an older query's, or deep's "not built yet" overtaken by its answer
        status = self.status
        if result.skipped is not None:
            self._show_skipped(result)
        elif result.error is not None:
            status.set_failed(result.arm, result.error)
            if getattr(self.engine, "shared", False):
                self._set_index_note(self.engine.state)
            if self.session.index_gone():
                self._rebuild_gone_index()
        else:
            status.set_done(result.arm, result.elapsed_ms if self.show_timings else None, len(result.hits))
            if getattr(self.engine, "shared", False) and self.notes.index != self.engine.state:
                self._set_index_note(self.engine.state)  # the store answers again
        # The cursor follows the best hit (the top row) until the user moves it down; from
        # then on it keeps their hit, also when a step of a first build lands.
        follow = not self.table.user_moved or self.table.cursor_row == 0
        if self._again_query_id == query_id:
            # The same question on a newer index: its rows change once, when it is whole.
            if self.query_complete:
                self.refuse(cursor="top" if follow else "keep")
        else:
            first = self._shown_query_id != self.query_id
            self.refuse(cursor="top" if first or follow else "keep")
        if self.query_complete:
            # From the query starting to the table holding every arm's answer.
            self.last_query_ms = (time.perf_counter() - self._query_started) * 1000

    @property
    def query_complete(self) -> bool:
        """Every arm has answered (or was skipped / failed) for the current query."""
        return self.session.complete

    @property
    def preview_pending(self) -> bool:
        """The preview is about to highlight the span under the cursor."""
        return self._preview_timer is not None

    def answered(self) -> list[str]:
        """The arms that answered the current query so far, in arm order."""
        return self.session.answered()

    # -- fusion ---------------------------------------------------------------------------

    def refuse(self, *, cursor: str = "keep", shifts: bool = False) -> None:
        """Re-fuse the cached rankings with the weights and k in force and redraw.

        ``shifts`` marks how far each row moved (after a tuning change; an arm landing
        moves most rows and the marks would be noise).
        """
        t0 = time.perf_counter()
        same_query = self._shown_query_id == self.query_id
        old = self.hits
        try:
            hits = self.session.refuse()
        except ValueError as error:
            # Two arms answered from different index generations (a refresh landed
            # mid-query): their spans disagree. Run the query again on the new index.
            self._set_query_note(f"re-running: {error}")
            self._start_query(self.query_text)
            return
        shown = hits[:ROW_LIMIT]
        moved = rank_shifts(old, shown) if shifts and same_query else None
        table = self.table
        judgments = self.current_judgments()
        table.set_verdicts(None if judgments is None else judgments.verdict, redraw=False)
        table.set_hits(shown, answered=len(self.answered()), arms=self.arms, shifts=moved, cursor=cursor)
        self._shown_query_id = self.query_id
        self._fuse_version += 1
        self._update_metrics()
        self._update_titles()
        self._update_preview()
        self.last_refuse_ms = (time.perf_counter() - t0) * 1000

    @on(TuningPanel.Changed)
    def _tuning_changed(self, event: TuningPanel.Changed) -> None:
        self.session.tune(dict(event.weights), float(event.k))
        if self.results:
            self.refuse(cursor="keep", shifts=True)

    # -- judgments ------------------------------------------------------------------------

    def current_judgments(self) -> QueryJudgments | None:
        """The judgments of the current query (read once per query; None when it has none).

        A file that cannot be read is reported once (a notification) and treated as empty.
        """
        judgments = self.session.judgments()
        error = self.session.judgments_error
        if error is not None and error != self._judgments_error:
            self.notify(f"Cannot read the judgments: {error}", title="Judgments", severity="error")
        self._judgments_error = error
        return judgments

    def _update_metrics(self) -> None:
        """The status line's MRR@10 / nDCG@10 of the fused list against the query's judgments."""
        self.current_judgments()  # reports an unreadable file once
        note = self.session.metrics_note()
        if note != self.notes.metrics:
            self.notes.metrics = note
            self._redraw_note()

    def action_judge(self, relevant: bool) -> None:
        """Mark the hit under the cursor relevant (``+``) or not (``-``); the same key again clears it."""
        hit = self.table.current_hit
        if hit is None or not self.query_text:
            self.notify("Nothing to judge yet: run a query first.", severity="warning")
            return
        judged = self.session.judge(hit, relevant)
        if judged.error is not None:
            self.notify(f"Cannot save the judgment: {judged.error}", title="Judgments", severity="error")
        self._refresh_verdicts()

    def _refresh_verdicts(self) -> None:
        judgments = self.current_judgments()
        self.table.set_verdicts(None if judgments is None else judgments.verdict)
        self._update_metrics()

    def action_toggle_stage(self) -> None:
        """The ranking stage on / off: re-fuse the cached rankings (no arm runs again)."""
        self.session.toggle_priors()
        self._redraw_note()
        if self.results:
            self.refuse(cursor="keep", shifts=True)

    # -- preview --------------------------------------------------------------------------

    @on(ResultsTable.CursorMoved)
    def _cursor_moved(self, _event: ResultsTable.CursorMoved) -> None:
        self._update_preview()

    @on(ResultsTable.RunnersUpRefused)
    def _runners_up_refused(self, event: ResultsTable.RunnersUpRefused) -> None:
        self.notify(event.reason.capitalize() + ".", title="Runners-up")

    def _runner_up_trace(self):
        """The preview's trace for the runner-up under the cursor (None: a hit is)."""
        found = self.table.current_runner_up
        if found is None:
            return None
        parent, place = found
        return describe_runner_up(parent, self.table.current_hit, place)

    def _update_preview(self) -> None:
        """Show the hit under the cursor: its trace now, its code a moment later.

        Highlighting a new span is the costliest thing the UI does (tens of ms). Putting it
        off by :data:`PREVIEW_DELAY` means a held arrow key or arms landing one after the
        other highlight once, for where things settle, and the arms' threads are not
        starved of the interpreter while they run.
        """
        if self._preview_timer is not None:
            self._preview_timer.stop()
            self._preview_timer = None
        if self.walking:
            return  # the preview shows the walk's place (tui.walk)
        hit = self.table.current_hit
        if hit is None:
            self._preview_key = None
            self._preview_code = None
            if not self.query_text:
                return
            if len(self.results) < len(self.arms):
                message = "Searching…"
            elif self.answered() and not any(self.weights.get(a, 1.0) > 0 for a in self.answered()):
                message = "No results: every arm that answered is weighted 0 (press t to tune)."
            else:
                message = f"No results for {self.query_text!r}."
            self.preview.clear(message)
            return
        key = (hit.docid, self._fuse_version)
        if key == self._preview_key:
            return
        if self._preview_code == (hit.docid, self.query_text):
            # Only the fusion changed: leave the highlighted code alone.
            self._preview_key = key
            note = self._runner_up_trace()
            if note is not None:
                self.preview.show_note(hit, note)
            else:
                self.preview.show_trace(hit, self.answered())
            return
        self._preview_timer = self.set_timer(PREVIEW_DELAY, self._show_code)

    def _show_code(self) -> None:
        """Highlight the span under the cursor (see :meth:`_update_preview`)."""
        self._preview_timer = None
        try:
            hit = self.table.current_hit
        except NoMatches:
            if not (self._exit or self._closing):
                raise
            return  # the app is closing
        if hit is None:
            return
        self._preview_key = (hit.docid, self._fuse_version)
        text = self.read_file(hit.path, hit.repo)
        if text is None:
            self._preview_code = None
            where = f"{hit.repo}:{hit.path}" if hit.repo else hit.path
            self.preview.clear(
                f"Cannot read {where}" + (" (its repository is not on this machine)." if hit.repo else ".")
            )
            return
        self._preview_code = (hit.docid, self.query_text)
        self.preview.show(
            path=hit.path,
            text=text,
            first_line=1,
            span=(hit.start_line, hit.end_line),
            query=self.query_text,
            hit=hit,
            arms=self.answered(),
            trace=self._runner_up_trace(),
        )

    def read_file(self, path: str, repo: str = "") -> str | None:
        """A file of the root (or of a shared store's ``repo``) as the preview shows it (see
        :meth:`core.session.Session.read_file`)."""
        return self.session.read_file(path, repo)

    # -- workers ----------------------------------------------------------------------------

    @while_open
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # Every worker's failure is handled here: the index and deep workers' by their mixin.
        if self._index_worker_changed(event):
            return
        worker = event.worker
        finished = event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED)
        meta = self._arm_workers.get(worker)
        if meta is None:
            return
        if finished:
            del self._arm_workers[worker]
        arm, qid = meta
        if event.state == WorkerState.ERROR and qid == self.query_id and arm not in self.results:
            self._record(qid, ArmResult(arm, error=one_line(worker.error)))

    # -- status ---------------------------------------------------------------------------

    def _set_index_note(self, text: str) -> None:
        self.notes.index = text
        self._redraw_note()

    def _set_query_note(self, text: str) -> None:
        self.notes.query = text
        self._redraw_note()

    def _redraw_note(self) -> None:
        self.status.set_note(self.notes.line(priors=self.priors))

    def _update_titles(self) -> None:
        table = self.table
        shown, total = len(table.hits), len(self.hits)
        label = self.walk_results_label()
        if not self.query_text:
            title = "results"
        elif total > shown:
            title = f"{label} · top {shown} of {total}"
        else:
            title = f"{label} · {total} {'hit' if total == 1 else 'hits'}"
        selected = len(table.selected_hits)
        if selected:
            title += f" · {selected} selected"
        table.border_title = title

    @on(ResultsTable.SelectionChanged)
    def _selection_changed(self, _event: ResultsTable.SelectionChanged) -> None:
        self._update_titles()

    # -- actions ----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        focused = self.focused
        in_query = focused is self.query_input
        if action in ("leave_query", "help_from_query"):
            # Only the query input lets "down" through to here; elsewhere it moves/scrolls.
            return in_query
        if action == "focus_query":
            return not in_query
        if action in ("related", "more_like", "walk_back"):
            # In the query "r", "m", "b" and backspace type (or delete) themselves.
            in_tuning = focused is not None and self.tuning in focused.ancestors_with_self
            return not in_query and not in_tuning and self.walk_allowed(action)
        if action in ("judge", "toggle_stage"):
            # In the query "+", "-" and "p" type themselves (the footer does not offer them);
            # a judgment is of a hit, not of a place on the walk (tui.walk).
            return not in_query and not (action == "judge" and self.walking)
        if action == "close_tuning":
            return focused is not None and self.tuning in focused.ancestors_with_self
        return True

    def action_leave_query(self) -> None:
        self.table.focus()

    def action_focus_query(self) -> None:
        self.query_input.focus()

    def action_close_tuning(self) -> None:
        self.action_toggle_tuning()

    def action_help_from_query(self) -> None:
        self.action_help()

    async def action_quit(self) -> None:
        """Quit now: the workers in flight are told to stop and are not waited for (an arm
        mid-search, an indexing pass, the deep build: the index keeps what it committed)."""
        self.quitting = True  # the terminal is given back without waiting for input (tui.driver)
        self.session.stop_workers()
        self.workers.cancel_all()
        self.exit()

    def get_driver_class(self):
        """Textual's driver for this platform; on Linux one that quits without waiting for its
        input thread (:mod:`tui.driver`)."""
        driver = super().get_driver_class()
        from textual.drivers.linux_driver import LinuxDriver

        if driver is LinuxDriver:
            from ranklens.tui.driver import QuitAtOnceDriver

            return QuitAtOnceDriver
        return driver

    def action_help(self) -> None:
        """Open the help. It is built once and kept (installed), so opening it again only
        shows it; it never waits on a worker."""
        if isinstance(self.screen, HelpScreen):
            return
        if not self.is_screen_installed("help"):
            self.install_screen(HelpScreen(HELP_KEYS), name="help")
        self.push_screen("help")

    def action_toggle_tuning(self) -> None:
        show = not self.screen.has_class("-show-tuning")
        self.screen.set_class(show, "-show-tuning")
        if show:
            self.call_after_refresh(self.tuning.focus_first)
        elif self.focused is None or self.tuning in self.focused.ancestors_with_self:
            self.table.focus()

    def action_clear_selection(self) -> None:
        self.table.clear_selection()

    @on(ResultsTable.OpenRequested)
    def _open_requested(self, event: ResultsTable.OpenRequested) -> None:
        self.open_in_editor(event.hit)
