"""The names a file's code uses, read from the tree-sitter tree the chunker parses anyway.

Navigation (:mod:`core.graph`) resolves names, as search-based code navigation does. The tree
says what is code: its comment and string nodes are blanked out (an interpolation inside a
string stays code), and the modules of import statements that name them as strings are read
off it (``import "net/http"``, ``from './retry'``: which of several same-named definitions a
file means). A chunk then records every name its code spells (:func:`uses`: identifiers less
the languages' keywords), the names it defines (marked ``=``) and the instance attributes it
sets (marked ``.``), and the index keeps name -> chunks.

Which of those occurrences refer to something defined elsewhere is decided when a question
reads the few chunks it lists (:func:`qualified_uses`, from the characters around each one,
the same way in every grammar):

* a call: the name is followed by ``(`` (or a Rust macro's ``!``), type arguments between
  (``compose<typeof f>(``) or not;
* a member or a qualified name: preceded by ``.``, ``->``, ``::``, ``\\`` (PHP) or ``@`` (a
  decorator), with what qualifies it (a method is called on a receiver, a function bare or
  through its module's name);
* a type, class or constant: it starts with a capital letter, or stands where only a type
  does (``pair{``, ``[]pair``, ``.(*pair)``: Go's unexported types).

A bare lowercase identifier elsewhere (a local variable, a parameter) is no use: as one it would
make every function with a variable ``path`` a caller of ``def path()``. Positions cost three
times what identifiers do to find (0.62 s against 0.21 s for the standard library's 5 MB of
chunks): the index takes every identifier and the question the positions of the few it reads.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Query

#: Import statements whose module is a string (Go, JavaScript/TypeScript, C/C++ …).
IMPORT_STRINGS = (
    "(import_spec path: (_) @module)",
    "(import_statement source: (string) @module)",
    "(export_statement source: (string) @module)",
    "(preproc_include path: (_) @module)",
)
#: Type arguments written right after a name, up to two levels deep (``compose<typeof f>``,
#: ``createDefer<Map<string, T>>``): a call with them is a call (not ``a < b && c > (d)``,
#: whose ``<`` stands apart from the name).
_TYPE_ARGUMENTS = r"<[^<>()\n]*+(?:<[^<>()\n]*+>[^<>()\n]*+)*+>"
#: A use: a call (``name(``, ``name<T>(``, a Rust macro's ``name!``), a member or qualified
#: name (``.name``, ``->name``, ``::name``, ``\\name``, ``@decorator``), a capitalised name, a
#: lowercase type where only a type stands (Go's unexported ones: a literal ``pair{``, written
#: apart from a block's ``if ok {``; an element ``[]pair``, ``map[string]*pair``; an assertion
#: ``.(*pair)``). Neither side looks past the line: a Python header's ``:`` ends the line above a
#: body's first name.
USE = re.compile(
    r"(?:\.|->|::|@|\\)[ \t]*+([A-Za-z_][A-Za-z0-9_]*+)"
    r"|\b([A-Z][A-Za-z0-9_]*+)"
    r"|\b([a-z_][A-Za-z0-9_]*+)(?=[ \t]*+[(!]|\{|" + _TYPE_ARGUMENTS + r"[ \t]*+\()"
    r"|(?:\]|\.\()\*?([a-z_][A-Za-z0-9_]*+)"
)
#: A line importing something: every name on it is a use (``from .retry import Retry``); not
#: one where the word is a package's name (Go's testify: ``require.NoError(t, c.BindXML(&obj))``).
IMPORT_LINE = re.compile(
    r"^[ \t]*(?:import|from|use|using|require|include|#[ \t]*include|extern crate|open)\b(?!\.).*$", re.M
)
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Words that look like calls (``if (``) in the C family, never a definition's name.
KEYWORDS = frozenset(
    "if else elif for while do switch case break continue return try catch finally throw "
    "raise except with as in is not and or def func fn function class struct enum interface "
    "impl const let var static public private protected self this super None True False true "
    "false null nil void int char long float double bool pass".split()
)


def blank_kinds(language) -> list[str]:
    """The node kinds of a grammar whose text is prose, not code: its comments, and the
    contents of its strings (their fragments where the grammar has them, so that an
    interpolation stays code; the whole literal where it has not)."""
    kinds = [language.node_kind_for_id(i) for i in range(language.node_kind_count) if language.node_kind_is_named(i)]
    comments = [k for k in kinds if "comment" in k and "marker" not in k]
    contents = [k for k in kinds if "string" in k and ("content" in k or "fragment" in k)]
    if not contents:
        contents = [k for k in kinds if k.endswith(("string", "string_literal"))]
    return sorted(set(comments + contents))


def reference_patterns(language) -> list[str]:
    """The patterns capturing a grammar's prose (``@blank``) and import paths (``@module``)
    that this grammar knows."""
    from tree_sitter import Query

    valid = []
    for pattern in [f"({k}) @blank" for k in blank_kinds(language)] + list(IMPORT_STRINGS):
        try:
            Query(language, pattern)
        except Exception:
            continue
        valid.append(pattern)
    return valid


def reference_query(language) -> Query | None:
    """The query of :func:`reference_patterns`."""
    from tree_sitter import Query

    valid = reference_patterns(language)
    return Query(language, "\n".join(valid)) if valid else None


def code_lines(source: bytes, blanks: list[Node], modules: list[Node]) -> tuple[list[str], list[tuple[int, str]]]:
    """The file's lines with the ``blanks`` (its comments and string contents, captured by
    :func:`reference_query`'s patterns) blanked, newlines kept so rows stay, and ``(row,
    module part)`` for the parts of each import path in ``modules`` (0-based rows)."""
    code = bytearray(source)
    for blank in blanks:
        s, e = blank.start_byte, blank.end_byte
        code[s:e] = source[s:e].translate(_TO_SPACE)
    parts: list[tuple[int, str]] = []
    for module in modules:
        text = source[module.start_byte : module.end_byte].decode("utf-8", "replace")
        row = module.start_point[0]
        parts.extend((row, part) for part in NAME.findall(text) if len(part) > 1)
    return code.decode("utf-8", "replace").split("\n"), parts


_TO_SPACE = bytes(10 if b == 10 else 32 for b in range(256))


#: Marks a name a chunk defines, among the names it uses (``=sleep_for``): one index of
#: names answers both who uses a name and who defines it, nested definitions included (a
#: chunk's ``symbol`` names only its outermost ones: a class packed with its methods).
DEFINES = "="
#: Marks an instance attribute a chunk sets (``self.writer = …``, ``this.writer = …``,
#: ``$this->writer = …``): not a definition to go to, but where a ``.writer`` in that file
#: resolves, rather than to another class's ``writer`` method or property.
SETS = "."
#: Marks a name an import names (on an import line, or a part of an import's path string):
#: which modules a file imports, what resolution weighs first after its own file.
IMPORTS = "^"
#: The words an import line starts with; a chunk holding none has no import line to read.
_IMPORT_WORDS = ("import", "from", "use", "using", "require", "include", "extern", "open")
_IMPORT_FIRST = frozenset(w[0] for w in _IMPORT_WORDS) | {"#"}
_SETTERS = tuple(
    (literal, re.compile(re.escape(literal) + r"[ \t]*+([A-Za-z_][A-Za-z0-9_]*+)[ \t]*+(?::[^=\n]*)?=(?!=)"))
    for literal in ("self.", "this.", "$this->")
)


def blank_definitions(code: list[str], defs: list) -> list[tuple[int, str]]:
    """Blank, in ``code`` (:func:`code_lines`), each definition's own name where its header
    spells it (``def sleep_for(``, ``func Backoff(``): a definition is not a use of itself.
    Returns where each was, ``(row, name)`` (0-based)."""
    sites = []
    for d in defs:
        name = d.symbol
        if not name:
            continue
        for i in range(d.start_line - 1, min(d.end_line, d.start_line + 8, len(code))):
            at = _word_at(code[i], name)
            if at >= 0:
                code[i] = code[i][:at] + " " * len(name) + code[i][at + len(name) :]
                sites.append((i, name))
                break
    return sites


def _word_at(line: str, name: str) -> int:
    """Where ``name`` first stands as a whole word in ``line``, or -1 (a regular expression
    compiled per definition cost seconds a large build)."""
    at = line.find(name)
    while at >= 0:
        before = line[at - 1] if at else " "
        after = line[at + len(name) : at + len(name) + 1] or " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return at
        at = line.find(name, at + 1)
    return -1


#: A name of two characters or more (one letter is a loop variable, never worth an edge).
_LONG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]+")


def uses(text: str) -> list[str]:
    """The distinct names ``text`` (code, prose already blanked) spells, in order: every
    identifier but one letter long or a keyword."""
    found = dict.fromkeys(_LONG_NAME.findall(text))
    for word in KEYWORDS.intersection(found):
        del found[word]
    return list(found)


def attributes(text: str) -> list[str]:
    """The instance attributes ``text`` sets (``self.x =``, ``this.x =``, ``$this->x =``);
    each pattern starts with its literal and runs only where it occurs (one pattern for the
    three cost 15 times as much)."""
    found: list[str] = []
    for literal, pattern in _SETTERS:
        if literal in text:
            found.extend(pattern.findall(text))
    return found


def qualified_uses(text: str) -> list[tuple[str, str | None]]:
    """:func:`uses` with, for each, what qualifies it: None for a bare use, the name before
    the ``.``/``->``/``::`` of a member or qualified use (``retry`` in ``retry.Do``, ``self``
    in ``self.close``), "" when that is no name (``f().close``). A method is called on a
    receiver; a function bare, or through its module's name."""
    found = []
    for m in USE.finditer(text):
        member, cap, call, typed = m.groups()
        name = member or cap or call or typed
        if len(name) < 2 or name in KEYWORDS:
            continue
        qualifier = None
        if member and text[m.start()] != "@":  # a decorator names its function bare
            before = _QUALIFIER.search(text, max(0, m.start() - 80), m.start())
            qualifier = before.group(1) if before else ""
        found.append((name, qualifier))
    return found


_QUALIFIER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)[ \t]*$")


class FileRefs:
    """A file's names by chunk (:meth:`of`), from its code (:func:`code_lines`), its import
    paths' parts and its definitions' sites (:func:`blank_definitions`). The file's import
    lines are read once, not once per chunk."""

    def __init__(self, code: list[str], modules: list[tuple[int, str]], sites: list[tuple[int, str]]) -> None:
        self.code = code
        self.modules = sorted(modules)
        self.sites = sorted(sites)
        imports: list[tuple[int, str]] = []
        for row, line in enumerate(code):
            if line.lstrip()[:1] in _IMPORT_FIRST and IMPORT_LINE.match(line):
                imports.extend((row, n) for n in NAME.findall(line) if len(n) > 1)
        self.imports = imports

    def of(self, start_line: int, end_line: int) -> str:
        """The distinct names used on lines ``start_line..end_line`` (1-based), in order of
        first use, then the names its imports name, marked :data:`IMPORTS`, those defined
        there, marked :data:`DEFINES`, and the instance attributes set there, marked
        :data:`SETS`; space-separated."""
        text = "\n".join(self.code[start_line - 1 : end_line])
        names = uses(text)
        names.extend(IMPORTS + part for _, part in _rows(self.modules, start_line, end_line))
        names.extend(IMPORTS + name for _, name in _rows(self.imports, start_line, end_line))
        names.extend(DEFINES + name for _, name in _rows(self.sites, start_line, end_line))
        names.extend(SETS + name for name in attributes(text))
        return " ".join(dict.fromkeys(names))


def _rows(found: list[tuple[int, str]], start_line: int, end_line: int) -> list[tuple[int, str]]:
    """The entries of ``found`` (sorted by 0-based row) on lines ``start_line..end_line``."""
    return found[bisect_left(found, (start_line - 1,)) : bisect_left(found, (end_line,))]
