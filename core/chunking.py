"""Split a file into retrievable chunks: size-budgeted definitions, or line windows.

Files in :data:`core.languages.TREE_SITTER_LANGUAGES` are cut along their definitions
(function, method, class, struct, trait, Markdown section …) under a budget of ``window``
lines a chunk: small neighbours are packed together, a long class is cut between its
methods, a long function into overlapping pieces that consolidation shows as one hit (see
:func:`chunk_file`). Each chunk carries the names, signatures, docstrings or leading
comments of the definitions it holds, and a breadcrumb ``path > Class > method``. Every
other text file gets overlapping line windows. :func:`definitions` is the raw tree-sitter
reading, one chunk per definition whatever its size.

What counts as a definition is declared per language in ``_SPECS``; what a grammar's fields
do not say (Kotlin's and Zig's names, Elixir's ``def`` calls and ``@doc`` strings, Haskell's
signatures beside their equations, Lua's table-qualified names) is read by
:mod:`core.syntax_readers`. A C# or PHP namespace only scopes the breadcrumb; a Haskell type
signature and its equations, or the clauses of an Elixir function, are one definition.

Defaults (window 40, overlap 10). Windows were measured first on the CPython 3.11 stdlib
top level, whose 7 808 definitions have a median of 8 lines (p75 19, p90 42): 40/10 gives
4 436 windows for 132k lines (1.32x the text) and 80% of definitions lie whole inside some
window. 40/0 costs 1.00x but only 69% lie whole; 40/20 reaches 85% for 1.96x the text;
20/5 doubles the windows yet only 64% fit; 60/15 and 80/20 fit 87-91% but a median 8-line
function is then an eighth of its window, diluting BM25 and embedding scores. The budget
keeps 40 and makes "lies whole" true of every definition up to 40 lines; how it compares
with plain windows and plain definitions per arm is in the README (issue #5, step 2).

Throughput (``lib/python3.11/*.py``: 168 files, 4.7 MB, 132k lines; one thread): the budget
gives 4 730 chunks where plain definitions plus windows gave 12 237, in 10% less time (3.6 s
against 4.0 s, medians of three on a loaded 2-core machine; 1.37 s for the latter when it
was quiet). About half is tree-sitter parsing, a quarter the definition query, the rest
Python-side span work.

Parsers: ``Parser(language)`` costs ~1 µs with the ``Language`` cached (``get_parser``
~5-12 µs) against milliseconds of parsing, so one parser per thread and language is kept
in a ``threading.local``: never shared between threads, never rebuilt per file.
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ranklens.core import syntax_readers as readers
from ranklens.core.languages import TREE_SITTER_LANGUAGES, language_for
from ranklens.core.types import Chunk

if TYPE_CHECKING:  # tree_sitter is imported lazily: a broken install still gets windows
    from tree_sitter import Node, Parser, QueryCursor

# Why 40/10: see "Defaults" in the module docstring (chunk count vs whole-definition coverage).
DEFAULT_WINDOW = 40  # lines per window
DEFAULT_OVERLAP = 10  # lines shared by consecutive windows

MAX_SIGNATURE = 200
MAX_DOCSTRING = 500
# How far up a block comment may reach: bounds the work on files of unterminated `*/`.
_MAX_COMMENT_LINES = 200
# Nodes with more children than this are queried child by child (see _captures).
_WIDE = 256

WINDOW = "window"
DEFINITION = "definition"
SECTION = "section"


# --------------------------------------------------------------------------- languages


@dataclass(frozen=True)
class _Spec:
    """What counts as a definition in one grammar, and how to read it."""

    #: Node types that are definitions (matched anywhere in the tree).
    defs: tuple[str, ...]
    #: Extra query patterns capturing ``@def`` (definitions that depend on a child).
    patterns: tuple[str, ...] = ()
    #: Node types that wrap one definition and belong to its span (decorators, export).
    wrappers: frozenset[str] = frozenset()
    #: Sibling node types just above a definition that belong to its span (Rust attributes).
    attributes: frozenset[str] = frozenset()
    #: Line-comment markers for the comment block above a definition.
    line_comments: tuple[str, ...] = ("//",)
    #: Opening and closing marker of block comments, None when the language has none.
    block_comment: tuple[str, str] | None = ("/*", "*/")
    kind: str = DEFINITION
    #: The ``tree_sitter_language_pack`` grammar, when its name is not the language's.
    grammar: str = ""
    #: Node types that only scope the breadcrumb (a C# namespace): no chunk of their own.
    scopes: frozenset[str] = frozenset()
    #: Node type -> the parent types it must have to count (Kotlin members, not locals).
    parents: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #: Child types that are the body when the grammar has no ``body`` field.
    bodies: frozenset[str] = frozenset()
    #: Anonymous tokens just before a definition that belong to its signature (Zig ``pub``).
    modifiers: frozenset[str] = frozenset()
    #: Sibling node types just below a definition that belong to its span (a Kotlin
    #: property's ``get() = …`` on the next line is the property's sibling, not its child).
    trailers: frozenset[str] = frozenset()
    #: Lines that start and end so are passed over when reading the comment above a
    #: definition, and belong to its span (Haskell's ``{-# INLINE f #-}``).
    passed_over: tuple[str, str] | None = None
    #: Consecutive same-name definitions are one (Haskell equations, Elixir clauses).
    clauses: bool = False
    #: Characters trimmed from the end of a one-line signature.
    signature_trim: str = "{"
    #: Readers for what fields alone do not say (see :mod:`core.syntax_readers`).
    name: Callable[[Node, bytes], tuple[str, tuple[str, ...]]] | None = None
    header: Callable[[Node, bytes], int | None] | None = None  # where the signature ends
    docstring: Callable[[Node, bytes], str] | None = None
    clean_doc: Callable[[str], str] | None = None
    is_attribute: Callable[[Node, bytes], bool] | None = None


_JS_DEFS = (
    "function_declaration",
    "generator_function_declaration",
    "class_declaration",
    "method_definition",
)
_JS_FUNCTION_VALUE = "[(arrow_function) (function_expression) (generator_function)]"
_JS_PATTERNS = (
    f"(variable_declarator value: {_JS_FUNCTION_VALUE}) @def",
    f"(field_definition value: {_JS_FUNCTION_VALUE}) @def",
    f"(public_field_definition value: {_JS_FUNCTION_VALUE}) @def",
)
_JS_WRAPPERS = frozenset({"export_statement", "lexical_declaration", "variable_declaration"})
_TS_DEFS = _JS_DEFS + (
    "abstract_class_declaration",
    "interface_declaration",
    "type_alias_declaration",
    "enum_declaration",
    "internal_module",
    "module",
)
_TS_WRAPPERS = _JS_WRAPPERS | {"ambient_declaration", "expression_statement"}
_C_DEFS = ("function_definition", "struct_specifier", "union_specifier", "enum_specifier")

# Member-level only: a Kotlin/Swift property or Scala val inside a function body is a local.
_KOTLIN_MEMBERS = frozenset({"source_file", "class_body"})
_SCALA_MEMBERS = frozenset({"compilation_unit", "template_body", "with_template_body"})
_SWIFT_MEMBERS = frozenset({"source_file", "class_body", "protocol_body"})
_ZIG_CONTAINER = "(Decl (VarDecl (ErrorUnionExpr (SuffixExpr [(ContainerDecl) (ErrorSetDecl)])))) @def"
_ELIXIR_PATTERNS = (
    "(call target: (identifier) @_kind (#any-of? @_kind {})) @def".format(
        " ".join(f'"{k}"' for k in readers.ELIXIR_DEFINERS)
    ),
    "(call target: (identifier) @_kind (#any-of? @_kind {}) (do_block)) @def".format(
        " ".join(f'"{k}"' for k in readers.ELIXIR_TESTS)
    ),
)
_LUA_FUNCTION = "(function_definition)"

_SPECS: dict[str, _Spec] = {
    "python": _Spec(
        defs=("function_definition", "class_definition"),
        wrappers=frozenset({"decorated_definition"}),
        line_comments=("#",),
        block_comment=None,
        signature_trim=":",
        docstring=lambda node, source: _python_docstring(node, source),  # defined below
    ),
    "javascript": _Spec(defs=_JS_DEFS, patterns=_JS_PATTERNS, wrappers=_JS_WRAPPERS),
    "typescript": _Spec(defs=_TS_DEFS, patterns=_JS_PATTERNS, wrappers=_TS_WRAPPERS),
    "tsx": _Spec(defs=_TS_DEFS, patterns=_JS_PATTERNS, wrappers=_TS_WRAPPERS),
    "go": _Spec(
        defs=("function_declaration", "method_declaration", "type_spec", "type_alias"),
        wrappers=frozenset({"type_declaration"}),
    ),
    "rust": _Spec(
        defs=(
            "function_item",
            "impl_item",
            "struct_item",
            "enum_item",
            "union_item",
            "trait_item",
            "mod_item",
            "macro_definition",
        ),
        attributes=frozenset({"attribute_item"}),
    ),
    "java": _Spec(
        defs=(
            "class_declaration",
            "interface_declaration",
            "enum_declaration",
            "record_declaration",
            "annotation_type_declaration",
            "method_declaration",
            "constructor_declaration",
            "compact_constructor_declaration",
        ),
    ),
    "c": _Spec(defs=_C_DEFS, wrappers=frozenset({"type_definition"})),
    "cpp": _Spec(
        defs=_C_DEFS + ("class_specifier", "namespace_definition"),
        wrappers=frozenset({"type_definition", "template_declaration"}),
    ),
    "ruby": _Spec(
        defs=("class", "module", "method", "singleton_method"),
        line_comments=("#",),
        block_comment=None,
    ),
    "markdown": _Spec(defs=("section",), line_comments=(), block_comment=None, kind=SECTION),
    "csharp": _Spec(
        defs=(
            "class_declaration",
            "struct_declaration",
            "interface_declaration",
            "record_declaration",
            "record_struct_declaration",
            "enum_declaration",
            "delegate_declaration",
            "method_declaration",
            "constructor_declaration",
            "destructor_declaration",
            "property_declaration",
            "indexer_declaration",
            "event_declaration",
            "operator_declaration",
            "conversion_operator_declaration",
            "local_function_statement",
            "namespace_declaration",
            "file_scoped_namespace_declaration",
        ),
        scopes=frozenset({"namespace_declaration", "file_scoped_namespace_declaration"}),
        bodies=frozenset({"accessor_list"}),
        signature_trim="{;",
        name=readers.csharp_name,
        clean_doc=readers.csharp_clean_doc,
    ),
    "kotlin": _Spec(
        defs=(
            "class_declaration",
            "object_declaration",
            "companion_object",
            "function_declaration",
            "secondary_constructor",
            "type_alias",
            "property_declaration",
        ),
        parents={"property_declaration": _KOTLIN_MEMBERS},
        bodies=frozenset({"class_body", "enum_class_body", "function_body"}),
        trailers=frozenset({"getter", "setter"}),
        signature_trim="{=",
        name=readers.kotlin_name,
    ),
    "scala": _Spec(
        defs=(
            "class_definition",
            "object_definition",
            "trait_definition",
            "enum_definition",
            "package_object",
            "function_definition",
            "function_declaration",
            "val_definition",
            "var_definition",
            "val_declaration",
            "type_definition",
            "given_definition",
            "extension_definition",
        ),
        parents={
            "val_definition": _SCALA_MEMBERS,
            "var_definition": _SCALA_MEMBERS,
            "val_declaration": _SCALA_MEMBERS,
        },
        bodies=frozenset({"template_body"}),
        signature_trim="{=:",
        name=readers.scala_name,
    ),
    "swift": _Spec(
        defs=(
            "class_declaration",  # class, struct, enum, extension, actor
            "protocol_declaration",
            "function_declaration",
            "protocol_function_declaration",
            "init_declaration",
            "deinit_declaration",
            "subscript_declaration",
            "typealias_declaration",
            "property_declaration",
            "protocol_property_declaration",
        ),
        parents={"property_declaration": _SWIFT_MEMBERS},
        bodies=frozenset(
            {"computed_property", "function_body", "class_body", "protocol_body", "enum_class_body",
             "protocol_property_requirements"}
        ),
        name=readers.swift_name,
    ),
    "php": _Spec(
        defs=(
            "class_declaration",
            "interface_declaration",
            "trait_declaration",
            "enum_declaration",
            "function_definition",
            "method_declaration",
            "namespace_definition",
        ),
        scopes=frozenset({"namespace_definition"}),
        line_comments=("//", "#"),
        signature_trim="{;",
    ),
    "haskell": _Spec(
        defs=(
            "signature",
            "function",
            "bind",
            "data_type",
            "newtype",
            "type_synomym",  # sic: the grammar's spelling
            "type_family",
            "data_family",
            "class",
            "instance",
            "pattern_synonym",
        ),
        parents={t: readers.HASKELL_DECLARATIONS for t in ("signature", "function", "bind")},
        line_comments=("--",),
        block_comment=("{-", "-}"),
        passed_over=("{-#", "#-}"),
        clauses=True,
        signature_trim="{=",
        name=readers.haskell_name,
        header=readers.haskell_header,
        clean_doc=readers.haskell_clean_doc,
    ),
    "elixir": _Spec(
        defs=(),
        patterns=_ELIXIR_PATTERNS,
        attributes=frozenset({"unary_operator"}),
        line_comments=("#",),
        block_comment=None,
        clauses=True,
        name=readers.elixir_name,
        header=readers.elixir_header,
        docstring=readers.elixir_docstring,
        is_attribute=readers.elixir_is_attribute,
    ),
    "lua": _Spec(
        defs=("function_declaration",),
        patterns=(
            f"(assignment_statement (variable_list . name: (_)) (expression_list . value: {_LUA_FUNCTION})) @def",
            f"(field name: (identifier) value: {_LUA_FUNCTION}) @def",
        ),
        wrappers=frozenset({"variable_declaration"}),  # local f = function … end
        line_comments=("--",),
        block_comment=("--[[", "]]"),
        name=readers.lua_name,
        header=readers.lua_header,
    ),
    "zig": _Spec(
        defs=("TestDecl",),
        patterns=("(Decl (FnProto)) @def", _ZIG_CONTAINER),
        modifiers=frozenset({"pub", "export", "extern", "inline", "noinline"}),
        block_comment=None,
        signature_trim="{;",
        name=readers.zig_name,
        header=readers.zig_header,
    ),
    "shell": _Spec(
        defs=("function_definition",),
        grammar="bash",
        line_comments=("#",),
        block_comment=None,
    ),
}

# Wrappers whose first line is not the definition's header (Python decorators).
_NOT_SIGNATURE = frozenset({"decorated_definition"})
# C/C++ declarator nodes that hold the defined name.
_C_NAMES = frozenset(
    {
        "identifier",
        "field_identifier",
        "qualified_identifier",
        "destructor_name",
        "operator_name",
        "type_identifier",
        "operator_cast",
    }
)
# Definitions whose body is the function value of one of their fields.
_FUNCTION_HOLDERS = frozenset(
    {"variable_declarator", "field_definition", "public_field_definition"}
)
# Definitions that are only declarations without a body are not worth a chunk.
_NEEDS_BODY = frozenset(
    {"struct_specifier", "union_specifier", "enum_specifier", "class_specifier", "mod_item"}
)


class _Grammar:
    """A language's tree-sitter ``Language`` and compiled definition ``Query``."""

    def __init__(self, name: str, spec: _Spec) -> None:
        from tree_sitter import Query  # deferred: a missing wheel must not break windows
        from tree_sitter_language_pack import get_language

        self.name = name
        self.spec = spec
        self.language = get_language(spec.grammar or name)  # type: ignore[arg-type]
        patterns = [f"({t}) @def" for t in spec.defs] + list(spec.patterns)
        valid = []
        for p in patterns:  # drop patterns a grammar version does not know, keep the rest
            try:
                Query(self.language, p)
            except Exception:
                continue
            valid.append(p)
        self.query = Query(self.language, "\n".join(valid)) if valid else None


_grammars: dict[str, _Grammar | None] = {}
_grammars_lock = threading.Lock()
_local = threading.local()


def _grammar(language: str) -> _Grammar | None:
    """The cached grammar of a language, or None when it has no definition support."""
    if language in _grammars:
        return _grammars[language]
    with _grammars_lock:
        if language not in _grammars:
            spec = _SPECS.get(language)
            grammar = None
            if spec is not None and language in TREE_SITTER_LANGUAGES:
                try:
                    grammar = _Grammar(language, spec)
                except Exception:  # grammar missing from the installed pack
                    grammar = None
            _grammars[language] = grammar
    return _grammars[language]


def _parser(grammar: _Grammar) -> Parser:
    """This thread's parser for a grammar (a tree-sitter Parser is not thread-safe)."""
    parsers = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    parser = parsers.get(grammar.name)
    if parser is None:
        from tree_sitter import Parser

        parser = parsers[grammar.name] = Parser(grammar.language)
    return parser


# ------------------------------------------------------------------------------ public


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
    non-blank line lies in some chunk, and no chunk is longer than ``window`` lines.
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
    _check_window(window, overlap)
    if not text.strip():
        return []
    language = language or language_for(path)
    lines = _split_lines(text)
    defs = _safe_definitions(path, text, lines, language, with_text=False)  # the budget cuts its own
    if defs:
        spec = _SPECS[language]
        chunks = _Budget(path, lines, language, spec, window, overlap).chunks(defs)
    else:
        chunks = _windows(path, lines, language, path, 1, len(lines), window, overlap)
    chunks.sort(key=lambda c: (c.start_line, c.end_line, c.kind))
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
    return _safe_definitions(path, text, _split_lines(text), language)


def _check_window(window: int, overlap: int) -> None:
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    if not 0 <= overlap < window:
        raise ValueError(f"overlap must be in [0, window), got {overlap} for window {window}")


def _safe_definitions(path: str, text: str, lines: list[str], language: str, with_text: bool = True) -> list[Chunk]:
    grammar = _grammar(language)
    if grammar is None or grammar.query is None:
        return []
    try:
        return _definitions(path, text, lines, language, grammar, with_text)
    except Exception:  # a grammar bug must not cost the file its windows
        return []


def _windows(
    path: str, lines: list[str], language: str, context: str, lo: int, hi: int, window: int, overlap: int,
    even: bool = False,
) -> list[Chunk]:
    """Line windows over lines ``lo..hi`` (1-based, inclusive); ``even``: see :func:`even_spans`."""
    out = []
    spans = even_spans(hi - lo + 1, window, overlap) if even else line_windows(hi - lo + 1, window, overlap)
    for start, end in spans:
        start, end = start + lo - 1, end + lo - 1
        out.append(
            Chunk(
                path=path,
                start_line=start,
                end_line=end,
                text="\n".join(lines[start - 1 : end]),
                language=language,
                context=context,
                kind=WINDOW,
            )
        )
    return out


PIECE = "piece"
#: Caps on the joined signatures / docstrings of a chunk holding several definitions.
_MAX_SIGNATURES = 4 * MAX_SIGNATURE
_MAX_DOCSTRINGS = 2 * MAX_DOCSTRING


@dataclass
class _Unit:
    """A definition in the nesting tree the budget walks (lines 1-based, comment included)."""

    start: int
    end: int
    chunk: Chunk
    children: list["_Unit"]


class _Budget:
    """Cuts one file along its definitions under a budget of ``window`` lines a chunk.

    Why (issue #5, measured in the README): one chunk per definition lets tiny ``__init__``s
    win on cosine while long functions lose their middle; 40-line windows cut functions in
    two. Packing small neighbours and splitting only what is too long keeps every chunk
    near the budget and every short definition whole.
    """

    def __init__(self, path: str, lines: list[str], language: str, spec: _Spec, window: int, overlap: int):
        self.path, self.lines, self.language, self.spec = path, lines, language, spec
        self.window, self.overlap = window, overlap
        self.out: list[Chunk] = []

    def chunks(self, defs: list[Chunk]) -> list[Chunk]:
        self._pack(1, len(self.lines), self._tree(defs), self.path, None)
        return self.out

    def _tree(self, defs: list[Chunk]) -> list[_Unit]:
        """Definitions nested by span; each starts at the comment block right above it."""
        roots: list[_Unit] = []
        stack: list[_Unit] = []
        for d in sorted(defs, key=lambda c: (c.start_line, -c.end_line)):
            while stack and not (stack[-1].chunk.start_line <= d.start_line and d.end_line <= stack[-1].end):
                stack.pop()
            top = _comment_block(self.lines, d.start_line - 1, self.spec)[0] + 1
            unit = _Unit(top, d.end_line, d, [])
            (stack[-1].children if stack else roots).append(unit)
            stack.append(unit)
        return roots

    def _blank(self, lo: int, hi: int) -> bool:
        return all(not self.lines[i - 1].strip() for i in range(lo, hi + 1))

    def _pack(self, lo: int, hi: int, units: list[_Unit], scope: str, header: _Unit | None) -> None:
        """Cover lines ``lo..hi``, whose definitions are ``units``, with chunks in budget.

        ``scope`` is the breadcrumb of what encloses the range; ``header`` the definition whose
        body is being cut (its header lines go to the first chunk, with its name).
        """
        # Lay the range out as alternating stretches of code and definitions.
        parts: list[tuple[int, int, _Unit | None]] = []
        cursor = lo
        for u in units:
            start = max(u.start, cursor)
            if u.end < start:
                continue  # folded into its predecessor (two declarators sharing a line)
            if start > cursor:
                parts.append((cursor, start - 1, None))
            parts.append((start, u.end, u))
            cursor = u.end + 1
        if cursor <= hi:
            parts.append((cursor, hi, None))

        run: list[tuple[int, int, _Unit | None]] = []
        for start, end, unit in parts:
            if self._blank(start, end):
                if run:
                    run.append((start, end, unit))
                continue
            if end - start + 1 > self.window:
                header = self._emit(run, scope, header)
                run = []
                if unit is None:
                    self._long_code(start, end, scope, header)
                    header = None  # its first window carries the header's name
                elif unit.children:
                    self._pack(start, end, unit.children, unit.chunk.context, unit)
                else:
                    self._pieces(start, end, unit)
            elif run and end - run[0][0] + 1 <= self.window:
                run.append((start, end, unit))
            else:
                header = self._emit(run, scope, header)
                run = [(start, end, unit)]
        self._emit(run, scope, header)

    def _emit(self, run: list[tuple[int, int, _Unit | None]], scope: str, header: _Unit | None) -> _Unit | None:
        """One chunk of a packed run; returns the header still waiting for its chunk."""
        if not run:
            return header
        start, end = run[0][0], run[-1][1]
        while end > start and not self.lines[end - 1].strip():
            end -= 1  # blank lines between chunks belong to neither
        defs = [u.chunk for _, _, u in run if u is not None]
        named = ([header.chunk] if header is not None else []) + defs
        if header is not None:
            context = _join_names(header.chunk.context, defs)
        else:
            context = _join_names(scope, defs)
        if named:
            self.out.append(
                self._chunk(
                    start,
                    end,
                    context=context,
                    kind=self.spec.kind,
                    symbol=" ".join(c.symbol for c in named),
                    signature=_capped("\n".join(c.signature for c in named if c.signature), _MAX_SIGNATURES),
                    docstring=_capped("\n\n".join(c.docstring for c in named if c.docstring), _MAX_DOCSTRINGS),
                )
            )
        else:
            self.out.extend(_windows(self.path, self.lines, self.language, context, start, end, self.window, self.overlap))
        return None

    def _long_code(self, start: int, end: int, scope: str, header: _Unit | None) -> None:
        """Code between definitions longer than the budget: windows (the first one carries
        the pending header's name)."""
        windows = _windows(self.path, self.lines, self.language, scope, start, end, self.window, self.overlap, True)
        if header is not None:
            h = header.chunk
            windows[0] = replace(
                windows[0], kind=self.spec.kind, symbol=h.symbol, signature=h.signature, docstring=h.docstring
            )
        self.out.extend(windows)

    def _pieces(self, start: int, end: int, unit: _Unit) -> None:
        """A leaf definition over budget: overlapping pieces that all name it. Only the first
        is a symbol document (see :func:`core.arms.symbols.include`)."""
        d = unit.chunk
        for s, e in even_spans(end - start + 1, self.window, self.overlap):
            s, e = s + start - 1, e + start - 1
            while e > s and not self.lines[e - 1].strip():
                e -= 1
            self.out.append(
                self._chunk(
                    s,
                    e,
                    context=d.context,
                    kind=PIECE,
                    symbol=d.symbol,
                    signature=d.signature,
                    docstring=d.docstring if s == start else "",
                    piece_of=(start, end),
                )
            )

    def _chunk(self, start: int, end: int, **fields) -> Chunk:
        """A chunk of lines ``start..end`` of this file with the given fields."""
        return Chunk(
            path=self.path,
            start_line=start,
            end_line=end,
            text="\n".join(self.lines[start - 1 : end]),
            language=self.language,
            **fields,
        )


def _join_names(scope: str, defs: list[Chunk]) -> str:
    """Breadcrumb of a packed chunk: one definition reads as its own, several as ``a, b``."""
    if len(defs) == 1 and defs[0].context.startswith(scope):
        return defs[0].context
    if not defs:
        return scope
    # Definitions sharing a scope the packing does not know of (a C# namespace, a Go
    # receiver) keep it: `path > Geometry > A, B`, not `path > A, B`.
    parents = {c.context[: -len(c.symbol) - 3] if c.context.endswith(" > " + c.symbol) else scope for c in defs}
    if len(parents) == 1:
        parent = parents.pop()
        if parent.startswith(scope):
            scope = parent
    return _capped(scope + " > " + ", ".join(c.symbol for c in defs), MAX_SIGNATURE)


def _capped(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def line_windows(
    n_lines: int, window: int = DEFAULT_WINDOW, overlap: int = DEFAULT_OVERLAP
) -> list[tuple[int, int]]:
    """The 1-based inclusive ``(start, end)`` line spans of the windows over a file.

    Windows start at lines ``1, 1 + step, 1 + 2*step, …`` with ``step = window - overlap``
    (predictable docids, and every pair of neighbours shares exactly ``overlap`` lines).
    The last window is cut at the last line, and none starts once a window has reached
    the end, so there is no window lying wholly inside its predecessor.

    Parameters
    ----------
    n_lines : int
        Number of lines in the file.
    window : int
        Lines per window, >= 1.
    overlap : int
        Lines shared by consecutive windows, ``0 <= overlap < window``.

    Returns
    -------
    list[tuple[int, int]]
        Empty when ``n_lines`` is 0.
    """
    _check_window(window, overlap)
    step = window - overlap
    spans = []
    start = 1
    while start <= n_lines:
        end = min(start + window - 1, n_lines)
        spans.append((start, end))
        if end == n_lines:
            break
        start += step
    return spans


def even_spans(n_lines: int, window: int = DEFAULT_WINDOW, overlap: int = DEFAULT_OVERLAP) -> list[tuple[int, int]]:
    """As few spans of at most ``window`` lines as cover ``n_lines``, of near-equal length,
    neighbours sharing exactly ``overlap`` lines.

    Used to cut one long definition: :func:`line_windows` would end on a stub (41 lines give
    1-40 and 31-41, whose last piece adds one line); this gives 1-25 and 16-41.
    """
    _check_window(window, overlap)
    if n_lines <= window:
        return [(1, n_lines)] if n_lines > 0 else []
    step = window - overlap
    count = -(-(n_lines - overlap) // step)  # ceil: pieces needed at full size
    spans = []
    for i in range(count):
        start = 1 + (i * (n_lines - overlap)) // count
        end = overlap + ((i + 1) * (n_lines - overlap)) // count
        spans.append((start, min(end, n_lines)))
    return spans


# ------------------------------------------------------------------------- definitions


def _split_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline ending the last line does not start another
    if "\r" not in text:
        return lines
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _end_row(node: Node, lines: list[str] | None = None) -> int:
    """0-based last row a node really occupies: a node ending at column 0, or (given the
    file's ``lines``) on the indentation of its last row, ends above (tree-sitter-scala
    ends an indented block at the next statement's indentation)."""
    row, col = node.end_point
    if row > node.start_point[0]:
        if col == 0 or (lines is not None and row < len(lines) and not lines[row][:col].strip()):
            return row - 1
    return row


def _text(source: bytes, start: int, end: int) -> str:
    return source[start:end].decode("utf-8", errors="replace")


@dataclass
class _Def:
    node: Node  # the definition node proper (name, body, nesting)
    span_node: Node  # outermost wrapper: where the span starts and ends
    sig_node: Node  # where the signature starts
    start_row: int  # 0-based, attributes included
    end_row: int
    attribute_rows: frozenset[int]  # rows of attributes, skipped when reading the comment
    name: str
    scope: tuple[str, ...]  # extra breadcrumb before the name (Go receiver, C++ K::)
    sig_start: int  # byte where the signature starts: sig_node's, or a modifier's before it


def _definitions(
    path: str, text: str, lines: list[str], language: str, grammar: _Grammar, with_text: bool = True
) -> list[Chunk]:
    from tree_sitter import QueryCursor

    source = text.encode("utf-8", errors="surrogatepass")
    tree = _parser(grammar).parse(source)
    spec = grammar.spec
    captured = _captures(tree.root_node, grammar, QueryCursor)

    defs: list[_Def] = []
    for node in captured:
        d = _read_definition(node, source, lines, spec, language)
        if d is not None:
            defs.append(d)
    # Outer before inner, so a stack of open definitions gives each its ancestors.
    defs.sort(key=lambda d: (d.node.start_byte, -d.node.end_byte))

    chunks: list[Chunk] = []
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[int, int, tuple[str, ...]]] = []  # (start_byte, end_byte, crumbs)
    prefix: tuple[str, ...] = ()  # `namespace A.B;` (C#, PHP) scopes every definition after it
    last_at: dict[str, int] = {}  # breadcrumb -> index of its latest chunk (clauses join it)
    for d in defs:
        start_b, end_b = d.node.start_byte, d.node.end_byte
        while stack and not (stack[-1][0] <= start_b and end_b <= stack[-1][1]):
            stack.pop()
        crumbs = (stack[-1][2] if stack else prefix) + d.scope + (d.name,)
        if d.node.type in spec.scopes and d.node.child_by_field_name("body") is None:
            prefix = (stack[-1][2] if stack else ()) + d.scope + (d.name,)
            continue
        stack.append((start_b, end_b, crumbs))
        if d.node.type in spec.scopes:
            continue  # a breadcrumb, not a chunk: its definitions are chunked on their own

        start_line = d.start_row + 1
        end_line = min(d.end_row + 1, len(lines))
        while end_line > start_line and not lines[end_line - 1].strip():
            end_line -= 1  # a Markdown section's trailing blank lines add nothing
        context = " > ".join((path,) + crumbs)
        if spec.clauses:
            i = last_at.get(context)
            if i is not None and _next_clause(chunks[i], d.name, start_line, lines, spec):
                # One more equation (Haskell) or clause (Elixir) of the definition before it.
                last = chunks[i]
                end_line = max(end_line, last.end_line)
                seen.add((last.start_line, end_line))
                text_ = "\n".join(lines[last.start_line - 1 : end_line]) if with_text else ""
                chunks[i] = replace(last, end_line=end_line, text=text_)
                continue
        if start_line > end_line or (start_line, end_line) in seen:
            continue  # same span as an enclosing definition: the outer one says more
        seen.add((start_line, end_line))
        last_at[context] = len(chunks)

        if spec.kind == SECTION:
            signature, docstring = lines[start_line - 1].strip()[:MAX_SIGNATURE], ""
        else:
            signature = _signature(d, source, spec, language)
            docstring = spec.docstring(d.node, source) if spec.docstring is not None else ""
            if not docstring:
                top = d.span_node.start_point[0]
                docstring = _comment_above(lines, top, spec, d.attribute_rows)
            if docstring and spec.clean_doc is not None:
                docstring = spec.clean_doc(docstring)
        chunks.append(
            Chunk(
                path=path,
                start_line=start_line,
                end_line=end_line,
                # Without text for the budget: joining every class's lines cost ~0.5 s a 50k-chunk build.
                text="\n".join(lines[start_line - 1 : end_line]) if with_text else "",
                language=language,
                context=context,
                kind=spec.kind,
                symbol=d.name,
                signature=signature,
                docstring=docstring,
            )
        )
    return chunks


def _next_clause(last: Chunk, name: str, start_line: int, lines: list[str], spec: _Spec) -> bool:
    """Whether a definition starting at ``start_line`` continues ``last`` (of the same breadcrumb):
    the same name, with only blank or comment lines between them."""
    if last.symbol != name or start_line <= last.end_line:
        return False
    for i in range(last.end_line, start_line - 1):  # the lines between, 0-based
        s = lines[i].strip()
        if s and not s.startswith(spec.line_comments):
            return False
    return True


def _captures(root: Node, grammar: _Grammar, cursor_type: type[QueryCursor]) -> list[Node]:
    """The ``@def`` captures under ``root``, querying wide nodes child by child.

    tree-sitter's query cursor is quadratic in the width of some nodes: 20 000 ``(`` in a
    row (one ERROR node with 20 000 children) take ~1 s to query, 50 000 ``{`` in Rust
    ~5 s, versus ~30 ms and ~75 ms when each child is queried on its own.
    """
    defs = grammar.spec.defs
    found: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.child_count <= _WIDE:
            found.extend(cursor_type(grammar.query).captures(node).get("def", ()))
        else:
            if node.type in defs:  # patterns with conditions never match wide nodes
                found.append(node)
            stack.extend(node.children)
    return found


def _read_definition(node: Node, source: bytes, lines: list[str], spec: _Spec, language: str) -> _Def | None:
    """Name, span and signature anchor of one captured node; None when not worth a chunk."""
    if node.type in _NEEDS_BODY and node.child_by_field_name("body") is None:
        return None  # `struct S;`, `mod m;`, a struct used as a type in a declaration
    if spec.parents:
        allowed = spec.parents.get(node.type)
        if allowed is not None and (node.parent is None or node.parent.type not in allowed):
            return None  # a local (a property inside a function body), not a member
    scope: tuple[str, ...] = ()
    if spec.name is not None:
        name, scope = spec.name(node, source)
        name = _clean_name(name)
    else:
        name = _name(node, source, language)
    if language in ("c", "cpp") and node.type == "function_definition" and "::" in name:
        *outer, name = name.split("::")  # `int K::n()` reads as `K > n`
        scope = tuple(p for p in outer if p)
    elif language == "go" and node.type == "method_declaration":
        receiver = _go_receiver(node, source)
        scope = (receiver,) if receiver else ()
    if not name and node.type in ("struct_specifier", "union_specifier", "enum_specifier"):
        parent = node.parent
        if parent is not None and parent.type == "type_definition":  # typedef struct {…} T;
            declarator = parent.child_by_field_name("declarator")
            name = _text(source, declarator.start_byte, declarator.end_byte) if declarator else ""
    if not name:
        return None  # anonymous (namespace {}, export default class {}): not a symbol

    span_node = sig_node = node
    while True:
        parent = span_node.parent
        if parent is None or parent.type not in spec.wrappers:
            break
        # A wrapper belongs to one definition only: `const a = () => 1, b = 2;` keeps
        # the declarator's own span.
        if sum(1 for c in parent.named_children if c.type == span_node.type) != 1:
            break
        span_node = parent
        if parent.type not in _NOT_SIGNATURE:
            sig_node = parent

    start_row = span_node.start_point[0]
    attribute_rows: frozenset[int] = frozenset()
    if spec.attributes:
        start_row, attribute_rows = _attributes_above(span_node, spec, source)
    end_row = _end_row(span_node, lines)
    if spec.trailers:
        nxt = span_node.next_sibling
        while nxt is not None and nxt.type in spec.trailers:
            end_row = _end_row(nxt)
            nxt = nxt.next_sibling
    sig_start = sig_node.start_byte
    if spec.modifiers:  # Zig's `pub` is a token beside the declaration, not inside it
        prev = span_node.prev_sibling
        while prev is not None and prev.type in spec.modifiers:
            sig_start = prev.start_byte
            start_row = min(start_row, prev.start_point[0])
            prev = prev.prev_sibling
    return _Def(
        node=node,
        span_node=span_node,
        sig_node=sig_node,
        start_row=start_row,
        end_row=end_row,
        attribute_rows=attribute_rows,
        name=name,
        scope=scope,
        sig_start=sig_start,
    )


def _name(node: Node, source: bytes, language: str) -> str:
    t = node.type
    if language == "markdown":
        return _heading(node, source)
    if t == "function_definition" and language in ("c", "cpp"):
        d = node.child_by_field_name("declarator")
        for _ in range(16):  # pointer/reference/function declarators nest the name
            if d is None or d.type in _C_NAMES:
                break
            inner = d.child_by_field_name("declarator")
            if inner is None and d.named_child_count:
                inner = d.named_child(0)  # parenthesized_declarator has no field
            d = inner
        return _clean_name(_text(source, d.start_byte, d.end_byte)) if d is not None else ""
    if t == "impl_item":  # `impl Trait for Type`: methods live under the type
        n = node.child_by_field_name("type")
        if n is not None:
            return _clean_name(_text(source, n.start_byte, n.end_byte).split("<")[0])
    elif t == "singleton_method":  # def self.name
        obj, n = node.child_by_field_name("object"), node.child_by_field_name("name")
        if obj is not None and n is not None:
            return _text(source, obj.start_byte, n.end_byte)
    else:
        n = node.child_by_field_name("name") or node.child_by_field_name("property")
    if n is None:
        return ""
    name = _clean_name(_text(source, n.start_byte, n.end_byte))
    if t == "module" and language in ("typescript", "tsx"):
        name = name.strip("'\"`")  # declare module "foo"
    return name


def _clean_name(name: str) -> str:
    return " ".join(name.split())[:MAX_SIGNATURE]


def _heading(section: Node, source: bytes) -> str:
    for child in section.named_children:
        if child.type == "atx_heading":
            inline = child.child_by_field_name("heading_content")
            if inline is None:
                inline = next((c for c in child.named_children if c.type == "inline"), None)
            raw = _text(source, inline.start_byte, inline.end_byte) if inline else ""
            return _clean_name(re.sub(r"\s#+\s*$", "", raw.strip()))
        if child.type == "setext_heading":
            raw = _text(source, child.start_byte, child.end_byte)
            return _clean_name(raw.strip().split("\n")[0])
    return ""


def _go_receiver(node: Node, source: bytes) -> str:
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return ""
    for param in receiver.named_children:
        if param.type == "parameter_declaration":
            typ = param.child_by_field_name("type")
            if typ is not None:
                raw = _text(source, typ.start_byte, typ.end_byte)
                return raw.lstrip("*").split("[")[0].strip()  # *Stack[T] -> Stack
    return ""


def _attributes_above(node: Node, spec: _Spec, source: bytes) -> tuple[int, frozenset[int]]:
    """Extend a span upward over adjacent attribute siblings (``#[derive(…)]``).

    Returns the new 0-based start row and the rows the attributes occupy (doc comments
    may sit above, between or below them).
    """
    start_row = top = node.start_point[0]
    rows: set[int] = set()
    prev = node.prev_named_sibling
    while prev is not None and (_is_attribute(prev, spec, source) or _is_comment(prev)):
        if _end_row(prev) < top - 1:
            break  # a blank line: the attribute belongs to something else
        if prev.type in spec.attributes:
            start_row = prev.start_point[0]
            rows.update(range(start_row, _end_row(prev) + 1))
        top = prev.start_point[0]
        prev = prev.prev_named_sibling
    return start_row, frozenset(rows)


def _is_attribute(node: Node, spec: _Spec, source: bytes) -> bool:
    return node.type in spec.attributes and (spec.is_attribute is None or spec.is_attribute(node, source))


def _is_comment(node: Node) -> bool:
    return "comment" in node.type or node.type == "haddock"


def _signature(d: _Def, source: bytes, spec: _Spec, language: str) -> str:
    """Header of a definition up to its body, on one line, without a trailing ``{``/``:``."""
    end = spec.header(d.node, source) if spec.header is not None else None
    if end is None:
        body = d.node.child_by_field_name("body")
        if body is None and d.node.type in _FUNCTION_HOLDERS:  # `const f = () => …`
            value = d.node.child_by_field_name("value")
            body = value.child_by_field_name("body") if value is not None else None
        if body is None and spec.bodies:  # grammars without a `body` field (Kotlin)
            body = next((c for c in d.node.children if c.type in spec.bodies), None)
        end = body.start_byte if body is not None else None
    start = d.sig_start
    if end is not None and end > start:
        header_bytes = source[start:end]
        if any(marker in header_bytes for marker in _COMMENT_MARKERS):
            header_bytes = _without_comments(d.sig_node, source, start, end)
        header = header_bytes.decode("utf-8", errors="replace")
    else:  # no body: the first line, past annotations on lines of their own
        line_end = source.find(b"\n", max(start, _after_annotations(d.node)))
        header = _text(source, start, d.node.end_byte if line_end < 0 else min(line_end, d.node.end_byte))
    header = " ".join(header.split())
    # Whitespace is now single spaces, so dropping the space inside brackets is plain
    # replacing (what ``([(\[{])\s+`` and ``\s+([)\]}])`` did, at a fifth of the cost).
    if "( " in header or "[ " in header or "{ " in header:
        header = header.replace("( ", "(").replace("[ ", "[").replace("{ ", "{")
    if " )" in header or " ]" in header or " }" in header:
        header = header.replace(" )", ")").replace(" ]", "]").replace(" }", "}")
    header = header.rstrip(spec.signature_trim).rstrip()
    if len(header) > MAX_SIGNATURE:
        header = header[: MAX_SIGNATURE - 1] + "…"
    return header


def _after_annotations(node: Node) -> int:
    """Where a definition's first token past its annotations starts (``@Deprecated(…)``,
    ``[Obsolete]``, Kotlin's and Java's inside their ``modifiers``)."""
    children = node.children
    i = 0
    while i < len(children):
        child = children[i]
        if child.type == "modifiers":
            children, i = child.children, 0
        elif "annotation" in child.type or "attribute" in child.type:
            i += 1
        else:
            return child.start_byte
    return node.start_byte


# Comment openers that may sit inside a header (`class A # note`, Haskell `-- ^ arg`).
_COMMENT_MARKERS = (b"#", b"//", b"/*", b"--", b"{-")


def _without_comments(node: Node, source: bytes, start: int, end: int) -> bytes:
    """``source[start:end]`` minus the comment nodes inside it (``class A # note``)."""
    cuts: list[tuple[int, int]] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.start_byte >= end or n.end_byte <= start:
            continue
        if _is_comment(n):
            cuts.append((n.start_byte, n.end_byte))
        else:
            stack.extend(n.children)
    out, pos = [], start
    for a, b in sorted(cuts):
        out.append(source[pos:a])
        pos = max(pos, b)
    out.append(source[pos:end])
    return b" ".join(out)


_STRING_PREFIX = re.compile(r"^[rRuUbBfF]*('''|\"\"\"|'|\")")


def _python_docstring(node: Node, source: bytes) -> str:
    body = node.child_by_field_name("body")
    if body is None or body.named_child_count == 0:
        return ""
    # named_child(0), not named_children[0]: the latter builds a node per statement of the body.
    string = body.named_child(0)
    if string.type == "expression_statement" and string.named_child_count:
        string = string.named_child(0)  # older grammars wrap the docstring
    if string.type != "string":
        return ""
    raw = _text(source, string.start_byte, string.end_byte)
    m = _STRING_PREFIX.match(raw)
    if m is None:
        return ""
    quote = m.group(1)
    inner = raw[m.end() :]
    if inner.endswith(quote):
        inner = inner[: -len(quote)]
    return _cap(inspect.cleandoc(inner))


def _comment_above(
    lines: list[str], start_row: int, spec: _Spec, skip: frozenset[int] = frozenset()
) -> str:
    """The comment block ending on the line just above ``start_row`` (0-based), cleaned."""
    return _comment_block(lines, start_row, spec, skip)[1]


def _comment_block(
    lines: list[str], start_row: int, spec: _Spec, skip: frozenset[int] = frozenset()
) -> tuple[int, str]:
    """The first row (0-based) and cleaned text of the comment block just above ``start_row``.

    The row is ``start_row`` itself when there is no comment. Rows in ``skip`` (attributes)
    are passed over.

    Read from the lines rather than the tree: grammars disagree on where a comment goes
    (tree-sitter-python can put a comment above a dedented def inside the previous block).
    """
    collected: list[str] = []  # bottom-up
    top = start_row
    i = start_row - 1
    block_comment = spec.block_comment
    while i >= 0:
        if i in skip:
            i -= 1
            continue
        s = lines[i].strip()
        if spec.passed_over and s.startswith(spec.passed_over[0]) and s.endswith(spec.passed_over[1]):
            top = i  # part of the definition (`{-# INLINE f #-}`), not of its documentation
            i -= 1
            continue
        if block_comment is not None and s.endswith(block_comment[1]):
            opener, closer = block_comment
            j = i
            while j >= 0 and i - j < _MAX_COMMENT_LINES and opener not in lines[j]:
                j -= 1
            if j < 0 or i - j >= _MAX_COMMENT_LINES:
                break
            if not lines[j].strip().startswith(opener) or lines[j].strip().startswith(_INNER_DOCS):
                break  # code before the comment on its first line, or an inner doc
            block = [ln.strip() for ln in lines[j : i + 1]]
            block[0] = block[0][len(opener) :].lstrip(opener[-1])  # /** or {-: every opening mark
            if block[-1].endswith(closer):  # not when the opener already took it (`/**/`)
                block[-1] = block[-1][: len(block[-1]) - len(closer)].rstrip(closer[0])
            if opener == "/*":
                block = [re.sub(r"^\*(?!/)\s?", "", ln) for ln in block]
            collected.extend(reversed(block))
            top = j
            i = j - 1
            continue
        if not s.startswith(spec.line_comments) or s.startswith(("//!", "#!")):
            break
        collected.append(re.sub(r"^(//+|#+|--+)\s?", "", s))
        top = i
        i -= 1
    return top, _cap("\n".join(reversed(collected)).strip())


# Block comments that document what encloses them (Rust `/*!`) or are no comment (Haskell pragmas).
_INNER_DOCS = ("/*!", "{-#")


def _cap(text: str) -> str:
    if len(text) > MAX_DOCSTRING:
        return text[: MAX_DOCSTRING - 1] + "…"
    return text


__all__: list[str] = [
    "DEFAULT_OVERLAP",
    "DEFAULT_WINDOW",
    "chunk_file",
    "line_windows",
]
