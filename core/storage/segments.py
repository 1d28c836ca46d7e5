"""The segments of an index: what each generation is made of, and when segments merge.

An index is a list of immutable *segments* (``seg-N/`` folders: a run of chunks with ascending
ids, their chunk table and each arm's part: BM25 postings, vectors) plus, per generation, the
ids of the chunks removed since their segment was written (*tombstones*) and the statistics
that span segments (BM25's document frequencies over the live chunks). A generation's
``segments.json`` lists its segments in order; their chunks, concatenated, are the rows the
arms answer with, ids ascending throughout (a segment's ids all exceed the previous one's,
merges join neighbours only), and ``dead.npy`` the tombstoned ids among them.

* A **cold build** flushes a segment every :data:`SEGMENT_CHUNKS` chunks and commits a
  generation with it: memory stays bounded by a segment, and a build killed at any point
  resumes after the last committed segment (its files are known, their chunks embedded and
  counted). Its first segments are smaller (:data:`FIRST_SEGMENT_CHUNKS`, doubling), so the
  first files are searchable within seconds while the rest are indexed.
* An **update** writes one small segment with the new chunks of the changed files and
  tombstones their old ones: no array of the whole index is rewritten.
* **Merges** keep the number of segments bounded (:func:`plan_merges`): a run of small
  neighbouring segments becomes one, and a segment that is mostly tombstones is rewritten
  without them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..base import npyfile

#: A cold build flushes (and commits) a segment every this many chunks. 32k chunks take about
#: 150 MB to hold while they are written (texts, token counts, vectors); the Linux sources
#: (1.1M chunks) make 35 segments, and a build killed half way loses at most one.
SEGMENT_CHUNKS = 32_768
#: A pass's first segment holds at most this many chunks, and each next one twice as many as
#: the one before, up to :data:`SEGMENT_CHUNKS`: a first build (or a large change) commits its
#: first files within seconds, and a question asked meanwhile is answered from them (issue
#: 36). A pass of fewer chunks commits once, as before; a larger one commits up to 5 more
#: generations on its way to 32k chunks. 1,024 (~80 files of a 41k-chunk repository) rather
#: than 512 or 256: no earlier first answer showed through the shared machine's noise, and
#: twice the files to answer from (docs/appendix/bench-first-answer.md).
FIRST_SEGMENT_CHUNKS = 1024
#: Segments under this many rows are "small" (an update's); a run of :data:`MERGE_RUN` or more
#: neighbouring small ones is merged into one.
SMALL_SEGMENT = SEGMENT_CHUNKS // 4
MERGE_RUN = 8
#: A segment with at least this share of its rows tombstoned is rewritten without them.
EXPUNGE_SHARE = 0.4

MANIFEST = "segments.json"
DEAD = "dead.npy"


def seg_dir_name(number: int) -> str:
    return f"seg-{number:06d}"


@dataclass(frozen=True)
class SegmentRef:
    """One segment as a generation lists it: its folder's name, its number of chunk rows, and
    its first and last chunk id."""

    name: str
    rows: int
    first: int
    last: int

    def to_dict(self) -> dict:
        return {"name": self.name, "rows": self.rows, "first": self.first, "last": self.last}


@dataclass
class Manifest:
    """A generation's segments, in order, and the ids tombstoned among their chunks (sorted)."""

    segments: list[SegmentRef]
    dead: np.ndarray

    @property
    def rows(self) -> int:
        return sum(s.rows for s in self.segments)

    @property
    def live(self) -> int:
        return self.rows - len(self.dead)

    def dead_in(self, seg: SegmentRef) -> np.ndarray:
        """The tombstoned ids of ``seg``."""
        lo = np.searchsorted(self.dead, seg.first, side="left")
        hi = np.searchsorted(self.dead, seg.last, side="right")
        return self.dead[lo:hi]

    def save(self, directory: Path) -> None:
        (directory / MANIFEST).write_text(
            json.dumps({"segments": [s.to_dict() for s in self.segments]}), encoding="utf-8"
        )
        np.save(directory / DEAD, np.ascontiguousarray(self.dead, dtype=np.int64))

    @classmethod
    def load(cls, directory: Path) -> Manifest:
        data = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        dead = npyfile.load(directory / DEAD)
        return cls([SegmentRef(**s) for s in data["segments"]], np.asarray(dead, dtype=np.int64))

    @classmethod
    def empty(cls) -> Manifest:
        return cls([], np.empty(0, dtype=np.int64))


def plan_merges(manifest: Manifest) -> list[list[int]]:
    """Which segments to merge now: runs of neighbouring segment positions, each run becoming
    one segment (a run of one: rewritten without its tombstones; with no live row left, dropped).

    * A run of :data:`MERGE_RUN` or more neighbouring small segments (under
      :data:`SMALL_SEGMENT` live rows, an update's) is merged, so the segments updates add stay
      few; the merged one passes :data:`SMALL_SEGMENT` after a few rounds and is then only
      ever rewritten alone.
    * A segment with :data:`EXPUNGE_SHARE` of its rows tombstoned is rewritten without them.

    Merging only neighbours keeps chunk ids ascending across the segments.
    """
    segs = manifest.segments
    live = [s.rows - len(manifest.dead_in(s)) for s in segs]
    mostly_dead = [s.rows == 0 or 1 - lv / s.rows >= EXPUNGE_SHARE for s, lv in zip(segs, live)]
    runs: list[list[int]] = []
    i = 0
    while i < len(segs):
        if live[i] < SMALL_SEGMENT:
            j = i
            while j < len(segs) and live[j] < SMALL_SEGMENT:
                j += 1
            if j - i >= MERGE_RUN:
                runs.append(list(range(i, j)))
            else:
                runs.extend([k] for k in range(i, j) if mostly_dead[k])
            i = j
        else:
            if mostly_dead[i]:
                runs.append([i])
            i += 1
    return runs
