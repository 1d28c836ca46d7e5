"""Tuning the fused configuration's weights and k on cached rankings, cross-validated.

Tuning re-fuses the cached rankings through the engine's own fusion (no arm runs again), so
it optimises the list a user sees: coordinate ascent over a grid of weights and k, scored by
mean fused nDCG@10, with k-fold held-out figures to say whether it beats the defaults.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from .metrics import TOP_K, mean, ndcg_at_k
from .runner import EvalRun

#: Weight grid: 0 to 3 in steps of 0.2, a subset of the TUI slider's 0.1 grid, so tuned
#: weights show exactly there.
WEIGHT_GRID: tuple[float, ...] = tuple(round(0.2 * i, 1) for i in range(16))
#: k grid: where RRF's k matters (small k sharpens the top ranks), roughly geometric.
K_GRID: tuple[float, ...] = (5, 10, 20, 30, 45, 60, 90, 120, 200)
DEFAULT_WEIGHT = 1.0
ROUNDS = 4
FOLDS = 5
SEED = 20240601


@dataclass(frozen=True)
class Setting:
    weights: tuple[tuple[str, float], ...]
    k: float

    @property
    def weight_map(self) -> dict[str, float]:
        return dict(self.weights)

    def to_dict(self) -> dict:
        return {"weights": dict(self.weights), "k": self.k}


class _Scorer:
    """Mean fused nDCG@10 of a set of queries for a setting, from cached rankings.

    Each query's per-query work (its groups, the stage's reading of it) is made once
    (:class:`core.query.pipeline.QueryWork`: it does not depend on the weights or k); every setting
    is then ranked from it by :func:`core.query.pipeline.rank`, the function the engine itself ranks
    with (RRF, then the ranking stage when the run's settings have it on; the chunk step
    needs the index and is left out).
    """

    def __init__(self, run: EvalRun) -> None:
        self.run = run
        self.cache: dict[tuple[Setting, int], float] = {}
        self._works: dict[int, object] = {}

    def _work(self, i: int):
        found = self._works.get(i)
        if found is None:
            from ..query.pipeline import QueryWork

            qr = self.run.queries[i]
            rankings = {a: qr.rankings[a] for a in self.run.arms if a in qr.rankings}
            found = self._works[i] = QueryWork(rankings, qr.query.query, check=False) if rankings else None
        return found

    def hits(self, setting: Setting, i: int) -> list:
        from ..query.pipeline import rank

        work = self._work(i)
        if work is None:
            return []
        settings = self.run.settings.with_(weights=setting.weight_map, k=setting.k)
        return rank(work, settings, TOP_K)

    def query_ndcg(self, setting: Setting, i: int) -> float:
        key = (setting, i)
        found = self.cache.get(key)
        if found is None:
            found = self.cache[key] = ndcg_at_k(self.hits(setting, i), self.run.queries[i].query.gold, TOP_K)
        return found

    def mean(self, setting: Setting, idx: Sequence[int]) -> float:
        return mean([self.query_ndcg(setting, i) for i in idx])


def _closeness(setting: Setting, default: Setting) -> float:
    """How far a setting is from the default (ties go to the nearer one)."""
    d = sum(abs(w - dict(default.weights).get(a, DEFAULT_WEIGHT)) for a, w in setting.weights)
    return d + abs(math.log(setting.k / default.k))


def coordinate_ascent(
    scorer: _Scorer,
    idx: Sequence[int],
    start: Setting,
    *,
    rounds: int = ROUNDS,
    weight_grid: Sequence[float] = WEIGHT_GRID,
    k_grid: Sequence[float] = K_GRID,
) -> tuple[Setting, float]:
    """Maximise mean nDCG@10 over ``idx`` one coordinate at a time (k, then each weight).

    A coordinate moves only on a strict improvement; among equal scores the value nearest
    the default is kept, so the result does not drift on flat ground.
    """
    best = start
    best_score = scorer.mean(best, idx)
    arms = [a for a, _ in start.weights]
    for _ in range(rounds):
        moved = False
        for coord in ["k", *arms]:
            grid = k_grid if coord == "k" else weight_grid
            for value in grid:
                if coord == "k":
                    cand = Setting(best.weights, float(value))
                else:
                    cand = Setting(tuple((a, float(value) if a == coord else w) for a, w in best.weights), best.k)
                if cand == best:
                    continue
                score = scorer.mean(cand, idx)
                if score > best_score + 1e-12 or (
                    abs(score - best_score) <= 1e-12 and _closeness(cand, start) < _closeness(best, start) - 1e-12
                ):
                    moved = moved or score > best_score + 1e-12
                    best, best_score = cand, score
        if not moved:
            break
    return best, best_score


def folds(n: int, k: int = FOLDS, seed: int = SEED) -> list[list[int]]:
    """``k`` disjoint, near-equal held-out folds of ``range(n)``, shuffled with a fixed seed."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    k = max(1, min(k, n))
    return [sorted(order[i::k]) for i in range(k)]


def tune(run: EvalRun, *, n_folds: int = FOLDS, seed: int = SEED, rounds: int = ROUNDS) -> dict:
    """Tune the configuration's weights and k on cached rankings, with k-fold cross-validation.

    Returns the default (the shipped defaults of :mod:`core.query.config`) and tuned settings with
    their nDCG@10 on all queries (in sample),
    and per fold the train and held-out nDCG@10 of the default and of the setting tuned on
    that fold's train part; ``improves`` says whether tuning beat the default held-out.
    """
    if len(run.arms) < 2:
        raise ValueError("tuning needs at least two fused arms")
    from ..query.config import default_config

    scorer = exact = _Scorer(run)
    n = len(run.queries)
    shipped = default_config()  # the baseline to beat: what query, eval and the TUI use
    default = Setting(
        tuple((a, float(shipped["weights"].get(a, DEFAULT_WEIGHT))) for a in run.arms), float(shipped["k"])
    )
    everyone = list(range(n))
    tuned, _ = coordinate_ascent(scorer, everyone, default, rounds=rounds)
    per_fold = []
    if n >= 2:
        for held in folds(n, n_folds, seed):
            held_set = set(held)
            train = [i for i in everyone if i not in held_set]
            fold_best, _ = coordinate_ascent(scorer, train, default, rounds=rounds)
            per_fold.append(
                {
                    "train": len(train),
                    "held_out": len(held),
                    "tuned": fold_best.to_dict(),
                    "default_train": exact.mean(default, train),
                    "tuned_train": exact.mean(fold_best, train),
                    "default_held_out": exact.mean(default, held),
                    "tuned_held_out": exact.mean(fold_best, held),
                }
            )
    cv = {
        key: mean([f[key] for f in per_fold])
        for key in ("default_train", "tuned_train", "default_held_out", "tuned_held_out")
    }
    return {
        "queries": n,
        "arms": list(run.arms),
        "priors": run.priors,
        "grid": {"weights": list(WEIGHT_GRID), "k": list(K_GRID)},
        "default": {**default.to_dict(), "ndcg@10": exact.mean(default, everyone)},
        "tuned": {**tuned.to_dict(), "ndcg@10": exact.mean(tuned, everyone)},
        "cross_validation": {"folds": len(per_fold), "seed": seed, **cv, "per_fold": per_fold},
        "improves": bool(per_fold) and cv["tuned_held_out"] > cv["default_held_out"] + 1e-12,
    }
