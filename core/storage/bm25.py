"""BM25Okapi served from a term-major sparse term-frequency matrix.

rank-bm25's ``BM25Okapi.get_scores`` walks every document for every query term (~60 ms at
50k chunks). Its score is a sum over query terms of a per-(document, term) *impact*

    idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))

so we keep the term frequencies term-major (CSC) with rank-bm25's exact statistics (its idf,
including the ``epsilon * average_idf`` floor for negative idfs, and each document's
``k1 * (1 - b + b * |d| / avgdl)``): a query computes the impacts of its few columns only
(well under a millisecond), with identical scores.

The term frequencies live in segments (:class:`Postings`, one per segment of the index, see
:mod:`core.storage.segments`) and the statistics over the live documents of all of them in
:class:`CorpusStats`, updated by each generation from the last (the terms of removed documents
read back from their postings, the new segment's added): an update writes a small segment and
one array the size of the vocabulary, and the scores stay exactly those of one matrix over the
live documents. No impact is precomputed. Every matrix of an index shares one vocabulary
(token <-> column), grown as the indexer counts term frequencies (:mod:`core.storage.terms`)
and read a query's few tokens at a time (:class:`StoredVocabulary`).

scipy is imported only to build or update a matrix: a query reads the columns straight from
the (memory-mapped) arrays with numpy, and importing ``scipy.sparse`` costs ~0.3 s of a warm
start.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..base import npyfile
from ..base._sqlite import sqlite3

if TYPE_CHECKING:
    from scipy import sparse

K1, B, EPSILON = 1.5, 0.75, 0.25


class StoredVocabulary:
    """Token -> column read from the ``vocab`` table a query's few tokens at a time, so opening
    an index reads none of it (building the whole dict took ~0.13 s at 50k chunks).

    Tokens only ever gain columns, so a reader of an older generation may find tokens its
    matrices do not have yet: their columns lie past the matrix width and are ignored.
    """

    def __init__(self, connection: Callable[[], sqlite3.Connection]) -> None:
        self._connection = connection

    def columns(self, tokens: Sequence[str]) -> list[int | None]:
        distinct = list(dict.fromkeys(tokens))
        if not distinct:
            return []
        marks = ",".join("?" * len(distinct))
        found = dict(self._connection().execute(f"SELECT token, col FROM vocab WHERE token IN ({marks})", distinct))
        return [found.get(t) for t in tokens]


class Postings:
    """One segment's term frequencies, term-major: for each column the segment holds, its rows
    (ascending) and their (weighted) counts; and each row's length and key (its chunk id).

    Only the columns present are stored (``cols``, ascending, with ``indptr`` into the
    entries): a segment of the Linux sources holds a few hundred thousand of the millions of
    columns of the index's vocabulary, whose full-width pointer array would take 24 MB per
    segment and matrix. Immutable once saved; a reader memory-maps it.
    """

    _ARRAYS = ("tf.cols", "tf.indptr", "tf.indices", "tf.data", "doc_len", "keys")
    _OVER = ("tf.over", "tf.over_counts")

    def __init__(self, cols, indptr, indices, data, doc_len, keys, over=None) -> None:
        self.cols, self.indptr, self.indices, self.data = cols, indptr, indices, data
        self.doc_len, self.keys = doc_len, keys
        # As saved, the counts are one byte each; the few over 255 (157 of 3.4M entries in a
        # segment of the Linux sources) are kept apart: (entry positions ascending, counts).
        self.over: tuple[np.ndarray, np.ndarray] | None = over if over is not None and len(over[0]) else None

    def counts(self) -> np.ndarray:
        """Every entry's exact count (``data`` with the counts over 255 put back)."""
        if self.over is None:
            return np.asarray(self.data)
        out = np.asarray(self.data).astype(self.over[1].dtype)
        out[self.over[0]] = self.over[1]
        return out

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1]) if len(self.indptr) else 0

    @classmethod
    def from_tf(cls, tf: sparse.csr_matrix, keys: Sequence[int] | np.ndarray) -> Postings:
        """From a documents x columns count matrix (rows in key order)."""
        keys = np.asarray(keys, dtype=np.int64)
        if len(keys) != tf.shape[0]:
            raise ValueError(f"{len(keys)} keys for {tf.shape[0]} documents")
        doc_len = np.asarray(tf.sum(axis=1), dtype=np.float64).ravel()
        csc = tf.tocsc()
        csc.sort_indices()
        counts = np.diff(csc.indptr)
        cols = np.flatnonzero(counts).astype(np.int32)
        indptr = np.zeros(len(cols) + 1, dtype=np.int64)
        np.cumsum(counts[cols], out=indptr[1:])
        return cls(cols, indptr, csc.indices.astype(_row_type(len(keys))), _compact_counts(csc.data), doc_len, keys)

    def column(self, col: int) -> tuple[np.ndarray, np.ndarray]:
        """The rows holding column ``col`` and their counts (empty when none does)."""
        return self.columns([col])[0]

    def columns(self, cols: Sequence[int]) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`column` of each of ``cols``, looked up at once."""
        # In the stored type: searching int32 columns for int64 keys would convert them all.
        want = np.asarray(cols, dtype=self.cols.dtype)
        at = np.searchsorted(self.cols, want)
        out = []
        n = len(self.cols)
        for i, col in zip(at.tolist(), want.tolist()):
            if i == n or int(self.cols[i]) != col:
                out.append((_NO_ROWS, _NO_COUNTS))
                continue
            lo, hi = int(self.indptr[i]), int(self.indptr[i + 1])
            counts = self.data[lo:hi]
            if self.over is not None:
                pos, big = self.over
                a, b = np.searchsorted(pos, (lo, hi))
                if b > a:
                    counts = counts.astype(big.dtype)
                    counts[pos[a:b] - lo] = big[a:b]
            out.append((self.indices[lo:hi], counts))
        return out

    def df(self, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The columns the segment's rows hold (of ``rows``, a boolean mask, when given), each
        once, and how many rows hold each: sparse, so that a few removed rows cost a few
        columns, not an array the width of the vocabulary."""
        if rows is None:
            return np.asarray(self.cols, dtype=np.int64), np.diff(self.indptr).astype(np.int64)
        hit = np.flatnonzero(np.asarray(rows)[self.indices])
        which = np.searchsorted(self.indptr, hit, side="right") - 1
        cols, counts = np.unique(np.asarray(self.cols)[which], return_counts=True)
        return cols.astype(np.int64), counts.astype(np.int64)

    def rows_of(self, keys: np.ndarray) -> np.ndarray:
        """The rows of those ``keys`` this segment holds (keys ascending, as rows are)."""
        keys = np.asarray(keys, dtype=np.int64)
        if len(self.keys) == 0 or len(keys) == 0:
            return np.empty(0, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        return pos[np.asarray(self.keys)[pos] == keys]

    def kept(self, keep: np.ndarray) -> Postings:
        """Without the rows where ``keep`` is False (renumbered, in order)."""
        keep = np.asarray(keep, dtype=bool)
        indices = np.asarray(self.indices)
        entry_keep = keep[indices]
        before = np.zeros(len(entry_keep) + 1, dtype=np.int64)
        np.cumsum(entry_keep, out=before[1:])
        indptr = before[np.asarray(self.indptr)]
        present = np.diff(indptr) > 0
        renumber = (np.cumsum(keep) - 1).astype(_row_type(int(keep.sum())))
        return Postings(
            np.asarray(self.cols)[present],
            np.concatenate([indptr[:-1][present], indptr[-1:]]),
            renumber[indices[entry_keep]],
            self.counts()[entry_keep],
            np.asarray(self.doc_len)[keep],
            np.asarray(self.keys)[keep],
        )

    @classmethod
    def concat(cls, parts: Sequence[Postings]) -> Postings:
        """The rows of ``parts``, one after the other (each column's rows stay ascending)."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.empty()
        cols = np.unique(np.concatenate([np.asarray(p.cols) for p in parts]))
        counts = np.zeros(len(cols), dtype=np.int64)
        slots = [np.searchsorted(cols, p.cols) for p in parts]
        for p, at in zip(parts, slots):
            counts[at] += np.diff(p.indptr)
        indptr = np.zeros(len(cols) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        indices = np.empty(indptr[-1], dtype=_row_type(sum(len(p) for p in parts)))
        data = np.empty(indptr[-1], dtype=np.result_type(*(p.counts().dtype for p in parts)))
        filled = indptr[:-1].copy()  # where each column's next entries go
        offset = 0
        for p, at in zip(parts, slots):
            lengths = np.diff(p.indptr)
            # Entry e of column j lands at filled[j] + (e - p.indptr[j]).
            entry_slot = np.repeat(at, lengths)
            dest = filled[entry_slot] + (np.arange(p.nnz) - np.repeat(np.asarray(p.indptr[:-1]), lengths))
            indices[dest] = np.asarray(p.indices).astype(indices.dtype) + offset
            data[dest] = p.counts()
            filled[at] += lengths
            offset += len(p)
        return cls(
            cols.astype(np.int32),
            indptr,
            indices,
            data,
            np.concatenate([np.asarray(p.doc_len) for p in parts]),
            np.concatenate([np.asarray(p.keys) for p in parts]),
        )

    @classmethod
    def empty(cls) -> Postings:
        return cls(
            np.empty(0, dtype=np.int32),
            np.zeros(1, dtype=np.int64),
            np.empty(0, dtype=np.uint16),
            np.empty(0, dtype=np.uint8),
            np.empty(0),
            np.empty(0, dtype=np.int64),
        )

    def save(self, directory: Path, name: str) -> None:
        """Write ``<name>.<array>.npy`` files (memory-mappable) into a folder being prepared (it is
        fsynced and renamed into place as a whole, so these need no temp files of their own):
        4-byte entry pointers, whole counts in one byte each plus the few larger ones apart."""
        data = self.counts()
        over_at, over = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.uint16)
        if data.dtype == np.uint16:
            over_at = np.flatnonzero(data > 255)
            over = data[over_at]
            data = np.minimum(data, 255).astype(np.uint8)
        indptr = np.asarray(self.indptr)
        if indptr.size and indptr[-1] < 1 << 31:
            indptr = indptr.astype(np.int32)
        arrays = (self.cols, indptr, self.indices, data, self.doc_len, self.keys, over_at, over)
        for part, array in zip(self._ARRAYS + self._OVER, arrays):
            np.save(directory / f"{name}.{part}.npy", np.ascontiguousarray(array))

    @classmethod
    def load(cls, directory: Path, name: str) -> Postings:
        # Plain ndarray views of the maps: slicing a np.memmap runs Python code per slice.
        main = [npyfile.load(directory / f"{name}.{part}.npy", mmap=True).view(np.ndarray) for part in cls._ARRAYS]
        over = tuple(npyfile.load(directory / f"{name}.{part}.npy") for part in cls._OVER)
        return cls(*main, over=over)


_NO_ROWS = np.empty(0, dtype=np.int32)
_NO_COUNTS = np.empty(0, dtype=np.float32)


def _row_type(rows: int) -> type:
    """The narrowest type for row numbers below ``rows``: a segment of up to 65,536 rows (every
    segment a cold build flushes) numbers them in 2 bytes."""
    return np.uint16 if rows <= 1 << 16 else np.int32


def _compact_counts(data: np.ndarray) -> np.ndarray:
    """The counts in the narrowest exact type: whole counts (fields weighted by whole numbers)
    up to 255 in one byte, up to 65,535 in two; anything else float32 (small multiples of 1/2
    are exact there). The postings of the Linux sources: 8 bytes an entry before, 3 now."""
    if data.size == 0:
        return data.astype(np.uint8)
    if np.all(data == np.rint(data)) and data.min() >= 0:
        top = data.max()
        if top <= 255:
            return data.astype(np.uint8)
        if top <= 65535:
            return data.astype(np.uint16)
    return data.astype(np.float32)


class CorpusStats:
    """BM25Okapi's statistics of a matrix's live documents, across its segments: the document
    frequency of each column, the number of documents and their total length, and the average
    idf rank-bm25 floors negative idfs with.

    Kept per generation and updated from the last one (documents removed and added), so an
    update reads and writes one array the size of the vocabulary, never one per document.
    """

    def __init__(
        self,
        df: np.ndarray,
        n: int,
        total: float,
        *,
        k1: float = K1,
        b: float = B,
        epsilon: float = EPSILON,
        average_idf: float | None = None,
    ) -> None:
        self.df, self.n, self.total = df, int(n), float(total)
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.average_idf = self._average_idf() if average_idf is None else float(average_idf)

    @property
    def width(self) -> int:
        return len(self.df)

    @property
    def avgdl(self) -> float:
        return self.total / self.n if self.n else 0.0

    def _average_idf(self) -> float:
        """rank-bm25's: the mean idf over the corpus's terms, before the floor. Summed per
        distinct document frequency (a few thousand values for millions of terms: 5 ms instead
        of 80 for the 4.2M columns of the Linux sources); the same sum as term by term, but for
        the rounding of its last bits."""
        per_df = np.bincount(np.asarray(self.df), minlength=1)
        per_df[0] = 0
        df = np.flatnonzero(per_df)
        if self.n == 0 or df.size == 0:
            return 0.0
        idf = np.log(self.n - df + 0.5) - np.log(df + 0.5)
        return float(np.dot(per_df[df], idf) / per_df[df].sum())

    def idf(self, cols: Sequence[int]) -> np.ndarray:
        """The idf of each column (``epsilon * average_idf`` where negative, as rank-bm25)."""
        df = np.asarray(self.df)[np.asarray(cols, dtype=np.int64)]
        idf = np.log(self.n - df + 0.5) - np.log(df + 0.5)
        idf[(df > 0) & (idf < 0)] = self.epsilon * self.average_idf
        idf[df == 0] = 0.0
        return idf

    @classmethod
    def of(cls, segments: Sequence[Postings], width: int, **params) -> CorpusStats:
        """The statistics of every row of ``segments``."""
        df = np.zeros(width, dtype=np.int64)
        for seg in segments:
            cols, counts = seg.df()
            df[cols] += counts  # columns unique within a segment
        return cls(
            df.astype(np.int32),
            sum(len(s) for s in segments),
            sum(float(np.asarray(s.doc_len).sum()) for s in segments),
            **params,
        )

    def updated(
        self, width: int, removed: Sequence[tuple[Postings, np.ndarray]], added: Sequence[Postings]
    ) -> CorpusStats:
        """Without the rows ``removed`` (``(segment, boolean row mask)`` pairs) and with every row
        of ``added``, over ``width`` columns (the vocabulary may have grown)."""
        df = np.zeros(width, dtype=np.int64)
        df[: self.width] = self.df
        n, total = self.n, self.total
        for seg, rows in removed:
            cols, counts = seg.df(rows)
            df[cols] -= counts
            n -= int(rows.sum())
            total -= float(np.asarray(seg.doc_len)[rows].sum())
        for seg in added:
            cols, counts = seg.df()
            df[cols] += counts
            n += len(seg)
            total += float(np.asarray(seg.doc_len).sum())
        if (df < 0).any():
            raise ValueError("document frequencies went negative: removed rows were not counted")
        return CorpusStats(df.astype(np.int32), n, total, k1=self.k1, b=self.b, epsilon=self.epsilon)

    @classmethod
    def empty(cls, **params) -> CorpusStats:
        return cls(np.zeros(0, dtype=np.int32), 0, 0.0, **params)

    def save(self, directory: Path, name: str) -> None:
        np.save(directory / f"{name}.df.npy", np.ascontiguousarray(self.df, dtype=np.int32))
        header = {
            "n": self.n,
            "total": self.total,
            "average_idf": self.average_idf,
            "width": self.width,
            "k1": self.k1,
            "b": self.b,
            "epsilon": self.epsilon,
        }
        (directory / f"{name}.stats.json").write_text(json.dumps(header), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path, name: str) -> CorpusStats:
        header = json.loads((directory / f"{name}.stats.json").read_text(encoding="utf-8"))
        df = npyfile.load(directory / f"{name}.df.npy", mmap=True).view(np.ndarray)
        return cls(
            df,
            header["n"],
            header["total"],
            k1=header["k1"],
            b=header["b"],
            epsilon=header["epsilon"],
            average_idf=header["average_idf"],
        )


class BM25Matrix:
    """BM25Okapi over term frequencies held in segments, with the statistics of their live rows.

    Rows are numbered across the segments in order (``keys`` holds the caller's id of each,
    chunk ids). A row that is no longer live (its chunk was removed) stays in its segment
    until a merge drops it; the statistics leave it out, and the caller masks it out of
    :meth:`top` (``allowed``). Scores equal ``rank_bm25.BM25Okapi.get_scores`` over the live
    rows.
    """

    def __init__(self, segments: Sequence[Postings], stats: CorpusStats, vocab) -> None:
        self.segments = list(segments)
        self.stats = stats
        self.vocab = vocab
        self.k1, self.b, self.epsilon = stats.k1, stats.b, stats.epsilon
        self.offsets = np.zeros(len(self.segments) + 1, dtype=np.int64)
        np.cumsum([len(s) for s in self.segments], out=self.offsets[1:])
        self._dnorm: dict[int, np.ndarray] = {}
        self._keys: np.ndarray | None = None
        self._last: tuple[tuple[str, ...], list] | None = None  # the last query's matched rows (_matched)

    # -- building -----------------------------------------------------------------------

    @classmethod
    def from_tf(cls, tf: sparse.csr_matrix, vocab, keys: Sequence[int] | np.ndarray, **params) -> BM25Matrix:
        """One segment holding ``tf``'s rows, every one live."""
        seg = Postings.from_tf(tf, keys)
        return cls([seg], CorpusStats.of([seg], max(len(vocab), tf.shape[1]), **params), vocab)

    @classmethod
    def from_documents(
        cls,
        docs: Iterable[Sequence[str] | Mapping[str, int]],
        keys: Sequence[int] | np.ndarray | None = None,
        **params,
    ) -> BM25Matrix:
        """Build from tokenized (or already counted) documents; ``keys`` default to 0..n-1."""
        from scipy import sparse

        from .terms import Vocabulary

        vocab = Vocabulary()
        indptr, indices, data = [0], [], []
        for doc in docs:
            counts = doc if isinstance(doc, Mapping) else Counter(doc)
            indices.extend(vocab.add(t) for t in counts)
            data.extend(counts.values())
            indptr.append(len(indices))
        tf = sparse.csr_matrix(
            (np.array(data, dtype=np.float64), np.array(indices, dtype=np.int64), np.array(indptr)),
            shape=(len(indptr) - 1, len(vocab)),
        )
        n = tf.shape[0]
        return cls.from_tf(tf, vocab, np.arange(n) if keys is None else keys, **params)

    # -- querying -----------------------------------------------------------------------

    def __len__(self) -> int:
        return int(self.offsets[-1])

    @property
    def keys(self) -> np.ndarray:
        """Every row's key, in row order."""
        if self._keys is None:
            self._keys = (
                np.concatenate([np.asarray(s.keys) for s in self.segments])
                if self.segments
                else np.empty(0, dtype=np.int64)
            )
        return self._keys

    def _norms(self, i: int) -> np.ndarray:
        """``k1 * (1 - b + b * |d| / avgdl)`` of segment ``i``'s rows (computed once, as rank-bm25)."""
        dnorm = self._dnorm.get(i)
        if dnorm is None:
            doc_len = np.asarray(self.segments[i].doc_len)
            avgdl = self.stats.avgdl
            dnorm = self.k1 * (1 - self.b + self.b * doc_len / avgdl) if avgdl else np.zeros(len(doc_len))
            self._dnorm[i] = dnorm
        return dnorm

    def _postings(self, i: int, cols: list[int], weights: np.ndarray, idf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows and weighted impacts of the query columns in segment ``i``, column after column.

        An impact is ``idf * (f (k1 + 1)) / (k1 (1 - b + b |d| / avgdl) + f)``, computed in that
        order for these postings only (every column's at once: the same operations on each
        value). Summing them per row in this order (``np.bincount``) adds exactly what a sparse
        product over the precomputed impacts would add.
        """
        found = self.segments[i].columns(cols)
        lengths = [len(at) for at, _f in found]
        if not any(lengths):
            return np.empty(0, dtype=np.int64), np.empty(0)
        at = np.concatenate([at for at, _f in found])
        f = np.concatenate([f for _at, f in found]).astype(np.float64)
        impact = f * (self.k1 + 1)
        impact /= self._norms(i)[at] + f
        impact *= np.repeat(idf, lengths)
        return at, impact * np.repeat(weights, lengths)

    def get_scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """Scores of every row, equal to ``rank_bm25.BM25Okapi.get_scores`` (repeated terms count again)."""
        cols, weights = self._query_columns(query_tokens)
        out = np.zeros(len(self))
        if not cols:
            return out
        idf = self.stats.idf(cols)
        for i, seg in enumerate(self.segments):
            rows, values = self._postings(i, cols, weights, idf)
            if rows.size:
                lo = self.offsets[i]
                out[lo : lo + len(seg)] = np.bincount(rows, weights=values, minlength=len(seg))
        return out

    def top(
        self,
        query_tokens: Sequence[str],
        limit: int,
        allowed: np.ndarray | None = None,
        among: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Row positions and scores of the best ``limit`` rows that contain a query term.

        ``allowed`` is a boolean mask over rows (filters, and the rows no longer live);
        ``among``, when given, is its rows (ascending, none twice): a few rows (the chunk
        step's files) are then looked up in each segment's matched rows instead of masking
        every matched row (2.2 of 2.3 ms for five kernel files). Ties go to the earlier row.
        """
        empty = np.empty(0, dtype=np.int64), np.empty(0)
        if limit <= 0:
            return empty
        found_rows, found_scores = [], []
        for lo, rows, scores in self._matched(query_tokens):
            if among is not None and rows.size:
                # rows is ascending (unique / flatnonzero): the rows the mask would keep, in order.
                sub = among[np.searchsorted(among, lo) : np.searchsorted(among, lo + int(rows[-1]) + 1)] - lo
                at = np.searchsorted(rows, sub)
                at = at[rows[at] == sub]
                rows, scores = rows[at], scores[at]
            elif allowed is not None:
                keep = allowed[lo + rows]
                rows, scores = rows[keep], scores[keep]
            if rows.size == 0:
                continue
            if rows.size > limit:
                # Keep everything tied with the limit-th score so ties resolve by row, not by chance.
                kth = np.partition(scores, rows.size - limit)[rows.size - limit]
                keep = scores >= kth
                rows, scores = rows[keep], scores[keep]
            found_rows.append(rows + lo)
            found_scores.append(scores)
        if not found_rows:
            return empty
        rows, scores = np.concatenate(found_rows), np.concatenate(found_scores)
        order = np.lexsort((rows, -scores))[:limit]
        return rows[order], scores[order]

    def _matched(self, query_tokens: Sequence[str]) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """Per segment holding a query term: its first row, the segment rows that hold one
        and their scores. Kept for the last query (one tuple, swapped atomically): the chunk
        step asks again for the same query within its top files (:meth:`top` with
        ``allowed``), and masking these costs a fraction of summing the postings again."""
        key = tuple(query_tokens)
        last = self._last
        if last is not None and last[0] == key:
            return last[1]
        cols, weights = self._query_columns(query_tokens)
        out = []
        if cols:
            idf = self.stats.idf(cols)
            for i, seg in enumerate(self.segments):
                posting_rows, values = self._postings(i, cols, weights, idf)
                if posting_rows.size == 0:
                    continue
                n = len(seg)
                if posting_rows.size * 8 < n:
                    # Few postings (a rare term, a small segment's): sum them by row, no array of n.
                    rows, inverse = np.unique(posting_rows, return_inverse=True)
                    scores = np.bincount(inverse, weights=values)  # added in the same order as below
                    rows = rows.astype(np.int64)
                else:
                    # Dense score vector plus a "contains a query term" mask: both O(postings), no sorting.
                    scores = np.bincount(posting_rows, weights=values, minlength=n)
                    matched = np.zeros(n, dtype=bool)
                    matched[posting_rows] = True
                    rows = np.flatnonzero(matched)
                    scores = scores[rows]
                out.append((int(self.offsets[i]), rows, scores))
        self._last = (key, out)
        return out

    def _query_columns(self, query_tokens: Sequence[str]) -> tuple[list[int], np.ndarray]:
        width = self.stats.width
        counts = Counter(col for col in self.vocab.columns(query_tokens) if col is not None and col < width)
        return list(counts), np.array(list(counts.values()), dtype=np.float64)

    # -- persistence --------------------------------------------------------------------

    @classmethod
    def load(cls, stats_dir: Path, segment_dirs: Sequence[Path], name: str, vocab) -> BM25Matrix:
        """Memory-map a generation's matrix: its statistics in ``stats_dir``, its rows in the
        segment folders, in order. Nothing is read until a query touches its columns."""
        return cls([Postings.load(d, name) for d in segment_dirs], CorpusStats.load(stats_dir, name), vocab)


__all__ = [
    "EPSILON",
    "K1",
    "B",
    "BM25Matrix",
    "CorpusStats",
    "Postings",
    "StoredVocabulary",
]
