"""``bm25``: BM25Okapi over code-aware tokens (identifiers whole and split) — the sub-token signal.

Each chunk's document is its text plus the tokens of its path (``core/arms/fts5.py`` gives
core, arms, fts5, fts, 5, py) and, for a definition, its symbol name: a question in other
words than the code's still meets the file and function names that say what the code is.
"""

from __future__ import annotations

from ..base.types import LEXICAL
from ._matrix import MatrixArm, MatrixBuild
from .protocol import ArmSpec

#: Chunk fields counted into this arm's documents, with their weights.
FIELDS = {"text": 1, "path": 1, "symbol": 1}


class Bm25Arm(MatrixArm):
    name = "bm25"
    matrix_name = "bm25"


SPEC = ArmSpec(
    Bm25Arm.name,
    LEXICAL,
    Bm25Arm,
    fused_by_default=True,
    # 1.2 with the model before ranklens's own: its dense arm now finds the function, so
    # bm25 weighs less (evals.tune_stage --spans --keep-files, issue #25)
    weight=0.4,
    weight_with_deep=0.8,
    build=lambda _settings: MatrixBuild(Bm25Arm.matrix_name, FIELDS),
)
