"""Split a file into retrievable chunks: size-budgeted definitions, or line windows.

Files in :data:`core.text.languages.TREE_SITTER_LANGUAGES` are cut along their definitions
(function, method, class, struct, trait, Markdown section …) under a budget of ``window``
lines a chunk: small neighbours are packed together, a long class is cut between its
methods, a long function into overlapping pieces that consolidation shows as one hit (see
:func:`chunk_file`). Each chunk carries the names, signatures, docstrings or leading
comments of the definitions it holds, and a breadcrumb ``path > Class > method``. Every
other text file gets overlapping line windows. :func:`definitions` is the raw tree-sitter
reading, one chunk per definition whatever its size.

Modules: :mod:`~core.chunking.specs` (what counts as a definition, per language family, with
the readers of what a grammar's fields do not say), :mod:`~core.chunking.grammars` (loading
grammars, one parser per thread), :mod:`~core.chunking.reading` (a file's definitions from
its tree: names, signatures, breadcrumbs), :mod:`~core.chunking.comments` (the comment block
above a definition), :mod:`~core.chunking.budget` (the packer) and
:mod:`~core.chunking.windows` (line windows, and why 40/10).

Throughput (``lib/python3.11/*.py``: 168 files, 4.7 MB, 132k lines; one thread): the budget
gives 4 730 chunks where plain definitions plus windows gave 12 237, in 10% less time (3.6 s
against 4.0 s, medians of three on a loaded 2-core machine; 1.37 s for the latter when it
was quiet). About half is tree-sitter parsing, a quarter the definition query, the rest
Python-side span work.
"""

from __future__ import annotations

from dataclasses import replace

from ..base.types import Chunk
from ..text.languages import language_for
from .budget import PIECE, Budget
from .comments import MAX_DOCSTRING
from .declarations import is_declaration
from .reading import MAX_SIGNATURE, safe_definitions
from .refs import IMPORT_LINE, FileRefs, blank_definitions, qualified_uses
from .specs import DEFINITION, SECTION, SPECS
from .windows import (
    DEFAULT_OVERLAP,
    DEFAULT_WINDOW,
    WINDOW,
    check_window,
    even_spans,
    line_windows,
    split_lines,
    window_chunks,
)


def chunk_file(
    path: str,
    text: str,
    *,
    window: int = DEFAULT_WINDOW,
    overlap: int = DEFAULT_OVERLAP,
    language: str | None = None,
) -> list[Chunk]:
    """The chunks of one file: size-budgeted definitions where a grammar exists, else windows.

    With a grammar, the file is cut along its syntax tree under a budget of ``window`` lines:
    neighbouring small units (definitions with their leading comments, and the code between
    them) are packed together up to the budget; a longer definition with nested definitions
    (a class) is cut the same way inside; a longer leaf definition (a long function) is split
    into ``window``-line *pieces* sharing ``overlap`` lines, each recording the whole
    definition's span in ``piece_of`` so consolidation shows them as one hit. Every
    non-blank line lies in some chunk, and no chunk is longer than ``window`` lines but for
    lines with no name or code of their own (a lone ``}``, ``package main``), folded into the
    unit beside them rather than left a unit of their own (:func:`~core.chunking.budget.fold_trivial`).
    Without a grammar (or with no definition in the file) the file gets overlapping line
    windows (see :func:`line_windows`).

    Parameters
    ----------
    path : str
        POSIX path relative to the root; used in docids and breadcrumbs.
    text : str
        The file's content. Lines are split on ``\\n`` only (as tree-sitter and editors
        count them); a trailing ``\\r`` is dropped from each line of chunk text.
    window : int
        The size budget: lines per chunk, >= 1.
    overlap : int
        Lines shared by consecutive windows and pieces, ``0 <= overlap < window``.
    language : str or None
        Language name; ``language_for(path)`` when None.

    A chunk of code that only declares (:func:`~core.chunking.declarations.is_declaration`)
    has ``declaration`` set.

    Returns
    -------
    list[Chunk]
        Sorted by ``(start_line, end_line, kind)`` with unique docids. Empty for an
        empty or whitespace-only file. Bad input (binary, syntax errors, a missing
        grammar) never raises: the file still gets its windows.

    Raises
    ------
    ValueError
        When ``window`` or ``overlap`` is out of range.
    """
    check_window(window, overlap)
    if not text.strip():
        return []
    language = language or language_for(path)
    lines = split_lines(text)
    refs: list = []  # the file's code lines and import paths, when it parses
    defs = safe_definitions(path, text, lines, language, with_text=False, refs=refs)  # the budget cuts its own
    if defs:
        spec = SPECS[language]
        chunks = Budget(path, lines, language, spec, window, overlap).chunks(defs)
    else:
        chunks = window_chunks(path, lines, language, path, 1, len(lines), window, overlap)
    if refs:
        code, modules = refs
        names = FileRefs(code, modules, blank_definitions(code, defs))
        chunks = [replace(c, refs=names.of(c.start_line, c.end_line)) for c in chunks]
    chunks.sort(key=lambda c: (c.start_line, c.end_line, c.kind))
    if language in SPECS and SPECS[language].kind != SECTION:  # code, not prose
        chunks = [replace(c, declaration=True) if is_declaration(c.text) else c for c in chunks]
    return chunks


def definitions(path: str, text: str, *, language: str | None = None) -> list[Chunk]:
    """One chunk per tree-sitter definition, nested ones included, whatever its size.

    The raw reading :func:`chunk_file` budgets: name, signature, docstring or leading comment
    and breadcrumb of every function, method, class … (Markdown: every section). Empty when
    the language has no grammar or the file does not parse into any definition.
    """
    if not text.strip():
        return []
    language = language or language_for(path)
    return safe_definitions(path, text, split_lines(text), language)


class Reading:
    """What navigation (:mod:`core.graph`) reads of a file, from one parse: its definitions (as
    :func:`definitions`, without their text) and its code, comments and strings blanked, whose
    uses of names :meth:`uses` finds on the lines asked (a file is parsed once, its uses read
    only where a question looks)."""

    __slots__ = ("code", "defs")

    def __init__(self, defs: list[Chunk], code: list[str]) -> None:
        self.defs = defs
        self.code = code

    def uses(
        self, start: int = 1, end: int | None = None, name: str | None = None
    ) -> list[tuple[int, str, str | None]]:
        """``(line, name, qualifier)`` of each use on lines ``start..end`` (1-based; of
        ``name`` only, when given), in order (:func:`core.chunking.refs.qualified_uses`: the
        qualifier is None for a bare use). An import line is where a file names what it uses,
        not a use: callers are the code that runs."""
        out = []
        last = len(self.code) if end is None else min(end, len(self.code))
        for i in range(max(start, 1), last + 1):
            line = self.code[i - 1]
            if (name is not None and name not in line) or IMPORT_LINE.match(line):
                continue
            out.extend((i, n, q) for n, q in qualified_uses(line) if name is None or n == name)
        return out


def references(path: str, text: str, *, language: str | None = None) -> Reading:
    """A file's :class:`Reading` (empty without a grammar)."""
    if not text.strip():
        return Reading([], [])
    language = language or language_for(path)
    found: list = []
    defs = safe_definitions(path, text, split_lines(text), language, with_text=False, refs=found)
    if not found:
        return Reading(defs, [])
    code, _modules = found
    blank_definitions(code, defs)
    return Reading(defs, code)


__all__ = [
    "DEFAULT_OVERLAP",
    "DEFAULT_WINDOW",
    "DEFINITION",
    "MAX_DOCSTRING",
    "MAX_SIGNATURE",
    "PIECE",
    "SECTION",
    "WINDOW",
    "Reading",
    "chunk_file",
    "definitions",
    "even_spans",
    "line_windows",
    "references",
]
