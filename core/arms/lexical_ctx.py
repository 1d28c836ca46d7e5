"""``lexical+ctx``: BM25 over each chunk prefixed with its breadcrumb (path > Class > method).

A single-retriever mode for parity with contextual-BM25 tools; not fused by default, since it
would count the ``bm25`` evidence twice.
"""

from __future__ import annotations

from ..types import LEXICAL
from ._matrix import MatrixArm

FIELDS = {"text": 1, "context": 1}


class LexicalCtxArm(MatrixArm):
    name = "lexical+ctx"
    family = LEXICAL
    matrix_name = "ctx"
