"""The chunk step: which code of a chosen file to show.

The ranking stage (:mod:`core.query.ranking`) decides which *files* answer a question: its signals
are mostly about files (the path, the names the file defines, how many of its chunks the arms
ranked). Left at that, each file shows the chunks the arms happened to return, so the file's
most generally matching chunk (a struct, a constructor, the file header) comes first and the
function that answers, often never an arm's candidate, does not show.

So the list is made in two named steps. The *file step* is the stage: it orders the files,
and gives each file its places in the list. The *chunk step* is this module: for each of the
top :attr:`Params.chunk_files` files, every chunk of the file competes for those places, on
chunk-level evidence only (a file's boost is the same for all its chunks, so it can never lift
an unrelated chunk over one that answers):

* the arms' ranks of the chunk *within its file*: each arm is asked again, restricted to the
  chunks of the top files (so a chunk no arm had in its first few dozen still gets ranked),
  and its ranks among the file's chunks are fused with weighted RRF (the query's weights);
* the arms' own ranks over the whole index, where the chunk was a candidate (the fused score
  of its group);
* the definition the question names, and the question's keywords in the chunk's breadcrumb
  and defined names.

The pieces of one long definition are one *unit* and compete as one. A unit is shown whole
when it fits :data:`MAX_UNIT_LINES`, else as a window around the lines the arms matched
(:func:`shown_span`). For a question in words, a unit that only declares (``Chunk.declaration``)
is demoted, and a unit that a better unit of its file calls is lifted (``Params.chunk_called``:
the file's own call edges, :mod:`core.graph.within`). Every hit the step places carries a
``chunk`` signal that says why this chunk of the file.

:func:`choose` is the step in the query pipeline (:mod:`core.query.pipeline`): the fused groups, the
file step's top files, their units and the :class:`Question` in, a :class:`Pick` per file out.
The units (each arm's search within the files) and what their names hold are the query's,
made once; what a re-fuse reruns is the scoring of the units with the new weights and k.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..base.types import AppliedSignal
from .ranking import quote_in

if TYPE_CHECKING:
    from .fusion import Fused

#: A unit (a definition's pieces, or one chunk) up to this many lines is shown whole.
MAX_UNIT_LINES = 80

#: The arms asked again to rank every chunk of a top file (:meth:`core.engine.Engine.file_units`).
WITHIN_FILE_ARMS = ("bm25", "dense")

#: The arms whose best chunk of a long unit holds the question's own words: the window a long
#: unit shows starts from theirs (:func:`shown_span`).
LEXICAL_WITHIN = ("bm25",)

#: A unit no arm ranked, in :func:`units_ranked`'s arrays (np.iinfo costs a few µs a call).
_UNRANKED = int(np.iinfo(np.int64).max)

#: A hit carries at most this many of its file's runners-up (:meth:`Pick.runners_up`). Five,
#: not three (issue 41): on the span set's paraphrased questions the answer is a hit or a
#: runner-up for 47 of 80 rather than 40, on the held-out short ones 28 of 45 rather than 25;
#: eight would give 51 and 30, at a list no longer read at a glance.
ALTERNATIVES = 5

#: A file of this many units or more is ranked as arrays by :func:`rank_units` (below it,
#: numpy's cost per call is more than the loop's).
ARRAYS_FROM = 40


@dataclass(slots=True)
class Unit:
    """One candidate span of a file: a chunk, or the pieces of one long definition."""

    start: int
    end: int
    context: str
    symbols: tuple[str, ...]
    #: Per arm: the best rank any of the unit's chunks has among the file's chunks (1-based).
    ranks: dict[str, int] = field(default_factory=dict)
    #: The chunk spans it is made of (start, end), in line order.
    chunks: tuple[tuple[int, int], ...] = ()
    #: The chunk (start, end) of its best rank in any arm: shown when the unit is too long.
    best_chunk: tuple[int, int] | None = None
    #: (the names it defines that the query names, the query's keywords its names hold):
    #: units are cached per query, so these are worked out once, not at every slider move.
    memo: tuple[set[str], list[str]] | None = None
    #: Each arm's best chunk of the unit (start, end) when it has several: the lexical arms'
    #: first (where the question's words are), then by rank. A unit too long to show whole
    #: shows a window over as many of them as fit (:func:`shown_span`, issue #42).
    matched: tuple[tuple[int, int], ...] = ()
    #: Every chunk of it only declares (``Chunk.declaration``): demoted for a question in words.
    declaration: bool = False
    #: The name of the unit of its file that lifted it by calling it (``Params.chunk_called``),
    #: set each time it is placed; "" when none did.
    called_by: str = ""


@dataclass
class FileUnits:
    """Every unit of one file, in line order."""

    path: str
    units: list[Unit]
    #: The units' first and last lines and each arm's rank of them (0: unranked), as arrays,
    #: when :func:`units_ranked` made them: :func:`rank_units` then scores them at once.
    arrays: tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]] | None = None
    #: The file's :class:`Skeleton` (kept per index view): what its units' names hold.
    shape: Skeleton | None = None
    #: Per unit, the units of the file that call it (use a name it defines:
    #: :func:`core.graph.within.callers_within`); None when the index keeps no uses.
    callers: tuple[tuple[int, ...], ...] | None = None


@dataclass(frozen=True)
class Skeleton:
    """A file's units as its chunks make them, whatever the query (kept per index view):
    per unit ``(start, end, context, symbols, chunk spans, declaration)``, and each chunk's unit."""

    units: tuple[tuple[int, int, str, tuple[str, ...], tuple[tuple[int, int], ...], bool], ...]
    of_chunk: Mapping[tuple[int, int], int]
    #: What is worked out of the units once per view, whatever the query (the ranking
    #: stage's index of their names: :func:`core.query.ranking.unit_labels`).
    memo: dict = field(default_factory=dict, compare=False, repr=False)


def skeleton(chunks: Iterable[tuple]) -> Skeleton:
    """The :class:`Skeleton` of a file's chunks ``(start, end, piece_of, context, symbol)``,
    each perhaps with a sixth, whether it only declares (``Chunk.declaration``): the pieces of
    one definition make one unit, every other chunk one of its own; a unit declares when
    every chunk of it does."""
    built: list[list] = []  # [start, end, context, symbols, chunks, declaration]
    by_piece: dict[tuple[int, int], list] = {}
    for start, end, piece_of, context, symbol, *flag in sorted(chunks):
        declares = bool(flag and flag[0])
        unit = by_piece.get(piece_of) if piece_of else None
        if unit is None:
            unit = [start, end, context, [], [], declares]
            built.append(unit)
            if piece_of:
                by_piece[piece_of] = unit
        unit[1] = max(unit[1], end)
        unit[4].append((start, end))
        unit[5] = unit[5] and declares
        if symbol and symbol not in unit[3]:
            unit[3].append(symbol)
    units = tuple((u[0], u[1], u[2], tuple(u[3]), tuple(u[4]), u[5]) for u in built)
    return Skeleton(units, {span: i for i, u in enumerate(units) for span in u[4]})


def shape_of(fu: FileUnits) -> Skeleton:
    """A file's :class:`Skeleton`: the one its units were made from, else one made of them."""
    if fu.shape is not None:
        return fu.shape
    units = tuple((u.start, u.end, u.context, u.symbols, u.chunks, u.declaration) for u in fu.units)
    return Skeleton(units, {span: i for i, u in enumerate(units) for span in u[4]})


def units_of(
    path: str,
    chunks: Skeleton | Iterable[tuple[int, int, tuple[int, int] | None, str, str]],
    scores: Mapping[str, Mapping[tuple[int, int], float]],
    callers: tuple[tuple[int, ...], ...] | None = None,
) -> FileUnits:
    """The units of a file (its :class:`Skeleton`, or its chunks ``(start, end, piece_of,
    context, symbol)``) ranked by each arm's scores of their chunks (``{arm: {(start, end):
    score}}``; a chunk an arm does not score is unranked by it). A unit shown in part shows
    the chunk of its best rank. ``callers``: per unit, the units of the file that call it."""
    shape = chunks if isinstance(chunks, Skeleton) else skeleton(chunks)
    units = [Unit(s, e, c, syms, {}, spans, declaration=d) for s, e, c, syms, spans, d in shape.units]
    of_chunk = shape.of_chunk
    best_rank: dict[int, int] = {}
    matched: dict[int, list[tuple[bool, int, int, tuple[int, int]]]] = {}  # unit -> (not lexical, rank, place, span)
    for place, (arm, scored) in enumerate(scores.items()):
        best: dict[int, tuple[float, tuple[int, int]]] = {}
        for span, score in scored.items():
            i = of_chunk.get(span)
            if i is not None:
                held = best.get(i)
                if held is None or score > held[0]:
                    best[i] = (score, span)
        # Best score first, then the earlier unit; a tie on both keeps the order found.
        ranked = sorted([(-score, units[i].start, n, i) for n, (i, (score, _span)) in enumerate(best.items())])
        for rank, (_s, _start, _n, i) in enumerate(ranked, start=1):
            units[i].ranks[arm] = rank
            matched.setdefault(i, []).append((arm not in LEXICAL_WITHIN, rank, place, best[i][1]))
            if rank < best_rank.get(i, 1 << 30):
                best_rank[i] = rank
                units[i].best_chunk = best[i][1]
    for i, found in matched.items():
        if len(units[i].chunks) > 1:
            units[i].matched = tuple(m[-1] for m in sorted(found))
    return FileUnits(path, units, shape=shape, callers=callers)


def units_ranked(
    files: Sequence[tuple[str, Skeleton, np.ndarray, np.ndarray, np.ndarray, np.ndarray, Sequence[tuple[int, int]]]],
    found: Mapping[str, tuple[np.ndarray, np.ndarray]],
) -> dict[str, FileUnits] | None:
    """:func:`units_of` for several files at once, from each arm's search within them
    (``{arm: (chunk rows, scores)}``, best first; ties in any order). ``files``: per file its path, skeleton,
    chunk rows, each row's unit, each unit's first and last lines, and each row's span. The
    same units, ranks and shown chunks as :func:`units_of`, worked out with arrays (a file can
    have hundreds of units), each unit made when first asked for; None when it cannot be sure
    of that (an arm's scores not in order), and the caller ranks with :func:`units_of`."""
    counts = [len(f[1].units) for f in files]
    total = sum(counts)
    starts = np.concatenate([f[4] for f in files]) if files else np.empty(0, dtype=np.int64)
    ends = np.concatenate([f[5] for f in files]) if files else np.empty(0, dtype=np.int64)
    spans: list[tuple[int, int]] = []
    units_of_rows = []
    at = 0
    for (_path, _shape, _rows, unit, _starts, _ends, of_file), n in zip(files, counts):
        units_of_rows.append(unit + at)
        spans.extend(of_file)
        at += n
    # Chunk row -> its place among the files' rows (and in ``spans``) and its unit, numbered
    # across files: by a search among the rows sorted (an array over the view's every row
    # costs more, in memory to clear, than this query's few hundred rows).
    all_rows = np.concatenate([f[2] for f in files]) if files else np.empty(0, dtype=np.int64)
    unit_at = np.concatenate(units_of_rows) if files else np.empty(0, dtype=np.int64)
    sorter = np.argsort(all_rows, kind="stable")
    in_order = all_rows[sorter]
    file_of = np.repeat(np.arange(len(files)), counts)
    unranked = _UNRANKED
    arms: list[str] = []
    ranks: list[np.ndarray] = []
    best_rows: list[np.ndarray] = []
    for arm, (rows, scores) in found.items():
        rows = np.asarray(rows, dtype=np.int64)
        scores = np.asarray(scores)
        if len(scores) > 1 and not bool(np.all(scores[1:] <= scores[:-1])):
            return None  # a unit's first chunk found must be its best
        place = np.minimum(np.searchsorted(in_order, rows), max(len(in_order) - 1, 0))
        known = in_order[place] == rows if len(in_order) else np.zeros(len(rows), dtype=bool)
        at_row, scores = sorter[place[known]], scores[known]
        units = unit_at[at_row]
        # A unit's best chunk is its first found (ties: the first); its units ranked by that
        # score, then the earlier unit, then the first found, within each file.
        ids, first = np.unique(units, return_index=True)
        order = np.lexsort((first, starts[ids], -scores[first], file_of[ids]))
        files_in_order = file_of[ids][order]
        rank = np.arange(len(order)) - np.searchsorted(files_in_order, files_in_order) + 1
        of_unit = np.full(total, unranked, dtype=np.int64)
        of_unit[ids[order]] = rank
        best = np.full(total, -1, dtype=np.int64)
        best[ids] = at_row[first]
        arms.append(arm)
        ranks.append(of_unit)
        best_rows.append(best)
    if arms:
        # The shown chunk is that of the unit's best rank, the first arm's on a tie.
        lead = np.argmin(np.vstack(ranks), axis=0)
        shown = np.vstack(best_rows)[lead, np.arange(total)].tolist()
    else:
        shown = [-1] * total
    listed = [r.tolist() for r in ranks]
    best_listed = [b.tolist() for b in best_rows]
    plain = [np.where(r == unranked, 0, r) for r in ranks]
    out: dict[str, FileUnits] = {}
    at = 0
    for (path, shape, *_), n in zip(files, counts):
        arrays = (starts[at : at + n], ends[at : at + n], {arm: r[at : at + n] for arm, r in zip(arms, plain)})

        def make(i: int, shape=shape, at=at) -> Unit:
            s, e, c, syms, pieces, declares = shape.units[i]
            held = {arm: r[at + i] for arm, r in zip(arms, listed) if r[at + i] != unranked}
            unit = Unit(s, e, c, syms, held, pieces, spans[shown[at + i]] if held else None, declaration=declares)
            if len(pieces) > 1 and held:
                found = sorted(
                    (arms[n] not in LEXICAL_WITHIN, r[at + i], n, spans[b[at + i]])
                    for n, (r, b) in enumerate(zip(listed, best_listed))
                    if r[at + i] != unranked
                )
                unit.matched = tuple(m[-1] for m in found)
            return unit

        out[path] = FileUnits(path, _Units(n, make), arrays, shape)  # type: ignore[arg-type]
        at += n
    return out


class _Units(Sequence[Unit]):
    """A file's units, each made when first asked for: of a file's hundreds of units, the
    chunk step looks at the few that can take its places (:func:`rank_units`)."""

    __slots__ = ("_made", "_make")

    def __init__(self, n: int, make: Callable[[int], Unit]) -> None:
        self._made: list[Unit | None] = [None] * n
        self._make = make

    def __len__(self) -> int:
        return len(self._made)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self._made)))]
        unit = self._made[i]  # an IndexError past the end ends iteration
        if unit is None:
            unit = self._made[i] = self._make(i % len(self._made))
        return unit


def shown_span(unit: Unit) -> tuple[int, int]:
    """The lines a unit shows: all of it when it fits :data:`MAX_UNIT_LINES`, else a window
    around the lines the arms matched: the lexical arm's best chunk of it (where the
    question's words are; else its best chunk, or its first), widened over each other arm's
    best chunk in turn while the window still fits :data:`MAX_UNIT_LINES`.

    Issue #42: the chunk of the unit's best rank alone showed lines 874-909 of the method
    that answered, its answering comparison and call at 926-941."""
    if unit.end - unit.start + 1 <= MAX_UNIT_LINES:
        return unit.start, unit.end
    lo, hi = unit.matched[0] if unit.matched else unit.best_chunk or unit.chunks[0]
    for s, e in unit.matched[1:]:
        wider = min(lo, s), max(hi, e)
        if wider[1] - wider[0] + 1 <= MAX_UNIT_LINES:
            lo, hi = wider
    return lo, hi


#: Per unit of a file (its position) whose names or breadcrumb hold something the question
#: names: (the named names it defines, the question's keywords its names and breadcrumb hold);
#: every other unit's are empty (:meth:`core.query.ranking.Stage.labelled`).
Labelled = Mapping[int, tuple[set[str], list[str]]]


@dataclass(frozen=True, slots=True)
class Question:
    """What the chunk step reads of the question, worked out once per query by the ranking
    stage: how many keywords it has, what each top file's units' names hold of it
    (``labelled``, per path) and the chunks holding a passage it quotes (``quoted``, per path:
    (start, end, passage))."""

    keywords: int
    labelled: Mapping[str, Labelled]
    quoted: Mapping[str, Sequence[tuple[int, int, str]]]
    #: A question in words (not a symbol lookup): a unit that only declares is demoted
    #: (``Params.chunk_declaration``).
    in_words: bool = False


@dataclass(frozen=True, slots=True)
class Pick:
    """The chunk step's answer for one file: its groups (positions in ``Fused.kept``), the
    units chosen for its places, best first, with their chunk scores, and how many units the
    file has; ``more``: the next units of the same ranking whose lines overlap none before
    them, up to :data:`ALTERNATIVES` (with the chosen after the first: the file's runners-up)."""

    mine: list[int]
    chosen: list[tuple[Unit, float]]
    n_units: int
    more: list[tuple[Unit, float]] = field(default_factory=list)
    #: Whether a unit that only declares was demoted (a question in words, the penalty on).
    demoted: bool = False

    def explain(self, unit: Unit) -> AppliedSignal:
        """The ``chunk`` signal of one of its units: why this chunk of the file."""
        return explain(unit, self.n_units, self.demoted)

    def runners_up(self) -> list[tuple[Unit, float]]:
        """The units ranked next after the file's first, best first, at most
        :data:`ALTERNATIVES`: its other chosen units, then those after them; none overlaps a
        unit before it in that order. They avoid only the hit that carries them (no hit of the
        file ranks above it), not the file's hits below it: the same whatever the list's
        length (10 in the CLI, 50 in the UI), where avoiding every hit shown made them differ."""
        return [*self.chosen[1:], *self.more][:ALTERNATIVES]


@dataclass(frozen=True, slots=True)
class Chunks:
    """The chunk step's answer (:func:`choose`): per top file with units, its :class:`Pick`."""

    picks: dict[str, Pick]


def choose(fused: Fused, files: Sequence[str], found: Mapping[str, FileUnits], question: Question, params) -> Chunks:
    """The chunk step for the top ``files`` (the file step's order, first files first): each
    file's units (``found``, ranked within it by the arms) compete for the file's places in
    the list, as many as it has groups, on the chunk-level evidence of :func:`rank_units`; no
    two units chosen show overlapping lines (:func:`distinct_units`). The next
    :data:`ALTERNATIVES` units of the same greedy pick are kept as the file's runners-up
    (:attr:`Pick.more`): a longer prefix of that pick, so the units chosen are the same."""
    kept, scores = fused.kept, fused.scores
    of_file: dict[str, list[int]] = {}
    for i, g in enumerate(kept):
        if g.path in found:
            of_file.setdefault(g.path, []).append(i)
    picks = {}
    for path in files:
        fu = found.get(path)
        if fu is None or not fu.units:
            continue
        mine = of_file.get(path, [])
        groups = [(kept[i].start_line, kept[i].end_line, scores[i]) for i in mine]
        distinct = distinct_units(
            fu,
            fused.weights,
            fused.k,
            groups,
            question.labelled[path],
            question.quoted.get(path),
            question.keywords,
            params,
            places=len(mine) + ALTERNATIVES,
            in_words=question.in_words,
        )
        demoted = question.in_words and getattr(params, "chunk_declaration", 0.0) > 0
        picks[path] = Pick(mine, distinct[: len(mine)], len(fu.units), distinct[len(mine) :], demoted)
    return Chunks(picks)


def rank_units(
    fu: FileUnits,
    weights: Mapping[str, float],
    k: float,
    groups: Sequence[tuple[int, int, float]],
    labelled: Labelled,
    quoted: Sequence[tuple[int, int, str]] | None,
    n_keywords: int,
    params,
    places: int | None = None,
    in_words: bool = False,
) -> list[tuple[Unit, float]]:
    """The file's units, best first (ties: the earlier unit, then the unit's position), each
    with its chunk score; its first ``places`` only, when given.

    A unit's score is its arms' ranks within the file (weighted RRF, ``weights`` and ``k``),
    plus ``params.chunk_fused`` times the best fused score of the file's ``groups``
    ``(start, end, fused score)`` overlapping it (0: no arm had it over the whole index),
    plus, in units of an arm's first place, what its names add (``labelled``: the names it
    defines that the question names, the question's keywords its names and breadcrumb hold,
    of ``n_keywords``) and a passage of ``quoted`` it holds; for a question ``in_words``, less
    ``params.chunk_declaration`` when it only declares (:attr:`Unit.declaration`), plus
    ``params.chunk_called`` times the best score of the units of the file calling it
    (:attr:`FileUnits.callers`) when it defines one name and does more than declare. The units placed keep what their
    names hold (``Unit.memo``, for :func:`explain`). A file's :attr:`FileUnits.arrays` (two
    arms at most) score every unit at once; the same float operations as the loop over its
    units, in the same order, so the same scores.
    """
    first = max(weights.values(), default=1.0) / (k + 1)  # an arm's first place
    arrays = fu.arrays
    units = fu.units
    if arrays is not None and len(arrays[2]) <= 2:  # a sum of two floats is their fsum
        scores = _base_scores(arrays, weights, k, groups, params).tolist()
        starts, ends = arrays[0], arrays[1]
        bounds = None
    else:
        fsum, weight = math.fsum, weights.get
        scores = []
        for u in units:
            score = fsum([weight(arm, 1.0) / (k + r) for arm, r in u.ranks.items()])
            scores.append(score + params.chunk_fused * _best_fused(groups, u.start, u.end))
        bounds = [(u.start, u.end) for u in units]
        starts = ends = None
    for n, (defined, held) in labelled.items():
        scores[n] = _with_names(scores[n], defined, held, n_keywords, params, first)
    if quoted:
        if bounds is None:
            bounds = list(zip(starts.tolist(), ends.tolist()))
        for n, (start, end) in enumerate(bounds):
            if quote_in(quoted, start, end):
                scores[n] += params.chunk_quote * first
    penalty = getattr(params, "chunk_declaration", 0.0)
    if in_words and penalty:
        shape = fu.shape
        flags = [u[5] for u in shape.units] if shape is not None else [u.declaration for u in units]
        for n, declares in enumerate(flags):
            if declares:
                scores[n] -= penalty * first
    lift = getattr(params, "chunk_called", 0.0)
    callers = fu.callers
    lifted: dict[int, int] = {}
    if in_words and lift and callers:
        base = list(scores)
        liftable = _liftable(shape_of(fu))
        for n, of in enumerate(callers):
            if of and liftable[n]:
                j = max(of, key=base.__getitem__)
                if base[j] > 0:
                    scores[n] += lift * base[j]
                    lifted[n] = j
    if bounds is not None or len(scores) < ARRAYS_FROM:  # below it, numpy's cost per call is more than the sort's
        begins = [b[0] for b in bounds] if bounds is not None else starts.tolist()
        order = sorted(range(len(scores)), key=lambda n: (-scores[n], begins[n]))
    else:
        order = np.lexsort((starts, -np.array(scores))).tolist()
    out = []
    for n in order[:places] if places is not None else order:
        u = units[n]
        if u.memo is None:
            u.memo = labelled.get(n) or (set(), [])
        j = lifted.get(n)
        u.called_by = _first_name(units[j]) if j is not None else ""
        out.append((u, scores[n]))
    return out


def _liftable(shape: Skeleton) -> list[bool]:
    """Per unit of a file, whether a call can lift it (``Params.chunk_called``): it defines
    one name (a call reaches one definition of a packed unit, not the accessors and small
    helpers packed with it: lifting packed units too lost first places on the held-out
    questions) and does more than declare (a method's signature naming its struct is no
    call of it). Kept per view with the skeleton."""
    found = shape.memo.get("liftable")
    if found is None:
        found = shape.memo["liftable"] = [sum(len(s.split()) for s in u[3]) == 1 and not u[5] for u in shape.units]
    return found


def _first_name(unit: Unit) -> str:
    """The first name a unit defines, or what it is when it defines none."""
    for symbol in unit.symbols:
        for name in symbol.split():
            return name
    return "the file's top-level code"


def _best_fused(groups: Sequence[tuple[int, int, float]], start: int, end: int) -> float:
    """The best fused score of the ``groups`` (start, end, score) overlapping these lines (0: none)."""
    best = 0.0
    for s, e, f in groups:
        if not (e < start or s > end) and f > best:
            best = f
    return best


def _with_names(score: float, defined, held, n_keywords: int, params, first: float) -> float:
    """``score`` plus what a unit's names add: the named names it defines, the question's
    keywords its names and breadcrumb hold."""
    if defined:
        score += params.chunk_definition * first
    if held and n_keywords:
        score += params.chunk_label * len(held) / n_keywords * first
    return score


def distinct_units(fu: FileUnits, *args, places: int, in_words: bool = False) -> list[tuple[Unit, float]]:
    """:func:`rank_units`'s first ``places`` units whose shown lines overlap no better one's.

    A file's chunks can overlap (the windows of a long stretch outside any definition), and
    two hits showing the same lines are one hit twice: a unit overlapping a better one gives
    its place to the next that does not. Greedy in the units' order, so a longer prefix of
    that order only adds to the end: the prefix asked for doubles until it holds ``places``
    distinct units or the whole file."""
    if places <= 0:
        return []
    want = places
    while True:
        ranked = rank_units(fu, *args, places=want, in_words=in_words)
        shown: list[tuple[int, int]] = []
        out = []
        for unit, score in ranked:
            start, end = shown_span(unit)
            if all(end < s or start > e for s, e in shown):
                shown.append((start, end))
                out.append((unit, score))
                if len(out) == places:
                    return out
        if want >= len(fu.units):
            return out
        want *= 2


def _base_scores(arrays, weights, k: float, groups, params) -> np.ndarray:
    """Every unit's score before what its names and a quoted passage add: its arms' ranks'
    share, then its fused score's (the loop's float operations, in its order)."""
    starts, ends, ranks = arrays
    score = np.zeros(len(starts))
    for arm, r in ranks.items():
        ranked = r > 0
        score[ranked] += weights.get(arm, 1.0) / (k + r[ranked])
    # Each unit's best fused score among the groups overlapping it (0: none): a maximum, so
    # the float ``_best_fused`` picks. Three groups or more: all at once (units x groups).
    if len(groups) >= 3:
        s, e, f = (np.array(column) for column in zip(*groups))
        overlap = ~((e[None, :] < starts[:, None]) | (s[None, :] > ends[:, None]))
        best = np.where(overlap, f[None, :], 0.0).max(axis=1, initial=0.0)
    else:
        best = np.zeros(len(starts))
        for s, e, f in groups:
            best = np.where(~((e < starts) | (s > ends)) & (f > best), f, best)
    return score + params.chunk_fused * best


def explain(unit: Unit, n_units: int, demoted: bool = False) -> AppliedSignal:
    """The ``chunk`` signal of a unit the step placed: why this chunk of the file."""
    why = []
    if unit.ranks:
        ranked = ", ".join(f"{arm} #{r}" for arm, r in sorted(unit.ranks.items(), key=lambda t: (t[1], t[0])))
        why.append(f"{ranked} of the file's {n_units}")
    defined, held = unit.memo or (set(), [])
    if defined:
        why.append(f"defines {max(sorted(defined), key=len)}")  # as Stage.span_signals names it
    if held:
        why.append(f"its names hold {', '.join(held)}")
    if unit.declaration and demoted:
        why.append("demoted as a declaration (it only declares)")
    if unit.called_by:
        why.append(f"used by {unit.called_by} in this file")
    return AppliedSignal("chunk", "; ".join(why) if why else f"the first of the file's {n_units} chunks", 0.0)
