"""The terminal UI's session, driven without Textual: query ids, results, re-fuse, judgments,
files, export."""

from __future__ import annotations

import json

import pytest

from ranklens.core.engine import Engine, QueryError
from ranklens.core.query.settings import FusionSettings
from ranklens.core.session import Session


@pytest.fixture
def session(sample_repo):
    engine = Engine(sample_repo)
    s = Session(engine)
    assert s.update_index().kept > 0 and s.open_index()
    yield s
    engine.close()


def run_query(session: Session, text: str) -> int:
    qid = session.start(session.check(text))
    for arm in session.arms:
        assert session.accept(qid, session.run_arm(arm, qid, text))
    session.refuse()
    return qid


def test_a_query_collects_every_arm_and_fuses_as_the_engine_does(session):
    run_query(session, "how are passwords hashed")
    assert session.complete and session.answered() == session.arms
    expected = session.engine.search("how are passwords hashed", session.settings, top_k=1000).hits
    assert [h.docid for h in session.hits] == [h.docid for h in expected]
    assert session.hits[0].path == "app/auth.py"


def test_late_results_of_an_older_query_are_dropped(session):
    old = session.start("password")
    late = session.run_arm("bm25", old, "password")
    new = session.start("cache")
    assert not session.accept(old, late) and session.results == {}
    assert session.run_arm("bm25", old, "password") is None  # superseded before it ran
    assert session.accept(new, session.run_arm("bm25", new, "cache"))
    session.abandon()
    assert session.query_text == "" and session.hits == [] and not session.current(new)


def test_a_bad_query_says_why():
    with pytest.raises(QueryError, match="empty"):
        Session.check("   ")


def test_tuning_and_the_priors_toggle_re_fuse_without_running_arms(session):
    run_query(session, "how are passwords hashed")
    results = dict(session.results)
    session.tune({"bm25": 0.0, "fts5": 0.0, "symbols": 0.0}, 20.0)
    assert session.k == 20.0 and session.weights["bm25"] == 0.0
    only_dense = session.refuse()
    assert all(h.provenance == ["dense"] for h in only_dense)
    assert session.toggle_priors() is False
    plain = session.refuse()
    assert all(not h.signals and not h.priors for h in plain)
    assert session.results == results  # nothing ran again


def test_a_broken_config_falls_back_to_the_shipped_settings(sample_repo):
    engine = Engine(sample_repo)
    engine.directory.mkdir(parents=True, exist_ok=True)
    (engine.directory / "config.json").write_text("{not json")
    s = Session(engine)
    assert s.config_error and "config.json" in s.config_error
    assert s.settings == FusionSettings.resolve(None)


def test_judging_toggles_and_the_metrics_follow(session):
    run_query(session, "how are passwords hashed")
    assert session.metrics_note() == ""
    top = session.hits[0]
    judged = session.judge(top, True)
    assert judged.error is None and judged.judgments.verdict(top) is True
    assert session.metrics_note().startswith("MRR@10 1.00")
    assert session.judge(top, True).judgments is None  # the same verdict again clears it
    assert session.metrics_note() == ""


def test_files_are_read_redacted_and_exported_as_a_handoff(session):
    from ranklens.core.base.handoff_schema import validate_handoff
    from ranklens.core.text.secrets import MARKER

    (session.engine.root / "deploy.sh").write_text(
        "echo deploy\nAWS_SECRET_ACCESS_KEY=" + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY\n"
    )
    assert MARKER in session.read_file("deploy.sh") and "EXAMPLEKEY" not in session.read_file("deploy.sh")
    run_query(session, "how are passwords hashed")
    data = session.handoff(session.hits[:2])
    validate_handoff(data)
    assert [r["path"] for r in data["results"]] == [h.path for h in session.hits[:2]]
    assert data["k"] == session.k and data["weights"] == session.weights and data["priors"] is True
    assert all(len(r["sha256"]) == 64 for r in data["results"])
    json.dumps(data)
