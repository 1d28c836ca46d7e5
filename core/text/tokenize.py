"""Code-aware tokenization shared by the lexical arms.

An identifier such as ``parseHTTPResponse2`` yields itself whole (``parsehttpresponse2``)
and its parts (``parse``, ``http``, ``response``, ``2``), all lowercased, so a query can
match either the exact symbol or the words inside it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# Runs of letters, digits and '_' — what FTS5's unicode61 tokenizer (with '_' as a token
# character) calls a token, so the lexical arms agree on word boundaries. \w is
# Unicode-aware, so identifiers in any script are kept.
WORD = re.compile(r"\w+")
# Split points inside an identifier: snake_case, camelCase, HTTPServer, digits.
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def identifiers(text: str) -> list[str]:
    """Whole identifiers and numbers, lowercased, in order (the FTS5 view of the text)."""
    return [m.group(0).lower() for m in WORD.finditer(text)]


def split_identifier(word: str) -> list[str]:
    """The sub-words of one identifier, lowercased (``getHTTPCode`` -> get, http, code)."""
    return [p.lower() for p in _PART.findall(word)]


def _expand(word: str) -> tuple[str, ...]:
    whole = word.lower()
    if not word.isascii():
        return (whole,)  # the case-splitting rules are ASCII ones
    parts = _PART.findall(word)
    if len(parts) > 1 or (parts and parts[0].lower() != whole):
        return (whole, *(p.lower() for p in parts))
    return (whole,)


# Identifiers repeat heavily across a codebase; expanding each distinct one once makes
# tokenizing an index several times faster. Cleared when it grows past a bound.
_EXPANSIONS: dict[str, tuple[str, ...]] = {}
_MAX_EXPANSIONS = 500_000


def expansion(word: str) -> tuple[str, ...]:
    found = _EXPANSIONS.get(word)
    if found is None:
        if len(_EXPANSIONS) >= _MAX_EXPANSIONS:
            _EXPANSIONS.clear()
        found = _EXPANSIONS[word] = _expand(word)
    return found


def code_tokens(text: str) -> list[str]:
    """Each identifier whole, then its sub-words when it has more than one."""
    out: list[str] = []
    for word in WORD.findall(text):
        out.extend(expansion(word))
    return out


#: Longest run of a question's words joined into one identifier (``JSON object`` ->
#: ``jsonobject``, ``json_object``; ``connection pool limits`` -> ``connectionpoollimits``).
COMPOUND_WORDS = 3


def compounds(text: str) -> list[str]:
    """A question's runs of 2 to :data:`COMPOUND_WORDS` adjacent words, each joined as an
    identifier would be tokenized whole: run together and with ``_`` (in order, no repeats;
    only runs of plain words, a few letters in all). The caller keeps those an index holds: a
    question that names a class in words ("the JSON object") then matches its definition."""
    words = [w.lower() for w in WORD.findall(text)]
    out: dict[str, None] = {}
    for n in range(2, COMPOUND_WORDS + 1):
        for i in range(len(words) - n + 1):
            run = words[i : i + n]
            if all(w.isalpha() and w.isascii() for w in run) and sum(map(len, run)) >= 6:
                out["".join(run)] = None
                out["_".join(run)] = None
    return list(out)


def query_terms(text: str, known: Callable[[list[str]], list[bool]]) -> list[str]:
    """:func:`code_tokens` of a query, then those of its :func:`compounds` the tokens do not
    already have and ``known`` (the index's vocabulary, asked once for all) holds."""
    tokens = code_tokens(text)
    seen = set(tokens)
    extra = [c for c in compounds(text) if c not in seen]
    return tokens + [c for c, ok in zip(extra, known(extra) if extra else []) if ok]
