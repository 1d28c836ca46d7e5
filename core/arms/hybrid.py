"""``hybrid``: bm25 and dense fused into one ranking (RRF, k=60), as hybrid-search tools do.

A single-retriever mode for comparison; never fused with ``bm25``/``dense`` themselves.
"""

from __future__ import annotations

import numpy as np

from ..base.rrf import reciprocal_rank_fusion
from ..base.types import SEMANTIC, Hit
from ..storage.store import IndexView
from .bm25 import Bm25Arm
from .dense import DenseArm
from .protocol import ArmSpec

RRF_K = 60


class HybridArm:
    name = "hybrid"

    def __init__(self, view: IndexView) -> None:
        self.parts = (Bm25Arm(view), DenseArm(view))

    def search(self, query: str, limit: int, allowed: np.ndarray | None = None) -> list[Hit]:
        rankings = [arm.search(query, limit, allowed) for arm in self.parts]
        by_id = {h.docid: h for ranking in rankings for h in ranking}
        fused = reciprocal_rank_fusion([[h.docid for h in r] for r in rankings], k=RRF_K)
        return [
            Hit(self.name, d, by_id[d].path, by_id[d].start_line, by_id[d].end_line, rank, score, by_id[d].context)
            for rank, (d, score) in enumerate(fused[:limit], start=1)
        ]


#: A single-retriever mode: fused with ``bm25``/``dense`` it would count their evidence twice.
SPEC = ArmSpec(HybridArm.name, SEMANTIC, HybridArm)
