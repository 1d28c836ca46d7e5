import pytest
from hypothesis import given, strategies as st

from ranklens.core.base.types import Hit, make_docid
from ranklens.core.query.labels import confidence
from ranklens.core.query.pipeline import fuse_rankings


def hit(arm, path, start, end, rank, score=1.0, context="", text=None):
    return Hit(arm, make_docid(path, start, end), path, start, end, rank, score, context, text)


def test_overlapping_spans_of_one_file_merge_and_fuse_best_ranks():
    out = fuse_rankings(
        {
            "bm25": [hit("bm25", "a.py", 1, 40, 1), hit("bm25", "a.py", 31, 70, 2)],
            "dense": [hit("dense", "a.py", 10, 20, 3, context="a.py > f")],
        },
        k=60,
    )
    assert len(out) == 1
    h = out[0]
    assert (h.path, h.start_line, h.end_line, h.docid) == ("a.py", 1, 70, "a.py:1-70")
    assert h.score == pytest.approx(1 / 61 + 1 / 63)
    assert h.provenance == ["bm25", "dense"] and h.agreement == 2
    assert [(c.arm, c.rank, c.docid) for c in h.contributors] == [
        ("bm25", 1, "a.py:1-40"),
        ("dense", 3, "a.py:10-20"),
    ]
    assert h.rank == 1


def test_touching_spans_merge_only_when_asked():
    hits = {"bm25": [hit("bm25", "a.py", 1, 10, 1), hit("bm25", "a.py", 11, 20, 2)]}
    assert len(fuse_rankings(hits)) == 1
    assert len(fuse_rankings(hits, merge_adjacent=False)) == 2
    gap = {"bm25": [hit("bm25", "a.py", 1, 10, 1), hit("bm25", "a.py", 12, 20, 2)]}
    assert len(fuse_rankings(gap)) == 2


def piece(arm, start, end, rank, of=(1, 70)):
    return Hit(arm, make_docid("a.py", start, end), "a.py", start, end, rank, 1.0, "a.py > big", None, of)


def test_pieces_of_one_definition_collapse_into_one_hit():
    out = fuse_rankings(
        {
            "bm25": [piece("bm25", 1, 30, 1), piece("bm25", 41, 70, 2)],  # the first and last pieces
            "dense": [piece("dense", 41, 70, 1), hit("dense", "a.py", 140, 150, 2)],
        },
        merge_adjacent=False,
    )
    assert [(h.start_line, h.end_line) for h in out] == [(1, 70), (140, 150)]
    assert out[0].provenance == ["bm25", "dense"] and out[0].context == "a.py > big"
    # Pieces of two different definitions stay apart.
    other = fuse_rankings({"bm25": [piece("bm25", 1, 40, 1), piece("bm25", 200, 240, 2, of=(200, 260))]})
    assert len(other) == 2


def test_a_hit_stays_the_size_of_an_answer():
    """Far pieces of a long definition, or a chain of overlapping windows, stop merging once
    the hit would span more than MAX_GROUP_LINES lines."""
    from ranklens.core.query.consolidate import MAX_GROUP_LINES

    long_def = fuse_rankings(
        {"bm25": [piece("bm25", 1, 40, 1, of=(1, 500)), piece("bm25", 461, 500, 2, of=(1, 500))]},
        merge_adjacent=False,
    )
    assert [(h.start_line, h.end_line) for h in long_def] == [(1, 40), (461, 500)]
    chain = fuse_rankings({"bm25": [hit("bm25", "a.py", s, s + 39, i) for i, s in enumerate(range(1, 300, 30), 1)]})
    assert all(h.end_line - h.start_line + 1 <= MAX_GROUP_LINES for h in chain)
    assert sorted((h.start_line, h.end_line) for h in chain)[0] == (1, 70)  # two windows joined, no third
    # One chunk longer than the cap is still one hit.
    assert [(h.start_line, h.end_line) for h in fuse_rankings({"bm25": [hit("bm25", "a.py", 1, 200, 1)]})] == [(1, 200)]


def test_same_lines_in_different_files_do_not_merge():
    out = fuse_rankings({"bm25": [hit("bm25", "a.py", 1, 10, 1), hit("bm25", "b.py", 1, 10, 2)]})
    assert [h.path for h in out] == ["a.py", "b.py"]


def test_sorted_by_score_then_path_start_end_docid():
    out = fuse_rankings(
        {"x": [hit("x", "b.py", 1, 5, 1)], "y": [hit("y", "a.py", 1, 5, 1)]},
    )
    assert [h.path for h in out] == ["a.py", "b.py"]
    assert [h.rank for h in out] == [1, 2]


def test_result_does_not_depend_on_dict_order():
    a = {"bm25": [hit("bm25", "a.py", 1, 9, 1)], "dense": [hit("dense", "b.py", 1, 9, 1)]}
    b = dict(reversed(list(a.items())))
    assert [x.to_dict() for x in fuse_rankings(a)] == [x.to_dict() for x in fuse_rankings(b)]


def test_weights_scale_contributions_and_zero_weight_does_not_vote():
    hits = {"bm25": [hit("bm25", "a.py", 1, 9, 1)], "dense": [hit("dense", "a.py", 1, 9, 1)]}
    (h,) = fuse_rankings(hits, k=10, weights={"dense": 2.0})
    assert h.score == pytest.approx(1 / 11 + 2 / 11)
    (h,) = fuse_rankings(hits, k=10, weights={"dense": 0.0})
    assert h.provenance == ["bm25"] and h.agreement == 1 and h.confidence == "high"  # the best, one vote
    assert [c.arm for c in h.contributors] == ["bm25", "dense"]
    assert fuse_rankings({"dense": hits["dense"]}, weights={"dense": 0}) == []


def test_context_comes_from_the_strongest_member():
    out = fuse_rankings(
        {
            "bm25": [hit("bm25", "a.py", 1, 40, 5, context="a.py")],
            "symbols": [hit("symbols", "a.py", 3, 9, 1, context="a.py > Foo > bar")],
        }
    )
    assert out[0].context == "a.py > Foo > bar"


def test_same_chunk_id_with_different_text_or_span_is_refused():
    with pytest.raises(ValueError, match="differs"):
        fuse_rankings(
            {
                "bm25": [hit("bm25", "a.py", 1, 9, 1, text="one")],
                "fts5": [hit("fts5", "a.py", 1, 9, 1, text="two")],
            }
        )
    bad = Hit("fts5", "a.py:1-9", "b.py", 1, 9, 1, 1.0)
    with pytest.raises(ValueError, match="differs"):
        fuse_rankings({"bm25": [hit("bm25", "a.py", 1, 9, 1)], "fts5": [bad]})


def test_duplicate_chunk_in_one_arm_and_bad_scores_are_refused():
    with pytest.raises(ValueError, match="twice"):
        fuse_rankings({"bm25": [hit("bm25", "a.py", 1, 9, 1), hit("bm25", "a.py", 1, 9, 2)]})
    with pytest.raises(ValueError, match="non-finite"):
        fuse_rankings({"bm25": [hit("bm25", "a.py", 1, 9, 1, score=float("nan"))]})
    with pytest.raises(ValueError):
        fuse_rankings({"bm25": [hit("bm25", "a.py", 1, 9, 1)]}, k=0)
    with pytest.raises(ValueError):
        fuse_rankings({"bm25": [hit("bm25", "a.py", 1, 9, 1)]}, weights={"bm25": -1})


@pytest.mark.parametrize(
    "share, votes, defines, expected",
    [
        (1.0, 1, False, "high"),  # the best hit, one arm's top 5
        (0.92, 3, False, "high"),
        (1.0, 0, False, "medium"),  # the best, but no arm puts it in its top 5
        (0.2, 0, True, "high"),  # it defines the symbol the query names
        (0.6, 0, False, "medium"),
        (0.3, 2, False, "medium"),
        (0.3, 1, False, "low"),
        (0.0, 0, False, "low"),
    ],
)
def test_confidence_rule(share, votes, defines, expected):
    assert confidence(share, votes, defines) == expected


def test_an_arm_votes_only_for_its_own_top_few():
    from ranklens.core.query.labels import AGREEMENT_DEPTH

    deep = AGREEMENT_DEPTH + 1
    out = fuse_rankings(
        {
            "bm25": [hit("bm25", f"f{i}.py", 1, 9, i) for i in range(1, deep + 1)],
            "dense": [hit("dense", f"f{deep}.py", 1, 9, 1)],
        }
    )
    by_path = {h.path: h for h in out}
    assert by_path["f1.py"].agreement == 1
    # found by both arms, but bm25 ranked it below its top AGREEMENT_DEPTH: one vote
    assert by_path[f"f{deep}.py"].provenance == ["bm25", "dense"] and by_path[f"f{deep}.py"].agreement == 1


spans = st.tuples(st.sampled_from(["a.py", "b.py"]), st.integers(1, 60), st.integers(0, 30))


@given(st.lists(spans, max_size=25, unique_by=lambda s: (s[0], s[1], s[2])))
def test_groups_never_overlap_and_cover_every_hit(raw):
    """Groups of one file stay apart unless joining them would pass the size cap; every hit
    lies inside one group, and no group grows past the cap (or its widest hit)."""
    from ranklens.core.query.consolidate import MAX_GROUP_LINES

    ranking = [hit("bm25", p, s, s + n, i + 1) for i, (p, s, n) in enumerate(raw)]
    out = fuse_rankings({"bm25": ranking})
    widest = max((n + 1 for _, _, n in raw), default=0)
    for a in out:
        assert a.end_line - a.start_line + 1 <= max(MAX_GROUP_LINES, widest)
        for b in out:
            if a is not b and a.path == b.path:
                apart = a.end_line + 1 < b.start_line or b.end_line + 1 < a.start_line
                union = max(a.end_line, b.end_line) - min(a.start_line, b.start_line) + 1
                assert apart or union > MAX_GROUP_LINES
    for h in ranking:
        assert any(g.path == h.path and g.start_line <= h.start_line and h.end_line <= g.end_line for g in out)


def test_single_arm_keeps_the_arms_own_ranking_unmerged():
    from ranklens.core.query.labels import single_arm

    ranking = [hit("dense", "a.py", 1, 40, 1, score=0.9), hit("dense", "a.py", 31, 70, 2, score=0.8)]
    out = single_arm(ranking, k=60)
    assert [(h.docid, h.rank, h.agreement, h.confidence) for h in out] == [
        ("a.py:1-40", 1, 1, "high"),
        ("a.py:31-70", 2, 1, "high"),  # within 10 % of the best
    ]
    assert out[0].contributors[0].score == 0.9 and out[0].score == 1 / 61


arm_hits = st.lists(
    st.tuples(
        st.sampled_from(["bm25", "fts5", "dense", "symbols"]),
        st.sampled_from(["src/a.py", "tests/test_a.py", "README.md", "conf.yaml"]),
        st.integers(1, 40),
        st.integers(0, 12),
    ),
    max_size=40,
    unique_by=lambda s: (s[0], s[1], s[2], s[3]),
)


@given(
    arm_hits,
    st.integers(1, 12),
    st.dictionaries(st.sampled_from(["bm25", "fts5", "dense", "symbols"]), st.sampled_from([0.0, 0.5, 1.0, 2.5])),
    st.sampled_from([1, 20, 60]),
)
def test_fusing_with_a_cut_equals_the_whole_fused_list_then_the_cut(raw, limit, weights, k):
    """The query path scores every group but builds hits only for the kept ones: it must
    give exactly what fusing everything and cutting gives."""
    from ranklens.core.query.consolidate import group
    from ranklens.core.query.fusion import fuse
    from ranklens.core.query.labels import label_hits

    rankings: dict[str, list[Hit]] = {}
    for arm, path, start, n in raw:
        ranking = rankings.setdefault(arm, [])
        if all(h.docid != make_docid(path, start, start + n) for h in ranking):
            ranking.append(hit(arm, path, start, start + n, len(ranking) + 1))
    cut = label_hits(fuse(group(rankings), weights, k), limit=limit)
    assert [h.to_dict() for h in cut] == [h.to_dict() for h in fuse_rankings(rankings, k=k, weights=weights)[:limit]]
