"""The walk's trail (core/walk.py) and the handoff's ``reached`` record, without Textual (the
app's side: tests/tui/test_walk.py)."""

from __future__ import annotations

import pytest

from ranklens.core.base.handoff_schema import HandoffError, validate_handoff
from ranklens.core.graph.related import Place
from ranklens.core.handoff import envelope
from ranklens.core.walk import Step, Trail, like_step, place_hit, qualified_name, reached_record

RETRY = Place("shop/retry.py", 4, 12, "Retry", "shop/retry.py > Retry")
FETCH = Place("shop/client.py", 4, 7, "fetch", "shop/client.py > fetch", 5, "Retry", "imported", 1)


def document(hits, reached) -> dict:
    return envelope(
        query="backoff",
        mode="all",
        retrievers=["bm25"],
        skipped=[],
        weights={"bm25": 1.0},
        k=60.0,
        hits=hits,
        reached=reached,
    )


def test_the_trail_is_a_stack_and_its_crumbs_follow_it():
    trail = Trail("get backoff time")
    assert trail.crumbs() == ["question"] and trail.pop() is None  # the question stays
    trail.push(Step("unit", qualified_name(RETRY), place=RETRY))
    trail.push(Step("unit", "callers: fetch", place=FETCH, reached=reached_record("caller", RETRY)))
    assert trail.crumbs() == ["question", "Retry", "callers: fetch"]
    assert trail.pop().place is FETCH and trail.crumbs() == ["question", "Retry"]
    trail.push(like_step(RETRY, "Retry get_backoff_time"))
    assert trail.crumbs()[-1] == "like shop/retry.py:Retry"
    assert trail.list_step().list_reached() == {"by": "like", "of": {**reached_record("x", RETRY)["of"]}}
    trail.reset("other")
    assert trail.crumbs() == ["question"] and trail.steps[0].query == "other"


def test_a_selection_along_the_walk_exports_with_how_it_was_reached():
    trail = Trail("q")
    assert trail.toggle(FETCH, reached_record("caller", RETRY), rank=1)
    assert trail.is_selected(FETCH) and trail.count == 1
    hit = place_hit(RETRY)
    hits, how = trail.export([hit], reached_record("question"))
    assert [h.docid for h in hits] == ["shop/retry.py:4-12", "shop/client.py:4-7"]
    data = validate_handoff(document(hits, how))
    assert data["results"][0]["reached"] == {"by": "question"}
    assert data["results"][1]["reached"] == {
        "by": "caller",
        "of": {"path": "shop/retry.py", "start_line": 4, "end_line": 12, "name": "Retry"},
    }
    assert not trail.toggle(FETCH, {}) and trail.count == 0  # again: unselected


def test_reached_is_optional_and_checked():
    hit = place_hit(RETRY)
    validate_handoff(document([hit], None))  # an export without it (every older one) is valid
    assert "reached" not in document([hit], None)["results"][0]
    with pytest.raises(HandoffError, match="reached"):
        validate_handoff(document([hit], {hit.docid: {"by": "caller"}}))  # of which unit?
    with pytest.raises(HandoffError, match="reached"):
        validate_handoff(document([hit], {hit.docid: {"by": "neighbour", "of": reached_record("x", RETRY)["of"]}}))
