"""A committed generation's uses across its segments: which live chunks use a name, which
define it, as the places navigation needs (:class:`Graph`, what :mod:`core.graph.related`
asks; a Milvus store answers the same questions: :mod:`core.backends`)."""

from __future__ import annotations

import threading
from typing import NamedTuple, Protocol

import numpy as np

from ..storage.store import IndexView
from .uses import Uses, name_hash


class Edges:
    """The uses of one view (one generation), loaded once per view (:func:`edges_of`)."""

    def __init__(self, view: IndexView) -> None:
        self.view = view
        self.segments = [Uses.load(folder) for folder in view.segment_dirs]
        self._users: dict[str, np.ndarray] = {}
        self._paths: dict[str, frozenset[str]] = {}
        self._lock = threading.Lock()

    def users(self, name: str) -> np.ndarray:
        """The live chunk rows (ascending) whose code uses ``name``."""
        with self._lock:
            found = self._users.get(name)
        if found is None:
            h = name_hash(name)
            chunks = self.view.chunks
            parts = []
            for i, uses in enumerate(self.segments):
                local = uses.rows_using(h)
                if len(local):
                    rows = chunks.segment_rows_of(i, local.astype(np.int64))
                    parts.append(rows[rows >= 0])
            found = np.unique(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int64)
            with self._lock:
                self._users[name] = found
        return found

    def paths_using(self, name: str) -> frozenset[str]:
        """The files some chunk of which uses ``name``."""
        with self._lock:
            found = self._paths.get(name)
        if found is None:
            rows = self.users(name)
            found = frozenset(self.view.chunks.column("paths", rows)) if len(rows) else frozenset()
            with self._lock:
                self._paths[name] = found
        return found


def edges_of(view: IndexView) -> Edges:
    """The view's :class:`Edges`, made once per view."""
    return view.cached("graph:edges", lambda: Edges(view))


class ChunkPlace(NamedTuple):
    """Where an indexed chunk is: ``piece`` is the whole definition's span for a piece of a long
    one, ``(0, 0)`` otherwise."""

    path: str
    start: int
    end: int
    piece: tuple[int, int]
    language: str
    #: The chunk's breadcrumb (``path > Class > method``): a method's class.
    context: str = ""

    @property
    def span(self) -> tuple[str, int, int]:
        """The unit: the whole definition for a piece."""
        return (self.path, self.piece[0], self.piece[1]) if self.piece[0] else (self.path, self.start, self.end)


class Graph(Protocol):
    """What navigation asks of an index."""

    def users(self, name: str) -> list[ChunkPlace]:
        """The chunks whose code uses ``name``."""
        ...

    def definers(self, name: str, *, attributes: bool = False) -> list[ChunkPlace]:
        """The chunks that define ``name`` (nested definitions too: a method in its class's
        chunk); with ``attributes``, also those setting an instance attribute of that name."""
        ...

    def paths_using(self, name: str) -> frozenset[str]:
        """The files some chunk of which uses ``name``."""
        ...

    def indexed(self, path: str) -> bool:
        """Whether the index holds chunks of ``path``."""
        ...


class LocalGraph:
    """:class:`Graph` over a local index's committed generation."""

    def __init__(self, view: IndexView) -> None:
        self.view = view
        self.edges = edges_of(view)

    def _places(self, rows) -> list[ChunkPlace]:
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return []
        cols = self.view.chunks.columns(("paths", "starts", "ends", "pieces", "languages", "contexts"), rows)
        return [ChunkPlace(p, s, e, (int(pc[0]), int(pc[1])), lang, ctx) for p, s, e, pc, lang, ctx in zip(*cols)]

    def users(self, name: str) -> list[ChunkPlace]:
        return self._places(self.edges.users(name))

    def definers(self, name: str, *, attributes: bool = False) -> list[ChunkPlace]:
        # Here, not at the top: a query reads Edges (the chunk step's call edges) and must not
        # load the chunking package (tests/test_engine.py).
        from ..chunking.refs import DEFINES, SETS

        rows = self.edges.users(DEFINES + name)
        if attributes:
            rows = np.union1d(rows, self.edges.users(SETS + name))
        return self._places(rows)

    def paths_using(self, name: str) -> frozenset[str]:
        return self.edges.paths_using(name)

    def indexed(self, path: str) -> bool:
        return bool(len(self.view.chunks.rows_of_path(path)))
