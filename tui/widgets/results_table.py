"""The consolidated results: one DataTable row per fused hit.

The table owns how a hit is drawn (rank, rank shift, score, agreement, confidence, the arms
that found it, location, breadcrumb) and which hits are selected. Rows are keyed by the
hit's docid. A consolidated hit's docid is its merged span, which grows as more arms land,
so the cursor and the selection follow a hit by *overlap*: after a redraw they go to the
hit of the same file whose span overlaps the old one most.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._two_way_dict import TwoWayDict
from textual.binding import Binding, BindingType
from textual.css.styles import RenderStyles
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import CellKey, ColumnKey, RowKey

from ranklens.core.types import ConsolidatedHit

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


def span_of(hit: ConsolidatedHit) -> Span:
    return (hit.path, hit.start_line, hit.end_line)


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
    text = f"{hit.path}:{hit.start_line}-{hit.end_line}"
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def breadcrumb(hit: ConsolidatedHit) -> str:
    """The context without the leading path (the location column already says it)."""
    prefix = hit.path + " > "
    if hit.context.startswith(prefix):
        return hit.context[len(prefix) :]
    return "" if hit.context == hit.path else hit.context


def _rank_of(cell: Text) -> int:
    """The rank in a rank cell (``"●✓ 3"`` -> 3), for sorting rows."""
    return int(cell.plain[2:])


def _same_cell(a: object, b: object) -> bool:
    """Cell equality including style (``Text.__eq__`` ignores the base style)."""
    if a is b:
        return True
    if isinstance(a, Text) and isinstance(b, Text):
        return a.plain == b.plain and a.style == b.style and a.justify == b.justify and a.spans == b.spans
    return a == b


class ResultsTable(DataTable):
    """Fused hits, best first; space selects, enter or ``o`` asks to open the hit."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "toggle_select", "Select"),
        Binding("o", "open", "Open"),
    ]

    COLUMNS: ClassVar[list[tuple[str, str, int | None]]] = [
        # key, label, width (None: fit the content). "rank" carries the selection mark and
        # the relevance judgment (✓ / ✗) before the rank (two digits: ROW_LIMIT is 50);
        # "location" and "context" are sized to the table (see _fit_columns).
        ("rank", "   #", 4),
        ("move", "move", 4),
        ("score", "score", 6),
        ("agree", "agree", 5),
        ("conf", "conf", 4),
        ("via", "via", None),
        ("location", "location", LOCATION_WIDTH),
        ("context", "context", CONTEXT_MIN),
    ]

    @dataclass
    class OpenRequested(Message):
        """The user asked to open ``hit`` in an editor."""

        table: ResultsTable
        hit: ConsolidatedHit

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
        super().__init__(name=name, id=id, classes=classes, cursor_type="row", zebra_stripes=False)
        self.hits: list[ConsolidatedHit] = []
        self.shifts: dict[str, int | None] = {}
        self.answered = 0
        self.arms: list[str] = []
        self._letters: dict[str, str] = {}
        self._selected: list[Span] = []
        self._verdict: VerdictFn | None = None
        self.location_width = LOCATION_WIDTH
        self._steady: dict[tuple, list[Text]] = {}
        self.context_width = CONTEXT_MIN

    def on_mount(self) -> None:
        for key, label, width in self.COLUMNS:
            self.add_column(label, key=key, width=width)

    def on_resize(self) -> None:
        self._fit_columns()

    def _fit_columns(self) -> None:
        """Share the width the fixed columns leave between location and context.

        Both get fixed widths so the table never scrolls sideways: the location first
        (it is what the user acts on), the context whatever is left (cut with "…").
        """
        if not self.columns:
            return
        flexible = ("location", "context")
        pad = 2 * self.cell_padding
        fixed = sum(c.get_render_width(self) for c in self.columns.values() if c.key.value not in flexible)
        room = max(0, self.scrollable_content_region.width - fixed - 2 * pad)
        if room - CONTEXT_MIN >= LOCATION_MIN:
            location = min(LOCATION_MAX, room - CONTEXT_MIN)
        else:
            # Tight (narrow terminal, tuning panel open): the location takes all there is.
            # (A context column can not be narrower than one cell.)
            location = max(LOCATION_FLOOR, room - 1)
        context = max(1, room - location)
        if (location, context) == (self.location_width, self.context_width):
            return
        self.location_width, self.context_width = location, context
        self.columns[ColumnKey("location")].width = location
        self.columns[ColumnKey("context")].width = context
        if self.hits:
            self._update_rows()
        self.refresh()

    # -- public API -----------------------------------------------------------------------

    @property
    def current_hit(self) -> ConsolidatedHit | None:
        """The hit under the cursor (None when the table is empty)."""
        row = self.cursor_row
        return self.hits[row] if 0 <= row < len(self.hits) else None

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
        old_row = self.cursor_row
        self.hits = list(hits)
        self.shifts = dict(shifts or {})
        self.answered = answered
        if list(arms) != self.arms:
            self.arms = list(arms)
            self._letters = arm_letters(self.arms)
            via = self.columns.get(ColumnKey("via"))
            if via is not None:
                via.width = max(len("via"), sum(len(tag) for tag in self._letters.values()))
                via.auto_width = False
                self._fit_columns()
        self._selected = self._remap_selection(self._selected)

        row = 0
        if cursor == "keep" and old_span is not None:
            found = successor(old_span, self.hits)
            row = found if found is not None else min(old_row, max(0, len(self.hits) - 1))

        self._update_rows()
        if self.hits:
            self.move_cursor(row=row, animate=False, scroll=True)

    def _update_rows(self) -> None:
        """Make the rows show ``self.hits``, in order.

        Rows are updated in place rather than cleared and refilled: they keep their keys,
        the view keeps its scroll position, and when the same hits are only re-ranked (a
        re-fuse) the table's size, and so the screen's layout, is untouched.
        """
        wanted = {hit.docid for hit in self.hits}
        with self.app.batch_update():
            stale = [k for k in self.rows if k.value not in wanted]
            if len(stale) > len(self.rows) // 2:
                self.clear()  # mostly new hits (a new query): refill
            elif stale:
                self._drop_rows(stale)
            changed = False
            for hit in self.hits:
                cells = self._cells(hit)
                row_key = RowKey(hit.docid)
                data = self._data.get(row_key)
                if data is None:
                    self.add_row(*cells, key=hit.docid)
                    continue
                # What update_cell does, once per table rather than once per cell (every
                # call refreshes the widget): every column has a fixed width, so no
                # column needs measuring again.
                for (column, _label, _width), new in zip(self.COLUMNS, cells):
                    column_key = ColumnKey(column)
                    if not _same_cell(data.get(column_key), new):
                        data[column_key] = new
                        changed = True
            if changed:
                self._update_count += 1
                self.refresh()
            self.sort("rank", key=_rank_of)

    def clear_hits(self) -> None:
        """Empty the table (the selection is forgotten)."""
        self.hits = []
        self.shifts = {}
        self._selected = []
        self.clear()

    def toggle_selected(self, hit: ConsolidatedHit) -> None:
        span = span_of(hit)
        kept = [s for s in self._selected if not self._covers(s, hit)]
        if len(kept) == len(self._selected):
            kept.append(span)
        self._selected = kept
        self._refresh_row_of(hit)
        self.post_message(self.SelectionChanged(self, len(self.selected_hits)))

    def clear_selection(self) -> None:
        had = bool(self._selected)
        self._selected = []
        for hit in self.hits:
            self._refresh_row_of(hit)
        if had:
            self.post_message(self.SelectionChanged(self, 0))

    def set_verdicts(self, verdict: VerdictFn | None, *, redraw: bool = True) -> None:
        """Mark each row with ``verdict(hit)`` (✓ relevant, ✗ not relevant, blank: not judged).

        ``redraw=False`` only records it, for a :meth:`set_hits` that follows.
        """
        self._verdict = verdict
        if not redraw:
            return
        for hit in self.hits:
            if hit.docid in self.rows:
                cell = self._rank_cell(hit)
                if not _same_cell(self.get_cell(hit.docid, "rank"), cell):
                    self.update_cell(hit.docid, "rank", cell)

    def verdict_of(self, hit: ConsolidatedHit) -> bool | None:
        """The judgment shown for ``hit`` (None when not judged)."""
        return None if self._verdict is None else self._verdict(hit)

    def cell_text(self, row: int, column: str) -> str:
        """The plain text of a cell (for tests and the benchmark)."""
        value = self.get_cell(self.hits[row].docid, column)
        return value.plain if isinstance(value, Text) else str(value)

    # -- actions --------------------------------------------------------------------------

    def action_toggle_select(self) -> None:
        hit = self.current_hit
        if hit is not None:
            self.toggle_selected(hit)

    def action_open(self) -> None:
        hit = self.current_hit
        if hit is not None:
            self.post_message(self.OpenRequested(self, hit))

    def _on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        # Enter on a row (DataTable's own binding) means "open" here.
        hit = self.current_hit
        if event.data_table is self and hit is not None:
            self.post_message(self.OpenRequested(self, hit))

    def _drop_rows(self, row_keys: list[RowKey]) -> None:
        """``DataTable.remove_row`` for several rows, without the layout pass it asks for.

        A re-fuse swaps a few rows out and as many in; ``remove_row`` would lay out the
        whole screen for each (tens of ms, the preview's code included) although the table
        keeps its size, and re-index every row each time. The dimensions are still
        recomputed on idle, and a changed size relays out from there.
        """
        gone = set(row_keys)
        for row_key in gone:
            for column_key in self._data.get(row_key, {}):
                self._updated_cells.discard(CellKey(row_key, column_key))
            del self.rows[row_key]
            del self._data[row_key]
        locations = self._row_locations
        kept = sorted((locations.get(key), key) for key in locations if key not in gone)
        self._row_locations = TwoWayDict({key: index for index, (_old, key) in enumerate(kept)})
        self._require_update_dimensions = True
        self.cursor_coordinate = self.cursor_coordinate
        self.hover_coordinate = self.hover_coordinate
        self._update_count += 1
        self.check_idle()
        self.refresh()

    # -- rendering --------------------------------------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        # DataTable asks for the same component styles and the node's style on every line
        # (a new Styles object and an ancestor walk each time); within one pass they can
        # not change, so they are computed once per pass.
        self._pass_styles = {}
        try:
            return super().render_lines(crop)
        finally:
            self._pass_styles = None

    def get_component_styles(self, *names: str) -> RenderStyles:
        cache = getattr(self, "_pass_styles", None)
        if cache is None:
            return super().get_component_styles(*names)
        styles = cache.get(names)
        if styles is None:
            styles = cache[names] = super().get_component_styles(*names)
        return styles

    @property
    def rich_style(self) -> Style:
        cache = getattr(self, "_pass_styles", None)
        if cache is None:
            return super().rich_style
        style = cache.get("rich_style")
        if style is None:
            style = cache["rich_style"] = super().rich_style
        return style

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> list[list[Segment]]:
        """A one-line data cell, rendered without going through a Rich console.

        DataTable renders every cell as ``Styled(Padding(cell))`` through the console,
        about 0.3 ms a cell; a re-rank changes every visible row, so a full table cost
        ~100 ms on a slow machine. Our cells are single-line ``Text``: aligning and
        rendering them directly gives the same segments (the same styles, in the same
        order: base, component, the cell's own, post) ~10x faster. Headers, labels and
        anything else take DataTable's own path.
        """
        if row_index < 0 or column_index < 0:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        row = self.rows.get(row_key) if row_key is not None else None
        cell = self._data.get(row_key, {}).get(column_key) if row is not None else None
        if row is None or row.height != 1 or not isinstance(cell, Text):
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        key = (
            row_key,
            column_key,
            base_style,
            cursor,
            hover,
            self._show_hover_cursor,
            self._update_count,
            self._pseudo_class_state,
        )
        cached = self._cell_render_cache.get(key)
        if cached is not None:
            return cached
        component_style, post_style = self._get_styles_to_render_cell(
            False,
            False,
            row_index < self.fixed_rows or column_index < self.fixed_columns,
            hover,
            cursor,
            self.show_cursor,
            self._show_hover_cursor,
            self.cursor_foreground_priority == "css",
            self.cursor_background_priority == "css",
        )
        console = self.app.console
        # The meta lets a mouse click find the cell, as in DataTable's own path.
        pre_style = base_style + Style.from_meta({"row": row_index, "column": column_index}) + component_style
        own = console.get_style(cell.style) if cell.style else Style.null()
        pad = " " * self.cell_padding
        inner = max(0, width - 2 * len(pad))
        justify = cell.justify if cell.justify in ("left", "center", "right") else "left"
        plain = cell.plain
        if not cell.spans and len(plain) <= inner and plain.isascii():
            # The common case, one style and room to spare: one segment, no Text machinery.
            gap = inner - len(plain)
            left = {"left": 0, "center": gap // 2, "right": gap}[justify]
            body = f"{pad}{' ' * left}{plain}{' ' * (gap - left)}{pad}"
            line = [Segment(body, pre_style + own + post_style if post_style else pre_style + own)]
        else:
            text = cell.copy()
            text.end = ""
            text.align(justify, inner)
            segments = [Segment(pad), *text.render(console, end=""), Segment(pad)] if pad else list(text.render(console, end=""))
            line = list(Segment.apply_style(segments, style=pre_style + own, post_style=post_style))
        lines = [line]
        self._cell_render_cache[key] = lines
        return lines

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

    def _refresh_row_of(self, hit: ConsolidatedHit) -> None:
        if hit.docid in self.rows:
            self.update_cell(hit.docid, "rank", self._rank_cell(hit))

    def _rank_cell(self, hit: ConsolidatedHit) -> Text:
        style = "dim" if hit.confidence == "low" else ""
        mark = (SELECTED_MARK, "bold magenta") if self._is_selected(hit) else " "
        verdict = self.verdict_of(hit)
        judged = " " if verdict is None else VERDICT_MARKS[verdict]
        return Text.assemble(mark, judged, (f"{hit.rank:>2}", style))

    def _cells(self, hit: ConsolidatedHit) -> list[Text]:
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
        key = (
            hit.docid,
            hit.context,
            hit.confidence,
            tuple(hit.provenance),
            hit.agreement,
            self.answered,
            self.location_width,
            tuple(self.arms),
        )
        cells = self._steady.get(key)
        if cells is not None:
            return cells
        conf = Text(CONFIDENCE_LABELS.get(hit.confidence, hit.confidence), style=CONFIDENCE_STYLES.get(hit.confidence, ""))
        via = Text()
        for arm in self.arms:
            tag = self._letters[arm]
            if arm in hit.provenance:
                via.append(tag, style=style)
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
