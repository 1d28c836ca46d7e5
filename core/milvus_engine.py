"""The engine over a Milvus store: the same arms, threads, fusion and ranking stage.

:class:`MilvusEngine` is a :class:`core.engine.Engine` whose arms are requests to a Milvus
collection (:mod:`core.backends.milvus`) instead of the local segments: ``bm25``, ``fts5`` and
``symbols`` are inner-product searches of the query's BM25 weights (its terms' idf from the
searched repositories' statistics) over the chunks' stored ones (:mod:`core.backends.sparse`:
the score is the local arm's), ``dense`` a cosine search over the vectors, the query embedded
here with the collection's model. Each arm is still one request on its own worker thread
(:meth:`Engine.search`), so the terminal UI streams arms as they answer; fusion,
consolidation, the ranking stage and the handoff are :class:`Engine`'s own code.

The engine searches one repository (its root's, by default), several, or every repository
in the collection. Across several, an arm's hits carry ``repo/path`` as their path while
they are fused (two repositories' ``README.md`` never merge into one hit, and the ranking
stage sees the repository as the top folder); the fused hits then carry the repository in
``ConsolidatedHit.repo`` and the path within it.

Navigation (``ranklens related``, ``--like``, MCP ``related``) asks :meth:`MilvusEngine.graph`:
a :class:`StoreGraph` over the root's repository, whose chunks' edges the collection keeps
(``refs``, ``refs_sparse``): a name's users or definitions are one sparse search.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from fnmatch import fnmatchcase
from pathlib import Path

from .arms import ArmUnavailable
from .arms.fts5 import quoted_phrases
from .backends import StoreError, StoreSpec
from .backends.milvus import MilvusStore, as_stored, check_repo_name, open_store, quote
from .backends.sparse import NOTHING, SCHEMES, TermStats, query_vector
from .base.types import ConsolidatedHit, Hit, make_docid
from .chunking.refs import DEFINES, SETS
from .engine import CANDIDATE_DEPTH, PHRASE_CHUNKS, ArmResult, Engine, _ms
from .graph.edges import ChunkPlace
from .graph.related import RelatedError, reading
from .graph.within import callers_from_refs, unit_names
from .query.chunkstep import skeleton, units_of
from .query.consolidate import check_ranking

#: The arms a Milvus store serves, and the field each searches.
FIELDS = {"bm25": "lex_sparse", "fts5": "words_sparse", "dense": "dense", "symbols": "names_sparse"}
#: Candidates a path-filtered search asks for per wanted hit when the glob cannot be a LIKE.
GLOB_OVERSAMPLE = 10
#: The most chunks the chunk step reads of one file, and of all its files at once (Milvus
#: answers at most 16,384 rows a query).
MAX_FILE_CHUNKS = 4096
MAX_QUERY_ROWS = 16_384
#: Rows asked beyond the limit, so that ties at the limit are broken as locally (by order).
TIE_MARGIN = 10


class StoreView:
    """What the engine's callers read of an open index (the TUI its generation)."""

    #: A shared store is indexed by `ranklens index --store`, whole: never part of a pass
    #: (:attr:`core.storage.store.IndexView.partial`).
    partial = None

    def __init__(self, root: Path, meta: dict, repos: dict) -> None:
        self.root = root
        self.meta = meta
        self.repos = repos
        self.generation = int(sum(r.indexed_at for r in repos.values()))


class StoreGraph:
    """:class:`core.graph.edges.Graph` over one repository's chunks in the store.

    A name's users (or, as ``=name``, its definitions) are one inner-product search of the
    name's index in ``refs_sparse`` under the repository's filter, each row checked whole
    against its stored ``refs`` (:meth:`core.backends.milvus.MilvusStore.refs_search`); the
    answers are kept for the graph's life, one state of the repository in the store (the
    engine makes a graph each time it was indexed again). Every walk first asks whether its
    file is :meth:`indexed`; that also fetches the definitions of every name the file uses
    (read from ``root``) in one request when they are at most :data:`PREFETCH`, so the
    callees of a unit of it cost no request each (in Milvus Lite a request costs ~5 ms and a
    row ~0.2 ms: one request of 100 names answers a unit's 20 callees in about the time of 6
    requests). A failing store is a :class:`RelatedError`: one line where the walk was asked."""

    #: Names whose answers are kept (past it, the kept ones are dropped).
    KEEP = 4096
    #: Names asked in one request.
    BATCH = 256
    #: The most names a file may use for :meth:`indexed` to fetch their definitions at once.
    PREFETCH = 128

    def __init__(self, store: MilvusStore, repo: str, root: Path | None = None) -> None:
        self.store = store
        self.repo = repo
        self.root = root
        self.expr = f"repo == {quote(repo)}"
        self._found: dict[str, list[ChunkPlace]] = {}
        self._indexed: dict[str, bool] = {}
        self._lock = threading.Lock()

    def fetch(self, keys: Sequence[str]) -> dict[str, list[ChunkPlace]]:
        """The chunks of each of ``keys`` (a name: its users; ``=name``: its definitions),
        those not kept yet asked in one request a :data:`BATCH`."""
        with self._lock:
            out = {k: self._found[k] for k in keys if k in self._found}
        missing = list(dict.fromkeys(k for k in keys if k not in out))
        for start in range(0, len(missing), self.BATCH):
            batch = missing[start : start + self.BATCH]
            try:
                answers = self.store.refs_search(self.expr, batch)
            except StoreError as exc:
                raise RelatedError(str(exc)) from None
            for key, rows in zip(batch, answers):
                out[key] = [
                    ChunkPlace(
                        r["path"],
                        int(r["start"]),
                        int(r["end"]),
                        (int(r["pstart"]), int(r["pend"])),
                        r["language"],
                        r.get("context", ""),
                    )
                    for r in rows
                ]
            with self._lock:
                if len(self._found) + len(batch) > self.KEEP:
                    self._found.clear()
                self._found.update((k, out[k]) for k in batch)
        return out

    def _lookup(self, key: str) -> list[ChunkPlace]:
        return self.fetch([key])[key]

    def users(self, name: str) -> list[ChunkPlace]:
        return self._lookup(name)

    def definers(self, name: str, *, attributes: bool = False) -> list[ChunkPlace]:
        if not attributes:
            return self._lookup(DEFINES + name)
        found = self.fetch([DEFINES + name, SETS + name])
        return list({(p.path, p.start, p.end): p for p in found[DEFINES + name] + found[SETS + name]}.values())

    def paths_using(self, name: str) -> frozenset[str]:
        return frozenset(p.path for p in self._lookup(name))

    def indexed(self, path: str) -> bool:
        with self._lock:
            found = self._indexed.get(path)
        if found is None:
            try:
                found = bool(self.store.query(f"{self.expr} and path == {quote(path)}", 1))
            except StoreError as exc:
                raise RelatedError(str(exc)) from None
            with self._lock:
                self._indexed[path] = found
            if found and self.root is not None:
                try:
                    uses = reading(self.root, path).uses()
                except RelatedError:
                    uses = []
                names = list(dict.fromkeys(n for _line, n, _qualifier in uses))
                if len(names) <= self.PREFETCH:
                    self.fetch([DEFINES + n for n in names])
        return found


class MilvusArm:
    """One arm as a request to the collection."""

    def __init__(self, engine: MilvusEngine, name: str) -> None:
        self.engine = engine
        self.name = name
        self.field = FIELDS[name]

    def _data(self, query: str):
        if self.name == "dense":
            return as_stored(self.engine.model.encode([query]))[0].tolist()
        stats = self.engine.term_stats.get(self.name)
        return query_vector(self.name, query, stats) if stats is not None else {}

    def search(self, query: str, limit: int, expr: str, glob: str | None = None) -> list[Hit]:
        if limit <= 0:
            return []
        data = self._data(query)
        # The fts5 arm ranks the chunks holding a quoted passage first, whatever its terms.
        phrases = quoted_phrases(query) if self.name == "fts5" else []
        if not data:
            # No term the repositories hold: nothing matches, but the store is still asked
            # (one that is down fails every arm, and the UI keeps its last answer).
            data = {NOTHING: 1.0}
        want = limit * GLOB_OVERSAMPLE if glob and not _like(glob) else limit
        scored = _best_first(self.engine.store.search(self.field, data, want + TIE_MARGIN, expr), want)
        if phrases:
            scored = self._phrases_first(phrases, scored, want, expr, data)
        hits = self.engine.hits(self.name, scored, glob)
        if self.name == "symbols":
            hits = self._definers_first(query, hits, expr, glob)
        return [replace(h, rank=i) for i, h in enumerate(hits[:limit], start=1)]

    def _phrases_first(self, phrases: list[list[str]], ranked: list, limit: int, expr: str, data: dict) -> list:
        """As the local ``fts5`` arm: the chunks holding a passage the question quotes first,
        ranked by FTS5's ``bm25()`` of the phrases (each phrase a term: its idf from the chunks
        holding it, its frequency the times a chunk holds it), then the rest of the ranking
        (asked again as deep as the phrase hits take), every phrase hit scored above it."""
        from .backends.sparse import FTS5_IDF_FLOOR

        stats, scheme = self.engine.term_stats.get("fts5"), SCHEMES["fts5"]
        like = " or ".join(f"words like {quote('%' + _like_literal(' '.join(p)) + '%')}" for p in phrases)
        rows = self.engine.store.query(f"{expr} and ({like})", MAX_QUERY_ROWS, ("words", "words_len"))
        counts = []
        for row in rows:
            tokens = row["words"].split()
            counts.append([_occurrences(tokens, p) for p in phrases])
        hits = [sum(1 for c in counts if c[i]) for i in range(len(phrases))]
        n = stats.n if stats is not None else 0
        idf = [max(math.log((n - h + 0.5) / (h + 0.5)), FTS5_IDF_FLOOR) if n else FTS5_IDF_FLOOR for h in hits]
        avgdl = stats.avgdl if stats is not None else 0.0
        k1, b = scheme.k1, scheme.b
        first = []
        for row, c in zip(rows, counts):
            if not any(c):
                continue
            norm = k1 * (1 - b + b * row["words_len"] / avgdl) if avgdl else 0.0
            score = sum(w * f * (k1 + 1) / (f + norm) for w, f in zip(idf, c) if f)
            first.append((row, score))
        if not first:
            return ranked
        first.sort(key=lambda rs: (-rs[1], rs[0]["id"]))
        first = first[:limit]
        if len(ranked) >= limit:  # there may be more: the rest as deep as the local arm asks
            deeper = limit + len(first)
            ranked = _best_first(self.engine.store.search(self.field, data, deeper + TIE_MARGIN, expr), deeper)
        seen = {_key(row) for row, _s in first}
        rest = [(e, s) for e, s in ranked if _key(e) not in seen]
        if rest:  # every phrase hit above the rest, in its own order
            low, top = min(s for _r, s in first), max(s for _e, s in rest)
            first = [(row, s - low + top + 1.0) for row, s in first]
        return (first + rest)[:limit]

    def _definers_first(self, query: str, ranked: list[Hit], expr: str, glob: str | None) -> list[Hit]:
        """As the local ``symbols`` arm: a one-identifier query gets the chunks defining exactly
        that name first (under its qualifier, in the file named after it, shallower first)."""
        from .text.names import defined_names, name_key, path_depth, qualifiers, shape, stem_key

        q = shape(query)
        if not q.lookup:
            return ranked
        found: dict[str, tuple[dict, float]] = {}
        stored: dict[str, int] = {}  # docid -> the chunk's id: its place in the stored order
        for name in sorted(q.names):
            rows = self.engine.store.query(f"{expr} and symbol like {quote('%' + _like_literal(name) + '%')}", 500)
            for row in rows:
                # As ChunkTable.definers: the names as written or their last part, in any case
                # for a lowercase name.
                forms = defined_names((row["symbol"],))
                if name in forms or (name.islower() and name in {f.lower() for f in forms}):
                    found.setdefault(f"{row['repo']}\x00{row['path']}:{row['start']}-{row['end']}", (row, 0.0))
        if not found:
            return ranked
        first = self.engine.hits(self.name, list(found.values()), glob)
        for row, _s in found.values():
            stored[make_docid(self.engine._path_of(row), int(row["start"]), int(row["end"]))] = int(row["id"])
        wanted = {name_key(n) for n in q.names}
        scope = qualifiers(q.text)

        def order(h: Hit) -> tuple:
            where = f"{h.path} {h.context}".lower()
            # Ties in the order the chunks were stored, as the local arm's rows.
            return (
                not all(w in where for w in scope),
                stem_key(h.path) not in wanted,
                path_depth(h.path),
                stored[h.docid],
            )

        first.sort(key=order)
        seen = {h.docid for h in first}
        return first + [h for h in ranked if h.docid not in seen]


def _best_first(rows: list[dict], n: int) -> list[tuple[dict, float]]:
    """The first ``n`` of a search's rows as ``(entity, score)``, equal scores in the order the
    local index breaks them: the chunk stored first (asked ``TIE_MARGIN`` deeper for that)."""
    rows.sort(key=lambda r: (-float(r["distance"]), r["id"]))
    return [(r["entity"], float(r["distance"])) for r in rows[:n]]


def _key(row: dict) -> tuple:
    return (row["repo"], row["path"], int(row["start"]), int(row["end"]))


def _occurrences(tokens: list[str], phrase: list[str]) -> int:
    """How many times ``phrase`` runs in ``tokens`` (FTS5's phrase instances)."""
    n = len(phrase)
    return sum(1 for i in range(len(tokens) - n + 1) if tokens[i : i + n] == phrase)


def _like_literal(text: str) -> str:
    """``text`` matched literally inside a Milvus LIKE pattern (its wildcards escaped)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _like(glob: str) -> str | None:
    """An fnmatch glob as a Milvus LIKE pattern when it has only ``*`` and ``?`` (else None)."""
    if any(c in glob for c in "[]"):
        return None
    return _like_literal(glob).replace("*", "%").replace("?", "_")


class MilvusEngine(Engine):
    """Query (and index) repositories kept in a Milvus collection; see the module docstring.

    ``repos``: the repositories a query searches (None: the root's; ``["*"]``: every one)."""

    shared = True
    #: The arms a Milvus store serves (``all`` fuses these).
    served = tuple(FIELDS)

    def __init__(
        self,
        root: Path | str,
        settings=None,
        *,
        store: StoreSpec,
        repos: Sequence[str] | None = None,
        name: str | None = None,
        cache_dir: Path | None = None,
        notify=None,
    ) -> None:
        super().__init__(root, settings, cache_dir=cache_dir, notify=notify)
        self.spec = store
        #: The root's repository in the store: ``name`` (``index --repo``), else its folder's.
        self.repo = check_repo_name(name or self.root.name)
        self.named = name is not None
        self.repos = list(repos) if repos else [self.repo]
        self._store: MilvusStore | None = None
        self._model = None
        self._store_view: StoreView | None = None
        self._graph: tuple[float, StoreGraph] | None = None
        #: The lexical arms' BM25 statistics over the searched repositories (summed).
        self.term_stats: dict[str, TermStats] = {}
        self._stats_key: tuple | None = None
        self._store_lock = threading.Lock()
        #: The store's state in one line, for the TUI's status line.
        self.state = self._ok_state = f"store {store.uri}: not opened"

    # -- the store --------------------------------------------------------------------------

    @property
    def store(self) -> MilvusStore:
        with self._store_lock:
            if self._store is None:
                self._store = open_store(self.spec)
            return self._store

    @property
    def model(self):
        if self._model is None:
            from .text.embedding import ModelUnavailable, load_model

            try:
                self._model = load_model(self.settings.model)
            except ModelUnavailable as exc:
                raise StoreError(str(exc)) from None
        return self._model

    @property
    def directory_label(self) -> str:
        return f"{self.spec.uri} (collection {self.spec.collection})"

    @property
    def all_repos(self) -> bool:
        return self.repos == ["*"]

    @property
    def multi(self) -> bool:
        return self.all_repos or len(self.repos) > 1

    def repo_filter(self) -> str:
        if self.all_repos:
            return 'repo != ""'
        if len(self.repos) == 1:
            return f"repo == {quote(self.repos[0])}"
        return f"repo in [{', '.join(quote(r) for r in self.repos)}]"

    def _open_store(self) -> StoreView:
        try:
            store = self.store
            meta = store.check(self.model.name, self.model.dim)
            known = store.repos()
            searched = sorted(known) if self.all_repos else [r for r in self.repos if r in known]
            key = tuple((r, known[r].indexed_at) for r in searched)
            term_stats = self.term_stats if key == self._stats_key else self._load_stats(searched)
        except StoreError as exc:
            self.state = f"store {self.spec.uri}: {exc}"
            raise
        if not self.all_repos:
            missing = [r for r in self.repos if r not in known]
            if missing:
                names = ", ".join(sorted(known)) or "none"
                raise StoreError(
                    f"repository {missing[0]!r} is not in {self.spec.uri} (it holds: {names}); "
                    f"index it with `ranklens index PATH --store {self.spec.uri}`"
                )
        view = StoreView(self.root, meta, known)
        with self._lock:
            if self._store_view is None or self._store_view.generation != view.generation:
                self._arms = {}
            self._store_view = view
            self.term_stats, self._stats_key = term_stats, key
        shown = "all" if self.all_repos else ",".join(self.repos)
        chunks = sum(r.chunks for n, r in known.items() if self.all_repos or n in self.repos)
        self.state = self._ok_state = f"store {self.spec.uri}: {shown}, {chunks:,} chunks"
        return view

    def _load_stats(self, repos: list[str]) -> dict[str, TermStats]:
        """Each lexical arm's statistics over ``repos``, summed (a query over several
        repositories weighs its terms by their document frequency in all of them)."""
        held = self.store.stats(repos)
        return {
            arm: TermStats.summed([held[r][0][arm] for r in repos if r in held and arm in held[r][0]])
            for arm in SCHEMES
        }

    # -- Engine's index side ----------------------------------------------------------------

    def ensure_index(
        self,
        progress=None,
        *,
        deep=None,
        deep_limit=None,
        open_view: bool = True,
        fresh: bool = False,
        survey=None,
        on_partial=None,
    ):
        """Open the store for querying (a query never writes a shared index: ``ranklens index
        --store`` does); the returned stats say what it holds. ``fresh``, ``survey`` and
        ``on_partial`` are :class:`core.engine.Engine`'s, accepted and unused: the store has no
        local listing, and is never built here."""
        from .arms.protocol import IndexStats

        view = self._open_store()
        held = [r for n, r in view.repos.items() if self.all_repos or n in self.repos]
        return IndexStats(
            root=str(self.root),
            index_dir=self.directory_label,
            generation=view.generation,
            files=sum(r.files for r in held),
            chunks=sum(r.chunks for r in held),
            deep=None if deep is False or deep is None else "the deep arm is not served by a Milvus store",
        )

    def open(self) -> bool:
        try:
            self._open_store()
        except StoreError as exc:
            self.notify(str(exc))
            return False
        return True

    def check(self):
        raise StoreError("a Milvus store is brought up to date by `ranklens index --store`, not by a freshness check")

    def build_deep(self, progress=None, stop=None, limit=None):
        raise ArmUnavailable("the deep arm is not served by a Milvus store")

    @property
    def view(self) -> StoreView:
        if self._store_view is None:
            raise StoreError(f"the store {self.spec.uri} is not open")
        return self._store_view

    def graph(self) -> StoreGraph:
        """The edges of the root's repository (:func:`core.navigate.graph_of`), one graph per
        state of it in the open store (the time it was last indexed)."""
        view = self.view
        info = view.repos.get(self.repo)
        state = info.indexed_at if info is not None else 0.0
        with self._lock:
            if self._graph is None or self._graph[0] != state:
                self._graph = (state, StoreGraph(self.store, self.repo, self.root))
            return self._graph[1]

    @property
    def ready(self) -> bool:
        return self._store_view is not None

    @property
    def index_gone(self) -> bool:
        return False

    # -- Engine's query side ----------------------------------------------------------------

    def _arm_on_view(self, name: str):
        if name not in FIELDS:
            raise ArmUnavailable(f"{name} is not served by a Milvus store (it serves {', '.join(FIELDS)})")
        view = self.view
        with self._lock:
            arm = self._arms.get(name)
            if arm is None:
                arm = self._arms[name] = MilvusArm(self, name)
        return arm, view

    def run_arm(self, name, query, *, depth: int = CANDIDATE_DEPTH, path_glob=None, language=None) -> ArmResult:
        t0 = time.perf_counter()
        try:
            arm, _view = self._arm_on_view(name)
        except (ArmUnavailable, StoreError) as exc:
            return ArmResult(name, skipped=str(exc), query=query)
        expr = self.repo_filter()
        if language:
            expr += f" and language == {quote(language.lower())}"
        if path_glob and _like(path_glob):
            expr += f" and path like {quote(_like(path_glob))}"
        try:
            hits = arm.search(query, depth, expr, path_glob)
            check_ranking(name, hits)
        except StoreError as exc:
            self.state = f"store {self.spec.uri}: {exc}"
            return ArmResult(name, elapsed_ms=_ms(t0), error=str(exc), query=query)
        except Exception as exc:  # one arm failing must not fail the query
            return ArmResult(name, elapsed_ms=_ms(t0), error=f"{type(exc).__name__}: {exc}", query=query)
        self.state = self._ok_state
        return ArmResult(name, hits=hits, elapsed_ms=_ms(t0), query=query, checked=True)

    def hits(self, arm: str, rows: Iterable[tuple[dict, float]], glob: str | None) -> list[Hit]:
        """Stored chunk rows as one arm's hits (paths ``repo/path`` across several repositories)."""
        out = []
        for row, score in rows:
            if glob and not fnmatchcase(row["path"], glob):
                continue
            path = self._path_of(row)
            start, end = int(row["start"]), int(row["end"])
            piece = (int(row["pstart"]), int(row["pend"])) if row["pstart"] else None
            out.append(
                Hit(
                    arm,
                    make_docid(path, start, end),
                    path,
                    start,
                    end,
                    len(out) + 1,
                    score,
                    row["context"],
                    None,
                    piece,
                    row["symbol"],
                )
            )
        return out

    # -- the chunk step and quoted passages over the store (core.query.chunkstep, Stage.quoted) ----

    def _where(self, path: str) -> str:
        """The filter for one fused path (``repo/path`` across several repositories)."""
        if self.multi:
            repo, _, rel = path.partition("/")
            return f"repo == {quote(repo)} and path == {quote(rel)}"
        return f"{self.repo_filter()} and path == {quote(path)}"

    def _rank_files(self, query, paths, arms):
        """:meth:`Engine.file_units` from the collection: every chunk of each file read, then
        each of ``arms`` searched again under the files' filter."""
        where = " or ".join(f"({self._where(p)})" for p in paths)
        listed: dict[str, list] = {p: [] for p in paths}
        refs: dict[str, list[str]] = {p: [] for p in paths}
        for row in self.store.query(where, min(MAX_FILE_CHUNKS * len(paths), MAX_QUERY_ROWS), ("refs",)):
            path = self._path_of(row)
            if path in listed:
                piece = (int(row["pstart"]), int(row["pend"])) if row["pstart"] else None
                listed[path].append((int(row["start"]), int(row["end"]), piece, row["context"], row["symbol"]))
                refs[path].append(row.get("refs") or "")
        n = sum(len(v) for v in listed.values())
        scores: dict[str, dict[str, dict[tuple[int, int], float]]] = {p: {} for p in paths}
        for name in arms if n else ():
            try:
                arm, _view = self._arm_on_view(name)
            except ArmUnavailable:
                continue
            data = arm._data(query)
            if not data:
                continue
            for row in self.store.search(FIELDS[name], data, n, where):
                e = row["entity"]
                path = self._path_of(e)
                if path in scores:
                    scores[path].setdefault(name, {})[(int(e["start"]), int(e["end"]))] = float(row["distance"])
        out = {}
        for p in paths:
            shape = skeleton(listed[p])
            units = [shape.of_chunk[(c[0], c[1])] for c in listed[p]]
            names = [unit_names(u[3]) for u in shape.units]
            callers = callers_from_refs(units, refs[p], names, [(u[0], u[1]) for u in shape.units])
            out[p] = units_of(p, shape, scores[p], callers)
        return out

    def _find_quoted(self, phrases):
        """:meth:`Engine.quoted` from the collection: the chunks whose identifiers (the
        ``words`` field, the text's identifiers in order) hold a quoted passage's tokens in a row."""
        out: dict[str, list[tuple[int, int, str]]] = {}
        for tokens in phrases:
            phrase = " ".join(tokens)
            rows = self.store.query(
                f"{self.repo_filter()} and words like {quote('%' + _like_literal(phrase) + '%')}", PHRASE_CHUNKS + 1
            )
            if len(rows) > PHRASE_CHUNKS:
                continue  # a passage found everywhere marks nothing
            for row in rows:
                out.setdefault(self._path_of(row), []).append((int(row["start"]), int(row["end"]), phrase))
        return out

    def _path_of(self, row: dict) -> str:
        """A stored chunk's path as fused hits carry it (``repo/path`` across several)."""
        return f"{row['repo']}/{row['path']}" if self.multi else row["path"]

    def fuse(self, results, settings=None, **kwargs) -> list[ConsolidatedHit]:
        hits = super().fuse(results, settings, **kwargs)
        return [self._located(h) for h in hits]

    def _located(self, hit: ConsolidatedHit) -> ConsolidatedHit:
        """The hit with its repository, and its path within it."""
        if hit.repo:
            return hit
        if self.multi:
            repo, _, path = hit.path.partition("/")
            return replace(hit, repo=repo, path=path)
        return replace(hit, repo=self.repos[0])

    def root_of(self, repo: str) -> Path | None:
        """Where ``repo``'s files are on this machine: this root, else the folder it was
        indexed from when it is here (None: not here)."""
        if repo == self.repo:
            return self.root
        view = self._store_view
        info = view.repos.get(repo) if view is not None else None
        if info is not None and info.root and Path(info.root).is_dir():
            return Path(info.root)
        return None

    def close(self) -> None:
        super().close()  # the store's client stays: the process's other engines share it


def repo_roots(engine: Engine, hits: Sequence[ConsolidatedHit]) -> Mapping[str, Path | None]:
    """Each hit's repository's folder on this machine (for span hashes and previews)."""
    if not isinstance(engine, MilvusEngine):
        return {}
    return {h.repo: engine.root_of(h.repo) for h in hits if h.repo}


def index_into_store(engine: MilvusEngine, progress=None, wait: float = 0.0):
    """``ranklens index ROOT --store URI``: bring the engine's root, as its repository, up to
    date in the store (:func:`core.backends.milvus.index_repo`)."""
    from .backends.milvus import index_repo

    return index_repo(
        engine.store,
        engine.root,
        engine.repo,
        engine.model,
        settings=engine.settings,
        progress=progress,
        wait=wait,
        named=engine.named,
    )
