"""Shared body of the arms served from a :class:`core.storage.bm25.BM25Matrix`: the search, and the
build that writes each segment's postings and each generation's statistics."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ..base.types import Chunk, Hit
from ..storage.store import IndexView
from ..text.tokenize import code_tokens, query_terms
from .protocol import ArmBuild, Documents, Generation, SegmentMerge


class MatrixArm:
    """An arm that scores the query's code tokens against one stored BM25 matrix."""

    name = ""
    matrix_name = ""
    #: Whether a question's adjacent words also count joined (``JSON object`` -> ``jsonobject``).
    compounds = False

    def __init__(self, view: IndexView) -> None:
        self.view = view
        self.matrix = view.matrix(self.matrix_name)
        # Matrix rows -> chunk rows, once per view (the matrix may hold a subset of chunks);
        # -1 for a row no longer live (its segment keeps it until a merge).
        self.chunk_rows = _chunk_rows(view, self.matrix)
        mask = self.chunk_rows >= 0
        self.base = None if mask.all() else mask
        # Matrix row i is chunk row i (every chunk in it, in order: the usual case): a mask
        # over the chunk rows is one over the matrix rows as it is.
        self._same_rows = self.base is None and np.array_equal(self.chunk_rows, np.arange(len(self.chunk_rows)))
        self._of_chunk: np.ndarray | None = None  # chunk row -> matrix row (see _matrix_rows)

    def query_tokens(self, query: str) -> list[str]:
        """The query's tokens; with :attr:`compounds`, also its runs of words joined as one
        identifier that the index holds (:func:`core.text.tokenize.query_terms`)."""
        if not self.compounds:
            return code_tokens(query)
        return query_terms(query, lambda terms: [c is not None for c in self.matrix.vocab.columns(terms)])

    def _matrix_rows(self) -> np.ndarray:
        """Each chunk row's matrix row (-1: none), made on the first search within files."""
        found = self._of_chunk
        if found is None:
            live = np.flatnonzero(self.chunk_rows >= 0)
            found = np.full(int(self.chunk_rows.max(initial=-1)) + 1, -1, dtype=np.int64)
            found[self.chunk_rows[live]] = live
            self._of_chunk = found
        return found

    def search(self, query: str, limit: int, allowed: np.ndarray | None = None) -> list[Hit]:
        rows, scores = self.scores(query, limit, allowed)
        return self.view.chunks.hits(self.name, rows, scores)

    def scores(
        self, query: str, limit: int, allowed: np.ndarray | None = None, among: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The best ``limit`` chunk rows and their scores, without building hits (the chunk
        step ranks every chunk of a file by them), among ``allowed`` (``among``: its rows,
        ascending, when the caller has them; a few rows are then looked up where the query's
        terms matched rather than masking every match)."""
        mask = self.base
        rows_among = None
        if allowed is not None:
            if self._same_rows and allowed.dtype == bool and len(allowed) == len(self.chunk_rows):
                mask = allowed
                rows_among = among  # matrix rows are chunk rows
            elif among is not None:
                # An index with tombstones or chunks outside the matrix: the few rows mapped to
                # matrix rows, not a mask over all of them (1.6 ms a call at 1.1M chunks).
                of = self._matrix_rows()
                mapped = of[among[among < len(of)]]
                rows_among = np.sort(mapped[mapped >= 0])
                mask = None
            else:
                mask = (self.chunk_rows >= 0) & allowed[np.maximum(self.chunk_rows, 0)]
        rows, scores = self.matrix.top(self.query_tokens(query), limit, mask, rows_among)
        return self.chunk_rows[np.asarray(rows, dtype=np.int64)], scores


def _chunk_rows(view: IndexView, matrix) -> np.ndarray:
    """Each matrix row's chunk row in the view (segment by segment: both run in the same
    segment order), -1 where the chunk is tombstoned."""
    chunks = view.chunks
    out = []
    for i, seg in enumerate(matrix.segments):
        local = chunks.tables[i].rows_for(np.asarray(seg.keys))
        rows = np.full(len(local), -1, dtype=np.int64)
        known = local >= 0
        rows[known] = chunks.segment_rows_of(i, local[known])
        out.append(rows)
    return np.concatenate(out) if out else np.empty(0, dtype=np.int64)


class MatrixBuild(ArmBuild):
    """Writes matrix ``name`` (the arm's name, which also keys its token counts): the postings
    of each new segment's documents (``<name>.*.npy`` in the segment) and the statistics of
    every live document in each generation (``<name>.df.npy`` and ``<name>.stats.json``).

    The chunking workers count the documents' tokens (:attr:`documents`). An update writes the
    new chunks' postings as a segment of their own and updates the previous generation's
    statistics: the removed documents' terms are read from their segments' postings (every
    term a removed row holds), the new ones' from the new segment. Nothing the size of the
    whole index is rewritten, and the scores stay those of one matrix over the live rows.
    """

    def __init__(self, name: str, fields: Mapping[str, float], include: Callable[[Chunk], bool] | None = None) -> None:
        self.name = name
        self.documents = Documents(fields, include)

    def write(self, gen: Generation) -> None:
        from ..storage.bm25 import CorpusStats, Postings

        removed = []
        for seg, ids in gen.removed_by_segment():
            postings = Postings.load(seg, self.name)
            rows = postings.rows_of(ids)
            if rows.size:
                mask = np.zeros(len(postings), dtype=bool)
                mask[rows] = True
                removed.append((postings, mask))
        added = []
        if gen.segment is not None:
            include = self.documents.include
            keys = gen.added_ids
            if include is not None:
                keys = keys[np.array([include(c) for c in gen.added], dtype=bool)]
            segment = Postings.from_tf(gen.tokens.tf(self.name), keys)
            segment.save(gen.segment, self.name)
            added.append(segment)
        prev = CorpusStats.load(gen.prev, self.name) if gen.prev is not None else CorpusStats.empty()
        prev.updated(len(gen.vocab), removed, added).save(gen.out, self.name)

    def merge(self, gen: Generation, merge: SegmentMerge) -> None:
        from ..storage.bm25 import Postings

        parts = []
        for folder in merge.sources:
            postings = Postings.load(folder, self.name)
            keep = ~np.isin(np.asarray(postings.keys), merge.dead)
            parts.append(postings if keep.all() else postings.kept(keep))
        Postings.concat(parts).save(merge.out, self.name)
