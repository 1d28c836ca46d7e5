"""The declaration every language's definitions are read by (:class:`Spec`), and the node
helpers the per-language readers share.

A language's :class:`Spec` names the tree-sitter node types that are definitions and the
generic rules' knobs (wrappers, attributes, comment markers, signature trimming). What a
grammar's fields do not say is read by functions the spec points at (``name``, ``header``,
``docstring``, ``clean_doc``, ``is_attribute``), kept beside the spec in its family's module.
Each reader takes the captured node and the file's UTF-8 bytes:

* ``name(node, source) -> (name, scope)``: the name, and the breadcrumb parts that come
  before it without being enclosing definitions (a Lua table ``M`` in ``function M.f``, a
  Kotlin extension's receiver type). An empty name drops the definition.
* ``header(node, source) -> int | None``: the byte where the header ends (the signature
  runs from the definition's start to there); None lets the generic rule decide (up to
  the body, else the first line).
* ``docstring(node, source) -> str``: documentation kept outside comments.
* ``clean_doc(text) -> str``: tidies a comment block read above a definition.
* ``is_attribute(node, source) -> bool``: whether a sibling of ``attributes``' types just
  above a definition belongs to its span.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # tree_sitter is imported lazily: a broken install still gets windows
    from tree_sitter import Node

#: Chunk kinds of a definition and of a Markdown section (``Chunk.kind``).
DEFINITION = "definition"
SECTION = "section"

NO_SCOPE: tuple[str, ...] = ()


@dataclass(frozen=True)
class Spec:
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
    #: Readers for what fields alone do not say (see the module docstring).
    name: Callable[[Node, bytes], tuple[str, tuple[str, ...]]] | None = None
    header: Callable[[Node, bytes], int | None] | None = None  # where the signature ends
    docstring: Callable[[Node, bytes], str] | None = None
    clean_doc: Callable[[str], str] | None = None
    is_attribute: Callable[[Node, bytes], bool] | None = None


def text(source: bytes, node: Node | None) -> str:
    """A node's source text ("" for None)."""
    if node is None:
        return ""
    return source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


def one_line(s: str) -> str:
    return " ".join(s.split())


def first_child(node: Node, types: frozenset[str] | set[str]) -> Node | None:
    for child in node.children:
        if child.type in types:
            return child
    return None


def type_name(s: str) -> str:
    """``Foo<T>`` / ``Foo[T]`` / ``pkg.Foo`` -> the type's own name as written, generics dropped."""
    return one_line(re.split(r"[<\[(]", s, maxsplit=1)[0]).strip()
