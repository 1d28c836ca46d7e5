"""The tuning panel: one weight slider per arm and the RRF constant k.

The panel only reports: every change posts :class:`TuningPanel.Changed` with all the
weights and k in force, and the app re-fuses the cached rankings with them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static

from ranklens.tui.widgets.slider import Slider

WEIGHT_MIN, WEIGHT_MAX, WEIGHT_STEP, WEIGHT_DEFAULT = 0.0, 3.0, 0.1, 1.0
K_MIN, K_MAX, K_STEP, K_DEFAULT = 1, 200, 1, 60


def slider_id(arm: str) -> str:
    """A CSS-safe id for an arm's slider (``lexical+ctx`` -> ``weight-lexical-ctx``)."""
    return "weight-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in arm)


class TuningPanel(VerticalScroll):
    """Sliders for the fusion: ``w`` per arm (0..3, step 0.1) and ``k`` (1..200)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "Previous", show=False),
        Binding("down", "move(1)", "Next", show=False),
        Binding("r", "reset", "Reset"),
    ]

    @dataclass
    class Changed(Message):
        """A weight or k changed; carries everything in force."""

        panel: TuningPanel
        weights: dict[str, float]
        k: float

        @property
        def control(self) -> TuningPanel:
            return self.panel

    def __init__(
        self,
        arms: Sequence[str],
        *,
        weights: Mapping[str, float] | None = None,
        k: float = K_DEFAULT,
        name: str | None = None,
        id: str | None = None,  # noqa: A002
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.arms = list(arms)
        self._initial = {arm: float((weights or {}).get(arm, WEIGHT_DEFAULT)) for arm in self.arms}
        self._initial_k = float(k)

    def compose(self) -> ComposeResult:
        yield Static("Fusion weights", classes="tuning-title")
        label_width = max(8, *(len(a) for a in self.arms))
        for arm in self.arms:
            yield Slider(
                self._initial[arm],
                min=WEIGHT_MIN,
                max=WEIGHT_MAX,
                step=WEIGHT_STEP,
                label=arm,
                label_width=label_width,
                value_width=4,
                id=slider_id(arm),
            )
        yield Static("RRF constant", classes="tuning-title")
        yield Slider(
            self._initial_k,
            min=K_MIN,
            max=K_MAX,
            step=K_STEP,
            label="k",
            label_width=label_width,
            value_width=4,
            id="rrf-k",
        )
        yield Static(
            "score = Σ w_i / (k + rank_i)\n←/→ change · shift ×10 · ↑/↓ next\nr reset · esc close",
            id="tuning-help",
            markup=False,
        )

    # -- public API -----------------------------------------------------------------------

    @property
    def weights(self) -> dict[str, float]:
        return {arm: self.slider(arm).value for arm in self.arms}

    @property
    def k(self) -> float:
        return self.query_one("#rrf-k", Slider).value

    def slider(self, arm: str) -> Slider:
        """The weight slider of ``arm`` (``"k"`` for the k slider)."""
        if arm == "k":
            return self.query_one("#rrf-k", Slider)
        return self.query_one(f"#{slider_id(arm)}", Slider)

    def sliders(self) -> list[Slider]:
        return list(self.query(Slider))

    def focus_first(self) -> None:
        sliders = self.sliders()
        if sliders and not any(s.has_focus for s in sliders):
            sliders[0].focus()

    # -- actions and events ---------------------------------------------------------------

    def action_move(self, delta: int) -> None:
        sliders = self.sliders()
        focused = next((i for i, s in enumerate(sliders) if s.has_focus), None)
        index = 0 if focused is None else (focused + delta) % len(sliders)
        sliders[index].focus()
        sliders[index].scroll_visible(animate=False)

    def action_reset(self) -> None:
        """Back to the weights and k the panel opened with: the root's tuned config, else the
        shipped defaults (one Changed, not one per slider)."""
        for arm in self.arms:
            slider = self.slider(arm)
            with slider.prevent(Slider.Changed):
                slider.value = self._initial[arm]
        k_slider = self.slider("k")
        with k_slider.prevent(Slider.Changed):
            k_slider.value = self._initial_k
        self.post_message(self.Changed(self, self.weights, self.k))

    @on(Slider.Changed)
    def _slider_changed(self, event: Slider.Changed) -> None:
        event.stop()
        self.post_message(self.Changed(self, self.weights, self.k))
