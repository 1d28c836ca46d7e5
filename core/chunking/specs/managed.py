"""Java, Kotlin, Scala, C# and Swift: class-based languages of the JVM, .NET and Apple's platforms.

Their members are definitions, their locals are not (a Kotlin property or a Scala ``val``
inside a function body), and several grammars have no ``name`` or ``body`` field where one
would be expected: the readers here name operators, constructors, extensions and anonymous
``given``s. A C# namespace only scopes the breadcrumb; C#'s XML doc comments read as text.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .base import NO_SCOPE, Spec, first_child, one_line, text, type_name

if TYPE_CHECKING:
    from tree_sitter import Node

# Member-level only: a Kotlin/Swift property or Scala val inside a function body is a local.
_KOTLIN_MEMBERS = frozenset({"source_file", "class_body"})
_SCALA_MEMBERS = frozenset({"compilation_unit", "template_body", "with_template_body"})
_SWIFT_MEMBERS = frozenset({"source_file", "class_body", "protocol_body"})

# ------------------------------------------------------------------------------------- C#

_CS_XML_REF = re.compile(r"<(?:see|seealso|paramref|typeparamref)\s+\w+\s*=\s*\"([^\"]*)\"\s*/>")
_CS_XML_PARAM = re.compile(r"<(?:param|typeparam)\s+name\s*=\s*\"([^\"]*)\"\s*>")
_CS_XML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")


def csharp_name(node: Node, source: bytes) -> tuple[str, tuple[str, ...]]:
    t = node.type
    if t == "operator_declaration":
        op = node.child_by_field_name("operator")
        return ("operator " + text(source, op)) if op is not None else "operator", NO_SCOPE
    if t == "conversion_operator_declaration":
        return "operator " + one_line(text(source, node.child_by_field_name("type"))), NO_SCOPE
    if t == "indexer_declaration":
        return "this[]", NO_SCOPE
    name = text(source, node.child_by_field_name("name"))
    if t == "destructor_declaration" and name:
        return "~" + name, NO_SCOPE
    return name, NO_SCOPE


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
        return "constructor", NO_SCOPE
    if t == "companion_object":
        n = first_child(node, {"type_identifier"})
        return (text(source, n) if n is not None else "Companion"), NO_SCOPE
    if t in ("class_declaration", "object_declaration", "type_alias"):
        return text(source, first_child(node, {"type_identifier"})), NO_SCOPE
    scope = NO_SCOPE
    receiver = node.child_by_field_name("receiver")
    if receiver is not None:  # fun Flow<T>.cached(): an extension reads as Flow > cached
        scope = (type_name(text(source, receiver)).rstrip("?"),)
    if t == "function_declaration":
        return text(source, first_child(node, {"simple_identifier"})), scope
    if t == "property_declaration":
        var = first_child(node, {"variable_declaration", "multi_variable_declaration"})
        if var is not None and var.type == "variable_declaration":
            return text(source, first_child(var, {"simple_identifier"})), scope
        return one_line(text(source, var)), scope
    return "", NO_SCOPE


# ---------------------------------------------------------------------------------- Scala


def scala_name(node: Node, source: bytes) -> tuple[str, tuple[str, ...]]:
    t = node.type
    if t in ("val_definition", "var_definition", "val_declaration", "var_declaration"):
        pattern = node.child_by_field_name("pattern") or node.child_by_field_name("name")
        return one_line(text(source, pattern)), NO_SCOPE
    if t == "given_definition":  # an anonymous given is named by its type, as scalac does
        n = node.child_by_field_name("name")
        return one_line(text(source, n if n is not None else node.child_by_field_name("return_type"))), NO_SCOPE
    if t == "extension_definition":  # extension (s: String): its methods live under String
        params = node.child_by_field_name("parameters")
        param = params.named_child(0) if params is not None and params.named_child_count else None
        typ = param.child_by_field_name("type") if param is not None else None
        return type_name(text(source, typ)), NO_SCOPE
    return text(source, node.child_by_field_name("name")), NO_SCOPE


# ---------------------------------------------------------------------------------- Swift

_SWIFT_KEYWORD_NAMES = {
    "init_declaration": "init",
    "deinit_declaration": "deinit",
    "subscript_declaration": "subscript",
}


def swift_name(node: Node, source: bytes) -> tuple[str, tuple[str, ...]]:
    keyword = _SWIFT_KEYWORD_NAMES.get(node.type)
    if keyword is not None:
        return keyword, NO_SCOPE
    n = node.child_by_field_name("name")
    if n is None:
        return "", NO_SCOPE
    if node.type == "class_declaration" and n.type == "user_type":  # extension Array<T>: Array
        return type_name(text(source, n)), NO_SCOPE
    name = one_line(text(source, n))
    if n.type == "pattern":  # a protocol's `var x: Int { get }` holds its keyword
        name = re.sub(r"^(?:var|let)\s+", "", name)
    return name, NO_SCOPE


SPECS: dict[str, Spec] = {
    "java": Spec(
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
    "csharp": Spec(
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
        name=csharp_name,
        clean_doc=csharp_clean_doc,
    ),
    "kotlin": Spec(
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
        name=kotlin_name,
    ),
    "scala": Spec(
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
        name=scala_name,
    ),
    "swift": Spec(
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
            {
                "computed_property",
                "function_body",
                "class_body",
                "protocol_body",
                "enum_class_body",
                "protocol_property_requirements",
            }
        ),
        name=swift_name,
    ),
}
