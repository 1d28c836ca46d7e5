"""The held-out question set (``evals/heldout``): its files hold what the loaders expect (ids,
kinds, styles, each short question the same gold as its long one), both loaders read the
``style`` field, and ``evals.heldout_cli`` scores a real ``ranklens query`` the way the span set
scores a hit (clipped to 80 lines, runners-up counted apart)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from evals import heldout_cli, one_step

ROOT = Path(__file__).resolve().parent.parent
HELDOUT = ROOT / "evals" / "heldout"
KINDS = {"paraphrase", "lexical-friendly"}


def _questions() -> list[dict]:
    return [item for _repo, items in heldout_cli.load(HELDOUT) for item in items]


def test_every_repository_is_pinned_and_every_question_file_named():
    meta = json.loads((HELDOUT / "repos.json").read_text())
    names = [r["name"] for r in meta]
    assert len(names) == len(set(names)) >= 6
    for r in meta:
        assert re.fullmatch(r"[0-9a-f]{40}", r["commit"]), r
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", r["repo"]), r
        assert (HELDOUT / f"{r['name']}.jsonl").is_file(), r
    assert {p.stem for p in HELDOUT.glob("*.jsonl")} == set(names)


def test_questions_are_well_formed_and_the_short_ones_are_typed_lengths():
    items = _questions()
    ids = [it["id"] for it in items]
    assert len(ids) == len(set(ids))
    for it in items:
        assert it["kind"] in KINDS, it["id"]
        assert it.get("style", "user") == "user", it["id"]  # absent: a long question
        assert it["gold"] and all(
            g["path"] and 1 <= g["start_line"] <= g["end_line"] and g["symbol"] for g in it["gold"]
        )
        words = len(it["query"].split())
        if heldout_cli.style_of(it) == "user":
            assert 8 <= words <= 15, (it["id"], words)
        else:
            assert words >= 16, (it["id"], words)
    user = [it for it in items if heldout_cli.style_of(it) == "user"]
    assert len(user) >= 60
    assert {it["kind"] for it in user} == KINDS


def test_each_short_question_keeps_its_long_questions_gold_and_kind():
    by_id = {it["id"]: it for it in _questions()}
    shorts = [it for it in by_id.values() if it["id"].endswith("-short")]
    assert len(shorts) == sum(1 for it in by_id.values() if heldout_cli.style_of(it) == "long")
    for it in shorts:
        long = by_id[it["id"].removesuffix("-short")]
        assert it["gold"] == long["gold"] and it["kind"] == long["kind"] and it["repo"] == long["repo"]
        assert it["query"] != long["query"]


def test_the_mining_script_never_reads_a_held_out_repository():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import mine_task_pairs
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    assert {r["repo"] for r in json.loads((HELDOUT / "repos.json").read_text())} <= mine_task_pairs.HELD_OUT


def test_one_step_reads_the_style_of_every_question(tmp_path):
    for r in json.loads((HELDOUT / "repos.json").read_text()):
        (tmp_path / r["name"]).mkdir()
    repos = one_step.heldout(tmp_path)
    styles = [t.style for repo in repos for t in repo.tasks]
    assert len(styles) == len(_questions())
    assert styles.count("user") >= 60 and styles.count("long") == 30


def _hit(path, start, end, alternatives=()):
    return {"path": path, "start_line": start, "end_line": end, "alternatives": list(alternatives)}


def test_judge_clips_hits_and_counts_runners_up_apart():
    item = {"id": "q", "repo": "r", "kind": "paraphrase", "style": "user", "query": "q words"}
    item["gold"] = [{"path": "a.py", "start_line": 100, "end_line": 120, "symbol": "f"}]
    # a 200-line hit from line 1 reaches line 100 only past its first 80 lines: no hit
    row = heldout_cli.judge(item, [_hit("a.py", 1, 200), _hit("b.py", 1, 10)])
    assert (row["rank"], row["top1"], row["top10"], row["alt"], row["in_file"]) == (None, False, False, False, True)
    row = heldout_cli.judge(item, [_hit("b.py", 1, 10), _hit("a.py", 90, 101)])
    assert (row["rank"], row["top1"], row["top10"], row["alt"]) == (2, False, True, True)
    # a runner-up is a unit of its hit's file: one at the gold's lines counts there only
    row = heldout_cli.judge(item, [_hit("a.py", 1, 10, [{"start_line": 110, "end_line": 115}])])
    assert (row["rank"], row["top10"], row["alt"], row["in_file"]) == (None, False, True, True)
    row = heldout_cli.judge(item, [_hit("b.py", 1, 10, [{"start_line": 110, "end_line": 115}])])
    assert (row["top10"], row["alt"], row["in_file"]) == (False, False, False)
    assert heldout_cli.style_of({"style": "user"}) == "user" and heldout_cli.style_of({}) == "long"


def test_table_splits_by_style_kind_and_repository():
    found = dict(rank=1, top1=True, top10=True, alt=True, in_file=True)
    lost = dict(rank=None, top1=False, top10=False, alt=False, in_file=False)
    rows = [
        dict(repo="x", style="user", kind="paraphrase", **found),
        dict(repo="x", style="long", kind="paraphrase", **lost),
    ]
    lines = heldout_cli.table(rows)
    assert any(line.startswith("user paraphrase") and "top1   1" in line for line in lines)
    assert any(line.startswith("long paraphrase") and "top10   0" in line for line in lines)
    assert any(line.startswith("x user") for line in lines) and lines[-1].startswith("all ")


def test_a_question_asked_of_the_real_command_line(tmp_path):
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "backoff.py").write_text(
        "def pause_before_next_attempt(failures):\n"
        '    """Seconds to sleep before trying a failed request again: doubles each time."""\n'
        "    return min(60, 2 ** failures)\n\n\n"
        "def unrelated_helper(text):\n"
        "    return text.strip().lower()\n"
    )
    item = {"id": "t1", "repo": "tree", "kind": "paraphrase", "style": "user"}
    item["query"] = "how long does it sleep before trying a failed request again"
    item["gold"] = [{"path": "pkg/backoff.py", "start_line": 1, "end_line": 3, "symbol": "pause_before_next_attempt"}]
    env = dict(os.environ, RANKLENS_CACHE_DIR=str(tmp_path / "cache"), RANKLENS_DEEP="0")
    [row] = heldout_cli.ask(str(Path(sys.executable).with_name("ranklens")), tree, [item], env)
    assert row["top1"] and row["in_file"] and row["top"][0].startswith("pkg/backoff.py:1-")
