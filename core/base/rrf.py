"""Weighted Reciprocal Rank Fusion: the arithmetic.

score(d) = sum over rankings i that contain d of  w_i / (k + rank_i(d)),  ranks 1-based.

Summed with ``math.fsum`` so the result does not depend on the order the rankings arrive in
(arms stream in any order); ties are broken by id so equal inputs give equal outputs.

:func:`rrf_share` and :func:`fused_score` are the one formula every fused score in ranklens
uses; :func:`check_k` / :func:`check_weight` / :func:`check_weights` validate what a caller
passes; :func:`reciprocal_rank_fusion` fuses plain rankings (the ``hybrid`` arm). The
pipeline's fusion stage over span groups is :func:`core.query.fusion.fuse`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

MAX_K = 1_000_000


def rrf_share(weight: float, k: float, rank: int) -> float:
    """What one ranking gives a document it ranks ``rank`` (1-based): ``weight / (k + rank)``.
    Every fused score in ranklens is a sum of these (:func:`reciprocal_rank_fusion`,
    :func:`fuse`, single-arm mode)."""
    return weight / (k + rank)


def fused_score(shares: list[float]) -> float:
    """The sum of a document's shares, order-independent (``math.fsum``; one share as is)."""
    return shares[0] if len(shares) == 1 else math.fsum(shares)


def check_k(k: float) -> float:
    """Return ``k`` as a float, or raise ValueError when it is not a number in 1..10^6."""
    if isinstance(k, bool) or not isinstance(k, (int, float)):
        raise ValueError(f"RRF k must be a number, got {k!r}")
    if not math.isfinite(k) or not 1 <= k <= MAX_K:
        raise ValueError(f"RRF k must be between 1 and {MAX_K:,}, got {k!r}")
    return float(k)


def check_weight(name: str, weight: float) -> float:
    """Return ``weight`` as a float, or raise ValueError when it is negative, NaN or infinite."""
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise ValueError(f"weight for {name} must be a number, got {weight!r}")
    if not math.isfinite(weight) or weight < 0:
        raise ValueError(f"weight for {name} must be a finite number >= 0, got {weight!r}")
    return float(weight)


def check_weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    """Validate a name -> weight mapping (missing names default to 1.0 where used)."""
    if weights is None:
        return {}
    return {str(name): check_weight(str(name), w) for name, w in weights.items()}


def _entries(ranking: Iterable[object], index: int) -> list[tuple[str, float | None]]:
    out: list[tuple[str, float | None]] = []
    seen: set[str] = set()
    for item in ranking:
        if isinstance(item, tuple):
            doc_id, score = item
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise ValueError(f"ranking {index}: score of {doc_id!r} is not a number")
            if not math.isfinite(score):
                raise ValueError(f"ranking {index}: non-finite score {score!r} for {doc_id!r}")
        else:
            doc_id, score = item, None
        doc_id = str(doc_id)
        if doc_id in seen:
            raise ValueError(f"ranking {index}: id {doc_id!r} appears twice")
        seen.add(doc_id)
        out.append((doc_id, score))
    return out


def reciprocal_rank_fusion(
    rankings: Sequence[Iterable[str | tuple[str, float]]],
    k: float = 60,
    weights: Sequence[float] | None = None,
) -> list[tuple[str, float]]:
    """Fuse several rankings into one with weighted RRF.

    Parameters
    ----------
    rankings
        Each ranking lists ids best first, either bare or as ``(id, native_score)`` pairs.
    k
        The RRF constant, 1..10^6. Larger k flattens the difference between ranks.
    weights
        One non-negative finite weight per ranking (default 1.0 each).

    Returns
    -------
    list of (id, fused score), best first; ties broken by id.

    Raises
    ------
    ValueError
        For a k out of range, a bad weight, a weights list of the wrong length, an id
        twice in one ranking, or a non-finite native score.
    """
    kf = check_k(k)
    if weights is None:
        ws = [1.0] * len(rankings)
    else:
        if len(weights) != len(rankings):
            raise ValueError(f"{len(weights)} weights given for {len(rankings)} rankings")
        ws = [check_weight(f"ranking {i}", w) for i, w in enumerate(weights)]
    parts: dict[str, list[float]] = {}
    for i, ranking in enumerate(rankings):
        for rank, (doc_id, _score) in enumerate(_entries(ranking, i), start=1):
            parts.setdefault(doc_id, []).append(rrf_share(ws[i], kf, rank))
    fused = [(doc_id, fused_score(p)) for doc_id, p in parts.items()]
    fused.sort(key=lambda item: (-item[1], item[0]))
    return fused
