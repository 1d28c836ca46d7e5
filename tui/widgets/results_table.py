"""The consolidated results: one row per fused hit, drawn on Textual's Line API.

The table owns how a hit is drawn (rank, rank shift, score, agreement, confidence, the arms
that found it, location, breadcrumb) and which hits are selected. A consolidated hit's docid
is its merged span, which grows as more arms land, so the cursor and the selection follow a
hit by *overlap*: after a redraw they go to the hit of the same file whose span overlaps the
old one most.

Why not a ``DataTable``: to stay under a frame's budget on a re-rank, the table had to
override its private members (the cell renderer, the row bookkeeping); a Textual release
could change them under it. This widget is a ``ScrollView`` with the public Line API only
(``render_line`` returns a :class:`~textual.strip.Strip`), drawn as the ``DataTable`` drew
it: a fixed header, single-line cells padded by one column each side, a row cursor and a
hover row styled by component classes (``results-table--cursor`` …, the ``DataTable``'s
rules), and ``row``/``column`` meta on every cell so a click or a hover finds its row. What
it no longer does, it never did here: sorting, cell cursors, multi-line rows, row labels.

Rendering: each row's line is built once per content, cursor/hover state and style, and
cached; a re-rank rebuilds only the rows whose cells changed (a rank and a score), a cursor
move only the two rows it leaves and enters.

Runners-up: ``a`` expands, under a hit that carries them, its file's runners-up
(``ConsolidatedHit.alternatives``), one row each, and folds them again. A runner-up's row is
the hit's view of it (:func:`runner_up_hit`): the cursor, the preview, ``o`` and the judgments
take it as a span of its own; the selection (what is exported) holds hits only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size, Spacing, clamp
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ranklens.core.base.types import Alternative, AppliedSignal, ConsolidatedHit, make_docid
from ranklens.core.query.labels import AGREEMENT_DEPTH, LOW, voters

#: (path, start_line, end_line) of a hit: what the cursor and the selection remember.
Span = tuple[str, int, int]

#: Rows whose steady cells are kept (a few screens' worth; see _steady_cells).
MAX_STEADY = 500

#: Marks in the selection column.
SELECTED_MARK = "●"

#: Marks in the verdict column: judged relevant / not relevant for the query (``+`` / ``-``).
VERDICT_MARKS: dict[bool, tuple[str, str]] = {True: ("✓", "bold green"), False: ("✗", "bold red")}

#: What the table asks about a hit's judgment: True, False or None (not judged).
VerdictFn = Callable[[ConsolidatedHit], "bool | None"]

#: Style of the confidence cell, and of the whole row for ``low``.
CONFIDENCE_STYLES: dict[str, str] = {"high": "bold green", "medium": "yellow", "low": "dim"}
CONFIDENCE_LABELS: dict[str, str] = {"high": "high", "medium": "med", "low": "low"}

#: Longest location shown; longer ones keep their tail (the file name and the lines).
LOCATION_WIDTH = 38
LOCATION_MIN, LOCATION_MAX, LOCATION_FLOOR = 20, 60, 10
#: Columns kept for the context before the location is narrowed; longer contexts are cut.
CONTEXT_MIN = 12
#: Blank cells on each side of every cell.
CELL_PADDING = 1
#: The header's row index (in the cells' meta, as a ``DataTable`` numbers it).
HEADER = -1


def span_of(hit: ConsolidatedHit) -> Span:
    return (hit.path, hit.start_line, hit.end_line)


#: Marks a runner-up's row (in its location cell).
RUNNER_UP_MARK = "↳ "


def runner_up_hit(parent: ConsolidatedHit, alternative: Alternative) -> ConsolidatedHit:
    """A runner-up of ``parent``'s file as a row of the table: its lines, breadcrumb and the
    arms' ranks of it within the file, the ``chunk`` signal saying why, ``score`` its score
    within the file and ``rank`` its hit's; no arm ranked it over the whole index."""
    start, end = alternative.start_line, alternative.end_line
    return ConsolidatedHit(
        parent.path,
        start,
        end,
        make_docid(parent.path, start, end),
        alternative.context or parent.path,
        alternative.score,
        parent.rank,
        [],
        0,
        LOW,
        signals=[AppliedSignal("chunk", alternative.why)],
        repo=parent.repo,
        within=dict(alternative.within),
    )


class Row(NamedTuple):
    """One row of the table: a hit (``alternative`` -1), or one of its runners-up."""

    hit: int
    alternative: int
    #: What the row shows: the hit, or :func:`runner_up_hit` of the runner-up.
    shown: ConsolidatedHit


def _overlap(a_start: int, a_end: int, b_start: int, b_end: int) -> int:
    return min(a_end, b_end) - max(a_start, b_start) + 1


def successor(span: Span, hits: Sequence[ConsolidatedHit]) -> int | None:
    """Index in ``hits`` of the hit that continues ``span``: same file, most overlap.

    The identical span wins; otherwise the largest overlap, then the better rank. None when
    no hit of that file overlaps it.
    """
    path, start, end = span
    best: tuple[int, int] | None = None  # (overlap, -index)
    found = None
    for index, hit in enumerate(hits):
        if hit.path != path:
            continue
        if hit.start_line == start and hit.end_line == end:
            return index
        overlap = _overlap(start, end, hit.start_line, hit.end_line)
        if overlap > 0 and (best is None or (overlap, -index) > best):
            best = (overlap, -index)
            found = index
    return found


def rank_shifts(old: Sequence[ConsolidatedHit], new: Sequence[ConsolidatedHit]) -> dict[str, int | None]:
    """docid of each hit of ``new`` -> places it moved up (negative: down), None when new.

    A hit of ``new`` is matched with the ``old`` hit of the same docid, else with the old
    hit of the same file that overlaps it most (spans grow as arms land).
    """
    by_docid = {hit.docid: hit.rank for hit in old}
    by_path: dict[str, list[ConsolidatedHit]] = {}
    for hit in old:
        by_path.setdefault(hit.path, []).append(hit)
    out: dict[str, int | None] = {}
    for hit in new:
        rank = by_docid.get(hit.docid)
        if rank is None:
            candidates = by_path.get(hit.path, ())
            index = successor(span_of(hit), candidates) if candidates else None
            rank = None if index is None else candidates[index].rank
        out[hit.docid] = None if rank is None else rank - hit.rank
    return out


def arm_letters(arms: Iterable[str]) -> dict[str, str]:
    """A short distinct tag per arm for the ``via`` column: ``bm25`` -> ``B``, ``fts5`` -> ``F``."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for arm in arms:
        letters = [c for c in arm.upper() if c.isalnum()] or ["?"]
        tag = letters[0]
        for c in letters[1:]:
            if tag not in used:
                break
            tag = letters[0] + c
        out[arm] = tag
        used.add(tag)
    return out


def via_legend(arms: Sequence[str]) -> str:
    """The table's legend of ``via`` (its border subtitle): each arm's tag, and what a capital
    means (a vote, counted in ``agree``; the help says what lowercase means)."""
    letters = arm_letters(arms)
    tags = " ".join(f"{letters[a]}={a}" for a in arms)
    return f"via: {tags} · CAPS: in its top {AGREEMENT_DEPTH} (agree)"


def format_shift(shift: int | None) -> Text:
    """``↑3`` / ``↓1`` / ``new`` / blank for a rank shift."""
    if shift is None:
        return Text("new", style="cyan")
    if shift > 0:
        return Text(f"↑{shift}", style="green")
    if shift < 0:
        return Text(f"↓{-shift}", style="red")
    return Text("")


def format_location(hit: ConsolidatedHit, width: int = LOCATION_WIDTH) -> str:
    where = f"{hit.repo}:{hit.path}" if hit.repo else hit.path  # a shared store's hit names its repository
    text = f"{where}:{hit.start_line}-{hit.end_line}"
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def breadcrumb(hit: ConsolidatedHit) -> str:
    """The context without the leading path (the location column already says it)."""
    prefix = hit.path + " > "
    if hit.context.startswith(prefix):
        return hit.context[len(prefix) :]
    return "" if hit.context == hit.path else hit.context


def _same_cell(a: object, b: object) -> bool:
    """Cell equality including style (``Text.__eq__`` ignores the base style)."""
    if a is b:
        return True
    if isinstance(a, Text) and isinstance(b, Text):
        return a.plain == b.plain and a.style == b.style and a.justify == b.justify and a.spans == b.spans
    return a == b


class _Styles(NamedTuple):
    """The styles of one render pass (they change with focus, hover and the theme)."""

    base: Style
    header: Style
    cursor: Style
    hover: Style
    header_hover: Style


class ResultsTable(ScrollView, can_focus=True):
    """Fused hits, best first; space selects, enter or ``o`` asks to open the hit."""

    ALLOW_SELECT = False

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home,ctrl+home", "cursor_first", "Top", show=False),
        Binding("end,ctrl+end", "cursor_last", "Bottom", show=False),
        Binding("space", "toggle_select", "Select"),
        Binding("o", "open", "Open"),
        Binding("a", "toggle_runners_up", "Runners-up"),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "results-table--header",
        "results-table--cursor",
        "results-table--hover",
        "results-table--header-hover",
    }

    # DataTable's rules for what this table uses, so it looks as the DataTable it replaced.
    DEFAULT_CSS = """
    ResultsTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;

        &:focus {
            background-tint: $foreground 5%;
            & > .results-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .results-table--header {
                background-tint: $foreground 5%;
            }
        }

        & > .results-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .results-table--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .results-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .results-table--header-hover {
            background: $accent 30%;
        }
        & > .results-table--hover {
            background: $block-hover-background;
        }
    }
    """

    COLUMNS: ClassVar[list[tuple[str, str, int]]] = [
        # key, label, width. "rank" carries the selection mark and the relevance judgment
        # (✓ / ✗) before the rank (two digits: ROW_LIMIT is 50); "via" is sized to the arms'
        # tags, "location" and "context" to the table (see _fit_columns).
        ("rank", "   #", 4),
        ("move", "move", 4),
        ("score", "score", 6),
        ("agree", "agree", 5),
        ("conf", "conf", 4),
        ("via", "via", 3),
        ("location", "location", LOCATION_WIDTH),
        ("context", "context", CONTEXT_MIN),
    ]

    @dataclass
    class CursorMoved(Message):
        """The cursor moved to another row (``hit`` is the one under it now)."""

        table: ResultsTable
        hit: ConsolidatedHit

        @property
        def control(self) -> ResultsTable:
            return self.table

    @dataclass
    class OpenRequested(Message):
        """The user asked to open ``hit`` in an editor."""

        table: ResultsTable
        hit: ConsolidatedHit

        @property
        def control(self) -> ResultsTable:
            return self.table

    @dataclass
    class RunnersUpRefused(Message):
        """``a`` found no runners-up to show under the hit: ``reason`` says why."""

        table: ResultsTable
        reason: str

        @property
        def control(self) -> ResultsTable:
            return self.table

    @dataclass
    class SelectionChanged(Message):
        """The set of selected hits changed."""

        table: ResultsTable
        count: int

        @property
        def control(self) -> ResultsTable:
            return self.table

    def __init__(
        self,
        *,
        name: str | None = None,
        id: str | None = None,  # noqa: A002
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.hits: list[ConsolidatedHit] = []
        self.shifts: dict[str, int | None] = {}
        self.answered = 0
        self.arms: list[str] = []
        self._letters: dict[str, str] = {}
        self._selected: list[Span] = []
        #: The hits whose runners-up are shown under them (by span, as the selection).
        self._expanded: list[Span] = []
        #: What each row shows, in order (:class:`Row`).
        self.rows: list[Row] = []
        self._verdict: VerdictFn | None = None
        self._steady: dict[tuple, list[Text]] = {}
        #: Content width of each column, by key (COLUMNS gives the starting ones).
        self.widths: dict[str, int] = {key: width for key, _label, width in self.COLUMNS}
        self._labels = [Text.from_markup(label) for _key, label, _width in self.COLUMNS]
        #: Each row's cells, and a version that changes when they do (the line cache's key).
        self._docids: list[str] = []
        self._cells: list[list[Text]] = []
        self._versions: list[int] = []
        self._next_version = 0
        self._cursor = 0
        #: Whether the user moved the cursor since the rows were last put at the top: a
        #: re-rank then keeps their hit, else the app keeps the cursor on the best one.
        self.user_moved = False
        self._hover = 0
        #: The hover row is shown only while the mouse is what moved last (as DataTable did).
        self._show_hover = False
        self._pass: _Styles | None = None
        self._lines: dict[tuple, Strip] = {}
        self._lines_key: tuple | None = None

    # -- public API -----------------------------------------------------------------------

    @property
    def cursor_row(self) -> int:
        """The index of the row under the cursor (0 when the table is empty)."""
        return self._cursor

    @property
    def row_count(self) -> int:
        return len(self.rows)

    @property
    def location_width(self) -> int:
        return self.widths["location"]

    @property
    def current_hit(self) -> ConsolidatedHit | None:
        """The hit under the cursor, or the runner-up's view of it (:func:`runner_up_hit`);
        None when the table is empty."""
        row = self._cursor
        return self.rows[row].shown if 0 <= row < len(self.rows) else None

    @property
    def current_runner_up(self) -> tuple[ConsolidatedHit, int] | None:
        """(its hit, its place among the hit's runners-up) when the cursor is on a runner-up."""
        row = self._cursor
        if not 0 <= row < len(self.rows) or self.rows[row].alternative < 0:
            return None
        return self.hits[self.rows[row].hit], self.rows[row].alternative

    def expanded(self, hit: ConsolidatedHit) -> bool:
        """Whether ``hit``'s runners-up are shown under it."""
        return span_of(hit) in self._expanded

    @property
    def selected_hits(self) -> list[ConsolidatedHit]:
        """The selected hits, best first."""
        return [hit for hit in self.hits if self._is_selected(hit)]

    def set_hits(
        self,
        hits: Sequence[ConsolidatedHit],
        *,
        answered: int,
        arms: Sequence[str],
        shifts: dict[str, int | None] | None = None,
        cursor: str = "keep",
    ) -> None:
        """Redraw with ``hits`` (best first).

        Parameters
        ----------
        hits:
            The rows to show.
        answered:
            How many arms have answered (the ``m`` of ``agree n/m``).
        arms:
            The arms of the query, in order (the slots of the ``via`` column).
        shifts:
            docid -> places moved (see :func:`rank_shifts`); ``None`` or empty shows none.
        cursor:
            ``"keep"``: stay on the hit overlapping the one under the cursor;
            ``"top"``: go to the first row.
        """
        old_span = None if self.current_hit is None else span_of(self.current_hit)
        old_row = self._cursor
        old_docids = [hit.docid for hit in self.hits]
        self.hits = list(hits)
        self.shifts = dict(shifts or {})
        self.answered = answered
        if list(arms) != self.arms:
            self.arms = list(arms)
            self._letters = arm_letters(self.arms)
            self.widths["via"] = max(len("via"), sum(len(tag) for tag in self._letters.values()))
            self._fit_columns(redraw=False)
        self._selected = self._remap_selection(self._selected)
        self._expanded = self._remap_expanded()
        self.rows = self._make_rows()

        wanted = {hit.docid for hit in self.hits}
        if sum(docid not in wanted for docid in old_docids) > len(old_docids) // 2:
            # Mostly new hits (a new query): start from the top, as a fresh table does.
            self._cursor = self._hover = 0
            self.scroll_to(0, 0, animate=False, immediate=True)
        row = 0
        if cursor == "top":
            self.user_moved = False
        elif old_span is not None:
            found = successor(old_span, [r.shown for r in self.rows])
            row = found if found is not None else min(old_row, max(0, len(self.rows) - 1))
        self._update_rows()
        if self.hits:
            self.move_cursor(row=row, animate=False, scroll=True)

    def clear_hits(self) -> None:
        """Empty the table (the selection is forgotten)."""
        self.hits = []
        self.rows = []
        self.shifts = {}
        self._selected = []
        self._expanded = []
        self._cursor = self._hover = 0
        self.user_moved = False
        self._update_rows()
        self.scroll_to(0, 0, animate=False, immediate=True)

    def move_cursor(self, *, row: int, animate: bool = False, scroll: bool = True) -> None:
        """Put the cursor on ``row`` (clamped to the rows); ``scroll`` brings it into view."""
        row = clamp(row, 0, len(self.rows) - 1) if self.rows else 0
        moved = row != self._cursor
        self._cursor = row
        if moved:
            self.refresh()
            self.post_message(self.CursorMoved(self, self.rows[row].shown))
        if moved or scroll:
            self._scroll_cursor_into_view(animate=animate and scroll)

    def toggle_selected(self, hit: ConsolidatedHit) -> None:
        span = span_of(hit)
        kept = [s for s in self._selected if not self._covers(s, hit)]
        if len(kept) == len(self._selected):
            kept.append(span)
        self._selected = kept
        self._refresh_rank_cells()
        self.post_message(self.SelectionChanged(self, len(self.selected_hits)))

    def clear_selection(self) -> None:
        had = bool(self._selected)
        self._selected = []
        self._refresh_rank_cells()
        if had:
            self.post_message(self.SelectionChanged(self, 0))

    def set_verdicts(self, verdict: VerdictFn | None, *, redraw: bool = True) -> None:
        """Mark each row with ``verdict(hit)`` (✓ relevant, ✗ not relevant, blank: not judged).

        ``redraw=False`` only records it, for a :meth:`set_hits` that follows.
        """
        self._verdict = verdict
        if redraw:
            self._refresh_rank_cells()

    def verdict_of(self, hit: ConsolidatedHit) -> bool | None:
        """The judgment shown for ``hit`` (None when not judged)."""
        return None if self._verdict is None else self._verdict(hit)

    def cell_text(self, row: int, column: str) -> str:
        """The plain text of a cell (for tests and the benchmark)."""
        index = next(i for i, (key, _label, _width) in enumerate(self.COLUMNS) if key == column)
        return self._cells[row][index].plain

    # -- actions --------------------------------------------------------------------------

    def action_toggle_select(self) -> None:
        if self.current_runner_up is not None:
            self.post_message(self.RunnersUpRefused(self, "the selection holds hits: read a runner-up with o"))
            return
        hit = self.current_hit
        if hit is not None:
            self.toggle_selected(hit)

    def action_toggle_runners_up(self) -> None:
        """Show the runners-up of the hit under the cursor under it, or fold them (from the
        hit's row or one of theirs: the cursor goes back to the hit)."""
        if not self.rows:
            return
        current = self.rows[self._cursor]
        hit = self.hits[current.hit]
        span = span_of(hit)
        if span in self._expanded:
            self._expanded.remove(span)
        elif hit.alternatives:
            self._expanded.append(span)
        else:
            first = next((h for h in self.hits if h.path == hit.path and h.alternatives), None)
            reason = (
                f"the runners-up of {hit.path} are under its hit #{first.rank}"
                if first is not None and first is not hit
                else "no runners-up: the chunk step placed no other part of its file"
            )
            self.post_message(self.RunnersUpRefused(self, reason))
            return
        self.rows = self._make_rows()
        self._update_rows()
        row = next(i for i, r in enumerate(self.rows) if r.hit == current.hit and r.alternative < 0)
        self.user_moved = True
        if row != self._cursor:
            self.move_cursor(row=row, scroll=True)
        else:
            self._scroll_cursor_into_view()

    def action_open(self) -> None:
        hit = self.current_hit
        if hit is not None:
            self.post_message(self.OpenRequested(self, hit))

    def action_select_cursor(self) -> None:
        # Enter on a row means "open" here.
        self._set_hover(False)
        self.action_open()

    def action_cursor_up(self) -> None:
        self._set_hover(False)
        self.user_moved = True
        self.move_cursor(row=self._cursor - 1, scroll=False)

    def action_cursor_down(self) -> None:
        self._set_hover(False)
        self.user_moved = True
        self.move_cursor(row=self._cursor + 1, scroll=False)

    def action_cursor_first(self) -> None:
        self._set_hover(False)
        self.user_moved = True
        self.move_cursor(row=0, scroll=False)

    def action_cursor_last(self) -> None:
        self._set_hover(False)
        self.user_moved = True
        self.move_cursor(row=len(self.rows) - 1, scroll=False)

    def action_page_down(self) -> None:
        """A page down: the view scrolls by its height and the cursor moves as far."""
        self._set_hover(False)
        self.user_moved = True
        height = self._page_height()
        self.scroll_relative(y=height, animate=False, force=True)
        self.move_cursor(row=self._cursor + min(height, len(self.rows) - 1 - self._cursor), scroll=False)

    def action_page_up(self) -> None:
        self._set_hover(False)
        self.user_moved = True
        height = self._page_height()
        self.scroll_relative(y=-height, animate=False)
        self.move_cursor(row=self._cursor - min(height, self._cursor), scroll=False)

    # -- mouse ----------------------------------------------------------------------------

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._set_hover(True)
        meta = event.style.meta
        if "row" not in meta:
            self._set_hover(False)
            return
        if meta["row"] != self._hover:
            self._hover = meta["row"]
            self.refresh()

    def on_leave(self, _event: events.Leave) -> None:
        self._set_hover(False)

    def on_click(self, event: events.Click) -> None:
        self._set_hover(True)
        row = event.style.meta.get("row")
        if row is None or row == HEADER or not self.hits:
            return
        event.stop()
        if row == self._cursor:  # a click on the row under the cursor opens it
            self.action_open()
        self.user_moved = True
        self.move_cursor(row=row, animate=True)

    # -- layout ---------------------------------------------------------------------------

    def on_resize(self) -> None:
        self._fit_columns()

    def _fit_columns(self, redraw: bool = True) -> None:
        """Share the width the fixed columns leave between location and context.

        Both get fixed widths so the table never scrolls sideways: the location first
        (it is what the user acts on), the context whatever is left (cut with "…").
        """
        flexible = ("location", "context")
        fixed = sum(self._render_width(key) for key, _label, _width in self.COLUMNS if key not in flexible)
        room = max(0, self.scrollable_content_region.width - fixed - 4 * CELL_PADDING)
        if room - CONTEXT_MIN >= LOCATION_MIN:
            location = min(LOCATION_MAX, room - CONTEXT_MIN)
        else:
            # Tight (narrow terminal, tuning panel open): the location takes all there is.
            # (A context column can not be narrower than one cell.)
            location = max(LOCATION_FLOOR, room - 1)
        context = max(1, room - location)
        if (location, context) == (self.widths["location"], self.widths["context"]):
            self._update_size()
            return
        self.widths["location"], self.widths["context"] = location, context
        if redraw and self.hits:
            self._update_rows()
        self._update_size()
        self.refresh()

    def _render_width(self, key: str) -> int:
        return self.widths[key] + 2 * CELL_PADDING

    @property
    def _table_width(self) -> int:
        return sum(self._render_width(key) for key, _label, _width in self.COLUMNS)

    def _update_size(self) -> None:
        self.virtual_size = Size(self._table_width, 1 + len(self.rows))

    def _page_height(self) -> int:
        return self.scrollable_content_region.height - 1  # the header stays

    def _scroll_cursor_into_view(self, animate: bool = False) -> None:
        if not self.rows:
            return
        region = Region(int(self.scroll_x), 1 + self._cursor, max(self.size.width, self._table_width), 1)
        self.scroll_to_region(region, animate=animate, spacing=Spacing(1, 0, 0, 0), force=True)

    # -- rows -----------------------------------------------------------------------------

    def _update_rows(self) -> None:
        """Make the rows show ``self.hits``, in order, keeping the cells that did not change.

        A row keeps its version (and so its cached line) when its cells are the same
        objects or equal ones; a re-rank changes a few cells of most rows and leaves the
        table's size, and so the screen's layout, untouched.
        """
        previous = {docid: (cells, version) for docid, cells, version in zip(self._docids, self._cells, self._versions)}
        rows, versions = [], []
        for row in self.rows:
            hit = row.shown
            cells = self._build_cells(hit) if row.alternative < 0 else self._runner_up_cells(hit)
            found = previous.get(hit.docid)
            if found is not None and all(_same_cell(a, b) for a, b in zip(found[0], cells)):
                rows.append(found[0])
                versions.append(found[1])
                continue
            rows.append(cells)
            versions.append(self._new_version())
        self._cells, self._versions = rows, versions
        self._docids = [row.shown.docid for row in self.rows]
        self._update_size()
        self.refresh()

    def _refresh_rank_cells(self) -> None:
        """Redraw the rank cells (selection marks and judgments) of the rows that changed."""
        changed = False
        for i, row in enumerate(self.rows):
            cell = self._rank_cell(row.shown, row.alternative >= 0)
            if not _same_cell(self._cells[i][0], cell):
                self._cells[i] = [cell, *self._cells[i][1:]]
                self._versions[i] = self._new_version()
                changed = True
        if changed:
            self.refresh()

    def _new_version(self) -> int:
        self._next_version += 1
        return self._next_version

    def _set_hover(self, show: bool) -> None:
        if show != self._show_hover:
            self._show_hover = show
            self.refresh()

    # -- rendering --------------------------------------------------------------------------

    def on_mount(self) -> None:
        self._update_size()

    def render_lines(self, crop: Region) -> list[Strip]:
        # The styles can not change within one pass: look them up once, not once a line.
        self._pass = self._styles()
        try:
            return super().render_lines(crop)
        finally:
            self._pass = None

    def _styles(self) -> _Styles:
        if self._pass is not None:
            return self._pass
        return _Styles(
            base=self.rich_style,
            header=self.get_component_styles("results-table--header").rich_style,
            cursor=self.get_component_rich_style("results-table--cursor"),
            hover=self.get_component_rich_style("results-table--hover"),
            header_hover=self.get_component_rich_style("results-table--header-hover"),
        )

    def render_line(self, y: int) -> Strip:
        styles = self._styles()
        width = self.size.width
        scroll_x, scroll_y = self.scroll_offset
        shared = (styles, width, scroll_x, tuple(self.widths.values()))
        if shared != self._lines_key:
            self._lines.clear()
            self._lines_key = shared
        row = y - 1 if y < 1 else y + scroll_y - 1  # the header stays put
        if row >= len(self._cells):
            return Strip.blank(width, styles.base)
        cursor = row == self._cursor
        hover = self._show_hover and row == self._hover
        key = (row, self._versions[row] if row >= 0 else 0, cursor, hover)
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = self._render_row(row, cursor, hover, styles, width, scroll_x)
        return line

    def _render_row(self, row: int, cursor: bool, hover: bool, styles: _Styles, width: int, scroll_x: int) -> Strip:
        """One line of the table: its cells, then the row's style out to the widget's edge."""
        header = row == HEADER
        component = Style()
        if hover:
            component += styles.hover
            if header:
                component += styles.header_hover
        if cursor:
            component += styles.cursor
        # The cursor's colour wins over a cell's own; its background does not (DataTable's
        # cursor_foreground_priority "css", cursor_background_priority "renderable").
        post = Style.from_color(color=component.color)
        row_style = styles.header if header else styles.base
        segments: list[Segment] = []
        for column, (key, _label, _width) in enumerate(self.COLUMNS):
            pre = row_style + Style.from_meta({"row": row, "column": column}) + component
            cell_width = self._render_width(key)
            cell = self._labels[column] if header else self._cells[row][column]
            segments.extend(self._cell(cell, pre, post, cell_width))
        remaining = max(0, width - self._table_width)
        extend = row_style + component + Style.from_meta({"row": row, "column": 0, "out_of_bounds": True})
        segments.append(Segment(" " * remaining, extend))
        return Strip(segments).crop(scroll_x, scroll_x + width).adjust_cell_length(width, styles.base).simplify()

    def _cell(self, cell: Text, pre: Style, post: Style, width: int) -> list[Segment]:
        """A one-line cell, padded and aligned, without going through a Rich console.

        The common case (plain ASCII text that fits, one style) is one segment; anything
        else renders the ``Text`` and styles its segments the same way.
        """
        console = self.app.console
        own = console.get_style(cell.style) if cell.style else Style.null()
        pad = " " * CELL_PADDING
        inner = max(0, width - 2 * CELL_PADDING)
        justify = cell.justify if cell.justify in ("left", "center", "right") else "left"
        plain = cell.plain
        if not cell.spans and len(plain) <= inner and plain.isascii():
            gap = inner - len(plain)
            left = {"left": 0, "center": gap // 2, "right": gap}[justify]
            body = f"{pad}{' ' * left}{plain}{' ' * (gap - left)}{pad}"
            return [Segment(body, pre + own + post if post else pre + own)]
        text = cell.copy()
        text.end = ""
        text.align(justify, inner)
        segments = [Segment(pad), *text.render(console, end=""), Segment(pad)]
        return list(Segment.apply_style(segments, style=pre + own, post_style=post))

    # -- internals ------------------------------------------------------------------------

    @staticmethod
    def _covers(span: Span, hit: ConsolidatedHit) -> bool:
        path, start, end = span
        return hit.path == path and _overlap(start, end, hit.start_line, hit.end_line) > 0

    def _is_selected(self, hit: ConsolidatedHit) -> bool:
        return any(self._covers(span, hit) for span in self._selected)

    def _remap_selection(self, spans: list[Span]) -> list[Span]:
        """Spans grow as arms land: keep each selected span as its successor's span."""
        out: list[Span] = []
        for span in spans:
            index = successor(span, self.hits)
            # A selected hit that dropped out of the rows stays selected by its old span, so
            # it is marked again if it comes back (e.g. after a weight is restored).
            new = span if index is None else span_of(self.hits[index])
            if new not in out:
                out.append(new)
        return out

    def _remap_expanded(self) -> list[Span]:
        """The expanded hits' spans after a redraw: each as its successor's (spans grow as
        arms land); a hit gone from the rows is forgotten."""
        out: list[Span] = []
        for span in self._expanded:
            index = successor(span, self.hits)
            if index is not None and span_of(self.hits[index]) not in out:
                out.append(span_of(self.hits[index]))
        return out

    def _make_rows(self) -> list[Row]:
        """A row per hit, and under each expanded one a row per runner-up."""
        rows = []
        expanded = set(self._expanded)
        for i, hit in enumerate(self.hits):
            rows.append(Row(i, -1, hit))
            if hit.alternatives and span_of(hit) in expanded:
                rows.extend(Row(i, n, runner_up_hit(hit, a)) for n, a in enumerate(hit.alternatives))
        return rows

    def _rank_cell(self, hit: ConsolidatedHit, runner_up: bool = False) -> Text:
        style = "dim" if hit.confidence == "low" else ""
        mark = (SELECTED_MARK, "bold magenta") if not runner_up and self._is_selected(hit) else " "
        verdict = self.verdict_of(hit)
        judged = " " if verdict is None else VERDICT_MARKS[verdict]
        return Text.assemble(mark, judged, ("  " if runner_up else f"{hit.rank:>2}", style))

    def _runner_up_cells(self, hit: ConsolidatedHit) -> list[Text]:
        """A runner-up's row: no score, agreement or confidence of its own (no arm ranked it
        over the whole index); ``via`` the arms that ranked it within its file, in lowercase;
        its file's name and lines after :data:`RUNNER_UP_MARK` (the hit's row above has its
        path) and its breadcrumb."""
        via = Text()
        for arm in self.arms:
            tag = self._letters[arm]
            if arm in hit.within:
                via.append(tag.lower(), style="dim")
            else:
                via.append("·" * len(tag), style="dim")
        width = self.location_width - len(RUNNER_UP_MARK)
        where = f"{hit.path.rsplit('/', 1)[-1]}:{hit.start_line}-{hit.end_line}"
        where = where if len(where) <= width else "…" + where[-(width - 1) :]
        return [
            self._rank_cell(hit, runner_up=True),
            Text(""),
            Text(""),
            Text(""),
            Text(""),
            via,
            Text(RUNNER_UP_MARK + where, style="dim"),
            Text(breadcrumb(hit), style="dim italic", overflow="ellipsis"),
        ]

    def _build_cells(self, hit: ConsolidatedHit) -> list[Text]:
        style = "dim" if hit.confidence == "low" else ""
        return [
            self._rank_cell(hit),
            format_shift(self.shifts[hit.docid]) if hit.docid in self.shifts else Text(""),
            Text(f"{hit.score:.4f}", style=style, justify="right"),
            *self._steady_cells(hit, style),
        ]

    def _steady_cells(self, hit: ConsolidatedHit, style: str) -> list[Text]:
        """The cells a re-fuse seldom changes, built once and reused (same objects).

        A re-fuse changes ranks and scores; agreement, confidence, arms and location
        mostly stay. Reusing the very cell objects makes the comparison with what the
        table holds an identity check, and saves building five ``Text`` a row.
        """
        votes = tuple(voters(hit))
        key = (
            hit.docid,
            hit.context,
            hit.confidence,
            tuple(hit.provenance),
            tuple(hit.within),
            votes,
            hit.agreement,
            self.answered,
            self.location_width,
            tuple(self.arms),
        )
        cells = self._steady.get(key)
        if cells is not None:
            return cells
        conf = Text(
            CONFIDENCE_LABELS.get(hit.confidence, hit.confidence), style=CONFIDENCE_STYLES.get(hit.confidence, "")
        )
        # One story with "agree": its n is the capitals here. A capital: the arm votes (the
        # span is in its own top AGREEMENT_DEPTH); lowercase: it ranked the span lower down,
        # or only among its file's chunks (the chunk step); "·": it did not rank it.
        via = Text()
        for arm in self.arms:
            tag = self._letters[arm]
            if arm in votes:
                via.append(tag, style=f"{style} bold".strip())
            elif arm in hit.provenance or arm in hit.within:
                via.append(tag.lower(), style=style)
            else:
                via.append("·" * len(tag), style="dim")
        cells = [
            Text(f"{hit.agreement}/{self.answered}", style=style, justify="center"),
            conf,
            via,
            Text(format_location(hit, self.location_width), style=style),
            Text(breadcrumb(hit), style=style or "italic", overflow="ellipsis"),
        ]
        if len(self._steady) > 4 * MAX_STEADY:
            self._steady.clear()
        self._steady[key] = cells
        return cells
