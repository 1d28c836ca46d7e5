"""A query's ranking, stage by stage: the one place the arms' rankings become the list a user
sees (a query, a re-fuse after a slider move or ``p``, ``eval`` and ``tune`` all come here).

Each stage is a module with one entry function, a typed value in and a typed value out; a
stage never calls back into the one that called it. In order (docs/architecture.md draws it):

1. groups  :func:`core.query.consolidate.group`: the arms' rankings -> :class:`~core.query.consolidate.Groups`
   (overlapping spans of a file merged, each arm's best rank kept);
2. fused   :func:`core.query.fusion.fuse`: groups, weights, k -> :class:`~core.query.fusion.Fused` (weighted RRF);
3. files   :func:`core.query.ranking.rank_files`: fused, the query's stage -> :class:`~core.query.ranking.Files`
   (the file step: signals, priors, diversity, the order);
4. chunks  :func:`core.query.chunkstep.choose`: fused, the top files, their units, the question ->
   :class:`~core.query.chunkstep.Chunks` (which chunks of each top file take its places);
5. hits    :func:`core.query.labels.label_hits`: fused, files, chunks, top-k -> the labelled hits
   (agreement, confidence, the trace).

What depends on the query and its rankings alone is made once and kept in a :class:`QueryWork`:
the groups, the stage's reading of the question (its shape, the priors and the keyword forms
of each path and name it meets), what each top file's units' names hold. The within-file
searches and the units they rank are kept per query and file by the index side
(:meth:`core.engine.Engine.file_units`). A re-fuse with other weights or k reruns stages 2-5
on those: it reweights and re-sorts, it searches nothing again.

Before any stage, :func:`check_query` refuses a query that cannot run (:class:`QueryError`);
one arm alone (single-arm mode) is ranked by :func:`rank_single` instead of the stages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from ..base.rrf import check_k, check_weights
from ..text.tokenize import code_tokens
from .chunkstep import WITHIN_FILE_ARMS, FileUnits, Labelled, Question, choose, shape_of
from .consolidate import group
from .fusion import fuse
from .labels import label_hits, single_arm
from .priors import adjuster, apply_priors
from .ranking import Params, Stage, rank_files

if TYPE_CHECKING:
    from ..base.types import ConsolidatedHit, Hit
    from .settings import FusionSettings

#: Whether hits that only touch (``end + 1 == start``) merge. Budgeted chunks partition a
#: file, so neighbours touching says nothing about relevance, and merging them chains
#: adjacent chunks into wide hits: off, measured in the README (issue #5, step 2).
MERGE_ADJACENT = False
#: The longest query :func:`check_query` lets run, in characters.
MAX_QUERY_CHARS = 1000


class QueryError(ValueError):
    """The query cannot be run as given (one line, shown to the user)."""


def check_query(query: str) -> str:
    """The query stripped, or :class:`QueryError` when it is empty, too long or has no terms."""
    text = (query or "").strip()
    if not text:
        raise QueryError("the query is empty")
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"the query is {len(text)} characters long; the limit is {MAX_QUERY_CHARS}")
    if not code_tokens(text):
        raise QueryError("the query has no searchable words (letters or digits)")
    return text


class FileSource(Protocol):
    """Where the chunk step's units and the quoted passages come from: an open index
    (:class:`core.engine.Engine`); each kept per query there."""

    @property
    def ready(self) -> bool: ...

    def file_units(self, query: str, paths: Sequence[str], arms: Sequence[str]) -> Mapping[str, FileUnits]: ...

    def quoted(self, query: str) -> Mapping[str, list[tuple[int, int, str]]]: ...


class QueryWork:
    """What one query's ranking keeps across re-fuses: everything that depends on the query
    and the arms' rankings, nothing that depends on the weights or k.

    ``rankings``: arm -> its hits (kept alive: the engine keys the work by their identity);
    ``query``: the question (None: the stage reads an empty one, priors and diversity only);
    ``check``: check the rankings first (:func:`core.query.consolidate.group`).
    """

    def __init__(
        self,
        rankings: Mapping[str, Sequence[Hit]],
        query: str | None = None,
        *,
        merge_adjacent: bool = MERGE_ADJACENT,
        check: bool = True,
    ) -> None:
        self.rankings = rankings
        self.query = query
        self.groups = group(rankings, merge_adjacent, check)
        self._stages: dict[tuple, tuple[object, Stage]] = {}
        self._labelled: dict[int, tuple[object, Labelled]] = {}

    def stage(self, params: Params, quoted: Mapping[str, list[tuple[int, int, str]]] | None) -> Stage:
        """The ranking stage for this query (its memos of paths, names and words kept from
        one fuse to the next), per constants and quoted passages (those of the index view)."""
        quoted = quoted or None  # no passage, however given: one stage
        key = (params, id(quoted))
        found = self._stages.get(key)
        if found is None or found[0] is not quoted:
            found = self._stages[key] = (quoted, Stage(self.query or "", adjuster(self.query), params, quoted))
        return found[1]

    def question(self, stage: Stage, found: Mapping[str, FileUnits]) -> Question:
        """What the chunk step reads of the question for these files (what their units' names
        hold: worked out once per file's units)."""
        labelled = {}
        for path, fu in found.items():
            shape = shape_of(fu)
            held = self._labelled.get(id(shape))
            if held is None or held[0] is not shape:
                held = self._labelled[id(shape)] = (shape, stage.labelled(shape))
            labelled[path] = held[1]
        return Question(len(stage.shape.keywords), labelled, stage.quoted, not stage.shape.lookup)


def rank(
    work: QueryWork, settings: FusionSettings, top_k: int | None = None, source: FileSource | None = None
) -> list[ConsolidatedHit]:
    """The query's hits with ``settings``, its first ``top_k`` (None: all): the stages in order.

    Without ``settings.priors`` the fused list, labelled. With it, the file step and, when
    ``source`` is an open index and the query has text, the chunk step over the stage's top
    ``settings.stage.chunk_files`` files (their units asked of ``source`` for the arms of
    ``settings`` that rank within a file).
    """
    fused = fuse(work.groups, settings.fused_weights(), settings.k)
    if not settings.priors:
        return label_hits(fused, limit=top_k or None)
    query = work.query
    index = source if source is not None and query and source.ready else None
    quoted = index.quoted(query) if index is not None else None
    stage = work.stage(settings.stage, quoted)
    files = rank_files(fused, stage)
    chunks = None
    n = settings.stage.chunk_files
    if index is not None and n > 0:
        top = files.top(n)
        if top:
            arms = tuple(a for a in WITHIN_FILE_ARMS if a in settings.arms)
            found = index.file_units(query, top, arms)
            chunks = choose(fused, top, found, work.question(stage, found), settings.stage)
    return label_hits(fused, files, chunks, top_k or None)


def fuse_rankings(
    per_arm_hits: Mapping[str, Sequence[Hit]],
    k: float = 60,
    weights: Mapping[str, float] | None = None,
    merge_adjacent: bool = True,
) -> list[ConsolidatedHit]:
    """Merge overlapping spans across arms and rank the groups with weighted RRF, no ranking
    stage: every hit, best first, ``rank`` 1-based; ties broken by (path, start, end, docid).

    ``per_arm_hits``: arm -> its ranking (``Hit.rank`` 1-based). ``k``: the RRF constant,
    1..10^6. ``weights``: arm -> weight (>= 0, finite); arms not named weigh 1.0; an arm
    weighted 0 still shows in ``contributors`` but neither scores nor counts toward
    agreement. ``merge_adjacent``: also merge spans that touch (``end + 1 == start``). The
    result does not depend on the order of ``per_arm_hits``. ValueError for a bad k or weight,
    a chunk twice in one arm, a non-finite score, or one chunk id naming different spans or
    texts in different arms.
    """
    check_k(k)
    check_weights(weights)
    return label_hits(fuse(group(per_arm_hits, merge_adjacent), weights, k))


def rank_single(
    hits: Sequence[Hit], settings: FusionSettings, query: str | None, top_k: int | None = None
) -> list[ConsolidatedHit]:
    """One arm's own ranking in the consolidated shape (spans not merged), re-ordered by the
    priors when ``settings.priors``; its whole pool is ranked before the ``top_k`` cut, so a
    demoted hit is replaced from below it."""
    arm = settings.single or ""
    out = single_arm(hits, k=settings.k, weight=settings.weight(arm))
    if settings.priors:
        out = apply_priors(out, query)
    return out[:top_k] if top_k else out
