"""Snapshots of the app's main states over the sample repository (pytest-textual-snapshot).

Fixed terminal size, no cursor blink, and no time- or machine-dependent text on screen: the
arm timings are hidden (``show_timings = False``) and the repository path never appears.
Update with ``pytest tests/tui/test_snapshots.py --snapshot-update`` and review the SVGs.
"""

from __future__ import annotations

import pytest
from pilot_helpers import ready, run_query

from tui.app import RanklensApp

SIZE = (120, 36)


@pytest.fixture
def app(engine) -> RanklensApp:
    app = RanklensApp(engine)
    app.show_timings = False
    return app


async def settle(pilot, query: str) -> None:
    app: RanklensApp = pilot.app
    app.query_input.cursor_blink = False
    await ready(pilot, app)
    await run_query(pilot, app, query)
    await pilot.pause()


def test_main_view(snap_compare, app) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot, "parse configuration")
        await pilot.press("down")  # the preview follows the cursor

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_tuning_after_a_slider_move(snap_compare, app) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot, "parse configuration")
        await pilot.press("t")
        await pilot.pause()
        await pilot.press("down", "down", "home")  # dense weight 0: rows move, marked ↑/↓
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_export_modal(snap_compare, app) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot, "parse configuration")
        await pilot.press("space", "down", "space", "e")
        await pilot.pause()
        pilot.app.screen.query_one("#export-path").cursor_blink = False

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_help_screen(snap_compare, app) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot, "parse configuration")
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_skipped_arm(snap_compare, sample_repo) -> None:
    from core.engine import Engine
    from core.indexer import IndexSettings

    eng = Engine(sample_repo, IndexSettings(model="/nonexistent/model"))
    eng.ensure_index()
    app = RanklensApp(eng)
    app.show_timings = False

    async def run_before(pilot) -> None:
        await settle(pilot, "password hash")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
    eng.close()


def test_invalid_query(snap_compare, app) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot, "password hash")
        pilot.app.query_input.value = "?!"
        pilot.app.query_input.focus()
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
