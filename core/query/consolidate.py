"""Span consolidation: the arms' rankings of one query become groups of overlapping spans.

Each arm ranks its own chunks; the same code is often ranked by several arms as different but
overlapping spans (two pieces of one long function). Hits whose line spans overlap (or, when
asked, touch: ``end + 1 == start``) in the same file form one :class:`Group`, and so do the
pieces of one definition (``Hit.piece_of``); the group keeps each arm's best-ranked member.
Grouping looks at spans and ranks only, never at weights or k, so a query's groups are made
once and every re-fuse (a slider move) starts from them (:mod:`core.query.pipeline`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..base.types import Hit, make_docid


def check_ranking(arm: str, hits: Sequence[Hit]) -> None:
    """The rules one arm's ranking must keep on its own: no chunk twice, finite scores, spans
    that start at line 1 or later and do not end before they start (ValueError otherwise)."""
    seen: set[str] = set()
    for hit in hits:
        if hit.docid in seen:
            raise ValueError(f"arm {arm}: chunk {hit.docid!r} appears twice")
        seen.add(hit.docid)
        if isinstance(hit.score, bool) or not math.isfinite(hit.score):
            raise ValueError(f"arm {arm}: non-finite score {hit.score!r} for {hit.docid!r}")
        if hit.start_line < 1 or hit.end_line < hit.start_line:
            raise ValueError(f"arm {arm}: bad span {hit.start_line}-{hit.end_line}")


def _check_rankings(per_arm_hits: Mapping[str, Sequence[Hit]]) -> None:
    spans: dict[str, tuple[str, int, int, str | None, str]] = {}
    for arm, hits in per_arm_hits.items():
        check_ranking(arm, hits)
        for hit in hits:
            prev = spans.get(hit.docid)
            if prev is None:
                spans[hit.docid] = (hit.path, hit.start_line, hit.end_line, hit.text, arm)
                continue
            same_place = prev[:3] == (hit.path, hit.start_line, hit.end_line)
            same_text = prev[3] is None or hit.text is None or prev[3] == hit.text
            if not (same_place and same_text):
                raise ValueError(f"chunk {hit.docid!r} differs between arms {prev[4]} and {arm}")


#: The widest span consolidation makes of overlapping hits: a chain of overlapping windows or
#: the pieces of a 1,000-line definition would otherwise become one hit of hundreds of lines,
#: no longer the size of an answer. Two budget-sized chunks (40 lines, 10 overlapping) fit.
MAX_GROUP_LINES = 80


def _groups(hits: list[Hit], merge_adjacent: bool, max_lines: int = MAX_GROUP_LINES) -> list[list[Hit]]:
    """Union overlapping (and, optionally, touching) spans of one file, transitively, and the
    pieces of one definition (``Hit.piece_of``) even where the pieces between them are absent,
    as long as the group spans at most ``max_lines`` lines; a hit that would widen it further
    starts a group of its own."""
    gap = 1 if merge_adjacent else 0
    hits.sort(key=lambda h: (h.start_line, h.end_line, h.docid, h.arm))
    groups: list[list[Hit]] = []
    start = end = -1
    pieces: set[tuple[int, int]] = set()  # the definitions the open group holds pieces of
    for hit in hits:
        joins = groups and (hit.start_line <= end + gap or (hit.piece_of is not None and hit.piece_of in pieces))
        if joins and max(end, hit.end_line) - start + 1 <= max(max_lines, hit.end_line - hit.start_line + 1):
            groups[-1].append(hit)
            end = max(end, hit.end_line)
        else:
            groups.append([hit])
            start, end = hit.start_line, hit.end_line
            pieces = set()
        if hit.piece_of is not None:
            pieces.add(hit.piece_of)
    return groups


class Group:
    """One group of overlapping spans: its extent and each arm's best-ranked member."""

    __slots__ = ("best", "contexts", "docid", "end_line", "memo", "path", "start_line", "symbols")

    def __init__(
        self,
        path: str,
        start_line: int,
        end_line: int,
        best: tuple[Hit, ...],
        docid: str | None = None,
        symbols: tuple[str, ...] = (),
    ) -> None:
        self.path = path
        self.start_line = start_line
        self.end_line = end_line
        self.docid = docid or make_docid(path, start_line, end_line)
        self.best = best  # each arm's best-ranked member, sorted by arm name
        self.symbols = symbols  # the names its members define (Hit.symbol fields)
        self.contexts = tuple(h.context for h in best)  # its members' breadcrumbs
        #: (its arms' weights (one: a float; several: a list), k, what its hit showed of its
        #: arms: :func:`core.query.labels._parts`) of the last fuse that made its hit; None before.
        self.memo: tuple | None = None

    def lead_key(self, i: int) -> tuple[bool, str]:
        """Among members contributing equally, the one whose breadcrumb the hit shows: a
        definition (its context is not just the path), then the larger docid."""
        h = self.best[i]
        return (h.context != self.path, h.docid)


@dataclass(frozen=True, slots=True)
class Groups:
    """A query's groups (:func:`group`), by path and then line; ``arms``: the arms ranked.

    Their members (each group's ``best``, in order) as arrays, for fusing every group at
    once: each member's group and arm (its position in ``arms``) and its rank, and where
    each group's members start (``bounds``, one more than the groups). ``paths``: the files,
    sorted; ``path_at``: each group's file, its position there (the groups' order is theirs).
    """

    groups: list[Group]
    arms: list[str]
    paths: list[str]
    path_at: np.ndarray
    member_group: np.ndarray
    member_arm: np.ndarray
    member_rank: np.ndarray
    bounds: np.ndarray
    #: What later stages work out of the groups alone, once per query (the file step's
    #: columns: :func:`core.query.ranking.rank_files`).
    memo: dict = field(default_factory=dict, compare=False, repr=False)


def group(per_arm_hits: Mapping[str, Sequence[Hit]], merge_adjacent: bool = True, check: bool = True) -> Groups:
    """The arms' rankings (arm -> its hits, ``Hit.rank`` 1-based) grouped: hits of one file
    whose spans overlap (and touch, with ``merge_adjacent``) or that are pieces of one
    definition, up to :data:`MAX_GROUP_LINES` lines a group. The result does not depend on
    the order of ``per_arm_hits``.

    ``check``: first check each ranking (:func:`check_ranking`) and that one chunk id names one
    span and text in every arm; ValueError otherwise (the engine checks its arms' rankings on
    their threads and passes False).
    """
    if check:
        _check_rankings(per_arm_hits)
    by_path: dict[str, list[Hit]] = {}
    for arm in sorted(per_arm_hits):
        for hit in per_arm_hits[arm]:
            by_path.setdefault(hit.path, []).append(hit)
    out: list[Group] = []
    append = out.append
    for path in sorted(by_path):
        hits = by_path[path]
        for members in _groups(hits, merge_adjacent) if len(hits) > 1 else (hits,):
            if len(members) == 1:  # most groups: one hit
                h = members[0]
                append(Group(path, h.start_line, h.end_line, (h,), h.docid, (h.symbol,) if h.symbol else ()))
                continue
            best: dict[str, Hit] = {}
            end = 0
            for hit in members:
                if hit.end_line > end:
                    end = hit.end_line
                cur = best.get(hit.arm)
                if cur is None or (hit.rank, hit.docid) < (cur.rank, cur.docid):
                    best[hit.arm] = hit
            # _groups sorted the members by start line.
            symbols = tuple(dict.fromkeys(h.symbol for h in members if h.symbol))
            append(Group(path, members[0].start_line, end, tuple(best[a] for a in sorted(best)), None, symbols))
    arms = sorted({h.arm for hits in per_arm_hits.values() for h in hits})
    at = {arm: i for i, arm in enumerate(arms)}
    sizes = [len(g.best) for g in out]
    members = [h for g in out for h in g.best]
    paths = sorted(by_path)
    at_path = {path: i for i, path in enumerate(paths)}
    return Groups(
        out,
        arms,
        paths,
        np.array([at_path[g.path] for g in out], dtype=np.int64),
        np.repeat(np.arange(len(out)), sizes),
        np.array([at[h.arm] for h in members], dtype=np.int64),
        np.array([h.rank for h in members], dtype=np.float64),
        np.concatenate(([0], np.cumsum(sizes, dtype=np.int64))),
    )
