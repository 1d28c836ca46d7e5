"""Span consolidation: overlapping hits of one file become one fused, explained hit.

Each arm ranks its own chunks; the same code is often ranked by several arms as different but
overlapping spans (two pieces of one long function). Hits whose line spans overlap or touch
(``end + 1 == start``) in the same file form one group, and so do the pieces of one definition
(``Hit.piece_of``); the group takes each arm's best rank, and those ranks are fused with
weighted RRF (see :mod:`core.fusion`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence

from .chunkstep import Provider, distinct_units, explain, shown_span
from .fusion import check_k, check_weights, fused_score, rrf_share
from .ranking import Stage
from .types import (
    AppliedPrior,
    ConsolidatedHit,
    Contribution,
    Hit,
    make_docid,
)

HIGH, MEDIUM, LOW = "high", "medium", "low"


#: An arm votes for a hit (``agreement``) when the hit is within its own top this many: a
#: hit at an arm's 25th place is not that arm's opinion. Measured on the public benchmark's
#: top 10 (README, "Agreement and confidence"): depth 5 separates medium from low best.
AGREEMENT_DEPTH = 5
#: ``high``: the hit scores at least this share of the query's best hit (and one arm votes).
HIGH_SHARE = 0.9
#: ``medium``: the hit scores at least this share of the best, or this many arms vote.
MEDIUM_SHARE = 0.5
MEDIUM_VOTES = 2


def confidence(share: float, votes: int, defines: bool = False) -> str:
    """How much to trust a hit, from the evidence behind it.

    ``share``: its score over the query's best hit's; ``votes``: the arms that rank it within
    their top :data:`AGREEMENT_DEPTH`; ``defines``: it defines a symbol the query names.
    ``high``: it defines a named symbol, or it scores within 10 % of the best and an arm
    votes for it. ``medium``: it scores at least half the best, or two arms vote for it.
    ``low``: anything else. How often each level is right on the public benchmark:
    :mod:`core.calibration` (measured, and quoted by the help, the README and the docs).
    """
    if defines or (share >= HIGH_SHARE and votes >= 1):
        return HIGH
    if share >= MEDIUM_SHARE or votes >= MEDIUM_VOTES:
        return MEDIUM
    return LOW


def label(hits: Sequence[ConsolidatedHit], best: float | None = None) -> None:
    """Set each hit's ``confidence`` from its score against ``best`` (default: the best
    score among ``hits``), its agreement and its signals."""
    if best is None:
        best = max((h.score for h in hits), default=0.0)
    for h in hits:
        share = h.score / best if best > 0 else 0.0
        defines = any(s.name == "definition" for s in h.signals)
        h.confidence = confidence(share, h.agreement, defines)


def voters(hit: ConsolidatedHit) -> list[str]:
    """The arms that vote for ``hit``: those of its ``provenance`` (every arm that ranked it,
    at any depth) that rank it within their top :data:`AGREEMENT_DEPTH`. ``agreement`` is
    their number; the TUI's ``via`` shows them in capitals, the other arms of ``provenance``
    in lowercase."""
    ranked = set(hit.provenance)
    return [c.arm for c in hit.contributors if c.arm in ranked and c.rank <= AGREEMENT_DEPTH]


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


class Groups:
    """Overlapping spans grouped once; :meth:`fuse` scores them for any weights and k.

    Grouping depends only on the spans, not on weights or k, so re-fusing cached rankings
    (a slider move) skips straight to the arithmetic.
    """

    def __init__(
        self,
        per_arm_hits: Mapping[str, Sequence[Hit]],
        merge_adjacent: bool = True,
        check: bool = True,
    ) -> None:
        if check:
            _check_rankings(per_arm_hits)
        by_path: dict[str, list[Hit]] = {}
        for arm in sorted(per_arm_hits):
            for hit in per_arm_hits[arm]:
                by_path.setdefault(hit.path, []).append(hit)
        self.groups: list[_Group] = []
        append = self.groups.append
        for path in sorted(by_path):
            hits = by_path[path]
            for members in _groups(hits, merge_adjacent) if len(hits) > 1 else (hits,):
                if len(members) == 1:  # most groups: one hit
                    h = members[0]
                    append(_Group(path, h.start_line, h.end_line, (h,), h.docid, (h.symbol,) if h.symbol else ()))
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
                append(_Group(path, members[0].start_line, end, tuple(best[a] for a in sorted(best)), None, symbols))
        self._arms = sorted({h.arm for hits in per_arm_hits.values() for h in hits})

    def fuse(
        self,
        k: float = 60,
        weights: Mapping[str, float] | None = None,
        *,
        limit: int | None = None,
        adjust: Callable[[str], tuple[float, list[AppliedPrior]]] | None = None,
        stage: Stage | None = None,
        units: Provider | None = None,
    ) -> list[ConsolidatedHit]:
        """Score every group with weighted RRF; best first, ``rank`` 1-based.

        ``stage`` (the ranking stage of :mod:`core.ranking`, which applies the priors
        itself) re-scores the fused groups with its signals, then orders them by priors and
        diversity; ``adjust`` is then not used.

        ``adjust`` maps a path to the factor its hits' scores are multiplied by and the
        priors that make it (see :func:`core.priors.adjuster`): ``fused_score`` is then the
        RRF score and ``score`` the product. ``limit`` keeps only the best ``limit`` hits.

        With a ``limit`` below the number of groups, they are scored as plain floats and a
        :class:`ConsolidatedHit` is built only for the kept ones (a query keeps 10 of ~75, and
        building them all was most of the cost). Without one (a slider move re-fuses hundreds
        of groups) every hit is built in one pass, and a contribution whose weight and k did
        not change is the same (immutable) object as in the last fuse.
        """
        kf = check_k(k)
        ws = check_weights(weights)
        weight_of = {arm: ws.get(arm, 1.0) for arm in self._arms}
        if stage is not None:
            return self._staged(kf, weight_of, limit, stage, units)
        out: list[ConsolidatedHit] = []
        if limit is not None and limit < len(self.groups):
            scored: list[tuple] = []
            for i, group in enumerate(self.groups):
                fused = self._score(group, weight_of, kf)
                if fused is None:
                    continue
                factor = adjust(group.path)[0] if adjust is not None else 1.0
                scored.append((-(fused * factor), group.path, group.start_line, group.end_line, group.docid, i))
            # Ties by (path, start, end, docid); a docid names one group, so `i` never decides.
            for entry in heapq.nsmallest(limit, scored):
                hit, fused = self._hit(self.groups[entry[-1]], weight_of, kf)  # type: ignore[misc]
                out.append(self._adjusted(hit, fused, adjust))
        else:  # a slider move: every hit is built anyway, so build them in the one pass
            for group in self.groups:
                built = self._hit(group, weight_of, kf)
                if built is not None:
                    out.append(self._adjusted(*built, adjust))
        out.sort(key=_order)
        for rank, hit in enumerate(out, start=1):
            hit.rank = rank
        label(out)
        return out

    @staticmethod
    def _score(group: _Group, weight_of: Mapping[str, float], kf: float) -> float | None:
        """A group's weighted RRF score, None when no arm votes for it (every weight 0)."""
        shares = [v for v in [rrf_share(weight_of[h.arm], kf, h.rank) for h in group.best] if v > 0]
        return fused_score(shares) if shares else None

    def _staged(
        self, kf: float, weight_of: dict[str, float], limit: int | None, stage: Stage, units: Provider | None = None
    ) -> list[ConsolidatedHit]:
        """:meth:`fuse` through the ranking stage: every group is scored as floats, the stage's
        signals, priors and diversity order them, and hits are built for the kept ones."""
        kept: list[_Group] = []
        fused: list[float] = []
        for group in self.groups:
            score = self._score(group, weight_of, kf)
            if score is not None:
                kept.append(group)
                fused.append(score)
        paths = [g.path for g in kept]
        contexts = [[h.context for h in g.best] for g in kept]
        spans = [(g.start_line, g.end_line) for g in kept]
        boosted, applied = stage.score(paths, fused, [g.symbols for g in kept], contexts, spans)
        order = stage.order(paths, boosted, applied)
        picks = {}
        if units is not None and stage.params.chunk_files > 0:
            picks = self._chunk_step(order, kept, fused, weight_of, kf, stage, units)
        out: list[ConsolidatedHit] = []
        for i, final, above in order:
            if limit and len(out) >= limit:
                break
            path = paths[i]
            mine, chosen, n_units = picks.get(path, (None, None, 0))
            if chosen is not None and above >= len(chosen):
                continue  # the file's every unit is already placed (or overlaps one placed)
            signals = applied[i]
            if chosen is None:
                built = self._hit(kept[i], weight_of, kf)
                assert built is not None  # it had a vote above
                hit = built[0]
            else:
                unit, _score = chosen[above]
                why = explain(unit, n_units)
                hit = self._unit_hit(path, unit, mine, kept, fused, weight_of, kf)
                # The group's own signals give way to the unit's: the file's stay.
                signals = [s for s in signals if s.name not in ("definition", "quote")]
                signals += stage.span_signals(path, (unit.start, unit.end), unit.symbols)
                signals.append(why)
            hit.score, hit.rank = final, len(out) + 1
            hit.fused_score = fused[i] if chosen is None else (hit.fused_score or 0.0)
            hit.priors = list(stage.priors(path)[1])
            if above:
                signals = [*signals, stage.diversity_signal(above, path == paths[order[0][0]])]
            hit.signals = signals
            out.append(hit)
        label(out)
        return out

    def _chunk_step(self, order, kept, fused, weight_of, kf, stage: Stage, units: Provider) -> dict[str, tuple]:
        """The chunk step (:mod:`core.chunkstep`): per top file, its groups (indexes into
        ``kept``), its best units first (as many as it has groups: a file has no more places
        in the list; none overlapping another's lines) and how many units it has."""
        files: list[str] = []
        for i, _final, _above in order:
            path = kept[i].path
            if path not in files:
                files.append(path)
                if len(files) >= stage.params.chunk_files:
                    break
        if not files:
            return {}
        found = units(files)
        of_file: dict[str, list[int]] = {}
        for i, g in enumerate(kept):
            if g.path in found:
                of_file.setdefault(g.path, []).append(i)
        n_keywords = len(stage.shape.keywords)
        picks = {}
        for path in files:
            fu = found.get(path)
            if fu is None or not fu.units:
                continue
            mine = of_file.get(path, [])
            spans = [(kept[i].start_line, kept[i].end_line, fused[i]) for i in mine]

            def fused_of(start: int, end: int, spans=spans) -> float:
                """The best fused score of the file's groups overlapping these lines (0: none)."""
                best = 0.0
                for s, e, f in spans:
                    if not (e < start or s > end) and f > best:
                        best = f
                return best

            picks[path] = (
                mine,
                distinct_units(
                    fu,
                    weight_of,
                    kf,
                    fused_of,
                    stage.named,
                    lambda u: stage.label_keywords(u.symbols, u.context),
                    n_keywords,
                    stage.params,
                    (lambda start, end, path=path: stage.quote_in(path, start, end)) if path in stage.quoted else None,
                    places=len(mine),
                    named=bool(stage.shape.names),
                    groups=spans,
                    labelled=stage.labelled(fu.shape) if fu.shape is not None else None,
                ),
                len(fu.units),
            )
        return picks

    def _unit_hit(self, path: str, unit, mine, kept, fused, weight_of, kf) -> ConsolidatedHit:
        """The hit showing ``unit``: the arms' evidence of the best of its file's groups
        (``mine``) it overlaps, if any."""
        start, end = shown_span(unit)
        best = _best_overlap(kept, fused, mine, unit.start, unit.end)
        if best is not None:
            hit, score = self._hit(kept[best], weight_of, kf)  # type: ignore[misc]
            hit.fused_score = score
        else:
            hit = ConsolidatedHit(path, start, end, "", unit.context or path, 0.0, 0, [], 0, LOW, [])
            hit.fused_score = 0.0
        hit.start_line, hit.end_line = start, end
        hit.docid = make_docid(path, start, end)
        hit.context = unit.context or path
        hit.within = {arm: r for arm, r in unit.ranks.items() if weight_of.get(arm, 1.0) > 0}  # as rank_units weighs
        return hit

    @staticmethod
    def _adjusted(
        hit: ConsolidatedHit, fused: float, adjust: Callable[[str], tuple[float, list[AppliedPrior]]] | None
    ) -> ConsolidatedHit:
        if adjust is None:
            hit.score = fused
        else:
            factor, applied = adjust(hit.path)
            hit.score, hit.fused_score, hit.priors = fused * factor, fused, list(applied)
        return hit

    def _hit(self, group: _Group, weight_of: Mapping[str, float], kf: float) -> tuple[ConsolidatedHit, float] | None:
        """The explained hit of one group and its RRF score (None when no arm votes for it);
        the caller sets its final score and rank."""
        contributors = []
        voting = []
        for i, h in enumerate(group.best):
            w = weight_of[h.arm]
            cached = group.memo[i]
            if cached is not None and cached[0] == w and cached[1] == kf:
                c = cached[2]
            else:
                c = Contribution(h.arm, h.rank, h.docid, h.score, rrf_share(w, kf, h.rank))
                group.memo[i] = (w, kf, c)
            contributors.append(c)
            if c.contribution > 0:
                voting.append(i)
        if not voting:
            return None
        if len(voting) == 1:
            lead_i = voting[0]
            fused = contributors[lead_i].contribution
        else:
            # The lead (whose context the hit shows) is the biggest contribution; among equal
            # ones a definition (its context is not just the path), then the larger docid.
            lead_i = max((contributors[i].contribution, group.lead_key(i), i) for i in voting)[2]
            fused = fused_score([contributors[i].contribution for i in voting])
        provenance = [group.best[i].arm for i in voting]
        votes = sum(1 for i in voting if group.best[i].rank <= AGREEMENT_DEPTH)
        hit = ConsolidatedHit(
            group.path,
            group.start_line,
            group.end_line,
            group.docid,
            group.best[lead_i].context or group.path,
            fused,
            0,
            provenance,
            votes,
            LOW,  # set once the query's best score is known (label)
            contributors,
        )
        return hit, fused


def _best_overlap(kept: Sequence[_Group], fused: Sequence[float], among: Sequence[int], start: int, end: int):
    """Of the groups ``among`` (indexes into ``kept``, one file's), the best fused one whose
    lines overlap ``start``-``end``; None when none does."""
    best = None
    for i in among:
        if not (kept[i].end_line < start or kept[i].start_line > end) and (best is None or fused[i] > fused[best]):
            best = i
    return best


def _order(hit: ConsolidatedHit) -> tuple:
    """Best first; ties by (path, start, end, docid)."""
    return (-hit.score, hit.path, hit.start_line, hit.end_line, hit.docid)


class _Group:
    """One group of overlapping spans: its extent and each arm's best-ranked member."""

    __slots__ = ("path", "start_line", "end_line", "docid", "best", "memo", "symbols")

    def __init__(
        self,
        path: str,
        start_line: int,
        end_line: int,
        best: tuple[Hit, ...],
        docid: str | None = None,
        symbols: tuple[str, ...] = (),
    ) -> None:
        self.symbols = symbols  # the names its members define (Hit.symbol fields)
        self.path = path
        self.start_line = start_line
        self.end_line = end_line
        self.docid = docid or make_docid(path, start_line, end_line)
        self.best = best  # sorted by arm name
        self.memo: list[tuple[float, float, Contribution] | None] = [None] * len(best)

    def lead_key(self, i: int) -> tuple[bool, str]:
        h = self.best[i]
        return (h.context != self.path, h.docid)


def consolidate(
    per_arm_hits: Mapping[str, Sequence[Hit]],
    k: float = 60,
    weights: Mapping[str, float] | None = None,
    merge_adjacent: bool = True,
) -> list[ConsolidatedHit]:
    """Merge overlapping spans across arms and rank the groups with weighted RRF.

    Parameters
    ----------
    per_arm_hits
        Arm name -> that arm's ranking (``Hit.rank`` is 1-based within the arm).
    k
        RRF constant, 1..10^6.
    weights
        Arm name -> weight (>= 0, finite); arms not named weigh 1.0. An arm weighted 0
        still shows in ``contributors`` but neither scores nor counts toward agreement.
    merge_adjacent
        Also merge spans that touch (``end + 1 == start``), not only overlapping ones.

    Returns
    -------
    Consolidated hits, best first, ``rank`` 1-based; ties broken by (path, start, end, docid).
    The result does not depend on the order of ``per_arm_hits``.

    Raises
    ------
    ValueError
        For a bad k or weight, a chunk twice in one arm, a non-finite score, or one chunk id
        naming different spans or texts in different arms.
    """
    check_k(k)
    check_weights(weights)
    return Groups(per_arm_hits, merge_adjacent).fuse(k, weights)


def single_arm(
    hits: Sequence[Hit],
    k: float = 60,
    weight: float = 1.0,
) -> list[ConsolidatedHit]:
    """One arm's own ranking in the consolidated shape, spans left unmerged.

    Used when a single retriever is asked for: the envelope stays the same, the ranking is
    the arm's.
    """
    kf = check_k(k)
    out = []
    for rank, hit in enumerate(sorted(hits, key=lambda h: h.rank), start=1):
        value = rrf_share(weight, kf, hit.rank)
        out.append(
            ConsolidatedHit(
                path=hit.path,
                start_line=hit.start_line,
                end_line=hit.end_line,
                docid=hit.docid,
                context=hit.context or hit.path,
                score=value,
                rank=rank,
                provenance=[hit.arm],
                agreement=1 if hit.rank <= AGREEMENT_DEPTH else 0,
                confidence=LOW,
                contributors=[Contribution(hit.arm, hit.rank, hit.docid, hit.score, value)],
            )
        )
    label(out)
    return out
