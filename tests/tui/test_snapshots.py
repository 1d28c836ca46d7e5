"""Snapshots of the app's main states over the sample repository (pytest-textual-snapshot).

Fixed terminal size, no cursor blink, and no time- or machine-dependent text on screen: the
arm timings are hidden (``show_timings = False``) and the repository path never appears.
The arms answer with fixed rankings (``engine.run_arm`` is replaced; the app's workers,
messages, fusion and drawing are the real ones), so a snapshot changes when the UI or the
fusion changes, not when an arm's scoring is tuned.

Update with ``pytest tests/tui/test_snapshots.py --snapshot-update`` and review the SVGs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pilot_helpers import ready, run_query

from ranklens.core.base.types import Hit, make_docid
from ranklens.core.engine import ArmResult
from ranklens.tui.app import RanklensApp

SIZE = (120, 36)

#: (path, start, end, context) per arm, best first.
RANKINGS: dict[str, list[tuple[str, int, int, str]]] = {
    "bm25": [
        ("docs/guide.md", 9, 11, "docs/guide.md > Guide > Configuration"),
        ("engine/src/lib.rs", 1, 7, "engine/src/lib.rs"),
        ("web/router.js", 1, 5, "web/router.js"),
    ],
    "fts5": [
        ("engine/src/lib.rs", 1, 7, "engine/src/lib.rs"),
        ("docs/guide.md", 9, 11, "docs/guide.md > Guide > Configuration"),
    ],
    "dense": [
        ("docs/guide.md", 9, 11, "docs/guide.md > Guide > Configuration"),
        ("web/router.js", 1, 5, "web/router.js"),
        ("engine/src/lib.rs", 1, 7, "engine/src/lib.rs"),
        ("server/main.go", 1, 20, "server/main.go"),
        ("app/cache.py", 1, 19, "app/cache.py"),
    ],
    "symbols": [
        ("engine/src/lib.rs", 2, 7, "engine/src/lib.rs > parse_config"),
        ("web/router.js", 2, 5, "web/router.js > parseRoute"),
        ("app/auth.py", 17, 25, "app/auth.py > login_user"),
    ],
}


def fixed_results(skip: dict[str, str] | None = None) -> dict[str, ArmResult]:
    out = {}
    for arm, ranking in RANKINGS.items():
        if skip and arm in skip:
            out[arm] = ArmResult(arm, skipped=skip[arm])
            continue
        hits = [
            Hit(arm, make_docid(path, start, end), path, start, end, rank, round(10.0 / rank, 3), context)
            for rank, (path, start, end, context) in enumerate(ranking, start=1)
        ]
        out[arm] = ArmResult(arm, hits=hits, elapsed_ms=1.0)
    return out


@pytest.fixture
def app(engine) -> RanklensApp:
    results = fixed_results()
    engine.run_arm = lambda name, query, **_: results[name]
    app = RanklensApp(engine)
    app.show_timings = False
    return app


async def settle(pilot, query: str = "parse configuration") -> None:
    app: RanklensApp = pilot.app
    app.query_input.cursor_blink = False
    await ready(pilot, app)
    await run_query(pilot, app, query)
    await pilot.pause()


def test_main_view(snap_compare, app) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("down")  # the preview follows the cursor

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_tuning_after_a_slider_move(snap_compare, app) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("t")
        await pilot.pause()
        await pilot.press("down", "down", "down", "end")  # symbols weight 3.0: rows move, marked ↑/↓
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_export_modal(snap_compare, app, monkeypatch) -> None:
    # The default lies in the user cache folder (a temporary one here): a fixed path on screen.
    monkeypatch.setattr(
        "ranklens.tui.handoff.default_handoff_path", lambda root: Path("/home/user/.cache/ranklens/handoffs/repo.json")
    )

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("space", "down", "space", "e")
        await pilot.pause()
        pilot.app.screen.query_one("#export-path").cursor_blink = False

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_help_screen(snap_compare, app) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_skipped_arm(snap_compare, engine) -> None:
    results = fixed_results(skip={"dense": "cannot load embedding model '/nonexistent/model'"})
    engine.run_arm = lambda name, query, **_: results[name]
    app = RanklensApp(engine)
    app.show_timings = False

    async def run_before(pilot) -> None:
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_invalid_query(snap_compare, app) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.query_input.value = "?!"
        pilot.app.query_input.focus()
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_the_terminal_running_the_tests_does_not_change_the_drawing(engine, monkeypatch) -> None:
    # tmux, an xterm-256color or a truecolor terminal: the app draws with the snapshots' 16
    # colours (tests/tui/conftest.py), so `python3 run_tests.py` passes in any of them.
    for term, colorterm in (("tmux-256color", ""), ("xterm-256color", "truecolor"), ("xterm", ""), ("dumb", "")):
        monkeypatch.setenv("TERM", term)
        monkeypatch.setenv("COLORTERM", colorterm)
        assert RanklensApp(engine).console.color_system == "standard", (term, colorterm)
