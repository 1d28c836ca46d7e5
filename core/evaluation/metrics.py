"""Ranking metrics over the top 10 (pure functions of a ranking and its gold targets).

* ``hit@k``: some result among the first k *locates* a gold target (:func:`locates`). A
  whole-file target is located by any result in that file. A span is located by a *span
  hit*: same file, sharing at least half of the shorter of the two, and no longer than
  ``max(100, 2 x the gold's)`` lines. A window that grazes a function by four lines, or a
  whole-file hit that happens to contain it, does not locate it.
* ``file_hit@5``: some result among the first 5 is in a file that holds a gold target.
* ``mrr@10``: 1 / rank of the first result locating a target, 0 when none is in the top 10.
* ``ndcg@10``: binary gain; each gold target is credited at most once, so a result that only
  locates targets already credited earns nothing. A whole-file target is thus credited once,
  by the first result in its file, as the benchmark's own metric does (it takes a target's
  first matching rank). Ideal DCG is that of ``min(len(gold), 10)`` hits at the top.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .labels import SpanLike

TOP_K = 10
METRICS = ("hit@1", "hit@5", "hit@10", "file_hit@5", "mrr@10", "ndcg@10")


def overlaps(hit: SpanLike, gold: SpanLike) -> bool:
    """Same file and at least one line in common (any line of a whole-file ``gold``)."""
    if hit.path != gold.path:
        return False
    return gold.start_line is None or (hit.start_line <= gold.end_line and gold.start_line <= hit.end_line)


#: A hit longer than this (and than twice its gold span) does not locate the gold: it is a
#: file to read, not a place to look. 100 lines is about two budgeted chunks and a half.
MAX_SPAN_LINES = 100


def locates(hit: SpanLike, gold: SpanLike) -> bool:
    """Whether ``hit`` finds the gold target: any hit in the file of a whole-file target;
    for a span, a span hit: same file, at least half of the shorter span shared, and not too
    wide.

    Plain overlap rewards width: a 40-line window sharing four lines with a function, or a
    300-line merged hit, would count as finding it.
    """
    if not overlaps(hit, gold):
        return False
    if gold.start_line is None:
        return True
    hit_len = hit.end_line - hit.start_line + 1
    gold_len = gold.end_line - gold.start_line + 1
    shared = min(hit.end_line, gold.end_line) - max(hit.start_line, gold.start_line) + 1
    return 2 * shared >= min(hit_len, gold_len) and hit_len <= max(MAX_SPAN_LINES, 2 * gold_len)


def hit_at_k(hits: Sequence[SpanLike], gold: Sequence[SpanLike], k: int) -> float:
    """1.0 when one of the first ``k`` hits locates a gold target, else 0.0."""
    return 1.0 if any(locates(h, g) for h in hits[:k] for g in gold) else 0.0


def file_hit_at_k(hits: Sequence[SpanLike], gold: Sequence[SpanLike], k: int = 5) -> float:
    """1.0 when one of the first ``k`` hits is in a file holding a gold target."""
    paths = {g.path for g in gold}
    return 1.0 if any(h.path in paths for h in hits[:k]) else 0.0


def reciprocal_rank(hits: Sequence[SpanLike], gold: Sequence[SpanLike], k: int = TOP_K) -> float:
    """1 / rank of the first hit locating a gold target among the first ``k``, else 0."""
    for rank, h in enumerate(hits[:k], start=1):
        if any(locates(h, g) for g in gold):
            return 1.0 / rank
    return 0.0


def ndcg_at_k(hits: Sequence[SpanLike], gold: Sequence[SpanLike], k: int = TOP_K) -> float:
    """Binary-gain nDCG@k where each gold target is credited at most once.

    A hit earns gain 1 when it locates a gold target not credited yet (the first such target
    in gold order is then credited); a hit locating only credited targets earns nothing, so
    a whole-file target is credited by the first hit in its file and a second hit there
    earns nothing. The ideal DCG puts ``min(len(gold), k)`` hits at the top. No gold: 0.0.
    """
    if not gold:
        return 0.0
    credited = [False] * len(gold)
    dcg = 0.0
    for rank, h in enumerate(hits[:k], start=1):
        for i, g in enumerate(gold):
            if not credited[i] and locates(h, g):
                credited[i] = True
                dcg += 1.0 / math.log2(rank + 1)
                break
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def first_hit_rank(hits: Sequence[SpanLike], gold: Sequence[SpanLike], k: int = TOP_K) -> int | None:
    """1-based rank of the first hit locating a gold target among the first ``k``, or None."""
    rr = reciprocal_rank(hits, gold, k)
    return round(1 / rr) if rr else None


def metric_names(depth: int = TOP_K) -> tuple[str, ...]:
    """The reported metrics for a ranking depth (``METRICS`` at the default depth 10)."""
    names = ["hit@1", "hit@5", f"hit@{depth}", "file_hit@5", f"mrr@{depth}", f"ndcg@{depth}"]
    return tuple(dict.fromkeys(names))


def metrics_for(hits: Sequence[SpanLike], gold: Sequence[SpanLike], depth: int = TOP_K) -> dict[str, float]:
    """Every metric of :func:`metric_names` for one ranking (only its first ``depth`` count)."""
    top = hits[:depth]
    return {
        "hit@1": hit_at_k(top, gold, 1),
        "hit@5": hit_at_k(top, gold, 5),
        f"hit@{depth}": hit_at_k(top, gold, depth),
        "file_hit@5": file_hit_at_k(top, gold, 5),
        f"mrr@{depth}": reciprocal_rank(top, gold, depth),
        f"ndcg@{depth}": ndcg_at_k(top, gold, depth),
    }


def query_metrics(hits: Sequence[SpanLike], gold: Sequence[SpanLike]) -> dict[str, float]:
    """``{"mrr@10": …, "ndcg@10": …}`` of one ranking against relevant spans (the TUI's status)."""
    return {"mrr@10": reciprocal_rank(hits, gold, TOP_K), "ndcg@10": ndcg_at_k(hits, gold, TOP_K)}


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100) with linear interpolation; None for no values."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0
