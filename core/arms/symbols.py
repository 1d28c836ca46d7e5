"""``symbols``: the tree-sitter definitions as a structural signal.

Each definition becomes a small field-weighted document: its name (three times, so a name
match outweighs a passing mention), its signature, its docstring or leading comment, and the
components of its path. Windows are not in this arm: it only ranks definitions.
"""

from __future__ import annotations

from ..types import STRUCTURAL, Chunk
from ._matrix import MatrixArm

FIELDS = {"symbol": 3, "signature": 1, "docstring": 1, "path": 1}


def include(chunk: Chunk) -> bool:
    """Only named definitions and sections have a symbol document."""
    return chunk.kind != "window" and bool(chunk.symbol)


class SymbolsArm(MatrixArm):
    name = "symbols"
    family = STRUCTURAL
    matrix_name = "symbols"
