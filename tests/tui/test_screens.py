"""Help and export modals, and the app stylesheet laid out around the building blocks."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import DataTable, Footer, Input, Static

import ranklens.tui
from ranklens.tui.screens.export import ExportScreen
from ranklens.tui.screens.help import FORMULA, HelpScreen
from ranklens.tui.widgets.arm_status import ArmStatus
from ranklens.tui.widgets.preview import Preview
from ranklens.tui.widgets.slider import Slider

APP_TCSS = Path(ranklens.tui.__file__).parent / "app.tcss"
KEYS = [("?", "Help"), ("ctrl+e", "Export hits"), ("t", "Toggle tuning | weights")]


class HostApp(App[None]):
    """An empty app that opens the help with ``?`` and records what modals return."""

    BINDINGS: ClassVar = [("question_mark", "help", "Help")]

    def __init__(self) -> None:
        super().__init__()
        self.results: list[object] = []

    def compose(self) -> ComposeResult:
        yield Static("host")

    def action_help(self) -> None:
        self.push_screen(HelpScreen(KEYS))

    def open_export(self, screen: ExportScreen) -> None:
        self.push_screen(screen, self.results.append)


def rendered_lines(root: Widget) -> list[str]:
    """The stripped text lines every leaf widget under ``root`` shows."""
    lines: list[str] = []
    for widget in root.query("*"):
        if not widget.children:
            strips = widget.render_lines(Region(0, 0, *widget.outer_size))
            lines += [strip.text.strip() for strip in strips]
    return lines


# -- help -------------------------------------------------------------------------------


async def test_help_opens_with_question_mark_and_explains() -> None:
    app = HostApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        source = app.screen.markdown
        assert FORMULA in source
        assert "Σ w_i / (k + rank_i)" in source
        for needle in ("agree", "conf", "via", "1-based", "best rank", "↑3", "dense", "symbols"):
            assert needle in source
        assert "| `ctrl+e` | Export hits |" in source
        assert "Toggle tuning \\| weights" in source  # a "|" must not split the table cell
        # The formula and the bindings are on screen, not only in the source.
        shown = rendered_lines(app.screen.query_one("#help-body"))
        assert FORMULA in shown
        rows = [line.split(None, 1) for line in shown if line.startswith(("ctrl+e", "t "))]
        assert ["ctrl+e", "Export hits"] in rows and ["t", "Toggle tuning | weights"] in rows


async def test_help_closes_with_escape_q_and_question_mark() -> None:
    app = HostApp()
    async with app.run_test(size=(120, 40)) as pilot:
        for key in ("escape", "q", "question_mark"):
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            await pilot.press(key)
            await pilot.pause()
            assert not isinstance(app.screen, HelpScreen), key


# -- export -----------------------------------------------------------------------------


async def test_export_cancel_returns_none_and_writes_nothing() -> None:
    calls: list[Path] = []
    app = HostApp()
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_export(ExportScreen(calls.append, count=12, selected=False))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ExportScreen)
        assert screen.query_one("#export-path", Input).value == "./ranklens-handoff.json"
        assert screen.where == f"Writes {Path.cwd() / 'ranklens-handoff.json'}"
        assert "All 12 hits" in str(screen.query_one("#export-count", Static).content)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ExportScreen)
        app.open_export(ExportScreen(calls.append, count=1, selected=True))
        await pilot.pause()
        assert "1 selected hit " in str(app.screen.query_one("#export-count", Static).content)
        await pilot.click("#export-cancel")
        await pilot.pause()
        assert app.results == [None, None]
        assert calls == []


async def test_export_enter_calls_writer_and_dismisses_with_path(tmp_path: Path) -> None:
    calls: list[Path] = []
    target = tmp_path / "out.json"
    app = HostApp()
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_export(ExportScreen(calls.append, count=3, default_path=str(target)))
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert calls == [target]
        assert app.results == [target]
        assert not isinstance(app.screen, ExportScreen)


async def test_export_button_and_tilde_expansion(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    calls: list[Path] = []
    app = HostApp()
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_export(ExportScreen(calls.append, count=3))
        await pilot.pause()
        path_input = app.screen.query_one("#export-path", Input)
        path_input.value = "~/hand.json"
        await pilot.click("#export-ok")
        await pilot.pause()
        assert calls == [tmp_path / "hand.json"]
        assert app.results == [tmp_path / "hand.json"]


async def test_export_writer_error_is_shown_and_screen_stays() -> None:
    attempts: list[Path] = []

    def writer(path: Path) -> None:
        attempts.append(path)
        if len(attempts) == 1:
            raise PermissionError(13, "Permission denied", str(path))

    app = HostApp()
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_export(ExportScreen(writer, count=5, default_path="/root-only/x.json"))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ExportScreen)
        error = screen.query_one("#export-error", Static)
        assert not error.display and screen.error == ""
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is screen  # still open
        assert app.results == []
        assert error.display
        assert "Permission denied" in screen.error
        assert "/root-only/x.json" in screen.error
        # Editing the path clears the stale error; a second try succeeds.
        await pilot.press("backspace")
        await pilot.pause()
        assert screen.error == ""
        await pilot.press("enter")
        await pilot.pause()
        assert app.results == [Path("/root-only/x.jso")]


async def test_export_empty_path_and_value_error() -> None:
    def writer(path: Path) -> None:
        raise ValueError("nothing to export")

    app = HostApp()
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_export(ExportScreen(writer, count=0, default_path=""))
        await pilot.pause()
        screen = app.screen
        await pilot.press("enter")
        await pilot.pause()
        assert screen.error == "Enter a file path."
        await pilot.press(*"a.json")
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is screen
        assert "nothing to export" in screen.error


# -- stylesheet -------------------------------------------------------------------------


class LayoutApp(App[None]):
    """The layout app.tcss describes, with the building blocks in place."""

    CSS_PATH = APP_TCSS
    HORIZONTAL_BREAKPOINTS: ClassVar = [(0, "-narrow"), (110, "-wide")]

    def compose(self) -> ComposeResult:
        yield Input(id="query")
        with Horizontal(id="main"):
            yield DataTable(id="results")
            yield Preview(id="preview")
        with VerticalScroll(id="tuning"):
            yield Slider(1.0, min=0.0, max=2.0, step=0.1, label="bm25", id="w-bm25")
            yield Slider(60, min=1, max=200, step=1, label="k", id="k")
        yield ArmStatus(["bm25", "dense"], id="arm-status")
        yield Footer()


async def test_stylesheet_lays_out_the_app_and_toggles_tuning() -> None:
    app = LayoutApp()
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        query = app.query_one("#query").region
        results = app.query_one("#results").region
        preview = app.query_one("#preview").region
        status = app.query_one(ArmStatus).region
        footer = app.query_one(Footer).region
        assert query.y == 0
        assert results.y > query.y and results.x < preview.x  # side by side
        assert status.height == 1 and status.y == footer.y - 1
        assert not app.query_one("#tuning").display or app.query_one("#tuning").region.width == 0
        app.screen.add_class("-show-tuning")
        await pilot.pause()
        tuning = app.query_one("#tuning").region
        assert tuning.width > 0 and tuning.right == 140
        # Slider tracks line up: same label and value widths.
        a, b = app.query_one("#w-bm25", Slider), app.query_one("#k", Slider)
        assert a.content_region.x == b.content_region.x
        assert a._track_width() == b._track_width()
    narrow = LayoutApp()
    async with narrow.run_test(size=(90, 40)) as pilot:
        await pilot.pause()
        results = narrow.query_one("#results").region
        preview = narrow.query_one("#preview").region
        assert preview.y > results.y  # stacked


async def test_modals_are_centred_with_the_stylesheet() -> None:
    app = LayoutApp()
    async with app.run_test(size=(140, 40)) as pilot:
        app.push_screen(HelpScreen(KEYS))
        await pilot.pause()
        body = app.screen.query_one("#help-body").region
        assert body.x > 0 and abs((body.x + body.right) / 2 - 70) <= 1
        await pilot.press("escape")
        app.push_screen(ExportScreen(lambda path: None, count=2))
        await pilot.pause()
        outer = app.screen.query_one("#export-outer").region
        assert outer.width == 72 and abs((outer.x + outer.right) / 2 - 70) <= 1
