"""``lexical+ctx``: BM25 over each chunk prefixed with its breadcrumb (path > Class > method).

A single-retriever mode for parity with contextual-BM25 tools; not fused by default, since it
would count the ``bm25`` evidence twice. On both labeled sets it scores within 0.012 of ``bm25``
(whose documents already hold the path and symbol tokens). Its matrix is written with the
others in every generation (the breadcrumb's tokens are counted in the chunking workers beside
the text's, and an update edits the matrix in place), so opening it reads a few memory maps.
"""

from __future__ import annotations

from ..base.types import LEXICAL
from ._matrix import MatrixArm, MatrixBuild
from .protocol import ArmSpec

FIELDS = {"text": 1, "context": 1}


class LexicalCtxArm(MatrixArm):
    name = "lexical+ctx"
    matrix_name = "lexical+ctx"


#: A single-retriever mode: fused with ``bm25`` it would count that evidence twice.
SPEC = ArmSpec(
    LexicalCtxArm.name,
    LEXICAL,
    LexicalCtxArm,
    build=lambda _settings: MatrixBuild(LexicalCtxArm.matrix_name, FIELDS),
)
