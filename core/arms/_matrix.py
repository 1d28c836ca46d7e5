"""Shared body of the arms served from a :class:`core.bm25.BM25Matrix`."""

from __future__ import annotations

import numpy as np

from ..store import IndexView
from ..tokenize import code_tokens
from ..types import Hit


class MatrixArm:
    """An arm that scores the query's code tokens against one stored BM25 matrix."""

    name = ""
    family = ""
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
