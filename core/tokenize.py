"""Code-aware tokenization shared by the lexical arms.

An identifier such as ``parseHTTPResponse2`` yields itself whole (``parsehttpresponse2``)
and its parts (``parse``, ``http``, ``response``, ``2``), all lowercased, so a query can
match either the exact symbol or the words inside it.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
# Split points inside an identifier: snake_case, camelCase, HTTPServer, digits.
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def identifiers(text: str) -> list[str]:
    """Whole identifiers and numbers, lowercased, in order (the FTS5 view of the text)."""
    return [m.group(0).lower() for m in _WORD.finditer(text)]


def split_identifier(word: str) -> list[str]:
    """The sub-words of one identifier, lowercased (``getHTTPCode`` -> get, http, code)."""
    return [p.lower() for p in _PART.findall(word)]


def code_tokens(text: str) -> list[str]:
    """Each identifier whole, then its sub-words when it has more than one."""
    out: list[str] = []
    for m in _WORD.finditer(text):
        word = m.group(0)
        whole = word.lower()
        out.append(whole)
        parts = _PART.findall(word)
        if len(parts) > 1 or (parts and parts[0].lower() != whole):
            out.extend(p.lower() for p in parts)
    return out
