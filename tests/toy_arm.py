"""A toy retriever arm, written the way a new arm is: one module with its ``SPEC``.

``names`` ranks the chunks defining a name whose words the query holds (how many of them). Its
part of each generation is ``names.json`` (chunk id -> the defined names, lower case), updated
from the previous generation's. ``tests/test_arms.py`` registers it with one line and checks
the rest of ranklens builds, searches, fuses and lists it without another change.
"""

from __future__ import annotations

import json

import numpy as np

from ranklens.core.arms.protocol import ArmBuild, ArmSpec, ArmUnavailable, Generation
from ranklens.core.base.types import STRUCTURAL, Hit
from ranklens.core.storage.store import IndexView
from ranklens.core.text.tokenize import code_tokens

FILE = "names.json"


class NamesArm:
    name = "names"

    def __init__(self, view: IndexView) -> None:
        path = view.gen_dir / FILE
        if not path.exists():
            raise ArmUnavailable("not built")
        self.view = view
        self.names = {int(k): set(v.split()) for k, v in json.loads(path.read_text()).items()}

    def search(self, query: str, limit: int, allowed: np.ndarray | None = None) -> list[Hit]:
        words = set(code_tokens(query))
        scored = sorted(
            ((len(words & names), cid) for cid, names in self.names.items() if words & names),
            key=lambda t: (-t[0], t[1]),
        )
        ids = np.array([cid for _, cid in scored], dtype=np.int64)
        rows = self.view.chunks.rows_for(ids)
        keep = rows >= 0
        if allowed is not None:
            keep &= allowed[np.maximum(rows, 0)]
        keep = np.flatnonzero(keep)[:limit]
        return self.view.chunks.hits(self.name, rows[keep], [float(scored[i][0]) for i in keep.tolist()])


class NamesBuild(ArmBuild):
    def write(self, gen: Generation) -> None:
        names = json.loads((gen.prev / FILE).read_text()) if gen.prev is not None else {}
        for cid in gen.removed:
            names.pop(str(cid), None)
        for cid, chunk in zip(gen.added_ids.tolist(), gen.added):
            if chunk.symbol:
                names[str(cid)] = " ".join(code_tokens(chunk.symbol))
        (gen.out / FILE).write_text(json.dumps(names))


SPEC = ArmSpec(
    NamesArm.name,
    STRUCTURAL,
    NamesArm,
    fused_by_default=True,
    weight=0.3,
    weight_with_deep=0.2,
    build=lambda _settings: NamesBuild(),
)
