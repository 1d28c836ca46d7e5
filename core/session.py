"""One interactive search session over an engine, with no user interface in it.

The terminal UI is a view of a :class:`Session`: the session owns the query lifecycle (query
ids, each arm's result as it lands, dropping late answers to an older query), the fusion
settings the sliders move, re-fusing cached rankings, the user's relevance judgments and the
metrics against them, the files shown in the preview, the handoff export, and the bodies of
the index and ``deep`` workers. The app runs those bodies in its thread workers and only
wires results to widgets, so all of this is testable without Textual.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from .base.types import ConsolidatedHit
from .engine import ArmResult, Engine, check_query
from .judgments import QueryJudgments, judge, judgments_for
from .query.settings import FusedBy, FusionSettings


def without_unit(unit, hits: list[ConsolidatedHit]) -> list[ConsolidatedHit]:
    """A more-like-this list's hits without the unit it started from, ranked again."""
    from .graph.like import overlaps

    kept = [h for h in hits if not overlaps(unit, h.path, h.start_line, h.end_line)]
    if len(kept) == len(hits):
        return hits
    return [h if h.rank == rank else replace(h, rank=rank) for rank, h in enumerate(kept, start=1)]


class IndexStopped(Exception):
    """An indexing pass stopped because :attr:`Session.index_stop` was set (the app closing)."""


@dataclass
class Judged:
    """What judging a hit did: the query's judgments now, or why saving failed."""

    judgments: QueryJudgments | None
    error: str | None = None


class Session(FusedBy):
    """The state of one interactive search over ``engine`` (see the module docstring).

    ``settings`` start as the root's (shipped defaults under its tuned config); when that
    config cannot be read, the shipped defaults are used and ``config_error`` says why.
    """

    def __init__(self, engine: Engine, settings: FusionSettings | None = None) -> None:
        from .query.config import ConfigError

        self.engine = engine
        self.config_error: str | None = None
        served = getattr(engine, "served", None)  # a shared store serves some arms only
        if settings is None:
            try:
                settings = FusionSettings.resolve(
                    engine.root,
                    cache_dir=engine.cache_dir,
                    **({"arms": served, "with_deep": False} if served is not None else {}),
                )
            except ConfigError as exc:  # a broken config file: start from the shipped defaults
                self.config_error = str(exc)
                settings = FusionSettings.resolve(None)
        #: The fusion settings in force: the arms, their weights and k the sliders move, and
        #: whether the ranking stage runs (``p``).
        self.settings = settings
        self.query_id = 0
        self.query_text = ""
        self.results: dict[str, ArmResult] = {}
        self.hits: list[ConsolidatedHit] = []
        #: The unit a more-like-this list started from (:mod:`core.walk`): left out of its
        #: hits. Kept while the same question runs again; the front end sets and clears it.
        self.like = None
        self._files: dict[str, tuple[int, int, str]] = {}  # path -> (mtime_ns, size, text)
        self._judgments: QueryJudgments | None = None
        self._judged_query: str | None = None
        self.judgments_error: str | None = None  # why the current query's judgments are unreadable
        self.deep_stop = threading.Event()
        #: Set when the front end closes: an indexing pass in flight stops at its next progress
        #: report (:class:`IndexStopped`), keeping every generation it committed.
        self.index_stop = threading.Event()

    # -- settings -----------------------------------------------------------------------

    @property
    def arms(self) -> list[str]:
        return list(self.settings.arms)

    def tune(self, weights: dict[str, float] | None = None, k: float | None = None) -> None:
        """New weights and/or k (the sliders); :meth:`refuse` applies them."""
        self.settings = self.settings.with_(weights=weights, k=k)

    def toggle_priors(self) -> bool:
        """The ranking stage on / off; returns whether it is now on."""
        self.settings = self.settings.with_(priors=not self.settings.priors)
        return self.settings.priors

    # -- queries ------------------------------------------------------------------------

    @staticmethod
    def check(text: str) -> str:
        """The query stripped, or :class:`core.engine.QueryError` saying why it cannot run."""
        return check_query(text)

    def start(self, text: str) -> int:
        """Begin a query (``text`` already checked); returns its id. Results of any earlier
        query that land later are dropped."""
        self.query_id += 1
        self.query_text = text
        self.results = {}
        return self.query_id

    def abandon(self) -> None:
        """Forget the current query (its late results will be dropped)."""
        self.query_id += 1
        self.query_text = ""
        self.results = {}
        self.hits = []
        self.like = None

    def current(self, query_id: int) -> bool:
        return query_id == self.query_id

    def run_arm(self, arm: str, query_id: int, text: str) -> ArmResult | None:
        """Worker body (any thread): one arm's answer, or None when the query was superseded
        while the worker waited for a thread."""
        if query_id != self.query_id:
            return None
        return self.engine.run_arm(arm, text)

    def accept(self, query_id: int, result: ArmResult) -> bool:
        """Keep an arm's result if it answers the current query; whether it was kept.

        A skip does not overwrite an answer (deep's "not built yet", overtaken by its answer
        once its vectors are built)."""
        if query_id != self.query_id:
            return False
        old = self.results.get(result.arm)
        if old is not None and old.ok and not result.ok:
            return False
        self.results[result.arm] = result
        return True

    @property
    def complete(self) -> bool:
        """Every arm has answered (or was skipped / failed) for the current query."""
        return bool(self.query_text) and len(self.results) == len(self.settings.arms)

    def answered(self) -> list[str]:
        """The arms that answered the current query so far, in arm order."""
        return [arm for arm in self.settings.arms if arm in self.results and self.results[arm].ok]

    def refuse(self) -> list[ConsolidatedHit]:
        """Fuse the cached rankings with the settings in force (no arm runs again); the hits
        become :attr:`hits`. Raises ValueError when two arms answered from different index
        generations (run the query again)."""
        results = list(self.results.values())
        if getattr(self.engine, "shared", False) and results and self.hits and not any(r.ok for r in results):
            # A shared store that stopped answering (server down): the last answer stays on
            # screen, and the status line says what is wrong with the store.
            return self.hits
        hits = self.engine.fuse(results, self.settings)
        if self.like is not None:
            hits = without_unit(self.like, hits)
        self.hits = hits
        return self.hits

    # -- judgments ----------------------------------------------------------------------

    @property
    def cache_dir(self) -> Path:
        """The folder holding the root's index folder (where the judgments are kept)."""
        return self.engine.directory.parent

    def judgments(self) -> QueryJudgments | None:
        """The current query's judgments, read once per query (None when it has none, or
        when the file cannot be read: :attr:`judgments_error` then says why)."""
        if not self.query_text:
            return None
        if self._judged_query != self.query_text:
            self._judged_query = self.query_text
            try:
                self._judgments = judgments_for(self.engine.root, self.query_text, self.cache_dir)
                self.judgments_error = None
            except (OSError, ValueError) as error:
                self._judgments = None
                self.judgments_error = str(error) or type(error).__name__
        return self._judgments

    def judge(self, hit: ConsolidatedHit, relevant: bool) -> Judged:
        """Mark ``hit`` relevant or not for the current query; the same verdict again clears
        it. Spans grow as arms land, so a new verdict (or a clear) replaces every judgment
        overlapping the hit."""
        judgments = self.judgments()
        current = None if judgments is None else judgments.verdict(hit)
        verdict = None if current is relevant else relevant
        older = []
        if judgments is not None:
            older = [
                span
                for span in (*judgments.relevant, *judgments.not_relevant)
                if span.path == hit.path
                and span.start_line <= hit.end_line
                and hit.start_line <= span.end_line
                and (span.start_line, span.end_line) != (hit.start_line, hit.end_line)
            ]
        root, query = self.engine.root, self.query_text
        try:
            for span in older:
                judge(root, query, span.path, span.start_line, span.end_line, None, cache_dir=self.cache_dir)
            found = judge(root, query, hit.path, hit.start_line, hit.end_line, verdict, cache_dir=self.cache_dir)
        except (OSError, ValueError, ImportError) as error:
            self._judged_query = None  # read the file again: part of the change may have landed
            return Judged(self.judgments(), str(error) or type(error).__name__)
        self._judged_query = query
        self._judgments = found if (found.relevant or found.not_relevant) else None
        self.judgments_error = None
        return Judged(self._judgments)

    def metrics_note(self) -> str:
        """``MRR@10 … · nDCG@10 … (n judged)`` of the fused list against the query's
        judgments; "" without any."""
        judgments = self.judgments()
        if judgments is None:
            return ""
        judged = len(judgments.relevant) + len(judgments.not_relevant)
        metrics = judgments.metrics(self.hits)
        if metrics is None:
            return f"{judged} judged, none relevant"
        return f"MRR@10 {metrics['mrr@10']:.2f} · nDCG@10 {metrics['ndcg@10']:.2f} ({judged} judged)"

    # -- files and export ---------------------------------------------------------------

    def read_file(self, path: str, repo: str = "") -> str | None:
        """A file of the root as text, lines holding a credential redacted as in the index
        (:func:`core.text.secrets.redact`), cached until its size or mtime changes. ``repo``: a
        shared store's repository holding it (its folder on this machine; None when not here)."""
        from .text.secrets import redact

        root = self.engine.root
        if repo and getattr(self.engine, "shared", False):
            root = self.engine.root_of(repo)
            if root is None:
                return None
        full = root / path
        key = f"{repo}\0{path}" if repo else path
        try:
            st = full.stat()
            cached = self._files.get(key)
            if cached is not None and cached[:2] == (st.st_mtime_ns, st.st_size):
                return cached[2]
            text = redact(full.read_text(encoding="utf-8", errors="replace"), path)
        except OSError:
            return None
        self._files[key] = (st.st_mtime_ns, st.st_size, text)
        return text

    def forget_files(self) -> None:
        """Read files again next time (they may have changed)."""
        self._files.clear()

    def handoff(
        self,
        hits: list[ConsolidatedHit],
        *,
        query: str | None = None,
        settings: FusionSettings | None = None,
        results: dict[str, ArmResult] | None = None,
        reached: dict[str, dict] | None = None,
    ) -> dict:
        """The handoff envelope of ``hits`` (as ``ranklens query --json`` writes it, with each
        span's sha256), for the query, settings and results given (default: the current);
        ``reached``: how the walk reached each hit, by docid (:mod:`core.walk`)."""
        from .handoff import envelope

        settings = settings or self.settings
        results = self.results if results is None else results
        skipped = []
        for arm in settings.arms:
            result = results.get(arm)
            if result is None:
                skipped.append((arm, "still running when exported"))
            elif not result.ok:
                skipped.append((arm, result.skipped or result.error or ""))
        return envelope(
            query=self.query_text if query is None else query,
            mode="all",
            retrievers=[a for a in settings.arms if a in results and results[a].ok],
            skipped=skipped,
            weights=settings.fused_weights(),
            k=settings.k,
            hits=hits,
            priors=settings.priors,
            root=self.engine.root,
            with_hashes=True,
            roots={h.repo: self.engine.root_of(h.repo) for h in hits if h.repo} if self.engine_shared else None,
            reached=reached,
        )

    @property
    def engine_shared(self) -> bool:
        """Whether the index is a shared store's (:mod:`core.backends`)."""
        return bool(getattr(self.engine, "shared", False))

    # -- index and deep (worker bodies) --------------------------------------------------

    def index_gone(self) -> bool:
        """The index was deleted from under the engine (:attr:`Engine.index_gone`)."""
        return self.engine.index_gone

    def watch(self) -> bool:
        """Hold inotify watches over the tree (:mod:`core.index.watch`), so :meth:`changed` is cheap;
        whether there is a watcher (Linux, a local index)."""
        return not self.engine_shared and self.engine.watch()

    def changed(self) -> bool:
        """Whether the tree changed since the index's last check, as far as the watcher's events
        say (none: False at once; some: the freshness check on what they name). False without
        a watcher."""
        watcher = self.engine.watcher
        if watcher is None:
            return False
        news = watcher.take()
        if news is not None and not news:
            return False
        return not self.engine.check().unchanged

    def open_index(self) -> bool:
        """Open what is there (fast); whether an index could be opened."""
        return self.engine.ready or self.engine.open()

    def update_index(self, progress: Callable | None = None, on_partial: Callable | None = None):
        """Bring the index up to date (not the deep arm's vectors: :meth:`build_deep`).
        ``on_partial``: told (on this thread) of each generation a long pass commits and the
        engine opens before its last (:meth:`Engine.ensure_index`), to answer from meanwhile."""
        from .text.secrets import load_detectors

        def report(p) -> None:
            if self.index_stop.is_set():
                raise IndexStopped("the indexing pass was stopped (its committed generations are kept)")
            if progress is not None:
                progress(p)

        stats = self.engine.ensure_index(report, deep=False, on_partial=on_partial)
        load_detectors()  # here, so the preview's first credential check does not import them
        return stats

    def stop_workers(self) -> None:
        """Ask the work in flight to stop (the front end is closing): an indexing pass at its
        next progress report, a deep build after its batch; neither loses what it committed."""
        self.index_stop.set()
        self.deep_stop.set()

    def build_deep(self, progress: Callable[[int, int], None] | None = None):
        """Embed what the committed index lacks for the deep arm; :attr:`deep_stop` stops it
        after the batch in flight."""
        return self.engine.build_deep(progress, stop=self.deep_stop)

    def generation(self) -> int | None:
        try:
            return self.engine.view.generation
        except Exception:  # not open
            return None

    def partial(self):
        """How much of the files the open generation holds while its pass goes on
        (:class:`core.storage.store.Partial`); None when it is a whole pass's (or none is open)."""
        try:
            return self.engine.view.partial
        except Exception:  # not open, or a shared store's view
            return None
