"""A unit's neighbourhood on the walk: the unit, then its callers, callees and tests.

One row per place, under a header per group with its count (``callers 2``; ``callers 20 of
57`` when the list is cut). A place's row reads ``path:start-end  name  line N: via,
resolution, k definitions`` (:func:`core.walk.describe_place`), ``●`` in front when selected.
The first row is the unit itself, where the cursor starts (the preview then shows it).

The list reports and decides nothing: moving posts :class:`NeighbourhoodList.Moved`, enter
:class:`NeighbourhoodList.Go`, space :class:`NeighbourhoodList.Toggle`, ``o``
:class:`NeighbourhoodList.Open`; the app keeps the trail and the selection
(:mod:`core.walk`) and tells the list what is selected (:meth:`NeighbourhoodList.show`,
:meth:`NeighbourhoodList.mark`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ranklens.core.graph.related import Neighbourhood, Place
from ranklens.core.walk import GROUPS, describe_place

#: The selection mark (as the results table's).
SELECTED_MARK = "●"


class Row(NamedTuple):
    """A row's place: the unit (``group`` ""), or one of its callers, callees or tests
    (``group`` the group's name, ``rank`` its place in it, 1-based)."""

    place: Place
    group: str
    rank: int


def group_title(group: str, shown: int, total: int) -> str:
    """``callers 2``, or ``callers 20 of 57`` when the list holds fewer than were found."""
    return f"{group} {total}" if shown >= total else f"{group} {shown} of {total}"


class NeighbourhoodList(OptionList):
    """The neighbourhood of the walk's current unit (see the module docstring)."""

    # One line a row: a long one ends in "…" (the preview shows all of it).
    DEFAULT_CSS = """
    NeighbourhoodList {
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "toggle", "Select"),
        Binding("o", "open", "Open"),
    ]

    @dataclass
    class Moved(Message):
        """The cursor is on ``row`` (the preview follows)."""

        row: Row

    @dataclass
    class Go(Message):
        """Enter on ``row``: go to it."""

        row: Row

    @dataclass
    class Toggle(Message):
        """Space on ``row``: select it, or unselect it."""

        row: Row

    @dataclass
    class Open(Message):
        """``o`` on ``row``: open it in the editor."""

        row: Row

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, markup=False)
        #: Each option's row, None for a group's header.
        self.rows: list[Row | None] = []
        self.found: Neighbourhood | None = None
        self._selected: Callable[[Place], bool] = lambda _place: False

    # -- public API -----------------------------------------------------------------------

    def show(self, found: Neighbourhood, *, selected: Callable[[Place], bool], row: int = 0) -> None:
        """List ``found``; ``selected`` says which places to mark; the cursor goes to ``row``
        (0: the unit). Posts no :class:`Moved`: the caller shows the row itself."""
        self.found = found
        self._selected = selected
        self.rows = [Row(found.unit, "", 0)]
        options: list[Option] = [Option(self._prompt(self.rows[0]))]
        for group, _one in GROUPS:
            places = getattr(found, group)
            total = found.counts.get(group, len(places))
            self.rows.append(None)
            options.append(Option(Text(group_title(group, len(places), total), style="bold"), disabled=True))
            for rank, place in enumerate(places, start=1):
                self.rows.append(Row(place, group, rank))
                options.append(Option(self._prompt(self.rows[-1])))
        self.border_title = " · ".join(
            f"{group} {found.counts.get(group, len(getattr(found, group)))}" for group, _ in GROUPS
        )
        with self.prevent(OptionList.OptionHighlighted):
            self.set_options(options)
            self.highlighted = row if 0 <= row < len(self.rows) and self.rows[row] is not None else 0
        self.scroll_to_highlight()

    @property
    def current(self) -> Row | None:
        """The row under the cursor (None when empty)."""
        index = self.highlighted
        return self.rows[index] if index is not None and 0 <= index < len(self.rows) else None

    def mark(self) -> None:
        """Draw the selection marks again (the selection changed)."""
        for index, row in enumerate(self.rows):
            if row is not None:
                self.replace_option_prompt_at_index(index, self._prompt(row))

    def row_text(self, index: int) -> str:
        """The plain text of a row (for tests)."""
        prompt = self.get_option_at_index(index).prompt
        return prompt.plain if isinstance(prompt, Text) else str(prompt)

    # -- drawing --------------------------------------------------------------------------

    def _prompt(self, row: Row) -> Text:
        place = row.place
        mark = SELECTED_MARK if self._selected(place) else " "
        text = Text(f"{mark} ", style="bold")
        if not row.group:
            text.append("▸ ", style="bold")
        text.append(f"{place.path}:{place.start_line}-{place.end_line}", style="cyan")
        if place.name:
            text.append(f"  {place.name}", style="bold")
        how = describe_place(place) if row.group else "this unit"
        if how:
            text.append(f"  {how}", style="dim")
        return text

    # -- events ---------------------------------------------------------------------------

    def _on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        row = self.current
        if row is not None:
            self.post_message(self.Moved(row))

    def _on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        row = self.current
        if row is not None:
            self.post_message(self.Go(row))

    def action_toggle(self) -> None:
        row = self.current
        if row is not None:
            self.post_message(self.Toggle(row))

    def action_open(self) -> None:
        row = self.current
        if row is not None:
            self.post_message(self.Open(row))
