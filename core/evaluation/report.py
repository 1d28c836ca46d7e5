"""The evaluation report: per-arm and fused figures, overall and per kind, the fused list's
confidence calibration, and per-query details."""

from __future__ import annotations

from collections.abc import Sequence

from .labels import LabeledQuery, SpanLike
from .metrics import first_hit_rank, locates, mean, metric_names, metrics_for, percentile
from .runner import EvalRun

#: The name of the fused row in reports.
FUSED = "fused"
#: Queries without a ``kind`` are grouped under this name.
NO_KIND = "-"


def _row(per_query: list[tuple[dict[str, float], float, float]], names: Sequence[str]) -> dict:
    """Aggregate (metrics, latency ms, mean span lines) per query into one report row."""
    row: dict = {"n": len(per_query)}
    for m in names:
        row[m] = mean([pq[0][m] for pq in per_query])
    lat = [pq[1] for pq in per_query]
    row["latency_ms"] = {"p50": percentile(lat, 50), "p95": percentile(lat, 95)}
    row["mean_lines"] = mean([pq[2] for pq in per_query])
    return row


def _lines(hits: Sequence[SpanLike], depth: int) -> float:
    top = hits[:depth]
    return mean([h.end_line - h.start_line + 1 for h in top]) if top else 0.0


def calibration(run: EvalRun) -> dict:
    """Per level of the fused hits' ``confidence``, over every query's fused top K: the
    hits at that level (``hits``, ``share`` of all) and those locating a gold target
    (``relevant``, ``relevant_share``; None for a level with no hits).

    Read from each hit as fusion labelled it, whatever the rule; a level the rule adds is
    listed after the three known ones.
    """
    from ..query.labels import HIGH, LOW, MEDIUM

    counts: dict[str, list[int]] = {level: [0, 0] for level in (HIGH, MEDIUM, LOW)}
    for qr in run.queries:
        for h in qr.fused[: run.top_k]:
            found = counts.setdefault(h.confidence, [0, 0])
            found[0] += 1
            found[1] += any(locates(h, g) for g in qr.query.gold)
    order = [HIGH, MEDIUM, LOW, *sorted(set(counts) - {HIGH, MEDIUM, LOW})]
    total = sum(n for n, _ in counts.values())
    levels = {
        level: {
            "hits": n,
            "share": n / total if total else 0.0,
            "relevant": r,
            "relevant_share": r / n if n else None,
        }
        for level in order
        for n, r in [counts[level]]
    }
    return {"top_k": run.top_k, "hits": total, "levels": levels}


def report(run: EvalRun) -> dict:
    """Per-arm and fused figures, overall and per ``kind``, the fused list's confidence
    calibration, and per-query details."""
    depth = run.top_k
    names = metric_names(depth)
    hit_key, ndcg_key = f"hit@{depth}", f"ndcg@{depth}"
    rows: dict[str, list[tuple[str | None, tuple[dict[str, float], float, float]]]] = {}
    details = []
    missed_by_all = []
    for qr in run.queries:
        q = qr.query
        arm_metrics = {}
        for arm in run.measured:
            hits = qr.scored(arm)
            if hits is None:
                continue
            top = hits[:depth]
            m = metrics_for(top, q.gold, depth)
            arm_metrics[arm] = m
            rows.setdefault(arm, []).append((q.kind, (m, qr.arm_ms[arm], _lines(top, depth))))
        fm = metrics_for(qr.fused, q.gold, depth)
        rows.setdefault(FUSED, []).append((q.kind, (fm, qr.fused_ms, _lines(qr.fused, depth))))
        if all(m[hit_key] == 0 for m in [*arm_metrics.values(), fm]):
            missed_by_all.append({"id": q.id, "kind": q.kind, "query": q.query})
        details.append(
            {
                "id": q.id,
                "kind": q.kind,
                "query": q.query,
                "fused": {
                    ndcg_key: fm[ndcg_key],
                    "first_hit": first_hit_rank(qr.fused, q.gold, depth),
                    "top": [f"{h.path}:{h.start_line}-{h.end_line}" for h in qr.fused[:3]],
                },
                "arms": {
                    a: {ndcg_key: m[ndcg_key], "first_hit": first_hit_rank(qr.scored(a), q.gold, depth)}
                    for a, m in arm_metrics.items()
                },
            }
        )
    kinds = sorted({qr.query.kind or NO_KIND for qr in run.queries})
    groups: dict[str, dict] = {}
    order = [a for a in run.measured if a in rows] + [FUSED]
    for group in ["all", *kinds]:
        g_rows = {}
        for name in order:
            picked = [v for kind, v in rows.get(name, []) if group == "all" or (kind or NO_KIND) == group]
            if picked:
                g_rows[name] = _row(picked, names)
        n = sum(1 for qr in run.queries if group == "all" or (qr.query.kind or NO_KIND) == group)
        groups[group] = {"n": n, "rows": g_rows}
    return {
        "queries": len(run.queries),
        "top_k": depth,
        "metrics": list(names),
        "configuration": {
            "arms": list(run.arms),
            "weights": {a: run.weights.get(a, 1.0) for a in run.arms},
            "k": run.k,
            "priors": run.priors,
        },
        "skipped": dict(run.skipped),
        "no_gold": list(run.no_gold),
        "groups": groups,
        "missed_by_all": missed_by_all,
        "calibration": calibration(run),
        "per_query": details,
    }


def kinds_summary(queries: Sequence[LabeledQuery]) -> dict[str, int]:
    """How many queries of each kind (for messages and tests)."""
    out: dict[str, int] = {}
    for q in queries:
        out[q.kind or NO_KIND] = out.get(q.kind or NO_KIND, 0) + 1
    return out
