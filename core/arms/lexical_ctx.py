"""``lexical+ctx``: BM25 over each chunk prefixed with its breadcrumb (path > Class > method).

A single-retriever mode for parity with contextual-BM25 tools; not fused by default, since it
would count the ``bm25`` evidence twice.
"""

from __future__ import annotations

from ..tokenize import code_token_counts
from ..types import LEXICAL, Chunk
from ._matrix import MatrixArm


def document(chunk: Chunk, text_counts: dict[str, int]) -> dict[str, int]:
    """The text's token counts plus those of the breadcrumb."""
    out = dict(text_counts)
    for token, n in code_token_counts(chunk.context).items():
        out[token] = out.get(token, 0) + n
    return out


class LexicalCtxArm(MatrixArm):
    name = "lexical+ctx"
    family = LEXICAL
    matrix_name = "ctx"
