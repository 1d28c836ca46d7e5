"""Handing hits off: exporting them as a handoff document (the export modal), or opening one
in the user's editor.

The export writes what the table shows when ``e`` is pressed (the selected hits, else all of
them) as ``ranklens query --json`` would, with each span's hash, atomically; by default to
the root's file in ranklens's cache folder (:func:`core.handoff.default_handoff_path`),
outside the repository, and the index never reads a handoff wherever it is. The editor gets
the terminal (the app suspends) and the index is refreshed when it hands it back: the file
may have changed, and the query runs again if it did.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import SuspendNotSupported

from ranklens.core.base.atomic import write_json_atomic
from ranklens.core.handoff import default_handoff_path
from ranklens.tui.screens.export import ExportScreen, shown_path

if TYPE_CHECKING:
    from ranklens.core.base.types import ConsolidatedHit


def describe_write_error(path: Path, error: OSError) -> str:
    """A one-line reason an export to ``path`` failed, about ``path`` (not a temp file)."""
    parent = path.expanduser().parent
    if isinstance(error, IsADirectoryError) or path.is_dir():
        return f"{path} is a folder; give a file name"
    if not parent.exists():
        return f"the folder {parent} does not exist"
    if not parent.is_dir():
        return f"{parent} is not a folder"
    if isinstance(error, PermissionError):
        return f"no permission to write in {parent}"
    return f"cannot write {path}: {error.strerror or error}"


class HandoffActions:
    """Mixin of :class:`~tui.app.RanklensApp`: the export action and the editor hand-off.

    It relies on what the app provides: ``session``, ``engine``, the ``table`` widget,
    ``_start_index`` (:class:`~tui.indexing.IndexOrchestration`), ``export_choice`` and
    ``export_question`` (:class:`~tui.walk.WalkActions`: what is selected, the walk's too).
    """

    def action_export(self) -> None:
        # The selected hits (the table's and the walk's: tui.walk), else every hit shown, each
        # with how it was reached.
        hits, reached, selected = self.export_choice()
        if not hits:
            self.notify("Nothing to export yet: run a query first.", severity="warning")
            return
        # What is exported is what is shown now, whatever lands or moves before the dialog closes.
        data = self.session.handoff(hits, query=self.export_question(), reached=reached)
        writer = partial(self.write_handoff, data=data)

        def done(path: Path | None) -> None:
            if path is not None:
                noun = "hit" if len(hits) == 1 else "hits"
                self.notify(f"Exported {len(hits)} {noun} to {path}", title="Export")

        root = Path(self.engine.root)
        screen = ExportScreen(
            writer,
            count=len(hits),
            selected=bool(selected),
            default_path=shown_path(default_handoff_path(root)),
            root=root,
        )
        self.push_screen(screen, done)

    def write_handoff(self, path: Path, *, data: dict) -> None:
        """Write a handoff envelope (as ``ranklens query --json``, with span hashes) atomically."""
        path = Path(path).expanduser()
        try:
            if path == default_handoff_path(self.engine.root):
                # ranklens's own folder for exports (in its cache folder): made on first use.
                path.parent.mkdir(parents=True, exist_ok=True)
            write_json_atomic(path, data)
        except OSError as error:
            # The raw error names the temporary file beside the target; say what to fix.
            raise OSError(describe_write_error(Path(path), error)) from error

    def open_in_editor(self, hit: ConsolidatedHit) -> None:
        """Suspend the UI and open ``$EDITOR +line path``; refresh the index afterwards."""
        editor = os.environ.get("EDITOR", "").strip()
        if not editor:
            self.notify("Set $EDITOR to open hits in your editor (e.g. export EDITOR=vim).", severity="warning")
            return
        try:
            command = shlex.split(editor)
        except ValueError as error:
            self.notify(f"Cannot parse $EDITOR ({editor!r}): {error}", severity="error")
            return
        path = self.engine.root / hit.path
        try:
            with self.suspend():
                self.run_editor([*command, f"+{hit.start_line}", str(path)])
        except SuspendNotSupported:
            self.notify("This terminal cannot hand over to an editor.", severity="error")
            return
        except OSError as error:
            self.notify(f"Cannot run {command[0]}: {error.strerror or error}", severity="error")
            return
        # The file may have changed: refresh the index (the query re-runs if it did).
        self._start_index()

    def run_editor(self, argv: list[str]) -> None:
        """Run the editor in the terminal the app handed over (blocks until it exits)."""
        subprocess.run(argv, check=False)
