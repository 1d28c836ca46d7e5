"""Following the code from a place, the same way for every front end.

``ranklens related`` and ``query --like``, MCP's ``related`` and ``search(like=…)``, and the
terminal UI's walk parse a place here (:func:`parse_place`: ``PATH:LINE``, ``PATH:START-END``
or ``PATH:NAME``),
get the index's :class:`core.graph.edges.Graph` (:func:`graph_of`: a local index's committed
generation, or a Milvus store's rows) and answer with :func:`answer_related` or
:func:`answer_like`, so one place has one neighbourhood and one JSON envelope wherever it
is asked. The work itself is :mod:`core.graph`'s.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import replace

from .base.errors import RequestError
from .engine import Engine
from .graph.edges import Graph, LocalGraph
from .graph.like import like_question, overlaps
from .graph.related import DEFAULT_LIMIT, Neighbourhood, RelatedError, related
from .graph.span import related_span

#: The most places a list of a neighbourhood holds.
MAX_LIMIT = 200


#: What a place may be, in the one-line errors.
PLACE_FORMS = "PATH:LINE, PATH:START-END or PATH:NAME"


def parse_place(text: object) -> tuple[str, int | str | tuple[int, int]]:
    """``"src/retry.py:120"`` -> ``("src/retry.py", 120)``; ``"src/retry.py:40-75"`` (a hit's
    lines) -> ``("src/retry.py", (40, 75))``; ``"src/retry.py:Retry"`` -> the name.
    RequestError when it is none of them."""
    if not isinstance(text, str) or ":" not in text.strip():
        raise RequestError(f"expected {PLACE_FORMS}, got {text!r}")
    path, _, where = text.strip().rpartition(":")
    where = where.strip()
    if not path or not where:
        raise RequestError(f"expected {PLACE_FORMS}, got {text!r}")
    first, dash, last = where.partition("-")
    if first.strip().isdigit() and (not dash or last.strip().isdigit()):
        start, end = int(first), int(last) if dash else int(first)
        if start < 1 or end < 1:
            raise RequestError(f"line numbers start at 1, got {text!r}")
        if end < start:
            raise RequestError(f"the span ends before it starts, got {text!r}")
        return path, (start, end) if dash else start
    if not where.replace(".", "").replace("_", "").replace("$", "").isalnum():
        raise RequestError(f"expected {PLACE_FORMS}, got {text!r}")
    return path, where.rpartition(".")[2]


def check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise RequestError(f"--limit must be from 1 to {MAX_LIMIT}, got {limit!r}")
    return limit


def graph_of(engine: Engine) -> Graph:
    """The edges of what ``engine`` has open (its index's committed generation, or its store)."""
    own = getattr(engine, "graph", None)
    if own is not None:
        return own()
    return LocalGraph(engine.view)


def neighbourhood(
    engine: Engine, path: str, where: int | str | tuple[int, int], limit: int = DEFAULT_LIMIT
) -> Neighbourhood:
    """The neighbourhood of ``path:where`` in ``engine``'s index (a line, a name, or a hit's
    lines: each definition packed there, :func:`core.graph.span.related_span`); RequestError
    when the place cannot be followed."""
    try:
        if isinstance(where, tuple):
            return related_span(graph_of(engine), engine.root, path, *where, limit=limit)
        return related(graph_of(engine), engine.root, path, where, limit=limit)
    except RelatedError as exc:
        raise RequestError(str(exc)) from None


def answer_related(engine: Engine, place: str, *, limit: int = DEFAULT_LIMIT) -> dict:
    """The JSON envelope of ``ranklens related --json`` and MCP ``related``: the unit, its
    callers, callees and tests (each at most ``limit``), their counts, and ``related_ms``."""
    t0 = time.perf_counter()
    path, where = parse_place(place)
    found = neighbourhood(engine, path, where, check_limit(limit))
    data = {"root": str(engine.root), "place": place, **found.to_dict()}
    partial = engine.view.partial if hasattr(engine.view, "partial") else None
    if partial is not None:
        data["partial"] = partial.to_dict()
    data["related_ms"] = round((time.perf_counter() - t0) * 1000.0, 3)
    return data


def like_request(engine: Engine, place: str, request):
    """``request`` (a checked :class:`core.service.QueryRequest`) asking for units like the one
    at ``place``: its text replaced by the unit's names and code, one more hit asked for (the
    unit itself, dropped by :func:`without_unit`). Returns ``(unit, request)``."""
    path, where = parse_place(place)
    if isinstance(where, tuple):  # a hit's lines: like the unit it starts with
        where = where[0]
    try:
        unit, question = like_question(graph_of(engine), engine.root, path, where)
    except RelatedError as exc:
        raise RequestError(str(exc)) from None
    return unit, replace(request, text=question, top_k=request.top_k + 1)


def without_unit(unit, data: dict, hits: list, top_k: int) -> tuple[dict, list]:
    """A like-answer's envelope and hits without the unit it started from, ranked again."""
    kept = [h for h in hits if not overlaps(unit, h.path, h.start_line, h.end_line)][:top_k]
    items = [d for d in data["results"] if not overlaps(unit, d["path"], d["start_line"], d["end_line"])][:top_k]
    for rank, (hit, item) in enumerate(zip(kept, items), start=1):
        hit.rank = item["rank"] = rank
    like = {"path": unit.path, "start_line": unit.start_line, "end_line": unit.end_line, "name": unit.name}
    return {**data, "results": items, "like": like}, kept


@contextmanager
def as_agent_error(error: type[Exception]):
    """A :class:`RequestError` inside, raised as ``error`` (the MCP server's tool error)."""
    try:
        yield
    except RequestError as exc:
        raise error(str(exc)) from None


def related_problems(arguments: dict) -> list[str]:
    """What is wrong with MCP ``related``'s ``place`` when it is a string (the schema checks
    the rest), for the server's one-line argument errors."""
    place = arguments.get("place")
    if not isinstance(place, str):
        return []
    try:
        parse_place(place)
    except RequestError as exc:
        return [f"place: {exc}"]
    return []
