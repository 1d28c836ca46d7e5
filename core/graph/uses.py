"""A segment's inverted index of uses: for each name (by a stable 64-bit hash), the chunks
whose code uses it.

Three memory-mapped arrays a segment (``refs.keys.npy``, ``refs.indptr.npy``,
``refs.rows.npy``): the distinct names' hashes, ascending; where each one's rows start; the
segment's rows (its chunk table's) using it. A lookup is a binary search per segment, and
nothing is read but the pages it touches. Hashes, not strings: a segment's names would be a
vocabulary to search, and two names sharing a hash (about one pair in 10^8 at 1M names)
only add a caller that :mod:`core.graph.related` then finds no use in.
"""

from __future__ import annotations

from hashlib import blake2b
from pathlib import Path

import numpy as np

from ..base import npyfile

PREFIX = "refs"
_PARTS = ("keys", "indptr", "rows")


def name_hash(name: str) -> int:
    """A name's stable 64-bit hash (the same in every process and run)."""
    return int.from_bytes(blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


class HashUses:
    """A batch's uses as hashes, made in a chunking worker (the index part's batch task):
    ``(hashes, counts)``, each chunk's distinct names' hashes one after the other and how
    many each chunk has. A name's hash is made once a batch."""

    def __call__(self, chunks: list) -> tuple[np.ndarray, np.ndarray]:
        return hash_uses([c.refs for c in chunks])


def hash_uses(refs: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """See :class:`HashUses`; ``refs`` is each chunk's space-separated names."""
    known: dict[str, int] = {}
    out: list[int] = []
    counts = np.zeros(len(refs), dtype=np.int32)
    for i, names in enumerate(refs):
        if not names:
            continue
        split = names.split()
        counts[i] = len(split)
        for name in split:
            h = known.get(name)
            if h is None:
                h = known[name] = name_hash(name)
            out.append(h)
    return np.array(out, dtype=np.uint64), counts


class Uses:
    """One segment's inverted index of uses (see the module's docstring)."""

    __slots__ = ("keys", "indptr", "rows")

    def __init__(self, keys: np.ndarray, indptr: np.ndarray, rows: np.ndarray) -> None:
        self.keys, self.indptr, self.rows = keys, indptr, rows

    @classmethod
    def of_pairs(cls, hashes: np.ndarray, rows: np.ndarray) -> Uses:
        """From ``(hash, row)`` pairs, in any order (a row's hash listed once)."""
        hashes = np.asarray(hashes, dtype=np.uint64)
        rows = np.asarray(rows, dtype=np.int32)
        order = np.lexsort((rows, hashes))
        hashes, rows = hashes[order], rows[order]
        keys, starts = np.unique(hashes, return_index=True)
        indptr = np.append(starts, len(hashes)).astype(np.int64)
        return cls(keys, indptr, rows)

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Every ``(hash, row)`` pair (the inverse of :meth:`of_pairs`)."""
        counts = np.diff(self.indptr)
        return np.repeat(self.keys, counts), np.asarray(self.rows)

    def rows_using(self, h: int) -> np.ndarray:
        """The segment's rows whose code uses the name hashed ``h``."""
        keys = self.keys
        i = int(np.searchsorted(keys, np.uint64(h)))
        if i >= len(keys) or int(keys[i]) != h:
            return np.empty(0, dtype=np.int32)
        return np.asarray(self.rows[self.indptr[i] : self.indptr[i + 1]])

    def save(self, directory: Path) -> None:
        """Into a segment folder being written (fsynced and renamed into place as a whole)."""
        for part in _PARTS:
            np.save(directory / f"{PREFIX}.{part}.npy", np.ascontiguousarray(getattr(self, part)))

    @classmethod
    def load(cls, directory: Path) -> Uses:
        """A segment's, memory-mapped; empty for a segment written before uses were kept."""
        try:
            parts = [npyfile.load(directory / f"{PREFIX}.{part}.npy", mmap=True).view(np.ndarray) for part in _PARTS]
        except FileNotFoundError:
            return cls(np.empty(0, dtype=np.uint64), np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.int32))
        return cls(*parts)

    @staticmethod
    def exists(directory: Path) -> bool:
        return (directory / f"{PREFIX}.keys.npy").exists()
