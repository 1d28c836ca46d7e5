import math
import random

import pytest
from hypothesis import given, strategies as st

from ranklens.core.base.rrf import reciprocal_rank_fusion


def test_rrf_formula_with_weights():
    fused = dict(reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=10, weights=[2.0, 1.0]))
    assert fused["a"] == pytest.approx(2 / 11)
    assert fused["b"] == pytest.approx(2 / 12 + 1 / 11)
    assert fused["c"] == pytest.approx(1 / 12)


def test_ranks_are_one_based_and_default_weight_is_one():
    ((doc, score),) = reciprocal_rank_fusion([["only"]], k=60)
    assert doc == "only" and score == 1 / 61


def test_scored_pairs_are_accepted():
    fused = reciprocal_rank_fusion([[("a", 3.5), ("b", 1.0)]])
    assert [d for d, _ in fused] == ["a", "b"]


def test_ties_broken_by_id_deterministically():
    fused = reciprocal_rank_fusion([["b", "a"], ["a", "b"]])
    assert [d for d, _ in fused] == ["a", "b"]
    assert fused[0][1] == fused[1][1]


@pytest.mark.parametrize("k", [0, 0.5, 1_000_001, float("nan"), float("inf"), -5, "60", True])
def test_k_out_of_range_is_refused(k):
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"]], k=k)


@pytest.mark.parametrize("w", [-0.1, float("nan"), float("inf")])
def test_bad_weight_is_refused(w):
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"], ["b"]], weights=[1.0, w])


def test_weights_of_wrong_length_are_refused():
    with pytest.raises(ValueError, match="2 rankings"):
        reciprocal_rank_fusion([["a"], ["b"]], weights=[1.0])


def test_duplicate_id_in_one_ranking_is_refused():
    with pytest.raises(ValueError, match="twice"):
        reciprocal_rank_fusion([["a", "b", "a"]])


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_native_score_is_refused(bad):
    with pytest.raises(ValueError, match="non-finite"):
        reciprocal_rank_fusion([[("a", 1.0), ("b", bad)]])


@given(st.lists(st.lists(st.sampled_from("abcdefghij"), unique=True), min_size=1, max_size=5))
def test_order_of_rankings_does_not_change_the_result(rankings):
    shuffled = rankings[:]
    random.Random(0).shuffle(shuffled)
    assert reciprocal_rank_fusion(rankings) == reciprocal_rank_fusion(shuffled)
    for _, score in reciprocal_rank_fusion(rankings):
        assert math.isfinite(score) and score > 0
