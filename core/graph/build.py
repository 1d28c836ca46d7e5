"""The index's part that keeps the uses: each new segment's inverted index of uses
(:class:`core.graph.uses.Uses`), written with the segment, merged with it.

It is a generation's part like an arm's (:class:`core.arms.protocol.ArmBuild`), so the edges
come and go with the chunks: a one-file update writes the new chunks' uses in its small segment
and tombstones the old ones with their chunks, a first build's partial generations carry the
uses of what they commit, and a merge drops the tombstoned rows. The names are hashed in the
chunking workers (:meth:`batch_task`), not in the indexing process, whose one GIL a cold build
waits on.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..arms.protocol import ArmBuild, Generation, IndexStats, SegmentMerge
from ..base.types import Chunk
from ..storage.chunktable import ChunkTable
from .uses import HashUses, Uses, hash_uses

#: The part's name among the arms' (its token counts and batch results are keyed by it).
NAME = "refs"


class UsesBuild(ArmBuild):
    """Writes :class:`Uses` into each new segment and each merged one."""

    def __init__(self, _settings=None) -> None:
        # Per prepared batch: its chunk ids and the hashes of their uses (a batch may be
        # prepared while the generation before its own is written).
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._edges = 0

    def batch_task(self) -> Callable[[list[Chunk]], object]:
        return HashUses()

    def prepare(self, ids: list[int], chunks: list[Chunk], done: object = None) -> None:
        if not (isinstance(done, tuple) and len(done) == 2 and len(done[1]) == len(ids)):
            done = hash_uses([c.refs for c in chunks])
        hashes, counts = done
        self._pending.append((np.asarray(ids, dtype=np.int64), hashes, counts))

    def write(self, gen: Generation) -> None:
        if gen.segment is None:
            return
        added = gen.added_ids
        last = int(added[-1]) if len(added) else -1
        mine = [p for p in self._pending if len(p[0]) and int(p[0][0]) <= last]
        self._pending = [p for p in self._pending if not (len(p[0]) and int(p[0][0]) <= last)]
        if mine:
            ids = np.concatenate([np.repeat(p[0], p[2]) for p in mine])
            hashes = np.concatenate([p[1] for p in mine])
        else:
            ids, hashes = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.uint64)
        rows = np.searchsorted(added, ids)
        known = (rows < len(added)) & (added[np.minimum(rows, len(added) - 1)] == ids) if len(added) else rows < 0
        self._edges += int(known.sum())
        Uses.of_pairs(hashes[known], rows[known]).save(gen.segment)

    def merge(self, gen: Generation, merge: SegmentMerge) -> None:
        hashes, ids = [], []
        for folder in merge.sources:
            table_ids = ChunkTable.load_dir(folder).ids
            h, rows = Uses.load(folder).pairs()
            hashes.append(h)
            ids.append(table_ids[rows])
        h = np.concatenate(hashes) if hashes else np.empty(0, dtype=np.uint64)
        cid = np.concatenate(ids) if ids else np.empty(0, dtype=np.int64)
        keep = ~np.isin(cid, merge.dead)
        h, cid = h[keep], cid[keep]
        rows = np.searchsorted(merge.ids, cid)
        Uses.of_pairs(h, rows).save(merge.out)

    def report(self, stats: IndexStats) -> None:
        stats.edges += self._edges

    def abandon(self) -> None:
        self._pending.clear()
