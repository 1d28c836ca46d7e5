"""The export modal: ask for a path, let the app's writer write the hand-off file.

Modeled on harlequin's export screen (the app pushes it with a callback and the screen
dismisses with a result), except that the writing happens here, through a callback, so a
failure is shown in the modal and the user can fix the path without starting over.
Styles live in ``tui/app.tcss`` (``#export-*`` ids).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

#: The fallback default when no root is given (the app passes the root's own,
#: :func:`core.handoff.default_handoff_path`: outside the repository).
DEFAULT_PATH = "./ranklens-handoff.json"


def shown_path(path: Path) -> str:
    """``path`` as the input shows it: under the home folder as ``~/…`` (the export expands it)."""
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except ValueError:
        return str(path)


def describe_target(raw: str, root: Path | None) -> str:
    """The line saying where the typed path writes: the absolute path (a relative one is taken
    from the working folder), and whether that is inside the repository."""
    if not raw.strip():
        return ""
    target = Path(os.path.abspath(Path(raw.strip()).expanduser()))
    where = f"Writes {target}"
    if root is None:
        return where
    real = Path(os.path.realpath(root))
    if Path(os.path.realpath(target)).is_relative_to(real):
        return f"{where}: inside the repository (ranklens never indexes its own exports)."
    return f"{where}: outside the repository."


def describe_count(count: int, selected: bool) -> str:
    """The line saying what will be exported."""
    noun = "hit" if count == 1 else "hits"
    if selected:
        return f"{count} selected {noun} will be exported."
    return f"All {count} {noun} will be exported."


class ExportScreen(ModalScreen[Path | None]):
    """Modal that exports hits to a file chosen by the user.

    Dismisses with the written :class:`~pathlib.Path`, or ``None`` when cancelled.

    Parameters
    ----------
    writer:
        Called with the (``~``-expanded) path on Export; it writes the file. If it raises
        :class:`OSError` or :class:`ValueError` the message is shown and the modal stays
        open. It runs on the UI thread, so it should be quick (a JSON dump is).
    count:
        How many hits will be exported.
    selected:
        Whether those hits are a selection (otherwise: all results).
    default_path:
        Initial content of the path input.
    root:
        The repository's folder: the line under the input says whether the path lies in it.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(
        self,
        writer: Callable[[Path], None],
        *,
        count: int,
        selected: bool = False,
        default_path: str = DEFAULT_PATH,
        root: Path | None = None,
        name: str | None = None,
        id: str | None = None,  # noqa: A002
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.writer = writer
        self.count = count
        self.selected = selected
        self.default_path = default_path
        self.root = root

    def compose(self) -> ComposeResult:
        with Vertical(id="export-outer") as outer:
            outer.border_title = "Export hits"
            yield Static(describe_count(self.count, self.selected), id="export-count", markup=False)
            yield Input(
                self.default_path,
                placeholder="/path/to/file.json  (enter exports, esc cancels)",
                id="export-path",
                # Cursor at the end rather than all selected: tweaking the default name
                # is the common edit, and backspace should not wipe the whole path.
                select_on_focus=False,
            )
            yield Static(describe_target(self.default_path, self.root), id="export-where", markup=False)
            yield Static("", id="export-error", markup=False)
            with Horizontal(id="export-buttons"):
                yield Button("Cancel", id="export-cancel")
                yield Button("Export", variant="primary", id="export-ok")

    def on_mount(self) -> None:
        self.query_one("#export-error", Static).display = False
        self.query_one("#export-path", Input).focus()

    @property
    def where(self) -> str:
        """The line saying where the file goes."""
        return str(self.query_one("#export-where", Static).content)

    @property
    def error(self) -> str:
        """The error message currently shown ("" when none)."""
        widget = self.query_one("#export-error", Static)
        return str(widget.content) if widget.display else ""

    def _show_error(self, message: str) -> None:
        widget = self.query_one("#export-error", Static)
        widget.update(message)
        widget.display = bool(message)

    @on(Input.Submitted, "#export-path")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_export()

    @on(Input.Changed, "#export-path")
    def _edited(self, event: Input.Changed) -> None:
        # The old error is about the old path.
        event.stop()
        self._show_error("")
        self.query_one("#export-where", Static).update(describe_target(event.value, self.root))

    @on(Button.Pressed, "#export-ok")
    def _export_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_export()

    @on(Button.Pressed, "#export-cancel")
    def _cancel_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_cancel()

    def action_export(self) -> None:
        """Write through the writer; dismiss with the path, or show why it failed."""
        raw = self.query_one("#export-path", Input).value.strip()
        if not raw:
            self._show_error("Enter a file path.")
            return
        path = Path(raw).expanduser()
        try:
            self.writer(path)
        except (OSError, ValueError) as error:
            self._show_error(f"Could not export: {error}")
            return
        self.dismiss(path)

    def action_cancel(self) -> None:
        """Close without exporting."""
        self.dismiss(None)
