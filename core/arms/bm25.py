"""``bm25``: BM25Okapi over code-aware tokens (identifiers whole and split) — the sub-token signal."""

from __future__ import annotations

from ..types import LEXICAL
from ._matrix import MatrixArm

#: Chunk fields counted into this arm's documents, with their weights.
FIELDS = {"text": 1}


class Bm25Arm(MatrixArm):
    name = "bm25"
    family = LEXICAL
    matrix_name = "bm25"
