"""What an arm is to the rest of ranklens: how it searches, and how it builds its files.

:class:`ArmSpec` is the one place an arm's name, family, shipped weights and build are given
(each arm module defines its ``SPEC``; :mod:`core.arms` lists them). :class:`Arm` is the
opened arm that answers queries; :class:`ArmBuild` writes and updates the arm's part of the
index while the indexer prepares a generation (:class:`Generation`): its part of the new
segment, of merged segments (:class:`SegmentMerge`) and of the generation itself, before
that generation commits (see :mod:`core.storage.segments`). :class:`IndexSettings` (what decides what
an index holds) is what a build is given, :class:`IndexStats` (what a pass did) what it
reports into: the indexer imports this module, never the other way round.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

import numpy as np

from ..base.types import DEFAULT_OVERLAP, DEFAULT_WINDOW, Chunk, Hit

if TYPE_CHECKING:
    from ..base._sqlite import sqlite3
    from ..discovery import DiscoveryOptions
    from ..storage.store import IndexView
    from ..storage.terms import IndexVocabulary, TokenMerger, Vocabulary


def _discovery_options() -> DiscoveryOptions:
    from ..discovery import DiscoveryOptions  # here: opening an index for a query lists no tree

    return DiscoveryOptions()


@dataclass(frozen=True)
class IndexSettings:
    """Everything that decides what an index holds.

    ``options.hidden`` and ``options.no_ignore`` left at None mean "as this index was last
    built" (False for a new one), so ``ranklens index --hidden`` followed by a plain
    ``ranklens query`` searches what was indexed instead of dropping it again.
    """

    window: int = DEFAULT_WINDOW
    overlap: int = DEFAULT_OVERLAP
    options: DiscoveryOptions = field(default_factory=_discovery_options)
    model: str | None = None  # model2vec model for the dense arm; None = the bundled one

    def fingerprint(self) -> str:
        """The chunking part; a change means every chunk must be rebuilt.

        Discovery options are not in it: they only decide which files are indexed, and the
        next update adds and removes files to match (the chunks of the others stay valid).
        """
        return json.dumps({"window": self.window, "overlap": self.overlap}, sort_keys=True)


@dataclass
class IndexStats:
    """What one indexing pass did."""

    root: str
    index_dir: str
    generation: int = 0
    files: int = 0
    chunks: int = 0
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    embedded: int = 0
    edges: int = 0  # uses of names stored (core.graph.build): chunk -> name pairs
    skipped: list[tuple[str, str]] = field(default_factory=list)
    kept: int = 0  # files discovery kept (before reading)
    excluded: list = field(default_factory=list)  # core.discovery.Exclusion per deciding rule
    discovery: dict = field(default_factory=dict)  # mode, hidden, no_ignore as applied
    warning: str | None = None  # why the tree looks empty or smaller than expected, if it does
    redacted: list[tuple[str, list[int]]] = field(default_factory=list)  # (path, lines) read this pass
    rebuilt: str | None = None  # why the index was rebuilt from scratch, if it was
    dense: str | None = None  # why the dense arm has no vectors, if it has none
    deep: str | None = None  # why the deep arm has no vectors, if it has none
    deep_embedded: int = 0  # texts the deep arm embedded (the rest came from its cache)
    deep_deferred: int = 0  # texts left for `ranklens index` (more than the caller would wait for)
    deep_busy: bool = False  # another process was embedding for the deep arm: not waited for
    seconds: dict[str, float] = field(default_factory=dict)  # per stage; stages overlap
    wall: float = 0.0  # the pass's wall time (the index command's: from its start)
    check: dict = field(default_factory=dict)  # what the freshness check found (core.index.freshness.Check)

    @property
    def up_to_date(self) -> bool:
        return not (self.added or self.changed or self.removed or self.rebuilt)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["skipped"] = [{"path": p, "reason": r} for p, r in self.skipped]
        d["excluded"] = [e.to_dict() for e in self.excluded]
        d["redacted"] = [{"path": p, "lines": lines} for p, lines in self.redacted]
        d["up_to_date"] = self.up_to_date
        return d


class ArmUnavailable(Exception):
    """Why an arm is skipped (one line, shown to the user)."""


class Arm(Protocol):
    name: str  # the arm's name, tagging its hits (its family is its spec's)

    def search(self, query: str, limit: int, allowed: np.ndarray | None = None) -> list[Hit]:
        """The arm's best ``limit`` chunks, best first; ``allowed`` masks chunk rows."""
        ...


@dataclass(frozen=True)
class Documents:
    """The BM25 documents an arm's matrix holds: chunk fields with their weights, and which
    chunks have a document (``include``; None: every chunk). A module-level ``include`` (or
    None), so a chunking worker process can be sent it."""

    fields: Mapping[str, float]
    include: Callable[[Chunk], bool] | None = None


@dataclass
class Generation:
    """The generation an index update is writing, as an arm's build sees it.

    A pass over the tree commits one generation (a cold build, one per
    :data:`core.storage.segments.SEGMENT_CHUNKS` chunks); each adds at most one new segment, the
    chunks of the files it stored, and tombstones the chunks those files (and removed files)
    had before.
    """

    #: The index database, inside the generation's open transaction (committed with it).
    conn: sqlite3.Connection
    #: The generation folder being written (per-generation files: statistics spanning the
    #: segments, lists that an update edits). Once every arm has written, its files are
    #: fsynced, it is renamed into place, and the generation is committed in SQLite.
    out: Path
    #: The previous generation's folder, to update from; None: build from nothing.
    prev: Path | None
    #: The index meta as last committed.
    meta: Mapping[str, str]
    settings: IndexSettings
    #: ``(stage, done, total)`` for the progress bar.
    progress: Callable[[str, int, int], None]
    #: Wall seconds per stage (the index summary's ``seconds``).
    seconds: dict[str, float]
    #: The new segment's folder being written (the new chunks' part of each arm); None when
    #: this generation adds no chunk.
    segment: Path | None = None
    #: The previous generation's segment folders, in order, with their first and last chunk id.
    segments: list[tuple[Path, int, int]] = field(default_factory=list)
    #: Chunk ids of the previous generation that are gone (changed and removed files).
    removed: list[int] = field(default_factory=list)
    #: The new chunks and their ids (ascending, above every kept id), once chunking is done.
    added: list[Chunk] = field(default_factory=list)
    added_ids: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    #: Every arm's :class:`Documents` counted while chunking (``tokens.tf(name)``), over
    #: ``vocab``, the index's one vocabulary (grown by this update; stored by the indexer).
    tokens: TokenMerger | None = None
    vocab: Vocabulary | IndexVocabulary | None = None
    #: The last generation of this pass (a cold build commits several).
    final: bool = True

    def removed_by_segment(self) -> list[tuple[Path, np.ndarray]]:
        """:attr:`removed` grouped by the previous generation's segment holding them."""
        ids = np.unique(np.asarray(self.removed, dtype=np.int64))
        out = []
        for folder, first, last in self.segments:
            lo, hi = np.searchsorted(ids, first, side="left"), np.searchsorted(ids, last, side="right")
            if hi > lo:
                out.append((folder, ids[lo:hi]))
        return out


@dataclass
class SegmentMerge:
    """Segments being merged into one (or one rewritten), as an arm's build sees it."""

    #: The merged segments' folders, in order.
    sources: list[Path]
    #: Their tombstoned chunk ids (sorted): left out of the merged segment.
    dead: np.ndarray
    #: The ids of the chunks the merged segment holds (ascending).
    ids: np.ndarray
    #: The folder being written.
    out: Path


class ArmBuild:
    """How an arm writes and updates its part of the index; one object per pass over the tree.

    A pass commits one or more generations (:class:`Generation`). For each, the indexer calls,
    in this order (each a no-op here unless the arm overrides it):

    1. :meth:`stale`, once a pass, deciding whether a pass with no changed file still writes a
       new generation;
    2. :meth:`begin`, in the generation's transaction;
    3. :meth:`remove` with the chunk ids leaving the ``chunks`` table (their rows still there),
       and :meth:`add` for each stored file's new chunks, as they are stored; before a file's
       :meth:`add`, :meth:`prepare` has been given its chunks (perhaps during the previous
       generation: work on another thread may start early);
    4. :meth:`added` once every new chunk of the generation is stored;
    5. :meth:`write`: write its part of the new segment (``gen.segment``) and of the generation
       (``gen.out``); then :meth:`merge` for each segment merged in this generation;
    6. :meth:`finish`: wait for work begun on another thread (:meth:`ready` says whether it
       would wait);
    7. :meth:`meta`, committed with the generation;
    8. :meth:`report` into the index summary (also after a pass that found nothing to do).

    :meth:`abandon` instead of the rest when the pass fails.
    """

    #: The arm's BM25 matrix documents, counted in the chunking workers with every other
    #: arm's (a field shared by several arms is counted once) into ``gen.tokens`` under the
    #: arm's name (:class:`core.arms._matrix.MatrixBuild` writes them); None: no matrix.
    documents: Documents | None = None
    #: DDL of the arm's own tables in the index database.
    schema: ClassVar[str] = ""

    def stale(self, meta: Mapping[str, str]) -> bool:
        """Whether the committed part is out of date though no file changed."""
        return False

    def begin(self, gen: Generation) -> None:
        pass

    def remove(self, ids: list[int]) -> None:
        pass

    def batch_task(self) -> Callable[[list[Chunk]], object] | None:
        """Work on each batch's new chunks for the chunking worker processes to do (a pass
        chunking in this process does it here): a picklable callable (a module-level class's
        instance) called with the batch's chunks, whose result reaches :meth:`prepare`; None:
        none. It must not fail: a result it cannot make is None, and :meth:`prepare` does the
        work itself."""
        return None

    def prepare(self, ids: list[int], chunks: list[Chunk], done: object = None) -> None:
        """``done``: :meth:`batch_task`'s result for these chunks (None: none made)."""

    def add(self, ids: list[int], chunks: list[Chunk]) -> None:
        pass

    def added(self) -> None:
        pass

    def write(self, gen: Generation) -> None:
        pass

    def merge(self, gen: Generation, merge: SegmentMerge) -> None:
        pass

    def ready(self) -> bool:
        return True

    def finish(self, gen: Generation) -> None:
        pass

    def meta(self) -> dict[str, str]:
        return {}

    def report(self, stats: IndexStats) -> None:
        pass

    def abandon(self) -> None:
        pass


@dataclass(frozen=True)
class ArmSpec:
    """One arm: everything the indexer, the engine, the defaults and the CLI know of it."""

    name: str
    family: str
    #: Opens the arm over a committed generation (raises :class:`ArmUnavailable` to be skipped).
    open: Callable[[IndexView], Arm]
    #: Fused when no arm is named (``all``) ...
    fused_by_default: bool = False
    #: ... with these shipped RRF weights, tuned without the optional ``deep`` arm and with
    #: it (None: as ``weight``; an arm given none weighs 1.0).
    weight: float | None = None
    weight_with_deep: float | None = None
    #: For an arm needing an optional extra: whether it is installed and switched on for the
    #: root whose index folder it is given (None: no root; only then is it fused by default).
    #: None: always.
    enabled: Callable[..., bool] | None = None
    #: Its part of each generation (a new :class:`ArmBuild` per update, given the index
    #: settings). None: the arm has no files of its own: it is a view over other arms'
    #: (``hybrid``), or builds them after the commit (``deep``'s sidecar).
    build: Callable[[IndexSettings], ArmBuild] | None = None

    @property
    def optional(self) -> bool:
        return self.enabled is not None

    def default_weight(self, with_deep: bool) -> float:
        weight = self.weight_with_deep if with_deep and self.weight_with_deep is not None else self.weight
        return 1.0 if weight is None else weight
