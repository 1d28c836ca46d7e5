"""Build and incrementally update a root's index: one pass builds every arm.

A stat pass over the last pass's snapshot (:mod:`core.freshness`) first says whether anything
changed, and what must be listed again (nothing, some folders, the tree). Files are compared
with the last run by size + mtime, then by content hash; only added or changed files are
re-read, re-chunked and re-embedded, and removed ones are dropped. The indexer stores the files
and chunks and writes the chunk table; each arm of the registry (:mod:`core.arms`) writes and
updates its own part through its :class:`core.arms.protocol.ArmBuild`. All artifacts of the
new state go into a fresh generation folder, fsynced and renamed into place; committing
``generation`` in SQLite is the single switch-over (see :mod:`core.store`). A file lock makes a
second indexer wait for the first instead of interleaving with it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from . import __version__
from ._sqlite import sqlite3
from .arms import REGISTRY
from .arms.protocol import ArmBuild, Documents, Generation
from .atomic import publish_folder
from .bm25 import TokenBatch, TokenMerger, Vocabulary, count_batch
from .chunking import DEFAULT_OVERLAP, DEFAULT_WINDOW, chunk_file
from .discovery import DiscoveryOptions, FileEntry, discover, load_text
from .languages import language_for
from .secrets import RULES_VERSION as SECRET_RULES
from .store import FORMAT_VERSION, SCHEMA, ChunkTable, connect, gen_dir_name, read_meta
from .types import Chunk
from .workers import ordered_map

#: Files are chunked and their tokens counted in batches of about this much text.
CHUNK_BATCH_BYTES = 256_000
#: An update with at least this much text to chunk does it in a worker process: tree-sitter and
#: the Python-side span work then overlap the SQLite inserts and the embedder instead of
#: holding this process's GIL. Below it (an edited file or a few) starting a worker (~0.3 s)
#: would cost more than it saves.
POOL_MIN_BYTES = 2_000_000
#: Two worker processes on two cores: with one, chunking was the critical path and a core sat
#: idle whenever the embedder waited for chunks (cold index 58.3 -> 48.3 s, interleaved pair).
POOL_PROCESSES = 2
#: Files of the index folder a rebuild keeps: the lock, and the user's tuned fusion settings
#: (core.config) and relevance judgments (core.judgments), which no rebuild can recreate.
#: The deep arm's vector cache is keyed by text content and stamped with its model, so it
#: stays valid across rebuilds (core.arms.deep).
KEEP_ON_RESET = frozenset(
    {"index.lock", "config.json", "judgments.jsonl", "judgments.jsonl.lock", "deep", "deep.lock"}
)
#: "deep" runs after the commit, only when that arm is wanted (core.engine.Engine.ensure_index).
STAGES = ("discover", "read", "chunk", "lexical", "embed", "write", "deep")


@dataclass(frozen=True)
class IndexSettings:
    """Everything that decides what an index holds.

    ``options.hidden`` and ``options.no_ignore`` left at None mean "as this index was last
    built" (False for a new one), so ``ranklens index --hidden`` followed by a plain
    ``ranklens query`` searches what was indexed instead of dropping it again.
    """

    window: int = DEFAULT_WINDOW
    overlap: int = DEFAULT_OVERLAP
    options: DiscoveryOptions = field(default_factory=DiscoveryOptions)
    model: str | None = None  # model2vec model for the dense arm; None = the bundled one

    def fingerprint(self) -> str:
        """The chunking part; a change means every chunk must be rebuilt.

        Discovery options are not in it: they only decide which files are indexed, and the
        next update adds and removes files to match (the chunks of the others stay valid).
        """
        return json.dumps({"window": self.window, "overlap": self.overlap}, sort_keys=True)


@dataclass
class Progress:
    """One step of indexing, for a progress bar: ``done`` of ``total`` in ``stage``."""

    stage: str
    done: int
    total: int


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
    seconds: dict[str, float] = field(default_factory=dict)
    check: dict = field(default_factory=dict)  # what the freshness check found (core.freshness.Check)

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


ProgressFn = Callable[[Progress], None]
NotifyFn = Callable[[str], None]


class Indexer:
    """Brings the index of ``root`` in ``directory`` up to date."""

    def __init__(
        self,
        root: Path,
        directory: Path,
        settings: IndexSettings,
        notify: NotifyFn | None = None,
    ) -> None:
        self.root = Path(root)
        self.directory = Path(directory)
        self.settings = settings
        self.notify = notify or (lambda _msg: None)

    @property
    def db_path(self) -> Path:
        return self.directory / "index.sqlite"

    def update(self, progress: ProgressFn | None = None) -> IndexStats:
        """Index what changed since the last run (everything, the first time).

        Raises
        ------
        OSError
            When the cache folder cannot be written.
        """
        from filelock import FileLock, Timeout

        progress = progress or (lambda _p: None)
        checked = self.check()
        if checked.unchanged:
            return self._unchanged(checked, progress)
        self.directory.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.directory / "index.lock"))
        try:
            lock.acquire(timeout=0.5)
        except Timeout:
            self.notify("another ranklens is indexing this root; waiting for it to finish")
            lock.acquire()
        try:
            return self._update(progress, checked)
        finally:
            lock.release()

    def check(self):
        """Whether anything changed since the last pass, without listing the tree
        (:func:`core.freshness.check`)."""
        from .freshness import check, snapshot_key

        def key_for(stored: dict) -> str:
            return snapshot_key(_fill(self.settings.options, stored), self.settings.fingerprint(), self.settings.model)

        return check(self.root, self.directory, key_for)

    def _unchanged(self, checked, progress: ProgressFn) -> IndexStats:
        """The stats of a pass that found nothing changed: the last pass's, from its snapshot."""
        from .discovery import Exclusion, Rule

        progress(Progress("discover", 1, 1))
        report = checked.snapshot.report
        stats = IndexStats(root=str(self.root), index_dir=str(self.directory), generation=checked.snapshot.generation)
        stats.files, stats.chunks, stats.kept = report["files"], report["chunks"], report["kept"]
        stats.unchanged = stats.files
        stats.skipped = [tuple(s) for s in report["skipped"]]
        stats.excluded = [
            Exclusion(Rule(e["kind"], e["name"], e["line"], e["pattern"]), e["files"], e["dirs"], e["example"])
            for e in report["excluded"]
        ]
        stats.discovery = {k: checked.snapshot.discovery[k] for k in ("mode", "hidden", "no_ignore")}
        stats.warning, stats.dense = report["warning"], report["dense"]
        stats.seconds["check"] = checked.seconds
        stats.check = checked.to_dict()
        if checked.restat or checked.rewatched:  # ctimes moved (chmod, a new hard link): note them
            from filelock import FileLock, Timeout

            try:
                with FileLock(str(self.directory / "index.lock"), timeout=0):
                    checked.refreshed().save(self.directory)
            except (Timeout, OSError):
                pass
        return stats

    # -- the pass -----------------------------------------------------------------------

    def _update(self, progress: ProgressFn, checked) -> IndexStats:
        stats = IndexStats(root=str(self.root), index_dir=str(self.directory))
        stats.seconds["check"] = checked.seconds
        stats.check = checked.to_dict()
        clock = _Clock(stats.seconds)
        conn, meta, rebuilt = self._open()
        stats.rebuilt = rebuilt
        # Another indexer may have committed while this one waited for the lock.
        partial = (
            checked.verdict in ("files", "folders") and not rebuilt
            and meta.get("generation") == str(checked.snapshot.generation)
        )
        try:
            with clock("discover"):
                progress(Progress("discover", 0, 1))
                options = self._options()
                # Racy entries are judged against the oldest stat the listing may use: the check's.
                started_ns = checked.started_ns or time.time_ns()
                # Only files, or only some folders' entries, changed: the last listing with
                # their new stats, those folders listed again.
                found = checked.listing(self.root, options) if partial else None
                if found is None:
                    found = discover(self.root, options, watch=True)
                    stats.check["listed"] = "whole tree"
                else:
                    stats.check["listed"] = f"{len(checked.moved)} folders" if checked.moved else "nothing"
                stats.skipped.extend(found.skipped)
                stats.kept = len(found.files)
                stats.excluded = found.excluded
                stats.discovery = {"mode": found.mode, "hidden": bool(options.hidden), "no_ignore": bool(options.no_ignore)}
                stats.warning = found.warning(str(self.root))
                progress(Progress("discover", 1, 1))
            with clock("read"):
                plan = self._plan(conn, found.files, progress, stats, checked.recheck if not rebuilt else set())
            prev_gen = int(meta.get("generation", "0"))
            parts = arm_builds(self.settings)
            if prev_gen and not plan.dirty and not any(p.stale(meta) for p in parts.values()):
                self._touch(conn, plan)
                self._store_discovery(conn, meta, stats.discovery)
                stats = self._finish(stats, conn, prev_gen, parts)
            else:
                stats = self._write(conn, meta, plan, parts, stats, clock, progress)
        finally:
            conn.close()
        self._save_snapshot(found, started_ns, stats)
        return stats

    def _save_snapshot(self, found, started_ns: int, stats: IndexStats) -> None:
        """What this pass's discovery saw, for the next pass's :meth:`check` (after the commit:
        a snapshot never describes a generation that is not committed)."""
        from .freshness import make_snapshot, snapshot_key

        applied = {k: stats.discovery[k] for k in ("hidden", "no_ignore")}
        key = snapshot_key(_fill(self.settings.options, applied), self.settings.fingerprint(), self.settings.model)
        report = {
            "files": stats.files, "chunks": stats.chunks, "kept": stats.kept, "skipped": stats.skipped,
            "excluded": [e.to_dict() for e in stats.excluded], "warning": stats.warning, "dense": stats.dense,
        }
        try:
            make_snapshot(found, started_ns, stats.generation, key, applied, report).save(self.directory)
        except OSError as exc:  # the next pass lists the tree again
            self.notify(f"could not save the listing's snapshot: {exc.strerror or exc}")

    def _options(self) -> DiscoveryOptions:
        """The discovery options, ``hidden`` and ``no_ignore`` left at None taken from the
        last build (they survive a rebuild: read before it)."""
        return _fill(self.settings.options, self._stored_discovery)

    def _store_discovery(self, conn, meta: dict[str, str], applied: dict) -> None:
        value = json.dumps({k: applied[k] for k in ("hidden", "no_ignore")}, sort_keys=True)
        if meta.get("discovery") != value:
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('discovery', ?)", (value,))

    def _open(self) -> tuple[sqlite3.Connection, dict[str, str], str | None]:
        """Open (creating or rebuilding when needed) the database; say why if rebuilt."""
        reason = None
        self._stored_discovery = {}
        try:
            conn = connect(self.db_path)
            conn.executescript(_schema(self.settings))
            meta = read_meta(conn)
            self._stored_discovery = _json_object(meta.get("discovery"))
            if not _schema_matches(conn):  # e.g. a first build of an older version cut short
                reason = "index tables are of another format"
            elif meta and meta.get("format") != str(FORMAT_VERSION):
                reason = f"index format {meta.get('format', '?')} is not {FORMAT_VERSION}"
            elif meta and meta.get("secret_rules") != str(SECRET_RULES):
                # Its stored text may hold what the current rules redact.
                reason = "the credential rules changed" if meta.get("secret_rules") else "it predates credential redaction"
            elif meta and meta.get("settings") != self.settings.fingerprint():
                reason = "chunking or discovery settings changed"
            elif meta and meta.get("arms") != _built_arms():  # an arm's part would be missing
                reason = "the retriever arms changed"
            elif meta.get("generation") and not (self.directory / gen_dir_name(int(meta["generation"]))).is_dir():
                reason = "index files are missing"
        except (sqlite3.DatabaseError, ValueError) as exc:
            reason = f"index database is corrupt ({exc})"
            conn = None
        if reason is None:
            return conn, meta, None
        if conn is not None:
            conn.close()
        self.notify(f"rebuilding the index of {self.root}: {reason}")
        self._reset()
        conn = connect(self.db_path)
        conn.executescript(_schema(self.settings))
        return conn, {}, reason

    def _reset(self) -> None:
        for entry in self.directory.iterdir():
            if entry.name in KEEP_ON_RESET:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)

    def _plan(
        self, conn: sqlite3.Connection, files: list[FileEntry], progress: ProgressFn, stats: IndexStats,
        recheck: set[str] = frozenset(),
    ) -> "_Plan":
        """What changed: each listed file compared with the last pass by size and mtime, then by
        content hash; ``recheck``: files read and hashed whatever their stat says (changed too
        close to the last listing for their timestamps to tell, core.freshness)."""
        known = {
            path: (size, mtime, sha)
            for path, size, mtime, sha in conn.execute("SELECT path, size, mtime_ns, sha256 FROM files")
        }
        plan = _Plan()
        total = len(files)
        for i, entry in enumerate(files, start=1):
            if i % 200 == 0 or i == total:
                progress(Progress("read", i, total))
            old = known.pop(entry.path, None)
            if old and old[0] == entry.size and old[1] == entry.mtime_ns and entry.path not in recheck:
                stats.unchanged += 1
                continue
            loaded = load_text(self.root, entry, self.settings.options.max_bytes)
            text = loaded.text
            if loaded.redacted:
                stats.redacted.append((entry.path, loaded.redacted))
            if text is None:
                stats.skipped.append((entry.path, loaded.reason))
                if old:
                    plan.removed.append(entry.path)
                continue
            sha = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            if old and old[2] == sha:
                plan.touched.append((entry, sha))
                stats.unchanged += 1
                continue
            plan.changed.append((entry, text, sha, old is not None))
        plan.removed.extend(known)
        stats.added = sum(1 for c in plan.changed if not c[3])
        stats.changed = len(plan.changed) - stats.added
        stats.removed = len(plan.removed)
        return plan

    def _touch(self, conn: sqlite3.Connection, plan: "_Plan") -> None:
        if plan.touched:
            conn.executemany(
                "UPDATE files SET size = ?, mtime_ns = ?, sha256 = ? WHERE path = ?",
                [(e.size, e.mtime_ns, sha, e.path) for e, sha in plan.touched],
            )

    def _write(self, conn, meta, plan, parts: dict[str, ArmBuild], stats, clock, progress) -> IndexStats:
        prev_gen = int(meta.get("generation", "0"))
        gen = prev_gen + 1
        final = self.directory / gen_dir_name(gen)
        tmp = self.directory / f"{gen_dir_name(gen)}.tmp-{os.getpid()}"
        for stale in self.directory.glob(f"{gen_dir_name(gen)}*"):  # left by a run that died before committing
            shutil.rmtree(stale, ignore_errors=True)
        tmp.mkdir()
        conn.execute("BEGIN IMMEDIATE")
        build = Generation(
            conn=conn,
            out=tmp,
            prev=self.directory / gen_dir_name(prev_gen) if prev_gen else None,
            meta=meta,
            settings=self.settings,
            progress=lambda stage, done, total: progress(Progress(stage, done, total)),
            seconds=stats.seconds,
        )
        try:
            build.removed = self._stale_chunks(conn, plan)
            for part in parts.values():
                part.begin(build)
            self._delete_chunks(conn, plan, build.removed)
            vocab = Vocabulary.read(conn, meta.get("vocab_stamp")).copy()  # it grows
            known = len(vocab)
            documents = {name: p.documents for name, p in parts.items() if p.documents is not None}
            build.tokens = TokenMerger(vocab, documents)
            with clock("chunk"):
                new_chunks, new_ids = self._insert_chunks(conn, meta, plan, progress, parts, build.tokens, documents)
            build.added, build.added_ids = new_chunks, np.asarray(new_ids, dtype=np.int64)
            for part in parts.values():
                part.added()
            with clock("lexical"):
                steps = len(parts) + 1
                progress(Progress("lexical", 0, steps))
                build.tokens.finish()
                build.vocab = vocab
                for i, part in enumerate(parts.values(), start=1):
                    part.write(build)
                    progress(Progress("lexical", i, steps))
                stamp = uuid.uuid4().hex
                vocab.store(conn, known, stamp)
                conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('vocab_stamp', ?)", (stamp,))
                self._write_chunk_table(conn, tmp, prev_gen, build.removed, new_chunks, new_ids)
                progress(Progress("lexical", steps, steps))
            for part in parts.values():
                part.finish(build)
            with clock("write"):
                progress(Progress("write", 0, 1))
                publish_folder(tmp, final)
                values = {
                    "format": str(FORMAT_VERSION),
                    "generation": str(gen),
                    "root": str(self.root),
                    "settings": self.settings.fingerprint(),
                    "secret_rules": str(SECRET_RULES),
                    "discovery": json.dumps({k: stats.discovery[k] for k in ("hidden", "no_ignore")}, sort_keys=True),
                    "arms": _built_arms(),
                    "ranklens": __version__,
                    "updated": str(time.time()),
                }
                for part in parts.values():
                    values.update(part.meta())
                conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", values.items())
                conn.execute("COMMIT")
                progress(Progress("write", 1, 1))
        except BaseException:
            for part in parts.values():
                part.abandon()
            conn.execute("ROLLBACK")
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(final, ignore_errors=True)
            raise
        self._drop_old_generations(gen)
        return self._finish(stats, conn, gen, parts)

    def _finish(self, stats: IndexStats, conn, gen: int, parts: dict[str, ArmBuild]) -> IndexStats:
        stats.generation = gen
        stats.files = conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]
        stats.chunks = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        for part in parts.values():
            part.report(stats)
        return stats

    def _stale_chunks(self, conn, plan) -> list[int]:
        """The ids of the chunks of changed and removed files."""
        stale_paths = [c[0].path for c in plan.changed if c[3]] + plan.removed
        old_ids: list[int] = []
        for batch in _batches(stale_paths, 500):
            marks = ",".join("?" * len(batch))
            old_ids += [r[0] for r in conn.execute(f"SELECT id FROM chunks WHERE path IN ({marks})", batch)]
        return old_ids

    def _delete_chunks(self, conn, plan, old_ids: list[int]) -> None:
        """Delete the chunks of changed and removed files (in the open transaction)."""
        for batch in _batches(old_ids, 500):
            marks = ",".join("?" * len(batch))
            conn.execute(f"DELETE FROM chunks WHERE id IN ({marks})", batch)
        conn.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in plan.removed])
        self._touch(conn, plan)

    def _insert_chunks(self, conn, meta, plan, progress, parts: dict[str, ArmBuild], tokens: TokenMerger,
                       documents: dict[str, Documents]):
        """Chunk the changed files, store the chunks, hand each file's to every arm and the
        token counts of the arms' ``documents`` to ``tokens``."""
        # Chunk ids only grow, so an id never names two different chunks across generations.
        next_id = int(meta.get("next_chunk_id", "1"))
        new_chunks: list[Chunk] = []
        new_ids: list[int] = []
        total = len(plan.changed)
        done = 0
        with contextlib.closing(self._chunked(plan.changed, documents)) as batches:
            for batch, (per_file, counts) in batches:
                tokens.add(counts)
                for (entry, sha), chunks in zip(batch, per_file):
                    ids = list(range(next_id, next_id + len(chunks)))
                    next_id += len(chunks)
                    self._store_file(conn, entry, sha, ids, chunks)
                    for part in parts.values():
                        part.add(ids, chunks)
                    new_chunks.extend(chunks)
                    new_ids.extend(ids)
                    done += 1
                    if done % 50 == 0 or done == total:
                        progress(Progress("chunk", done, total))
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('next_chunk_id', ?)", (str(next_id),))
        return new_chunks, new_ids

    def _chunked(self, changed: list, documents: dict[str, Documents]) -> Iterator[tuple[list, tuple[list[list[Chunk]], TokenBatch]]]:
        """Each batch of ``changed`` files as ``(entry, sha)`` pairs with its chunks (per file) and
        the token counts of ``documents``, in order; from a worker process when there is enough
        text to pay for one. Empties ``changed``."""
        w, o = self.settings.window, self.settings.overlap
        groups = list(_file_batches(changed, CHUNK_BATCH_BYTES))
        jobs = [([(entry.path, text, language_for(entry.path)) for entry, text, *_ in group], w, o, documents)
                for group in groups]
        batches = [[(entry, sha) for entry, _text, sha, _existed in group] for group in groups]
        pooled = sum(len(item[1]) for item in changed) >= POOL_MIN_BYTES
        del groups
        changed.clear()  # the texts now live in the jobs only, which drop them as they are chunked
        if pooled:
            with contextlib.closing(ordered_map(_chunk_batch, jobs, POOL_PROCESSES)) as results:
                yield from zip(batches, results)
            return
        for i, batch in enumerate(batches):
            job, jobs[i] = jobs[i], None
            yield batch, _chunk_batch(*job)

    def _store_file(self, conn, entry: FileEntry, sha: str, ids: list[int], chunks: list[Chunk]) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO files(path, size, mtime_ns, sha256, language) VALUES (?, ?, ?, ?, ?)",
            (entry.path, entry.size, entry.mtime_ns, sha, language_for(entry.path)),
        )
        conn.executemany(
            "INSERT INTO chunks(id, path, start_line, end_line, kind, language, context, symbol, signature,"
            " docstring, text, piece_start, piece_end) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (cid, c.path, c.start_line, c.end_line, c.kind, c.language, c.context, c.symbol, c.signature,
                 c.docstring, c.text, *(c.piece_of or (0, 0)))
                for cid, c in zip(ids, chunks)
            ],
        )

    def _write_chunk_table(self, conn, out: Path, prev_gen: int, old_ids, new_chunks, new_ids) -> None:
        prev = self.directory / gen_dir_name(prev_gen) if prev_gen else None
        if prev is not None and (prev / ChunkTable.FILE).exists():
            table = ChunkTable.load_dir(prev).updated(old_ids, new_ids, new_chunks)
        else:
            table = ChunkTable.load(conn)
        table.save(out)

    def _drop_old_generations(self, current: int) -> None:
        """Keep the current generation and the one before (a reader may still be on it)."""
        for entry in self.directory.iterdir():
            name = entry.name
            if not name.startswith("gen-"):
                continue
            num = name[4:10]
            if ".tmp-" in name or (num.isdigit() and int(num) < current - 1):
                shutil.rmtree(entry, ignore_errors=True)


@dataclass
class _Plan:
    changed: list[tuple[FileEntry, str, str, bool]] = field(default_factory=list)  # entry, text, sha, existed
    touched: list[tuple[FileEntry, str]] = field(default_factory=list)  # same content, new stat
    removed: list[str] = field(default_factory=list)

    @property
    def dirty(self) -> bool:
        return bool(self.changed or self.removed)


class _Clock:
    """Adds the wall time of each ``with clock(stage):`` block to a dict."""

    def __init__(self, sink: dict[str, float]) -> None:
        self.sink = sink

    def __call__(self, stage: str) -> "_Clock":
        self.stage = stage
        return self

    def __enter__(self) -> None:
        self.t0 = time.perf_counter()

    def __exit__(self, *exc) -> None:
        self.sink[self.stage] = self.sink.get(self.stage, 0.0) + time.perf_counter() - self.t0


def _fill(options: DiscoveryOptions, stored: dict) -> DiscoveryOptions:
    """``options`` with ``hidden`` and ``no_ignore`` left at None taken from ``stored``."""
    return replace(
        options,
        hidden=options.hidden if options.hidden is not None else bool(stored.get("hidden")),
        no_ignore=options.no_ignore if options.no_ignore is not None else bool(stored.get("no_ignore")),
    )


def effective_options(root: Path, options: DiscoveryOptions, cache_dir: Path | None = None) -> DiscoveryOptions:
    """The discovery options an index update of ``root`` would apply: ``hidden`` and
    ``no_ignore`` left at None as its index was last built (off when it has none)."""
    from .store import index_dir

    stored: dict = {}
    db = index_dir(Path(root), cache_dir) / "index.sqlite"
    if db.exists():
        try:
            conn = connect(db, readonly=True)
            try:
                row = conn.execute("SELECT value FROM meta WHERE key = 'discovery'").fetchone()
            finally:
                conn.close()
            stored = _json_object(row[0] if row else None)
        except sqlite3.DatabaseError:
            stored = {}
    return _fill(options, stored)


def _json_object(text: str | None) -> dict:
    """``text`` parsed as a JSON object; {} when it is missing or anything else."""
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


@functools.lru_cache(maxsize=1)
def _expected_columns() -> dict[str, list[str]]:
    fresh = sqlite3.connect(":memory:")
    try:
        fresh.executescript(SCHEMA)
        return {t: _columns(fresh, t) for t in ("files", "chunks")}
    finally:
        fresh.close()


def _schema_matches(conn: sqlite3.Connection) -> bool:
    """Whether the tables have this version's columns (``CREATE TABLE IF NOT EXISTS`` keeps an
    older table as it was)."""
    return all(_columns(conn, t) == cols for t, cols in _expected_columns().items())


def _chunk_batch(
    files: list[tuple[str, str, str]], window: int, overlap: int, documents: dict[str, Documents]
) -> tuple[list[list[Chunk]], TokenBatch]:
    """Chunk ``(path, text, language)`` files and count the tokens of each arm's ``documents``
    of their chunks (in a worker process for a large update, see :meth:`Indexer._chunked`)."""
    per_file = [chunk_file(path, text, window=window, overlap=overlap, language=language) for path, text, language in files]
    chunks = [c for file_chunks in per_file for c in file_chunks]
    fields = {f for d in documents.values() for f in d.fields}
    everything = np.ones(len(chunks), dtype=bool)
    counts = count_batch(
        {f: [getattr(c, f) for c in chunks] for f in fields},
        {
            name: (d.fields, everything if d.include is None else np.array([d.include(c) for c in chunks], dtype=bool))
            for name, d in documents.items()
        },
    )
    return per_file, counts


def arm_builds(settings: IndexSettings) -> dict[str, ArmBuild]:
    """This update's build of every arm that has files in a generation, in registry order."""
    return {name: spec.build(settings) for name, spec in REGISTRY.items() if spec.build is not None}


def _built_arms() -> str:
    """The arms whose parts a generation holds (stored in the meta: an index built without
    one of them is rebuilt, since an update only edits parts that exist)."""
    return ",".join(name for name, spec in REGISTRY.items() if spec.build is not None)


def _schema(settings: IndexSettings) -> str:
    """The index database's tables: the store's and the arms' own (FTS5's index)."""
    return SCHEMA + "".join(part.schema for part in arm_builds(settings).values())


def _file_batches(changed: list, size: int):
    """Consecutive runs of ``changed`` files holding about ``size`` characters each."""
    batch: list = []
    chars = 0
    for item in changed:
        batch.append(item)
        chars += len(item[1])
        if chars >= size:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


def _batches(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i : i + size]
