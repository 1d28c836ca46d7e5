"""A walk through the code from a question's hits, with no user interface in it.

The terminal UI's walk is a stack of :class:`Step`: the question (or a "more like this" list)
at the bottom, then each unit gone to, pushed on go and popped on back, the breadcrumbs drawn
from the stack (:meth:`Trail.crumbs`). A unit opened from a hit was reached by the question (or
the like-list); one gone to from a unit's neighbourhood is a caller, callee or test of it.
What is selected along the way is kept with how it was reached (:meth:`Trail.toggle`), and a
handoff records that per span (:func:`reached_record`; the optional ``reached`` field of
``core/schemas/handoff.schema.json``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .base.types import ConsolidatedHit, make_docid
from .graph.related import Neighbourhood, Place
from .query.labels import LOW

#: A neighbourhood's groups, in the order they are shown, with the word for one of them
#: (what a handoff's ``reached.by`` says).
GROUPS: tuple[tuple[str, str], ...] = (("callers", "caller"), ("callees", "callee"), ("tests", "test"))
ONE = dict(GROUPS)

#: (path, start_line, end_line): what a selection along the walk is kept by.
Span = tuple[str, int, int]


def span_record(place: Place) -> dict:
    """A unit as a handoff's ``reached.of`` names it."""
    return {"path": place.path, "start_line": place.start_line, "end_line": place.end_line, "name": place.name}


def reached_record(by: str, of: Place | None = None) -> dict:
    """How a span was reached: ``{"by": "question"}``, ``{"by": "caller", "of": {...}}`` …"""
    return {"by": by} if of is None else {"by": by, "of": span_record(of)}


def qualified_name(place: Place) -> str:
    """``Retry.get_backoff_time`` from the breadcrumb ``shop/retry.py > Retry > get_backoff_time``
    (the name alone when the breadcrumb has no more; the path:line for a window). A hit's
    packed definitions stay a list: ``RouterGroup.Group, BasePath``."""
    crumbs = [c for c in place.context.split(" > ")[1:] if c]
    if crumbs:
        return ".".join(c if ", " in c else c.split()[-1] for c in crumbs)
    return place.name or f"{place.path}:{place.start_line}"


def place_hit(place: Place, rank: int = 1) -> ConsolidatedHit:
    """A unit reached along the walk as a hit of a handoff: its lines and breadcrumb; no arm
    ranked it, so its score is 0, ``rank`` its place in its group (``reached`` says how)."""
    start, end = place.start_line, place.end_line
    return ConsolidatedHit(
        place.path,
        start,
        end,
        make_docid(place.path, start, end),
        place.context or place.path,
        0.0,
        max(1, rank),
        [],
        0,
        LOW,
        fused_score=0.0,
    )


def describe_place(place: Place) -> str:
    """``line 6: get_backoff_time, imported, 3 definitions`` (what links a place to its unit)."""
    if not place.line:
        return ""
    out = f"line {place.line}: {place.via}"
    if place.resolution:
        out += f", {place.resolution}"
    out += f", {place.candidates} definition{'s' if place.candidates != 1 else ''}"
    return out


@dataclass
class Step:
    """One place on the trail.

    ``kind``: ``"question"`` (the user's question's list), ``"like"`` (a more-like-this list
    of ``place``) or ``"unit"`` (``place`` and its neighbourhood, ``found`` once loaded).
    ``reached``: how the unit was reached (:func:`reached_record`); ``query``: the question a
    list step asked; ``row``: where the cursor was when the step was left.
    """

    kind: str
    label: str
    place: Place | None = None
    reached: dict = field(default_factory=lambda: {"by": "question"})
    query: str = ""
    found: Neighbourhood | None = None
    row: int = 0

    @property
    def is_list(self) -> bool:
        return self.kind in ("question", "like")

    def list_reached(self) -> dict:
        """How a hit of this list step was reached: by the question, or like ``place``."""
        return reached_record("like", self.place) if self.kind == "like" else reached_record("question")


def question_step(text: str = "") -> Step:
    return Step("question", "question", query=text)


def like_step(unit: Place, question: str) -> Step:
    return Step("like", f"like {unit.path}:{unit.name or unit.start_line}", place=unit, query=question)


class Trail:
    """The stack of steps, and what was selected along it."""

    def __init__(self, question: str = "") -> None:
        self.steps: list[Step] = [question_step(question)]
        #: What was selected of the units met along the walk, by span: (the unit as a hit,
        #: how it was reached), in the order selected.
        self.selected: dict[Span, tuple[ConsolidatedHit, dict]] = {}
        #: Hits selected in a list the walk has since left (the table forgot them), kept for
        #: the export with how they were reached.
        self.carried: dict[Span, tuple[ConsolidatedHit, dict]] = {}

    @property
    def top(self) -> Step:
        return self.steps[-1]

    @property
    def depth(self) -> int:
        return len(self.steps)

    def push(self, step: Step) -> None:
        self.steps.append(step)

    def pop(self) -> Step | None:
        """Go back one step (the first is never popped); the step left, None at the first."""
        return self.steps.pop() if len(self.steps) > 1 else None

    def reset(self, question: str) -> None:
        """A new question: the trail starts again (what was selected along it goes too)."""
        self.steps = [question_step(question)]
        self.selected.clear()
        self.carried.clear()

    def crumbs(self) -> list[str]:
        """``["question", "Retry.get_backoff_time", "callers: fetch"]``."""
        return [step.label for step in self.steps]

    def list_step(self) -> Step:
        """The last list step (whose hits the results table shows)."""
        return next(step for step in reversed(self.steps) if step.is_list)

    # -- the selection ---------------------------------------------------------------------

    def toggle(self, place: Place, reached: dict, rank: int = 1) -> bool:
        """Select ``place`` (reached as ``reached``) or unselect it; whether it is selected now."""
        span = (place.path, place.start_line, place.end_line)
        if span in self.selected:
            del self.selected[span]
            return False
        self.selected[span] = (place_hit(place, rank), dict(reached))
        return True

    def is_selected(self, place: Place) -> bool:
        return (place.path, place.start_line, place.end_line) in self.selected

    def carry(self, hits: Iterable[ConsolidatedHit], reached: dict) -> None:
        """Keep ``hits`` (a list's selection about to be replaced) for the export."""
        for hit in hits:
            self.carried.setdefault((hit.path, hit.start_line, hit.end_line), (hit, dict(reached)))

    def export(self, shown: Iterable[ConsolidatedHit], reached: dict) -> tuple[list[ConsolidatedHit], dict]:
        """What an export takes: the hits ``shown`` selected in the current list (reached as
        ``reached``), then those carried, then the units selected along the walk, one per span;
        and each one's ``reached`` by docid."""
        hits: list[ConsolidatedHit] = []
        how: dict[str, dict] = {}
        items = [(hit, reached) for hit in shown]
        items += list(self.carried.values()) + list(self.selected.values())
        for hit, by in items:
            if hit.docid not in how:
                hits.append(hit)
                how[hit.docid] = dict(by)
        return hits, how

    @property
    def count(self) -> int:
        """How many spans are selected along the walk (not counting the current list's)."""
        return len(self.carried) + len(self.selected)
