"""The ranking stage: code-aware signals that re-score the fused hits, each named and explained.

Reciprocal Rank Fusion knows ranks, not code. On repositories ranklens has never seen, four
facts about a hit predict whether it answers a question better than its fused score alone
(measured on the public code-search benchmark: ``python -m evals.tune_stage``):

``definition``
    The hit *defines* a symbol the query names: a bare ``TypeAdapter``, or ``JsonConvert``
    inside a question. The file whose stem is that name (``TypeAdapter.java``) gets more.
``path``
    Query words are the file's stem or its folder (``middleware`` -> ``web_middlewares.py``,
    ``dependency`` -> ``dependencies/utils.py``): file names say what code is about.
``file-evidence``
    Several hits of one file ranked by the arms mean the file is about the question: the
    best hit of each file gains in proportion to its file's total score.

Boosts are additive, in units of the best fused score of the query (so they mean the same
whatever k and the weights are); then the path priors (:mod:`core.priors`: tests, examples,
project docs, documentation, non-code) multiply; then ``diversity``: a file's second and
later hits are scaled down, so ten hits show several files rather than one file ten times.
Every step a hit went through is on the hit (``ConsolidatedHit.signals`` / ``priors``), shown
in the terminal UI's preview and the JSON.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from .tokenize import code_tokens, split_identifier
from .types import AppliedPrior, AppliedSignal

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


def _fuzzy_hits(keywords: Iterable[str], words: frozenset[str]) -> int:
    """How many keywords are, in some form (:func:`_alike`), one of the path's words."""
    return sum(1 for kw in keywords if kw in words or any(_alike(kw, w) for w in words))


def defined_names(symbols: Iterable[str]) -> set[str]:
    """Every name a chunk's ``symbol`` field defines, in the forms :func:`shape` compares."""
    out: set[str] = set()
    for field in symbols:
        for name in field.split():
            out |= _name_forms(name)
    return out


# --------------------------------------------------------------------------- the stage


@dataclass(frozen=True)
class Params:
    """The stage's constants, chosen on the public benchmark by repository-held-out
    cross-validation (``python -m evals.tune_stage``; the figures are in the README)."""

    #: A symbol lookup: boost, in units of the best fused score, for a hit defining the name.
    definition: float = 2.0
    #: A question naming an identifier: the same boost is this share of ``definition``.
    embedded_share: float = 0.5
    #: Multiplies the definition boost when the file's stem is the name (``Router.php``).
    stem_bonus: float = 1.5
    #: Boost per share of the question's keywords that the file's stem or folder holds.
    path: float = 3.0
    #: Boost for each file's best hit, times its file's total score over the best file's.
    file_evidence: float = 1.0
    #: A file's n-th further hit is multiplied by ``diversity ** n``.
    diversity: float = 0.3


DEFAULT_PARAMS = Params()

REASONS = {
    "definition": "defines {name}, which the query names",
    "path": "the file's name or folder matches {words}",
    "file-evidence": "the file holds {n} ranked hits ({share:.0%} of the best file's total score)",
    "diversity": "the file already has {n} better hit(s) above",
}


class Stage:
    """The ranking stage for one query (see the module docstring).

    ``priors``: path -> (factor, applied priors), from :func:`core.priors.adjuster`.
    """

    def __init__(
        self,
        query: str,
        priors: Callable[[str], tuple[float, list[AppliedPrior]]],
        params: Params = DEFAULT_PARAMS,
    ) -> None:
        self.shape = shape(query)
        self.priors = priors
        self.params = params

    def score(
        self, paths: list[str], fused: list[float], symbols: list[Iterable[str]]
    ) -> tuple[list[float], list[list[AppliedSignal]]]:
        """Boosted scores (before priors and diversity) of hits given their paths, fused
        scores and defined names, with the signals each received."""
        p = self.params
        q = self.shape
        unit = max(fused) if fused else 0.0
        scores = list(fused)
        applied: list[list[AppliedSignal]] = [[] for _ in fused]
        if unit <= 0:
            return scores, applied
        if q.names and p.definition:
            base = p.definition * (1.0 if q.lookup else p.embedded_share)
            norm_names = {name_key(n) for n in q.names}
            for i, syms in enumerate(symbols):
                found = _matches(q.names, defined_names(syms))
                if not found:
                    continue
                bonus = p.stem_bonus if stem_key(paths[i]) in norm_names else 1.0
                boost = unit * base * bonus
                scores[i] += boost
                name = max(found, key=len)
                applied[i].append(AppliedSignal("definition", REASONS["definition"].format(name=name), boost))
        if q.keywords and not q.lookup and p.path:
            n_kw = len(q.keywords)
            for i, path in enumerate(paths):
                matched = _fuzzy_hits(q.keywords, path_words(path))
                if matched:
                    boost = unit * p.path * matched / n_kw
                    scores[i] += boost
                    words = ", ".join(sorted(w for w in q.keywords if _fuzzy_hits((w,), path_words(path))))
                    applied[i].append(AppliedSignal("path", REASONS["path"].format(words=words), boost))
        if p.file_evidence:
            totals: dict[str, float] = {}
            counts: dict[str, int] = {}
            best: dict[str, int] = {}
            for i, path in enumerate(paths):
                totals[path] = totals.get(path, 0.0) + scores[i]
                counts[path] = counts.get(path, 0) + 1
                if path not in best or scores[i] > scores[best[path]]:
                    best[path] = i
            top = max(totals.values())
            if top > 0:
                for path, i in best.items():
                    share = totals[path] / top
                    boost = unit * p.file_evidence * share
                    scores[i] += boost
                    reason = REASONS["file-evidence"].format(n=counts[path], share=share)
                    applied[i].append(AppliedSignal("file-evidence", reason, boost))
        return scores, applied

    def order(self, paths: list[str], scores: list[float]) -> list[tuple[int, float, int]]:
        """Indexes best first with their final scores (priors applied, then diversity), and
        how many better hits of the same file each has above it."""
        adjusted = [(scores[i] * self.priors(path)[0], i) for i, path in enumerate(paths)]
        adjusted.sort(key=lambda t: (-t[0], paths[t[1]], t[1]))
        seen: dict[str, int] = {}
        out = []
        decay = self.params.diversity
        for s, i in adjusted:
            n = seen.get(paths[i], 0)
            seen[paths[i]] = n + 1
            out.append((i, s * decay**n if n else s, n))
        out.sort(key=lambda t: (-t[1], paths[t[0]], t[0]))
        return out

    def diversity_signal(self, n: int) -> AppliedSignal:
        return AppliedSignal("diversity", REASONS["diversity"].format(n=n), 0.0, self.params.diversity**n)


def describe(params: Params = DEFAULT_PARAMS) -> list[dict]:
    """The signals as data (name, what it does, its constant), for help texts and reports."""
    return [
        {"name": "definition", "reason": "the hit defines a symbol the query names", "value": params.definition},
        {"name": "path", "reason": "query words are the file's stem or folder", "value": params.path},
        {"name": "file-evidence", "reason": "the file holds several ranked hits", "value": params.file_evidence},
        {"name": "diversity", "reason": "a file's further hits are scaled down", "value": params.diversity},
    ]
