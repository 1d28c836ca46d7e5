"""``fts5``: SQLite FTS5's native ``bm25()`` over the chunks — the exact-identifier signal.

The user's text never reaches FTS5's query parser: the application tokenizes it into whole
identifiers, quotes each one and joins them with OR, so ``NOT``, ``"``, ``*``, ``:`` or
``NEAR(`` in a query are just words.
"""

from __future__ import annotations

import numpy as np

from ..store import IndexView
from ..tokenize import identifiers
from ..types import LEXICAL, Hit


def match_expression(query: str) -> str:
    """The FTS5 MATCH string for a query: each distinct identifier quoted, OR-joined."""
    terms = list(dict.fromkeys(identifiers(query)))
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


class Fts5Arm:
    name = "fts5"
    family = LEXICAL

    def __init__(self, view: IndexView) -> None:
        self.view = view

    def search(self, query: str, limit: int, allowed: np.ndarray | None = None) -> list[Hit]:
        expr = match_expression(query)
        if not expr or limit <= 0:
            return []
        conn = self.view.connection()
        chunks = self.view.chunks
        fetch = limit if allowed is None else limit * 4
        while True:
            rows = conn.execute(
                "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts), rowid LIMIT ?",
                (expr, fetch),
            ).fetchall()
            ids = np.array([r[0] for r in rows], dtype=np.int64)
            pos = chunks.rows_for(ids)
            keep = pos >= 0
            if allowed is not None:
                keep &= allowed[np.maximum(pos, 0)]
            # With a filter, widen the pool until enough rows pass or FTS5 has no more.
            if allowed is None or keep.sum() >= limit or len(rows) < fetch:
                break
            fetch *= 4
        hits: list[Hit] = []
        for (rowid, score), row, ok in zip(rows, pos, keep):
            if ok:
                # FTS5's bm25() is lower-is-better (negative); report it as higher-is-better.
                hits.append(chunks.hit(self.name, int(row), len(hits) + 1, -score))
                if len(hits) == limit:
                    break
        return hits
