"""``symbols``: the tree-sitter definitions as a structural signal.

Each chunk holding definitions becomes a small field-weighted document: their names (three
times, so a name match outweighs a passing mention), signatures, docstrings or leading
comments, and the components of its path. Windows are not in this arm: it only ranks
definitions.

A query that is one identifier (``TypeAdapter``, ``Rails::Engine``) asks where it is
defined: the chunks that define exactly that name come first, wherever BM25 would have put
them (under the query's qualifier first, then in the file named after it, then on the
shallower path), then the BM25 ranking. On the
public code-search benchmark this lifted the symbol questions 0.944 -> 0.969 with no
repository worse off: a trait whose long docs drown its name in BM25 (serde's
``Deserialize``) or one of many same-named classes (Laravel's ``Request``) was missing from
the arm's top 30.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..base.types import STRUCTURAL, Chunk, Hit
from ..text.names import name_key, path_depth, qualifiers, shape, stem_key
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
    compounds = True

    def search(self, query: str, limit: int, allowed: np.ndarray | None = None) -> list[Hit]:
        ranked = super().search(query, limit, allowed)
        q = shape(query)
        if not q.lookup or limit <= 0:
            return ranked
        table = self.view.chunks
        # As the definition signal compares: a capitalised name exactly, a lowercase one in any case.
        rows = list(
            dict.fromkeys(row for name in sorted(q.names) for row in table.definers(name, any_case=name.islower()))
        )
        if allowed is not None:
            rows = [r for r in rows if allowed[r]]
        if not rows:
            return ranked
        wanted = {name_key(n) for n in q.names}
        # ``Phoenix.Router``: a Router under Phoenix (its breadcrumb or path) before another.
        scope = qualifiers(q.text)

        paths, contexts = table.column("paths", rows), table.column("contexts", rows)

        def order(i: int) -> tuple:
            where = f"{paths[i]} {contexts[i]}".lower()
            return (not all(w in where for w in scope), stem_key(paths[i]) not in wanted, path_depth(paths[i]), rows[i])

        rows = [rows[i] for i in sorted(range(len(rows)), key=order)]
        first = table.hits(self.name, np.asarray(rows[:limit], dtype=np.int64), np.zeros(min(len(rows), limit)))
        seen = {h.docid for h in first}
        merged = first + [h for h in ranked if h.docid not in seen]
        return [replace(h, rank=i) for i, h in enumerate(merged[:limit], start=1)]


SPEC = ArmSpec(
    SymbolsArm.name,
    STRUCTURAL,
    SymbolsArm,
    fused_by_default=True,
    weight=0.4,  # 0.8 before ranklens's own model (issue #25); with deep as tuned then
    weight_with_deep=0.8,
    build=lambda _settings: MatrixBuild(SymbolsArm.matrix_name, FIELDS, include),
)
