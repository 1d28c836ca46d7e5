"""Relevance judgments per root, the config file, and what an index rebuild keeps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from ranklens.core.evaluation import Span, load_queries
from ranklens.core.judgments import judge, judgments_for, judgments_path, load_judgments, query_metrics
from ranklens.core.query.config import ConfigError, config_path, default_config, load_config, save_config


def test_judge_records_relevant_and_not_relevant_spans(tmp_path):
    root = tmp_path
    assert judgments_for(root, "hash a password") is None
    judge(root, "hash a password", "app/auth.py", 9, 11, True)
    found = judge(root, "hash a password", "app/cache.py", 1, 19, False)
    assert found.relevant == [Span("app/auth.py", 9, 11)]
    assert found.not_relevant == [Span("app/cache.py", 1, 19)]
    again = judgments_for(root, "  hash   a password ")  # matched on normalised text
    assert again is not None and again.relevant == found.relevant
    assert judgments_for(root, "something else") is None


def test_rejudging_a_span_replaces_and_none_forgets(tmp_path):
    judge(tmp_path, "q", "a.py", 1, 5, True)
    found = judge(tmp_path, "q", "a.py", 1, 5, False)
    assert found.relevant == [] and found.not_relevant == [Span("a.py", 1, 5)]
    judge(tmp_path, "q", "a.py", 1, 5, None)
    assert judgments_for(tmp_path, "q") is None
    assert load_judgments(tmp_path) == {}


def test_verdict_uses_span_overlap_so_merged_hits_keep_their_mark(tmp_path):
    found = judge(tmp_path, "q", "a.py", 10, 20, True)
    found = judge(tmp_path, "q", "b.py", 1, 5, False)
    assert found.verdict(Span("a.py", 1, 40)) is True  # a wider, re-fused span over the judged one
    assert found.verdict(Span("b.py", 5, 9)) is False
    assert found.verdict(Span("a.py", 21, 30)) is None


def test_metrics_for_the_status_line(tmp_path):
    found = judge(tmp_path, "q", "a.py", 10, 20, True)
    hits = [Span("x.py", 1, 2), Span("a.py", 15, 15)]
    assert found.metrics(hits) == query_metrics(hits, [Span("a.py", 10, 20)])
    assert found.metrics(hits)["mrr@10"] == 0.5
    only_negative = judge(tmp_path, "other", "a.py", 1, 2, False)
    assert only_negative.metrics(hits) is None


def test_the_file_is_a_labeled_query_file(tmp_path):
    judge(tmp_path, "hash a password", "app/auth.py", 9, 11, True)
    judge(tmp_path, "hash a password", "app/cache.py", 1, 19, False)
    judge(tmp_path, "cache eviction", "app/cache.py", 14, 19, False)
    path = judgments_path(tmp_path)
    queries = {q.query: q for q in load_queries(path)}
    assert queries["hash a password"].gold == (Span("app/auth.py", 9, 11),)
    assert queries["hash a password"].kind == "judged"
    assert queries["cache eviction"].gold == ()  # only judged not relevant: scored by nobody
    assert queries["cache eviction"].not_relevant == (Span("app/cache.py", 14, 19),)
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_bad_judgments_are_refused(tmp_path):
    for args in [("", "a.py", 1, 2), ("q", "/abs.py", 1, 2), ("q", "a.py", 3, 2), ("q", "a.py", 0, 2)]:
        with pytest.raises(ValueError):
            judge(tmp_path, *args, True)


def test_concurrent_judgments_are_all_kept(tmp_path):
    def mark(i):
        judge(tmp_path, f"query {i % 3}", f"f{i}.py", 1, 2, i % 2 == 0)

    threads = [threading.Thread(target=mark, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = load_judgments(tmp_path)
    assert sum(len(j.relevant) + len(j.not_relevant) for j in everything.values()) == 24


def test_eval_reads_the_judgments_file(sample_repo):
    judge(sample_repo, "how are passwords hashed", "app/auth.py", 9, 11, True)
    judge(sample_repo, "evict the oldest cache entry", "app/cache.py", 14, 19, True)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ranklens",
            "eval",
            str(judgments_path(sample_repo)),
            "--root",
            str(sample_repo),
            "--json",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["queries"] == 2 and set(data["groups"]) == {"all", "judged"}


# ----------------------------------------------------------------------------- config


def test_config_defaults_save_and_validation(tmp_path):
    assert load_config(tmp_path) == default_config()
    path = save_config(tmp_path, {"dense": 1.4, "bm25": 0.6}, 30, extra={"tuned": {"n": 3}})
    assert path == config_path(tmp_path)
    # The saved weights win; arms the config does not name keep the shipped defaults.
    shipped = default_config()["weights"]
    assert load_config(tmp_path) == {"weights": {**shipped, "dense": 1.4, "bm25": 0.6}, "k": 30.0}
    assert json.loads(path.read_text())["tuned"] == {"n": 3}
    with pytest.raises(ConfigError):
        save_config(tmp_path, {"dense": -1}, 30)
    path.write_text('{"weights": [1, 2]}')
    with pytest.raises(ConfigError, match="weights"):
        load_config(tmp_path)


def test_the_shipped_defaults_follow_the_arms_installed(monkeypatch):
    from ranklens.core import arms
    from ranklens.core.query import config

    monkeypatch.setattr(arms, "default_arms", lambda: ("bm25", "fts5", "dense", "symbols"))
    assert config.default_config() == {"weights": config.DEFAULT_WEIGHTS, "k": config.DEFAULT_K}
    monkeypatch.setattr(arms, "default_arms", lambda directory=None: ("bm25", "fts5", "dense", "symbols", "deep"))
    assert config.default_config()["weights"] == config.DEFAULT_WEIGHTS_DEEP
    assert set(config.DEFAULT_WEIGHTS_DEEP) - set(config.DEFAULT_WEIGHTS) == {"deep"}


def test_an_index_rebuild_keeps_config_and_judgments(sample_repo):
    from ranklens.core.arms.protocol import IndexSettings
    from ranklens.core.engine import Engine

    engine = Engine(sample_repo)
    engine.ensure_index()
    engine.close()
    save_config(sample_repo, {"dense": 2.0}, 20)
    judge(sample_repo, "q", "app/auth.py", 1, 3, True)
    rebuilt = Engine(sample_repo, IndexSettings(window=30, overlap=5))  # new chunking: full rebuild
    stats = rebuilt.ensure_index()
    rebuilt.close()
    assert stats.rebuilt
    assert load_config(sample_repo) == {"weights": {**default_config()["weights"], "dense": 2.0}, "k": 20.0}
    assert judgments_for(sample_repo, "q") is not None
