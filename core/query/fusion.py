"""Weighted Reciprocal Rank Fusion of a query's span groups.

score(d) = sum over rankings i that contain d of  w_i / (k + rank_i(d)),  ranks 1-based
(the arithmetic, and the checks of k and the weights, are :mod:`core.base.rrf`'s).

:func:`fuse` is the pipeline's fusion stage (:mod:`core.query.pipeline`): a query's groups of
overlapping spans (:mod:`core.query.consolidate`), each scored by its arms' best ranks. It is the one
stage a slider move always reruns: what it gives depends on nothing but the weights and k.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..base.rrf import check_k, check_weights

if TYPE_CHECKING:
    from .consolidate import Group, Groups


@dataclass(frozen=True, slots=True)
class Fused:
    """A query's groups scored with weighted RRF (:func:`fuse`).

    ``kept``: the groups (of ``groups``) some arm votes for (an arm weighted 0 votes for
    nothing), in the groups' order, and their positions among them (``index``); ``scores``:
    each one's fused score. ``weights``: every ranked arm's weight (1.0 when not given), ``k``
    the RRF constant they were fused with.
    """

    groups: Groups
    kept: list[Group]
    scores: list[float]
    weights: dict[str, float]
    k: float
    index: np.ndarray


def fuse(groups: Groups, weights: Mapping[str, float] | None = None, k: float = 60) -> Fused:
    """Each group's weighted RRF score over its arms' best ranks (ValueError for a bad weight
    or k). Arms the weights do not name weigh 1.0."""
    kf = check_k(k)
    ws = check_weights(weights)
    weight_of = {arm: ws.get(arm, 1.0) for arm in groups.arms}
    # Every member's share at once (the same IEEE division as rrf_share's); a group's sum of
    # one or two shares is their fsum, so bincount's running sum serves, and a group of three
    # or more is summed again by math.fsum.
    shares = np.array([weight_of[a] for a in groups.arms])[groups.member_arm] / (kf + groups.member_rank)
    voting = shares > 0
    owner = groups.member_group[voting]
    n = len(groups.groups)
    votes = np.bincount(owner, minlength=n)
    totals = np.bincount(owner, weights=shares[voting], minlength=n)
    index = np.flatnonzero(votes)
    scores = totals[index].tolist()
    for j in np.flatnonzero(votes[index] > 2).tolist():
        g = index[j]
        mine = shares[groups.bounds[g] : groups.bounds[g + 1]]
        scores[j] = math.fsum(mine[mine > 0].tolist())
    listed = groups.groups
    return Fused(groups, [listed[i] for i in index.tolist()], scores, weight_of, kf, index)
