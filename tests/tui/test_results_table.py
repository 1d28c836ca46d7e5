"""The results table on its own: public Textual API only, keys, mouse, and what it draws.

The app's tests drive it through real queries; these mount it alone with made-up hits.
"""

from __future__ import annotations

import ast
from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import DataTable

import ranklens.tui
from ranklens.core.base.types import ConsolidatedHit, Contribution
from ranklens.core.query.labels import AGREEMENT_DEPTH
from ranklens.tui.widgets.results_table import ResultsTable, via_legend

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


async def test_via_capitals_are_the_arms_that_agree_counts_and_lowercase_the_others() -> None:
    """``via`` and ``agree`` tell one story: a capital is an arm that ranks the span within its
    top AGREEMENT_DEPTH (a vote, counted in agree's n); lowercase an arm that ranked it lower
    down over the index, or only among its file's chunks (a chunk the chunk step chose)."""
    made = hits(4)
    # bm25 ranks it 1st, dense 12th: one vote; both found it.
    made[0].provenance, made[0].agreement = ["bm25", "dense"], 1
    made[0].contributors = [Contribution("bm25", 1, "d", 3.0, 0.1), Contribution("dense", 12, "d", 0.5, 0.01)]
    # dense ranks it within its file only.
    made[1].provenance, made[1].agreement, made[1].within = [], 0, {"dense": 1}
    # nobody ranked it (a row a test makes up).
    made[2].provenance, made[2].agreement, made[2].within = [], 0, {}
    # both in their top 5: two votes.
    made[3].provenance, made[3].agreement = ["bm25", "dense"], 2
    made[3].contributors = [Contribution("bm25", 5, "d", 3.0, 0.1), Contribution("dense", 2, "d", 0.5, 0.1)]
    app = TableApp(0)
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(ResultsTable)
        table.set_hits(made, answered=2, arms=["bm25", "dense"])
        await pilot.pause()
        via = [table.cell_text(row, "via") for row in range(4)]
        assert via == ["Bd", "·d", "··", "BD"]
        agree = [table.cell_text(row, "agree") for row in range(4)]
        assert agree == ["1/2", "0/2", "0/2", "2/2"]
        # agree's n is the number of capitals, row by row.
        assert [sum(c.isupper() for c in v) for v in via] == [int(a.split("/")[0]) for a in agree]


def test_the_via_legend_names_each_arm_and_what_a_capital_means() -> None:
    legend = via_legend(["bm25", "fts5", "dense", "symbols", "deep"])
    assert legend.startswith("via: B=bm25 F=fts5 D=dense S=symbols DE=deep")
    assert f"CAPS: in its top {AGREEMENT_DEPTH} (agree)" in legend
