"""Hatch build hook: the wheel carries core/ and tui/ as ranklens/core and ranklens/tui.

The repository keeps the engine and the terminal UI in top-level folders (its layout); the
installed distribution is one import package, ``ranklens``, so nothing named ``core`` or
``tui`` lands in site-packages. An editable install maps ``ranklens`` alone and finds the
folders from the checkout (``ranklens/__init__.py``), so this runs for a standard wheel only.
"""

from __future__ import annotations

import os

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

#: Folder in the repository -> where it lives in the wheel.
MAPPED = {"core": "ranklens/core", "tui": "ranklens/tui"}
#: Never shipped: byte code and editor droppings.
SKIP_DIRS = {"__pycache__"}
SKIP_SUFFIXES = (".pyc", ".pyo", ".orig", ".rej", "~")


class MapFolders(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        for source, target in MAPPED.items():
            top = os.path.join(self.root, source)
            for folder, dirs, files in os.walk(top):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
                for name in sorted(files):
                    if name.endswith(SKIP_SUFFIXES):
                        continue
                    path = os.path.join(folder, name)
                    rel = os.path.relpath(path, top).replace(os.sep, "/")
                    build_data["force_include"][path] = f"{target}/{rel}"
