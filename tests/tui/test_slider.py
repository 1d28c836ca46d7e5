"""Slider: keyboard, mouse, clamping, snapping and its Changed message."""

from __future__ import annotations

import pytest
from textual import events, on
from textual.app import App, ComposeResult
from textual.geometry import Region

from ranklens.tui.widgets.slider import Slider

WIDTH = 60


class SliderApp(App[None]):
    """One slider (label width 10, value width 6) on a 60-column screen."""

    CSS = "Slider { padding: 0; }"

    def __init__(self, value: float = 0.0, *, min: float = 0.0, max: float = 10.0, step: float = 0.1) -> None:  # noqa: A002
        super().__init__()
        self.slider_args = dict(value=value, min=min, max=max, step=step)
        self.changes: list[float] = []

    def compose(self) -> ComposeResult:
        yield Slider(**self.slider_args, label="weight", label_width=10, value_width=6, id="s")

    @on(Slider.Changed)
    def record(self, event: Slider.Changed) -> None:
        assert event.control is event.slider
        self.changes.append(event.value)


def track(slider: Slider) -> tuple[int, int]:
    """First column and width of the track, in the slider's content coordinates."""
    return slider._track_start, slider._track_width()


def line(slider: Slider) -> str:
    strips = slider.render_lines(Region(0, 0, slider.size.width, 1))
    return strips[0].text


async def test_arrow_keys_step_and_thirty_tenths_make_exactly_three() -> None:
    app = SliderApp(0.0, min=0.0, max=10.0, step=0.1)
    async with app.run_test(size=(WIDTH, 5)) as pilot:
        slider = app.query_one(Slider)
        slider.focus()
        await pilot.press(*["right"] * 30)
        await pilot.pause()
        assert slider.value == 3.0  # exact: no float drift
        assert app.changes[-1] == 3.0
        assert len(app.changes) == 30
        await pilot.press("left")
        await pilot.pause()
        assert slider.value == 2.9


async def test_big_steps_home_end() -> None:
    app = SliderApp(1.0, min=0.0, max=10.0, step=0.1)
    async with app.run_test(size=(WIDTH, 5)) as pilot:
        slider = app.query_one(Slider)
        slider.focus()
        await pilot.press("shift+right")
        await pilot.pause()
        assert slider.value == 2.0
        await pilot.press("pageup", "pageup")
        await pilot.pause()
        assert slider.value == 4.0
        await pilot.press("pagedown", "shift+left")
        await pilot.pause()
        assert slider.value == 2.0
        await pilot.press("end")
        await pilot.pause()
        assert slider.value == 10.0
        await pilot.press("home")
        await pilot.pause()
        assert slider.value == 0.0


async def test_clamped_at_both_ends_and_no_message_on_no_op() -> None:
    app = SliderApp(0.0, min=0.0, max=1.0, step=0.5)
    async with app.run_test(size=(WIDTH, 5)) as pilot:
        slider = app.query_one(Slider)
        slider.focus()
        await pilot.press("left", "home")  # already at the minimum
        await pilot.pause()
        assert slider.value == 0.0
        assert app.changes == []
        await pilot.press("right", "right", "right", "end")
        await pilot.pause()
        assert slider.value == 1.0
        assert app.changes == [0.5, 1.0]  # exactly one message per real change
        slider.value = 1.0  # no-op from code
        slider.value = 1.1  # snaps back to 1.0: still a no-op
        await pilot.pause()
        assert app.changes == [0.5, 1.0]


async def test_programmatic_values_are_clamped_and_snapped() -> None:
    app = SliderApp(0.0, min=0.0, max=2.0, step=0.25)
    async with app.run_test(size=(WIDTH, 5)) as pilot:
        slider = app.query_one(Slider)
        slider.value = 0.6
        assert slider.value == 0.5
        slider.value = 0.63
        assert slider.value == 0.75
        slider.value = 99
        assert slider.value == 2.0
        slider.value = -3
        assert slider.value == 0.0
        await pilot.pause()
        assert app.changes == [0.5, 0.75, 2.0, 0.0]


def test_initial_value_snapped_and_invalid_ranges_rejected() -> None:
    assert Slider(0.333, min=0.0, max=1.0, step=0.1).value == 0.3
    assert Slider(5.0, min=0.0, max=1.0, step=0.1).value == 1.0
    # 0.3 / 0.1 is 2.9999999999999996 in floats: the top of the range must still be reachable.
    assert Slider(0.3, min=0.0, max=0.3, step=0.1).value == 0.3
    # A range that is not a whole number of steps tops out at the last grid point.
    assert Slider(1.0, min=0.0, max=1.0, step=0.3).value == 0.9
    with pytest.raises(ValueError):
        Slider(0.0, min=0.0, max=1.0, step=0.0)
    with pytest.raises(ValueError):
        Slider(0.0, min=1.0, max=1.0, step=0.1)


async def test_renders_label_track_and_value_at_fixed_columns() -> None:
    app = SliderApp(5.0, min=0.0, max=10.0, step=0.5)
    async with app.run_test(size=(WIDTH, 5)) as pilot:
        await pilot.pause()
        slider = app.query_one(Slider)
        text = line(slider)
        assert len(text) == WIDTH
        assert text.startswith("weight      ")  # label padded to 10 + 2 gap
        assert text.rstrip().endswith("5.0")
        start, width = track(slider)
        bar = text[start : start + width]
        assert bar.count("●") == 1
        assert set(bar) == {"━", "●", "─"}
        assert bar.index("●") == round(0.5 * (width - 1))
        assert "━" not in bar[bar.index("●") :]


async def test_click_on_track_sets_value_at_cell() -> None:
    app = SliderApp(0.0, min=0.0, max=10.0, step=0.1)
    async with app.run_test(size=(WIDTH, 5)) as pilot:
        slider = app.query_one(Slider)
        start, width = track(slider)
        await pilot.click(slider, offset=(start + width - 1, 0))
        await pilot.pause()
        assert slider.value == 10.0
        assert slider.has_focus
        await pilot.click(slider, offset=(start, 0))
        await pilot.pause()
        assert slider.value == 0.0
        # The middle cell of the track maps to the middle of the range (±1 cell of rounding).
        middle = (width - 1) // 2
        await pilot.click(slider, offset=(start + middle, 0))
        await pilot.pause()
        assert slider.value == round(middle / (width - 1) * 100) / 10
        # A click on the label does not move the value.
        before = slider.value
        await pilot.click(slider, offset=(1, 0))
        await pilot.pause()
        assert slider.value == before


async def test_drag_updates_continuously_and_clamps_outside() -> None:
    app = SliderApp(0.0, min=0.0, max=10.0, step=0.1)
    async with app.run_test(size=(WIDTH, 5)) as pilot:
        slider = app.query_one(Slider)
        start, width = track(slider)
        await pilot.mouse_down(slider, offset=(start, 0))
        assert app.mouse_captured is slider
        seen = []
        for cell in (5, 10, 20):
            await pilot.hover(slider, offset=(start + cell, 0))
            seen.append(slider.value)
        assert seen == sorted(seen) and len(set(seen)) == 3
        assert seen[-1] == round(20 / (width - 1) * 100) / 10
        # Dragging past the right end (even below the widget) pins the maximum.
        await pilot.hover(slider, offset=(WIDTH - 1, 2))
        assert slider.value == 10.0
        await pilot.mouse_up(slider, offset=(start + width - 1, 0))
        await pilot.pause()
        assert app.mouse_captured is None
        # After release, moving the mouse changes nothing.
        await pilot.hover(slider, offset=(start, 0))
        assert slider.value == 10.0


async def test_mouse_scroll_steps() -> None:
    app = SliderApp(1.0, min=0.0, max=10.0, step=0.1)
    async with app.run_test(size=(WIDTH, 5)) as pilot:
        slider = app.query_one(Slider)

        def scroll(kind: type[events.MouseEvent]) -> None:
            slider.post_message(kind(slider, 20, 0, 0, 0, 0, False, False, False))

        scroll(events.MouseScrollUp)
        scroll(events.MouseScrollUp)
        await pilot.pause()
        assert slider.value == 1.2
        scroll(events.MouseScrollDown)
        await pilot.pause()
        assert slider.value == 1.1
        assert app.changes == [1.1, 1.2, 1.1]


async def test_focus_changes_thumb_style() -> None:
    app = SliderApp(1.0)
    async with app.run_test(size=(WIDTH, 5)) as pilot:
        slider = app.query_one(Slider)
        slider.blur()
        await pilot.pause()
        unfocused = slider.get_component_rich_style("slider--thumb")
        slider.focus()
        await pilot.pause()
        assert slider.has_focus
        assert slider.get_component_rich_style("slider--thumb") != unfocused
