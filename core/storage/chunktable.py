"""The chunks' metadata (no text) every arm answers with: per segment, and across a view.

:class:`ChunkTable` is one segment's chunks, ordered by id, saved in the segment folder as one
``.npy`` file a column (``chunks.*.npy``) and memory-mapped when read: a fresh process reads
only the pages a query touches. :class:`ChunkRows` is a view's rows: every segment's live
chunks one after the other, without copying a column.

Why not one joined table: at the 1.1M chunks of the Linux sources, reading each segment's
arrays into memory and joining them cost ~0.7 s of a fresh ``ranklens query`` (on this VM
every newly touched page of memory costs ~3 µs), against a few ms to map them.
"""

from __future__ import annotations

import json
import os
import threading
from fnmatch import fnmatchcase
from pathlib import Path

import numpy as np

from ..base import npyfile
from ..base.types import Hit, make_docid
from .columns import Coded, Packed

__all__ = ["ChunkRows", "ChunkTable"]

#: The chunk table's string columns of each kind.
_CODED = ("paths", "languages", "kinds")
_PACKED = ("contexts", "symbols")
_ARRAYS = ("ids", "starts", "ends", "pieces", "decls")


def file_identity(path: Path) -> tuple | None:
    """(device, inode, size, mtime) of a file, None if it is gone: a generation folder is
    written under a temporary name and renamed, which keeps it, and a rewrite changes it."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class Recent:
    """The last few values this process stored under a key (thread-safe, oldest dropped first):
    what it last saved or read, so the next reader of the same state need not read it again."""

    def __init__(self, size: int) -> None:
        self._items: dict[object, object] = {}
        self._lock = threading.Lock()
        self._size = size

    def get(self, key):
        with self._lock:
            return self._items.get(key) if key is not None else None

    def put(self, key, value) -> None:
        if key is None:
            return
        with self._lock:
            self._items.pop(key, None)
            self._items[key] = value
            while len(self._items) > self._size:
                del self._items[next(iter(self._items))]


_recent_tables = Recent(96)  # segments' chunk tables, by file identity (a view holds them all anyway)


class ChunkTable:
    """One segment's chunks, ordered by id: columns of numpy arrays and :mod:`core.storage.columns`."""

    #: The table's small file (the coded columns' values and the row count); the columns are
    #: ``chunks.<column>.npy`` beside it.
    FILE = "chunks.json"

    def __init__(
        self,
        ids: np.ndarray,
        paths: Coded | list[str],
        starts: np.ndarray,
        ends: np.ndarray,
        contexts: Packed | list[str],
        languages: Coded | list[str],
        kinds: Coded | list[str],
        pieces: np.ndarray | None = None,
        symbols: Packed | list[str] | None = None,
        decls: np.ndarray | None = None,
    ) -> None:
        self.ids = np.asarray(ids, dtype=np.int64)
        # (start, end) of the definition each chunk is a piece of; (0, 0) for whole chunks.
        self.pieces = (
            np.zeros((len(self.ids), 2), dtype=np.int64)
            if pieces is None
            else np.asarray(pieces, dtype=np.int64).reshape(-1, 2)
        )
        self.paths = paths if isinstance(paths, Coded) else Coded.of(paths)
        self.starts = np.asarray(starts, dtype=np.int64)
        self.ends = np.asarray(ends, dtype=np.int64)
        self.contexts = contexts if isinstance(contexts, Packed) else Packed.of(contexts)
        self.languages = languages if isinstance(languages, Coded) else Coded.of(languages)
        self.kinds = kinds if isinstance(kinds, Coded) else Coded.of(kinds)
        # The names each chunk defines, space-separated (``Chunk.symbol``): the ranking stage's
        # definition signal reads them (core.query.ranking).
        if symbols is None:
            symbols = [""] * len(self.ids)
        self.symbols = symbols if isinstance(symbols, Packed) else Packed.of(symbols)
        # 1 where the chunk only declares (``Chunk.declaration``): the chunk step demotes it.
        self.decls = np.zeros(len(self.ids), dtype=np.uint8) if decls is None else np.asarray(decls, dtype=np.uint8)

    @classmethod
    def from_rows(cls, rows: list[tuple]) -> ChunkTable:
        """From ``(id, path, start, end, context, language, kind, piece_start, piece_end, symbol,
        declaration)`` rows sorted by id."""
        cols = list(zip(*rows)) if rows else [[]] * 11
        return cls(
            np.array(cols[0], dtype=np.int64),
            list(cols[1]),
            np.array(cols[2], dtype=np.int64),
            np.array(cols[3], dtype=np.int64),
            list(cols[4]),
            list(cols[5]),
            list(cols[6]),
            np.array([cols[7], cols[8]], dtype=np.int64).T,
            list(cols[9]),
            np.array(cols[10], dtype=np.uint8),
        )

    @classmethod
    def load(cls, conn) -> ChunkTable:
        """Every chunk of the index database, as a table (what the segments' tables must join to)."""
        return cls.from_rows(
            conn.execute(
                "SELECT id, path, start_line, end_line, context, language, kind, piece_start, piece_end, symbol,"
                " declaration FROM chunks ORDER BY id"
            ).fetchall()
        )

    @classmethod
    def of_chunks(cls, ids, chunks: list) -> ChunkTable:
        """The table of ``chunks`` under ``ids`` (ascending)."""
        return cls(
            np.asarray(ids, dtype=np.int64),
            [c.path for c in chunks],
            np.array([c.start_line for c in chunks], dtype=np.int64),
            np.array([c.end_line for c in chunks], dtype=np.int64),
            [c.context for c in chunks],
            [c.language for c in chunks],
            [c.kind for c in chunks],
            np.array([c.piece_of or (0, 0) for c in chunks], dtype=np.int64).reshape(-1, 2),
            [c.symbol for c in chunks],
            np.array([c.declaration for c in chunks], dtype=np.uint8),
        )

    @classmethod
    def concat(cls, tables: list[ChunkTable]) -> ChunkTable:
        """The rows of ``tables`` one after the other (ids ascending across them): a merge's."""
        if len(tables) == 1:
            return tables[0]

        def stacked(name: str) -> np.ndarray:
            return np.concatenate([getattr(t, name) for t in tables]) if tables else np.empty(0, dtype=np.int64)

        return cls(
            stacked("ids"),
            Coded.concat([t.paths for t in tables]),
            stacked("starts"),
            stacked("ends"),
            Packed.concat([t.contexts for t in tables]),
            Coded.concat([t.languages for t in tables]),
            Coded.concat([t.kinds for t in tables]),
            np.concatenate([t.pieces for t in tables]) if tables else None,
            Packed.concat([t.symbols for t in tables]),
            stacked("decls"),
        )

    def kept(self, keep: np.ndarray) -> ChunkTable:
        """Only the rows where ``keep`` is true."""
        return ChunkTable(
            self.ids[keep],
            self.paths.kept(keep),
            self.starts[keep],
            self.ends[keep],
            self.contexts.kept(keep),
            self.languages.kept(keep),
            self.kinds.kept(keep),
            self.pieces[keep],
            self.symbols.kept(keep),
            self.decls[keep],
        )

    def save(self, directory: Path) -> None:
        """Write the table into a segment folder being made (published by its rename)."""
        arrays = {name: getattr(self, name) for name in _ARRAYS}
        values = {}
        for name in _CODED:
            col = getattr(self, name)
            if len(set(col.values)) != len(col.values) or len(np.unique(col.codes)) != len(col.values):
                col = Coded.of(col)  # joined or cut tables: one code a value in use, again
            arrays[name], values[name] = col.codes, col.values
        for name in _PACKED:
            arrays[name], arrays[f"{name}.offsets"] = getattr(self, name).arrays()
        for name, array in arrays.items():
            np.save(directory / f"chunks.{name}.npy", np.ascontiguousarray(array), allow_pickle=False)
        path = directory / self.FILE
        path.write_text(json.dumps({"rows": len(self.ids), "values": values}), encoding="utf-8")
        _recent_tables.put(file_identity(path), self)

    @classmethod
    def load_dir(cls, directory: Path) -> ChunkTable:
        """The table saved in ``directory``, its columns memory-mapped; the same instance when
        this process saved or loaded that very table last. Tables are never mutated."""
        path = directory / cls.FILE
        identity = file_identity(path)
        found = _recent_tables.get(identity)
        if found is not None:
            return found
        values = json.loads(path.read_text(encoding="utf-8"))["values"]

        def column(name: str) -> np.ndarray:
            return npyfile.load(directory / f"chunks.{name}.npy", mmap=True)

        table = cls(
            column("ids"),
            Coded(column("paths"), values["paths"]),
            column("starts"),
            column("ends"),
            Packed.saved(column("contexts"), column("contexts.offsets")),
            Coded(column("languages"), values["languages"]),
            Coded(column("kinds"), values["kinds"]),
            column("pieces"),
            Packed.saved(column("symbols"), column("symbols.offsets")),
            column("decls"),
        )
        _recent_tables.put(identity, table)
        return table

    def __len__(self) -> int:
        return len(self.ids)

    def rows_for(self, keys: np.ndarray) -> np.ndarray:
        """Row of each chunk id, -1 where the id is unknown."""
        keys = np.asarray(keys, dtype=np.int64)
        if len(self.ids) == 0:
            return np.full(len(keys), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.ids, keys), len(self.ids) - 1)
        return np.where(self.ids[pos] == keys, pos, -1)

    def definers(self, name: str, *, any_case: bool = False) -> list[int]:
        """The rows (ascending) of the chunks that define ``name`` (as written in a ``symbol``
        field, or its last part after ``.``/``::`` …: :func:`core.query.ranking.defined_names`), in
        any case with ``any_case``. The rows whose field holds the name are found in the
        column's buffer, then each is checked exactly."""
        from ..text.names import defined_names

        if any_case and not name.isascii():  # the buffer search folds ASCII only: read every row
            candidates = range(len(self.symbols))
        else:
            candidates = self.symbols.rows_holding(name, any_case=any_case).tolist()
        wanted = name.lower() if any_case else name
        found = []
        for row in candidates:
            forms = defined_names((self.symbols[row],))
            if wanted in ({f.lower() for f in forms} if any_case else forms):
                found.append(row)
        return found

    def mask(self, path_glob: str | None, language: str | None) -> np.ndarray:
        """Boolean row mask: ``path_glob`` fnmatch-style against the path (``*`` crosses
        ``/``), ``language`` (lowercase) equal."""
        out = np.ones(len(self.ids), dtype=bool)
        if path_glob:
            out &= self.paths.where(lambda path: fnmatchcase(path, path_glob))
        if language is not None:
            out &= self.languages.where(lambda lang: lang == language)
        return out


class ChunkRows:
    """A view's chunks: the live rows of its segments' tables, one segment after the other
    (ids ascending). Row ``r`` is the ``r``-th live chunk; the arms rank rows."""

    def __init__(self, tables: list[ChunkTable], dead: list[np.ndarray]) -> None:
        self.tables = tables
        # Per segment: its live local rows, None when all are live.
        self.live = [np.flatnonzero(~np.isin(t.ids, d)) if len(d) else None for t, d in zip(tables, dead)]
        sizes = [len(t) if live is None else len(live) for t, live in zip(tables, self.live)]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self._first_ids = np.array([int(t.ids[0]) if len(t) else 0 for t in tables], dtype=np.int64)
        self._masks: dict[tuple[str | None, str | None], np.ndarray] = {}
        self._definers: dict[tuple[str, bool], list[int]] = {}
        self._by_path: dict[str, np.ndarray] = {}
        #: per segment: path -> its code (its codes where it repeats), made on first use
        self._path_codes: list[dict[str, int | list[int]] | None] = [None] * len(tables)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return int(self.offsets[-1])

    # -- rows <-> segments ----------------------------------------------------------------

    def segment_rows(self, i: int) -> np.ndarray:
        """Segment ``i``'s local rows as rows of this view; -1 for a tombstoned chunk."""
        start, live = int(self.offsets[i]), self.live[i]
        if live is None:
            return np.arange(start, int(self.offsets[i + 1]), dtype=np.int64)
        out = np.full(len(self.tables[i]), -1, dtype=np.int64)
        out[live] = np.arange(start, start + len(live), dtype=np.int64)
        return out

    def _local(self, i: int, rows: np.ndarray) -> np.ndarray:
        local = rows - self.offsets[i]
        return local if self.live[i] is None else self.live[i][local]

    def by_segment(self, rows: np.ndarray):
        """``(segment, positions in rows, local rows)`` for each segment ``rows`` touch."""
        seg = np.searchsorted(self.offsets, rows, side="right") - 1
        if len(rows) and (rows.min() < 0 or rows.max() >= len(self)):
            raise IndexError(f"row out of range (0..{len(self) - 1})")
        for i in np.unique(seg).tolist():
            where = np.flatnonzero(seg == i)
            yield i, where, self._local(i, rows[where])

    def _take(self, names: tuple[str, ...], rows: np.ndarray) -> list[list]:
        """Columns ``names`` of ``rows``, in their order (the rows located in their segments once)."""
        out: list[list] = [[None] * len(rows) for _ in names]
        for i, where, local in self.by_segment(rows):
            at = where.tolist()
            for name, column in zip(names, out):
                col = getattr(self.tables[i], name)
                values = col.take(local) if isinstance(col, (Coded, Packed)) else col[local].tolist()
                for j, value in zip(at, values):
                    column[j] = value
        return out

    def columns(self, names: tuple[str, ...], rows) -> list[list]:
        """Columns ``names`` of ``rows``, in their order (the rows located once for all)."""
        return self._take(names, np.asarray(rows, dtype=np.int64).reshape(-1))

    def column(self, name: str, rows) -> list:
        """Column ``name`` (``paths``, ``starts``, ``contexts`` …) of ``rows``, in their order."""
        return self._take((name,), np.asarray(rows, dtype=np.int64).reshape(-1))[0]

    def path(self, row: int) -> str:
        return self.column("paths", [row])[0]

    def context(self, row: int) -> str:
        return self.column("contexts", [row])[0]

    @property
    def paths(self) -> list[str]:
        """Every row's path (materialised: for checks and tests, not for a query)."""
        return self.column("paths", np.arange(len(self)))

    @property
    def starts(self) -> np.ndarray:
        return np.asarray(self.column("starts", np.arange(len(self))), dtype=np.int64)

    @property
    def ends(self) -> np.ndarray:
        return np.asarray(self.column("ends", np.arange(len(self))), dtype=np.int64)

    def distinct_paths(self) -> set[str]:
        """The paths holding at least one live chunk."""
        out: set[str] = set()
        for table, live in zip(self.tables, self.live):
            codes = table.paths.codes if live is None else table.paths.codes[live]
            values = table.paths.values
            out.update(values[c] for c in np.unique(codes).tolist())
        return out

    def ids(self, rows=None) -> np.ndarray:
        """The chunk ids of ``rows`` (a boolean mask or row numbers; None: every row)."""
        rows = np.arange(len(self)) if rows is None else np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        return np.asarray(self.column("ids", rows.astype(np.int64)), dtype=np.int64)

    def rows_for(self, keys: np.ndarray) -> np.ndarray:
        """Row of each chunk id, -1 where the id is unknown (e.g. newer than this view) or
        tombstoned."""
        keys = np.asarray(keys, dtype=np.int64)
        out = np.full(len(keys), -1, dtype=np.int64)
        if not len(self.tables) or not len(keys):
            return out
        seg = np.searchsorted(self._first_ids, keys, side="right") - 1
        for i in np.unique(seg[seg >= 0]).tolist():
            where = np.flatnonzero(seg == i)
            local = self.tables[i].rows_for(keys[where])
            known = local >= 0
            out[where[known]] = self.segment_rows_of(i, local[known])
        return out

    def segment_rows_of(self, i: int, local: np.ndarray) -> np.ndarray:
        """Rows of segment ``i``'s ``local`` rows (-1 where tombstoned)."""
        live = self.live[i]
        if live is None:
            return local + self.offsets[i]
        if not len(live):
            return np.full(len(local), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(live, local), len(live) - 1)
        return np.where(live[pos] == local, pos + self.offsets[i], -1)

    # -- what the arms and the stage ask --------------------------------------------------

    def hits(self, arm: str, rows, scores) -> list[Hit]:
        """One arm's ranking: chunk row ``rows[i]`` ranked ``i + 1`` with ``scores[i]``."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        paths, starts, ends, pieces, contexts, symbols = self._take(
            ("paths", "starts", "ends", "pieces", "contexts", "symbols"), rows
        )
        out = []
        for rank, (path, start, end, (piece_start, piece_end), score, context, symbol) in enumerate(
            zip(paths, starts, ends, pieces, np.asarray(scores, dtype=np.float64).tolist(), contexts, symbols),
            start=1,
        ):
            out.append(
                Hit(
                    arm,
                    make_docid(path, start, end),
                    path,
                    start,
                    end,
                    rank,
                    score,
                    context,
                    None,
                    (piece_start, piece_end) if piece_start else None,
                    symbol,
                )
            )
        return out

    def rows_of_path(self, path: str) -> np.ndarray:
        """The live rows (ascending) of the chunks of file ``path``, kept with the view: the
        chunk step (:mod:`core.query.chunkstep`) weighs every chunk of a chosen file."""
        with self._lock:
            found = self._by_path.get(path)
        if found is None:
            parts = []
            for i, table in enumerate(self.tables):
                codes = self._path_codes[i]
                if codes is None:
                    codes = self._path_codes[i] = _codes_of(table.paths.values)
                wanted = codes.get(path)
                if wanted is None:
                    continue
                if isinstance(wanted, int):
                    local = np.flatnonzero(table.paths.codes == wanted)
                else:
                    local = np.flatnonzero(np.isin(table.paths.codes, wanted))
                rows = self.segment_rows_of(i, local.astype(np.int64))
                parts.append(rows[rows >= 0])
            found = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
            with self._lock:
                self._by_path[path] = found
        return found

    def definers(self, name: str, *, any_case: bool = False) -> list[int]:
        """The rows (ascending) of the chunks that define ``name`` (:meth:`ChunkTable.definers`),
        kept with the view."""
        key = (name, any_case)
        with self._lock:
            found = self._definers.get(key)
        if found is None:
            found = []
            for i, table in enumerate(self.tables):
                rows = self.segment_rows_of(i, np.asarray(table.definers(name, any_case=any_case), dtype=np.int64))
                found.extend(rows[rows >= 0].tolist())
            with self._lock:
                self._definers[key] = found
        return found

    def mask(self, path_glob: str | None = None, language: str | None = None) -> np.ndarray | None:
        """Boolean row mask for the filters (``None`` when there is no filter).

        ``path_glob`` is fnmatch-style against the relative path (``*`` crosses ``/``);
        ``language`` compares case-insensitively.
        """
        if not path_glob and not language:
            return None
        key = (path_glob or None, language.lower() if language else None)
        with self._lock:
            cached = self._masks.get(key)
        if cached is None:
            parts = []
            for table, live in zip(self.tables, self.live):
                part = table.mask(key[0], key[1])
                parts.append(part if live is None else part[live])
            cached = np.concatenate(parts) if parts else np.zeros(0, dtype=bool)
            with self._lock:
                self._masks[key] = cached
        return cached


def _codes_of(values: list[str]) -> dict[str, int | list[int]]:
    """Each value's code, or its codes where a concatenated table holds it twice: one dict
    made in C for a segment's (~2,000 at the kernel's scale) distinct paths, the loop only
    when some repeat (a fresh query builds this for every segment)."""
    codes: dict[str, int | list[int]] = dict(zip(values, range(len(values))))
    if len(codes) == len(values):
        return codes
    many: dict[str, list[int]] = {}
    for c, value in enumerate(values):
        many.setdefault(value, []).append(c)
    return {v: c[0] if len(c) == 1 else c for v, c in many.items()}
