"""The status line's note: what the query, its metrics, the ranking stage and the index say."""

from __future__ import annotations

from dataclasses import dataclass

#: The one name of what ``p`` turns on and off, everywhere the UI says it (footer, status
#: line, help): the README's and the CLI's "ranking stage" (signals, priors, diversity).
STAGE = "ranking stage"
#: The status line's word for it while it is off.
STAGE_OFF = f"{STAGE} off"


@dataclass
class StatusNotes:
    """The parts of the note under the arms, each set by the part of the app it is about."""

    #: Why the query is not running yet, cannot run, or is running again.
    query: str = ""
    #: MRR@10 / nDCG@10 of the fused list against the query's judgments.
    metrics: str = ""
    #: What indexing is doing or last did.
    index: str = ""

    def line(self, *, priors: bool) -> str:
        """The note, its parts joined in a fixed order; :data:`STAGE_OFF` when the ranking
        stage is off (``priors``: it is on)."""
        parts = (self.query, self.metrics, "" if priors else STAGE_OFF, self.index)
        return " · ".join(t for t in parts if t)


def one_line(error: BaseException | None) -> str:
    """A worker's error as one line: its type and the first line of its message."""
    if error is None:
        return "unknown error"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
