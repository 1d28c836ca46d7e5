"""The walk (``r``, enter, ``backspace``) and more like this (``m``) in the app, on a small
Python repository whose callers, callees and tests are known (the core side:
tests/test_graph.py, tests/test_trail.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pilot_helpers import ready, run_query, settled, wait_for
from test_graph import write as write_files

from ranklens.core.base.handoff_schema import validate_handoff
from ranklens.core.engine import Engine
from ranklens.tui.app import RanklensApp
from ranklens.tui.screens.export import ExportScreen

SIZE = (140, 40)

FILES = {
    "shop/retry.py": '''
        """Retrying with backoff."""


        class Retry:
            def __init__(self, total):
                self.total = total

            def get_backoff_time(self):
                return min(self.total * 2, MAX_BACKOFF)

            def sleep_for(self):
                return self.get_backoff_time()


        MAX_BACKOFF = 120
        ''',
    "shop/client.py": """
        from .retry import Retry


        def fetch(url):
            policy = Retry(3)
            wait = policy.get_backoff_time()
            return url, wait


        def describe(url):
            return fetch(url)
        """,
    "tests/test_retry.py": """
        from shop.retry import Retry


        def test_backoff_doubles():
            assert Retry(2).get_backoff_time() == 4
        """,
}


def write(root: Path) -> Path:
    return write_files(root, FILES)


@pytest.fixture
def shop_engine(tmp_path):
    engine = Engine(write(tmp_path / "shop"))
    engine.ensure_index(deep=False)
    yield engine
    engine.close()


async def open_hit(pilot, app: RanklensApp, name: str) -> None:
    """Put the table's cursor on the hit whose breadcrumb ends with ``name``."""
    table = app.table
    row = next(i for i, h in enumerate(table.hits) if h.context.endswith(name))
    table.move_cursor(row=row)
    await settled(pilot, app)


async def walked(pilot, app: RanklensApp, depth: int) -> None:
    await wait_for(pilot, lambda: app.trail.depth == depth)
    await app.workers.wait_for_complete()
    await pilot.pause()


async def from_hit(pilot, app: RanklensApp, question: str, name: str, key: str) -> None:
    """Ask ``question``, put the cursor on the hit named ``name`` and press ``key`` (``r``,
    ``m``): one step along the trail."""
    await ready(pilot, app)
    await run_query(pilot, app, question)
    await open_hit(pilot, app, name)
    await pilot.press(key)
    await walked(pilot, app, 2)


def rows(app: RanklensApp) -> list[str]:
    walk = app.walk_list
    return [walk.row_text(i) for i in range(walk.option_count)]


def header(app: RanklensApp) -> str:
    return str(app.preview.query_one("#preview-header").render())


async def export(pilot, app: RanklensApp, target: Path) -> dict:
    await pilot.press("e")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, ExportScreen)
    screen.query_one("#export-path").value = str(target)
    await pilot.press("enter")
    await pilot.pause()
    assert not isinstance(app.screen, ExportScreen)
    return json.loads(target.read_text(encoding="utf-8"))


RETRY = {"path": "shop/retry.py", "start_line": 4, "end_line": 12, "name": "Retry"}


async def test_a_walk_to_a_caller_and_back_exports_how_each_span_was_reached(shop_engine, tmp_path) -> None:
    app = RanklensApp(shop_engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "get backoff time")
        await open_hit(pilot, app, "Retry")
        assert not app.breadcrumbs.display

        # r: the hit's neighbourhood, in place of the results; the preview shows the unit.
        await pilot.press("r")
        await walked(pilot, app, 2)
        assert app.walking and app.focused is app.walk_list and not app.table.display
        assert rows(app) == [
            "  ▸ shop/retry.py:4-12  Retry  this unit",
            "callers 1",
            "  shop/client.py:4-7  fetch  line 5: Retry, imported, 1 definition",
            "callees 1",
            "  shop/retry.py:8-9  get_backoff_time  line 12: get_backoff_time, same file, 1 definition",
            "tests 1",
            "  tests/test_retry.py:4-5  test_backoff_doubles  line 5: Retry, imported, 1 definition",
        ]
        assert app.walk_list.border_title == "callers 1 · callees 1 · tests 1"
        assert app.breadcrumbs.display and app.breadcrumbs.plain == "question › Retry"
        assert header(app).startswith("shop/retry.py:4-12")

        # The cursor on the caller: the preview follows; enter goes to it.
        await pilot.press("down")
        await settled(pilot, app)
        await pilot.pause(0.1)
        assert header(app).startswith("shop/client.py:4-7")
        await pilot.press("enter")
        await walked(pilot, app, 3)
        assert app.breadcrumbs.plain == "question › Retry › callers: fetch"
        assert header(app).startswith("shop/client.py:4-7")
        assert rows(app)[0] == "  ▸ shop/client.py:4-7  fetch  this unit"
        assert "  shop/client.py:10-11  describe  line 11: fetch, same file, 1 definition" in rows(app)
        # Selected here: fetch, reached as a caller of Retry.
        await pilot.press("space")
        await pilot.pause()
        assert rows(app)[0].startswith("●")
        assert "1 selected along the trail" in str(app.breadcrumbs.render())

        # Back: the trail shrinks, the cursor is where it was, then the results come back.
        await pilot.press("backspace")
        await walked(pilot, app, 2)
        assert app.breadcrumbs.plain == "question › Retry"
        assert app.walk_list.current.place.name == "fetch"
        assert rows(app)[2].startswith("●")  # the selection shows wherever the unit is listed
        # The test, selected from Retry's neighbourhood.
        await pilot.press("down", "down")
        assert app.walk_list.current.place.name == "test_backoff_doubles"
        await pilot.press("space")
        await pilot.press("b")
        await walked(pilot, app, 1)
        assert not app.walking and app.focused is app.table and app.table.display
        await settled(pilot, app)
        assert header(app).startswith(f"{app.table.current_hit.path}:")
        # And a hit of the question.
        await pilot.press("space")
        await pilot.pause()
        hit = app.table.current_hit
        data = await export(pilot, app, tmp_path / "walk.json")

    validate_handoff(data)
    assert data["query"] == "get backoff time"
    reached = {(r["path"], r["start_line"], r["end_line"]): r["reached"] for r in data["results"]}
    assert reached == {
        (hit.path, hit.start_line, hit.end_line): {"by": "question"},
        ("shop/client.py", 4, 7): {"by": "caller", "of": RETRY},
        ("tests/test_retry.py", 4, 5): {"by": "test", "of": RETRY},
    }
    assert all(len(r["sha256"]) == 64 for r in data["results"])


async def test_more_like_this_lists_other_units_without_the_unit_itself(shop_engine, tmp_path) -> None:
    app = RanklensApp(shop_engine)
    async with app.run_test(size=SIZE) as pilot:
        await from_hit(pilot, app, "get backoff time", "fetch, describe", "m")
        await wait_for(pilot, lambda: app.query_complete)
        await settled(pilot, app)
        assert app.breadcrumbs.plain.startswith("question › like shop/client.py:")
        assert "like shop/client.py:" in str(app.table.border_title)
        assert "like shop/client.py:" in str(app.status.render())
        spans = [(h.path, h.start_line, h.end_line) for h in app.table.hits]
        assert spans and all(p != "shop/client.py" or e < 4 or s > 7 for p, s, e in spans)
        assert [h.rank for h in app.table.hits] == list(range(1, len(spans) + 1))
        like_of = app.trail.top.place
        await pilot.press("space")
        await pilot.pause()
        data = await export(pilot, app, tmp_path / "like.json")
        validate_handoff(data)
        assert data["results"][0]["reached"] == {
            "by": "like",
            "of": {
                "path": like_of.path,
                "start_line": like_of.start_line,
                "end_line": like_of.end_line,
                "name": like_of.name,
            },
        }
        # Back: the question's list again.
        await pilot.press("backspace")
        await walked(pilot, app, 1)
        await wait_for(pilot, lambda: app.query_text == "get backoff time" and app.query_complete)
        await settled(pilot, app)
        assert app.session.like is None and app.table.border_title.startswith("results · ")
        assert "like" not in str(app.table.border_title)


async def test_r_in_the_preview_follows_the_unit_it_shows(shop_engine) -> None:
    app = RanklensApp(shop_engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "get backoff time")
        await open_hit(pilot, app, "Retry")
        app.preview.focus()
        await pilot.press("r")
        await walked(pilot, app, 2)
        assert app.trail.top.place.name == "Retry"
        # On the walk, the preview shows the place under the cursor: r there goes to it.
        assert app.focused is app.walk_list
        await pilot.press("down")
        assert app.walk_list.current.place.name == "fetch"
        await settled(pilot, app)
        app.preview.focus()
        await pilot.press("r")
        await walked(pilot, app, 3)
        assert app.breadcrumbs.plain == "question › Retry › callers: fetch"


async def test_typing_a_new_question_ends_the_walk(shop_engine) -> None:
    app = RanklensApp(shop_engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "get backoff time")
        await open_hit(pilot, app, "Retry")
        await pilot.press("r")
        await walked(pilot, app, 2)
        await run_query(pilot, app, "fetch url")
        assert app.trail.depth == 1 and not app.walking and app.table.display
        assert not app.breadcrumbs.display


async def test_r_on_a_line_outside_any_definition_says_so(tmp_path) -> None:
    root = tmp_path / "flat"
    root.mkdir()
    (root / "notes.txt").write_text("The backoff time doubles on every retry.\n")
    engine = Engine(root)
    engine.ensure_index(deep=False)
    try:
        app = RanklensApp(engine)
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot, app)
            await run_query(pilot, app, "backoff time")
            shown = []
            real = app.notify
            app.notify = lambda message, *a, **k: (shown.append(str(message)), real(message, *a, **k))
            await pilot.press("r")
            await wait_for(pilot, lambda: shown or app.trail.depth > 1)
            assert app.trail.depth == 1 and "Cannot follow it" in shown[0]
    finally:
        engine.close()


async def test_r_on_a_hit_packing_two_functions_follows_both(shop_engine) -> None:
    """client.py is one chunk holding fetch and describe: r lists what both use, and not
    describe's call of fetch (the hit's own code)."""
    app = RanklensApp(shop_engine)
    async with app.run_test(size=SIZE) as pilot:
        await from_hit(pilot, app, "fetch url describe", "fetch, describe", "r")
        assert rows(app)[0].startswith("  ▸ shop/client.py:4-11  fetch, describe")
        shown = "\n".join(rows(app))
        assert "Retry" in shown and "get_backoff_time" in shown
        assert "line 11: fetch" not in shown
        assert app.breadcrumbs.plain == "question › fetch, describe"
