"""Preview: span marker, line numbers, emphasised query terms and the fused trace."""

from __future__ import annotations

from rich.console import Console
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widgets import Static

from ranklens.core.base.types import ConsolidatedHit, Contribution
from ranklens.tui.widgets.preview import Preview, lexer_for, query_terms, term_ranges

SOURCE = (
    "\n".join(
        [
            "import os",  # 1
            "",  # 2
            "",  # 3
            "def helper():",  # 4
            "    return 1",  # 5
            "",  # 6
            "def parseHTTPResponse(raw):",  # 7
            '    """Parse one response."""',  # 8
            "    status = raw.split()[1]",  # 9
            "    return status",  # 10
            "",  # 11
            "",  # 12
            "def unrelated():",  # 13
            "    pass",  # 14
            "",  # 15
            "# trailing comment",  # 16
        ]
    )
    + "\n"
)

ARMS = ["bm25", "fts5", "dense", "symbols"]


def make_hit() -> ConsolidatedHit:
    return ConsolidatedHit(
        path="pkg/http.py",
        start_line=7,
        end_line=10,
        docid="pkg/http.py:7-10",
        context="pkg/http.py > parseHTTPResponse",
        score=0.0325,
        rank=1,
        provenance=["bm25", "dense"],
        agreement=2,
        confidence="high",
        contributors=[
            Contribution("bm25", 1, "pkg/http.py:7-10", 7.25, 0.0164),
            Contribution("dense", 2, "pkg/http.py:7-12", 0.81, 0.0161),
        ],
    )


class PreviewApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Preview(context_lines=2, theme="monokai")


def screen_lines(widget: Static) -> list[str]:
    """The text a widget shows, line by line."""
    strips = widget.render_lines(Region(0, 0, *widget.outer_size))
    return [strip.text.strip() for strip in strips]


def render(renderable, width: int = 100):
    console = Console(width=width, record=True, color_system="truecolor", legacy_windows=False)
    console.print(renderable)
    return console


async def show(
    pilot, preview: Preview, *, hit: ConsolidatedHit | None = None, first_line: int = 1, text: str = SOURCE
) -> None:
    preview.show(
        path="pkg/http.py",
        text=text,
        first_line=first_line,
        span=(7, 10),
        query="parse http status",
        hit=hit,
        arms=ARMS,
    )
    await pilot.pause()


async def test_code_window_numbers_and_span_marker() -> None:
    app = PreviewApp()
    async with app.run_test(size=(100, 40)) as pilot:
        preview = app.query_one(Preview)
        await show(pilot, preview, hit=make_hit())
        lines = screen_lines(preview.query_one("#preview-code", Static))
        # Span 7-10 with two lines of context: lines 5..12, numbered.
        numbers = [int(line.replace("❱", "").split()[0]) for line in lines if line.strip()]
        assert numbers == list(range(5, 13))
        assert any("5     return 1" in line for line in lines)
        assert not any("import os" in line for line in lines)
        assert not any("def unrelated" in line for line in lines)
        # Exactly the span's lines carry the gutter marker.
        marked = [line for line in lines if line.lstrip().startswith("❱")]
        assert len(marked) == 4
        assert "7 def parseHTTPResponse(raw):" in marked[0]
        assert "10     return status" in marked[-1]
        assert not any("❱" in line and "return 1" in line for line in lines)
        header = screen_lines(preview.query_one("#preview-header", Static))[0]
        assert header.startswith("pkg/http.py:7-10")
        assert "parseHTTPResponse" in header


async def test_slice_numbering_follows_first_line() -> None:
    app = PreviewApp()
    async with app.run_test(size=(100, 40)) as pilot:
        preview = app.query_one(Preview)
        # The app may pass only a slice: lines 6..16 of the file.
        sliced = "\n".join(SOURCE.split("\n")[5:])
        await show(pilot, preview, first_line=6, text=sliced)
        lines = screen_lines(preview.query_one("#preview-code", Static))
        marked = [line for line in lines if line.lstrip().startswith("❱")]
        assert "7 def parseHTTPResponse(raw):" in marked[0]
        assert any(line.strip().startswith("6") for line in lines)  # context clipped at the slice
        assert not any("return 1" in line for line in lines)
        assert preview.trace is None  # no hit, no trace


async def test_query_terms_are_emphasised() -> None:
    app = PreviewApp()
    async with app.run_test(size=(100, 40)) as pilot:
        preview = app.query_one(Preview)
        await show(pilot, preview, hit=make_hit())
        assert preview.syntax is not None
        console = render(preview.syntax)
        emphasised = {
            segment.text
            for segment in console._record_buffer
            if segment.style is not None and segment.style.bold and segment.style.underline
        }
        # Sub-words of parseHTTPResponse, the whole identifier "status", case-insensitively.
        assert {"parse", "HTTP", "status", "Parse"} <= emphasised
        assert "Response" not in emphasised and "raw" not in emphasised


def test_term_matching_rules() -> None:
    terms = query_terms("getUser http_client")
    assert terms == {"getuser", "get", "user", "http_client", "http", "client"}
    line = "def get_user(x): return HttpClient(getUser)"
    spans = {line[a:b] for a, b in term_ranges(line, terms)}
    assert spans == {"get", "user", "Http", "Client", "getUser"}
    assert term_ranges("xOffset = x", {"x"}) == [(10, 11)]  # whole "x" only, not the sub-word
    assert lexer_for("a/b/module.py") == "python"
    assert lexer_for("notes.unknown-extension") == "text"


async def test_trace_lists_every_arm_with_absent_ones_dimmed() -> None:
    app = PreviewApp()
    async with app.run_test(size=(100, 40)) as pilot:
        preview = app.query_one(Preview)
        await show(pilot, preview, hit=make_hit())
        lines = screen_lines(preview.query_one("#preview-trace", Static))
        text = "\n".join(lines)
        bm25 = next(line for line in lines if line.startswith("bm25"))
        # Both rank it within their top 5: each is a vote, as agree counts.
        assert bm25.split() == ["bm25", "1", "7.25", "0.0164", "top", "5"]
        dense = next(line for line in lines if line.startswith("dense"))
        assert dense.split() == ["dense", "2", "0.81", "0.0161", "top", "5"]
        for arm in ("fts5", "symbols"):
            row = next(line for line in lines if line.startswith(arm))
            assert row.split() == [arm, "absent"]
        assert "score 0.0325" in text
        assert "agree 2/4 (bm25, dense)" in text
        assert "conf high" in text
        assert "via bm25, dense" in text
        # Absent rows are dimmed.
        assert preview.trace is not None
        console = render(preview.trace)
        dim = {s.text.strip() for s in console._record_buffer if s.style is not None and s.style.dim}
        assert {"fts5", "symbols", "absent"} <= dim
        assert "bm25" not in dim


async def test_clear_shows_message_and_hides_code() -> None:
    app = PreviewApp()
    async with app.run_test(size=(100, 40)) as pilot:
        preview = app.query_one(Preview)
        await show(pilot, preview, hit=make_hit())
        preview.clear("no results")
        await pilot.pause()
        assert preview.syntax is None and preview.trace is None
        assert not preview.query_one("#preview-code").display
        message = preview.query_one("#preview-message", Static)
        assert message.display
        assert "no results" in [line.strip() for line in screen_lines(message)]


async def test_trace_height_is_counted_without_rendering() -> None:
    # show_trace decides from a count whether the screen needs a layout pass; the count
    # must agree with what rendering the trace gives, wide or narrow, short or long.
    app = PreviewApp()
    async with app.run_test(size=(100, 30)) as pilot:
        preview = app.query_one(Preview)
        trace_widget = preview.query_one("#preview-trace", Static)
        hit = make_hit()
        await show(pilot, preview, hit=hit)
        many = ["bm25", "fts5", "dense", "symbols", "hybrid", "lexical+ctx"]
        for width in (100, 60, 40, 24):
            await pilot.resize_terminal(width, 30)
            await pilot.pause()
            for arms in (["bm25"], many):
                trace = Preview.build_trace(hit, arms)
                inner = trace_widget.content_size.width
                console = app.console
                rendered = len(console.render_lines(trace, console.options.update_width(inner), pad=False))
                assert preview._trace_height(trace_widget, trace) == rendered, (width, arms)
