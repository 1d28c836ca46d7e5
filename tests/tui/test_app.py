"""The app end to end over a real engine and a small real repository (Pilot)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections import Counter

from pilot_helpers import (
    column,
    count_arm_calls,
    gate_arms,
    ready,
    record_notifications,
    run_query,
    settled,
    wait_for,
)
from textual.widgets import Input

from ranklens.core.arms import DEFAULT_ARMS
from ranklens.core.arms.protocol import IndexSettings
from ranklens.core.base.handoff_schema import validate_handoff
from ranklens.core.engine import ArmResult, Engine
from ranklens.core.handoff import default_handoff_path, span_text
from ranklens.core.index.indexer import STAGES
from ranklens.core.query.config import default_config
from ranklens.tui.app import HELP_KEYS, ROW_LIMIT, RanklensApp
from ranklens.tui.messages import ArmFinished, IndexProgress
from ranklens.tui.screens.export import ExportScreen, shown_path
from ranklens.tui.screens.help import HelpScreen
from ranklens.tui.widgets.tuning import TuningPanel

SIZE = (120, 36)


# -- searching ---------------------------------------------------------------------------


async def test_typing_a_query_fills_the_table_and_the_preview(engine) -> None:
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        assert isinstance(app.focused, Input)
        await pilot.press(*"password hash")
        # Debounced: it runs on its own after the last key, no enter needed.
        await wait_for(pilot, lambda: app.query_complete)
        await settled(pilot, app)
        assert app.query_text == "password hash"
        assert app.table.row_count >= 1
        assert column(app, "location")[0] == "app/auth.py:1-25"
        assert column(app, "agree")[0] == "4/4"
        assert column(app, "conf")[0] == "high"
        assert column(app, "via")[0] == "BFDS"
        # The preview shows the hit under the cursor, with its trace.
        assert app.preview.syntax is not None and app.preview.trace is not None
        assert "hash_password" in app.preview.syntax.code
        # Moving the cursor moves the preview.
        app.table.focus()
        await pilot.press("down")
        await settled(pilot, app)
        second = app.table.hits[1]
        assert app.table.current_hit is second
        assert f"{second.path}:{second.start_line}-{second.end_line}" in str(
            app.preview.query_one("#preview-header").render()
        )
        states = app.status.states
        assert all(s.state == "done" for s in states.values()), states
        assert "ms" in states["bm25"].detail and " hit" in states["bm25"].detail


async def test_each_arm_landing_grows_agree(engine) -> None:
    gates = gate_arms(engine)
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        app.query_input.value = "parse configuration"
        await pilot.press("enter")
        await wait_for(pilot, lambda: {s.state for s in app.status.states.values()} == {"running"})
        assert app.table.row_count == 0
        best_agreement = []
        for landed, arm in enumerate(("symbols", "bm25", "dense", "fts5"), start=1):
            gates[arm].set()
            await wait_for(pilot, lambda arm=arm: arm in app.results)
            await pilot.pause()
            agree = column(app, "agree")
            assert agree and all(a.endswith(f"/{landed}") for a in agree), agree
            assert app.status.states[arm].state == "done"
            best_agreement.append(max(int(a.split("/")[0]) for a in agree))
        assert best_agreement == [1, 2, 3, 4]
        # Still running arms were shown as running meanwhile; now all are done.
        assert {s.state for s in app.status.states.values()} == {"done"}


async def test_results_of_an_older_query_are_dropped(engine) -> None:
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "password hash")
        before = list(app.table.hits)
        stale = engine.run_arm("bm25", "rate limit requests", depth=50)
        app.post_message(ArmFinished(app.query_id - 1, stale))
        await pilot.pause()
        assert app.table.hits == before
        assert app.results["bm25"].hits[0].path == "app/auth.py"


def expected_locations(app: RanklensApp, weights: dict[str, float], k: float) -> list[str]:
    """The table the engine's own fusion of the cached rankings implies."""
    hits = app.engine.fuse(list(app.results.values()), weights=weights, k=k)[:ROW_LIMIT]
    return [f"{h.path}:{h.start_line}-{h.end_line}" for h in hits]


def expected_moves(before: list[str], after: list[str]) -> list[str]:
    marks = []
    for rank, location in enumerate(after):
        moved = before.index(location) - rank if location in before else None
        marks.append("new" if moved is None else f"↑{moved}" if moved > 0 else f"↓{-moved}" if moved < 0 else "")
    return marks


async def test_a_slider_re_ranks_without_running_any_arm(engine) -> None:
    calls = count_arm_calls(engine)
    once = Counter({arm: 1 for arm in DEFAULT_ARMS})
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "parse configuration")
        assert calls == once
        shipped = default_config()
        defaults, k0 = shipped["weights"], shipped["k"]
        assert app.weights == defaults and app.k == k0  # the shipped defaults (no tuned config)
        before = expected_locations(app, defaults, k0)
        assert column(app, "location") == before
        assert len(before) >= 3
        assert column(app, "move") == [""] * len(before)  # no marks after a query
        app.table.focus()
        await pilot.press("down")
        followed = app.table.current_hit
        assert column(app, "location")[1] == f"{followed.path}:{followed.start_line}-{followed.end_line}"

        # A weight change that re-orders rows (worked out from the engine, so the test
        # does not depend on its scoring details): an arm to 3.0 (end) or to 0.0 (home).
        changes = [(arm, key, 3.0 if key == "end" else 0.0) for key in ("end", "home") for arm in DEFAULT_ARMS]
        arm, key, weight = next(
            change
            for change in changes
            if any(expected_moves(before, expected_locations(app, dict(defaults, **{change[0]: change[2]}), k0)))
        )

        await pilot.press("t")
        await pilot.pause()
        panel = app.query_one(TuningPanel)
        assert app.screen.has_class("-show-tuning")
        assert panel.slider("bm25").has_focus
        await pilot.press(*["down"] * DEFAULT_ARMS.index(arm))  # ↓ moves to the next slider
        assert panel.slider(arm).has_focus
        await pilot.press(key)
        await pilot.pause()

        assert app.weights == dict(defaults, **{arm: weight})
        assert calls == once  # nothing ran again
        after = expected_locations(app, app.weights, k0)
        assert column(app, "location") == after
        assert column(app, "move") == expected_moves(before, after)
        assert any(column(app, "move"))
        # The cursor stayed on the hit it was on, wherever that went.
        assert app.table.current_hit.docid == followed.docid
        assert app.table.cursor_row == after.index(f"{followed.path}:{followed.start_line}-{followed.end_line}")
        assert all(a.endswith("/4") for a in column(app, "agree"))

        # k too; marks are relative to the ranking shown just before.
        panel.slider("k").focus()
        await pilot.pause()
        shown = column(app, "location")
        await pilot.press("end")
        await pilot.pause()
        assert app.k == 200
        assert column(app, "move") == expected_moves(shown, column(app, "location"))
        assert column(app, "location") == expected_locations(app, app.weights, 200)
        assert calls == once

        # r resets everything in one re-fuse.
        await pilot.press("r")
        await pilot.pause()
        assert app.weights == defaults and app.k == k0
        assert column(app, "location") == before
        assert calls == once

        # esc closes the panel and gives the focus back to the table.
        await pilot.press("escape")
        await pilot.pause()
        assert not app.screen.has_class("-show-tuning")
        assert app.focused is app.table


async def test_an_arm_weighted_zero_stops_counting_toward_agree(engine) -> None:
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "password hash")
        assert column(app, "agree")[0] == "4/4"
        app.query_one(TuningPanel).slider("dense").value = 0.0
        await pilot.pause()
        assert column(app, "agree")[0] == "3/4"
        assert column(app, "via")[0] == "BF·S"
        assert app.status.states["dense"].state == "done"


async def test_every_arm_weighted_zero_says_so(engine) -> None:
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "password hash")
        panel = app.query_one(TuningPanel)
        for arm in DEFAULT_ARMS:
            panel.slider(arm).value = 0.0
        await pilot.pause()
        assert app.table.row_count == 0
        message = str(app.preview.query_one("#preview-message").render())
        assert "weighted 0" in message


# -- selection and export ----------------------------------------------------------------


async def test_export_writes_the_selected_hits_with_hashes(engine, tmp_path) -> None:
    app = RanklensApp(engine)
    target = tmp_path / "out" / "handoff.json"
    target.parent.mkdir()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "parse configuration")
        app.table.focus()
        await pilot.press("space", "down", "down", "space")
        await pilot.pause()
        assert column(app, "rank")[0].startswith("●") and column(app, "rank")[2].startswith("●")
        assert not column(app, "rank")[1].startswith("●")
        assert "2 selected" in str(app.table.border_title)
        selected = [app.table.hits[0], app.table.hits[2]]

        await pilot.press("e")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ExportScreen)
        path_input = screen.query_one("#export-path", Input)
        assert path_input.value == shown_path(default_handoff_path(engine.root))
        assert screen.count == 2 and screen.selected
        path_input.value = str(target)
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, ExportScreen)

    data = json.loads(target.read_text(encoding="utf-8"))
    assert data["query"] == "parse configuration"
    assert data["mode"] == "all"
    assert data["retrievers"] == list(DEFAULT_ARMS)
    assert data["skipped"] == []
    assert data["weights"] == default_config()["weights"]
    assert data["k"] == default_config()["k"]
    assert data["root"] == str(engine.root)
    assert [(r["path"], r["start_line"], r["end_line"]) for r in data["results"]] == [
        (h.path, h.start_line, h.end_line) for h in selected
    ]
    for item in data["results"]:
        text = span_text(engine.root, item["path"], item["start_line"], item["end_line"])
        assert item["sha256"] == hashlib.sha256(text.encode("utf-8")).hexdigest()
        assert {c["arm"] for c in item["contributors"]} <= set(DEFAULT_ARMS)
    validate_handoff(data)  # the published format
    # Nothing but the file: the temp file was renamed into place.
    assert sorted(p.name for p in target.parent.iterdir()) == ["handoff.json"]


async def test_export_takes_every_shown_hit_when_none_is_selected(engine, tmp_path) -> None:
    app = RanklensApp(engine)
    target = tmp_path / "all.json"
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "parse configuration")
        # Tuning in force is what is exported.
        app.query_one(TuningPanel).slider("bm25").value = 2.5
        await pilot.pause()
        app.table.focus()
        await pilot.press("e")
        await pilot.pause()
        assert app.screen.count == app.table.row_count and not app.screen.selected
        shown = [h.docid for h in app.table.hits]
        app.screen.query_one("#export-path", Input).value = str(target)
        await pilot.press("enter")
        await pilot.pause()
    data = json.loads(target.read_text(encoding="utf-8"))
    assert [item["docid"] for item in data["results"]] == shown
    assert data["weights"]["bm25"] == 2.5
    assert all(len(item["sha256"]) == 64 for item in data["results"])


async def test_the_default_export_goes_outside_the_repository_and_the_dialog_says_where(engine) -> None:
    app = RanklensApp(engine)
    default = default_handoff_path(engine.root)
    assert not default.parent.exists()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "parse configuration")
        app.table.focus()
        await pilot.press("e")
        await pilot.pause()
        screen = app.screen
        assert screen.where == f"Writes {default}: outside the repository."
        # A path typed into the repository is said to be there, and that it stays out of the index.
        inside = engine.root / "ranklens-handoff.json"
        screen.query_one("#export-path", Input).value = str(inside)
        await pilot.pause()
        assert screen.where == f"Writes {inside}: inside the repository (ranklens never indexes its own exports)."
        screen.query_one("#export-path", Input).value = shown_path(default)
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, ExportScreen)
    validate_handoff(json.loads(default.read_text(encoding="utf-8")))  # its folder made on first use
    assert not default.is_relative_to(engine.root)


async def test_an_unwritable_export_path_shows_the_error(engine, tmp_path) -> None:
    out = tmp_path / "exports"
    out.mkdir()
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "password hash")
        app.table.focus()
        await pilot.press("e")
        await pilot.pause()
        screen = app.screen
        screen.query_one("#export-path", Input).value = str(out / "no" / "such" / "x.json")
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is screen  # still open, the user can fix the path
        assert screen.error.startswith("Could not export:")
        assert f"the folder {out / 'no' / 'such'} does not exist" in screen.error
        assert ".tmp" not in screen.error
        # A directory is not a file either.
        screen.query_one("#export-path", Input).value = str(out)
        await pilot.press("enter")
        await pilot.pause()
        assert "is a folder; give a file name" in screen.error
        if os.geteuid() != 0:  # root writes anywhere
            locked = out / "locked"
            locked.mkdir()
            locked.chmod(0o500)
            try:
                screen.query_one("#export-path", Input).value = str(locked / "x.json")
                await pilot.press("enter")
                await pilot.pause()
                assert f"no permission to write in {locked}" in screen.error
            finally:
                locked.chmod(0o700)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ExportScreen)
        assert app.is_running
    assert [p for p in out.rglob("*") if p.is_file()] == []  # nothing written, no temp file left


async def test_export_with_no_results_notifies(engine) -> None:
    app = RanklensApp(engine)
    shown = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        app.table.focus()
        await pilot.press("e")
        await pilot.pause()
        assert not isinstance(app.screen, ExportScreen)
        assert any("Nothing to export" in n for n in shown)


# -- arms that cannot answer -------------------------------------------------------------


async def test_a_skipped_arm_shows_its_reason(sample_repo) -> None:
    eng = Engine(sample_repo, IndexSettings(model="/nonexistent"))
    eng.ensure_index()
    app = RanklensApp(eng)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "password hash")
        dense = app.status.states["dense"]
        assert dense.state == "skipped"
        assert dense.detail.startswith("skipped (") and "nonexistent" in dense.detail
        assert "dense: skipped (" in str(app.status.render())
        # The others answered; agree counts only them.
        assert column(app, "agree")[0] == "3/3"
        assert column(app, "via")[0] == "BF·S"
    eng.close()


async def test_a_crashing_arm_is_marked_failed_and_the_app_survives(engine) -> None:
    real = engine.run_arm

    def broken(name, query, **kwargs):
        if name == "fts5":
            raise RuntimeError("disk on fire\nsecond line")
        return real(name, query, **kwargs)

    engine.run_arm = broken
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "password hash")
        fts5 = app.status.states["fts5"]
        assert fts5.state == "failed" and "RuntimeError: disk on fire" in fts5.detail
        assert app.is_running
        assert column(app, "agree")[0] == "3/3"


async def test_an_invalid_query_is_explained_and_runs_nothing(engine) -> None:
    calls = count_arm_calls(engine)
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        app.query_input.value = "?? !!"
        await pilot.press("enter")
        await pilot.pause()
        assert "no searchable words" in app.status.note
        assert app.table.row_count == 0
        app.query_input.value = "x" * 1001
        await pilot.press("enter")
        await pilot.pause()
        assert "limit is 1000" in app.status.note
        # Clearing the query is not an error.
        app.query_input.value = ""
        await pilot.press("enter")
        await pilot.pause()
        assert "limit" not in app.status.note
    assert sum(calls.values()) == 0


# -- index -------------------------------------------------------------------------------


async def test_first_open_indexes_with_progress_then_runs_the_waiting_query(sample_repo, monkeypatch) -> None:
    from ranklens.tui.widgets.arm_status import ArmStatus

    eng = Engine(sample_repo)  # never indexed
    progress: list[str] = []
    notes: list[str] = []

    def hook(message) -> None:
        if isinstance(message, IndexProgress):
            progress.append(message.progress.stage)

    # Record every note from the first frame on: the index worker starts on mount, so
    # patching the widget after start-up could miss the first progress notes.
    real_set_note = ArmStatus.set_note

    def record(self, text: str) -> None:
        notes.append(text)
        real_set_note(self, text)

    monkeypatch.setattr(ArmStatus, "set_note", record)
    app = RanklensApp(eng, query="password hash")
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await wait_for(pilot, lambda: app.query_complete, timeout=60)
        await pilot.pause()
        assert column(app, "location")[0] == "app/auth.py:1-25"
    # Progress messages supersede each other, so some steps may be collapsed away.
    assert progress and set(progress) <= set(STAGES)
    assert any("indexing: " in n for n in notes), notes
    assert any("the query runs when the index is ready" in n for n in notes), notes
    assert any(n.startswith("indexed 6 files") for n in notes), notes  # .gitignore is hidden
    eng.close()


async def test_a_tree_that_looks_empty_says_which_rule_emptied_it(tmp_path) -> None:
    root = tmp_path / "linux"
    (root / "kernel").mkdir(parents=True)
    (root / "kernel" / "fork.c").write_text("int copy_process(void);\n")
    (root / ".gitignore").write_text("# Debian packaging\n/*\n!/debian/\n")
    eng = Engine(root)  # never indexed
    app = RanklensApp(eng)
    shown = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        assert [n for n in shown if ".gitignore:2: /*" in n and "--no-ignore" in n], shown
        message = str(app.preview.query_one("#preview-message").render())
        assert message.startswith("Nothing to search: kept no files under") and ".gitignore:2: /*" in message
    eng.close()


async def test_a_warm_start_refreshes_the_index_and_re_runs_the_query(engine, sample_repo) -> None:
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        assert app.status.note.startswith("index up to date")
        await run_query(pilot, app, "rate limit requests")
        first_id = app.query_id
        (sample_repo / "app" / "limits.py").write_text(
            "def rate_limit_requests(client):\n    return client.requests < 10\n", encoding="utf-8"
        )
        app._start_index()  # what returning from the editor does
        await wait_for(pilot, lambda: app.query_id > first_id and app.query_complete)
        await pilot.pause()
        assert "index refreshed (+1" in app.status.note
        assert "app/limits.py:1-2" in column(app, "location")


# -- keys --------------------------------------------------------------------------------


async def test_q_types_in_the_query_and_quits_elsewhere(engine) -> None:
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await pilot.press("q", "?", "t", "e", "space", "slash")
        await pilot.pause()
        assert app.query_input.value == "q?te /"
        assert app.is_running and not isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert app.focused is app.table
        await pilot.press("slash")
        assert app.focused is app.query_input
        await pilot.press("down")
        assert app.focused is app.table
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


async def test_help_lists_the_keys(engine) -> None:
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await pilot.press("escape", "question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        source = app.screen.markdown
        for _key, text in HELP_KEYS:
            assert text.replace("|", "\\|") in source
        for needle in ("agree", "conf", "via", "Σ w_i / (k + rank_i)"):
            assert needle in source
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_enter_or_o_opens_the_editor_at_the_line(engine, monkeypatch) -> None:
    ran: list[list[str]] = []
    app = RanklensApp(engine)
    shown = record_notifications(app)
    monkeypatch.setattr(app, "suspend", contextlib.nullcontext)
    monkeypatch.setattr(app, "run_editor", ran.append)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "rate limit requests")
        app.table.focus()
        hit = app.table.current_hit

        monkeypatch.delenv("EDITOR", raising=False)
        await pilot.press("o")
        # The request bubbles from the table to the app: wait for what it does, not one pause
        # (a loaded machine failed the single pause once).
        await wait_for(pilot, lambda: any("Set $EDITOR" in n for n in shown))
        assert ran == []

        monkeypatch.setenv("EDITOR", "code --wait  -r")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(ran) == 1)
        await pilot.press("down", "o")
        await wait_for(pilot, lambda: len(ran) == 2)
        second = app.table.current_hit
    assert ran == [
        ["code", "--wait", "-r", f"+{hit.start_line}", str(engine.root / hit.path)],
        ["code", "--wait", "-r", f"+{second.start_line}", str(engine.root / second.path)],
    ]


async def test_a_missing_editor_is_reported(engine, monkeypatch) -> None:
    app = RanklensApp(engine)
    shown = record_notifications(app)
    monkeypatch.setattr(app, "suspend", contextlib.nullcontext)
    monkeypatch.setenv("EDITOR", "/no/such/editor-binary")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "password hash")
        app.table.focus()
        await pilot.press("o")
        await pilot.pause()
        assert app.is_running
        assert any("Cannot run /no/such/editor-binary" in n for n in shown)


def test_arm_results_are_plain_data() -> None:
    # ArmFinished carries the engine's ArmResult untouched (no widget, no lock).
    message = ArmFinished(3, ArmResult("bm25", skipped="no index"))
    assert message.query_id == 3 and not message.result.ok


def test_the_app_mixins_handle_messages_by_name() -> None:
    # Textual's @on registers handlers only in classes its metaclass builds (apps, screens,
    # widgets): in a plain mixin it would never be called. The mixins name their handlers.
    from textual.message_pump import MessagePump

    mixins = [cls for cls in RanklensApp.__mro__ if not issubclass(cls, MessagePump) and cls is not object]
    assert {cls.__name__ for cls in mixins} >= {"IndexOrchestration", "HandoffActions"}
    for cls in mixins:
        decorated = [name for name, value in vars(cls).items() if getattr(value, "_textual_on", None)]
        assert not decorated, f"{cls.__name__} uses @on for {decorated}: name the handler instead"
    assert callable(RanklensApp.on_index_done) and callable(RanklensApp.on_deep_done)


async def test_the_rows_are_the_order_every_other_front_end_gives(engine) -> None:
    """One ranking everywhere: the table's rows are the engine's (and so the CLI's and MCP's,
    tests/test_one_ranking.py) list for the same query and settings."""
    query = "evict the least recently used entry from the cache"
    expected = [f"{h.path}:{h.start_line}-{h.end_line}" for h in engine.search(query, top_k=ROW_LIMIT).hits]
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, query)
        assert column(app, "location") == expected


async def test_the_preview_says_why_this_file_and_why_this_chunk(engine) -> None:
    from ranklens.tui.widgets.preview import describe_why

    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "evict the least recently used entry from the cache")
        first = app.hits[0]
        why = [line.plain for line in describe_why(first)]
        assert any(line.startswith("why this chunk ") and "of the file's" in line for line in why), why
        assert any(line.startswith("why this file ") for line in why), why
        shown = [item for item in app.preview.trace.renderables if hasattr(item, "plain")]
        assert any("why this chunk" in item.plain for item in shown)
