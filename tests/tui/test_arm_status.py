"""ArmStatus: one line of per-arm states plus a note slot."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.geometry import Region

from ranklens.tui.widgets.arm_status import ArmStatus, format_ms


class StatusApp(App[None]):
    def compose(self) -> ComposeResult:
        yield ArmStatus(["bm25", "dense", "symbols"])


def shown(widget: ArmStatus) -> str:
    return widget.render_lines(Region(0, 0, *widget.outer_size))[0].text.strip()


def color_of(widget: ArmStatus, needle: str):
    """The foreground colour the line uses for the first cell of ``needle``."""
    strip = widget.render_lines(Region(0, 0, *widget.outer_size))[0]
    for segment in strip:
        if needle in segment.text:
            return segment.style.color
    raise AssertionError(f"{needle!r} not on screen")


async def test_states_render_in_order_with_note() -> None:
    app = StatusApp()
    async with app.run_test(size=(140, 3)) as pilot:
        status = app.query_one(ArmStatus)
        await pilot.pause()
        assert shown(status) == "bm25: –   dense: –   symbols: –"
        status.set_running("bm25")
        status.set_running("dense")
        status.set_done("bm25", 12.4, 30)
        status.set_skipped("symbols", "no index")
        status.set_failed("dense", "model missing")
        status.set_note("indexing 40%")
        await pilot.pause()
        assert shown(status) == (
            "bm25: 12 ms · 30 hits   dense: failed (model missing)   symbols: skipped (no index)   │ indexing 40%"
        )
        assert status.states["dense"].state == "failed"
        # States get different colours.
        done, failed, skipped = (
            color_of(status, "12 ms"),
            color_of(status, "failed"),
            color_of(status, "skipped"),
        )
        assert len({done, failed, skipped}) == 3


async def test_running_single_hit_reset_and_new_arm() -> None:
    app = StatusApp()
    async with app.run_test(size=(140, 3)) as pilot:
        status = app.query_one(ArmStatus)
        status.set_running("dense")
        status.set_done("bm25", 0.42, 1)
        await pilot.pause()
        assert shown(status) == "bm25: 0.4 ms · 1 hit   dense: running…   symbols: –"
        status.set_note("42 ms total")
        status.reset(["fts5", "bm25"])
        status.set_done("tags", 1500, 0)  # an arm not in the reset list is appended
        await pilot.pause()
        assert shown(status) == "fts5: –   bm25: –   tags: 1.5 s · 0 hits   │ 42 ms total"
        status.set_note("")
        await pilot.pause()
        assert shown(status) == "fts5: –   bm25: –   tags: 1.5 s · 0 hits"
        assert status.note == ""


async def test_done_without_timing() -> None:
    app = StatusApp()
    async with app.run_test(size=(140, 3)) as pilot:
        status = app.query_one(ArmStatus)
        status.set_done("bm25", None, 3)
        await pilot.pause()
        assert shown(status).startswith("bm25: 3 hits   dense: –")


def test_format_ms() -> None:
    assert format_ms(0.42) == "0.4 ms"
    assert format_ms(12.4) == "12 ms"
    assert format_ms(1500) == "1.5 s"
