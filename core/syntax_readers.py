"""Per-language readers of tree-sitter definitions, for :mod:`core.chunking`.

The chunker reads most grammars generically: a definition's name is its ``name`` field, its
header runs up to its ``body`` field, its doc comment is the comment block above it. The
grammars here need more: Kotlin and Zig have few field names, Elixir's definitions are
plain ``call`` nodes (``def``, ``defmodule`` …) whose name sits inside the call's
arguments, Haskell's type signature is a sibling of its equations, Lua's and Zig's names
are qualified or wrapped, and Elixir and C# keep their documentation in ``@doc``
attributes and XML tags.

Each reader takes the captured node and the file's UTF-8 bytes:

* ``name(node, source) -> (name, scope)``: the name, and the breadcrumb parts that come
  before it without being enclosing definitions (a Lua table ``M`` in ``function M.f``, a
  Kotlin extension's receiver type). An empty name drops the definition.
* ``header(node, source) -> int | None``: the byte where the header ends (the signature
  runs from the definition's start to there); None lets the generic rule decide (up to
  the body, else the first line).
* ``docstring(node, source) -> str``: documentation kept outside comments.
* ``clean_doc(text) -> str``: tidies a comment block read above a definition.
"""

from __future__ import annotations

import inspect
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node

_NO_SCOPE: tuple[str, ...] = ()


def text(source: bytes, node: Node | None) -> str:
    """A node's source text ("" for None)."""
    if node is None:
        return ""
    return source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


def _one_line(s: str) -> str:
    return " ".join(s.split())


def _first_child(node: Node, types: frozenset[str] | set[str]) -> Node | None:
    for child in node.children:
        if child.type in types:
            return child
    return None


def _type_name(s: str) -> str:
    """``Foo<T>`` / ``Foo[T]`` / ``pkg.Foo`` -> the type's own name as written, generics dropped."""
    return _one_line(re.split(r"[<\[(]", s, maxsplit=1)[0]).strip()


# ------------------------------------------------------------------------------------- C#

_CS_XML_REF = re.compile(r"<(?:see|seealso|paramref|typeparamref)\s+\w+\s*=\s*\"([^\"]*)\"\s*/>")
_CS_XML_PARAM = re.compile(r"<(?:param|typeparam)\s+name\s*=\s*\"([^\"]*)\"\s*>")
_CS_XML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")


def csharp_name(node: Node, source: bytes) -> tuple[str, tuple[str, ...]]:
    t = node.type
    if t == "operator_declaration":
        op = node.child_by_field_name("operator")
        return ("operator " + text(source, op)) if op is not None else "operator", _NO_SCOPE
    if t == "conversion_operator_declaration":
        return "operator " + _one_line(text(source, node.child_by_field_name("type"))), _NO_SCOPE
    if t == "indexer_declaration":
        return "this[]", _NO_SCOPE
    name = text(source, node.child_by_field_name("name"))
    if t == "destructor_declaration" and name:
        return "~" + name, _NO_SCOPE
    return name, _NO_SCOPE


def csharp_clean_doc(doc: str) -> str:
    """XML doc comments read as their text: ``<see cref="X"/>`` -> X, ``<param name="x">`` ->
    ``x:``, other tags dropped."""
    if "<" not in doc:
        return doc
    doc = _CS_XML_REF.sub(r"\1", doc)
    doc = _CS_XML_PARAM.sub(r"\1: ", doc)
    doc = _CS_XML_TAG.sub("", doc)
    return "\n".join(line.strip() for line in doc.split("\n") if line.strip())


# --------------------------------------------------------------------------------- Kotlin


def kotlin_name(node: Node, source: bytes) -> tuple[str, tuple[str, ...]]:
    t = node.type
    if t == "secondary_constructor":
        return "constructor", _NO_SCOPE
    if t == "companion_object":
        n = _first_child(node, {"type_identifier"})
        return (text(source, n) if n is not None else "Companion"), _NO_SCOPE
    if t in ("class_declaration", "object_declaration", "type_alias"):
        return text(source, _first_child(node, {"type_identifier"})), _NO_SCOPE
    scope = _NO_SCOPE
    receiver = node.child_by_field_name("receiver")
    if receiver is not None:  # fun Flow<T>.cached(): an extension reads as Flow > cached
        scope = (_type_name(text(source, receiver)).rstrip("?"),)
    if t == "function_declaration":
        return text(source, _first_child(node, {"simple_identifier"})), scope
    if t == "property_declaration":
        var = _first_child(node, {"variable_declaration", "multi_variable_declaration"})
        if var is not None and var.type == "variable_declaration":
            return text(source, _first_child(var, {"simple_identifier"})), scope
        return _one_line(text(source, var)), scope
    return "", _NO_SCOPE


# ---------------------------------------------------------------------------------- Scala


def scala_name(node: Node, source: bytes) -> tuple[str, tuple[str, ...]]:
    t = node.type
    if t in ("val_definition", "var_definition", "val_declaration", "var_declaration"):
        pattern = node.child_by_field_name("pattern") or node.child_by_field_name("name")
        return _one_line(text(source, pattern)), _NO_SCOPE
    if t == "given_definition":  # an anonymous given is named by its type, as scalac does
        n = node.child_by_field_name("name")
        return _one_line(text(source, n if n is not None else node.child_by_field_name("return_type"))), _NO_SCOPE
    if t == "extension_definition":  # extension (s: String): its methods live under String
        params = node.child_by_field_name("parameters")
        param = params.named_child(0) if params is not None and params.named_child_count else None
        typ = param.child_by_field_name("type") if param is not None else None
        return _type_name(text(source, typ)), _NO_SCOPE
    return text(source, node.child_by_field_name("name")), _NO_SCOPE


# ---------------------------------------------------------------------------------- Swift

_SWIFT_KEYWORD_NAMES = {
    "init_declaration": "init",
    "deinit_declaration": "deinit",
    "subscript_declaration": "subscript",
}


def swift_name(node: Node, source: bytes) -> tuple[str, tuple[str, ...]]:
    keyword = _SWIFT_KEYWORD_NAMES.get(node.type)
    if keyword is not None:
        return keyword, _NO_SCOPE
    n = node.child_by_field_name("name")
    if n is None:
        return "", _NO_SCOPE
    if node.type == "class_declaration" and n.type == "user_type":  # extension Array<T>: Array
        return _type_name(text(source, n)), _NO_SCOPE
    name = _one_line(text(source, n))
    if n.type == "pattern":  # a protocol's `var x: Int { get }` holds its keyword
        name = re.sub(r"^(?:var|let)\s+", "", name)
    return name, _NO_SCOPE


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
        return _operator(text(source, n)), _NO_SCOPE
    if t in ("function", "bind"):
        n = node.child_by_field_name("name")
        if n is None:  # a `op` b = …, a <+> b = …
            infix = _first_child(node, {"infix"})
            n = infix.child_by_field_name("operator") if infix is not None else None
        return _operator(text(source, n)), _NO_SCOPE
    if t == "instance":  # instance Show (T a): the class and the type
        patterns = node.child_by_field_name("patterns")
        name = text(source, node.child_by_field_name("name"))
        return _one_line(f"{name} {text(source, patterns)}".strip()), _NO_SCOPE
    if t == "pattern_synonym":
        eq = _first_child(node, {"equation", "signature"})
        syn = eq.child_by_field_name("synonym") if eq is not None else None
        return _one_line(text(source, syn)).split(" ")[0] if syn is not None else "", _NO_SCOPE
    return _one_line(text(source, node.child_by_field_name("name"))), _NO_SCOPE


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
        match = _first_child(node, {"match"})
        return match.start_byte if match is not None else None
    if t in ("class", "instance", "data_type", "newtype"):  # up to `where`, if any
        where = _first_child(node, {"where"})
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
    "def", "defp", "defmacro", "defmacrop", "defguard", "defguardp", "defdelegate", "defn", "defnp",
    "defmodule", "defprotocol", "defimpl", "defstruct", "defexception",
)
#: ExUnit blocks named by a string (``test "…" do``).
ELIXIR_TESTS = ("test", "describe")
_ELIXIR_MODULES = frozenset({"defmodule", "defprotocol", "defimpl"})


def _elixir_target(node: Node, source: bytes) -> str:
    target = node.child_by_field_name("target")
    return text(source, target) if target is not None and target.type == "identifier" else ""


def _elixir_args(node: Node) -> Node | None:
    return _first_child(node, {"arguments"})


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
        return kind, _NO_SCOPE
    if first is None:
        return "", _NO_SCOPE
    if kind in ELIXIR_TESTS:
        if first.type != "string":
            return "", _NO_SCOPE
        return _one_line(text(source, first).strip('"')), _NO_SCOPE
    if kind in _ELIXIR_MODULES:
        name = _one_line(text(source, first))
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
        return text(source, target), _NO_SCOPE
    if head.type == "identifier":
        return text(source, head), _NO_SCOPE
    if head.type in ("binary_operator", "unary_operator"):
        return text(source, head.child_by_field_name("operator")), _NO_SCOPE
    return "", _NO_SCOPE


def _elixir_keyword(args: Node, key: str, source: bytes) -> str:
    for child in args.named_children:
        if child.type == "keywords":
            for pair in child.named_children:
                k = pair.child_by_field_name("key")
                if k is not None and text(source, k).rstrip(": ") == key:
                    return _one_line(text(source, pair.child_by_field_name("value")))
    return ""


def elixir_header(node: Node, source: bytes) -> int | None:
    """Up to ``do`` (``def f(x) when x > 0``); a one-line ``def f(x), do: …`` up to its head."""
    block = _first_child(node, {"do_block"})
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
        block = _first_child(node, {"do_block"})
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


# ------------------------------------------------------------------------------------ Lua


def lua_name(node: Node, source: bytes) -> tuple[str, tuple[str, ...]]:
    """``function M.sub.f`` / ``function Class:m`` / ``M.f = function``: the last part is the
    name, the table path before it the scope (``M > sub > f``)."""
    t = node.type
    if t == "field":
        return text(source, node.child_by_field_name("name")), _NO_SCOPE
    if t == "assignment_statement":
        targets = _first_child(node, {"variable_list"})
        n = targets.child_by_field_name("name") if targets is not None else None
    else:
        n = node.child_by_field_name("name")
    if n is None:
        return "", _NO_SCOPE
    parts = re.split(r"[.:]", _one_line(text(source, n)))
    if len(parts) == 1 or not all(parts):
        return _one_line(text(source, n)), _NO_SCOPE
    return parts[-1], tuple(parts[:-1])


def lua_header(node: Node, source: bytes) -> int | None:
    if node.type == "function_declaration":
        return None  # its `body` field
    # M.f = function(a) … / f = function(a) …: up to the function's body
    fn = _lua_function_value(node)
    if fn is None:
        return None
    body = fn.child_by_field_name("body")
    if body is not None:
        return body.start_byte
    params = fn.child_by_field_name("parameters")  # an empty body
    return params.end_byte if params is not None else None


def _lua_function_value(node: Node) -> Node | None:
    if node.type == "field":
        return node.child_by_field_name("value")
    values = _first_child(node, {"expression_list"})
    return values.child_by_field_name("value") if values is not None else None


# ------------------------------------------------------------------------------------ Zig


def zig_name(node: Node, source: bytes) -> tuple[str, tuple[str, ...]]:
    t = node.type
    if t == "TestDecl":  # test "name" {…} / test name {…} / test {…}
        for child in node.named_children:
            if child.type.startswith("STRINGLITERAL"):
                return _one_line(text(source, child).strip('"')), _NO_SCOPE
            if child.type == "IDENTIFIER":
                return text(source, child), _NO_SCOPE
        return "test", _NO_SCOPE
    for child in node.named_children:  # Decl: FnProto or VarDecl
        if child.type == "FnProto":
            return text(source, child.child_by_field_name("function")), _NO_SCOPE
        if child.type == "VarDecl":
            return text(source, child.child_by_field_name("variable_type_function")), _NO_SCOPE
    return "", _NO_SCOPE


def zig_header(node: Node, source: bytes) -> int | None:
    if node.type == "Decl":
        body = _first_child(node, {"Block"})
        if body is not None:
            return body.start_byte
    return None  # a container: its first line, up to `{`
