"""Running a labeled query set: every query once per arm, the rankings cached for the report
and for tuning.

Each query is run once per arm through :meth:`core.engine.Engine.search` with the run's
:class:`core.query.settings.FusionSettings`; every arm is scored on its own top 10 as a
single-retriever query shows it (its pool re-ordered by the priors when the ranking stage is
on) and the fused list on the consolidated hits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..query.settings import FusedBy, FusionSettings
from .labels import LabeledQuery
from .metrics import TOP_K


@dataclass
class QueryRun:
    """One labeled query's cached answers: each arm's ranking and the fused list."""

    query: LabeledQuery
    rankings: dict[str, list]  # arm -> its raw hits (Hit), best first (pool, not cut to 10)
    arm_ms: dict[str, float]
    fused: list  # consolidated hits of the configuration (top ``top_k``)
    fused_ms: float
    ranked: dict[str, list] = field(default_factory=dict)  # arm -> what it is scored on, if not ``rankings``

    def scored(self, arm: str) -> list | None:
        """The list an arm alone is scored on: re-ordered by the priors, or its raw ranking."""
        found = self.ranked.get(arm)
        return found if found is not None else self.rankings.get(arm)


@dataclass
class EvalRun(FusedBy):
    """Everything one evaluation ran: enough to report and to re-fuse for tuning."""

    queries: list[QueryRun]
    settings: FusionSettings  # the configuration fused (its arms, weights, k, ranking stage)
    measured: list[str]  # every arm measured alone (configuration first)
    skipped: dict[str, str]  # arm -> why it could not answer (first reason seen)
    no_gold: list[str] = field(default_factory=list)  # ids of queries left out (empty gold)
    top_k: int = TOP_K  # the ranking depth every metric looks at

    @property
    def arms(self) -> list[str]:
        return list(self.settings.arms)


def run_queries(
    engine,
    queries: Sequence[LabeledQuery],
    settings: FusionSettings,
    *,
    also: Sequence[str] = (),
    top_k: int = TOP_K,
    progress: Callable[[int, int], None] | None = None,
) -> EvalRun:
    """Run every query once per arm on an opened engine and cache the rankings.

    ``settings`` is the configuration measured (one arm: that arm's own ranking is the
    "fused" list, as ``ranklens query --retriever`` prints it); ``also`` are more arms measured
    alone but not fused (run in a second search, so the configuration's latency is its own).
    Every arm alone is scored as a single-retriever query shows it (its pool re-ordered by the
    priors when ``settings.priors``). Arms are opened before the first query, so latencies do
    not include loading them.
    """
    from ..query.pipeline import rank_single

    extra = [a for a in dict.fromkeys(also) if a not in settings.arms]
    runs: list[QueryRun] = []
    skipped: dict[str, str] = {}
    scored = [q for q in queries if q.gold]
    no_gold = [q.id for q in queries if not q.gold]
    if hasattr(engine, "warm"):
        engine.warm([*settings.arms, *extra])  # load every artifact first: latencies are steady-state ones
    for i, q in enumerate(scored, start=1):
        result = engine.search(q.query, settings, top_k=top_k)
        results = dict(result.results)
        if extra:
            results.update(engine.search(q.query, settings.with_(arms=tuple(extra)), top_k=top_k).results)
        for name, reason in result.skipped:
            skipped.setdefault(name, reason)
        for name in extra:
            r = results[name]
            if not r.ok:
                skipped.setdefault(name, r.skipped or r.error or "")
        ranked = {a: rank_single(r.hits, settings.with_(arms=(a,)), q.query) for a, r in results.items() if r.ok}
        runs.append(
            QueryRun(
                query=q,
                rankings={a: list(r.hits) for a, r in results.items() if r.ok},
                arm_ms={a: r.elapsed_ms for a, r in results.items() if r.ok},
                fused=list(result.hits[:top_k]),
                fused_ms=result.elapsed_ms,
                ranked=ranked,
            )
        )
        if progress is not None:
            progress(i, len(scored))
    return EvalRun(runs, settings, [*settings.arms, *extra], skipped, no_gold, top_k)
