"""Haskell and Elixir: definitions made of several clauses.

A Haskell type signature and its equations, or the clauses of an Elixir function, are one
definition (``Spec.clauses``). Haskell's signature is a sibling of its equations; Elixir's
definitions are plain ``call`` nodes (``def``, ``defmodule`` …) whose name sits inside the
call's arguments, documented by ``@doc``/``@moduledoc`` attributes rather than comments.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from .base import NO_SCOPE, Spec, first_child, one_line, text

if TYPE_CHECKING:
    from tree_sitter import Node

# -------------------------------------------------------------------------------- Haskell

#: Where a function, binding or type signature counts as a definition: at the top level and
#: in a class or instance; ``where`` and ``let`` helpers stay part of their function.
HASKELL_DECLARATIONS = frozenset({"declarations", "class_declarations", "instance_declarations"})


def haskell_name(node: Node, source: bytes) -> tuple[str, tuple[str, ...]]:
    t = node.type
    if t == "signature":
        n = node.child_by_field_name("name")
        if n is None:  # foo, bar :: Int
            names = node.child_by_field_name("names")
            n = names.named_child(0) if names is not None and names.named_child_count else None
        return _operator(text(source, n)), NO_SCOPE
    if t in ("function", "bind"):
        n = node.child_by_field_name("name")
        if n is None:  # a `op` b = …, a <+> b = …
            infix = first_child(node, {"infix"})
            n = infix.child_by_field_name("operator") if infix is not None else None
        return _operator(text(source, n)), NO_SCOPE
    if t == "instance":  # instance Show (T a): the class and the type
        patterns = node.child_by_field_name("patterns")
        name = text(source, node.child_by_field_name("name"))
        return one_line(f"{name} {text(source, patterns)}".strip()), NO_SCOPE
    if t == "pattern_synonym":
        eq = first_child(node, {"equation", "signature"})
        syn = eq.child_by_field_name("synonym") if eq is not None else None
        return one_line(text(source, syn)).split(" ")[0] if syn is not None else "", NO_SCOPE
    return one_line(text(source, node.child_by_field_name("name"))), NO_SCOPE


def _operator(name: str) -> str:
    """``(<+>)`` and ```plus``` as they are defined: ``<+>``, ``plus``."""
    name = name.strip()
    if len(name) > 2 and name[0] == "(" and name[-1] == ")":
        return name[1:-1].strip()
    return name.strip("`")


def haskell_header(node: Node, source: bytes) -> int | None:
    t = node.type
    if t == "signature":  # the type signature is the header of its equations
        return node.end_byte
    if t in ("function", "bind"):  # no type signature: the first equation's left-hand side
        match = first_child(node, {"match"})
        return match.start_byte if match is not None else None
    if t in ("class", "instance", "data_type", "newtype"):  # up to `where`, if any
        where = first_child(node, {"where"})
        if where is not None:
            return where.start_byte
        return node.end_byte if t in ("class", "instance") else None
    return None


def haskell_clean_doc(doc: str) -> str:
    """Haddock's markers go: ``-- | Text`` and ``{- | Text -}`` read as ``Text``."""
    if doc.startswith(("|", "^", "$", "*")):
        doc = doc[1:].lstrip()
    return doc


# --------------------------------------------------------------------------------- Elixir

#: Calls that define something, by their target identifier.
ELIXIR_DEFINERS = (
    "def",
    "defp",
    "defmacro",
    "defmacrop",
    "defguard",
    "defguardp",
    "defdelegate",
    "defn",
    "defnp",
    "defmodule",
    "defprotocol",
    "defimpl",
    "defstruct",
    "defexception",
)
#: ExUnit blocks named by a string (``test "…" do``).
ELIXIR_TESTS = ("test", "describe")
_ELIXIR_MODULES = frozenset({"defmodule", "defprotocol", "defimpl"})


def _elixir_target(node: Node, source: bytes) -> str:
    target = node.child_by_field_name("target")
    return text(source, target) if target is not None and target.type == "identifier" else ""


def _elixir_args(node: Node) -> Node | None:
    return first_child(node, {"arguments"})


def elixir_name(node: Node, source: bytes) -> tuple[str, tuple[str, ...]]:
    """A function's own name; a module's last segment, the segments before it its scope
    (``Phoenix.Router``: name ``Router``, breadcrumb ``Phoenix > Router``); an implementation
    is the module Elixir makes of it (``defimpl String.Chars, for: URI`` is ``String.Chars.URI``).

    The symbols arm weighs a chunk's names three times and splits them into words, so the
    whole dotted name as a symbol would make ``Phoenix.Router.Route`` (and every other
    module below it) as much a ``Router`` as ``Phoenix.Router`` itself; the last segment
    alone gives the bare ``Router`` to its defining module. The whole name stays in the
    signature (``defmodule Phoenix.Router``), so ``Phoenix.Router`` still finds it.
    """
    kind = _elixir_target(node, source)
    args = _elixir_args(node)
    first = args.named_child(0) if args is not None and args.named_child_count else None
    if kind in ("defstruct", "defexception"):
        return kind, NO_SCOPE
    if first is None:
        return "", NO_SCOPE
    if kind in ELIXIR_TESTS:
        if first.type != "string":
            return "", NO_SCOPE
        return one_line(text(source, first).strip('"')), NO_SCOPE
    if kind in _ELIXIR_MODULES:
        name = one_line(text(source, first))
        if kind == "defimpl":
            for_type = _elixir_keyword(args, "for", source)
            if for_type:
                name = f"{name}.{for_type}"
        *scope, name = name.split(".")
        return name, tuple(scope)
    # def name(args) when guard / def name / def a + b
    head = first
    if head.type == "binary_operator" and text(source, head.child_by_field_name("operator")) == "when":
        head = head.child_by_field_name("left") or head
    if head.type == "call":
        target = head.child_by_field_name("target")
        return text(source, target), NO_SCOPE
    if head.type == "identifier":
        return text(source, head), NO_SCOPE
    if head.type in ("binary_operator", "unary_operator"):
        return text(source, head.child_by_field_name("operator")), NO_SCOPE
    return "", NO_SCOPE


def _elixir_keyword(args: Node, key: str, source: bytes) -> str:
    for child in args.named_children:
        if child.type == "keywords":
            for pair in child.named_children:
                k = pair.child_by_field_name("key")
                if k is not None and text(source, k).rstrip(": ") == key:
                    return one_line(text(source, pair.child_by_field_name("value")))
    return ""


def elixir_header(node: Node, source: bytes) -> int | None:
    """Up to ``do`` (``def f(x) when x > 0``); a one-line ``def f(x), do: …`` up to its head."""
    block = first_child(node, {"do_block"})
    if block is not None:
        return block.start_byte
    args = _elixir_args(node)
    n = args.named_child_count if args is not None else 0
    if n > 1 and args.named_child(n - 1).type == "keywords":
        return args.named_child(n - 2).end_byte
    return None


def elixir_docstring(node: Node, source: bytes) -> str:
    """``@moduledoc`` (a module's) or ``@doc`` (a function's) text; "" for ``@doc false``."""
    kind = _elixir_target(node, source)
    if kind in _ELIXIR_MODULES:
        block = first_child(node, {"do_block"})
        if block is None:
            return ""
        for child in block.named_children[:8]:  # @moduledoc comes first, after a few aliases at most
            doc = _elixir_attribute(child, source, "moduledoc")
            if doc is not None:
                return doc
        return ""
    prev = node.prev_named_sibling
    while prev is not None and (prev.type == "comment" or _is_elixir_attribute(prev, source)):
        doc = _elixir_attribute(prev, source, "doc")
        if doc is not None:
            return doc
        prev = prev.prev_named_sibling
    return ""


def _is_elixir_attribute(node: Node, source: bytes) -> bool:
    return node.type == "unary_operator" and source[node.start_byte : node.start_byte + 1] == b"@"


def _elixir_attribute(node: Node, source: bytes, name: str) -> str | None:
    """The text of ``@name "…"`` / ``@name \"\"\"…\"\"\"`` / ``@name ~S\"\"\"…\"\"\"``; None when ``node``
    is not that attribute."""
    if not _is_elixir_attribute(node, source):
        return None
    call = node.child_by_field_name("operand")
    if call is None or call.type != "call" or _elixir_target(call, source) != name:
        return None
    args = _elixir_args(call)
    value = args.named_child(0) if args is not None and args.named_child_count else None
    if value is None or value.type not in ("string", "sigil"):
        return ""  # @doc false
    parts = [text(source, c) for c in value.named_children if c.type == "quoted_content"]
    return inspect.cleandoc("".join(parts))


def elixir_is_attribute(node: Node, source: bytes) -> bool:
    """``@doc``, ``@spec``, ``@impl`` … just above a definition belong to its span (not
    ``@moduledoc``: it documents the module)."""
    return _is_elixir_attribute(node, source) and not source.startswith(b"@moduledoc", node.start_byte)


_ELIXIR_PATTERNS = (
    "(call target: (identifier) @_kind (#any-of? @_kind {})) @def".format(" ".join(f'"{k}"' for k in ELIXIR_DEFINERS)),
    "(call target: (identifier) @_kind (#any-of? @_kind {}) (do_block)) @def".format(
        " ".join(f'"{k}"' for k in ELIXIR_TESTS)
    ),
)


SPECS: dict[str, Spec] = {
    "haskell": Spec(
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
        parents={t: HASKELL_DECLARATIONS for t in ("signature", "function", "bind")},
        line_comments=("--",),
        block_comment=("{-", "-}"),
        passed_over=("{-#", "#-}"),
        clauses=True,
        signature_trim="{=",
        name=haskell_name,
        header=haskell_header,
        clean_doc=haskell_clean_doc,
    ),
    "elixir": Spec(
        defs=(),
        patterns=_ELIXIR_PATTERNS,
        attributes=frozenset({"unary_operator"}),
        line_comments=("#",),
        block_comment=None,
        clauses=True,
        name=elixir_name,
        header=elixir_header,
        docstring=elixir_docstring,
        is_attribute=elixir_is_attribute,
    ),
}
