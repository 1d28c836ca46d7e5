"""The ``deep`` arm itself: answers from a generation whose deep vectors are committed (its
sidecar folder, :func:`core.storage.store.sidecar_dir_name`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ...base.types import Hit
from ...storage.store import IndexView
from ..protocol import ArmUnavailable
from . import model

#: The arm's name, which names its sidecar folder.
NAME = "deep"
VECTORS_FILE = "deep.usearch"
STAMP_FILE = "deep.json"


def read_stamp(folder: Path) -> dict | None:
    try:
        return json.loads((folder / STAMP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


class DeepArm:
    name = NAME

    def __init__(self, view: IndexView) -> None:
        reason = model.unavailable()
        if reason:
            raise ArmUnavailable(reason)
        folder = view.sidecar_dir(NAME)
        stamp = read_stamp(folder)
        if stamp is None or not (folder / VECTORS_FILE).exists():
            raise ArmUnavailable("its vectors are not built for this index yet (`ranklens index` builds them)")
        self.encoder = model.encoder()
        if stamp.get("model") != self.encoder.name:
            raise ArmUnavailable(f"index was embedded with {stamp.get('model')}, not {self.encoder.name}")
        from ...vectors import VectorIndex

        self.view = view
        self.vectors = view.cached("deep-vectors", lambda: VectorIndex.load(folder / VECTORS_FILE, view=True))

    def search(self, query: str, limit: int, allowed: np.ndarray | None = None) -> list[Hit]:
        if limit <= 0:
            return []
        from ..dense import nearest

        return nearest(self.name, self.view, self.vectors, self.encoder.encode([query])[0], limit, allowed)
