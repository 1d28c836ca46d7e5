"""One status line: what every retriever arm is doing for the current query."""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static

#: Theme variables per state, so the line follows the app's theme.
STATE_STYLES: dict[str, str] = {
    "pending": "$text-muted",
    "running": "$text-warning",
    "done": "$text-success",
    "skipped": "$text-muted",
    "failed": "$text-error",
}


@dataclass(slots=True)
class ArmState:
    """The last reported state of one arm (``state`` is a key of :data:`STATE_STYLES`)."""

    state: str = "pending"
    detail: str = ""


def format_ms(ms: float) -> str:
    """Milliseconds for a glance: ``0.4 ms``, ``12 ms``, ``1.3 s``."""
    if ms < 10:
        return f"{ms:.1f} ms"
    if ms < 1000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.1f} s"


class ArmStatus(Static):
    """``bm25: 12 ms · 30 hits   dense: running…   symbols: skipped (no index)   │ note``.

    Arms keep the order given to :meth:`reset`; an arm first reported by a ``set_*`` call is
    appended. The note slot (index progress, metrics …) is set with :meth:`set_note`.
    Layout (one row, no wrapping) is set in ``tui/app.tcss``.
    """

    def __init__(
        self,
        arms: list[str] | None = None,
        *,
        name: str | None = None,
        id: str | None = None,  # noqa: A002
        classes: str | None = None,
    ) -> None:
        super().__init__("", name=name, id=id, classes=classes, markup=False)
        self._arms: dict[str, ArmState] = {arm: ArmState() for arm in arms or []}
        self._note = ""
        self._redraw()

    # -- public API -----------------------------------------------------------------------

    @property
    def states(self) -> dict[str, ArmState]:
        """A copy of the current state of every arm, in display order."""
        return {arm: ArmState(s.state, s.detail) for arm, s in self._arms.items()}

    @property
    def note(self) -> str:
        """The text of the note slot."""
        return self._note

    def reset(self, arms: list[str]) -> None:
        """Start over with ``arms`` (in this order), all pending; the note is kept."""
        self._arms = {arm: ArmState() for arm in arms}
        self._redraw()

    def set_running(self, arm: str) -> None:
        """``arm`` has started on the query."""
        self._set(arm, "running", "running…")

    def set_done(self, arm: str, ms: float | None, hits: int) -> None:
        """``arm`` answered in ``ms`` milliseconds (``None``: time not shown) with ``hits`` hits."""
        count = f"{hits} {'hit' if hits == 1 else 'hits'}"
        self._set(arm, "done", count if ms is None else f"{format_ms(ms)} · {count}")

    def set_indexing(self, arm: str, done: int | None = None, total: int | None = None) -> None:
        """``arm`` waits for its index, built in the background (``done`` of ``total`` texts)."""
        self._set(arm, "running", "indexing…" if total is None else f"indexing {done}/{total}")

    def set_skipped(self, arm: str, reason: str) -> None:
        """``arm`` did not run (disabled, weight 0, no index …)."""
        self._set(arm, "skipped", f"skipped ({reason})" if reason else "skipped")

    def set_failed(self, arm: str, reason: str) -> None:
        """``arm`` raised; ``reason`` is a short message."""
        self._set(arm, "failed", f"failed ({reason})" if reason else "failed")

    def set_note(self, text: str) -> None:
        """Show ``text`` after the arms (empty hides the slot)."""
        self._note = text
        self._redraw()

    # -- internals ------------------------------------------------------------------------

    def _set(self, arm: str, state: str, detail: str) -> None:
        self._arms[arm] = ArmState(state, detail)
        self._redraw()

    def _redraw(self) -> None:
        parts: list[str | Content | tuple[str, str]] = []
        for arm, state in self._arms.items():
            if parts:
                parts.append("   ")
            parts.append((f"{arm}:", "bold"))
            # A pending arm with nothing to say (no query yet) shows a dash, not a gap.
            parts.append((f" {state.detail or '–'}", STATE_STYLES[state.state]))
        if self._note:
            if parts:
                parts.append(("   │ ", "$text-muted"))
            parts.append(self._note)
        self.update(Content.assemble(*parts))
