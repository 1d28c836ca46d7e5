"""The documentation above a definition: the comment block it reads from the lines, and the
cap on a chunk's docstring."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .specs.base import Spec

#: Longest docstring or leading comment a chunk keeps (characters).
MAX_DOCSTRING = 500
# How far up a block comment may reach: bounds the work on files of unterminated `*/`.
_MAX_COMMENT_LINES = 200
# The marks a comment line starts with: a block comment's leading `*`, a line comment's opener.
_STAR = re.compile(r"^\*(?!/)\s?")
_LINE_MARK = re.compile(r"^(//+|#+|--+)\s?")


def comment_above(lines: list[str], start_row: int, spec: Spec, skip: frozenset[int] = frozenset()) -> str:
    """The comment block ending on the line just above ``start_row`` (0-based), cleaned."""
    return comment_block(lines, start_row, spec, skip)[1]


def comment_block(lines: list[str], start_row: int, spec: Spec, skip: frozenset[int] = frozenset()) -> tuple[int, str]:
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
                block = [_STAR.sub("", ln) for ln in block]
            collected.extend(reversed(block))
            top = j
            i = j - 1
            continue
        if not s.startswith(spec.line_comments) or s.startswith(("//!", "#!")):
            break
        collected.append(_LINE_MARK.sub("", s))
        top = i
        i -= 1
    return top, cap("\n".join(reversed(collected)).strip())


# Block comments that document what encloses them (Rust `/*!`) or are no comment (Haskell pragmas).
_INNER_DOCS = ("/*!", "{-#")


def cap(text: str) -> str:
    """``text`` cut to :data:`MAX_DOCSTRING` characters (an ellipsis marks the cut)."""
    if len(text) > MAX_DOCSTRING:
        return text[: MAX_DOCSTRING - 1] + "…"
    return text
