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
``name-coverage``
    The query names the words of the file's stem, all of them or most: ``Request.swift`` for
    "the Request type", where ``HTTPMediaType.swift`` has one word of three named.
``file-evidence``
    Several hits of one file ranked by the arms mean the file is about the question: the
    best hit of each file gains in proportion to its file's total score.
``coverage``
    The file's stem and folder, with the names its ranked chunks define and their
    breadcrumbs (``Class > method``), hold many of the question's keywords: every hit of the
    file gains in proportion to the share held (after ``file-evidence``, which does not sum
    it). A file that covers the question's several concepts beats one that matches one
    of them often.
``depth`` and ``name-length``
    The file that answers a question is more often the general one than a specialised
    neighbour: a file higher in the tree than the query's typical candidate (the median of
    the candidates), or with fewer words in its name (``Request.swift`` against
    ``Request+Session.swift``, ``pool.ts`` against ``poolRunner.ts``), is lifted, one that is
    deeper or longer-named lowered, by one step at most.

Boosts are additive, in units of the best fused score of the query (so they mean the same
whatever k and the weights are); then ``depth``, ``name-length`` and the path priors
(:mod:`core.query.priors`: tests, examples, project docs, documentation, non-code) multiply; then
``diversity``: a file's second and later hits are scaled down, so ten hits show several
files rather than one file ten times; the first file's less (``top_file_diversity``), since
the function that answers is often its second-best chunk and a reader opens it first.
Every step a hit went through is on the hit (``ConsolidatedHit.signals`` / ``priors``), shown
in the terminal UI's preview and the JSON.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from operator import attrgetter
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..base.types import AppliedPrior, AppliedSignal
from ..text.names import (
    _alike,
    _matches,
    chunk_words,
    defined_names,
    hit_words,
    name_key,
    name_parts,
    path_depth,
    path_words,
    shape,
    stem_key,
)

if TYPE_CHECKING:
    from .fusion import Fused

_NONE: frozenset[str] = frozenset()
_FACTOR = attrgetter("factor")


@lru_cache(maxsize=1 << 14)
def _by_prefix(words: frozenset[str]) -> dict[str, tuple[str, ...]]:
    """``words`` by their first four letters: a word and the keywords it is a form of share
    them (:meth:`Stage.forms`), so only the words under a keyword's prefix are compared, and
    a set with none holds no keyword (one intersection)."""
    out: dict[str, list[str]] = {}
    for w in words:
        out.setdefault(w[:4], []).append(w)
    return {prefix: tuple(found) for prefix, found in out.items()}


class UnitLabels(NamedTuple):
    """A file's units by what their names hold (:func:`unit_labels`)."""

    #: The first four letters of a word of a unit's names and breadcrumb -> each such word ->
    #: the positions of the units holding it.
    prefixes: dict[str, dict[str, list[int]]]
    #: Each name a unit defines (:func:`defined_names`) -> its positions; and lowercased.
    names: dict[str, list[int]]
    lowered: dict[str, list[int]]


def unit_labels(shape) -> UnitLabels:
    """The :class:`UnitLabels` of a :class:`core.query.chunkstep.Skeleton`'s units, made once per
    skeleton (it is kept per index view, so this is worked out once, not per query)."""
    found = shape.memo.get("labels")
    if found is None:
        prefixes: dict[str, dict[str, list[int]]] = {}
        names: dict[str, list[int]] = {}
        lowered: dict[str, list[int]] = {}
        for i, (_start, _end, context, symbols, *_rest) in enumerate(shape.units):
            for word in chunk_words(tuple(symbols), context):
                prefixes.setdefault(word[:4], {}).setdefault(word, []).append(i)
            for name in defined_names(symbols):
                names.setdefault(name, []).append(i)
                lowered.setdefault(name.lower(), []).append(i)
        found = shape.memo["labels"] = UnitLabels(prefixes, names, lowered)
    return found


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
    #: Boost times the share of the words of the file's stem the query names (in some form).
    name_coverage: float = 0.25
    #: Boost for every hit of a file, times the share of the question's keywords its path,
    #: defined names and breadcrumbs hold (among the ranked chunks).
    coverage: float = 0.15
    #: Boost for each file's best hit, times its file's total score over the best file's.
    file_evidence: float = 1.0
    #: A file's n-th further hit is multiplied by ``diversity ** n``.
    diversity: float = 0.3
    #: ... and the first file's (the one the stage ranks best) by ``top_file_diversity ** n``:
    #: the file a reader opens first may show a second function (issue #18).
    top_file_diversity: float = 0.7
    #: A file deeper in the tree than the median candidate's is multiplied by this, a
    #: shallower one divided by it (one level at most; 1.0: off).
    depth: float = 0.85
    #: The same for the number of words in the file's stem (one word at most; 1.0: off).
    name_length: float = 0.8
    #: Boost for a hit holding a passage the question quotes (an error message pasted in).
    quote: float = 2.0
    #: The chunk step (:mod:`core.query.chunkstep`): every chunk of this many top files competes for
    #: the file's places (0: off, each file shows the chunks the arms returned).
    chunk_files: int = 5
    #: A unit's chunk score: its arms' ranks within the file (weighted RRF), plus this times
    #: the fused score of its group among the arms' own candidates ...
    chunk_fused: float = 1.5
    #: ... plus, in units of an arm's first place, this when it defines a name the query names
    chunk_definition: float = 1.0
    #: ... and this times the share of the query's keywords its breadcrumb and names hold.
    chunk_label: float = 1.0
    #: ... and this when it holds a passage the question quotes.
    chunk_quote: float = 2.0
    #: ... less this, for a question in words, when it only declares (fields, signatures,
    #: constants: ``Chunk.declaration``); the ``chunk`` signal says so (issue #42).
    chunk_declaration: float = 1.0
    #: ... and, for a question in words, this times the best score among the units of its
    #: file that call it (use a name it defines), when it defines one name: the helper a
    #: well-ranked unit calls is often the code that answers (``core.graph.within``; 0: off;
    #: chosen by cross-validation over repositories, every fold 0.2: issue #42).
    chunk_called: float = 0.2


DEFAULT_PARAMS = Params()

REASONS = {
    "definition": "defines {name}, which the query names",
    "quote": 'holds "{phrase}", which the query quotes',
    "path": "the file's name or folder matches {words}",
    "name-coverage": "the query names {n} of the {m} word(s) of the file's name",
    "coverage": "the file's path, names and breadcrumbs hold {words}",
    "file-evidence": "the file holds {n} ranked hits ({share:.0%} of the best file's total score)",
    "depth": "the file is {n} folder level(s) {way} than the median candidate",
    "name-length": "the file's name has {way} words than the median candidate's ({n} against {m})",
    "diversity": "the file already has {n} better hit(s) above",
}


class Stage:
    """The ranking stage for one query (see the module docstring).

    ``priors``: path -> (factor, applied priors), from :func:`core.query.priors.adjuster`.
    """

    def __init__(
        self,
        query: str,
        priors: Callable[[str], tuple[float, list[AppliedPrior]]],
        params: Params = DEFAULT_PARAMS,
        quoted: Mapping[str, list[tuple[int, int, str]]] | None = None,
    ) -> None:
        self.shape = shape(query)
        self.priors = priors
        self.params = params
        #: path -> the chunks (start, end, phrase) holding a passage the query quotes
        self.quoted = quoted or {}
        self._by_prefix: dict[str, list[str]] = {}
        for kw in self.shape.keywords:
            self._by_prefix.setdefault(kw[:4], []).append(kw)
        self._prefixes = frozenset(self._by_prefix)
        self._forms: dict[str, tuple[str, ...]] = {}
        self._held_of: dict[frozenset[str], frozenset[str]] = {}
        self._diversity: dict[tuple[int, bool], AppliedSignal] = {}
        self._file_parts: dict[tuple[str, ...], dict | None] = {}
        self._decays: dict[bool, np.ndarray] = {}

    def forms(self, word: str) -> tuple[str, ...]:
        """The query's keywords ``word`` is a form of (:func:`_alike`), memoised for the query.
        Alike words share their first four letters (or are equal), so only the keywords with
        the word's prefix are compared."""
        found = self._forms.get(word)
        if found is None:
            near = self._by_prefix.get(word[:4])
            found = self._forms[word] = tuple(kw for kw in near if _alike(kw, word)) if near else ()
        return found

    def _held(self, words: frozenset[str]) -> frozenset[str]:
        """The keywords some of ``words`` are forms of, memoised for the query: the word sets
        of paths and chunks are cached objects that recur across a query's candidates."""
        found = self._held_of.get(words)
        if found is None:
            index = _by_prefix(words)
            near = self._prefixes.intersection(index)
            found = frozenset(kw for p in near for w in index[p] for kw in self.forms(w)) if near else _NONE
            self._held_of[words] = found
        return found

    def score(
        self,
        paths: list[str],
        fused: list[float],
        symbols: list[Iterable[str]],
        contexts: list[Iterable[str]] | None = None,
        spans: list[tuple[int, int]] | None = None,
        at: np.ndarray | None = None,
    ) -> tuple[list[float], list[list[AppliedSignal]], list[float]]:
        """Boosted scores (before priors and diversity) of hits given their paths, fused
        scores, defined names and breadcrumbs (``path > Class > name``; none: names only),
        with the signals each received and the product of their factors (``depth`` and
        ``name-length``, which :meth:`order` multiplies in). ``spans`` (their lines) serve the
        ``quote`` signal, ``at`` (a number per file, any) the ``file-evidence`` signal. The
        boosts are in units of the best of ``fused``."""
        p = self.params
        q = self.shape
        unit = max(fused) if fused else 0.0
        scores = list(fused)
        applied: list[list[AppliedSignal]] = [_NO_SIGNALS] * len(fused)  # a list made at its first
        factors = [1.0] * len(fused)
        if unit <= 0:
            return scores, applied, factors
        if (q.names and p.definition) or (self.quoted and spans is not None and p.quote):
            for i, path in enumerate(paths):
                for signal in self.span_signals(path, spans[i] if spans is not None else None, symbols[i], unit):
                    scores[i] += signal.boost
                    _add(applied, i, signal)
        # path, name-coverage, depth and name-length: each file's once (a query's ~75
        # candidates come from ~35 files), then added to (and listed on) each of its hits.
        for i, (boosts, signals, factor) in enumerate(self._file_signals(paths, unit)):
            for boost in boosts:
                scores[i] += boost
            if signals:
                applied[i] = [*applied[i], *signals]
                factors[i] = factor
        if p.file_evidence:
            # Per file: its hits' total (summed in their order), how many, and its best hit
            # (the first of the highest): all files at once.
            if at is None:
                number = {path: n for n, path in enumerate(dict.fromkeys(paths))}
                at = np.array([number[path] for path in paths])
            of = np.unique(at, return_inverse=True)[1]
            got = np.array(scores)
            totals = np.bincount(of, weights=got).tolist()
            counts = np.bincount(of).tolist()
            ranked = np.lexsort((np.arange(len(got)), -got, of))
            best = ranked[np.searchsorted(of[ranked], np.arange(len(counts)))].tolist()
            top = max(totals)
            if top > 0:
                for f, i in enumerate(best):
                    share = totals[f] / top
                    boost = unit * p.file_evidence * share
                    scores[i] += boost
                    reason = REASONS["file-evidence"].format(n=counts[f], share=share)
                    _add(applied, i, AppliedSignal("file-evidence", reason, boost))
        if q.keywords and not q.lookup and p.coverage:  # after file-evidence: not summed into it
            self._coverage(paths, symbols, contexts, unit, scores, applied)
        return scores, applied, factors

    def _coverage(self, paths, symbols, contexts, unit, scores, applied) -> None:
        """``coverage``: the share of the keywords each file's path words, defined names and
        breadcrumbs hold (in some form, :func:`_alike`), added to every hit of the file."""
        by_file: dict[str, set[str]] = {}  # per file: the keywords its words hold
        held_in = self._held
        for i, path in enumerate(paths):
            found = by_file.get(path)
            if found is None:
                found = by_file[path] = set(held_in(path_words(path)))
            # The keywords a set of words holds are those each word holds: one set per hit.
            found |= held_in(hit_words(tuple(symbols[i]), tuple(contexts[i]) if contexts is not None else ()))
        n = len(self.shape.keywords)
        signals: dict[str, AppliedSignal | None] = {}  # per file: its signal, if its words hold keywords
        for path, found in by_file.items():
            words = sorted(found)
            signals[path] = (
                AppliedSignal(
                    "coverage",
                    REASONS["coverage"].format(words=", ".join(words)),
                    unit * self.params.coverage * len(words) / n,
                )
                if words
                else None
            )
        for i, path in enumerate(paths):
            signal = signals[path]
            if signal is not None:
                scores[i] += signal.boost
                _add(applied, i, signal)

    def _file_signals(
        self, paths: list[str], unit: float
    ) -> list[tuple[tuple[float, ...], tuple[AppliedSignal, ...], float]]:
        """Per hit of ``paths``: the boosts its file's ``path`` and ``name-coverage`` signals
        add (in that order), the signals, those two then ``depth`` and ``name-length`` (a
        factor from where the file sits among the candidates, which :meth:`order` multiplies
        in), and the product of their factors; worked out once per file and, but for the
        boosts (in units of ``unit``), once per query and candidates (a re-fuse keeps them)."""
        key = tuple(paths)
        parts = self._file_parts.get(key)
        if parts is None:
            if len(self._file_parts) >= 8:  # a weight set to 0 drops candidates; a few sets
                self._file_parts.clear()
            parts = self._file_parts[key] = self._files(paths)
        if parts is None:
            return [((), (), 1.0)] * len(paths)
        per_file = {}
        for path, (specs, steps, factor) in parts.items():
            signals = tuple(AppliedSignal(name, reason, unit * a * b / c) for name, reason, a, b, c in specs)
            per_file[path] = (tuple(s.boost for s in signals), signals + steps, factor)
        return [per_file[path] for path in paths]

    def _files(self, paths: list[str]) -> dict | None:
        """:meth:`_file_signals` per file but for ``unit``: the ``path`` and ``name-coverage``
        signals as (name, reason, a, b, c) (the boost is ``unit * a * b / c``), the
        ``depth`` and ``name-length`` signals and their factors' product; None: no file has
        any."""
        p, q = self.params, self.shape
        keyed = bool(q.keywords) and not q.lookup
        with_path, with_name = keyed and bool(p.path), keyed and bool(p.name_coverage)
        steps = []
        if len(paths) >= 2 and not (p.depth == 1.0 and p.name_length == 1.0):
            of_file = {x: (path_depth(x), len(name_parts(x))) for x in dict.fromkeys(paths)}
            for name, factor, at, ways in (
                ("depth", p.depth, 0, ("higher", "deeper")),
                ("name-length", p.name_length, 1, ("fewer", "more")),
            ):
                if factor != 1.0:
                    values = sorted(of_file[x][at] for x in paths)
                    steps.append((name, factor, at, ways, values[len(values) // 2]))  # the upper median
        if not (with_path or with_name or steps):
            return None
        n_kw = len(q.keywords)
        per_file: dict[str, tuple[tuple, tuple[AppliedSignal, ...], float]] = {}
        made: dict = {}
        for path in dict.fromkeys(paths):
            specs = []
            if with_path:
                found = sorted(self._held(path_words(path)))
                if found:
                    reason = REASONS["path"].format(words=", ".join(found))
                    specs.append(("path", reason, p.path, len(found), n_kw))
            if with_name:
                parts = name_parts(path)
                named = sum(1 for w in parts if self.forms(w))
                if named:
                    reason = REASONS["name-coverage"].format(n=named, m=len(parts))
                    specs.append(("name-coverage", reason, p.name_coverage, named, len(parts)))
            signals: list[AppliedSignal] = []
            for name, factor, at, (less, more), median in steps:
                v = of_file[path][at]
                signal = made.get((at, v), made)
                if signal is made:  # per value: its signal (one median for all)
                    f = factor ** max(-1, min(1, v - median))
                    if f == 1.0:
                        signal = None
                    else:
                        way = less if v < median else more
                        n = abs(v - median) if name == "depth" else v
                        signal = AppliedSignal(name, REASONS[name].format(n=n, way=way, m=median), 0.0, f)
                    made[(at, v)] = signal
                if signal is not None:
                    signals.append(signal)
            per_file[path] = (tuple(specs), tuple(signals), math.prod(map(_FACTOR, signals)))
        return per_file

    def order(
        self, files: Sequence[str], at: np.ndarray, scores: Sequence[float], factors: Sequence[float]
    ) -> list[tuple[int, float, int]]:
        """Indexes best first with their final scores (each hit's ``factors``, :meth:`score`'s
        ``depth`` and ``name-length``; the priors; then diversity), and how many better hits of
        the same file each has above it. ``files``: the hits' files, sorted; ``at``: each
        hit's file, its position there. Ties go to the file first in that order, then the
        earlier hit."""
        n = len(scores)
        if not n:
            return []
        prior = self.priors
        s = np.asarray(scores) * np.array([prior(f)[0] for f in files])[at] * np.asarray(factors)
        # By score, then file, then index (unique): the order of the tuples (-score, file, i).
        hits = np.arange(n)
        ranked = np.lexsort((hits, at, -s))
        file_of = at[ranked]
        # How many hits of its file each has above it, in that order.
        by_file = np.argsort(file_of, kind="stable")
        grouped = file_of[by_file]
        above = np.empty(n, dtype=np.int64)
        above[by_file] = hits - np.searchsorted(grouped, grouped)
        most = int(above.max())
        # d ** n per file: the first file's decay, the others'; x1.0 for each file's best hit.
        top, other = self._powers(True, most), self._powers(False, most)
        final = s[ranked] * np.where(file_of == file_of[0], top[above], other[above])
        again = np.lexsort((ranked, file_of, -final))
        return list(zip(ranked[again].tolist(), final[again].tolist(), above[again].tolist()))

    def _powers(self, top: bool, most: int) -> np.ndarray:
        """:meth:`decay` to the powers 0..``most`` at least (kept for the query): Python's float
        powers, as the hits' diversity signals say."""
        found = self._decays.get(top)
        if found is None or len(found) <= most:
            d = self.decay(top)
            found = self._decays[top] = np.array(
                [d**m for m in range(max(most + 1, 0 if found is None else 2 * len(found)))]
            )
        return found

    def decay(self, top: bool) -> float:
        """``diversity``'s factor per further hit of a file (of the first file: ``top``)."""
        return self.params.top_file_diversity if top else self.params.diversity

    def span_signals(
        self, path: str, span: tuple[int, int] | None, symbols: Iterable[str], unit: float
    ) -> list[AppliedSignal]:
        """The signals a span earns by itself (in units of ``unit``, the query's best fused
        score): ``definition`` when it defines a name the query names, ``quote`` when it holds
        a passage the query quotes. The chunk step's units are asked again when placed."""
        p, q = self.params, self.shape
        out = []
        if q.names and p.definition:
            found = _matches(q.names, defined_names(symbols))
            if found:
                # The longest; the first in order among equals (a set's order differs between processes).
                reason = REASONS["definition"].format(name=max(sorted(found), key=len))
                out.append(AppliedSignal("definition", reason, self.definition_boost(path, unit)))
        if span is not None and p.quote and path in self.quoted:
            phrase = quote_in(self.quoted[path], *span)
            if phrase:
                out.append(AppliedSignal("quote", REASONS["quote"].format(phrase=phrase), unit * p.quote))
        return out

    def definition_boost(self, path: str, unit: float) -> float:
        """The ``definition`` boost of a hit of ``path`` defining a name the query names (in
        units of ``unit``)."""
        p = self.params
        base = p.definition * (1.0 if self.shape.lookup else p.embedded_share)
        norm_names = {name_key(n) for n in self.shape.names}
        bonus = p.stem_bonus if stem_key(path) in norm_names else 1.0
        return unit * base * bonus

    def named(self, symbols: Iterable[str]) -> set[str]:
        """The names the query names that ``symbols`` (``symbol`` fields) define."""
        return _matches(self.shape.names, defined_names(symbols)) if self.shape.names else set()

    def label_keywords(self, symbols: Iterable[str], context: str) -> list[str]:
        """The query's keywords (in some form) that a chunk's defined names and breadcrumb
        (without its path) hold: what the chunk is about, by its own names."""
        if not self.shape.keywords or self.shape.lookup:
            return []
        found = self._held(chunk_words(tuple(symbols), context))
        return sorted(found) if found else []

    def labelled(self, shape) -> dict[int, tuple[set[str], list[str]]]:
        """Per unit of a :class:`core.query.chunkstep.Skeleton` (its position) whose names or
        breadcrumb hold something: what :meth:`named` finds in its names and
        :meth:`label_keywords` in its names and breadcrumb; every other unit's are empty.
        Worked out from the file's :func:`unit_labels`: a word is a form of a keyword only
        under the keyword's first four letters (:meth:`forms`), and a name matches as
        :func:`_matches` compares (exactly, or in any case when it is lowercase)."""
        q = self.shape
        labels = unit_labels(shape)
        held: dict[int, set[str]] = {}
        if q.keywords and not q.lookup:
            for prefix in self._prefixes:
                for word, units in labels.prefixes.get(prefix, {}).items():
                    for kw in self.forms(word):
                        for n in units:
                            found = held.get(n)
                            if found is None:
                                held[n] = {kw}
                            else:
                                found.add(kw)
        named: dict[int, set[str]] = {}
        for name in q.names:
            for n in labels.names.get(name, ()):
                named.setdefault(n, set()).add(name)
            if name.islower():
                for n in labels.lowered.get(name, ()):
                    named.setdefault(n, set()).add(name)
        return {n: (named.get(n, set()), sorted(held[n]) if n in held else []) for n in {*held, *named}}

    def diversity_signal(self, n: int, top: bool = False) -> AppliedSignal:
        """The ``diversity`` step of a file's ``n``-th further hit (``top``: of the first file);
        one (immutable) signal per step and query, shared by the hits it applies to."""
        found = self._diversity.get((n, top))
        if found is None:
            found = AppliedSignal("diversity", REASONS["diversity"].format(n=n), 0.0, self.decay(top) ** n)
            self._diversity[(n, top)] = found
        return found


#: The signals of a hit none moved: one empty list, shared (a hit's lists are read, never changed).
_NO_SIGNALS: list[AppliedSignal] = []


def _add(applied: list[list[AppliedSignal]], i: int, signal: AppliedSignal) -> None:
    """Append ``signal`` to the ``i``-th hit's signals (made at the first)."""
    if applied[i] is _NO_SIGNALS:
        applied[i] = [signal]
    else:
        applied[i].append(signal)


def quote_in(quoted: Sequence[tuple[int, int, str]], start: int, end: int) -> str | None:
    """The passage of ``quoted`` (a file's chunks holding a quoted passage: (start, end,
    passage)) that a span ``start``-``end`` of the file holds, if any: a chunk holding it lies
    within the span, or the span within the chunk."""
    for s, e, phrase in quoted:
        if (start <= s and e <= end) or (s <= start <= e and s <= end <= e):
            return phrase
    return None


@dataclass(frozen=True, slots=True)
class Files:
    """The file step's answer (:func:`rank_files`): the fused groups' order and what moved it.

    Per group kept by the fusion (in ``Fused.kept``'s order): its file (``paths``) and the
    signals it received (``applied``). ``order``: (group, final score, how many better groups
    of its file are above it), best first. ``unit``: the query's best fused score, the unit
    of every boost.
    """

    paths: list[str]
    applied: list[list[AppliedSignal]]
    order: list[tuple[int, float, int]]
    unit: float
    stage: Stage

    def top(self, n: int) -> list[str]:
        """The first ``n`` files of the order."""
        files: list[str] = []
        for i, _final, _above in self.order:
            path = self.paths[i]
            if path not in files:
                files.append(path)
                if len(files) >= n:
                    break
        return files

    def span_signals(self, path: str, span: tuple[int, int], symbols: Iterable[str]) -> list[AppliedSignal]:
        """:meth:`Stage.span_signals` of a span of ``path`` (a unit the chunk step placed)."""
        return self.stage.span_signals(path, span, symbols, self.unit)


def rank_files(fused: Fused, stage: Stage) -> Files:
    """The file step: the fused groups re-scored by the stage's signals (:meth:`Stage.score`)
    and ordered by them, the priors and diversity (:meth:`Stage.order`)."""
    groups = fused.groups
    columns = groups.memo.get("files")
    if columns is None:  # the groups' paths, names, breadcrumbs and lines: the query's, kept
        listed = groups.groups
        columns = groups.memo["files"] = (
            [g.path for g in listed],
            [g.symbols for g in listed],
            [g.contexts for g in listed],
            [(g.start_line, g.end_line) for g in listed],
        )
    if len(fused.kept) < len(groups.groups):  # an arm weighted 0: the groups some arm votes for
        kept = fused.index.tolist()
        columns = tuple([column[i] for i in kept] for column in columns)
    paths, symbols, contexts, spans = columns
    at = groups.path_at[fused.index]
    boosted, applied, factors = stage.score(paths, fused.scores, symbols, contexts, spans, at)
    order = stage.order(fused.groups.paths, at, boosted, factors)
    return Files(paths, applied, order, max(fused.scores) if fused.scores else 0.0, stage)


def describe(params: Params = DEFAULT_PARAMS) -> list[dict]:
    """The signals as data (name, what it does, its constant), for help texts and reports."""
    return [
        {"name": "definition", "reason": "the hit defines a symbol the query names", "value": params.definition},
        {"name": "path", "reason": "query words are the file's stem or folder", "value": params.path},
        {
            "name": "name-coverage",
            "reason": "the query names the words of the file's name",
            "value": params.name_coverage,
        },
        {
            "name": "coverage",
            "reason": "the file's path, names and breadcrumbs hold the query's keywords",
            "value": params.coverage,
        },
        {"name": "file-evidence", "reason": "the file holds several ranked hits", "value": params.file_evidence},
        {
            "name": "depth",
            "reason": "a file higher in the tree than the median candidate is lifted, a deeper one lowered",
            "value": params.depth,
        },
        {
            "name": "name-length",
            "reason": "a file with fewer words in its name than the median candidate is lifted",
            "value": params.name_length,
        },
        {"name": "diversity", "reason": "a file's further hits are scaled down", "value": params.diversity},
        {
            "name": "top-file-diversity",
            "reason": "the first file's further hits are scaled down less (it may show a second function)",
            "value": params.top_file_diversity,
        },
    ]
