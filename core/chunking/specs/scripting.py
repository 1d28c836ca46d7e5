"""Python, Ruby, Lua and shell (bash): the scripting languages' definitions.

Python keeps its documentation in a docstring (read by :func:`python_docstring`); Lua names
a function by its table path (``function M.sub.f``: ``M > sub > f``) and defines one as
the value of an assignment or a table field as often as by ``function``.
"""

from __future__ import annotations

import inspect
import re
from typing import TYPE_CHECKING

from ..comments import cap
from .base import NO_SCOPE, Spec, first_child, one_line, text

if TYPE_CHECKING:
    from tree_sitter import Node

_STRING_PREFIX = re.compile(r"^[rRuUbBfF]*('''|\"\"\"|'|\")")


def python_docstring(node: Node, source: bytes) -> str:
    body = node.child_by_field_name("body")
    if body is None or body.named_child_count == 0:
        return ""
    # named_child(0), not named_children[0]: the latter builds a node per statement of the body.
    string = body.named_child(0)
    if string.type == "expression_statement" and string.named_child_count:
        string = string.named_child(0)  # older grammars wrap the docstring
    if string.type != "string":
        return ""
    raw = text(source, string)
    m = _STRING_PREFIX.match(raw)
    if m is None:
        return ""
    quote = m.group(1)
    inner = raw[m.end() :]
    if inner.endswith(quote):
        inner = inner[: -len(quote)]
    return cap(inspect.cleandoc(inner))


# ------------------------------------------------------------------------------------ Lua

_LUA_FUNCTION = "(function_definition)"


def lua_name(node: Node, source: bytes) -> tuple[str, tuple[str, ...]]:
    """``function M.sub.f`` / ``function Class:m`` / ``M.f = function``: the last part is the
    name, the table path before it the scope (``M > sub > f``)."""
    t = node.type
    if t == "field":
        return text(source, node.child_by_field_name("name")), NO_SCOPE
    if t == "assignment_statement":
        targets = first_child(node, {"variable_list"})
        n = targets.child_by_field_name("name") if targets is not None else None
    else:
        n = node.child_by_field_name("name")
    if n is None:
        return "", NO_SCOPE
    parts = re.split(r"[.:]", one_line(text(source, n)))
    if len(parts) == 1 or not all(parts):
        return one_line(text(source, n)), NO_SCOPE
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
    values = first_child(node, {"expression_list"})
    return values.child_by_field_name("value") if values is not None else None


SPECS: dict[str, Spec] = {
    "python": Spec(
        defs=("function_definition", "class_definition"),
        wrappers=frozenset({"decorated_definition"}),
        line_comments=("#",),
        block_comment=None,
        signature_trim=":",
        docstring=python_docstring,
    ),
    "ruby": Spec(
        defs=("class", "module", "method", "singleton_method"),
        line_comments=("#",),
        block_comment=None,
    ),
    "lua": Spec(
        defs=("function_declaration",),
        patterns=(
            f"(assignment_statement (variable_list . name: (_)) (expression_list . value: {_LUA_FUNCTION})) @def",
            f"(field name: (identifier) value: {_LUA_FUNCTION}) @def",
        ),
        wrappers=frozenset({"variable_declaration"}),  # local f = function … end
        line_comments=("--",),
        block_comment=("--[[", "]]"),
        name=lua_name,
        header=lua_header,
    ),
    "shell": Spec(
        defs=("function_definition",),
        grammar="bash",
        line_comments=("#",),
        block_comment=None,
    ),
}
