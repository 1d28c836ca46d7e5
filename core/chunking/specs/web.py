"""JavaScript, TypeScript (and TSX) and PHP.

A JavaScript function is as often the value of a variable or a class field as a declaration
(``const f = () => …``): patterns capture those, and the ``export``/``const`` wrapping one
definition belongs to its span. A PHP namespace only scopes the breadcrumb.
"""

from __future__ import annotations

from .base import Spec

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


SPECS: dict[str, Spec] = {
    "javascript": Spec(defs=_JS_DEFS, patterns=_JS_PATTERNS, wrappers=_JS_WRAPPERS),
    "typescript": Spec(defs=_TS_DEFS, patterns=_JS_PATTERNS, wrappers=_TS_WRAPPERS),
    "tsx": Spec(defs=_TS_DEFS, patterns=_JS_PATTERNS, wrappers=_TS_WRAPPERS),
    "php": Spec(
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
}
