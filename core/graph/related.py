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
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..base.types import Chunk
from ..chunking import Reading, references
from ..chunking.declarations import CONTROL, SIGNATURE
from ..chunking.refs import IMPORTS
from ..query.priors import is_test
from ..text.languages import language_for
from .edges import Graph
from .resolve import IMPORTED, LABELS, SAME_FILE, Closeness, module_names

#: Places listed per kind unless asked otherwise; counts cover them all.
DEFAULT_LIMIT = 20
#: Definitions shown for one callee name when several are equally close.
MAX_CANDIDATES = 3
#: Files a neighbourhood reads to find its callers' uses (parsed once per version of a file);
#: beyond them, once the lists are full, chunks that spell the name are counted as ``unread``.
MAX_FILES_READ = 64
#: Constructors: their callers call the class.
CONSTRUCTORS = frozenset({"__init__", "__new__", "constructor", "initialize", "new"})
#: Languages whose methods are only called on a receiver (``self.m()``, ``obj.m()``,
#: ``$this->m()``): a bare ``m()`` there never means a method. Java, C#, C++, Kotlin, Swift,
#: Scala and Ruby call their own class's methods bare too.
RECEIVER_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx", "go", "rust", "php", "lua"})
#: The names a method's own receiver goes by.
SELVES = frozenset({"self", "this", "cls"})
#: A definition holding these words in its header holds methods.
_CLASSLIKE = re.compile(r"\b(?:class|struct|impl|interface|trait|object|enum|record|protocol|extension)\b")


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
    """:func:`related`'s answer; ``counts`` are of all places found, the lists at most the limit
    (``unread``, when present: chunks that spell the unit's name in files beyond
    :data:`MAX_FILES_READ`, not read to tell a use from a local name)."""

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

_READ: OrderedDict[tuple, Reading] = OrderedDict()
_READ_LOCK = threading.Lock()
_READ_SIZE = 256


def reading(root: Path, path: str) -> Reading:
    """A file's definitions and code (:func:`core.chunking.references`), parsed once per
    version of the file (kept by path, size and modification time)."""
    return _versioned(_READ, _READ_SIZE, root, path, lambda text: references(path, text))[1]


def _versioned(cache: OrderedDict, size: int, root: Path, path: str, make: Callable[[str], object]) -> tuple:
    """``(version, make(text))`` of a file, kept in ``cache`` (the ``size`` latest) per
    version: path, size and modification time."""
    full = root / path
    try:
        st = os.stat(full)
    except OSError:
        raise RelatedError(f"{path}: no such file under {root}") from None
    key = (str(full), st.st_size, st.st_mtime_ns)
    with _READ_LOCK:
        found = cache.get(key)
        if found is not None:
            cache.move_to_end(key)
            return key, found
    try:
        text = full.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise RelatedError(f"{path}: cannot be read ({exc.strerror})") from None
    found = make(text)
    with _READ_LOCK:
        cache[key] = found
        while len(cache) > size:
            cache.popitem(last=False)
    return key, found


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


def is_method(defs: list[Chunk], d: Chunk) -> bool:
    """Whether ``d`` is a method: a Go function with a receiver, or a definition inside a
    class-like one (a function nested in a function is not)."""
    if d.signature.startswith("func ("):
        return True
    parent = _parent(defs, d)
    return parent is not None and holds_methods(parent)


def holds_methods(d: Chunk) -> bool:
    """Whether definition ``d`` is class-like (its definitions are methods): a word of
    :data:`_CLASSLIKE` before its name (``export default class Reference``, ``impl Trait for``)
    or right after it (Go's ``type Retry struct``); not one in its name or parameters
    (superstruct's ``function object(schema)``, ``def load(record)``)."""
    header = d.signature.split("{", 1)[0]
    name = _name_of(d)
    at = re.search(rf"(?<![A-Za-z0-9_$]){re.escape(name)}(?![A-Za-z0-9_$])", header) if name else None
    if at is None:
        return _CLASSLIKE.search(header) is not None
    return (
        _CLASSLIKE.search(header, 0, at.start()) is not None
        or _CLASSLIKE.match(header[at.end() :].lstrip()) is not None
    )


def _parent(defs: list[Chunk], d: Chunk) -> Chunk | None:
    """The innermost definition around ``d``."""
    around = [o for o in defs if o is not d and o.start_line <= d.start_line and d.end_line <= o.end_line]
    return max(around, key=lambda o: o.start_line, default=None)


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
    read = reading(root, path)
    defs = read.defs
    if isinstance(where, int):
        d = enclosing(defs, where)
        doc = _documented(read, where)
        # A method's doc comment lies inside its class: the line means the method.
        if doc is not None and (d is None or (doc is not d and d.start_line <= doc.start_line <= d.end_line)):
            d = doc
        if d is None:
            raise RelatedError(f"{path}:{where}: no definition holds this line (related follows functions, classes …)")
    else:
        named = [d for d in defs if _name_of(d) == where or d.context.endswith(f" > {where}")]
        if not named:
            raise RelatedError(f"{path}: defines no {where!r}")
        d = named[0]
    return Place(path, d.start_line, d.end_line, _name_of(d), d.context)


def _documented(read: Reading, line: int) -> Chunk | None:
    """The definition whose leading comment holds ``line`` (a hit's first line is often its
    doc comment, above a Go ``func`` or a Java method): the first one below it with only
    comment and blank lines between."""
    below = [d for d in read.defs if d.start_line > line]
    if not below:
        return None
    d = min(below, key=lambda d: (d.start_line, -d.end_line))
    if all(not text.strip() for text in read.code[line - 1 : d.start_line - 1]):
        return d
    return None


# -- the neighbourhood -----------------------------------------------------------------------


def related(graph: Graph, root: Path, path: str, where: int | str, *, limit: int = DEFAULT_LIMIT) -> Neighbourhood:
    """The neighbourhood of the unit at ``path:where`` (a line, or a name it defines)."""
    unit = unit_at(graph, root, path, where)
    read = reading(root, unit.path)
    defs, uses = read.defs, read.uses(unit.start_line, unit.end_line)
    d = next((d for d in defs if (d.start_line, d.end_line) == (unit.start_line, unit.end_line)), None)
    called = _called_as(d) if d is not None else unit.name
    method = d is not None and called == unit.name and is_method(defs, d)
    closeness = Closeness(graph)
    parent = _parent(defs, d) if d is not None else None
    supers = supertypes(parent) if method else set()
    package = go_package(read) if language_for(unit.path) == "go" else ""
    callers, tests, counted = _callers(graph, root, unit, called, method, closeness, limit, supers, package)
    if parent is not None and not method and not holds_methods(parent):
        # A nested function is seen only inside the function it is defined in: uses elsewhere
        # are of other functions' of the same name.
        callers = [p for p in callers if p.path == unit.path and parent.start_line <= p.start_line <= parent.end_line]
        tests = []
        counted = (len(callers), 0, 0)
        user = _outer_user(read, parent, d, called)
        if user is not None and all((p.start_line, p.end_line) != (user.start_line, user.end_line) for p in callers):
            callers.insert(0, user)
            counted = (counted[0] + 1, 0, 0)
    callees, n_callees = _callees(graph, root, unit, uses, closeness, limit)
    counts = {"callers": counted[0], "callees": n_callees, "tests": counted[1]}
    if counted[2]:
        counts["unread"] = counted[2]
    return Neighbourhood(unit, callers, callees, tests, counts)


def _outer_user(read: Reading, outer: Chunk, d: Chunk, name: str) -> Place | None:
    """Function ``outer``, when its own code (``read``: its file, comments and strings blanked)
    names the function ``d`` nested in it: a nested function is used there, often not called
    but returned or passed (``return decorator``, ``add_route(path, openapi)``), which the
    index's uses (calls, members, types) do not hold. A nested function is a local name: only
    its bare spelling is it; a member of that name (``this.test({...})`` around an object's
    ``test() {}``, ``obj.close``) is another's."""
    word = re.compile(rf"(?<![A-Za-z0-9_$]){re.escape(name)}(?![A-Za-z0-9_$])")
    for ln in range(outer.start_line + 1, min(outer.end_line, len(read.code)) + 1):
        if d.start_line <= ln <= d.end_line:
            continue
        code = read.code[ln - 1]
        if any(not _MEMBER_BEFORE.search(code, 0, m.start()) for m in word.finditer(code)):
            return Place(
                d.path, outer.start_line, outer.end_line, _name_of(outer), outer.context, ln, name, LABELS[SAME_FILE], 1
            )
    return None


#: What makes the name after it a member (``.``, ``?.``, ``->``, ``::``), not a spread's ``...``.
_MEMBER_BEFORE = re.compile(r"(?:(?<!\.)\.|->|::)[ \t]*$")


def _inside(place, unit: Place) -> bool:
    """Whether an indexed chunk lies within ``unit`` (its own code)."""
    return place.path == unit.path and place.start >= unit.start_line and place.end <= unit.end_line


def _callers(
    graph: Graph,
    root: Path,
    unit: Place,
    name: str,
    method: bool,
    closeness: Closeness,
    limit: int,
    supers: set[str] = frozenset(),
    package: str = "",
) -> tuple[list[Place], list[Place], tuple[int, int, int]]:
    if not name:
        return [], [], (0, 0, 0)
    using = graph.users(name)
    if not using:
        return [], [], (0, 0, 0)
    # Resolution weighs every definition of the name and every instance attribute set by it;
    # the count says how many definitions there are.
    definers = graph.definers(name, attributes=True)
    n_defs = len({d.span for d in graph.definers(name)}) or 1
    own_class = class_of(unit.context, unit.name) if method else ""
    rival_files = {d.path for d in definers if class_of(d.context, name) not in ("", own_class)}
    # A call through a class the unit's class extends or implements may land on the unit.
    own_classes = {own_class} | supers if own_class else set()
    # Each using chunk, with the tier its file resolves the name at, kept when it means this unit.
    found = []
    tiers: dict[str, int | None] = {}
    for c in using:
        if _inside(c, unit):
            continue  # the unit's own code (a recursive call)
        if c.path not in tiers:
            tiers[c.path] = _resolves_here(closeness, c.path, unit, definers, own_classes, name)
        tier = tiers[c.path]
        if tier is None and method and c.path == unit.path:
            # The unit's own file, which names another class defining the name (it imports
            # ``TestProject``) and need not spell the unit's class outside its header: its own
            # receiver's calls (``this.close()`` in ``Vitest``) are still the unit's.
            found.append((SAME_FILE, is_test(c.path, c.language), _on_self, c))
            continue
        if tier is None:
            continue  # resolves to another definition of the name, closer to it
        accept = _accepts(unit, method, c, c.path in rival_files, package, graph)
        found.append((tier, is_test(c.path, c.language), accept, c))
    found.sort(key=lambda f: (f[0], f[3].path, f[3].start))
    callers: list[Place] = []
    tests: list[Place] = []
    seen: set[tuple] = {(unit.path, unit.start_line, unit.end_line)}
    counts = [0, 0]
    files: set[str] = set()
    unread = 0
    for tier, test, accept, chunk in found:
        out = tests if test else callers
        if len(out) >= limit and chunk.path not in files and len(files) >= MAX_FILES_READ:
            unread += 1  # a chunk spelling the name, not read: maybe a use, maybe a local name
            continue
        files.add(chunk.path)
        for place in _use_places(root, chunk, name, tier, n_defs, accept):
            key = (place.path, place.start_line, place.end_line)
            if key in seen or (not place.name and (place.path, place.line) in seen):
                continue  # the same use at the top level, in two overlapping windows
            seen.update((key, (place.path, place.line)))
            counts[test] += 1
            if len(out) < limit:
                out.append(place)
    return callers, tests, (counts[0], counts[1], unread)


def class_of(context: str, name: str) -> str:
    """The class a breadcrumb puts a definition of ``name`` in (``path > Retry > sleep`` and
    ``path > Retry > wait, sleep``: ``Retry``; a chunk of a class packed whole: the class)."""
    crumbs = context.split(" > ")[1:]
    if crumbs and name in crumbs[-1].split(", "):  # a chunk packing several: "Cls > a, b, read"
        crumbs = crumbs[:-1]
    return crumbs[-1] if crumbs else ""


def supertypes(cls: Chunk | None) -> set[str]:
    """The capitalised names a class's header gives after its own (``class DefaultRetryer
    implements Retryer``, ``class Reader(Base)``): what it extends or implements."""
    if cls is None:
        return set()
    header = cls.signature.split("{", 1)[0]
    own = _name_of(cls)
    at = header.find(own)
    return set(re.findall(r"\b[A-Z][A-Za-z0-9_]*", header[at + len(own) :] if at >= 0 else header)) - {own}


def _resolves_here(
    closeness: Closeness, user: str, unit: Place, definers: list, own_classes: set[str], name: str
) -> int | None:
    """The tier at which file ``user`` resolves the name to ``unit``; None when it resolves to
    another definition (closer, or of a class the file names where neither ``unit``'s class nor
    one it extends is: ``own_classes``)."""
    if not definers:
        return closeness.tier(user, unit.path)
    top, best = closeness.best(user, [d.path for d in definers])
    if own_classes and top == SAME_FILE and all(class_of(definers[i].context, name) for i in best):
        # Methods of the using file's own classes hide the unit only on their own receiver
        # (``self.release()``); ``self._connection.release()`` may be any imported class's.
        rest = [i for i in range(len(definers)) if i not in best]
        if rest:
            top2, best2 = closeness.best(user, [definers[i].path for i in rest])
            if top2 <= IMPORTED:
                top, best = IMPORTED, [rest[j] for j in best2] + best
    # The closest definition is the unit's, or a declaration in a class the unit's extends (not
    # a same-named class elsewhere: a copy of the class in another package).
    supers = own_classes - {class_of(unit.context, unit.name)}
    if not any(definers[i].path == unit.path or class_of(definers[i].context, name) in supers for i in best):
        return None
    if top > IMPORTED and user in closeness.graph.paths_using(IMPORTS + name):
        return None  # the file imports the name itself, from a module not the unit's
    if own_classes:
        classes = {class_of(definers[i].context, name) for i in best} - {""}
        if len(classes) > 1:
            named = {cls for cls in classes | own_classes if user in closeness.graph.paths_using(cls)}
            if named and not named & own_classes:
                return None  # the file names another of the classes defining it, not the unit's
        if top > IMPORTED and not any(user in closeness.graph.paths_using(cls) for cls in own_classes):
            # A method called from a file that neither imports its module nor names its class
            # (nor one it extends): the receiver is of some other type (``parts.clear()``).
            return None
    return top


def _on_self(qualifier: str | None) -> bool:
    return qualifier in SELVES


def _accepts(
    unit: Place, method: bool, c, rival_here: bool = False, package: str = "", graph: Graph | None = None
) -> Callable[[str | None], bool]:
    """Which uses in chunk ``c`` can mean ``unit``, by what qualifies them (None: bare; see
    :func:`core.chunking.refs.qualified_uses`). In :data:`RECEIVER_LANGUAGES` a method is
    called on a receiver, never bare, and a function bare or through its module's name
    (``retry.Do``; in Go its ``package`` clause's too, for a package at the module's root:
    ``toml.Decode``), never on an object (``s.close()``); elsewhere a method is also called
    bare from its own file (its class), and anything goes. Where the file defines a method of
    that name in another class (``rival_here``), ``self.name`` is that one's. In Go only a
    package is imported: a name the using file's imports spell qualifies no method
    (``time.Duration`` is not ``FlagSet.Duration``)."""
    if c.language not in RECEIVER_LANGUAGES:
        return (lambda q: True) if not method or c.path == unit.path else (lambda q: q is not None)
    if method:
        path = c.path
        go = c.language == "go" and graph is not None

        def receiver(q: str | None) -> bool:
            return q is not None and not (go and q and path in graph.paths_using(IMPORTS + q))

        if rival_here and c.path != unit.path:
            return lambda q: receiver(q) and q not in SELVES
        return receiver
    modules = set(module_names(unit.path)) | ({package} if package else set())
    return lambda q: q is None or q in modules


#: A Go file's package clause.
_GO_PACKAGE = re.compile(r"[ \t]*package[ \t]+([A-Za-z_][A-Za-z0-9_]*)")


def go_package(read: Reading) -> str:
    """The package a Go file's clause names (its code: comments blanked), "" when none."""
    for line in read.code[:400]:
        m = _GO_PACKAGE.match(line)
        if m is not None:
            return m.group(1)
    return ""


def _use_places(
    root: Path,
    chunk,
    name: str,
    tier: int,
    candidates: int,
    accept: Callable[[str | None], bool] = lambda q: True,
) -> list[Place]:
    """The definitions around the uses of ``name`` in lines ``start..end`` of ``path`` that
    ``accept`` takes (:func:`_accepts`), one per definition at its first use (a chunk may pack
    several); the chunk's span for a use no definition holds; none when the file no longer
    uses it there."""
    path, start, end = chunk.path, chunk.start, chunk.end
    try:
        read: Reading = chunk_reading(root, chunk)
        uses = read.uses(start, end, name)
        if not all(read.whole(enclosing(read.defs, line)) for line, _n, _q in uses):
            read = reading(root, path)  # a definition running on past the chunk: its file says where it ends
            uses = read.uses(start, end, name)
    except RelatedError:
        return []
    defs = read.defs
    out: dict[tuple[int, int], Place] = {}
    prototypes = chunk.language in _PROTOTYPED
    for line, _used, qualifier in uses:
        if not accept(qualifier):
            continue
        if prototypes and is_prototype(read.code[line - 1]):
            continue  # ``int sock_sendmsg(struct socket *sock, ...);`` in a header declares it
        d = enclosing(defs, line)
        if d is None:
            out.setdefault((start, end), Place(path, start, end, "", path, line, name, LABELS[tier], candidates))
        else:
            out.setdefault(
                (d.start_line, d.end_line),
                Place(path, d.start_line, d.end_line, _name_of(d), d.context, line, name, LABELS[tier], candidates),
            )
    return list(out.values())


def _callees(
    graph: Graph, root: Path, unit: Place, uses: list[tuple[int, str, str | None]], closeness: Closeness, limit: int
) -> tuple[list[Place], int]:
    used: dict[str, list[tuple[int, str | None]]] = {}
    for line, name, qualifier in uses:
        if unit.start_line <= line <= unit.end_line and name != unit.name:
            used.setdefault(name, []).append((line, qualifier))
    receivers = language_for(unit.path) in RECEIVER_LANGUAGES
    own_class = class_of(unit.context, unit.name)
    out: list[Place] = []
    count = 0
    for name, lines in sorted(used.items(), key=lambda item: item[1][0][0]):
        found = {d.span: d for d in graph.definers(name) if not _inside(d, unit)}
        if not found:
            continue  # a library's or the language's name, or the unit's own
        spans = sorted(found)  # by path and line: the same order from any index or store
        if receivers:
            # ``time.sleep``: through a module the file imports that defines nothing here.
            local = {s[0] for s in spans}
            lines = [
                (ln, q)
                for ln, q in lines
                if not (
                    q and unit.path in graph.paths_using(IMPORTS + q) and not any(q in module_names(p) for p in local)
                )
            ]
            if not lines:
                continue
            spans = _as_used(spans, found, {q for _ln, q in lines}, own_class, name)
        line = lines[0][0]
        top, best = closeness.best(unit.path, [s[0] for s in spans])
        count += 1
        if len(out) >= limit:
            continue
        shown = {(p.path, p.start_line, p.end_line) for p in out}
        for i in best[:MAX_CANDIDATES]:
            place = _definition_place(root, found[spans[i]], spans[i], name, line, top, len(found))
            if (place.path, place.start_line, place.end_line) not in shown:  # a class and its constructors
                shown.add((place.path, place.start_line, place.end_line))
                out.append(place)
    return out, count


# -- reading a chunk, not its file -----------------------------------------------------------

_LINES: OrderedDict[tuple, list[str]] = OrderedDict()
_PARTS: OrderedDict[tuple, ChunkReading] = OrderedDict()
#: Languages whose blocks end where the indentation does, and whose blocks are braces: how a
#: definition cut at a chunk's end is told from one that ends there.
_INDENTED = frozenset({"python"})
_BRACED = frozenset(
    {
        "c",
        "cpp",
        "csharp",
        "go",
        "java",
        "javascript",
        "typescript",
        "tsx",
        "rust",
        "kotlin",
        "scala",
        "swift",
        "php",
        "zig",
    }
)


#: Languages whose functions are declared apart from their definitions (a header's
#: prototypes): a prototype spells the name as a call does, and calls nothing.
_PROTOTYPED = frozenset({"c", "cpp"})
#: Statements shaped like a prototype (``word name(args);``) that are calls.
_CALLING_WORDS = frozenset({"new", "delete", "sizeof", "typeof", "alignof", "co_await", "co_return", "co_yield"})


def is_prototype(line: str) -> bool:
    """Whether a C or C++ line declares a function: a return type, a name and parameters,
    then ``;``, no control-flow word (``return f(x);``) and nothing assigned."""
    text = line.strip()
    return (
        text.endswith(";")
        and text.split(None, 1)[0] not in _CALLING_WORDS
        and SIGNATURE.match(text) is not None
        and CONTROL.search(text) is None
    )


class ChunkReading(Reading):
    """A :class:`Reading` of one indexed chunk's lines (a piece's whole definition): parsed
    alone, not with its file, which is what a caller's or a callee's place needs from a
    long file (a kernel source of 5,000 lines is parsed in ~30 ms; its chunk in ~1 ms).
    Definitions keep the file's lines and breadcrumbs. :meth:`whole` says whether a
    definition is known to end where the parse ends it: a class whose methods are chunked
    apart, or a function cut at its nested ones, runs on past the chunk."""

    __slots__ = ("end", "language", "lines", "crumbs")

    def __init__(self, defs: list[Chunk], code: list[str], end: int, language: str, lines: list[str], crumbs: bool):
        super().__init__(defs, code)
        self.end, self.language, self.lines, self.crumbs = end, language, lines, crumbs

    def whole(self, d: Chunk | None) -> bool:
        """Whether ``d`` (one of :attr:`defs`, or None: no definition holds the line) is
        the definition the file's parse gives."""
        if d is None:
            return not self.crumbs  # at the file's top level, nothing holds it there either
        if d.end_line < self.end:
            return True
        if self.language in _INDENTED:  # it goes on when the next line is indented deeper
            header = self.lines[d.start_line - 1]
            for line in self.lines[self.end :]:
                if line.strip():
                    return len(line) - len(line.lstrip()) <= len(header) - len(header.lstrip())
            return True
        if self.language in _BRACED:
            body = "".join(self.code[d.start_line - 1 : self.end])
            return body.count("{") <= body.count("}")
        return False  # Ruby's or Lua's ``end``, Haskell's layout: ask the file


def chunk_reading(root: Path, chunk) -> ChunkReading:
    """The :class:`ChunkReading` of an indexed chunk (:class:`~core.graph.edges.ChunkPlace`),
    parsed once per version of its file."""
    key, lines = _versioned(_LINES, 16, root, chunk.path, lambda text: text.split("\n"))
    _path, a, b = chunk.span
    with _READ_LOCK:
        found = _PARTS.get((key, a, b))
    if found is not None:
        return found
    part = lines[a - 1 : b]
    indent = min((len(line) - len(line.lstrip()) for line in part if line.strip()), default=0)
    read = references(chunk.path, "\n".join(line[indent:] for line in part))
    outer = chunk.context.split(" > ")[1:]
    defs = [
        replace(
            d,
            start_line=d.start_line + a - 1,
            end_line=d.end_line + a - 1,
            context=_rebased(d.context, chunk.path, outer),
        )
        for d in read.defs
    ]
    found = ChunkReading(defs, [""] * (a - 1) + read.code, b, language_for(chunk.path), lines, bool(outer))
    with _READ_LOCK:
        _PARTS[(key, a, b)] = found
        while len(_PARTS) > _READ_SIZE:
            _PARTS.popitem(last=False)
    return found


def _rebased(context: str, path: str, outer: list[str]) -> str:
    """A breadcrumb of a chunk's own parse (``path > close``) under the chunk's, ``outer``
    (``Handler``, ``close``; a packed chunk's last crumb lists its units, ``a, close``): from
    the last of the chunk's crumbs naming its first crumb on (``path > Handler > close``)."""
    crumbs = context.split(" > ")[1:]
    if not crumbs:
        return context
    at = len(outer)
    for i in range(len(outer) - 1, -1, -1):
        if crumbs[0] in outer[i].split(", "):
            at = i
            break
    return " > ".join([path, *outer[:at], *crumbs])


def _as_used(spans: list, found: dict, qualifiers: set, own_class: str, name: str) -> list:
    """Of a callee's definitions, those its uses can mean in a receiver language: bare only, a
    function (not a method); only on ``self``/``this``, the unit's own class's where it has
    one; only through a name that is a defining module's, that module's. All of them when
    the uses say nothing (or rule out every one)."""
    kept = spans
    if qualifiers == {None}:
        kept = [s for s in spans if not class_of(found[s].context, name)]
    elif qualifiers <= SELVES and own_class:
        kept = [s for s in spans if class_of(found[s].context, name) == own_class]
    elif None not in qualifiers:
        kept = [s for s in spans if qualifiers & set(module_names(s[0]))]
    return kept or spans


def _definition_place(root: Path, chunk, span: tuple, name: str, line: int, tier: int, n: int) -> Place:
    """The definition of ``name`` in ``chunk`` (whose unit is ``span``): the chunk itself when
    it is that one definition (or a piece of it), else read from its file (a chunk packing
    several, a class with its methods), or the chunk's span when the file no longer parses
    into it."""
    path, start, end = span
    if chunk.context.rsplit(" > ", 1)[-1] == name:
        return Place(path, start, end, name, chunk.context, line, name, LABELS[tier], n)
    try:
        read: Reading = chunk_reading(root, chunk)
        inside = [d for d in read.defs if _name_of(d) == name and d.start_line <= end and d.end_line >= start]
        if inside and not read.whole(inside[0]):  # a class running on past the chunk
            read = reading(root, path)
            inside = [d for d in read.defs if _name_of(d) == name and d.start_line <= end and d.end_line >= start]
    except RelatedError:
        inside = []
    if inside:
        d = inside[0]
        return Place(path, d.start_line, d.end_line, name, d.context, line, name, LABELS[tier], n)
    return Place(path, start, end, name, chunk.context, line, name, LABELS[tier], n)


__all__ = ["DEFAULT_LIMIT", "SAME_FILE", "Neighbourhood", "Place", "RelatedError", "related", "unit_at"]
