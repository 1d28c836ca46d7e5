"""The walk's trail as one line: ``question › Retry.get_backoff_time › callers: fetch``.

Drawn from the stack of steps (:class:`core.walk.Trail`): the last crumb is where the walk
is; a long trail keeps its end (where you are) and elides its start. What is selected along
the trail is counted at the end of the line.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

#: Between two crumbs.
SEPARATOR = " › "


def trail_text(crumbs: list[str], selected: int = 0, width: int = 0) -> Text:
    """The line for ``crumbs``; ``width`` (when given) elides the first crumbs to fit it."""
    tail = f"  · {selected} selected along the trail" if selected else ""
    shown = list(crumbs)
    cut = False
    while width and len(shown) > 1 and len(SEPARATOR.join(shown)) + len(tail) + (2 if cut else 0) > width:
        shown.pop(0)
        cut = True
    text = Text("… › " if cut else "", style="dim")
    for i, crumb in enumerate(shown):
        if i:
            text.append(SEPARATOR, style="dim")
        text.append(crumb, style="bold" if i == len(shown) - 1 else "")
    if tail:
        text.append(tail, style="dim")
    return text


class Breadcrumbs(Static):
    """One line above the results: the walk's trail (see the module docstring)."""

    DEFAULT_CSS = """
    Breadcrumbs {
        height: 1;
        width: 1fr;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__("", id=id, markup=False)
        self.crumbs: list[str] = []
        self.selected = 0

    def show(self, crumbs: list[str], selected: int = 0) -> None:
        self.crumbs = list(crumbs)
        self.selected = selected
        self.update(trail_text(self.crumbs, selected, self.size.width - 2 if self.size.width > 2 else 0))

    @property
    def plain(self) -> str:
        """The whole trail as text (for tests): the crumbs joined by `` › ``."""
        return SEPARATOR.join(self.crumbs)

    def on_resize(self) -> None:
        self.update(trail_text(self.crumbs, self.selected, self.size.width - 2 if self.size.width > 2 else 0))
