"""Shared body of the arms served from a :class:`core.bm25.BM25Matrix`: the search, and the
build that writes or updates the matrix in each generation."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ..store import IndexView
from ..tokenize import code_tokens
from ..types import Chunk, Hit
from .protocol import ArmBuild, Documents, Generation


class MatrixArm:
    """An arm that scores the query's code tokens against one stored BM25 matrix."""

    name = ""
    matrix_name = ""

    def __init__(self, view: IndexView) -> None:
        self.view = view
        self.matrix = view.matrix(self.matrix_name)
        # Matrix rows -> chunk rows, once per view (the matrix may hold a subset of chunks).
        self.chunk_rows = view.chunks.rows_for(self.matrix.keys)

    def search(self, query: str, limit: int, allowed: np.ndarray | None = None) -> list[Hit]:
        mask = self.chunk_rows >= 0
        if allowed is not None:
            mask = mask & allowed[np.maximum(self.chunk_rows, 0)]
        rows, scores = self.matrix.top(code_tokens(query), limit, mask)
        return self.view.chunks.hits(self.name, self.chunk_rows[np.asarray(rows, dtype=np.int64)], scores)


class MatrixBuild(ArmBuild):
    """Writes matrix ``name`` (``<name>.*.npy`` in the generation; the arm's name, which also
    keys its token counts) over its documents.

    The chunking workers count the documents' tokens (:attr:`documents`); an update drops the
    rows of the removed chunks from the previous generation's matrix and appends the new
    ones, editing its term-major arrays instead of rebuilding them (:meth:`BM25Matrix.updated`).
    """

    def __init__(self, name: str, fields: Mapping[str, float], include: Callable[[Chunk], bool] | None = None) -> None:
        self.name = name
        self.documents = Documents(fields, include)

    def write(self, gen: Generation) -> None:
        from ..bm25 import BM25Matrix

        include = self.documents.include
        keys = gen.added_ids
        if include is not None:
            keys = keys[np.array([include(c) for c in gen.added], dtype=bool)]
        tf = gen.tokens.tf(self.name)
        if gen.prev is not None:
            matrix = BM25Matrix.load(gen.prev, self.name, gen.vocab).updated(gen.removed, tf, keys)
        else:
            matrix = BM25Matrix(tf, gen.vocab, keys)
        matrix.save(gen.out, self.name)
