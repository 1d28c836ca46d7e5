"""The neighbourhood of a span that packs several definitions: what a hit shows, followed.

A hit is often a chunk packing small definitions side by side (its breadcrumb ends ``Group,
BasePath, handle, Handle``). Its reader asks who calls and what is called by what it shows,
not by its first definition alone. :func:`related_span` answers ``ranklens related
PATH:START-END``, MCP's ``related`` given such a place, and ``r`` on a hit in the terminal UI:

1. **the units**: the definitions that start inside the span and are not nested in another
   that does (a class's methods are its own: a class hit stays the class); with one or none,
   the span is the unit at its first line, as :func:`core.graph.related.related` answers it;
2. **each one's neighbourhood**, merged: callers, callees and tests taken in turn from each
   unit (its best first), each place once, and none inside the span (the packed units using
   each other are the hit's own code). Counts add up each unit's, less the places dropped.
   The first :data:`MAX_PACKED` units are followed; ``counts["unfollowed"]`` says how many
   more the span packs (a chunk of 14 one-line methods: each a name with callers to read,
   ~30 ms apiece, and lists whose rows mean little together).
"""

from __future__ import annotations

from itertools import chain, zip_longest
from pathlib import Path

from .edges import Graph
from .related import DEFAULT_LIMIT, Neighbourhood, Place, RelatedError, check_path, reading, related

KINDS = ("callers", "callees", "tests")
#: The most definitions of one span followed.
MAX_PACKED = 8


def packed_units(root: Path, path: str, start: int, end: int) -> list:
    """The definitions starting inside lines ``start``-``end`` of ``path`` and nested in no
    other that does, in file order."""
    inside = [d for d in reading(root, path).defs if start <= d.start_line <= end]
    return [
        d
        for d in inside
        if not any(o is not d and o.start_line <= d.start_line and d.end_line <= o.end_line for o in inside)
    ]


def related_span(
    graph: Graph, root: Path, path: str, start: int, end: int, *, limit: int = DEFAULT_LIMIT
) -> Neighbourhood:
    """The neighbourhood of lines ``start``-``end`` of ``path``: of each definition packed
    there, merged (one: its own; none: the unit holding ``start``)."""
    if end < start:
        raise RelatedError(f"{path}:{start}-{end}: the span ends before it starts")
    path = check_path(root, path)
    # A file not indexed: related's own one-line error says why.
    units = packed_units(root, path, start, end) if graph.indexed(path) else []
    if len(units) <= 1:
        return related(graph, root, path, units[0].start_line if units else start, limit=limit)
    parts = [related(graph, root, path, d.start_line, limit=limit) for d in units[:MAX_PACKED]]
    lo, hi = min(d.start_line for d in units), max(d.end_line for d in units)
    names = [p.unit.name for p in parts if p.unit.name]
    context = parts[0].unit.context.rpartition(" > ")[0]
    unit = Place(path, lo, hi, ", ".join(names), f"{context} > {', '.join(names)}" if context else ", ".join(names))
    merged, counts = {}, {}
    for kind in KINDS:
        seen, kept = set(), []
        lists = [getattr(p, kind) for p in parts]
        dropped = 0
        for place in chain.from_iterable(zip_longest(*lists)):
            if place is None:
                continue
            key = (place.path, place.start_line, place.end_line)
            if key in seen or (place.path == path and lo <= place.start_line and place.end_line <= hi):
                dropped += 1
                continue
            seen.add(key)
            kept.append(place)
        merged[kind] = kept[:limit]
        counts[kind] = max(len(kept), sum(p.counts.get(kind, 0) for p in parts) - dropped)
    unread = sum(p.counts.get("unread", 0) for p in parts)
    if unread:
        counts["unread"] = unread
    if len(units) > MAX_PACKED:
        counts["unfollowed"] = len(units) - MAX_PACKED
    return Neighbourhood(unit, merged["callers"], merged["callees"], merged["tests"], counts)
