"""``bm25``: BM25Okapi over code-aware tokens (identifiers whole and split) — the sub-token signal."""

from __future__ import annotations

from ..types import LEXICAL, Chunk
from ._matrix import MatrixArm


def document(chunk: Chunk, text_counts: dict[str, int]) -> dict[str, int]:
    """The chunk's BM25 document: the code-token counts of its text."""
    return text_counts


class Bm25Arm(MatrixArm):
    name = "bm25"
    family = LEXICAL
    matrix_name = "bm25"
