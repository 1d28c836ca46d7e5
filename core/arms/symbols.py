"""``symbols``: the tree-sitter definitions as a structural signal.

Each chunk holding definitions becomes a small field-weighted document: their names (three
times, so a name match outweighs a passing mention), signatures, docstrings or leading
comments, and the components of its path. Windows are not in this arm: it only ranks
definitions.
"""

from __future__ import annotations

from ..types import STRUCTURAL, Chunk
from ._matrix import MatrixArm, MatrixBuild
from .protocol import ArmSpec

FIELDS = {"symbol": 3, "signature": 1, "docstring": 1, "path": 1}


def include(chunk: Chunk) -> bool:
    """Only chunks naming definitions or sections have a symbol document; of a definition cut
    into pieces, only the first (the others would repeat its document)."""
    if chunk.kind == "window" or not chunk.symbol:
        return False
    return chunk.piece_of is None or chunk.start_line == chunk.piece_of[0]


class SymbolsArm(MatrixArm):
    name = "symbols"
    matrix_name = "symbols"


SPEC = ArmSpec(
    SymbolsArm.name, STRUCTURAL, SymbolsArm, fused_by_default=True, weight=0.8,
    build=lambda _settings: MatrixBuild(SymbolsArm.matrix_name, FIELDS, include),
)
