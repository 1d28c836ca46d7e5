"""Reading a file's definitions from its tree-sitter tree, one chunk per definition.

The query of the language's :class:`~core.chunking.specs.Spec` captures the definition nodes;
each is read generically (its name field, its header up to the body, the comment block
above it, the wrappers and attributes that belong to its span) unless the spec's readers say
otherwise. Definitions are nested by their spans into breadcrumbs (``path > Class >
method``); a C# or PHP namespace only scopes the breadcrumb, and a Haskell type signature and
its equations, or the clauses of an Elixir function, are one definition.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..base.types import Chunk
from .comments import comment_above
from .grammars import Grammar, grammar_for, parser_for
from .refs import code_lines
from .specs import SECTION, Spec

if TYPE_CHECKING:  # tree_sitter is imported lazily: a broken install still gets windows
    from tree_sitter import Node, Query, QueryCursor

#: Longest signature (and name) a chunk keeps (characters).
MAX_SIGNATURE = 200
# Nodes with more children than this are queried child by child (see _captures).
_WIDE = 256

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
_FUNCTION_HOLDERS = frozenset({"variable_declarator", "field_definition", "public_field_definition"})
# Definitions that are only declarations without a body are not worth a chunk.
_NEEDS_BODY = frozenset({"struct_specifier", "union_specifier", "enum_specifier", "class_specifier", "mod_item"})


def safe_definitions(
    path: str, text: str, lines: list[str], language: str, with_text: bool = True, refs: list | None = None
) -> list[Chunk]:
    """The definitions of a file (see :func:`read_definitions`); none when the language has no
    grammar or the grammar fails on it. ``refs``, when given, receives the ``(row, name)`` uses
    of names in the file (:func:`core.chunking.refs.read_references`), from the same parse."""
    grammar = grammar_for(language)
    if grammar is None or grammar.query is None:
        return []
    try:
        return read_definitions(path, text, lines, language, grammar, with_text, refs)
    except Exception:  # a grammar bug must not cost the file its windows
        return []


def _end_row(node: Node, lines: list[str] | None = None) -> int:
    """0-based last row a node really occupies: a node ending at column 0, or (given the
    file's ``lines``) on the indentation of its last row, ends above (tree-sitter-scala
    ends an indented block at the next statement's indentation)."""
    row, col = node.end_point
    if row > node.start_point[0] and (
        col == 0 or (lines is not None and row < len(lines) and not lines[row][:col].strip())
    ):
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


def read_definitions(
    path: str,
    text: str,
    lines: list[str],
    language: str,
    grammar: Grammar,
    with_text: bool = True,
    refs: list | None = None,
) -> list[Chunk]:
    """One chunk per definition of a parsed file, outer before inner; without their text
    unless ``with_text`` (the budget cuts its own). ``refs`` receives the file's code lines and
    import paths (:func:`core.chunking.refs.code_lines`)."""
    from tree_sitter import QueryCursor

    source = text.encode("utf-8", errors="surrogatepass")
    tree = parser_for(grammar).parse(source)
    spec = grammar.spec
    both = grammar.both_query if refs is not None and spec.kind != SECTION else None  # prose uses no names
    found = _captures(tree.root_node, grammar, QueryCursor, both)
    captured = found["def"]
    if both is not None:
        refs.extend(code_lines(source, found["blank"], found["module"]))

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
                docstring = comment_above(lines, top, spec, d.attribute_rows)
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


def _next_clause(last: Chunk, name: str, start_line: int, lines: list[str], spec: Spec) -> bool:
    """Whether a definition starting at ``start_line`` continues ``last`` (of the same breadcrumb):
    the same name, with only blank or comment lines between them."""
    if last.symbol != name or start_line <= last.end_line:
        return False
    for i in range(last.end_line, start_line - 1):  # the lines between, 0-based
        s = lines[i].strip()
        if s and not s.startswith(spec.line_comments):
            return False
    return True


def _captures(
    root: Node, grammar: Grammar, cursor_type: type[QueryCursor], query: Query | None = None
) -> dict[str, list[Node]]:
    """The ``@def`` captures under ``root`` (with ``query``, :attr:`Grammar.both_query`, its
    ``@blank`` and ``@module`` ones too), querying wide nodes child by child.

    tree-sitter's query cursor is quadratic in the width of some nodes: 20 000 ``(`` in a
    row (one ERROR node with 20 000 children) take ~1 s to query, 50 000 ``{`` in Rust
    ~5 s, versus ~30 ms and ~75 ms when each child is queried on its own.
    """
    defs = grammar.spec.defs
    query = query or grammar.query
    found: dict[str, list[Node]] = {"def": [], "blank": [], "module": []}
    stack = [root]
    while stack:
        node = stack.pop()
        if node.child_count <= _WIDE:
            captures = cursor_type(query).captures(node)
            for name in found:  # not the patterns' helper captures (``@_name``)
                found[name].extend(captures.get(name, ()))
        else:
            if node.type in defs:  # patterns with conditions never match wide nodes
                found["def"].append(node)
            stack.extend(node.children)
    return found


def _read_definition(node: Node, source: bytes, lines: list[str], spec: Spec, language: str) -> _Def | None:
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


def _attributes_above(node: Node, spec: Spec, source: bytes) -> tuple[int, frozenset[int]]:
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


def _is_attribute(node: Node, spec: Spec, source: bytes) -> bool:
    return node.type in spec.attributes and (spec.is_attribute is None or spec.is_attribute(node, source))


def _is_comment(node: Node) -> bool:
    return "comment" in node.type or node.type == "haddock"


def _signature(d: _Def, source: bytes, spec: Spec, language: str) -> str:
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
