"""``symbols``: the tree-sitter definitions as a structural signal.

Each definition becomes a small field-weighted document: its name (three times, so a name
match outweighs a passing mention), its signature, its docstring or leading comment, and the
components of its path. Windows are not in this arm: it only ranks definitions.
"""

from __future__ import annotations

from collections import Counter

from ..tokenize import code_tokens
from ..types import STRUCTURAL, Chunk
from ._matrix import MatrixArm

NAME_WEIGHT = 3


def document(chunk: Chunk, text_counts: dict[str, int] | None = None) -> dict[str, int] | None:
    """The symbol document of a definition chunk; ``None`` for chunks this arm skips."""
    if chunk.kind == "window" or not chunk.symbol:
        return None
    return Counter(
        code_tokens(chunk.symbol) * NAME_WEIGHT
        + code_tokens(chunk.signature)
        + code_tokens(chunk.docstring)
        + code_tokens(chunk.path)
    )


class SymbolsArm(MatrixArm):
    name = "symbols"
    family = STRUCTURAL
    matrix_name = "symbols"
