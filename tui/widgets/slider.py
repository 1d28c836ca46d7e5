"""A horizontal float slider: ``label  ━━━━━━●──────  1.5``.

Textual ships no slider, and the third-party one is integer-only, so this is a small one
written from scratch. The value lives on a grid ``min + k * step``; every change goes
through that grid (an integer ``k``) and is rounded to the step's decimals, so repeated
nudges never accumulate float drift (thirty steps of 0.1 from 0.0 land on exactly 3.0).
"""

from __future__ import annotations

import builtins
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

#: Steps taken by shift+arrow and page up/down.
BIG_STEP = 10
#: Track glyphs: filled part, thumb, empty part.
FILL, THUMB, EMPTY = "━", "●", "─"
#: Columns between the label, the track and the value text.
GAP = 2


def _decimals(number: float) -> int:
    """How many decimals ``number`` needs when written the way a person typed it (0.05 -> 2)."""
    exponent = Decimal(repr(number)).normalize().as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


class Slider(Widget, can_focus=True):
    """A focusable slider over the floats ``min, min + step, …`` up to ``max``.

    If ``max - min`` is not a whole number of steps the top of the range is the last grid
    point below ``max``.

    Parameters
    ----------
    value:
        Initial value; clamped and snapped like any later value.
    min, max:
        Bounds of the range (``min < max``).
    step:
        Grid spacing (``> 0``); also the keyboard and scroll increment.
    label:
        Text on the left, padded or cut to ``label_width`` so the tracks of a column of
        sliders line up.
    label_width:
        Columns reserved for the label (0 hides it).
    value_width:
        Columns reserved for the value text on the right; widened automatically if the
        formatted bounds need more.
    """

    DEFAULT_CSS = """
    Slider {
        width: 1fr;
        height: 1;
        padding: 0 1;
    }
    Slider:focus {
        background: $boost;
    }
    Slider > .slider--label {
        color: $text-muted;
    }
    Slider:focus > .slider--label {
        color: $text;
        text-style: bold;
    }
    Slider > .slider--fill {
        color: $primary;
    }
    Slider > .slider--empty {
        color: $panel-lighten-2;
    }
    Slider > .slider--thumb {
        color: $foreground;
    }
    Slider:focus > .slider--thumb {
        color: $accent;
        text-style: bold;
    }
    Slider > .slider--value {
        color: $text;
    }
    Slider:disabled {
        opacity: 0.6;
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "slider--label",
        "slider--fill",
        "slider--thumb",
        "slider--empty",
        "slider--value",
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right", "nudge(1)", "Increase", show=False),
        Binding("left", "nudge(-1)", "Decrease", show=False),
        Binding("shift+right,pageup", f"nudge({BIG_STEP})", "Increase ×10", show=False),
        Binding("shift+left,pagedown", f"nudge(-{BIG_STEP})", "Decrease ×10", show=False),
        Binding("home", "to_min", "Minimum", show=False),
        Binding("end", "to_max", "Maximum", show=False),
    ]

    value: reactive[float] = reactive(0.0, init=False)
    """The current value, always on the grid ``min + k * step`` inside ``[min, max]``.

    Setting it (from code or from the user) posts :class:`Slider.Changed` when the snapped
    value differs from the old one. A parent that pushes a value down and does not want the
    echo can wrap the assignment in ``with slider.prevent(Slider.Changed):``.
    """

    @dataclass
    class Changed(Message):
        """Posted when the value of the slider changes."""

        slider: Slider
        """The slider that changed."""
        value: float
        """The new (snapped) value."""

        @property
        def control(self) -> Slider:
            """The slider that changed (alias of ``slider``, for ``@on(..., selector)``)."""
            return self.slider

    def __init__(
        self,
        value: float,
        *,
        min: float,  # noqa: A002 - the natural names for a range
        max: float,  # noqa: A002
        step: float,
        label: str = "",
        label_width: int = 12,
        value_width: int = 6,
        name: str | None = None,
        id: str | None = None,  # noqa: A002
        classes: str | None = None,
        disabled: bool = False,
        tooltip: str | None = None,
    ) -> None:
        if not step > 0:
            raise ValueError(f"step must be positive, got {step!r}")
        if not max > min:
            raise ValueError(f"max ({max!r}) must be greater than min ({min!r})")
        super().__init__(name=name, id=id, classes=classes, disabled=disabled)
        self.min = float(min)
        self.max = float(max)
        self.step = float(step)
        self.label = label
        self.label_width = label_width
        # ``min``/``max`` are shadowed by the parameters here, hence ``builtins``.
        self._decimals = builtins.max(_decimals(self.step), _decimals(self.min))
        # Tolerance so a range of e.g. 0.3 / 0.1 = 2.9999999999999996 still counts 3 steps.
        self._steps = math.floor((self.max - self.min) / self.step + 1e-9)
        self.value_width = builtins.max(
            value_width, len(self.format_value(self.min)), len(self.format_value(self._at(self._steps)))
        )
        if tooltip is not None:
            self.tooltip = tooltip
        # No watcher (and so no Changed message) for the initial value.
        self.set_reactive(Slider.value, self.validate_value(value))

    # -- value grid -----------------------------------------------------------------------

    @property
    def steps(self) -> int:
        """Number of steps between the lowest and the highest value."""
        return self._steps

    @property
    def index(self) -> int:
        """The current value as a step count from ``min`` (0 … ``steps``)."""
        return self._index_of(self.value)

    def _index_of(self, value: float) -> int:
        if math.isnan(value):
            return 0
        k = round((value - self.min) / self.step)
        return min(self._steps, max(0, k))

    def _at(self, index: int) -> float:
        """The value of grid point ``index``, rounded so it prints and compares exactly."""
        index = min(self._steps, max(0, index))
        return round(self.min + index * self.step, self._decimals)

    def validate_value(self, value: float) -> float:
        """Clamp to the range and snap to the nearest grid point."""
        return self._at(self._index_of(float(value)))

    def watch_value(self, old_value: float, new_value: float) -> None:
        # Reactive only calls watchers on a real change, so a no-op set posts nothing.
        self.post_message(self.Changed(self, new_value))

    def format_value(self, value: float) -> str:
        """The value as shown on the right (as many decimals as the step has)."""
        return f"{value:.{self._decimals}f}"

    # -- keyboard -------------------------------------------------------------------------

    def action_nudge(self, steps: int) -> None:
        """Move the value by ``steps`` grid points (negative moves down)."""
        self.value = self._at(self.index + steps)

    def action_to_min(self) -> None:
        """Jump to the lowest value."""
        self.value = self._at(0)

    def action_to_max(self) -> None:
        """Jump to the highest value."""
        self.value = self._at(self._steps)

    # -- geometry -------------------------------------------------------------------------

    @property
    def _track_start(self) -> int:
        return self.label_width + GAP if self.label_width else 0

    def _track_width(self, width: int | None = None) -> int:
        width = self.content_size.width if width is None else width
        return max(1, width - self._track_start - GAP - self.value_width)

    def _thumb_cell(self, track_width: int) -> int:
        if self._steps == 0 or track_width <= 1:
            return 0
        return round(self.index / self._steps * (track_width - 1))

    def _index_at_cell(self, cell: int) -> int:
        track_width = self._track_width()
        if track_width <= 1:
            return 0
        cell = min(track_width - 1, max(0, cell))
        return round(cell / (track_width - 1) * self._steps)

    # -- mouse ----------------------------------------------------------------------------

    def _on_mouse_down(self, event: events.MouseDown) -> None:
        if self.disabled or event.button not in (0, 1):
            return
        offset = event.get_content_offset(self)
        if offset is None:
            return
        cell = offset.x - self._track_start
        if 0 <= cell < self._track_width():
            event.stop()
            event.prevent_default()
            self.focus()
            # Capture so a drag keeps updating even when the pointer leaves the widget.
            self.capture_mouse()
            self.value = self._at(self._index_at_cell(cell))

    def _on_mouse_move(self, event: events.MouseMove) -> None:
        if self.app.mouse_captured is not self:
            return
        event.stop()
        cell = event.get_content_offset_capture(self).x - self._track_start
        self.value = self._at(self._index_at_cell(cell))

    def _on_mouse_up(self, event: events.MouseUp) -> None:
        if self.app.mouse_captured is self:
            event.stop()
            self.release_mouse()

    def _on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        if self.disabled:
            return
        # Stop it so the enclosing scroll container does not scroll at the same time.
        event.stop()
        event.prevent_default()
        self.action_nudge(1)

    def _on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        if self.disabled:
            return
        event.stop()
        event.prevent_default()
        self.action_nudge(-1)

    # -- rendering ------------------------------------------------------------------------

    def render(self) -> Text:
        """Label, track and value text laid out in the content width."""
        width = self.content_size.width
        track_width = self._track_width(width)
        thumb = self._thumb_cell(track_width)
        style = self.get_component_rich_style
        text = Text(no_wrap=True, overflow="crop", end="")
        if self.label_width:
            label = self.label
            if len(label) > self.label_width:
                label = label[: self.label_width - 1] + "…"
            text.append(label.ljust(self.label_width), style("slider--label"))
            text.append(" " * GAP)
        text.append(FILL * thumb, style("slider--fill"))
        text.append(THUMB, style("slider--thumb"))
        text.append(EMPTY * (track_width - thumb - 1), style("slider--empty"))
        text.append(" " * GAP)
        text.append(self.format_value(self.value).rjust(self.value_width), style("slider--value"))
        return text
