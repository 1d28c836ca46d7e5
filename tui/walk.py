"""The walk: from a hit to its callers, callees and tests, and on; and more like this.

``r`` on a hit (or on the unit the preview shows) opens its neighbourhood in place of the
results (:class:`~tui.widgets.neighbourhood.NeighbourhoodList`; a hit's: of every definition it
packs, merged, :func:`core.graph.span.related_span`): the unit, then its callers, callees and
tests with their counts; the preview follows the cursor. Enter on one goes to it:
the preview shows it and the list becomes its own neighbourhood. ``backspace`` (or ``b``) goes
back one step; the trail shows as breadcrumbs above (:class:`~tui.widgets.breadcrumbs.
Breadcrumbs`). ``m`` asks for more like this: the unit's names and code as the question
(:func:`core.navigate.like_request`), a normal result list titled ``like PATH:NAME``, without
the unit itself. Space selects along the way; the export records how each span was reached
(:mod:`core.walk`).

The trail is a stack (:class:`core.walk.Trail`): push on go, pop on back, the screen drawn from
its top step (:meth:`WalkActions._show_step`). A neighbourhood is read in a thread worker (it
reads files: 10-300 ms the first time) that ends by posting :class:`NeighbourhoodLoaded`; a
newer request makes an older answer stale (``token``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from rich.text import Text
from textual.message import Message

from ranklens.core.base.errors import RequestError
from ranklens.core.base.types import ConsolidatedHit
from ranklens.core.graph.related import Place
from ranklens.core.navigate import like_request, neighbourhood
from ranklens.core.service import check_request
from ranklens.core.walk import ONE, Step, Trail, describe_place, like_step, place_hit, qualified_name, reached_record
from ranklens.tui.messages import while_open
from ranklens.tui.notes import one_line
from ranklens.tui.widgets.breadcrumbs import Breadcrumbs
from ranklens.tui.widgets.neighbourhood import NeighbourhoodList, Row

#: Hits a more-like-this list asks for (the table's rows).
LIKE_TOP_K = 50
#: Pause before the preview highlights the place under the walk's cursor (as the table's).
WALK_PREVIEW_DELAY = 0.04


@dataclass
class NeighbourhoodLoaded(Message):
    """A unit's neighbourhood was read (``step``, to push), or could not be (``error``)."""

    token: int
    step: Step | None
    error: str | None = None


@dataclass
class LikeLoaded(Message):
    """The question looking for units like ``unit`` was made, or could not be (``error``)."""

    token: int
    unit: Place | None
    question: str = ""
    error: str | None = None


class WalkActions:
    """Mixin of :class:`~tui.app.RanklensApp`: the walk and more like this.

    It relies on what the app provides: ``session``, ``engine``, the ``table``, ``preview``
    and ``query_input`` widgets, ``read_file``, ``open_in_editor``, ``_start_query``,
    ``_set_query_note``, ``_update_titles``, ``_update_preview`` and the preview's cache
    (``_preview_key``, ``_preview_code``, ``_preview_timer``). Its handlers are found by name
    (``on_neighbourhood_loaded`` …), as :class:`~tui.indexing.IndexOrchestration`'s.
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.trail = Trail()
        self._walk_token = 0
        self._walk_timer = None

    # -- widgets and state ------------------------------------------------------------------

    @property
    def walk_list(self) -> NeighbourhoodList:
        return self.query_one("#walk", NeighbourhoodList)

    @property
    def breadcrumbs(self) -> Breadcrumbs:
        return self.query_one("#trail", Breadcrumbs)

    @property
    def walking(self) -> bool:
        """A unit's neighbourhood is shown (in place of the results)."""
        return self.trail.top.kind == "unit"

    def walk_results_label(self) -> str:
        """The results' title before its counts: ``results``, or ``results · like PATH:NAME``."""
        step = self.trail.list_step()
        return f"results · {step.label}" if step.kind == "like" else "results"

    def walk_allowed(self, action: str) -> bool:
        """Whether ``r``, ``m`` or ``backspace`` do something now (the footer shows them then)."""
        if action == "walk_back":
            return self.trail.depth > 1
        return self.walking or self.table.current_hit is not None

    # -- keys -------------------------------------------------------------------------------

    def action_related(self) -> None:
        """``r``: open the neighbourhood of the hit (or of the place the walk's cursor is on)."""
        if self.walking:
            row = self.walk_list.current
            if row is None:
                return
            if not row.group:
                self.notify("Its neighbourhood is listed: enter goes to a caller, callee or test.", title="Related")
                return
            self._go(row)
            return
        hit = self.table.current_hit
        if hit is None:
            self.notify("Nothing to follow yet: run a query first.", severity="warning")
            return
        # The hit's lines first: every definition it packs, their neighbourhoods merged.
        wheres = [(hit.start_line, hit.end_line), *places_of(hit)[1:]]
        self._load(hit.path, wheres, self.trail.top.list_reached(), None)

    def action_more_like(self) -> None:
        """``m``: a result list of the units like the one under the cursor."""
        if self.walking:
            row = self.walk_list.current
            if row is None:
                return
            path, wheres = row.place.path, [row.place.start_line]
        else:
            hit = self.table.current_hit
            if hit is None:
                self.notify("Nothing to compare with yet: run a query first.", severity="warning")
                return
            path, wheres = hit.path, places_of(hit)
        self._walk_token += 1
        self.run_worker(
            partial(self._like_job, self._walk_token, path, wheres),
            name="like",
            group="walk",
            exclusive=True,
            thread=True,
            exit_on_error=False,
        )

    def action_walk_back(self) -> None:
        """``backspace`` / ``b``: one step back along the trail."""
        top = self.trail.top
        if self.trail.depth <= 1:
            return
        self._walk_token += 1  # a neighbourhood still loading would land on the wrong step
        if top.kind == "like":
            self._carry_table_selection()
        self.trail.pop()
        self._show_step()

    def walk_new_question(self, text: str) -> None:
        """A question typed (or cleared): the trail starts again from it."""
        if self.trail.depth == 1 and self.trail.top.query == text and self.session.like is None:
            return
        self._walk_token += 1
        self.session.like = None
        self.trail.reset(text)
        self._set_walking(False)
        self._draw_trail()

    def export_choice(self) -> tuple[list[ConsolidatedHit], dict[str, dict], bool]:
        """What ``e`` exports: the hits, how each was reached (by docid), and whether it is a
        selection (the table's and the walk's) rather than every hit shown."""
        table = self.table
        reached = self.trail.list_step().list_reached()
        chosen = table.selected_hits
        if not chosen and not self.trail.count:
            hits = list(table.hits)
            return hits, {hit.docid: dict(reached) for hit in hits}, False
        hits, how = self.trail.export(chosen, reached)
        return hits, how, True

    def export_question(self) -> str:
        """The question an export records: the user's, also along the walk."""
        return self.trail.steps[0].query or self.session.query_text

    # -- loading ------------------------------------------------------------------------------

    def _go(self, row: Row) -> None:
        """Go to a caller, callee or test of the current unit."""
        top = self.trail.top
        label = f"{row.group}: {row.place.name or row.place.start_line}"
        self._load(row.place.path, [row.place.start_line], reached_record(ONE[row.group], top.place), label)

    def _load(self, path: str, lines: list, reached: dict, label: str | None) -> None:
        self._walk_token += 1
        self.run_worker(
            partial(self._neighbourhood_job, self._walk_token, path, lines, reached, label),
            name="related",
            group="walk",
            exclusive=True,
            thread=True,
            exit_on_error=False,
        )

    def _neighbourhood_job(self, token: int, path: str, lines: list, reached: dict, label: str | None) -> None:
        """Worker body (in a thread): read the neighbourhood of the first of ``lines`` (a line,
        a name the file defines, or a hit's (start, end)) that can be followed, and post it."""
        error = None
        for line in lines:
            try:
                found = neighbourhood(self.engine, path, line)
            except RequestError as exc:
                error = error or str(exc)
                continue
            except Exception as exc:  # an index closing under it, a file gone: say it, stay up
                error = one_line(exc)
                break
            step = Step("unit", label or qualified_name(found.unit), place=found.unit, reached=reached, found=found)
            self.post_message(NeighbourhoodLoaded(token, step))
            return
        self.post_message(NeighbourhoodLoaded(token, None, error or f"nothing to follow at {path}"))

    def _like_job(self, token: int, path: str, wheres: list[int | str]) -> None:
        """Worker body (in a thread): the question looking for units like the one at the first
        of ``wheres`` (a line, or a name the file defines) that can be followed."""
        error = None
        for where in wheres:
            place = f"{path}:{where}"
            try:
                unit, request = like_request(self.engine, place, check_request("", like=place, top_k=LIKE_TOP_K))
            except RequestError as exc:
                error = error or str(exc)
                continue
            except Exception as exc:  # as in _neighbourhood_job
                error = one_line(exc)
                break
            self.post_message(LikeLoaded(token, unit, request.text))
            return
        self.post_message(LikeLoaded(token, None, error=error or f"nothing to compare at {path}"))

    @while_open
    def on_neighbourhood_loaded(self, message: NeighbourhoodLoaded) -> None:
        if message.token != self._walk_token:
            return
        if message.step is None:
            self.notify(f"Cannot follow it: {message.error}", title="Related", severity="warning")
            return
        self._leave_step()
        self.trail.push(message.step)
        self._show_step()

    @while_open
    def on_like_loaded(self, message: LikeLoaded) -> None:
        if message.token != self._walk_token:
            return
        if message.unit is None:
            self.notify(f"Cannot look for more like it: {message.error}", title="More like this", severity="warning")
            return
        self._leave_step()
        self._carry_table_selection()
        self.trail.push(like_step(message.unit, message.question))
        self._show_step()

    # -- drawing --------------------------------------------------------------------------------

    def _leave_step(self) -> None:
        """Remember where the cursor is on the step being left."""
        top = self.trail.top
        top.row = (self.walk_list.highlighted or 0) if top.kind == "unit" else self.table.cursor_row

    def _carry_table_selection(self) -> None:
        """The table's selection is about to be replaced by another list's: keep it for the export."""
        table = self.table
        if table.selected_hits:
            self.trail.carry(table.selected_hits, self.trail.list_step().list_reached())
            table.clear_selection()

    def _set_walking(self, walking: bool) -> None:
        self.query_one("#main").set_class(walking, "-walking")

    def _draw_trail(self) -> None:
        crumbs = self.breadcrumbs
        crumbs.show(self.trail.crumbs(), self.trail.count)
        crumbs.display = self.trail.depth > 1 or self.trail.count > 0
        self.refresh_bindings()

    def _show_step(self) -> None:
        """Draw the screen for the trail's top step: a unit's neighbourhood, or a result list
        (the question's, or a like-list's: asked again when the table holds another)."""
        top = self.trail.top
        self._draw_trail()
        # The preview shows something else now: the table's hit is highlighted again after.
        if self._preview_timer is not None:
            self._preview_timer.stop()
            self._preview_timer = None
        self._preview_key = None
        self._preview_code = None
        if top.kind == "unit":
            self._set_walking(True)
            walk = self.walk_list
            walk.show(top.found, selected=self.trail.is_selected, row=top.row)
            walk.focus()
            row = walk.current
            if row is not None:
                self._preview_place(row, delay=0)
            return
        self._set_walking(False)
        self.table.focus()
        if self.session.query_text != top.query or self.session.like is not top.place:
            self.session.like = top.place
            self._start_query(top.query)
            if top.kind == "like":
                self._set_query_note(top.label)
        else:
            self._update_preview()
        self._update_titles()

    def _preview_place(self, row: Row, delay: float = WALK_PREVIEW_DELAY) -> None:
        if self._walk_timer is not None:
            self._walk_timer.stop()
            self._walk_timer = None
        if delay <= 0:
            self._show_place(row)
        else:
            self._walk_timer = self.set_timer(delay, partial(self._show_place, row))

    def _show_place(self, row: Row) -> None:
        self._walk_timer = None
        if not self.walking:
            return
        place = row.place
        text = self.read_file(place.path)
        if text is None:
            self.preview.clear(f"Cannot read {place.path}.")
            return
        self.preview.show(
            path=place.path,
            text=text,
            first_line=1,
            span=(place.start_line, place.end_line),
            query=place.via or place.name,
            hit=None,
            arms=[],
            trace=self._place_note(row),
        )

    def _place_note(self, row: Row) -> Text:
        """What the preview says under a place's code: how it links to the unit."""
        top = self.trail.top
        unit = top.place
        note = Text()
        if not row.group:
            found = top.found
            counts = found.counts if found is not None else {}
            note.append(f"{qualified_name(row.place)}", style="bold")
            note.append(
                f": {counts.get('callers', 0)} callers, {counts.get('callees', 0)} callees, "
                f"{counts.get('tests', 0)} tests · reached by {describe_reached(top.reached)}"
            )
        else:
            note.append(f"{ONE[row.group]} of {unit.name if unit else '?'}", style="bold")
            note.append(f" · {describe_place(row.place)}")
        keys = "space: select · m: more like it · backspace: back"
        note.append(f"\n{keys}" if not row.group else f"\nenter: go to it (its neighbourhood) · {keys}")
        note.stylize("dim", len(note.plain.split("\n")[0]) + 1)
        return note

    # -- the list's messages ----------------------------------------------------------------------

    def on_neighbourhood_list_moved(self, message: NeighbourhoodList.Moved) -> None:
        self._preview_place(message.row)

    def on_neighbourhood_list_go(self, message: NeighbourhoodList.Go) -> None:
        if message.row.group:
            self._go(message.row)

    def on_neighbourhood_list_toggle(self, message: NeighbourhoodList.Toggle) -> None:
        row, top = message.row, self.trail.top
        reached = top.reached if not row.group else reached_record(ONE[row.group], top.place)
        self.trail.toggle(row.place, reached, row.rank or 1)
        self.walk_list.mark()
        self._draw_trail()

    def on_neighbourhood_list_open(self, message: NeighbourhoodList.Open) -> None:
        self.open_in_editor(place_hit(message.row.place))


def places_of(hit: ConsolidatedHit) -> list[int | str]:
    """Where a hit's unit is, to try in turn: its first line (a definition's), the first name
    its breadcrumb ends with (a span starting with a comment or a decorator), its middle line."""
    wheres: list[int | str] = [hit.start_line]
    crumbs = hit.context.split(" > ")
    if len(crumbs) > 1:
        name = crumbs[-1].split(",")[0].strip().split(" ")[-1]
        if name:
            wheres.append(name)
    if hit.end_line > hit.start_line:
        wheres.append((hit.start_line + hit.end_line) // 2)
    return wheres


def describe_reached(reached: dict) -> str:
    """``the question``, ``caller of fetch`` … (the preview's words for a ``reached`` record)."""
    by = reached.get("by", "question")
    of = reached.get("of")
    if by == "question" or not of:
        return "the question"
    if by == "like":
        return f"more like {of.get('name') or of.get('path')}"
    return f"{by} of {of.get('name') or of.get('path')}"
