"""The one engine object behind both the CLI and the TUI.

It owns the index of one root (bringing it up to date, opening the committed generation),
runs each arm on its own thread and reports each arm's ranking the moment it is ready, and
re-fuses cached rankings with new weights or k without re-running any arm.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from .arms import REGISTRY, Arm, ArmUnavailable, default_arms
from .arms.protocol import IndexSettings, IndexStats
from .base.types import ConsolidatedHit, Hit
from .graph.edges import edges_of
from .graph.within import Callers, callers_within, unit_names
from .query.chunkstep import WITHIN_FILE_ARMS, FileUnits, Skeleton, skeleton, units_of, units_ranked
from .query.consolidate import check_ranking
from .query.pipeline import MERGE_ADJACENT, QueryError, QueryWork, check_query, rank, rank_single
from .query.ranking import Params
from .query.settings import FusedBy, FusionSettings
from .storage.store import IndexError_, IndexView, Partial, index_dir

if TYPE_CHECKING:  # the indexer (chunking, discovery, scipy) loads only when an index is built
    import numpy as np

    from .index.indexer import NotifyFn, PartialFn, ProgressFn

#: An arm's error when the index was deleted from under the engine (see Engine.index_gone).
INDEX_GONE = "the index folder was deleted: it is being rebuilt"
MAX_TOP_K = 1000
DEFAULT_TOP_K = 10


def check_top_k(top_k: int) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise QueryError(f"top-k must be a whole number from 1 to {MAX_TOP_K}, got {top_k!r}")
    return top_k


#: The most chunks a quoted passage marks (a phrase found everywhere tells nothing).
PHRASE_CHUNKS = 50

#: How many candidates each arm ranks for every query, whatever the number of results shown:
#: one setting, so the terminal UI's rows, ``query --top-k N`` for any N (always a prefix of a
#: longer list), ``query --batch`` and MCP ``search`` rank a query alike. Measured on the
#: benchmark's dev split and the span set (docs/appendix/eval-span-set.md): 30 a arm scores 0.888 / 0.369,
#: 51 0.881 / 0.36, 102 0.881 / 0.35 (deeper pools feed the file signals more noise).
CANDIDATE_DEPTH = 30


@dataclass
class ArmResult:
    """One arm's answer to one query: its ranking, or why it has none."""

    arm: str
    hits: list[Hit] = field(default_factory=list)
    elapsed_ms: float = 0.0
    skipped: str | None = None  # the arm could not run (missing dependency, no model …)
    error: str | None = None  # the arm failed while running
    query: str = ""  # the query text the arm answered (the priors read its words)
    # Set by Engine.run_arm once the ranking passed core.query.consolidate.check_ranking (on the
    # arm's thread): the fuse then need not check it again. Hits made by the engine's arms
    # agree across arms by construction (docid is path:start-end, text is not carried).
    checked: bool = field(default=False, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.skipped is None and self.error is None


@dataclass
class SearchResult(FusedBy):
    """Every arm's result for a query, and the fused list."""

    query: str
    top_k: int
    arms: list[str]
    results: dict[str, ArmResult]
    hits: list[ConsolidatedHit]
    settings: FusionSettings
    elapsed_ms: float
    #: How much of the files the arms searched, when the index was still being built (the
    #: generation they opened: :attr:`core.storage.store.IndexView.partial`); None: all of them.
    partial: Partial | None = None

    @property
    def answered(self) -> list[str]:
        return [a for a in self.arms if self.results[a].ok]

    @property
    def skipped(self) -> list[tuple[str, str]]:
        return [(a, r.skipped or r.error or "") for a, r in self.results.items() if not r.ok]


class Engine:
    """Index, query and fuse one root.

    Parameters
    ----------
    root
        The repository folder.
    settings
        Chunking, discovery and model settings (defaults are the tuned ones).
    cache_dir
        Where indexes live (default: the platformdirs user cache dir).
    notify
        Receives one-line notes (rebuilds, lock waits); default drops them.
    """

    def __init__(
        self,
        root: Path | str,
        settings: IndexSettings | None = None,
        *,
        cache_dir: Path | None = None,
        notify: NotifyFn | None = None,
    ) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise NotADirectoryError(f"{root} is not a directory")
        self._settings = settings
        self.cache_dir = cache_dir
        self.directory = index_dir(self.root, cache_dir)
        self.notify = notify or (lambda _msg: None)
        self._view: IndexView | None = None
        self._arms: dict[str, Arm | ArmUnavailable] = {}
        self._work: OrderedDict[tuple, QueryWork] = OrderedDict()  # (rankings' ids, query) -> its per-query work
        self._units: OrderedDict[tuple, dict[str, FileUnits]] = OrderedDict()  # (view, query, arms) -> files
        self._quoted: OrderedDict[tuple, dict] = OrderedDict()  # (view, query) -> Engine.quoted's answer
        self._chunks_of: OrderedDict[tuple, tuple] = OrderedDict()  # (view, path) -> its chunk rows and fields
        self._root_settings: tuple | None = None  # (its config, default arms, settings)
        self._configs: dict[tuple, dict] = {}  # (config file stamp, with deep) -> root_config
        self._lock = threading.RLock()
        self._pool = ThreadPoolExecutor(max_workers=len(REGISTRY), thread_name_prefix="ranklens-arm")
        self.watcher = None  # core.index.watch.TreeWatcher once watch() is called (a long-lived process)

    @property
    def settings(self) -> IndexSettings:
        """Chunking, discovery and model settings (the defaults unless given)."""
        if self._settings is None:
            self._settings = IndexSettings()
        return self._settings

    # -- index --------------------------------------------------------------------------

    def ensure_index(
        self,
        progress: ProgressFn | None = None,
        *,
        deep: bool | None = None,
        deep_limit: int | None = None,
        open_view: bool = True,
        fresh: bool = False,
        survey=None,
        on_partial: PartialFn | None = None,
    ) -> IndexStats:
        """Bring the index up to date (incrementally) and open it for querying.

        ``deep``: then also complete the ``deep`` arm's vectors (progress stage ``deep``);
        None: when that arm is turned on for this root (:meth:`default_arms`); never waiting
        for another process's deep build (``stats.deep_busy``). The index
        is committed and opened first, so the other arms never wait for it; the TUI passes
        False and runs :meth:`build_deep` in a worker of its own. ``deep_limit``: leave the
        deep vectors as they are when more texts than this lack one (``stats.deep_deferred``).
        ``open_view=False`` leaves the index closed (``ranklens index`` only builds it).
        ``fresh``: list the whole tree again instead of trusting the last listing's snapshot.
        ``survey``: the stat pass of the check, made meanwhile by a child (:class:`core.index.freshness.Survey`).
        ``on_partial``: a pass that commits several generations (a first build, a large change)
        opens each but the last as it commits, and then calls this (on the indexing thread)
        with what it holds: queries meanwhile answer from it (:attr:`IndexView.partial`).
        """
        from .index.indexer import Indexer

        t0 = time.perf_counter()
        if self.index_gone:
            self.notify(f"the index folder {self.directory} was deleted; rebuilding it")
            with self._lock:
                self._view, self._arms = None, {}
        prewarm = None
        if open_view and self._view is None and (self.directory / "index.sqlite").exists():
            # While the indexer stats the tree (~0.2 s at 78k files), open the committed
            # generation and its arms on another thread: when nothing changed (the usual case
            # for a query) that is the generation to answer from; otherwise it is dropped below.
            prewarm = self._pool.submit(self._prewarm)
        committed = None
        if on_partial is not None:

            def committed(partial: Partial) -> None:
                with self._lock:
                    self._open()
                on_partial(partial)

        try:
            indexer = Indexer(
                self.root, self.directory, self.settings, self.notify, self.watcher, fresh, survey, on_partial=committed
            )
            stats = indexer.update(progress)
        finally:
            if prewarm is not None:
                prewarm.result()
        if prewarm is not None and (stats.rebuilt or not self._same_database()):
            with self._lock:  # a new database may count its generations anew
                self._view, self._arms = None, {}
        if open_view:
            with self._lock:
                if self._view is None or self._view.generation != stats.generation:
                    self._open()
        if deep if deep is not None else "deep" in self.default_arms():
            self._deep_stage(stats, progress, deep_limit)
        elif deep is None:
            from .arms.deep.model import off_reason

            stats.deep = off_reason(self.directory)
        stats.wall = time.perf_counter() - t0
        return stats

    def default_arms(self) -> tuple[str, ...]:
        """The arms fused when none are named, on this root (:func:`core.arms.default_arms`:
        deep where it is turned on for it and installed)."""
        return default_arms(self.directory)

    def _same_database(self) -> bool:
        """Whether the open view's database file is still the index's (not deleted and made again)."""
        view = self._view
        try:
            return view is None or os.stat(view.db_path).st_ino == view.db_inode
        except OSError:
            return False

    def _prewarm(self) -> None:
        try:
            if self.open():
                self.warm()
        except Exception:  # whatever is wrong, the index pass meets it too and says so
            pass

    def check(self):
        """Whether the tree changed since the last index pass, by a stat pass over what that
        pass listed (:func:`core.index.freshness.check`; ``.unchanged``, ``.verdict``, ``.reason``)."""
        from .index.indexer import Indexer

        return Indexer(self.root, self.directory, self.settings, self.notify, self.watcher).check()

    def watch(self) -> bool:
        """Hold inotify watches over the tree from now on, so a freshness check stats only what
        changed (:mod:`core.index.watch`; for a process that outlives one query). Whether there is a
        watcher (Linux only)."""
        if self.watcher is None:
            from .index.watch import open_watcher

            self.watcher = open_watcher(self.root)
        return self.watcher is not None

    def build_deep(
        self,
        progress: Callable[[int, int], None] | None = None,
        stop: threading.Event | None = None,
        limit: int | None = None,
    ):
        """Embed what the committed generation lacks for the ``deep`` arm (slow: minutes for
        thousands of chunks); see :func:`core.arms.deep.build_vectors`. Once its vectors are
        complete the arm opens on its next query. Raises :class:`ArmUnavailable` without the
        extra."""
        from .arms.deep import build_vectors

        build = build_vectors(self.directory, progress, stop, self.notify, limit)
        with self._lock:
            if isinstance(self._arms.get("deep"), ArmUnavailable):
                del self._arms["deep"]  # it said "not built yet": ask it again
        return build

    def _deep_stage(self, stats: IndexStats, progress: ProgressFn | None, limit: int | None = None) -> None:
        from .index.indexer import Progress  # here: main's warm start imports the indexer only to index

        def report(done: int, total: int) -> None:
            if progress is not None:
                progress(Progress("deep", done, total))

        try:
            build = self.build_deep(report, limit=limit)
        except ArmUnavailable as exc:
            stats.deep = str(exc)
            return
        except Exception as exc:  # the rest of the index is committed and answers without it
            stats.deep = f"{type(exc).__name__}: {exc}"
            self.notify(f"the deep arm's vectors could not be built: {stats.deep}")
            return
        stats.deep_embedded = build.embedded
        stats.deep_deferred = build.deferred
        stats.deep_busy = build.busy
        stats.seconds["deep"] = build.seconds

    def deep_note(self, stats: IndexStats) -> str | None:
        """What a query should say about the deep arm sitting out, once: the first time it
        finds another process embedding for it, or more texts to embed than a query waits
        for; None when that was said already (by any process, since the vectors were last
        complete) or deep answers. The note said last is kept in ``deep/said``."""
        from .arms.deep import CACHE_DIR

        kind, note = "", None
        if stats.deep_busy:
            kind = "busy"
            note = (
                "deep: another ranklens is embedding this root's chunks for it; queries answer without "
                "deep until that finishes"
            )
        elif stats.deep_deferred:
            kind = "deferred"
            note = (
                f"deep: {stats.deep_deferred:,} chunks to embed (minutes); `ranklens index` builds them, "
                "queries answer without deep until then"
            )
        said = self.directory / CACHE_DIR / "said"
        try:
            before = said.read_text(encoding="utf-8")
        except OSError:
            before = ""
        if before == kind:
            return None
        try:
            if kind:
                said.parent.mkdir(parents=True, exist_ok=True)
                said.write_text(kind, encoding="utf-8")
            else:
                said.unlink()
        except OSError:
            pass  # a read-only cache: said again next time
        return note

    def open(self) -> bool:
        """Open the existing index without updating it; False when there is none usable."""
        with self._lock:
            try:
                self._open()
            except IndexError_:
                return False
            return True

    def _open(self) -> None:
        view = IndexView.open(self.root, self.directory)
        self._view = view
        self._arms = {}

    @property
    def view(self) -> IndexView:
        if self._view is None:
            raise IndexError_("the index is not open; call ensure_index() first")
        return self._view

    @property
    def ready(self) -> bool:
        return self._view is not None and not self.index_gone

    @property
    def index_gone(self) -> bool:
        """The index this engine opened was deleted from under it (its folder, or its database,
        removed by hand): its arms may still answer from what they mapped, but nothing of it
        will be there to update. :meth:`ensure_index` rebuilds it; :meth:`search` does first."""
        return self._view is not None and not self._view.db_path.exists()

    def arm(self, name: str) -> Arm:
        """The opened arm, or :class:`ArmUnavailable` with the reason it is skipped."""
        return self._arm_on_view(name)[0]

    def _arm_on_view(self, name: str) -> tuple[Arm, IndexView]:
        """The arm and the index view it was opened on, taken together: a refresh that lands
        meanwhile must not pair one generation's arm with another's chunk rows."""
        if name not in REGISTRY:
            raise ArmUnavailable(f"unknown retriever {name!r}")
        with self._lock:
            view = self.view
            found = self._arms.get(name)
            if found is None:
                try:
                    found = REGISTRY[name].open(view)
                except ArmUnavailable as exc:
                    found = exc
                except ImportError as exc:
                    found = ArmUnavailable(f"missing dependency: {exc}")
                except Exception as exc:  # a broken artifact or library must only skip its arm
                    found = ArmUnavailable(f"{type(exc).__name__}: {exc}")
                self._arms[name] = found
        if isinstance(found, ArmUnavailable):
            raise found
        return found, view

    def warm(self, arms: Iterable[str] | None = None) -> dict[str, str | None]:
        """Open the arms (default: :meth:`default_arms`) now, loading their
        artifacts; name -> skip reason or None."""
        out: dict[str, str | None] = {}
        for name in self.default_arms() if arms is None else arms:
            try:
                self.arm(name)
                out[name] = None
            except ArmUnavailable as exc:
                out[name] = str(exc)
        return out

    # -- query --------------------------------------------------------------------------

    def run_arm(
        self,
        name: str,
        query: str,
        *,
        depth: int = CANDIDATE_DEPTH,
        path_glob: str | None = None,
        language: str | None = None,
    ) -> ArmResult:
        """Run one arm in the calling thread (the TUI gives each arm its own worker): its
        best ``depth`` chunks (:data:`CANDIDATE_DEPTH`, whatever is shown)."""
        t0 = time.perf_counter()
        if self.index_gone:
            return ArmResult(name, error=INDEX_GONE, query=query)
        try:
            arm, view = self._arm_on_view(name)
        except ArmUnavailable as exc:
            return ArmResult(name, skipped=str(exc), query=query)
        try:
            allowed = view.chunks.mask(path_glob, language)
            hits = arm.search(query, depth, allowed)
            check_ranking(name, hits)
        except Exception as exc:  # one arm failing must not fail the query
            return ArmResult(name, elapsed_ms=_ms(t0), error=f"{type(exc).__name__}: {exc}", query=query)
        return ArmResult(name, hits=hits, elapsed_ms=_ms(t0), query=query, checked=True)

    def fusion(
        self,
        settings: FusionSettings | None = None,
        *,
        arms: Sequence[str] | None = None,
        weights: Mapping[str, float] | None = None,
        k: float | None = None,
        priors: bool | None = None,
        with_deep: bool | None = None,
    ) -> FusionSettings:
        """The fusion settings a query runs with: ``settings`` (default: the shipped ones under
        this root's tuned config, :meth:`FusionSettings.resolve`) with any of the others on
        top. Raises :class:`QueryError` for an unknown arm or a bad weight or k."""
        try:
            if settings is None and all(v is None for v in (arms, weights, k, priors, with_deep)):
                settings = self._root_fusion()
            elif settings is None and arms is None and with_deep is None and (root := self._root_fusion_or_none()):
                # The root's settings (kept while its config file stays) with these on top:
                # what resolving them again gives, without reading the config (a re-fuse).
                settings = root.with_(weights=weights, k=k, priors=priors)
            elif settings is None:
                settings = FusionSettings.resolve(
                    self.root,
                    arms=arms,
                    weights=weights,
                    k=k,
                    priors=priors,
                    with_deep=with_deep,
                    cache_dir=self.cache_dir,
                )
            elif any(v is not None for v in (arms, weights, k, priors)):
                settings = settings.with_(
                    arms=tuple(arms) if arms is not None else None, weights=weights, k=k, priors=priors
                )
        except ValueError as exc:  # a bad weight or k, or a broken config file
            raise QueryError(str(exc)) from None
        for name in settings.arms:
            if name not in REGISTRY:
                raise QueryError(f"unknown retriever {name!r} (choose from {', '.join(REGISTRY)})")
        if not settings.arms:
            raise QueryError("no retriever to run")
        return settings

    def _root_fusion_or_none(self) -> FusionSettings | None:
        """:meth:`_root_fusion`, or None when the root's config cannot be read (resolving with
        the caller's weights and k may not need it)."""
        try:
            return self._root_fusion()
        except ValueError:  # core.query.config.ConfigError
            return None

    def _root_fusion(self) -> FusionSettings:
        """This root's own settings (:meth:`FusionSettings.resolve` with nothing on top), kept
        while its config file and the default arms stay as they are."""
        names = self.default_arms()
        config = self.root_config("deep" in names)
        cached = self._root_settings
        if cached is not None and cached[0] is config and cached[1] == names:
            return cached[2]
        settings = FusionSettings.resolve(self.root, cache_dir=self.cache_dir, config=config)
        self._root_settings = (config, names, settings)
        return settings

    def root_config(self, with_deep: bool) -> dict:
        """:func:`core.query.config.load_config` of this root, kept while its config file's stat stays
        the same: a query stats the file instead of resolving its path, reading and parsing it
        (~0.2 ms). Raises :class:`core.query.config.ConfigError` as it does (a broken file is read
        again at every query). Not to be modified."""
        from .query.config import CONFIG_FILE, load_config

        try:
            st = os.stat(self.directory / CONFIG_FILE)
            stamp = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        except FileNotFoundError:
            stamp = None
        except OSError:  # unreadable: load_config says why
            return load_config(self.root, self.cache_dir, with_deep=with_deep)
        key = (stamp, with_deep)
        found = self._configs.get(key)
        if found is None:
            found = load_config(self.root, self.cache_dir, with_deep=with_deep)
            self._configs = {k: v for k, v in self._configs.items() if k[0] == stamp}
            self._configs[key] = found
        return found

    def search(
        self,
        query: str,
        settings: FusionSettings | None = None,
        *,
        top_k: int = DEFAULT_TOP_K,
        arms: Sequence[str] | None = None,
        weights: Mapping[str, float] | None = None,
        k: float | None = None,
        priors: bool | None = None,
        path_glob: str | None = None,
        language: str | None = None,
        on_arm: Callable[[ArmResult], None] | None = None,
    ) -> SearchResult:
        """Run the arms concurrently, each on its own thread, and rank their results.

        The fusion settings are :meth:`fusion`'s (``settings``, else the root's, with
        ``arms``/``weights``/``k``/``priors`` on top), so a Python caller ranks as the CLI and
        the terminal UI do. ``on_arm`` is called (from the arm's thread) with each arm's
        result as soon as it is ready, in completion order.
        """
        t0 = time.perf_counter()
        text = check_query(query)
        check_top_k(top_k)
        fs = self.fusion(settings, arms=arms, weights=weights, k=k, priors=priors)
        names = list(fs.arms)
        if self.index_gone:  # deleted from under us: build it again, then answer
            self.ensure_index()
        view = self.view  # fail fast, before any thread, when the index is not open

        def job(name: str) -> ArmResult:
            result = self.run_arm(name, text, path_glob=path_glob, language=language)
            if on_arm is not None:
                on_arm(result)
            return result

        futures = {name: self._pool.submit(job, name) for name in names}
        results = {name: f.result() for name, f in futures.items()}
        hits = self.fuse(results.values(), fs, top_k=top_k, query=text)
        return SearchResult(text, top_k, names, results, hits, fs, _ms(t0), view.partial)

    def fuse(
        self,
        results: Iterable[ArmResult] | Mapping[str, Sequence[Hit]],
        settings: FusionSettings | None = None,
        *,
        weights: Mapping[str, float] | None = None,
        k: float | None = None,
        top_k: int | None = None,
        priors: bool | None = None,
        query: str | None = None,
        stage: Params | None = None,
    ) -> list[ConsolidatedHit]:
        """Rank cached results with these settings; no arm runs again.

        ``settings`` default to :meth:`fusion`'s (``weights``, ``k``, ``priors``, ``stage`` on
        top), which fuse whatever rankings are given. Settings naming one arm: its own ranking,
        spans not merged, re-ordered by the priors (with ``priors``) before the ``top_k`` cut.
        Several: the query pipeline (:func:`core.query.pipeline.rank`): overlapping spans merged,
        weighted RRF, then (with ``priors``) the ranking stage's file step (:mod:`core.query.ranking`:
        its signals, the path priors of :mod:`core.query.priors`, diversity) and chunk step
        (:mod:`core.query.chunkstep`): ``score`` is then the final score, ``fused_score`` the RRF
        score, ``signals`` and ``priors`` what was applied. The stage reads ``query``, else the
        ``ArmResult``s' ``query``; with a mapping of rankings and no ``query`` it sees an empty
        query (priors and diversity only). The query's per-query work is kept: a re-fuse of the
        same rankings reweights and re-sorts.
        """
        if isinstance(results, Mapping):
            rankings = dict(results)
            checked = False
        else:
            results = [r for r in results if r.ok]
            if query is None:
                query = next((r.query for r in results if r.query), None)
            rankings = {r.arm: r.hits for r in results}
            checked = all(r.checked for r in results)
        if settings is None:  # the root's: the default arms fused (one arm only when asked for)
            settings = self.fusion(weights=weights, k=k, priors=priors)
        elif any(v is not None for v in (weights, k, priors)):
            settings = settings.with_(weights=weights, k=k, priors=priors)
        if stage is not None:
            settings = settings.with_(stage=stage)
        if settings.single is not None:
            return rank_single(rankings.get(settings.single, []), settings, query, top_k)
        # A query's per-query work (its groups, the stage's reading of it) is kept: a re-fuse
        # of the same rankings (same list objects; the work keeps them, so their ids stay
        # theirs) with new weights or k skips validation and grouping (core.query.pipeline).
        key = (tuple(sorted((arm, id(hits)) for arm, hits in rankings.items())), query)
        with self._lock:
            work = self._work.get(key)
        if work is None:
            work = QueryWork(rankings, query, merge_adjacent=MERGE_ADJACENT, check=not checked)
            with self._lock:
                _remember(self._work, key, work, 4)
        return rank(work, settings, top_k, self)

    def quoted(self, query: str) -> dict[str, list[tuple[int, int, str]]]:
        """path -> the chunks (start, end, phrase) holding a passage ``query`` quotes (the
        ranking stage's ``quote`` signal); {} when the query quotes nothing or no index is
        open. Kept per query: a slider move looks nothing up again."""
        from .arms.fts5 import quoted_phrases

        phrases = quoted_phrases(query)
        if not phrases or not self.ready:
            return {}
        view = self.view
        key = (id(view), view.generation, query)
        with self._lock:
            found = self._quoted.get(key)
        if found is None:
            found = self._find_quoted(phrases)
            with self._lock:
                _remember(self._quoted, key, found)
        return found

    def _find_quoted(self, phrases: list[list[str]]) -> dict[str, list[tuple[int, int, str]]]:
        """:meth:`quoted` from the index: the fts5 arm's phrase search (none without fts5)."""
        out: dict[str, list[tuple[int, int, str]]] = {}
        try:
            arm, view = self._arm_on_view("fts5")
        except ArmUnavailable:
            return out
        for tokens in phrases:
            rows = arm.phrase_rows([tokens], PHRASE_CHUNKS)
            if len(rows):
                paths, starts, ends = view.chunks.columns(("paths", "starts", "ends"), rows)
                for p, s, e in zip(paths, starts, ends):
                    out.setdefault(p, []).append((s, e, " ".join(tokens)))
        return out

    def file_units(
        self, query: str, paths: Sequence[str], arms: Sequence[str] = WITHIN_FILE_ARMS
    ) -> dict[str, FileUnits]:
        """Every chunk of each file of ``paths`` as :class:`core.query.chunkstep.FileUnits`, ranked
        within its file by each of ``arms`` (the chunk step's units, :mod:`core.query.chunkstep`);
        the files not kept for this query yet are ranked together (:meth:`_rank_files`), so a
        slider move that brings a new file to the top asks only for that file."""
        view = self.view
        key = (id(view), view.generation, query, tuple(arms))
        with self._lock:
            cache = self._units.get(key)
            if cache is None:
                cache = {}
                _remember(self._units, key, cache)
        missing = [p for p in dict.fromkeys(paths) if p not in cache]
        if missing:
            found = self._rank_files(query, missing, tuple(arms))
            with self._lock:
                cache.update(found)
        return {p: cache[p] for p in paths if p in cache}

    def _rank_files(self, query: str, paths: list[str], arms: tuple[str, ...]) -> dict[str, FileUnits]:
        """:meth:`file_units` from the index: each arm searched once, restricted to the chunks
        of ``paths``."""
        import numpy as np

        view = self.view
        files = {p: self._file_chunks(view, p) for p in paths}
        rows = np.concatenate([f.rows for f in files.values()]) if files else np.empty(0, dtype=np.int64)
        searched: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        if len(rows):
            allowed = np.zeros(len(view.chunks), dtype=bool)
            allowed[rows] = True
            among = np.unique(rows)  # ascending, as the arms take them
            for name in arms:
                try:
                    arm, _ = self._arm_on_view(name)
                except ArmUnavailable:
                    continue
                if hasattr(arm, "scores"):
                    searched[name] = arm.scores(query, len(rows), allowed, among)
        if all(files[p].unit is not None for p in paths):
            shapes = [(p, f.shape, f.rows, f.unit, f.starts, f.ends, f.spans) for p, f in files.items()]
            ranked = units_ranked(shapes, searched)
            if ranked is not None:
                for p, fu in ranked.items():
                    fu.callers = files[p].callers
                return ranked
        span_of: dict[int, tuple[str, tuple[int, int]]] = {}
        for f in files.values():
            span_of.update(f.where)
        scores: dict[str, dict[str, dict[tuple[int, int], float]]] = {p: {} for p in paths}
        get = span_of.get
        for name, (found_rows, found_scores) in searched.items():
            for row, score in zip(found_rows.tolist(), found_scores.tolist()):
                where = get(row)
                if where is not None:
                    of_file = scores[where[0]]
                    by_arm = of_file.get(name)
                    if by_arm is None:
                        by_arm = of_file[name] = {}
                    by_arm[where[1]] = score
        return {p: units_of(p, files[p].shape, scores[p], files[p].callers) for p in paths}

    def _file_chunks(self, view: IndexView, path: str) -> _FileChunks:
        """A file's :class:`_FileChunks`, kept per view (none of it depends on the query)."""
        import numpy as np

        key = (id(view), view.generation, path)
        with self._lock:
            found = self._chunks_of.get(key)
        if found is None:
            chunks = view.chunks
            rows = chunks.rows_of_path(path)
            names = ("starts", "ends", "pieces", "contexts", "symbols", "decls")
            cols = chunks.columns(names, rows) if len(rows) else [[]] * len(names)
            listed = [(s, e, (ps, pe) if ps else None, c, sym, d) for s, e, (ps, pe), c, sym, d in zip(*cols)]
            shape = skeleton(listed)
            spans = [(c[0], c[1]) for c in listed]
            # Each row's unit, for ranking the units with arrays; None when two chunks have
            # the same lines (units_of's span-keyed ranking then decides).
            unit = (
                np.array([shape.of_chunk[span] for span in spans], dtype=np.int64)
                if len(shape.of_chunk) == len(spans)
                else None
            )
            starts = np.array([u[0] for u in shape.units], dtype=np.int64)
            ends = np.array([u[1] for u in shape.units], dtype=np.int64)
            callers = callers_within(
                edges_of(view),
                rows,
                unit if unit is not None else np.array([shape.of_chunk[span] for span in spans], dtype=np.int64),
                [unit_names(u[3]) for u in shape.units],
                [(u[0], u[1]) for u in shape.units],
            )
            found = _FileChunks(
                rows,
                shape,
                dict(zip(rows.tolist(), ((path, span) for span in spans))),
                unit,
                starts,
                ends,
                spans,
                callers,
            )
            with self._lock:
                _remember(self._chunks_of, key, found, 1024)
        return found

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self.watcher is not None:
            self.watcher.close()


class _FileChunks(NamedTuple):
    """What the chunk step needs of one file's chunks (:meth:`Engine._file_chunks`)."""

    rows: np.ndarray  # its chunk rows
    shape: Skeleton  # its units
    where: dict[int, tuple[str, tuple[int, int]]]  # row -> (path, (start, end))
    unit: np.ndarray | None  # each row's unit; None when two chunks have the same lines
    starts: np.ndarray  # each unit's first line
    ends: np.ndarray  # and last line
    spans: list[tuple[int, int]]  # each row's (start, end)
    callers: Callers  # per unit, the file's units that use a name it defines


def _remember(cache: OrderedDict, key, value, bound: int = 16) -> None:
    """Put ``value`` in the bounded cache, dropping the oldest entries past ``bound`` (the
    caller holds the engine's lock)."""
    cache[key] = value
    while len(cache) > bound:
        cache.popitem(last=False)


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0
