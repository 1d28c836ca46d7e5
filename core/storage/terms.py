"""Counting tokens into term frequencies while an index is built.

The lexical matrices (:mod:`core.storage.bm25`) are built from the code tokens of each chunk's
fields (:func:`core.text.tokenize.code_tokens`), counted here: :class:`TokenCounter` counts many
texts at once into a sparse documents x tokens matrix; a chunking worker counts its batch with
:func:`count_batch` into a :class:`TokenBatch`, in the batch's own token ids, and the indexer
joins the batches, in order, with :class:`TokenMerger` into the index's vocabulary and one tf
matrix per lexical matrix, as one counting pass over every document would.

The vocabulary (token <-> column) only grows, so columns stay valid across generations: a
:class:`Vocabulary` in memory, or the index's ``vocab`` table as an update grows it
(:class:`IndexVocabulary`). A query reads that table through
:class:`core.storage.bm25.StoredVocabulary`.

scipy is imported only when counting, not with this module.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..base._sqlite import sqlite3
from ..text.tokenize import WORD, expansion

if TYPE_CHECKING:
    from scipy import sparse


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

    # -- in the index database (table ``vocab``, see core.storage.store) ---------------------------

    @classmethod
    def read(cls, conn: sqlite3.Connection) -> Vocabulary:
        """The whole stored vocabulary (an index update reads only what it needs:
        :class:`IndexVocabulary`)."""
        tokens: list = []
        for token, col in conn.execute("SELECT token, col FROM vocab"):
            if col >= len(tokens):
                tokens.extend([None] * (col + 1 - len(tokens)))
            tokens[col] = token
        return cls(tokens)

    def store(self, conn: sqlite3.Connection, start: int) -> None:
        """Insert the tokens added since ``start`` (its length when read); the caller commits."""
        conn.executemany(
            "INSERT INTO vocab(token, col) VALUES (?, ?)",
            zip(self.tokens[start:], range(start, len(self.tokens))),
        )


class TokenCounter:
    """Code-token counts of many texts as a sparse matrix, fast.

    Words are found and counted in C (``re.findall`` + ``Counter``); each distinct word is
    expanded into its code tokens once (``word -> [whole, sub-words…]``); the token counts are
    then one sparse product ``W @ E`` (documents x words times words x tokens). The result equals
    counting :func:`core.text.tokenize.code_tokens` of each text.
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


class IndexVocabulary:
    """The index's vocabulary as an index update grows it.

    Tokens are looked up in the ``vocab`` table when a batch first needs them (an update of a
    few files reads a few thousand rows, not the whole table: 0.2 s at 50k chunks, seconds and
    hundreds of MB on the Linux sources), or all read up front for a pass large enough to meet
    most of them (``preload``). New tokens get the columns after the stored ones;
    :meth:`store` inserts them, in the caller's transaction.
    """

    def __init__(self, conn: sqlite3.Connection, size: int | None = None, *, preload: bool = False) -> None:
        if size is None:  # the columns run 0..n-1
            (size,) = conn.execute("SELECT COUNT(*) FROM vocab").fetchone()
        self._stored = int(size)
        self._conn = conn
        self._added: list[str] = []
        self._saved = 0  # of _added, inserted into the table
        self.index: dict[str, int] = {}
        self._complete = self._stored == 0
        if preload and not self._complete:
            self.index = dict(conn.execute("SELECT token, col FROM vocab"))
            self._complete = True

    def __len__(self) -> int:
        return self._stored + len(self._added)

    def columns(self, tokens: Sequence[str]) -> list[int | None]:
        """Each token's column, None for one the index has never seen."""
        index = self.index
        if not self._complete:
            missing = [t for t in dict.fromkeys(tokens) if t not in index]
            for start in range(0, len(missing), 500):
                part = missing[start : start + 500]
                marks = ",".join("?" * len(part))
                index.update(self._conn.execute(f"SELECT token, col FROM vocab WHERE token IN ({marks})", part))
        return list(map(index.get, tokens))

    def add(self, token: str) -> int:
        col = self.index.get(token)
        if col is None:
            col = self.index[token] = len(self)
            self._added.append(token)
        return col

    def store(self, conn: sqlite3.Connection) -> None:
        """Insert the tokens added since the last call (the caller commits)."""
        start = self._stored + self._saved
        conn.executemany(
            "INSERT INTO vocab(token, col) VALUES (?, ?)",
            zip(self._added[self._saved :], range(start, start + len(self._added) - self._saved)),
        )
        self._saved = len(self._added)


class TokenMerger:
    """Joins :class:`TokenBatch` es, in order, into one vocabulary and tf matrix per name.

    The result is what counting every document in one :class:`TokenCounter` pass, field
    after field (sorted by name), gives: the same token ids (new tokens in order of first
    appearance, field-major) and the same term frequencies, so batches can be counted in
    worker processes while the indexer goes on. ``vocab`` is a :class:`Vocabulary` or an
    :class:`IndexVocabulary`; only the tokens new to it are held here.
    """

    def __init__(self, vocab: Vocabulary | IndexVocabulary, names: Iterable[str]) -> None:
        self.vocab = vocab  # grown by finish()
        self._base = len(vocab)
        self._new: dict[str, int] = {}  # tokens new to the vocabulary -> provisional column, in arrival order
        self._first: dict[str, list[np.ndarray]] = {}
        self._rows: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {name: [] for name in names}

    def add(self, batch: TokenBatch) -> None:
        new, base = self._new, self._base
        ids = np.fromiter(
            (
                col if col is not None else new.setdefault(token, base + len(new))
                for token, col in zip(batch.tokens, self.vocab.columns(batch.tokens))
            ),
            dtype=np.int64,
            count=len(batch.tokens),
        )
        for name, tokens in batch.first.items():
            self._first.setdefault(name, []).append(ids[tokens])
        for name, tf in batch.tf.items():
            # Counts are small integers (exact in float32) and columns fit int32: half the memory.
            self._rows[name].append((tf.data.astype(np.float32), ids[tf.indices].astype(np.int32), np.diff(tf.indptr)))

    def finish(self) -> None:
        """Grow ``vocab`` by the batches' new tokens, numbered as one counting pass would."""
        base = self._base
        seen = [ids for name in sorted(self._first) for ids in self._first[name]]
        order = np.concatenate(seen) if seen else np.empty(0, dtype=np.int64)
        order = order[order >= base]
        uniq, first = np.unique(order, return_index=True)
        new = uniq[np.argsort(first, kind="stable")]
        self._final = np.empty(len(self._new), dtype=np.int32)
        self._final[new - base] = base + np.arange(len(new))
        tokens = list(self._new)
        for col in new.tolist():
            self.vocab.add(tokens[col - base])
        self._first.clear()
        self._new = {}

    def tf(self, name: str) -> sparse.csr_matrix:
        """The term frequencies of matrix ``name`` over the grown ``vocab`` (after :meth:`finish`);
        its batches are let go."""
        from scipy import sparse

        parts = self._rows.pop(name) or [(np.empty(0), np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int64))]
        lengths = np.concatenate([p[2] for p in parts])
        indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        indices = np.concatenate([p[1] for p in parts])
        renamed = indices >= self._base
        indices[renamed] = self._final[indices[renamed] - self._base]
        data = np.concatenate([p[0] for p in parts]).astype(np.float64)
        del parts
        tf = sparse.csr_matrix((data, indices, indptr), shape=(len(lengths), len(self.vocab)))
        tf.sort_indices()
        return tf


def widen(matrix: sparse.csr_matrix, width: int) -> sparse.csr_matrix:
    """The same rows with ``width`` columns (new vocabulary terms appear in no old row)."""
    if matrix.shape[1] == width:
        return matrix
    from scipy import sparse

    return sparse.csr_matrix((matrix.data, matrix.indices, matrix.indptr), shape=(matrix.shape[0], width))


__all__ = [
    "IndexVocabulary",
    "TokenBatch",
    "TokenCounter",
    "TokenMerger",
    "Vocabulary",
    "count_batch",
    "widen",
]
