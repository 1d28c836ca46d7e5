"""The results table on its own: public Textual API only, keys, mouse, and what it draws.

The app's tests drive it through real queries; these mount it alone with made-up hits.
"""

from __future__ import annotations

import ast
from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import DataTable

import ranklens.tui
from ranklens.core.types import ConsolidatedHit
from ranklens.tui.widgets.results_table import ResultsTable

TUI = Path(ranklens.tui.__file__).parent
SIZE = (100, 20)


def hits(n: int) -> list[ConsolidatedHit]:
    return [
        ConsolidatedHit(
            path=f"pkg/mod{i}.py",
            start_line=1,
            end_line=9,
            docid=f"pkg/mod{i}.py:1-9",
            context=f"pkg/mod{i}.py > f{i}",
            score=1.0 / i,
            rank=i,
            provenance=["bm25"],
            agreement=1,
            confidence="medium",
        )
        for i in range(1, n + 1)
    ]


class TableApp(App[None]):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n
        self.messages: list[object] = []

    def compose(self) -> ComposeResult:
        yield ResultsTable(id="results")

    def on_mount(self) -> None:
        table = self.query_one(ResultsTable)
        table.set_hits(hits(self.n), answered=1, arms=["bm25"])
        table.focus()

    def on_results_table_cursor_moved(self, message: ResultsTable.CursorMoved) -> None:
        self.messages.append(("moved", message.hit.rank))

    def on_results_table_open_requested(self, message: ResultsTable.OpenRequested) -> None:
        self.messages.append(("open", message.hit.rank))


def test_the_ui_uses_public_textual_api_only() -> None:
    # The results table was a DataTable whose private members (_render_cell, _update_rows,
    # _drop_rows …) were overridden for speed: a Textual release could break it silently.
    for path in TUI.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("textual._"), f"{path.name} imports {node.module}"
    assert not issubclass(ResultsTable, DataTable)


async def test_keys_move_the_cursor_and_scroll() -> None:
    app = TableApp(40)
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(ResultsTable)
        await pilot.pause()
        page = table.scrollable_content_region.height - 1  # the header stays
        await pilot.press("down", "down")
        assert table.cursor_row == 2 and table.current_hit.rank == 3
        await pilot.press("pagedown")
        assert table.cursor_row == 2 + page and table.scroll_y > 0
        await pilot.press("end")
        assert table.cursor_row == 39 and table.scroll_y == table.max_scroll_y
        await pilot.press("up", "pageup")
        assert table.cursor_row == 38 - page
        await pilot.press("home")
        assert table.cursor_row == 0 and table.scroll_y == 0
        await pilot.press("up")  # already at the top
        assert table.cursor_row == 0
        await pilot.press("enter", "down", "o")
        await pilot.pause()
    assert app.messages[:2] == [("moved", 2), ("moved", 3)]
    assert app.messages[-3:] == [("open", 1), ("moved", 2), ("open", 2)]


async def test_a_click_moves_the_cursor_and_a_click_on_it_opens() -> None:
    app = TableApp(5)
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(ResultsTable)
        await pilot.pause()
        await pilot.click(ResultsTable, offset=(10, 3))  # header on line 0: the third row
        assert table.cursor_row == 2
        assert app.messages == [("moved", 3)]
        await pilot.click(ResultsTable, offset=(30, 3))
        await pilot.pause()
        assert app.messages == [("moved", 3), ("open", 3)]
        await pilot.click(ResultsTable, offset=(10, 0))  # the header: nothing
        assert table.cursor_row == 2


async def test_the_cursor_and_hover_rows_are_styled_from_the_component_classes() -> None:
    app = TableApp(5)
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(ResultsTable)
        await pilot.pause()
        cursor = table.get_component_rich_style("results-table--cursor")
        hover = table.get_component_rich_style("results-table--hover")

        def background(y: int):
            return next(iter(table.render_line(y))).style.bgcolor

        assert table.render_line(0).text.split() == [
            "#",
            "move",
            "score",
            "agree",
            "conf",
            "via",
            "location",
            "context",
        ]
        assert background(1) == cursor.bgcolor and background(2) != cursor.bgcolor
        await pilot.hover(ResultsTable, offset=(10, 3))
        await pilot.pause()
        assert background(3) == hover.bgcolor and background(2) != hover.bgcolor
        await pilot.press("down")  # the keyboard hides the hover row
        await pilot.pause()
        assert background(2) == cursor.bgcolor and background(3) != hover.bgcolor
        assert "pkg/mod2.py:1-9" in table.render_line(2).text


async def test_via_names_in_capitals_the_arms_over_the_index_and_in_lowercase_those_within_the_file() -> None:
    """A chunk the chunk step chose can be one no arm ranked over the whole index: ``via``
    then shows, in lowercase, the arms that ranked it among its file's chunks."""
    made = hits(3)
    made[0].provenance, made[0].within = ["bm25"], {"bm25": 1, "dense": 2}
    made[1].provenance, made[1].within = [], {"dense": 1}
    made[2].provenance, made[2].within = [], {}
    app = TableApp(0)
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(ResultsTable)
        table.set_hits(made, answered=2, arms=["bm25", "dense"])
        await pilot.pause()
        assert [table.cell_text(row, "via") for row in range(3)] == ["Bd", "·d", "··"]
