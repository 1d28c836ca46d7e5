"""Relevance judgments (+ / -) with live MRR/nDCG, and the priors toggle (p), end to end."""

from __future__ import annotations

import textwrap
from collections import Counter

from pilot_helpers import column, count_arm_calls, ready, record_notifications, run_query, settled, wait_for
from rich.console import Console

from ranklens.core.arms import DEFAULT_ARMS
from ranklens.core.engine import Engine
from ranklens.core.evaluation import load_queries
from ranklens.core.judgments import judgments_for, judgments_path
from ranklens.core.query.priors import RULES
from ranklens.tui.app import HELP_KEYS, RanklensApp
from ranklens.tui.screens.help import HelpScreen

SIZE = (120, 36)
QUERY = "password hash"


def verdicts(app: RanklensApp) -> list[str]:
    """The judgment mark of every row (the second character of the ``#`` cell)."""
    return [cell[1].strip() for cell in column(app, "rank")]


def span(hit) -> tuple[str, int, int]:
    return (hit.path, hit.start_line, hit.end_line)


def verdict_on_disk(engine: Engine, query: str, hit) -> bool | None:
    found = judgments_for(engine.root, query, engine.directory.parent)
    return None if found is None else found.verdict(hit)


def plain(renderable, width: int = 100) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


async def test_plus_marks_the_hit_relevant_and_the_status_shows_the_metrics(engine) -> None:
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, QUERY)
        table = app.table
        assert app.focused is table
        assert verdicts(app) == [""] * table.row_count
        assert "nDCG" not in app.status.note
        await pilot.press("down")  # judge the second hit: MRR@10 = 1/2
        hit = table.current_hit
        await pilot.press("plus")
        await pilot.pause()

        assert verdict_on_disk(engine, QUERY, hit) is True
        assert judgments_path(engine.root, engine.directory.parent).is_file()
        assert verdicts(app)[1] == "✓"
        assert verdicts(app).count("✓") == 1
        assert "MRR@10 0.50" in app.status.note
        assert "nDCG@10 0.63" in app.status.note  # 1 / log2(3)
        assert "(1 judged)" in app.status.note
        # The file is a labeled query file, as ranklens eval / tune read it.
        (labeled,) = load_queries(judgments_path(engine.root, engine.directory.parent))
        assert labeled.query == QUERY and [tuple(g) for g in labeled.gold] == [span(hit)]

        # The same key again clears the judgment (and the metrics).
        await pilot.press("plus")
        await pilot.pause()
        assert verdict_on_disk(engine, QUERY, hit) is None
        assert verdicts(app)[1] == ""
        assert "nDCG" not in app.status.note


async def test_minus_marks_not_relevant_and_a_new_verdict_replaces_the_old(engine) -> None:
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, QUERY)
        hit = app.table.current_hit
        await pilot.press("minus")
        await pilot.pause()
        assert verdict_on_disk(engine, QUERY, hit) is False
        assert verdicts(app)[0] == "✗"
        assert "1 judged, none relevant" in app.status.note

        await pilot.press("plus")  # + on a hit judged not relevant: now relevant
        await pilot.pause()
        assert verdict_on_disk(engine, QUERY, hit) is True
        assert verdicts(app)[0] == "✓"
        assert "MRR@10 1.00 · nDCG@10 1.00" in app.status.note
        found = judgments_for(engine.root, QUERY, engine.directory.parent)
        assert found.not_relevant == []

        await pilot.press("minus", "minus")  # not relevant, then cleared
        await pilot.pause()
        assert verdict_on_disk(engine, QUERY, hit) is None
        assert verdicts(app)[0] == ""

        # Judgments belong to their query: another query shows none, the first one its own.
        await pilot.press("plus")
        await pilot.pause()
        await run_query(pilot, app, "lru cache")
        assert "✓" not in verdicts(app)
        assert "judged" not in app.status.note
        await run_query(pilot, app, QUERY)
        assert "✓" in verdicts(app)
        assert "MRR@10" in app.status.note


async def test_metrics_follow_a_re_fuse(engine) -> None:
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, QUERY)
        await pilot.press("down")
        judged = app.table.current_hit
        await pilot.press("plus")
        await pilot.pause()
        assert "MRR@10 0.50" in app.status.note
        # Re-fuse with only the arms that ranked the judged hit first-ish; recompute what the
        # status must say from the engine rather than assuming a scoring detail.
        app.session.tune({arm: (1.0 if arm == "bm25" else 0.0) for arm in DEFAULT_ARMS})
        app.refuse(shifts=True)
        await settled(pilot, app)
        rank = next((i for i, h in enumerate(app.hits[:10], start=1) if span(h) == span(judged)), None)
        expected = 0.0 if rank is None else 1 / rank
        assert f"MRR@10 {expected:.2f}" in app.status.note


async def test_plus_minus_and_p_type_in_the_query(engine) -> None:
    calls = count_arm_calls(engine)
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        assert app.focused is app.query_input
        await pilot.press("a", "plus", "b", "minus", "p")
        await pilot.pause()
        assert app.query_input.value == "a+b-p"
        assert app.priors is True
        await wait_for(pilot, lambda: app.query_complete)
        assert not judgments_path(engine.root, engine.directory.parent).exists()
        assert sum(calls.values()) == len(DEFAULT_ARMS)


async def test_judging_with_no_results_notifies(engine) -> None:
    app = RanklensApp(engine)
    shown = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await pilot.press("escape", "plus")
        await pilot.pause()
        assert any("Nothing to judge" in n for n in shown), shown
        assert app.is_running


async def test_an_unwritable_judgments_file_notifies_and_does_not_crash(engine) -> None:
    # A folder where the judgments file should be: reading and writing it both fail.
    judgments_path(engine.root, engine.directory.parent).mkdir(parents=True)
    app = RanklensApp(engine)
    shown = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, QUERY)
        assert any("Cannot read the judgments" in n for n in shown), shown
        await pilot.press("plus")
        await pilot.pause()
        assert any("Cannot save the judgment" in n for n in shown), shown
        assert app.is_running
        assert verdicts(app)[0] == ""
        assert app.table.row_count >= 1


async def test_p_toggles_the_priors_and_re_fuses_without_running_arms(sample_repo) -> None:
    # A test file that answers the query as well as the code does: the priors demote it.
    (sample_repo / "tests").mkdir()
    (sample_repo / "tests" / "test_auth.py").write_text(
        textwrap.dedent(
            '''
            from app.auth import PasswordHasher


            def test_password_hash_is_salted():
                """The password hash of a password depends on its salt."""
                hasher = PasswordHasher()
                assert hasher.hash_password("password", "a") != hasher.hash_password("password", "b")
            '''
        ).lstrip()
    )
    engine = Engine(sample_repo)
    engine.ensure_index()
    calls = count_arm_calls(engine)
    once = Counter({arm: 1 for arm in DEFAULT_ARMS})
    app = RanklensApp(engine)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot, app)
            await run_query(pilot, app, QUERY)
            assert calls == once
            results = list(app.results.values())
            demoted = [h for h in app.hits if h.path == "tests/test_auth.py"]
            assert demoted and all([p.name for p in h.priors] == ["tests"] for h in demoted)
            assert all(h.prior_factor == RULES[0].factor < 1 for h in demoted)
            on = [span(h) for h in engine.fuse(results, priors=True)]
            off = [span(h) for h in engine.fuse(results, priors=False)]
            assert [span(h) for h in app.hits] == on
            assert "ranking stage off" not in app.status.note

            # The preview's trace says what the priors did to the hit under the cursor.
            app.table.focus()
            row = next(i for i, h in enumerate(app.table.hits) if h.path == "tests/test_auth.py")
            app.table.move_cursor(row=row)
            await settled(pilot, app)
            assert app.table.current_hit.path == "tests/test_auth.py"
            trace = plain(app.preview.trace)
            assert f"priors tests ×{RULES[0].factor:g}" in trace
            assert "fused " in trace and "→" in trace

            await pilot.press("p")
            await settled(pilot, app)
            assert app.priors is False
            assert calls == once  # re-fused, nothing ran again
            assert [span(h) for h in app.hits] == off
            assert all(not h.priors for h in app.hits)
            assert "ranking stage off" in app.status.note
            assert app.table.current_hit.path == "tests/test_auth.py"  # the cursor followed it
            assert "priors " not in plain(app.preview.trace)

            await pilot.press("p")
            await settled(pilot, app)
            assert app.priors is True
            assert [span(h) for h in app.hits] == on
            assert "ranking stage off" not in app.status.note
            assert calls == once
    finally:
        engine.close()


async def test_help_lists_the_judgment_and_priors_keys(engine) -> None:
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await pilot.press("escape", "question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        keys = dict(HELP_KEYS)
        assert "+ / -" in keys and "p" in keys
        source = app.screen.markdown
        assert "`+ / -`" in source and "`p`" in source
        assert "Ranking stage" in source and "judgments.jsonl" in source
