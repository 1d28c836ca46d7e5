"""The query pipeline (core.query.pipeline): a re-fuse with other weights or k (a slider move) reruns
what the weights change and reuses what depends on the query alone, counted, not timed."""

from __future__ import annotations

from collections import Counter

import pytest

from evals.rankings import FIXTURE_ROOT
from ranklens.core.engine import Engine
from ranklens.core.query import pipeline
from ranklens.core.query.ranking import Stage

#: Slider positions: each arm's weight moved, k moved, one arm weighed 0, and back.
MOVES = [
    ({"bm25": 1.5}, 5.0),
    ({"dense": 2.0, "fts5": 0.2}, 20.0),
    ({"symbols": 0.0}, 60.0),
    ({"bm25": 0.5, "dense": 0.5}, 2.0),
    ({}, None),
]


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    engine = Engine(FIXTURE_ROOT, cache_dir=tmp_path_factory.mktemp("cache"))
    engine.ensure_index(deep=False)
    yield engine
    engine.close()


@pytest.fixture
def counted(snapshot, monkeypatch):
    """The per-query work, counted: grouping passes, the stage's reading of a query, what a
    file's units' names hold, and the arms' searches within files (per file)."""
    counts: Counter = Counter()
    group = pipeline.group

    def grouping(*args, **kwargs):
        counts["group"] += 1
        return group(*args, **kwargs)

    class CountedStage(Stage):
        def __init__(self, *args, **kwargs):
            counts["stage"] += 1
            super().__init__(*args, **kwargs)

        def labelled(self, shape):
            counts["labelled"] += 1
            return super().labelled(shape)

    rank_files = snapshot._rank_files

    def searched(query, paths, arms):
        counts.update(f"searched {p}" for p in paths)
        return rank_files(query, paths, arms)

    monkeypatch.setattr(pipeline, "group", grouping)
    monkeypatch.setattr(pipeline, "Stage", CountedStage)
    monkeypatch.setattr(snapshot, "_rank_files", searched)
    snapshot._work.clear()
    snapshot._units.clear()
    return snapshot, counts


@pytest.mark.parametrize(
    "query", ["stop two indexers from writing the same index at once", 'where is "the index is not ready yet" raised']
)
def test_a_slider_move_ranks_as_a_fresh_engine_does(snapshot, query):
    """What a query keeps from one fuse to the next never changes an answer: every move
    ranks field for field as an engine that never saw the query."""
    result = snapshot.search(query, top_k=50)
    orders = set()
    for weights, k in [*MOVES, (None, None), *MOVES]:
        hits = snapshot.fuse(result.results.values(), weights=weights, k=k)
        orders.add(tuple(h.docid for h in hits))
        fresh = Engine(FIXTURE_ROOT, cache_dir=snapshot.cache_dir)
        assert fresh.open()
        try:
            want = fresh.fuse(result.results.values(), weights=weights, k=k)
        finally:
            fresh.close()
        assert [repr(h) for h in hits] == [repr(h) for h in want]
    assert len(orders) > 1  # the moves did re-rank


def test_a_slider_move_groups_reads_and_searches_nothing_again(counted):
    """Moves of every slider, top-k cuts and the stage toggled: the rankings were grouped
    once, the query read once, each top file's chunks searched once and what its units'
    names hold worked out once; the moves only reweigh and re-sort."""
    engine, counts = counted
    result = engine.search("restrict results to one folder or one language")
    first = Counter(counts)
    assert first["group"] == 1 and first["stage"] == 1 and first["labelled"] > 0
    for weights, k in MOVES * 3:
        engine.fuse(result.results.values(), weights=weights, k=k, top_k=10)
        engine.fuse(result.results.values(), weights=weights, k=k)
    engine.fuse(result.results.values(), priors=False)
    engine.fuse(result.results.values(), priors=True)
    assert counts["group"] == first["group"] == 1
    assert counts["stage"] == first["stage"] == 1
    searched = [v for k, v in counts.items() if k.startswith("searched ")]
    assert searched and max(searched) == 1  # no file's units searched twice
    assert counts["labelled"] == len(searched)  # what each file's units' names hold: once
