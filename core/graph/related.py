"""A unit's neighbourhood: its callers, callees and tests, best first.

:func:`related` answers ``ranklens related PATH:LINE``, MCP's ``related`` and the terminal
UI's walk, in this order:

1. **the unit**: the innermost definition holding the line, read from the file's tree (a
   constructor stands for its class: ``__init__`` is called as ``Retry(...)``);
2. **callers**: the chunks whose code uses the unit's name (:mod:`core.graph.edges`), kept
   where the name resolves to this unit from their file (:mod:`core.graph.resolve`), each
   shown as the definition around its first use; those in test files are its **tests**;
3. **callees**: the names the unit uses that the repository defines, each resolved to its
   closest definitions, in the order the unit first uses them.

Files are read from the root (as the preview shows them), each parsed once per change
(:func:`reading`), and only the places listed are read: a name used in 3,000 chunks costs a
lookup, not 3,000 parses.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from ..base.types import Chunk
from ..chunking import references
from ..query.priors import is_test
from .edges import Graph
from .resolve import LABELS, SAME_FILE, Closeness

#: Places listed per kind unless asked otherwise; counts cover them all.
DEFAULT_LIMIT = 20
#: Definitions shown for one callee name when several are equally close.
MAX_CANDIDATES = 3
#: Constructors: their callers call the class.
CONSTRUCTORS = frozenset({"__init__", "__new__", "constructor", "initialize", "new"})


class RelatedError(ValueError):
    """Why a place cannot be followed (one line, for the CLI's and MCP's errors)."""


@dataclass(frozen=True)
class Place:
    """A unit on the walk: where it is, what it defines, and how it was reached.

    ``line``: the line of the use that links it (a caller's or test's use of the unit's name,
    the unit's first use of a callee), 0 for the unit itself; ``resolution``: how the name was
    resolved (``same file``, ``imported``, ``same directory``, ``by name``); ``candidates``:
    how many definitions the name has in the index (more than one: ambiguous)."""

    path: str
    start_line: int
    end_line: int
    name: str
    context: str
    line: int = 0
    via: str = ""  # the name that links it to the unit
    resolution: str = ""
    candidates: int = 1

    def to_dict(self) -> dict:
        out = {"path": self.path, "start_line": self.start_line, "end_line": self.end_line, "name": self.name}
        out["context"] = self.context
        if self.line:
            out.update(line=self.line, via=self.via, resolution=self.resolution, candidates=self.candidates)
        return out


@dataclass
class Neighbourhood:
    """:func:`related`'s answer; ``counts`` are of all places found, the lists at most the limit."""

    unit: Place
    callers: list[Place] = field(default_factory=list)
    callees: list[Place] = field(default_factory=list)
    tests: list[Place] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "unit": self.unit.to_dict(),
            "callers": [p.to_dict() for p in self.callers],
            "callees": [p.to_dict() for p in self.callees],
            "tests": [p.to_dict() for p in self.tests],
            "counts": dict(self.counts),
        }


# -- reading files ---------------------------------------------------------------------------

_READ: OrderedDict[tuple, tuple[list[Chunk], list[tuple[int, str]]]] = OrderedDict()
_READ_LOCK = threading.Lock()
_READ_SIZE = 256


def reading(root: Path, path: str) -> tuple[list[Chunk], list[tuple[int, str]]]:
    """A file's definitions and uses (:func:`core.chunking.references`), parsed once per
    version of the file (kept by path, size and modification time)."""
    full = root / path
    try:
        st = os.stat(full)
    except OSError:
        raise RelatedError(f"{path}: no such file under {root}") from None
    key = (str(full), st.st_size, st.st_mtime_ns)
    with _READ_LOCK:
        found = _READ.get(key)
        if found is not None:
            _READ.move_to_end(key)
            return found
    try:
        text = full.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise RelatedError(f"{path}: cannot be read ({exc.strerror})") from None
    found = references(path, text)
    with _READ_LOCK:
        _READ[key] = found
        while len(_READ) > _READ_SIZE:
            _READ.popitem(last=False)
    return found


def enclosing(defs: list[Chunk], line: int) -> Chunk | None:
    """The innermost definition holding ``line``."""
    best = None
    for d in defs:
        if d.start_line <= line <= d.end_line and (
            best is None or d.end_line - d.start_line < best.end_line - best.start_line
        ):
            best = d
    return best


def _name_of(d: Chunk) -> str:
    return d.symbol.split()[0] if d.symbol else ""


def _called_as(d: Chunk) -> str:
    """The name a definition's callers spell: its own, or its class's for a constructor."""
    name = _name_of(d)
    crumbs = d.context.split(" > ")
    if name in CONSTRUCTORS and len(crumbs) >= 3:
        return crumbs[-2]
    return name


# -- the unit --------------------------------------------------------------------------------


def check_path(root: Path, path: str) -> str:
    """``path`` as the index keys it (relative, POSIX), or :class:`RelatedError`."""
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.resolve().relative_to(root.resolve())
        except ValueError:
            raise RelatedError(f"{path}: outside the indexed folder {root}") from None
    rel = p.as_posix()
    if rel.startswith("../") or rel == "..":
        raise RelatedError(f"{path}: outside the indexed folder {root}")
    return rel.removeprefix("./")


def unit_at(graph: Graph, root: Path, path: str, where: int | str) -> Place:
    """The unit at ``path:where``: the innermost definition holding line ``where``, or the
    definition named ``where`` (the first, outermost, of that name)."""
    path = check_path(root, path)
    if not graph.indexed(path):
        if not (root / path).is_file():
            raise RelatedError(f"{path}: no such file under {root}")
        raise RelatedError(f"{path}: not in the index (run `ranklens index`, or check the ignore rules)")
    defs, _uses = reading(root, path)
    if isinstance(where, int):
        d = enclosing(defs, where)
        if d is None:
            raise RelatedError(f"{path}:{where}: no definition holds this line (related follows functions, classes …)")
    else:
        named = [d for d in defs if _name_of(d) == where or d.context.endswith(f" > {where}")]
        if not named:
            raise RelatedError(f"{path}: defines no {where!r}")
        d = named[0]
    return Place(path, d.start_line, d.end_line, _name_of(d), d.context)


# -- the neighbourhood -----------------------------------------------------------------------


def related(graph: Graph, root: Path, path: str, where: int | str, *, limit: int = DEFAULT_LIMIT) -> Neighbourhood:
    """The neighbourhood of the unit at ``path:where`` (a line, or a name it defines)."""
    unit = unit_at(graph, root, path, where)
    defs, uses = reading(root, unit.path)
    d = next((d for d in defs if (d.start_line, d.end_line) == (unit.start_line, unit.end_line)), None)
    called = _called_as(d) if d is not None else unit.name
    closeness = Closeness(graph)
    callers, tests, counted = _callers(graph, root, unit, called, closeness, limit)
    callees, n_callees = _callees(graph, root, unit, uses, closeness, limit)
    return Neighbourhood(
        unit, callers, callees, tests, {"callers": counted[0], "callees": n_callees, "tests": counted[1]}
    )


def _inside(place, unit: Place) -> bool:
    """Whether an indexed chunk lies within ``unit`` (its own code)."""
    return place.path == unit.path and place.start >= unit.start_line and place.end <= unit.end_line


def _callers(
    graph: Graph, root: Path, unit: Place, name: str, closeness: Closeness, limit: int
) -> tuple[list[Place], list[Place], tuple[int, int]]:
    if not name:
        return [], [], (0, 0)
    using = graph.users(name)
    if not using:
        return [], [], (0, 0)
    definers = graph.definers(name)
    definer_paths = [d.path for d in definers]
    n_defs = len({d.span for d in definers}) or 1
    # Each using chunk, with the tier its file resolves the name at, kept when it means this unit.
    found = []
    tiers: dict[str, int | None] = {}
    for c in using:
        if _inside(c, unit):
            continue  # the unit's own code (a recursive call)
        if c.path not in tiers:
            if definer_paths:
                top, best = closeness.best(c.path, definer_paths)
                tiers[c.path] = top if any(definer_paths[i] == unit.path for i in best) else None
            else:
                tiers[c.path] = closeness.tier(c.path, unit.path)
        tier = tiers[c.path]
        if tier is None:
            continue  # resolves to another definition of the name, closer to it
        found.append((tier, is_test(c.path, c.language), c.path, c.start, c.end))
    found.sort(key=lambda f: (f[0], f[2], f[3]))
    callers: list[Place] = []
    tests: list[Place] = []
    seen: set[tuple] = {(unit.path, unit.start_line, unit.end_line)}
    counts = [0, 0]
    for tier, test, path, start, end in found:
        out = tests if test else callers
        if len(out) >= limit:
            counts[test] += 1  # counted, not read: the count may hold a unit twice
            continue
        place = _use_place(root, path, start, end, name, tier, n_defs)
        if place is None or (place.path, place.start_line, place.end_line) in seen:
            continue
        counts[test] += 1
        seen.add((place.path, place.start_line, place.end_line))
        out.append(place)
    return callers, tests, (counts[0], counts[1])


def _use_place(root: Path, path: str, start: int, end: int, name: str, tier: int, candidates: int) -> Place | None:
    """The definition around the first use of ``name`` in lines ``start..end`` of ``path``
    (the chunk's span where no definition holds it); None when the file no longer uses it there."""
    try:
        defs, uses = reading(root, path)
    except RelatedError:
        return None
    line = next((ln for ln, n in uses if n == name and start <= ln <= end), 0)
    if not line:
        return None
    d = enclosing(defs, line)
    if d is None:
        return Place(path, start, end, "", path, line, name, LABELS[tier], candidates)
    return Place(path, d.start_line, d.end_line, _name_of(d), d.context, line, name, LABELS[tier], candidates)


def _callees(
    graph: Graph, root: Path, unit: Place, uses: list[tuple[int, str]], closeness: Closeness, limit: int
) -> tuple[list[Place], int]:
    first: dict[str, int] = {}
    for line, name in uses:
        if unit.start_line <= line <= unit.end_line and name != unit.name and name not in first:
            first[name] = line
    out: list[Place] = []
    count = 0
    for name, line in sorted(first.items(), key=lambda item: item[1]):
        spans = list(dict.fromkeys(d.span for d in graph.definers(name) if not _inside(d, unit)))
        if not spans:
            continue  # a library's or the language's name, or the unit's own
        top, best = closeness.best(unit.path, [s[0] for s in spans])
        count += 1
        if len(out) >= limit:
            continue
        for i in best[:MAX_CANDIDATES]:
            path, start, end = spans[i]
            out.append(_definition_place(root, path, start, end, name, line, top, len(spans)))
    return out, count


def _definition_place(root: Path, path: str, start: int, end: int, name: str, line: int, tier: int, n: int) -> Place:
    """The definition of ``name`` in chunk lines ``start..end`` of ``path`` (the chunk's span
    when the file no longer parses into it)."""
    try:
        defs, _uses = reading(root, path)
    except RelatedError:
        defs = []
    inside = [d for d in defs if _name_of(d) == name and d.start_line <= end and d.end_line >= start]
    if inside:
        d = inside[0]
        return Place(path, d.start_line, d.end_line, name, d.context, line, name, LABELS[tier], n)
    return Place(path, start, end, name, path, line, name, LABELS[tier], n)


__all__ = ["DEFAULT_LIMIT", "SAME_FILE", "Neighbourhood", "Place", "RelatedError", "related", "unit_at"]
