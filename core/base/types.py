"""Plain data shared by every stage of the engine.

Lines are 1-based and inclusive everywhere; paths are POSIX and relative to the root.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import NamedTuple

#: Arm families, used by the confidence rule: agreement across families means more than
#: agreement inside one.
LEXICAL = "lexical"
SEMANTIC = "semantic"
STRUCTURAL = "structural"

#: The chunk budget: lines per chunk (and per window of a file cut into windows), and the
#: lines consecutive windows share. An index setting (:class:`core.arms.protocol.IndexSettings`)
#: that the chunker (:mod:`core.chunking`) applies; here so that neither imports the other.
DEFAULT_WINDOW = 40
DEFAULT_OVERLAP = 10


def make_docid(path: str, start_line: int, end_line: int) -> str:
    """The stable id of a span: ``path:start-end``."""
    return f"{path}:{start_line}-{end_line}"


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrievable span of a file.

    ``kind`` is ``"window"`` for a line window, ``"definition"`` for a chunk holding one or
    more whole tree-sitter definitions (function, method, class …; see
    :func:`core.chunking.chunk_file`), ``"section"`` the same for Markdown sections, and
    ``"piece"`` for part of a definition longer than the size budget; ``piece_of`` is then
    the whole definition's ``(start_line, end_line)``. ``context`` is the breadcrumb shown to
    the user (``path > Class > method``); for windows it is the path (or enclosing class).
    ``declaration``: the chunk step demotes it for a question about behaviour.
    """

    path: str
    start_line: int
    end_line: int
    text: str
    language: str
    context: str
    kind: str = "window"
    symbol: str = ""
    signature: str = ""
    docstring: str = ""
    piece_of: tuple[int, int] | None = None
    #: The names its code spells, space-separated, in order of first use, then those it defines
    #: (nested ones too) marked ``=``, its imports ``^`` and the attributes it sets ``.``: what
    #: navigation resolves (:mod:`core.chunking.refs`, :mod:`core.graph`).
    refs: str = ""
    #: Whether the chunk only declares (fields, signatures, constants: fewer than a quarter of
    #: its code lines show behaviour; :func:`core.chunking.declarations.is_declaration`).
    declaration: bool = False

    @property
    def docid(self) -> str:
        return make_docid(self.path, self.start_line, self.end_line)

    def __reduce__(self):
        # A frozen slotted dataclass pickles through dataclasses' state functions, which list
        # its fields for every instance: a cold build sends a million chunks from its workers.
        return Chunk, _chunk_fields(self)


#: A chunk's fields in order, read in C (what :meth:`Chunk.__reduce__` rebuilds it from).
_chunk_fields = attrgetter(*(f.name for f in fields(Chunk)))


@dataclass(frozen=True, slots=True)
class Hit:
    """One entry of one arm's ranking (``rank`` is 1-based, ``score`` the arm's own).

    ``piece_of`` is the span of the definition the chunk is a piece of (consolidation shows
    the pieces of one definition as one hit), ``None`` for a whole chunk.
    """

    arm: str
    docid: str
    path: str
    start_line: int
    end_line: int
    rank: int
    score: float
    context: str = ""
    text: str | None = None
    piece_of: tuple[int, int] | None = None
    #: The names the chunk defines, space-separated (``Chunk.symbol``; "" for a window).
    symbol: str = ""


class Contribution(NamedTuple):
    """What one arm gave a consolidated hit: its best rank and what that was worth.

    Immutable (a re-fuse hands the same one to the next hit when its arm's weight and k did
    not change); a named tuple, made in a third of a frozen dataclass's time (a slider move
    makes one for every candidate the moved arm ranked)."""

    arm: str
    rank: int
    docid: str
    score: float
    contribution: float


@dataclass(frozen=True, slots=True)
class AppliedPrior:
    """One prior as applied to a hit (see :mod:`core.query.priors`).

    ``factor`` multiplied the hit's fused score; a rule lifted by the query shows with factor
    1.0 and ``lifted_by`` naming the query word that lifted it.
    """

    name: str
    reason: str
    factor: float
    lifted_by: str | None = None

    def to_dict(self) -> dict:
        return {"name": self.name, "reason": self.reason, "factor": self.factor, "lifted_by": self.lifted_by}


@dataclass(frozen=True, slots=True)
class AppliedSignal:
    """One step of the ranking stage as applied to a hit (see :mod:`core.query.ranking`).

    ``boost`` was added to the hit's score (in the query's units: the best fused score times
    the signal's constant); ``factor`` multiplied it (``diversity``).
    """

    name: str
    reason: str
    boost: float = 0.0
    factor: float = 1.0

    def to_dict(self) -> dict:
        return {"name": self.name, "reason": self.reason, "boost": self.boost, "factor": self.factor}


@dataclass(frozen=True, slots=True)
class Alternative:
    """One of a hit's runners-up in its file: a unit the chunk step ranked below the one the
    hit shows (:mod:`core.query.chunkstep`), its lines overlapping neither that hit nor the other
    runners-up (it may be a hit further down: the same set whatever the list's length).

    ``names``: the names it defines; ``score``: the chunk step's score of the unit within its
    file (the hit's own unit scored at least as much); ``why``: the ``chunk`` signal's reason
    for it; ``within``: each arm's rank of it among the file's units.
    """

    start_line: int
    end_line: int
    context: str
    names: tuple[str, ...]
    score: float
    why: str
    within: dict[str, int] = field(default_factory=dict)

    def to_dict(self, path: str) -> dict:
        return {
            "start_line": self.start_line,
            "end_line": self.end_line,
            "docid": make_docid(path, self.start_line, self.end_line),
            "context": self.context,
            "names": list(self.names),
            "score": self.score,
            "why": self.why,
        }


@dataclass(slots=True)
class ConsolidatedHit:
    """A group of overlapping spans of one file, fused across arms.

    ``score`` is the final score the list is sorted by: the fused RRF score plus the ranking
    stage's boosts (``signals``), times the factors of the priors applied (``priors``) and the
    diversity factor; ``fused_score`` is the RRF score before all that (``None`` when the
    stage has not run, in which case it equals ``score``).

    A hit is a value: its lists may be shared with other hits of the same
    query and with the next re-fuse's (a slider move makes 500 hits in about a millisecond),
    so they are read, never changed in place; a field is replaced whole.
    """

    path: str
    start_line: int
    end_line: int
    docid: str
    context: str
    score: float
    rank: int
    provenance: list[str]
    agreement: int
    confidence: str
    contributors: list[Contribution] = field(default_factory=list)
    fused_score: float | None = None
    priors: list[AppliedPrior] = field(default_factory=list)
    #: The ranking stage's signals that moved this hit (:mod:`core.query.ranking`), in order.
    signals: list[AppliedSignal] = field(default_factory=list)
    #: The repository the hit is in, when the index is a shared store holding several
    #: (:mod:`core.backends`); "" for a local index (``path`` is then the root's).
    repo: str = ""
    #: Per arm, its rank of this chunk among its file's chunks, when the chunk step
    #: (:mod:`core.query.chunkstep`) placed it: the arms' evidence inside the file, where
    #: ``provenance`` is theirs over the whole index (a chunk no arm ranked there can still be
    #: the file's best). In the JSON it is the ``chunk`` signal's reason.
    within: dict[str, int] = field(default_factory=dict)
    #: The file's runners-up (:class:`Alternative`, best first), on the first hit of its file
    #: the chunk step placed: what a user shown one unit per file would otherwise miss. Not
    #: part of the ranking: nothing about the hits' order or scores depends on them.
    alternatives: list[Alternative] = field(default_factory=list, repr=False)

    @property
    def prior_factor(self) -> float:
        """The product of the applied priors' factors (1.0 when none demoted or boosted it)."""
        f = 1.0
        for p in self.priors:
            f *= p.factor
        return f

    def to_dict(self) -> dict:
        return {
            **({"repo": self.repo} if self.repo else {}),
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "docid": self.docid,
            "context": self.context,
            "score": self.score,
            "fused_score": self.score if self.fused_score is None else self.fused_score,
            "rank": self.rank,
            "provenance": list(self.provenance),
            "agreement": self.agreement,
            "confidence": self.confidence,
            "contributors": [
                {
                    "arm": c.arm,
                    "rank": c.rank,
                    "docid": c.docid,
                    "score": c.score,
                    "contribution": c.contribution,
                }
                for c in self.contributors
            ],
            "priors": [p.to_dict() for p in self.priors],
            "signals": [s.to_dict() for s in self.signals],
            **({"alternatives": [a.to_dict(self.path) for a in self.alternatives]} if self.alternatives else {}),
        }
