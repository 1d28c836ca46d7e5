"""BM25Okapi served from a sparse impact matrix.

rank-bm25's ``BM25Okapi.get_scores`` walks every document for every query term (~60 ms at
50k chunks). Its score is a sum over query terms of a per-(document, term) *impact*

    idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))

so we precompute the impacts once, with rank-bm25's exact statistics (its idf, including the
``epsilon * average_idf`` floor for negative idfs), into a term-major sparse matrix; a query is
then a handful of column slices (well under a millisecond), with identical scores.

Term frequencies are kept beside the impacts so an incremental index can drop and append rows
and re-derive the statistics without re-tokenizing unchanged chunks. Every matrix of an index
generation shares one :class:`Vocabulary`.

scipy is imported only to build or update a matrix: a query reads the impact columns straight
from the (memory-mapped) CSC arrays with numpy, and importing ``scipy.sparse`` costs ~0.3 s of
a warm start.
"""

from __future__ import annotations

import functools
import itertools
import json
import operator
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from typing import TYPE_CHECKING

import numpy as np

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

    def save(self, path: Path) -> None:
        # json.dumps, not json.dump: dump to a file encodes in Python, piece by piece (0.56 s
        # for the ~190k tokens of a 50k-chunk index, against ~0.05 s in C).
        Path(path).write_text(json.dumps(self.tokens, separators=(",", ":"), ensure_ascii=False), encoding="utf-8")
        _remember(_file_key(Path(path)), self.copy())  # the saver may go on growing its own

    @classmethod
    def load(cls, path: Path) -> "Vocabulary":
        """The vocabulary saved at ``path``, shared: a caller that grows it takes a :meth:`copy`.

        When the file is unchanged since this process last saved or loaded it, the same
        instance is returned (an index update reads the previous generation's vocabulary,
        0.36 s from JSON at 50k chunks, which the open index has usually loaded already).
        """
        path = Path(path)
        key = _file_key(path)
        with _recent_lock:
            found = _recent.get(key)
        if found is not None:
            return found
        with open(path, encoding="utf-8") as fh:
            vocab = cls(json.load(fh))
        _remember(key, vocab)
        return vocab

    def copy(self) -> "Vocabulary":
        out = Vocabulary.__new__(Vocabulary)
        out.tokens = list(self.tokens)
        out.index = dict(self.index)
        return out


# The vocabularies this process last saved or loaded, by file identity (device, inode, size,
# mtime: the indexer saves into a temporary generation folder that is then renamed). Shared
# and never mutated: the indexer grows a copy.
_recent: dict[tuple, Vocabulary] = {}
_recent_lock = threading.Lock()
_RECENT_MAX = 4


def _file_key(path: Path) -> tuple:
    st = path.stat()
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _remember(key: tuple, vocab: Vocabulary) -> None:
    with _recent_lock:
        _recent[key] = vocab
        while len(_recent) > _RECENT_MAX:
            del _recent[next(iter(_recent))]


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
    tf: dict[str, "sparse.csr_matrix"]


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

    def tf(self, name: str) -> "sparse.csr_matrix":
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
    """Term-frequency rows (one per document) and the BM25Okapi impacts derived from them.

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
        self._tf = widen(tf, len(vocab))
        self.keys = np.asarray(keys, dtype=np.int64)
        if len(self.keys) != self._tf.shape[0]:
            raise ValueError(f"{len(self.keys)} keys for {self._tf.shape[0]} documents")
        self.k1, self.b, self.epsilon = k1, b, epsilon
        impacts = self._impacts()
        self._columns = (impacts.data, impacts.indices, impacts.indptr)
        self._shape = impacts.shape
        self._impacts_csc = impacts
        self._tf_loader = None

    # -- building -----------------------------------------------------------------------

    @classmethod
    def from_documents(
        cls,
        docs: Iterable[Sequence[str] | Mapping[str, int]],
        keys: Sequence[int] | np.ndarray | None = None,
        **params,
    ) -> "BM25Matrix":
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

    @property
    def tf(self) -> sparse.csr_matrix:
        if self._tf is None:
            self._tf = self._tf_loader()
        return self._tf

    def updated(self, remove_keys: Iterable[int], tf_new: sparse.csr_matrix, keys: Sequence[int]) -> "BM25Matrix":
        """A new matrix without the rows of ``remove_keys`` and with ``tf_new`` appended.

        ``tf_new``'s columns are ids of this matrix's vocabulary, which may have grown.
        """
        from scipy import sparse

        drop = np.isin(self.keys, np.fromiter(remove_keys, dtype=np.int64))
        kept = self.tf[~drop] if drop.any() else self.tf
        width = len(self.vocab)
        tf = sparse.vstack([widen(kept, width), widen(tf_new, width)], format="csr")
        ks = np.concatenate([self.keys[~drop], np.asarray(keys, dtype=np.int64)])
        return BM25Matrix(tf, self.vocab, ks, k1=self.k1, b=self.b, epsilon=self.epsilon)

    def _impacts(self) -> "sparse.csc_matrix":
        from scipy import sparse

        tf = self._tf
        n, width = tf.shape
        if n == 0 or tf.nnz == 0:
            return sparse.csc_matrix((n, width), dtype=np.float64)
        doc_len = np.asarray(tf.sum(axis=1)).ravel()
        avgdl = doc_len.sum() / n
        df = np.bincount(tf.indices, minlength=width)
        present = df > 0
        idf = np.zeros(width)
        idf[present] = np.log(n - df[present] + 0.5) - np.log(df[present] + 0.5)
        # rank-bm25 averages over the terms of the corpus only, then floors negative idfs.
        average_idf = idf[present].sum() / present.sum()
        idf[present & (idf < 0)] = self.epsilon * average_idf
        # idf * f(k1+1) / (f + k1(1 - b + b|d|/avgdl)), with the per-document part computed
        # per document and in-place steps: the same operations on the same values (identical
        # impacts) with fewer nnz-sized temporaries (the indexer's peak memory).
        f = tf.data
        norm = np.repeat(self.k1 * (1 - self.b + self.b * doc_len / avgdl), np.diff(tf.indptr))
        norm += f
        data = f * (self.k1 + 1)
        data /= norm
        del norm
        data *= idf[tf.indices]
        return sparse.csr_matrix((data, tf.indices, tf.indptr), shape=tf.shape).tocsc()

    # -- querying -----------------------------------------------------------------------

    @property
    def impacts(self) -> "sparse.csc_matrix":
        """The impacts as a scipy CSC matrix (documents x terms), built on first use."""
        if self._impacts_csc is None:
            from scipy import sparse

            self._impacts_csc = sparse.csc_matrix(self._columns, shape=self._shape)
        return self._impacts_csc

    def __len__(self) -> int:
        return self._shape[0]

    def _postings(self, cols: list[int], weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows and weighted impacts of the query columns, column after column.

        Summing them per row in this order (``np.bincount``) adds exactly what scipy's
        ``impacts[:, cols] @ weights`` adds, in the same order, so the scores are identical.
        """
        data, indices, indptr = self._columns
        if len(cols) == 1:
            lo, hi = int(indptr[cols[0]]), int(indptr[cols[0] + 1])
            return np.asarray(indices[lo:hi]), np.asarray(data[lo:hi]) * weights[0]
        rows, values = [], []
        for col, weight in zip(cols, weights):
            lo, hi = int(indptr[col]), int(indptr[col + 1])
            rows.append(indices[lo:hi])
            values.append(data[lo:hi] * weight)
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
            col for col in map(self.vocab.index.get, query_tokens) if col is not None and col < width
        )
        return list(counts), np.array(list(counts.values()), dtype=np.float64)

    # -- persistence --------------------------------------------------------------------

    def save(self, directory: Path, name: str) -> None:
        """Write the matrix as ``.npy`` arrays (memory-mappable) plus a small JSON header.

        The directory is a fresh generation folder renamed into place as a whole, so these
        writes need no temp files of their own. The vocabulary is saved by the caller, once
        for all the matrices that share it.
        """
        imp, tf = self.impacts, self.tf
        arrays = {
            "imp.data": imp.data,
            "imp.indices": imp.indices,
            "imp.indptr": imp.indptr,
            "tf.data": tf.data.astype(np.float32),  # counts: exact in float32, half the bytes
            "tf.indices": tf.indices,
            "tf.indptr": tf.indptr,
            "keys": self.keys,
        }
        for part, array in arrays.items():
            np.save(directory / f"{name}.{part}.npy", np.ascontiguousarray(array))
        header = {"shape": list(tf.shape), "k1": self.k1, "b": self.b, "epsilon": self.epsilon}
        (directory / f"{name}.json").write_text(json.dumps(header), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path, name: str, vocab: Vocabulary) -> "BM25Matrix":
        """Memory-map a saved matrix; term frequencies are read only if :meth:`updated` needs them."""
        header = json.loads((directory / f"{name}.json").read_text(encoding="utf-8"))
        shape = tuple(header["shape"])

        def arr(part: str) -> np.ndarray:
            return np.load(directory / f"{name}.{part}.npy", mmap_mode="r")

        self = cls.__new__(cls)
        self.vocab = vocab
        self.keys = np.asarray(arr("keys"))
        self.k1, self.b, self.epsilon = header["k1"], header["b"], header["epsilon"]
        self._columns = (arr("imp.data"), arr("imp.indices"), arr("imp.indptr"))
        self._shape = shape
        self._impacts_csc = None
        self._tf = None

        def load_tf() -> "sparse.csr_matrix":
            from scipy import sparse

            return sparse.csr_matrix(
                (np.asarray(arr("tf.data"), dtype=np.float64), np.asarray(arr("tf.indices")), np.asarray(arr("tf.indptr"))),
                shape=shape,
            )

        self._tf_loader = load_tf
        return self


def widen(matrix: sparse.csr_matrix, width: int) -> sparse.csr_matrix:
    """The same rows with ``width`` columns (new vocabulary terms appear in no old row)."""
    if matrix.shape[1] == width:
        return matrix
    from scipy import sparse

    return sparse.csr_matrix((matrix.data, matrix.indices, matrix.indptr), shape=(matrix.shape[0], width))


__all__ = ["BM25Matrix", "TokenBatch", "TokenCounter", "TokenMerger", "Vocabulary", "count_batch", "K1", "B", "EPSILON"]
