"""BM25Okapi served from a term-major sparse term-frequency matrix.

rank-bm25's ``BM25Okapi.get_scores`` walks every document for every query term (~60 ms at
50k chunks). Its score is a sum over query terms of a per-(document, term) *impact*

    idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))

so we keep the term frequencies term-major (CSC) with rank-bm25's exact statistics (its idf,
including the ``epsilon * average_idf`` floor for negative idfs, and each document's
``k1 * (1 - b + b * |d| / avgdl)``): a query computes the impacts of its few columns only
(well under a millisecond), with identical scores.

An incremental index drops and appends rows of the term-major arrays directly (the new rows
come last, so they go at the end of each column) and re-derives the statistics; no impact is
precomputed, so an update does not recompute 7 million of them. Every matrix of an index
shares one :class:`Vocabulary`.

scipy is imported only to build or update a matrix: a query reads the columns straight from
the (memory-mapped) arrays with numpy, and importing ``scipy.sparse`` costs ~0.3 s of a warm
start.
"""
from __future__ import annotations

import functools
import itertools
import json
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ._sqlite import sqlite3
from .store import Recent
from .tokenize import WORD, expansion

if TYPE_CHECKING:
    from scipy import sparse

K1, B, EPSILON = 1.5, 0.75, 0.25


class Vocabulary:
    """Token <-> column id. It only grows, so ids stay valid across incremental updates."""

    def __init__(self, tokens: Iterable[str] = ()) -> None:
        self.tokens: list[str] = list(tokens)
        self.index: dict[str, int] = dict(zip(self.tokens, range(len(self.tokens))))  # 2x a dictcomp

    def __len__(self) -> int:
        return len(self.tokens)

    def add(self, token: str) -> int:
        col = self.index.get(token)
        if col is None:
            col = self.index[token] = len(self.tokens)
            self.tokens.append(token)
        return col

    def columns(self, tokens: Sequence[str]) -> list[int | None]:
        """Each token's column, None for an unknown token."""
        return list(map(self.index.get, tokens))

    def add_all(self, tokens: Iterable[str]) -> list[int]:
        """:meth:`add` each token; one call per word's tokens (the counter adds ~1M a build)."""
        index, own = self.index, self.tokens
        cols = []
        for token in tokens:
            col = index.get(token)
            if col is None:
                col = index[token] = len(own)
                own.append(token)
            cols.append(col)
        return cols

    def copy(self) -> Vocabulary:
        out = Vocabulary.__new__(Vocabulary)
        out.tokens = list(self.tokens)
        out.index = dict(self.index)
        return out

    # -- in the index database (table ``vocab``, see core.store) ---------------------------

    @classmethod
    def read(cls, conn: sqlite3.Connection, stamp: str | None = None) -> Vocabulary:
        """The stored vocabulary, shared: a caller that grows it takes a :meth:`copy`.

        ``stamp`` names the stored state (the indexer writes a new one with every change);
        when this process last stored or read that state, the same instance is returned
        without reading the table again (0.2 s at 50k chunks).
        """
        key = (_db_name(conn), stamp) if stamp else None
        found = _recent.get(key)
        if found is not None:
            return found
        # One string from SQLite, split in C: 0.1 s for 190k tokens, a row per token 0.25 s.
        # Tokens are \w+ runs, so a newline never occurs in one.
        (joined,) = conn.execute("SELECT group_concat(token, char(10)) FROM (SELECT token FROM vocab ORDER BY col)").fetchone()
        vocab = cls(joined.split("\n") if joined else ())
        _recent.put(key, vocab)
        return vocab

    def store(self, conn: sqlite3.Connection, start: int, stamp: str) -> None:
        """Insert the tokens added since ``start`` (its length when read) and remember this
        state under ``stamp``; the caller commits, and stores ``stamp`` with it."""
        conn.executemany(
            "INSERT INTO vocab(token, col) VALUES (?, ?)",
            zip(self.tokens[start:], range(start, len(self.tokens))),
        )
        _recent.put((_db_name(conn), stamp), self.copy())  # the caller may go on growing its own


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


# The vocabularies this process last stored or read, by database and stamp. Shared and never
# mutated: the indexer grows a copy.
_recent = Recent(4)


def _db_name(conn: sqlite3.Connection) -> str:
    return next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")


class TokenCounter:
    """Code-token counts of many texts as a sparse matrix, fast.

    Words are found and counted in C (``re.findall`` + ``Counter``); each distinct word is
    expanded into its code tokens once (``word -> [whole, sub-words…]``); the token counts are
    then one sparse product ``W @ E`` (documents x words times words x tokens). The result equals
    counting :func:`core.tokenize.code_tokens` of each text.
    """

    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab
        self.words: dict[str, int] = {}
        self._expansions: list[list[int]] = []

    def word_counts(self, texts: Iterable[str]) -> sparse.csr_matrix:
        """Documents x distinct-words count matrix (columns grow as new words appear)."""
        from scipy import sparse

        indptr = [0]
        indices: list[int] = []
        data: list[int] = []
        words = self.words
        findall = WORD.findall
        last, row, values = None, [], []
        for text in texts:
            if text != last:  # neighbours often share a field (a file's path, an empty docstring)
                counts = Counter(findall(text))
                for word in [w for w in counts if w not in words]:
                    words[word] = len(self._expansions)
                    self._expansions.append(self.vocab.add_all(expansion(word)))
                last, row, values = text, list(map(words.__getitem__, counts)), list(counts.values())
            indices.extend(row)
            data.extend(values)
            indptr.append(len(indices))
        return sparse.csr_matrix(
            (np.array(data, dtype=np.float64), np.array(indices, dtype=np.int64), np.array(indptr, dtype=np.int64)),
            shape=(len(indptr) - 1, len(self._expansions)),
        )

    def token_counts(self, words: sparse.csr_matrix) -> sparse.csr_matrix:
        """Turn a word-count matrix (from :meth:`word_counts`) into token counts (tf)."""
        from scipy import sparse

        n_words = len(self._expansions)
        rows = np.repeat(np.arange(n_words), [len(e) for e in self._expansions])
        cols = np.fromiter(itertools.chain.from_iterable(self._expansions), dtype=np.int64, count=rows.size)
        expand = sparse.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n_words, len(self.vocab)))
        words = sparse.csr_matrix((words.data, words.indices, words.indptr), shape=(words.shape[0], n_words))
        tf = (words @ expand).tocsr()
        tf.sort_indices()
        return tf

    def count(self, texts: Iterable[str]) -> sparse.csr_matrix:
        return self.token_counts(self.word_counts(texts))

    def first_tokens(self, words: sparse.csr_matrix) -> np.ndarray:
        """The tokens of a word-count matrix's words, in order of the words' first appearance."""
        uniq, first = np.unique(words.indices, return_index=True)
        order = uniq[np.argsort(first, kind="stable")]
        return np.fromiter(
            itertools.chain.from_iterable(map(self._expansions.__getitem__, order.tolist())), dtype=np.int64
        )


@dataclass
class TokenBatch:
    """Token counts of one batch of documents, in the batch's own token ids (``tokens``).

    ``first[field]`` lists the tokens of the field's words in order of first appearance in
    the batch, so :class:`TokenMerger` can number tokens as one :class:`TokenCounter` pass
    over every batch would; ``tf[name]`` holds the term frequencies of a matrix's rows.
    """

    tokens: list[str]
    first: dict[str, np.ndarray]
    tf: dict[str, sparse.csr_matrix]


def count_batch(
    fields: Mapping[str, Sequence[str]], matrices: Mapping[str, tuple[Mapping[str, float], np.ndarray]]
) -> TokenBatch:
    """Count a batch of documents' fields into each matrix's term frequencies.

    ``fields`` maps a field name to one text per document; ``matrices`` maps a matrix name to
    its field weights and a boolean mask of the documents it holds. Runs anywhere (a chunking
    worker process): the result only names its own tokens.
    """
    counter = TokenCounter(Vocabulary())
    words, first = {}, {}
    for name in sorted(fields):  # the order TokenMerger numbers tokens in
        words[name] = counter.word_counts(fields[name])
        first[name] = counter.first_tokens(words[name])
    width = len(counter.words)
    tf = {}
    for name, (weights, rows) in matrices.items():
        parts = [weight * widen(words[f], width)[rows] for f, weight in weights.items()]
        tf[name] = counter.token_counts(functools.reduce(operator.add, parts))
    return TokenBatch(counter.vocab.tokens, first, tf)


class TokenMerger:
    """Joins :class:`TokenBatch` es, in order, into one vocabulary and tf matrix per name.

    The result is what counting every document in one :class:`TokenCounter` pass, field
    after field (sorted by name), gives: the same token ids (new tokens in order of first
    appearance, field-major) and the same term frequencies, so batches can be counted in
    worker processes while the indexer goes on.
    """

    def __init__(self, vocab: Vocabulary, names: Iterable[str]) -> None:
        self.vocab = vocab  # grown by finish()
        self._provisional = vocab.copy()  # tokens numbered in arrival order
        self._first: dict[str, list[np.ndarray]] = {}
        self._rows: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {name: [] for name in names}

    def add(self, batch: TokenBatch) -> None:
        ids = np.fromiter(map(self._provisional.add, batch.tokens), dtype=np.int64, count=len(batch.tokens))
        for name, tokens in batch.first.items():
            self._first.setdefault(name, []).append(ids[tokens])
        for name, tf in batch.tf.items():
            # Counts are small integers (exact in float32) and columns fit int32: half the memory.
            self._rows[name].append((tf.data.astype(np.float32), ids[tf.indices].astype(np.int32), np.diff(tf.indptr)))

    def finish(self) -> None:
        """Grow ``vocab`` by the batches' new tokens, numbered as one counting pass would."""
        base = len(self.vocab)
        seen = [ids for name in sorted(self._first) for ids in self._first[name]]
        order = np.concatenate(seen) if seen else np.empty(0, dtype=np.int64)
        order = order[order >= base]
        uniq, first = np.unique(order, return_index=True)
        new = uniq[np.argsort(first, kind="stable")]
        self._final = np.arange(len(self._provisional), dtype=np.int32)
        self._final[new] = base + np.arange(len(new))
        tokens = self._provisional.tokens
        for col in new.tolist():
            self.vocab.add(tokens[col])
        self._first.clear()

    def tf(self, name: str) -> sparse.csr_matrix:
        """The term frequencies of matrix ``name`` over the grown ``vocab`` (after :meth:`finish`);
        its batches are let go."""
        from scipy import sparse

        parts = self._rows.pop(name) or [(np.empty(0), np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int64))]
        lengths = np.concatenate([p[2] for p in parts])
        indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        indices = np.concatenate([p[1] for p in parts])
        np.take(self._final, indices, out=indices)
        data = np.concatenate([p[0] for p in parts]).astype(np.float64)
        del parts
        tf = sparse.csr_matrix((data, indices, indptr), shape=(len(lengths), len(self.vocab)))
        tf.sort_indices()
        return tf


class BM25Matrix:
    """Term frequencies (documents x terms, stored term-major) and the BM25Okapi statistics
    that turn a column into impacts.

    ``keys`` holds the caller's id of each row (chunk ids), so rows can be removed by id.
    """

    def __init__(
        self,
        tf: sparse.csr_matrix,
        vocab: Vocabulary,
        keys: Sequence[int] | np.ndarray,
        *,
        k1: float = K1,
        b: float = B,
        epsilon: float = EPSILON,
    ) -> None:
        self.vocab = vocab
        tf = widen(tf, len(vocab))
        self.keys = np.asarray(keys, dtype=np.int64)
        if len(self.keys) != tf.shape[0]:
            raise ValueError(f"{len(self.keys)} keys for {tf.shape[0]} documents")
        self.k1, self.b, self.epsilon = k1, b, epsilon
        doc_len = np.asarray(tf.sum(axis=1), dtype=np.float64).ravel()
        csc = tf.tocsc()
        csc.sort_indices()
        # Counts (or weighted counts) are small multiples of 1/2: exact in float32.
        self._set(csc.data.astype(np.float32), csc.indices.astype(np.int32, copy=False),
                  csc.indptr.astype(np.int64, copy=False), doc_len, tf.shape)

    def _set(self, data, indices, indptr, doc_len, shape) -> None:
        """Adopt term-major arrays and derive the statistics (as rank-bm25 does)."""
        self._columns = (data, indices, indptr)
        self._doc_len = doc_len
        self._shape = tuple(shape)
        n, width = self._shape
        self._idf = np.zeros(width)
        self._dnorm = np.zeros(n)
        if n == 0 or len(data) == 0:
            return
        avgdl = doc_len.sum() / n
        df = np.diff(indptr)
        present = df > 0
        idf = self._idf
        idf[present] = np.log(n - df[present] + 0.5) - np.log(df[present] + 0.5)
        # rank-bm25 averages over the terms of the corpus only, then floors negative idfs.
        average_idf = idf[present].sum() / present.sum()
        idf[present & (idf < 0)] = self.epsilon * average_idf
        self._dnorm = self.k1 * (1 - self.b + self.b * doc_len / avgdl)

    # -- building -----------------------------------------------------------------------

    @classmethod
    def from_documents(
        cls,
        docs: Iterable[Sequence[str] | Mapping[str, int]],
        keys: Sequence[int] | np.ndarray | None = None,
        **params,
    ) -> BM25Matrix:
        """Build from tokenized (or already counted) documents; ``keys`` default to 0..n-1."""
        from scipy import sparse

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
        return cls(tf, vocab, np.arange(n) if keys is None else keys, **params)

    def updated(self, remove_keys: Iterable[int], tf_new: sparse.csr_matrix, keys: Sequence[int]) -> BM25Matrix:
        """A new matrix without the rows of ``remove_keys`` and with ``tf_new`` appended.

        ``tf_new``'s columns are ids of this matrix's vocabulary, which may have grown. The
        term-major arrays are edited in place of a copy: the rows kept are renumbered, and the
        new rows (numbered after them) go at the end of each column, which is where a fresh
        conversion would put them, so the result equals building the matrix anew.
        """
        data, indices, indptr = self._columns
        _n_old, old_width = self._shape
        keep = ~np.isin(self.keys, np.fromiter(remove_keys, dtype=np.int64))
        if keep.all():
            data, indices, indptr = np.asarray(data), np.asarray(indices), np.asarray(indptr)
            doc_len = np.asarray(self._doc_len)
        else:
            entry_keep = keep[indices]
            before = np.zeros(len(entry_keep) + 1, dtype=np.int64)
            np.cumsum(entry_keep, out=before[1:])
            indptr = before[indptr]
            renumber = (np.cumsum(keep) - 1).astype(np.int32)
            indices = renumber[np.asarray(indices)[entry_keep]]
            data = np.asarray(data)[entry_keep]
            doc_len = np.asarray(self._doc_len)[keep]
        width = len(self.vocab)
        if width > old_width:
            indptr = np.concatenate([indptr, np.full(width - old_width, indptr[-1], dtype=np.int64)])
        new = widen(tf_new, width)
        n_kept = len(doc_len)
        new_csc = new.tocsc()
        new_csc.sort_indices()
        at = np.repeat(indptr[1:], np.diff(new_csc.indptr))  # the end of each column
        out = BM25Matrix.__new__(BM25Matrix)
        out.vocab, out.k1, out.b, out.epsilon = self.vocab, self.k1, self.b, self.epsilon
        out.keys = np.concatenate([self.keys[keep], np.asarray(keys, dtype=np.int64)])
        if len(out.keys) != n_kept + new.shape[0]:
            raise ValueError(f"{len(keys)} keys for {new.shape[0]} new documents")
        out._set(
            np.insert(data, at, new_csc.data.astype(np.float32)),
            np.insert(indices, at, (new_csc.indices + n_kept).astype(np.int32)),
            indptr + new_csc.indptr.astype(np.int64, copy=False),
            np.concatenate([doc_len, np.asarray(new.sum(axis=1), dtype=np.float64).ravel()]),
            (n_kept + new.shape[0], width),
        )
        return out

    # -- querying -----------------------------------------------------------------------

    def __len__(self) -> int:
        return self._shape[0]

    def _postings(self, cols: list[int], weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows and weighted impacts of the query columns, column after column.

        An impact is ``idf * (f (k1 + 1)) / (k1 (1 - b + b |d| / avgdl) + f)``, computed in that
        order for these postings only. Summing them per row in this order (``np.bincount``)
        adds exactly what a sparse product over the precomputed impacts would add.
        """
        data, indices, indptr = self._columns
        rows, values = [], []
        for col, weight in zip(cols, weights):
            lo, hi = int(indptr[col]), int(indptr[col + 1])
            at = np.asarray(indices[lo:hi])
            f = np.asarray(data[lo:hi], dtype=np.float64)
            impact = f * (self.k1 + 1)
            impact /= self._dnorm[at] + f
            impact *= self._idf[col]
            rows.append(at)
            values.append(impact * weight)
        if len(rows) == 1:
            return rows[0], values[0]
        return np.concatenate(rows), np.concatenate(values)

    def get_scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """Scores of every row, equal to ``rank_bm25.BM25Okapi.get_scores`` (repeated terms count again)."""
        cols, weights = self._query_columns(query_tokens)
        if not cols:
            return np.zeros(len(self))
        rows, values = self._postings(cols, weights)
        return np.bincount(rows, weights=values, minlength=len(self)).astype(np.float64, copy=False)

    def top(
        self, query_tokens: Sequence[str], limit: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Row positions and scores of the best ``limit`` rows that contain a query term.

        ``allowed`` is a boolean mask over rows (filters). Ties go to the earlier row.
        """
        cols, weights = self._query_columns(query_tokens)
        empty = np.empty(0, dtype=np.int64), np.empty(0)
        if not cols or limit <= 0:
            return empty
        posting_rows, values = self._postings(cols, weights)
        # Dense score vector plus a "contains a query term" mask: both O(postings), no sorting.
        scores = np.bincount(posting_rows, weights=values, minlength=len(self))
        matched = np.zeros(len(self), dtype=bool)
        matched[posting_rows] = True
        if allowed is not None:
            matched &= allowed
        rows = np.flatnonzero(matched)
        if rows.size == 0:
            return empty
        scores = scores[rows]
        if rows.size > limit:
            # Keep everything tied with the limit-th score so ties resolve by row, not by chance.
            kth = np.partition(scores, rows.size - limit)[rows.size - limit]
            keep = scores >= kth
            rows, scores = rows[keep], scores[keep]
        order = np.lexsort((rows, -scores))[:limit]
        return rows[order], scores[order]

    def _query_columns(self, query_tokens: Sequence[str]) -> tuple[list[int], np.ndarray]:
        width = self._shape[1]
        counts = Counter(
            col for col in self.vocab.columns(query_tokens) if col is not None and col < width
        )
        return list(counts), np.array(list(counts.values()), dtype=np.float64)

    # -- persistence --------------------------------------------------------------------

    _ARRAYS = ("tf.data", "tf.indices", "tf.indptr", "doc_len", "idf", "dnorm", "keys")

    def save(self, directory: Path, name: str) -> None:
        """Write the matrix as ``.npy`` arrays (memory-mappable) plus a small JSON header.

        The directory is a fresh generation folder renamed into place as a whole, so these
        writes need no temp files of their own. The vocabulary is stored by the caller, once
        for all the matrices that share it.
        """
        data, indices, indptr = self._columns
        arrays = (data, indices, indptr, self._doc_len, self._idf, self._dnorm, self.keys)
        for part, array in zip(self._ARRAYS, arrays):
            np.save(directory / f"{name}.{part}.npy", np.ascontiguousarray(array))
        header = {"shape": list(self._shape), "k1": self.k1, "b": self.b, "epsilon": self.epsilon}
        (directory / f"{name}.json").write_text(json.dumps(header), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path, name: str, vocab: Vocabulary | StoredVocabulary) -> BM25Matrix:
        """Memory-map a saved matrix: nothing is read until a query touches its columns."""
        header = json.loads((directory / f"{name}.json").read_text(encoding="utf-8"))
        # Plain ndarray views of the maps: slicing a np.memmap runs Python code per slice
        # (~0.8 ms of a query's column slices).
        data, indices, indptr, doc_len, idf, dnorm, keys = (
            np.load(directory / f"{name}.{part}.npy", mmap_mode="r").view(np.ndarray) for part in cls._ARRAYS
        )
        self = cls.__new__(cls)
        self.vocab = vocab
        self.keys = np.asarray(keys)
        self.k1, self.b, self.epsilon = header["k1"], header["b"], header["epsilon"]
        self._columns = (data, indices, indptr)
        self._doc_len, self._idf, self._dnorm = doc_len, idf, dnorm
        self._shape = tuple(header["shape"])
        return self


def widen(matrix: sparse.csr_matrix, width: int) -> sparse.csr_matrix:
    """The same rows with ``width`` columns (new vocabulary terms appear in no old row)."""
    if matrix.shape[1] == width:
        return matrix
    from scipy import sparse

    return sparse.csr_matrix((matrix.data, matrix.indices, matrix.indptr), shape=(matrix.shape[0], width))


__all__ = [
    "EPSILON",
    "K1",
    "B",
    "BM25Matrix",
    "StoredVocabulary",
    "TokenBatch",
    "TokenCounter",
    "TokenMerger",
    "Vocabulary",
    "count_batch",
]
