"""BM25Okapi served from a sparse impact matrix.

rank-bm25's ``BM25Okapi.get_scores`` walks every document for every query term (~60 ms at
50k chunks). Its score is a sum over query terms of a per-(document, term) *impact*

    idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))

so we precompute the impacts once, with rank-bm25's exact statistics (its idf, including the
``epsilon * average_idf`` floor for negative idfs), into a term-major sparse matrix; a query is
then a handful of column slices (~0.4 ms), with identical scores.

Term frequencies are kept beside the impacts so an incremental index can drop and append rows
and re-derive the statistics without re-tokenizing unchanged chunks.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
from scipy import sparse

K1, B, EPSILON = 1.5, 0.75, 0.25


class BM25Matrix:
    """Term-frequency rows (one per document) and the BM25Okapi impacts derived from them.

    ``keys`` holds the caller's id of each row (chunk ids), so rows can be removed by id.
    """

    def __init__(
        self,
        tf: sparse.csr_matrix,
        vocab: list[str],
        keys: np.ndarray,
        *,
        k1: float = K1,
        b: float = B,
        epsilon: float = EPSILON,
    ) -> None:
        self.tf = tf
        self.vocab = vocab
        self.term_index = {t: i for i, t in enumerate(vocab)}
        self.keys = np.asarray(keys, dtype=np.int64)
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.impacts = self._impacts()

    # -- building -----------------------------------------------------------------------

    @classmethod
    def from_documents(
        cls, docs: Iterable[Sequence[str] | Mapping[str, int]], keys: Sequence[int] | np.ndarray | None = None, **params
    ) -> "BM25Matrix":
        """Build from tokenized (or counted) documents (``keys`` default to 0..n-1)."""
        vocab: list[str] = []
        tf = _tf_rows(docs, vocab, {})
        n = tf.shape[0]
        ks = np.arange(n, dtype=np.int64) if keys is None else np.asarray(keys, dtype=np.int64)
        if len(ks) != n:
            raise ValueError(f"{len(ks)} keys for {n} documents")
        return cls(tf, vocab, ks, **params)

    def updated(
        self,
        remove_keys: Iterable[int],
        docs: Iterable[Sequence[str] | Mapping[str, int]],
        keys: Sequence[int],
    ) -> "BM25Matrix":
        """A new matrix without the rows of ``remove_keys`` and with ``docs`` appended."""
        drop = np.isin(self.keys, np.fromiter(remove_keys, dtype=np.int64))
        kept = self.tf[~drop] if drop.any() else self.tf
        vocab = list(self.vocab)
        index = dict(self.term_index)
        new = _tf_rows(docs, vocab, index)
        width = len(vocab)
        kept = sparse.csr_matrix((kept.data, kept.indices, kept.indptr), shape=(kept.shape[0], width))
        new = sparse.csr_matrix((new.data, new.indices, new.indptr), shape=(new.shape[0], width))
        tf = sparse.vstack([kept, new], format="csr")
        ks = np.concatenate([self.keys[~drop], np.asarray(keys, dtype=np.int64)])
        return BM25Matrix(tf, vocab, ks, k1=self.k1, b=self.b, epsilon=self.epsilon)

    def _impacts(self) -> sparse.csc_matrix:
        tf = self.tf
        n = tf.shape[0]
        width = len(self.vocab)
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
        rows = np.repeat(np.arange(n), np.diff(tf.indptr))
        f = tf.data
        norm = self.k1 * (1 - self.b + self.b * doc_len[rows] / avgdl)
        data = idf[tf.indices] * (f * (self.k1 + 1) / (f + norm))
        return sparse.csr_matrix((data, tf.indices, tf.indptr), shape=tf.shape).tocsc()

    # -- querying -----------------------------------------------------------------------

    def __len__(self) -> int:
        return self.tf.shape[0]

    def get_scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """Scores of every row, equal to ``rank_bm25.BM25Okapi.get_scores`` (repeated terms count again)."""
        cols, weights = self._query_columns(query_tokens)
        if not cols:
            return np.zeros(len(self))
        return np.asarray(self.impacts[:, cols] @ weights).ravel()

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
        sub = self.impacts[:, cols]
        # Dense score vector plus a "contains a query term" mask: both O(postings), no sorting.
        scores = np.asarray(sub @ weights).ravel()
        matched = np.zeros(len(self), dtype=bool)
        matched[sub.indices] = True
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
        counts = Counter(t for t in query_tokens if t in self.term_index)
        cols = [self.term_index[t] for t in counts]
        return cols, np.array([float(counts[t]) for t in counts])

    # -- persistence --------------------------------------------------------------------

    def save(self, directory: Path, name: str) -> None:
        """Write ``name.npz`` (tf, impacts, keys) and ``name.vocab.json`` into ``directory``.

        The directory is a fresh generation folder that is renamed into place as a whole, so
        these writes need no temp files of their own.
        """
        imp = self.impacts
        np.savez(
            directory / f"{name}.npz",
            tf_data=self.tf.data.astype(np.float32),
            tf_indices=self.tf.indices,
            tf_indptr=self.tf.indptr,
            imp_data=imp.data,
            imp_indices=imp.indices,
            imp_indptr=imp.indptr,
            shape=np.array(self.tf.shape, dtype=np.int64),
            keys=self.keys,
            params=np.array([self.k1, self.b, self.epsilon]),
        )
        with open(directory / f"{name}.vocab.json", "w", encoding="utf-8") as fh:
            json.dump(self.vocab, fh, separators=(",", ":"))

    @classmethod
    def load(cls, directory: Path, name: str) -> "BM25Matrix":
        """Load a saved matrix without recomputing its impacts."""
        with np.load(directory / f"{name}.npz") as z:
            shape = tuple(int(x) for x in z["shape"])
            tf = sparse.csr_matrix(
                (z["tf_data"].astype(np.float64), z["tf_indices"], z["tf_indptr"]), shape=shape
            )
            imp = sparse.csc_matrix((z["imp_data"], z["imp_indices"], z["imp_indptr"]), shape=shape)
            keys = z["keys"]
            k1, b, eps = (float(x) for x in z["params"])
        with open(directory / f"{name}.vocab.json", encoding="utf-8") as fh:
            vocab = json.load(fh)
        self = cls.__new__(cls)
        self.tf, self.vocab, self.keys = tf, vocab, keys
        self.term_index = {t: i for i, t in enumerate(vocab)}
        self.k1, self.b, self.epsilon = k1, b, eps
        self.impacts = imp
        return self


def _tf_rows(
    docs: Iterable[Sequence[str] | Mapping[str, int]], vocab: list[str], index: dict[str, int]
) -> sparse.csr_matrix:
    """Count terms per document into CSR rows, growing ``vocab``/``index`` in place.

    A document is a token sequence or an already counted ``{term: count}`` mapping.
    """
    indptr = [0]
    indices: list[int] = []
    data: list[int] = []
    for doc in docs:
        counts = doc if isinstance(doc, Mapping) else Counter(doc)
        for term in counts.keys() - index.keys():  # set difference in C; new terms are rare
            index[term] = len(vocab)
            vocab.append(term)
        indices.extend(map(index.__getitem__, counts))
        data.extend(counts.values())
        indptr.append(len(indices))
    return sparse.csr_matrix(
        (np.array(data, dtype=np.float64), np.array(indices, dtype=np.int32), np.array(indptr, dtype=np.int64)),
        shape=(len(indptr) - 1, len(vocab)),
    )
