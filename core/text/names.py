"""Names and words of code: what the ranking stage and the arms read from a query and a path.

:func:`shape` reads a query (a symbol lookup or a question, the identifiers it names, its
keywords); :func:`name_key` / :func:`stem_key` compare a name with file stems;
:func:`path_words`, :func:`name_parts`, :func:`chunk_words` and :func:`hit_words` give the words
of a path, of a file's stem and of a chunk's defined names and breadcrumbs; :func:`defined_names`
the names a chunk's ``symbol`` field defines. Plain functions of text (moved out of
:mod:`core.query.ranking`, which scores with them; :mod:`core.arms.symbols` and
:mod:`core.storage.chunktable` use them too).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from .tokenize import code_tokens, split_identifier

# --------------------------------------------------------------------------- the query


#: One identifier, optionally qualified (``Rails::Engine``, ``fmt::format``, ``Picker:find``,
#: ``self->field``, ``App\\Http\\Kernel``, ``a.b``).
_LOOKUP = re.compile(r"[A-Za-z_$][\w$]*(?:(?:::|->|\\|[.:#])[A-Za-z_$][\w$]*)*")
_SEPARATORS = re.compile(r"::|->|\\|[.:#/]")
#: Identifiers a question names in code form: CamelCase (``JsonConvert``), camelCase
#: (``beforeAll``), snake_case (``basic_format_args``) or qualified (``Picker:find``).
_EMBEDDED = re.compile(
    r"(?<![\w$])(?:"
    r"[A-Za-z_$][\w$]*(?:(?:::|->|[.:#])[A-Za-z_$][\w$]*)+"  # qualified
    r"|[A-Z][a-z0-9]+[A-Z][\w$]*"  # PascalCase with two humps
    r"|[a-z][a-z0-9]*[A-Z][\w$]*"  # camelCase
    r"|[A-Za-z][A-Za-z0-9]*_[\w$]+"  # snake_case
    r")(?![\w$])"
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
STOP_WORDS = frozenset(
    "a an and are as at be by can do does for from has have how if in into is it its not of on "
    "or the their them then there these this to was what when where which who why with "
    "work works working used use uses using get gets".split()
)


@dataclass(frozen=True)
class QueryShape:
    """What the ranking stage reads from a query.

    ``lookup``: the query is one identifier (perhaps qualified), a symbol lookup.
    ``names``: the identifiers it names, as written (the lookup's whole name and last part, or
    the code-form identifiers inside a question). ``keywords``: its content words (3 letters
    or more, stop words out), lowercased, for the path signal. ``words``: its code tokens,
    which lift priors (``tests`` lifts the tests prior).
    """

    text: str
    lookup: bool
    names: frozenset[str]
    keywords: frozenset[str]
    words: frozenset[str]


def _name_forms(name: str) -> set[str]:
    """``Rails::Engine`` -> {"Rails::Engine", "Engine"}: the whole name and its last part."""
    parts = [p for p in _SEPARATORS.split(name) if p]
    out = {name}
    if parts:
        out.add(parts[-1])
    return out


def name_key(name: str) -> str:
    """A name compared with file stems: its last part, normalised (``Rails::Engine`` -> engine)."""
    return _norm(_SEPARATORS.split(name)[-1] if _SEPARATORS.search(name) else name)


def stem_key(path: str) -> str:
    """A file's stem as :func:`name_key` compares it."""
    return _norm(_stem(path))


def qualifiers(name: str) -> list[str]:
    """The scope parts of a qualified name, lowercased: ``Rails::Engine`` -> ["rails"]."""
    return [p.lower() for p in _SEPARATORS.split(name)[:-1] if p]


def path_depth(path: str) -> int:
    return path.count("/")


def _matches(wanted: frozenset[str], defined: set[str]) -> set[str]:
    """The wanted names a chunk defines. A name with a capital letter must match exactly
    (``TypeAdapter`` is not the method ``typeAdapter``); an all-lowercase one (``formatter``)
    matches in any case."""
    found = wanted & defined
    loose = [n for n in wanted if n.islower() and n not in found]
    if loose:
        lowered = {d.lower() for d in defined}
        found |= {n for n in loose if n in lowered}
    return found


@lru_cache(maxsize=4096)
def shape(query: str) -> QueryShape:
    """The :class:`QueryShape` of ``query``."""
    text = query.strip()
    lookup = bool(_LOOKUP.fullmatch(text))
    names: set[str] = set()
    if lookup:
        names |= _name_forms(text)
    else:
        for m in _EMBEDDED.finditer(text):
            names |= _name_forms(m.group(0).strip(".:"))
    keywords = {w.lower() for w in _WORD.findall(text) if len(w) > 2 and w.lower() not in STOP_WORDS}
    return QueryShape(text, lookup, frozenset(names), frozenset(keywords), frozenset(code_tokens(text)))


# --------------------------------------------------------------------------- paths


def _norm(name: str) -> str:
    """Compare file stems and symbol names loosely: ``web_middlewares`` ~ ``webmiddleware``."""
    n = name.lower().replace("_", "").replace("-", "")
    return n[:-1] if n.endswith("s") and len(n) > 3 else n


@lru_cache(maxsize=1 << 16)
def _stem(path: str) -> str:
    base = posixpath.basename(path)
    return base.split(".", 1)[0] if not base.startswith(".") else base


@lru_cache(maxsize=1 << 16)
def path_words(path: str) -> frozenset[str]:
    """The words of a file's stem and its folder's name, lowercased, whole and split."""
    out: set[str] = set()
    for part in (_stem(path), posixpath.basename(posixpath.dirname(path))):
        if part:
            out.add(part.lower())
            out.update(split_identifier(part))
    return frozenset(w for w in out if len(w) > 1)


#: Endings a word may lose and still be the same word (``serializer`` ~ ``serialization``).
_SUFFIXES = frozenset({"er", "or", "es", "ed", "al", "ly", "ing", "ion"})


@lru_cache(maxsize=1 << 16)
def _alike(a: str, b: str) -> bool:
    """Two words are one word in another form: equal, or sharing a prefix of 4+ letters that
    misses at most the shorter's last letter or an inflection (``dependency`` ~
    ``dependencies``, ``serializer`` ~ ``serialization``, ``route`` ~ ``router``; not
    ``request`` ~ ``require`` or ``compose`` ~ ``component``)."""
    if a == b:
        return True
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    short = a if len(a) <= len(b) else b
    missed = short[n:]
    return n >= 4 and (len(missed) <= 1 or missed in _SUFFIXES)


@lru_cache(maxsize=1 << 16)
def name_parts(path: str) -> tuple[str, ...]:
    """The words of a file's stem, lowercased (``Request+Session.swift`` -> request, session;
    ``poolRunner.ts`` -> pool, runner; ``fs-poll.c`` -> fs, poll)."""
    return tuple(w for w in split_identifier(_stem(path)) if len(w) > 1) or (_stem(path).lower(),)


@lru_cache(maxsize=1 << 16)
def label_words(text: str) -> frozenset[str]:
    """The words of a ``symbol`` field or of a breadcrumb without its path (``Class > method``),
    as :func:`code_tokens` splits them (two letters or more)."""
    return frozenset(w for w in code_tokens(text) if len(w) > 1)


@lru_cache(maxsize=1 << 16)
def chunk_words(symbols: tuple[str, ...], context: str) -> frozenset[str]:
    """The words of a chunk's defined names and of its breadcrumb without its path."""
    words: set[str] = set()
    for field in symbols:
        words |= label_words(field)
    _, sep, rest = context.partition(" > ")
    if sep:
        words |= label_words(rest)
    return frozenset(words)


@lru_cache(maxsize=1 << 16)
def hit_words(symbols: tuple[str, ...], crumbs: tuple[str, ...]) -> frozenset[str]:
    """The words of a hit's defined names and of each of its breadcrumbs without its path
    (:func:`chunk_words` of the names, and of each breadcrumb)."""
    words = chunk_words(symbols, "")
    for crumb in crumbs:
        words = words | chunk_words((), crumb)
    return words


def defined_names(symbols: Iterable[str]) -> set[str]:
    """Every name a chunk's ``symbol`` field defines, in the forms :func:`shape` compares."""
    out: set[str] = set()
    for field in symbols:
        for name in field.split():
            out |= _name_forms(name)
    return out
