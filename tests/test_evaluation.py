"""Evaluation: the labeled query file, each metric rule, tuning, and the eval/tune CLI."""

from __future__ import annotations

import json
import math

import pytest
from cli_helpers import run
from hypothesis import given, settings, strategies as st

from ranklens.core.base.types import ConsolidatedHit, Hit, make_docid
from ranklens.core.evaluation import (
    FUSED,
    K_GRID,
    MAX_SPAN_LINES,
    WEIGHT_GRID,
    EvalFileError,
    EvalRun,
    QueryRun,
    Setting,
    Span,
    calibration,
    coordinate_ascent,
    file_hit_at_k,
    first_hit_rank,
    folds,
    hit_at_k,
    load_queries,
    locates,
    metric_names,
    metrics_for,
    ndcg_at_k,
    overlaps,
    parse_annotations,
    parse_queries,
    percentile,
    query_metrics,
    rebase_gold,
    reciprocal_rank,
    report,
    run_queries,
    tune,
)
from ranklens.core.evaluation.tuning import _Scorer
from ranklens.core.query.config import default_config
from ranklens.core.query.pipeline import fuse_rankings
from ranklens.core.query.settings import FusionSettings


def S(path, start, end):
    return Span(path, start, end)


def log2(x):
    return math.log2(x)


# ----------------------------------------------------------------------------- metrics


def test_overlap_needs_same_file_and_a_shared_line():
    gold = S("a.py", 10, 20)
    assert overlaps(S("a.py", 1, 10), gold)  # shares line 10
    assert overlaps(S("a.py", 20, 30), gold)
    assert overlaps(S("a.py", 12, 14), gold) and overlaps(S("a.py", 1, 99), gold)
    assert not overlaps(S("a.py", 1, 9), gold)  # touching is not overlapping
    assert not overlaps(S("a.py", 21, 30), gold)
    assert not overlaps(S("b.py", 10, 20), gold)


def test_hit_at_k_counts_only_the_first_k():
    gold = [S("a.py", 10, 20)]
    hits = [S("b.py", 1, 5), S("a.py", 30, 40), S("a.py", 15, 16)]
    assert hit_at_k(hits, gold, 1) == 0.0
    assert hit_at_k(hits, gold, 2) == 0.0
    assert hit_at_k(hits, gold, 3) == 1.0
    assert hit_at_k([], gold, 10) == 0.0


def test_file_hit_needs_the_file_not_the_lines():
    gold = [S("a.py", 10, 20)]
    hits = [S("b.py", 1, 5)] * 4 + [S("a.py", 90, 99)]
    assert file_hit_at_k(hits, gold, 5) == 1.0
    assert hit_at_k(hits, gold, 5) == 0.0
    assert file_hit_at_k(hits, gold, 4) == 0.0


def test_a_span_hit_shares_half_the_shorter_span_and_is_not_too_wide():
    gold = S("a.py", 37, 74)  # 38 lines
    assert locates(S("a.py", 37, 74), gold)
    assert not locates(S("a.py", 1, 40), gold)  # a window grazing it by four lines
    assert locates(S("a.py", 1, 56), gold)  # 20 of its 38 lines
    assert locates(S("a.py", 50, 60), gold)  # a hit inside the gold
    assert not locates(S("b.py", 37, 74), gold)
    small = S("a.py", 213, 215)
    assert locates(S("a.py", 178, 215), small)  # a 3-line method in its 38-line chunk
    assert locates(S("a.py", 201, 214), small)  # two of its three lines
    assert not locates(S("a.py", 215, 230), small)  # one of three
    # Width: at most MAX_SPAN_LINES, or twice the gold's length when that is more.
    assert locates(S("a.py", 200, 200 + MAX_SPAN_LINES - 1), small)
    assert not locates(S("a.py", 200, 200 + MAX_SPAN_LINES), small)  # a whole-file hit
    big = S("a.py", 1, 200)
    assert locates(S("a.py", 1, 400), big) and not locates(S("a.py", 1, 401), big)


def test_mrr_is_the_reciprocal_of_the_first_span_hit_within_10():
    gold = [S("a.py", 10, 20)]
    miss = S("b.py", 1, 2)
    assert reciprocal_rank([miss, miss, miss, S("a.py", 5, 15)], gold) == 0.25
    assert reciprocal_rank([miss] * 10 + [S("a.py", 10, 10)], gold) == 0.0
    assert first_hit_rank([miss, S("a.py", 10, 10)], gold) == 2
    assert first_hit_rank([miss], gold) is None


def test_ndcg_binary_gain_by_rank():
    gold = [S("a.py", 10, 20)]
    assert ndcg_at_k([S("a.py", 10, 20)], gold) == 1.0
    assert ndcg_at_k([S("x", 1, 1), S("a.py", 1, 16)], gold) == pytest.approx(1 / log2(3))
    assert ndcg_at_k([S("x", 1, 1)] * 10 + [S("a.py", 10, 20)], gold) == 0.0


def test_ndcg_credits_each_gold_once():
    gold = [S("a.py", 10, 20), S("b.py", 1, 5)]
    ideal = 1 + 1 / log2(3)
    # The second hit overlaps the gold already credited: it earns nothing.
    twice = [S("a.py", 10, 12), S("a.py", 15, 20), S("b.py", 1, 1)]
    assert ndcg_at_k(twice, gold) == pytest.approx((1 + 1 / log2(4)) / ideal)
    assert ndcg_at_k([S("a.py", 1, 99), S("b.py", 2, 3)], gold) == pytest.approx(1.0)
    # A hit overlapping two gold spans of one file earns one gain, not two.
    two_in_one = [S("c.py", 1, 10), S("c.py", 20, 30)]
    assert ndcg_at_k([S("c.py", 1, 30)], two_in_one) == pytest.approx(1 / ideal)


def test_ndcg_ideal_is_over_at_most_10_gold():
    gold = [S(f"f{i}.py", 1, 1) for i in range(12)]
    assert ndcg_at_k([S(f"f{i}.py", 1, 1) for i in range(10)], gold) == pytest.approx(1.0)
    assert ndcg_at_k([], gold) == 0.0
    assert ndcg_at_k([S("a", 1, 1)], []) == 0.0


def test_a_whole_file_target_is_located_by_any_hit_in_its_file():
    whole = Span("a.py")
    assert whole.whole_file and not S("a.py", 1, 2).whole_file
    assert locates(S("a.py", 1, 900), whole) and locates(S("a.py", 7, 7), whole)  # no width limit
    assert overlaps(S("a.py", 40, 41), whole) and not locates(S("b.py", 1, 2), whole)
    hits = [S("x.py", 1, 2), S("a.py", 300, 320)]
    assert hit_at_k(hits, [whole], 1) == 0 and hit_at_k(hits, [whole], 2) == 1
    assert reciprocal_rank(hits, [whole]) == 0.5 and file_hit_at_k(hits, [whole]) == 1


def test_ndcg_credits_a_whole_file_target_once_by_the_first_hit_in_it():
    # As the benchmark does: a target's gain sits at its first matching rank; a second hit
    # in the same file earns nothing (the benchmark's second rank in one file earns nothing
    # either: the target is already matched).
    gold = [Span("a.py"), Span("b.py")]
    hits = [S("a.py", 1, 5), S("a.py", 50, 60), S("b.py", 1, 2)]
    assert ndcg_at_k(hits, gold) == pytest.approx((1 + 1 / log2(4)) / (1 + 1 / log2(3)))
    assert ndcg_at_k([S("x.py", 1, 1), S("a.py", 1, 5), S("a.py", 9, 9)], [Span("a.py")]) == pytest.approx(1 / log2(3))
    # A span and its whole file, both gold: two targets, and two hits in the file earn both.
    both = [S("a.py", 10, 20), Span("a.py")]
    assert ndcg_at_k([S("a.py", 10, 20), S("a.py", 90, 99)], both) == pytest.approx(1.0)


def test_metrics_for_and_query_metrics():
    gold = [S("a.py", 10, 20)]
    hits = [S("b.py", 1, 2), S("a.py", 11, 11)]
    m = metrics_for(hits, gold)
    assert list(m) == list(metric_names()) == ["hit@1", "hit@5", "hit@10", "file_hit@5", "mrr@10", "ndcg@10"]
    assert m["hit@1"] == 0 and m["hit@5"] == 1 and m["mrr@10"] == 0.5
    assert query_metrics(hits, gold) == {"mrr@10": 0.5, "ndcg@10": pytest.approx(1 / log2(3))}
    assert metric_names(3) == ("hit@1", "hit@5", "hit@3", "file_hit@5", "mrr@3", "ndcg@3")
    assert metrics_for(hits, gold, 1)["hit@5"] == 0  # only the first `depth` hits count


def test_percentile_interpolates():
    assert percentile([], 50) is None
    assert percentile([5.0], 95) == 5.0
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile(list(range(1, 101)), 95) == pytest.approx(95.05)


# ----------------------------------------------------------------------------- loading


def test_parse_queries_reads_every_field():
    lines = [
        '{"id": "q1", "query": "hash a password", "kind": "paraphrase",'
        ' "gold": [{"path": "app/auth.py", "start_line": 9, "end_line": 11}]}',
        "",
        '{"id": 2, "query": "LRUCache", "gold": [{"path": "./app/cache.py", "start_line": 1, "end_line": 3}], "note": "x"}',
    ]
    q1, q2 = parse_queries(lines, "f.jsonl")
    assert (q1.id, q1.kind, q1.gold, q1.line) == ("q1", "paraphrase", (S("app/auth.py", 9, 11),), 1)
    assert (q2.id, q2.kind, q2.gold[0].path, q2.line) == ("2", None, "app/cache.py", 3)


GOLD = '[{"path": "a.py", "start_line": 1, "end_line": 2}]'


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"query": "x", "gold": ' + GOLD + "}", '"id"'),
        ('{"id": "a", "gold": ' + GOLD + "}", '"query"'),
        ('{"id": "a", "query": "  ", "gold": ' + GOLD + "}", "empty"),
        ('{"id": "a", "query": "?!", "gold": ' + GOLD + "}", "no searchable words"),
        ('{"id": "a", "query": "x"}', 'missing "gold"'),
        ('{"id": "a", "query": "x", "gold": {}}', "must be a list"),
        ('{"id": "a", "query": "x", "gold": [3]}', "must be a path or an object"),
        ('{"id": "a", "query": "x", "gold": [{"path": "a.py", "start_line": 3}]}', '"end_line" is missing'),
        ('{"id": "a", "query": "x", "gold": [{"path": "a.py", "start_line": 0, "end_line": 2}]}', "start_line"),
        ('{"id": "a", "query": "x", "gold": [{"path": "a.py", "start_line": 5, "end_line": 2}]}', "before"),
        ('{"id": "a", "query": "x", "gold": [{"path": "a.py", "start_line": 1.5, "end_line": 2}]}', "whole number"),
        ('{"id": "a", "query": "x", "gold": [{"path": "/etc/x", "start_line": 1, "end_line": 2}]}', "relative"),
        ('{"id": "a", "query": "x", "gold": [{"path": "../x", "start_line": 1, "end_line": 2}]}', "relative"),
        ('{"id": "a", "query": "x", "gold": ' + GOLD + ', "kind": 3}', '"kind"'),
    ],
)
def test_bad_lines_are_named(line, message):
    good = '{"id": "ok", "query": "fine", "gold": ' + GOLD + "}"
    with pytest.raises(EvalFileError) as err:
        parse_queries([good, line], "f.jsonl")
    assert str(err.value).startswith("f.jsonl:2: ")
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_duplicate_ids_and_empty_files_are_refused(tmp_path):
    line = '{"id": "a", "query": "x", "gold": ' + GOLD + "}"
    with pytest.raises(EvalFileError, match=r"f:3: duplicate id 'a' \(first on line 1\)"):
        parse_queries([line, "", line], "f")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(EvalFileError, match="holds no queries"):
        load_queries(empty)
    with pytest.raises(EvalFileError, match="no such file"):
        load_queries(tmp_path / "missing.jsonl")
    with pytest.raises(EvalFileError, match="directory"):
        load_queries(tmp_path)
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(EvalFileError, match="UTF-8"):
        load_queries(binary)


def test_whole_file_gold_in_both_forms():
    (q,) = parse_queries(
        [
            '{"id": "w", "query": "x", "gold": [{"path": "./a.py"}, "b/c.py", {"path": "d.py", "start_line": 2, "end_line": 4}]}'
        ]
    )
    assert q.gold == (Span("a.py"), Span("b/c.py"), S("d.py", 2, 4))
    assert q.to_dict()["gold"] == [
        {"path": "a.py"},
        {"path": "b/c.py"},
        {"path": "d.py", "start_line": 2, "end_line": 4},
    ]
    # null lines, as the benchmark writes a target it has no span for, are the whole file too
    (q,) = parse_queries(
        ['{"id": "w", "query": "x", "gold": [{"path": "a.py", "start_line": null, "end_line": null}]}']
    )
    assert q.gold == (Span("a.py"),)


def test_unknown_fields_are_ignored_with_one_note_per_file():
    lines = [
        json.dumps(
            {
                "id": f"q{i}",
                "query": "x",
                "repo": "r",
                "gold": [{"path": "a.py", "symbol": "f"}],
                "not_relevant": [{"path": "b.py", "why": "?"}],
            }
        )
        for i in range(3)
    ]
    notes = []
    queries = parse_queries(lines, "f.jsonl", notify=notes.append)
    assert [q.gold for q in queries] == [(Span("a.py"),)] * 3
    assert notes == ["f.jsonl: ignored fields ranklens does not use: gold.symbol, not_relevant.why, repo"]
    notes.clear()
    parse_queries(['{"id": "a", "query": "x", "gold": []}'], notify=notes.append)
    assert notes == []


BENCH = [
    {
        "query": "store creation",
        "relevant": ["src/createStore.ts"],
        "secondary": ["src/compose.ts"],
        "category": "architecture",
    },
    {
        "query": "Depends",
        "relevant": [{"path": "src/params.ts", "start_line": 7, "end_line": 9}],
        "secondary": [],
        "category": "symbol",
        "seed": {"path": "src/params.ts", "line": 7},
        "related": [],
    },
    {"query": "no category", "relevant": ["src/a.ts"]},
]


def test_benchmark_annotations_are_read_as_they_are():
    notes = []
    q1, q2, q3 = parse_annotations(json.dumps(BENCH, indent=1), "redux.json", notify=notes.append)
    assert (q1.id, q1.kind, q1.gold) == ("1", "architecture", (Span("src/createStore.ts"), Span("src/compose.ts")))
    assert (q2.id, q2.kind, q2.gold) == ("2", "symbol", (S("src/params.ts", 7, 9),))
    assert (q3.id, q3.kind) == ("3", None)
    assert notes == ["redux.json: ignored fields ranklens does not use: related, seed"]


@pytest.mark.parametrize(
    "text, message",
    [
        ('[{"query": "x", "relevant": []},\n {"query": "y"}]', 'redux.json: item 2: missing "relevant"'),
        ('[{"query": "x", "relevant": [3]}]', 'item 1: "relevant" item 1 must be a path or an object'),
        ('[{"query": "x", "relevant": [], "category": 3}]', '"category"'),
        ('[{"query": "x", "relevant": []}, 5]', "item 2: expected a JSON object"),
        ('[\n{"query": "x", "relevant": []}\n{"query": "y"}]', "redux.json:3: not valid JSON"),
        ("[]", "holds no queries"),
    ],
)
def test_bad_benchmark_files_are_named(text, message):
    with pytest.raises(EvalFileError) as err:
        parse_annotations(text, "redux.json")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_json_array_file_is_read_as_benchmark_annotations(tmp_path):
    path = tmp_path / "redux.json"
    path.write_text("\ufeff\n" + json.dumps(BENCH))
    assert [q.id for q in load_queries(path)] == ["1", "2", "3"]


def _labeled(*golds):
    from ranklens.core.evaluation import LabeledQuery

    return [LabeledQuery(str(i), "x", tuple(g)) for i, g in enumerate(golds, start=1)]


def test_rebase_gold_strips_the_roots_own_trailing_folders(tmp_path):
    root = tmp_path / "checkout" / "packages" / "src"
    (root / "node").mkdir(parents=True)
    for name in ("core.ts", "node/pool.ts", "index.ts"):
        (root / name).write_text("x\n")
    queries = _labeled(
        [Span("packages/src/core.ts"), S("packages/src/node/pool.ts", 1, 1)],
        [Span("packages/src/gone.ts"), Span("docs/readme.md")],
    )
    out, note = rebase_gold(queries, root)
    assert [q.gold for q in out] == [
        (Span("core.ts"), S("node/pool.ts", 1, 1)),
        (Span("gone.ts"), Span("docs/readme.md")),  # one prefix for all: a missing file is still rebased
    ]
    assert (
        note
        == "gold paths are relative to a folder above the root: stripped the root's trailing 'packages/src/' from 3 of 4 gold paths"
    )
    # Already relative to the root: nothing changes, no note.
    same, note = rebase_gold(out, root)
    assert same == out and note is None
    # Both readings exist as often (src/src/x.ts and src/x.ts): the paths as written win.
    (root / "src").mkdir()
    (root / "src" / "x.ts").write_text("x\n")
    (root / "x.ts").write_text("x\n")
    assert rebase_gold(_labeled([Span("src/x.ts")]), root)[1] is None


def _conf_hit(path, start, end, confidence):
    return ConsolidatedHit(path, start, end, make_docid(path, start, end), "", 1.0, 1, ["bm25"], 1, confidence)


def test_calibration_counts_each_level_and_how_often_it_is_right():
    from ranklens.core.evaluation import LabeledQuery

    q1 = LabeledQuery("q1", "x", (S("a.py", 1, 10),))
    q2 = LabeledQuery("q2", "y", (Span("d.py"),))
    fused1 = [
        _conf_hit("a.py", 1, 10, "high"),  # relevant
        _conf_hit("b.py", 1, 10, "high"),
        _conf_hit("a.py", 50, 60, "medium"),  # in the gold file, not on the span
        _conf_hit("c.py", 1, 2, "low"),
    ]
    fused2 = [
        _conf_hit("d.py", 5, 9, "high"),  # relevant (whole file)
        _conf_hit("d.py", 100, 120, "medium"),  # relevant too: the same file
        _conf_hit("x.py", 1, 1, "shaky"),  # a level some other rule invented
    ]
    runs = [QueryRun(q1, {}, {}, fused1, 1.0), QueryRun(q2, {}, {}, fused2, 1.0)]
    cal = calibration(EvalRun(runs, FusionSettings(("bm25",), k=60.0), ["bm25"], {}))
    assert cal["top_k"] == 10 and cal["hits"] == 7
    assert list(cal["levels"]) == ["high", "medium", "low", "shaky"]
    assert cal["levels"]["high"] == {
        "hits": 3,
        "share": pytest.approx(3 / 7),
        "relevant": 2,
        "relevant_share": pytest.approx(2 / 3),
    }
    assert cal["levels"]["medium"] == {"hits": 2, "share": pytest.approx(2 / 7), "relevant": 1, "relevant_share": 0.5}
    assert cal["levels"]["low"] == {"hits": 1, "share": pytest.approx(1 / 7), "relevant": 0, "relevant_share": 0.0}
    assert cal["levels"]["shaky"]["hits"] == 1
    # Only the top K count; a level nobody has shows 0 hits and no share relevant.
    cut = calibration(EvalRun(runs, FusionSettings(("bm25",), k=60.0), ["bm25"], {}, top_k=1))
    assert cut["hits"] == 2 and cut["levels"]["high"]["relevant"] == 2
    assert cut["levels"]["low"] == {"hits": 0, "share": 0.0, "relevant": 0, "relevant_share": None}


def test_empty_gold_is_accepted_and_left_out_of_scoring():
    (q,) = parse_queries(['{"id": "a", "query": "x", "gold": []}'])
    assert q.gold == ()


# ----------------------------------------------------------------------------- tuning


def _hit(arm, path, start, end, rank):
    return Hit(arm, make_docid(path, start, end), path, start, end, rank, 1.0, path)


def _fuse(results, *, weights=None, k=60, top_k=None):
    """What Engine.fuse does with a mapping of rankings."""
    hits = fuse_rankings(dict(results), k=k, weights=weights)
    return hits[:top_k] if top_k else hits


def _run(rankings_per_query, golds, arms=("good", "noisy")):
    from ranklens.core.evaluation import LabeledQuery

    queries = []
    for i, (rankings, gold) in enumerate(zip(rankings_per_query, golds)):
        lq = LabeledQuery(f"q{i}", f"query {i}", tuple(gold))
        fused = _fuse(rankings, top_k=10)
        queries.append(QueryRun(lq, rankings, {a: 1.0 for a in rankings}, fused, 1.0))
    return EvalRun(queries, FusionSettings(tuple(arms), k=60.0, priors=False), list(arms), {})


def _synthetic(n=10):
    """Arm "good" ranks the gold file 2nd; arm "noisy" ranks only junk, which pushes it down."""
    per_query, golds = [], []
    for i in range(n):
        gold = f"zgold{i}.py"  # sorts last among equal scores
        good = [_hit("good", f"junk{i}_0.py", 1, 5, 1), _hit("good", gold, 1, 5, 2)]
        noisy = [_hit("noisy", f"junk{i}_{j}.py", 10, 20, j) for j in range(1, 13)]
        per_query.append({"good": good, "noisy": noisy})
        golds.append([S(gold, 1, 5)])
    return _run(per_query, golds)


def test_coordinate_ascent_moves_weight_to_the_arm_that_finds_the_gold():
    run = _synthetic()
    scorer = _Scorer(run)
    default = Setting((("good", 1.0), ("noisy", 1.0)), 60.0)
    best, score = coordinate_ascent(scorer, range(len(run.queries)), default)
    assert score > scorer.mean(default, range(len(run.queries)))
    assert best.weight_map["noisy"] < best.weight_map["good"]
    assert best.k in K_GRID and all(w in WEIGHT_GRID for _, w in best.weights)


def test_tune_reports_default_tuned_and_cross_validation():
    result = tune(_synthetic(10), n_folds=5)
    assert result["arms"] == ["good", "noisy"]
    assert result["tuned"]["ndcg@10"] >= result["default"]["ndcg@10"]
    cv = result["cross_validation"]
    assert cv["folds"] == 5 and len(cv["per_fold"]) == 5
    assert sum(f["held_out"] for f in cv["per_fold"]) == 10
    assert all(f["train"] + f["held_out"] == 10 for f in cv["per_fold"])
    assert cv["tuned_held_out"] > cv["default_held_out"] and result["improves"] is True


def test_tuning_needs_two_arms():
    run = _synthetic(3)
    run.settings = run.settings.with_(arms=("good",))
    with pytest.raises(ValueError, match="two"):
        tune(run)


def test_folds_are_disjoint_cover_everything_and_are_seeded():
    parts = folds(23, 5, seed=7)
    flat = sorted(i for p in parts for i in p)
    assert flat == list(range(23)) and len(parts) == 5
    assert {len(p) for p in parts} <= {4, 5}
    assert parts == folds(23, 5, seed=7) and parts != folds(23, 5, seed=8)
    assert len(folds(3, 5)) == 3


_spans = st.tuples(st.sampled_from(["a.py", "b.py", "c.py"]), st.integers(1, 60), st.integers(0, 30))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(_spans, max_size=12, unique_by=lambda s: s), min_size=2, max_size=3),
    st.lists(st.sampled_from(WEIGHT_GRID), min_size=3, max_size=3),
    st.sampled_from(K_GRID),
)
def test_tuning_scores_the_list_the_engine_ranks(arm_spans, weights, k):
    """The tuner re-fuses through the engine's own fusion: without the ranking stage its list
    is plain consolidation's, with it the stage's (one implementation, nothing to drift)."""
    from ranklens.core.query.pipeline import QueryWork, rank

    arms = ["bm25", "dense", "symbols"][: len(arm_spans)]
    rankings = {
        arm: [_hit(arm, p, s, s + n, r) for r, (p, s, n) in enumerate(spans, start=1)]
        for arm, spans in zip(arms, arm_spans)
    }
    run = _run([rankings], [[S("a.py", 1, 10)]], arms=arms)
    setting = Setting(tuple(zip(arms, weights)), float(k))
    tuned = [h.docid for h in _Scorer(run).hits(setting, 0)]
    plain = fuse_rankings(rankings, k=float(k), weights=setting.weight_map, merge_adjacent=False)[:10]
    assert tuned == [h.docid for h in plain]
    staged = run.settings.with_(weights=setting.weight_map, k=float(k), priors=True)
    run.settings = staged
    expected = rank(QueryWork(rankings, run.queries[0].query.query), staged, 10)
    assert [h.docid for h in _Scorer(run).hits(setting, 0)] == [h.docid for h in expected]


# ----------------------------------------------------------------------------- real engine

SAMPLE_QUERIES = [
    {
        "id": "s1",
        "kind": "identifier",
        "query": "PasswordHasher",
        "gold": [{"path": "app/auth.py", "start_line": 6, "end_line": 14}],
    },
    {
        "id": "s2",
        "kind": "paraphrase",
        "query": "how are passwords hashed",
        "gold": [{"path": "app/auth.py", "start_line": 9, "end_line": 11}],
    },
    {
        "id": "s3",
        "kind": "paraphrase",
        "query": "evict the oldest entry when the cache is full",
        "gold": [{"path": "app/cache.py", "start_line": 14, "end_line": 19}],
    },
    {
        "id": "s4",
        "kind": "identifier",
        "query": "RateLimiter Allow",
        "gold": [{"path": "server/main.go", "start_line": 11, "end_line": 15}],
    },
    {
        "id": "s5",
        "kind": "paraphrase",
        "query": "send an http request to the right handler",
        "gold": [{"path": "web/router.js", "start_line": 16, "end_line": 20}],
    },
    {
        "id": "s6",
        "kind": "identifier",
        "query": "parse_config",
        "gold": [{"path": "engine/src/lib.rs", "start_line": 1, "end_line": 7}],
    },
    {
        "id": "s7",
        "kind": "paraphrase",
        "query": "multiply two matrices",
        "gold": [{"path": "engine/src/lib.rs", "start_line": 14, "end_line": 19}],
    },
    {
        "id": "s8",
        "kind": "paraphrase",
        "query": "how do I install it",
        "gold": [{"path": "docs/guide.md", "start_line": 5, "end_line": 7}],
    },
    {
        "id": "s9",
        "kind": "paraphrase",
        "query": "zebra giraffe safari",
        "gold": [{"path": "zoo/animals.py", "start_line": 1, "end_line": 1}],
    },
    {"id": "s10", "query": "login session", "gold": [{"path": "app/auth.py", "start_line": 17, "end_line": 25}]},
]


@pytest.fixture
def sample_queries(tmp_path):
    path = tmp_path / "sample.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in SAMPLE_QUERIES))
    return path


def test_sample_gold_spans_are_what_they_claim(sample_repo):
    lines = {
        q["id"]: (sample_repo / q["gold"][0]["path"]).read_text().splitlines()
        for q in SAMPLE_QUERIES
        if q["id"] != "s9"
    }
    assert "class PasswordHasher" in lines["s1"][5]
    assert "def hash_password" in lines["s2"][8]
    assert "def put" in lines["s3"][13]
    assert "func (r *RateLimiter) Allow" in lines["s4"][11]
    assert "dispatch(request)" in lines["s5"][15]
    assert "fn multiply" in lines["s7"][15]
    assert lines["s8"][4] == "## Installation"


def test_run_and_report_over_a_real_index(sample_repo, sample_queries):
    from ranklens.core.arms import REGISTRY
    from ranklens.core.engine import Engine

    engine = Engine(sample_repo)
    engine.ensure_index()
    try:
        queries = load_queries(sample_queries)
        run = run_queries(
            engine, queries, FusionSettings.resolve(arms=["bm25", "fts5", "dense", "symbols"]), also=list(REGISTRY)
        )
        data = report(run)
        tuned = tune(run, n_folds=2)
    finally:
        engine.close()
    assert set(data["groups"]) == {"all", "identifier", "paraphrase", "-"}
    rows = data["groups"]["all"]["rows"]
    assert list(rows) == [*["bm25", "fts5", "dense", "symbols", "hybrid", "lexical+ctx"], FUSED]
    assert data["groups"]["identifier"]["n"] == 3 and data["groups"]["-"]["n"] == 1
    for row in rows.values():
        assert row["n"] == 10
        assert all(0 <= row[m] <= 1 for m in metric_names())
        assert row["latency_ms"]["p50"] <= row["latency_ms"]["p95"]
    assert rows[FUSED]["hit@10"] >= 0.8
    assert "s9" in [m["id"] for m in data["missed_by_all"]]
    assert {q["id"] for q in data["per_query"]} == {q["id"] for q in SAMPLE_QUERIES}
    # Each arm alone is scored on its own ranking, not on the fused list.
    assert len({rows[a]["ndcg@10"] for a in ("bm25", "dense", "symbols")}) > 1
    assert tuned["cross_validation"]["folds"] == 2


# ----------------------------------------------------------------------------- CLI


def test_eval_prints_tables_per_kind_and_the_missed_queries(sample_repo, sample_queries):
    out = run("eval", str(sample_queries), "--root", str(sample_repo))
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "overall (n=10)" in text and "kind: identifier (n=3)" in text and "kind: paraphrase (n=6)" in text
    for word in ("hit@1", "hit@5", "hit@10", "file@5", "MRR@10", "nDCG@10", "p50 ms", "p95 ms", "fused", "hybrid"):
        assert word in text
    assert "missed by every arm" in text and "s9" in text


def test_eval_json_measures_the_configuration_asked_for(sample_repo, sample_queries):
    out = run(
        "eval",
        str(sample_queries),
        "--root",
        str(sample_repo),
        "--json",
        "--weights",
        "dense:0.5,symbols:2",
        "--rrf-k",
        "20",
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["configuration"] == {
        "arms": ["bm25", "fts5", "dense", "symbols"],
        "weights": {**default_config()["weights"], "dense": 0.5, "symbols": 2.0},  # the rest: shipped
        "k": 20.0,
        "priors": True,
    }
    assert data["queries"] == 10 and data["top_k"] == 10
    fused = data["groups"]["all"]["rows"]["fused"]
    assert set(fused) >= {"n", "hit@1", "hit@5", "hit@10", "file_hit@5", "mrr@10", "ndcg@10", "latency_ms"}

    single = json.loads(
        run("eval", str(sample_queries), "--root", str(sample_repo), "--json", "--retriever", "fts5").stdout
    )
    rows = single["groups"]["all"]["rows"]
    assert single["configuration"]["arms"] == ["fts5"]
    assert rows["fused"]["ndcg@10"] == pytest.approx(rows["fts5"]["ndcg@10"])

    deep = json.loads(run("eval", str(sample_queries), "--root", str(sample_repo), "--json", "--top-k", "3").stdout)
    assert deep["metrics"] == ["hit@1", "hit@5", "hit@3", "file_hit@5", "mrr@3", "ndcg@3"]


def test_eval_scores_whole_file_gold_in_both_forms(sample_repo, tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        json.dumps({"id": "obj", "query": "PasswordHasher", "gold": [{"path": "app/auth.py"}]})
        + "\n"
        + json.dumps({"id": "str", "query": "LRUCache", "gold": ["app/cache.py"]})
        + "\n"
    )
    out = run("eval", str(path), "--root", str(sample_repo), "--json")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    data = json.loads(out.stdout)
    fused = data["groups"]["all"]["rows"]["fused"]
    assert fused["hit@1"] == 1.0 and fused["ndcg@10"] == 1.0
    # The calibration table: every fused top-10 hit in exactly one level.
    cal = data["calibration"]
    assert cal["top_k"] == 10 and list(cal["levels"])[:3] == ["high", "medium", "low"]
    assert 2 <= cal["hits"] <= 20
    assert sum(v["hits"] for v in cal["levels"].values()) == cal["hits"]
    assert sum(v["share"] for v in cal["levels"].values()) == pytest.approx(1.0)
    assert sum(v["relevant"] for v in cal["levels"].values()) >= 2  # the two files found first


def test_eval_ignores_unknown_fields_with_exactly_one_note(sample_repo, tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"q{i}",
                    "repo": "sample",
                    "query": q,
                    "gold": [{"path": g, "symbol": "x", "start_line": 1, "end_line": 30}],
                }
            )
            + "\n"
            for i, (q, g) in enumerate([("PasswordHasher", "app/auth.py"), ("LRUCache", "app/cache.py")])
        )
    )
    for command in ("eval", "tune"):
        out = run(
            command, str(path), "--root", str(sample_repo), "--json", *(["--folds", "2"] if command == "tune" else [])
        )
        assert out.returncode == 0, out.stderr
        assert out.stderr.splitlines() == [f"ranklens: {path}: ignored fields ranklens does not use: gold.symbol, repo"]


def test_eval_and_tune_read_a_benchmark_file_with_a_checkout_prefix(sample_repo, tmp_path):
    # As the benchmark's annotations: paths relative to the checkout (here sample_repo's
    # parent), the folder searched one level down, so every gold path starts with "repo/".
    items = [
        {
            "query": "PasswordHasher",
            "relevant": ["repo/app/auth.py"],
            "secondary": [],
            "category": "symbol",
            "seed": {},
        },
        {
            "query": "evict the oldest entry when the cache is full",
            "relevant": [{"path": "repo/app/cache.py", "start_line": 14, "end_line": 19}],
            "secondary": ["repo/app/auth.py"],
            "category": "semantic",
        },
        {"query": "RateLimiter Allow", "relevant": ["repo/server/main.go"], "secondary": [], "category": "symbol"},
        {"query": "how do I install it", "relevant": [], "secondary": [], "category": "semantic"},
    ]
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(items, indent=2))
    out = run("eval", str(path), "--root", str(sample_repo), "--json")
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == [
        f"ranklens: {path}: ignored fields ranklens does not use: seed",
        "ranklens: gold paths are relative to a folder above the root: stripped the root's trailing 'repo/' from 3 of 3 gold paths",
        "ranklens: 1 queries have no gold target and are left out: 4",
    ]
    data = json.loads(out.stdout)
    assert [q["id"] for q in data["per_query"]] == ["1", "2", "3"]
    assert set(data["groups"]) == {"all", "symbol", "semantic"} and data["groups"]["symbol"]["n"] == 2
    assert data["groups"]["all"]["rows"]["fused"]["hit@10"] == 1.0

    text = run("eval", str(path), "--root", str(sample_repo))
    assert text.returncode == 0, text.stderr
    assert "kind: symbol (n=2)" in text.stdout and "confidence calibration of the fused top 10" in text.stdout
    tuned = run("tune", str(path), "--root", str(sample_repo), "--folds", "2", "--json")
    assert tuned.returncode == 0, tuned.stderr
    assert "stripped the root's trailing 'repo/'" in tuned.stderr
    assert json.loads(tuned.stdout)["queries"] == 3


def test_eval_warns_about_gold_files_missing_from_the_index(sample_repo, tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        json.dumps({"id": "x", "query": "login", "gold": [{"path": "gone.py", "start_line": 1, "end_line": 2}]}) + "\n"
    )
    out = run("eval", str(path), "--root", str(sample_repo), "--json")
    assert out.returncode == 0, out.stderr
    assert "x: gold file gone.py is not in the index" in out.stderr


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"id": "a", "query": "x", "gold": []}\n{oops\n', "q.jsonl:2: not valid JSON"),
        ('{"id": "a", "query": "x", "gold": [{"path": "a", "start_line": 3, "end_line": 1}]}\n', "q.jsonl:1:"),
        ("", "holds no queries"),
    ],
)
def test_eval_bad_file_is_one_line_and_exit_2(sample_repo, tmp_path, content, message):
    path = tmp_path / "q.jsonl"
    path.write_text(content)
    for command in ("eval", "tune"):
        out = run(command, str(path), "--root", str(sample_repo))
        assert out.returncode == 2, (command, out.stderr)
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ranklens: error: ") and message in lines[0], out.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["eval", "missing.jsonl"], "no such file"),
        (["eval", "q.jsonl", "--retriever", "magic"], "unknown retriever"),
        (["eval", "q.jsonl", "--top-k", "0"], "--top-k"),
        (["eval", "q.jsonl", "--rrf-k", "0"], "RRF k"),
        (["eval", "q.jsonl", "--weights", "dense"], "malformed weight"),
        (["eval", "q.jsonl", "--root", "/no/such/dir"], "not a directory"),
        (["tune", "q.jsonl", "--retriever", "bm25"], "at least two"),
        (["tune", "q.jsonl", "--folds", "1"], "--folds"),
        (["tune", "q.jsonl", "--force"], "--force only applies with --save"),
        (["tune", "q.jsonl", "--folds", "20"], "too few"),
    ],
)
def test_eval_and_tune_usage_errors(sample_repo, sample_queries, args, message):
    (sample_repo / "q.jsonl").write_text(sample_queries.read_text())
    out = run(*args, cwd=sample_repo)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr
    assert "Traceback" not in out.stderr


def test_tune_save_then_query_and_eval_start_from_it(sample_repo, sample_queries):
    from ranklens.core.query.config import config_path, load_config

    out = run("tune", str(sample_queries), "--root", str(sample_repo), "--folds", "2", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["saved"] is None and not config_path(sample_repo).exists()
    assert set(result["default"]) == {"weights", "k", "ndcg@10"}
    assert set(result["cross_validation"]) >= {"default_train", "tuned_train", "default_held_out", "tuned_held_out"}

    text = run("tune", str(sample_queries), "--root", str(sample_repo), "--folds", "2")
    assert text.returncode == 0, text.stderr
    assert "default" in text.stdout and "tuned" in text.stdout and "held-out" in text.stdout

    saved = run("tune", str(sample_queries), "--root", str(sample_repo), "--folds", "2", "--save", "--force", "--json")
    assert saved.returncode == 0, saved.stderr
    result = json.loads(saved.stdout)
    assert result["saved"] == str(config_path(sample_repo))
    config = load_config(sample_repo)
    assert config == {
        "weights": {**default_config()["weights"], **result["tuned"]["weights"]},
        "k": result["tuned"]["k"],
    }

    # A config the CLI did not write, so the effect is unmistakable.
    config_path(sample_repo).write_text(json.dumps({"weights": {"dense": 0.0, "symbols": 2.5}, "k": 7}))
    q = json.loads(run("query", "password", "--root", str(sample_repo), "--json").stdout)
    shipped = default_config()["weights"]
    assert q["k"] == 7 and q["weights"] == {**shipped, "dense": 0.0, "symbols": 2.5}
    assert all("dense" not in h["provenance"] for h in q["results"])
    q = json.loads(
        run("query", "password", "--root", str(sample_repo), "--json", "--rrf-k", "30", "--weights", "bm25:2").stdout
    )
    # Explicit weights win arm by arm; the arms they do not name keep the config's.
    assert q["k"] == 30 and q["weights"] == {**shipped, "dense": 0.0, "symbols": 2.5, "bm25": 2.0}
    e = json.loads(run("eval", str(sample_queries), "--root", str(sample_repo), "--json").stdout)
    assert e["configuration"]["k"] == 7 and e["configuration"]["weights"]["symbols"] == 2.5


def test_tune_save_refuses_a_result_that_does_not_generalise(sample_repo, tmp_path):
    # One query the default already answers perfectly: tuning cannot beat it held-out.
    path = tmp_path / "q.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"q{i}",
                    "query": "LRUCache",
                    "gold": [{"path": "app/cache.py", "start_line": 1, "end_line": 19}],
                }
            )
            + "\n"
            for i in range(4)
        )
    )
    out = run("tune", str(path), "--root", str(sample_repo), "--folds", "2", "--save")
    assert out.returncode == 0, out.stderr
    assert "not saved" in out.stderr
    from ranklens.core.query.config import config_path

    assert not config_path(sample_repo).exists()


def test_a_broken_config_is_a_clean_error(sample_repo):
    from ranklens.core.query.config import config_path

    path = config_path(sample_repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    for content, message in [
        ("{nope", "not valid JSON"),
        ('{"k": 0}', "RRF k"),
        ('{"weights": {"vibes": 1}}', "unknown retriever"),
    ]:
        path.write_text(content)
        out = run("query", "login", "--root", str(sample_repo))
        assert out.returncode == 2, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0] and str(path) in lines[0]


def test_help_documents_eval_and_tune():
    top = run("--help").stdout
    assert "eval" in top and "tune" in top
    ev = run("eval", "--help").stdout
    for word in (
        "--retriever",
        "--weights",
        "--rrf-k",
        "--top-k",
        "--json",
        "nDCG@K",
        "span hit",
        "whole file",
        "relevant",
        "secondary",
        "ignored",
        "Calibration",
    ):
        assert word in ev
    tu = run("tune", "--help").stdout
    for word in ("--save", "--folds", "cross-validation", "held-out"):
        assert word in tu
