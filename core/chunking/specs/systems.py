"""C, C++, Go, Rust and Zig.

The generic reading covers most of them (``core.chunking.reading`` knows C's nested
declarators, C++'s ``K::f`` and Go's method receivers); Zig has few field names, so its
names and headers are read here, and its ``pub``/``export`` tokens sit beside the declaration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import NO_SCOPE, Spec, first_child, one_line, text

if TYPE_CHECKING:
    from tree_sitter import Node

_C_DEFS = ("function_definition", "struct_specifier", "union_specifier", "enum_specifier")
_ZIG_CONTAINER = "(Decl (VarDecl (ErrorUnionExpr (SuffixExpr [(ContainerDecl) (ErrorSetDecl)])))) @def"


def zig_name(node: Node, source: bytes) -> tuple[str, tuple[str, ...]]:
    t = node.type
    if t == "TestDecl":  # test "name" {…} / test name {…} / test {…}
        for child in node.named_children:
            if child.type.startswith("STRINGLITERAL"):
                return one_line(text(source, child).strip('"')), NO_SCOPE
            if child.type == "IDENTIFIER":
                return text(source, child), NO_SCOPE
        return "test", NO_SCOPE
    for child in node.named_children:  # Decl: FnProto or VarDecl
        if child.type == "FnProto":
            return text(source, child.child_by_field_name("function")), NO_SCOPE
        if child.type == "VarDecl":
            return text(source, child.child_by_field_name("variable_type_function")), NO_SCOPE
    return "", NO_SCOPE


def zig_header(node: Node, source: bytes) -> int | None:
    if node.type == "Decl":
        body = first_child(node, {"Block"})
        if body is not None:
            return body.start_byte
    return None  # a container: its first line, up to `{`


SPECS: dict[str, Spec] = {
    "go": Spec(
        defs=("function_declaration", "method_declaration", "type_spec", "type_alias"),
        wrappers=frozenset({"type_declaration"}),
    ),
    "rust": Spec(
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
    "c": Spec(defs=_C_DEFS, wrappers=frozenset({"type_definition"})),
    "cpp": Spec(
        defs=_C_DEFS + ("class_specifier", "namespace_definition"),
        wrappers=frozenset({"type_definition", "template_declaration"}),
    ),
    "zig": Spec(
        defs=("TestDecl",),
        patterns=("(Decl (FnProto)) @def", _ZIG_CONTAINER),
        modifiers=frozenset({"pub", "export", "extern", "inline", "noinline"}),
        block_comment=None,
        signature_trim="{;",
        name=zig_name,
        header=zig_header,
    ),
}
