"""Labelled hits, the pipeline's last stage: the list a user sees, each hit explained.

:func:`label_hits` makes a :class:`core.base.types.ConsolidatedHit` for each place of the list:
the group's span (or the chunk the chunk step chose for it), each arm's contribution,
``provenance`` (the arms that ranked it), ``agreement`` (the arms that rank it within their
top :data:`AGREEMENT_DEPTH`), ``confidence`` (:func:`confidence`) and the trace: the ranking
stage's signals and priors, the chunk step's reason and diversity. Hits are made for the places
kept only (a query shows 10 of ~75 groups).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..base.rrf import check_k, fused_score, rrf_share
from ..base.types import Alternative, ConsolidatedHit, Contribution, Hit, make_docid

if TYPE_CHECKING:
    from .chunkstep import Chunks, Unit
    from .consolidate import Group
    from .fusion import Fused
    from .ranking import Files

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
    :mod:`core.query.calibration` (measured, and quoted by the help, the README and the docs).
    """
    if defines or (share >= HIGH_SHARE and votes >= 1):
        return HIGH
    if share >= MEDIUM_SHARE or votes >= MEDIUM_VOTES:
        return MEDIUM
    return LOW


def label(hits: Sequence[ConsolidatedHit], best: float | None = None, defines: bool = True) -> None:
    """Set each hit's ``confidence`` from its score against ``best`` (default: the best
    score among ``hits``), its agreement and its signals (``defines`` False: none of them
    says the hit defines a name the query names)."""
    if best is None:
        best = max((h.score for h in hits), default=0.0)
    for h in hits:
        share = h.score / best if best > 0 else 0.0
        named = defines and any(s.name == "definition" for s in h.signals)
        h.confidence = confidence(share, h.agreement, named)


def voters(hit: ConsolidatedHit) -> list[str]:
    """The arms that vote for ``hit``: those of its ``provenance`` (every arm that ranked it,
    at any depth) that rank it within their top :data:`AGREEMENT_DEPTH`. ``agreement`` is
    their number; the TUI's ``via`` shows them in capitals, the other arms of ``provenance``
    in lowercase."""
    ranked = set(hit.provenance)
    return [c.arm for c in hit.contributors if c.arm in ranked and c.rank <= AGREEMENT_DEPTH]


def label_hits(
    fused: Fused, files: Files | None = None, chunks: Chunks | None = None, limit: int | None = None
) -> list[ConsolidatedHit]:
    """The labelled list, best first, ``rank`` 1-based, its first ``limit`` hits (None: all).

    Without ``files`` (the ranking stage off) the fused groups in fused order, ties by (path,
    start, end, docid). With them, in the stage's order: each hit's ``score`` is its final
    score, ``fused_score`` the RRF score, ``signals`` and ``priors`` what moved it; a file
    the chunk step chose units for (``chunks``) shows them in its places, each with the
    ``chunk`` signal saying why, and the first of them its file's runners-up
    (``alternatives``: what the chunk step ranked next in the file, whatever ``limit``).
    """
    if files is None:
        return _plain(fused, limit)
    kept, scores, weight_of, kf = fused.kept, fused.scores, fused.weights, fused.k
    paths, applied = files.paths, files.applied
    stage = files.stage
    priors, diversity = stage.priors, stage.diversity_signal
    top_path = paths[files.order[0][0]] if files.order else None
    picks = chunks.picks if chunks is not None else {}
    out: list[ConsolidatedHit] = []
    prior_of: dict[str, list] = {}
    placed: dict[str, ConsolidatedHit] = {}  # path -> its first hit the chunk step placed
    for i, final, above in files.order:
        if limit and len(out) >= limit:
            break
        path = paths[i]
        pick = picks.get(path) if picks else None
        if pick is None:
            signals = applied[i]
            if above:
                signals = [*signals, diversity(above, path == top_path)]
            applies = prior_of.get(path)
            if applies is None:
                applies = prior_of[path] = priors(path)[1]
            hit = _hit(kept[i], weight_of, kf, final, len(out) + 1, scores[i], applies, signals)
            assert hit is not None  # it had a vote
        else:
            if above >= len(pick.chosen):
                continue  # the file's every unit is already placed (or overlaps one placed)
            unit, _score = pick.chosen[above]
            hit = _unit_hit(path, unit, pick.mine, kept, scores, weight_of, kf)
            # The group's own signals give way to the unit's: the file's stay.
            signals = [s for s in applied[i] if s.name not in ("definition", "quote")]
            signals += files.span_signals(path, (unit.start, unit.end), unit.symbols)
            signals.append(pick.explain(unit))
            hit.score, hit.rank = final, len(out) + 1
            hit.priors = priors(path)[1]
            hit.signals = [*signals, diversity(above, path == top_path)] if above else signals
            placed.setdefault(path, hit)
        out.append(hit)
    for path, first in placed.items():
        first.alternatives = _alternatives(picks[path])
    # Only the stage's definition signal makes a hit's confidence high whatever its score.
    # The hits are in the order's (final scores, best first): the first is the best.
    label(out, out[0].score if out else 0.0, defines=bool(stage.shape.names and stage.params.definition))
    return out


def _plain(fused: Fused, limit: int | None) -> list[ConsolidatedHit]:
    """:func:`label_hits` without the ranking stage. With a ``limit`` below the number of
    groups only the kept places' hits are made (a query keeps 10 of ~75)."""
    kept, scores, weight_of, kf = fused.kept, fused.scores, fused.weights, fused.k
    out: list[ConsolidatedHit] = []
    if limit is not None and limit < len(kept):
        ranked = [(-f, g.path, g.start_line, g.end_line, g.docid, i) for i, (g, f) in enumerate(zip(kept, scores))]
        # Ties by (path, start, end, docid); a docid names one group, so `i` never decides.
        chosen = [entry[-1] for entry in heapq.nsmallest(limit, ranked)]
    else:
        chosen = range(len(kept))
    for i in chosen:
        hit = _hit(kept[i], weight_of, kf, scores[i])
        assert hit is not None
        out.append(hit)
    out.sort(key=_order)
    for rank, hit in enumerate(out, start=1):
        hit.rank = rank
    label(out, defines=False)  # no stage, no signal
    return out


def _hit(
    group: Group,
    weight_of,
    kf: float,
    score: float | None = None,
    rank: int = 0,
    fused: float | None = None,
    priors: list | None = None,
    signals: list | None = None,
) -> ConsolidatedHit | None:
    """The explained hit of one group (None when no arm votes for it: every weight 0), made
    at once with its ``score`` (default: its RRF score), ``rank``, ``fused`` score, ``priors``
    and ``signals``."""
    parts = _parts(group, weight_of, kf)
    if parts is None:
        return None
    contributors, provenance, votes, context, rrf = parts
    return ConsolidatedHit(
        group.path,
        group.start_line,
        group.end_line,
        group.docid,
        context,
        rrf if score is None else score,
        rank,
        provenance,
        votes,
        LOW,  # set once the query's best score is known (label)
        contributors,
        fused,
        [] if priors is None else priors,
        [] if signals is None else signals,
        "",
        {},
    )


def _parts(group: Group, weight_of, kf: float) -> tuple | None:
    """What a group's hit shows of its arms with these weights and k: (contributors,
    provenance, votes, context, RRF score), None when no arm votes. Kept on the group
    (``Group.memo``) for the last weights of its arms and k: a slider moves one weight, so
    most groups' hits are made again from what they showed before."""
    best, memo = group.best, group.memo
    if len(best) == 1:  # most groups
        h = best[0]
        w = weight_of[h.arm]
        if memo is not None and memo[0] == w and memo[1] == kf:
            return memo[2]
        c = Contribution(h.arm, h.rank, h.docid, h.score, rrf_share(w, kf, h.rank))
        parts = None
        if c.contribution > 0:
            votes = 1 if h.rank <= AGREEMENT_DEPTH else 0
            parts = ([c], [h.arm], votes, h.context or group.path, c.contribution)
        group.memo = (w, kf, parts)
        return parts
    weights = [weight_of[h.arm] for h in best]
    if memo is not None and memo[0] == weights and memo[1] == kf:
        return memo[2]
    contributors = [
        Contribution(h.arm, h.rank, h.docid, h.score, rrf_share(w, kf, h.rank)) for h, w in zip(best, weights)
    ]
    voting = [i for i, c in enumerate(contributors) if c.contribution > 0]
    parts = None
    if voting:
        if len(voting) == 1:
            lead_i = voting[0]
            rrf = contributors[lead_i].contribution
        elif len(voting) == 2:  # the same lead and sum as below, for the usual pair
            a, b = voting
            ca, cb = contributors[a].contribution, contributors[b].contribution
            lead_i = a if (ca, group.lead_key(a)) > (cb, group.lead_key(b)) else b
            rrf = ca + cb  # two floats' sum is their fsum
        else:
            # The lead (whose context the hit shows) is the biggest contribution; among equal
            # ones a definition (its context is not just the path), then the larger docid.
            lead_i = max((contributors[i].contribution, group.lead_key(i), i) for i in voting)[2]
            rrf = fused_score([contributors[i].contribution for i in voting])
        provenance = [best[i].arm for i in voting]
        votes = sum(1 for i in voting if best[i].rank <= AGREEMENT_DEPTH)
        parts = (contributors, provenance, votes, best[lead_i].context or group.path, rrf)
    group.memo = (weights, kf, parts)
    return parts


def _unit_hit(path: str, unit: Unit, mine, kept, scores, weight_of, kf) -> ConsolidatedHit:
    """The hit showing ``unit``: the arms' evidence of the best of its file's groups
    (``mine``) it overlaps, if any."""
    from .chunkstep import shown_span

    start, end = shown_span(unit)
    best = None
    for i in mine:
        if not (kept[i].end_line < unit.start or kept[i].start_line > unit.end) and (
            best is None or scores[i] > scores[best]
        ):
            best = i
    if best is not None:
        hit = _hit(kept[best], weight_of, kf)
        assert hit is not None
        hit.fused_score = scores[best]
    else:
        hit = ConsolidatedHit(path, start, end, "", unit.context or path, 0.0, 0, [], 0, LOW, [])
        hit.fused_score = 0.0
    hit.start_line, hit.end_line = start, end
    hit.docid = make_docid(path, start, end)
    hit.context = unit.context or path
    hit.within = {arm: r for arm, r in unit.ranks.items() if weight_of.get(arm, 1.0) > 0}  # as rank_units weighs
    return hit


def _alternatives(pick) -> list[Alternative]:
    """The runners-up of a file (:meth:`core.query.chunkstep.Pick.runners_up`), as its first
    hit carries them."""
    from .chunkstep import shown_span

    out = []
    for unit, score in pick.runners_up():
        start, end = shown_span(unit)
        why = pick.explain(unit).reason
        names = tuple(dict.fromkeys(name for symbol in unit.symbols for name in symbol.split()))
        out.append(Alternative(start, end, unit.context, names, score, why, dict(unit.ranks)))
    return out


def _order(hit: ConsolidatedHit) -> tuple:
    """Best first; ties by (path, start, end, docid)."""
    return (-hit.score, hit.path, hit.start_line, hit.end_line, hit.docid)


def single_arm(hits: Sequence[Hit], k: float = 60, weight: float = 1.0) -> list[ConsolidatedHit]:
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
