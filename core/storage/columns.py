"""String columns of the chunk table that load as a few numpy arrays, not a million ``str``.

A query in a fresh process reads every segment's chunk table: at the 1.1M chunks of the Linux
sources, building Python lists of paths, breadcrumbs and defined names took 0.43 s of a
`ranklens query` (and ~0.4 GB). Instead a column keeps what numpy can load in one read, and
makes a ``str`` only for the rows a query shows (a few hundred):

* :class:`Coded`: few distinct values (paths, languages, kinds): an int32 code per row and the
  list of distinct values;
* :class:`Packed`: a value per row (breadcrumbs, defined names): one UTF-8 buffer, each row a
  slice of it.

Both index like a sequence (``col[row]``, ``len``, iteration) and are never mutated.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator

import numpy as np

__all__ = ["Coded", "Packed"]


class Coded:
    """A column of repeated strings: ``values[codes[row]]``."""

    __slots__ = ("codes", "values")

    def __init__(self, codes: np.ndarray, values: list[str]) -> None:
        self.codes = np.asarray(codes, dtype=np.int32)
        self.values = values

    @classmethod
    def of(cls, strings: Iterable[str]) -> Coded:
        strings = list(strings)
        values = list(dict.fromkeys(strings))
        pos = {v: i for i, v in enumerate(values)}
        return cls(np.fromiter(map(pos.__getitem__, strings), dtype=np.int32, count=len(strings)), values)

    @classmethod
    def concat(cls, columns: list[Coded]) -> Coded:
        """The rows of ``columns`` one after the other (values are not merged: a value may
        then have two codes, which no reader compares)."""
        values: list[str] = []
        codes = []
        for col in columns:
            codes.append(col.codes + len(values))
            values.extend(col.values)
        return cls(np.concatenate(codes) if codes else np.empty(0, dtype=np.int32), values)

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, row) -> str:
        return self.values[self.codes[row]]

    def __iter__(self) -> Iterator[str]:
        values = self.values
        return (values[c] for c in self.codes.tolist())

    def take(self, rows: np.ndarray) -> list[str]:
        values = self.values
        return [values[c] for c in self.codes[rows].tolist()]

    def kept(self, keep: np.ndarray) -> Coded:
        return Coded(self.codes[keep], self.values)

    def where(self, test) -> np.ndarray:
        """Boolean row mask: ``test(value)`` for each row's value, called once per value."""
        ok = np.fromiter((bool(test(v)) for v in self.values), dtype=bool, count=len(self.values))
        return ok[self.codes] if len(self.values) else np.zeros(len(self.codes), dtype=bool)


class Packed:
    """A column of distinct strings in one UTF-8 buffer: row ``i`` is ``buf[starts[i]:ends[i]]``.

    A saved column is the rows in order, each followed by a newline, and the offsets of the
    rows' starts plus the buffer's end; rows must not hold a newline (breadcrumbs and
    defined names never do).
    """

    __slots__ = ("buf", "starts", "ends", "_view", "_lower")

    def __init__(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
        self.buf = np.asarray(buf, dtype=np.uint8)
        self.starts = np.asarray(starts, dtype=np.int64)
        self.ends = np.asarray(ends, dtype=np.int64)
        self._view = memoryview(self.buf)
        self._lower: bytes | None = None

    @classmethod
    def of(cls, strings: Iterable[str]) -> Packed:
        encoded = [s.encode("utf-8", "surrogateescape") for s in strings]
        lengths = np.fromiter((len(b) + 1 for b in encoded), dtype=np.int64, count=len(encoded))
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        buf = np.frombuffer(b"".join(b + b"\n" for b in encoded), dtype=np.uint8)
        return cls(buf, offsets[:-1], offsets[1:] - 1)

    @classmethod
    def saved(cls, buf: np.ndarray, offsets: np.ndarray) -> Packed:
        """A column as :meth:`arrays` saved it."""
        return cls(buf, offsets[:-1], offsets[1:] - 1)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(buffer, offsets)`` to save: the rows in order, newline-terminated."""
        if len(self.starts) and (self.starts[0] != 0 or np.any(self.starts[1:] != self.ends[:-1] + 1)):
            return Packed.of(self).arrays()  # rows dropped or reordered: write them out again
        offsets = np.concatenate([self.starts, [self.ends[-1] + 1 if len(self.ends) else 0]])
        return self.buf[: offsets[-1]], offsets.astype(np.int64)

    @classmethod
    def concat(cls, columns: list[Packed]) -> Packed:
        shifts = np.cumsum([0] + [len(c.buf) for c in columns[:-1]])
        return cls(
            np.concatenate([c.buf for c in columns]) if columns else np.empty(0, dtype=np.uint8),
            np.concatenate([c.starts + s for c, s in zip(columns, shifts)]) if columns else np.empty(0, np.int64),
            np.concatenate([c.ends + s for c, s in zip(columns, shifts)]) if columns else np.empty(0, np.int64),
        )

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, row) -> str:
        return str(self._view[self.starts[row] : self.ends[row]], "utf-8", "surrogateescape")

    def __iter__(self) -> Iterator[str]:
        return iter(self.take(np.arange(len(self.starts))))

    def take(self, rows: np.ndarray) -> list[str]:
        view = self._view
        return [
            str(view[s:e], "utf-8", "surrogateescape")
            for s, e in zip(self.starts[rows].tolist(), self.ends[rows].tolist())
        ]

    def kept(self, keep: np.ndarray) -> Packed:
        return Packed(self.buf, self.starts[keep], self.ends[keep])

    def rows_holding(self, word: str, *, any_case: bool = False) -> np.ndarray:
        """The rows (ascending, distinct) whose value holds ``word`` followed by white space (a
        row's end is a newline): a superset of the rows defining ``word`` that the caller checks exactly.
        ``any_case`` compares ASCII letters in any case."""
        needle = word.encode("utf-8", "surrogateescape")
        if any_case:
            needle = needle.lower()
            with _LOWER_LOCK:
                if self._lower is None:
                    self._lower = self.buf.tobytes().lower()  # ASCII only: offsets stay
            hay: bytes | memoryview = self._lower
        else:
            hay = self._view
        found = np.fromiter((m.start() for m in re.finditer(re.escape(needle) + rb"(?=\s)", hay)), dtype=np.int64)
        # Rows are in buffer order (as built, kept or joined); bytes of a dropped row between
        # two kept ones belong to neither.
        rows = np.searchsorted(self.starts, found, side="right") - 1
        inside = (rows >= 0) & (found < self.ends[np.maximum(rows, 0)])
        return np.unique(rows[inside])


_LOWER_LOCK = threading.Lock()
