"""Build and incrementally update a root's index: one pass builds every arm.

A stat pass over the last pass's snapshot (:mod:`core.index.freshness`) first says whether anything
changed, and what must be listed again (nothing, some folders, the tree). Files are compared
with the last run by size + mtime, then by content hash; only added or changed files are
re-read, re-chunked and re-embedded (in batches, by worker processes for a large pass:
:mod:`core.index.batches`), and removed ones are dropped. The indexer stores the files and
chunks and writes each new segment's chunk table; each arm of the registry (:mod:`core.arms`)
writes its part of the segment and of the generation through its
:class:`core.arms.protocol.ArmBuild`. The new chunks go into a new segment, the old chunks of
changed and removed files are tombstoned, and segments merge now and then
(:mod:`core.storage.segments`); a cold build commits a generation every
:data:`core.storage.segments.SEGMENT_CHUNKS` chunks (its first ones sooner, and the files a first
question most likely wants first: :func:`core.index.batches.index_order`), so its memory
stays bounded, a build killed at any point resumes after the last one, and a question asked
meanwhile is answered from what is committed. Every new folder is fsynced and renamed into
place; committing ``generation`` in SQLite is the single switch-over (see :mod:`core.storage.store`).
A file lock makes a second indexer wait for the first instead of interleaving with it.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import __version__
from ..arms import REGISTRY
from ..arms.protocol import ArmBuild, Generation, IndexSettings, IndexStats, SegmentMerge
from ..base._sqlite import sqlite3
from ..base.atomic import publish_folder
from ..base.types import Chunk
from ..discovery import DiscoveryOptions, FileEntry, discover, load_text
from ..storage.chunktable import ChunkTable
from ..storage.segments import Manifest, SegmentRef, plan_merges, seg_dir_name
from ..storage.store import (
    FORMAT_VERSION,
    SCHEMA,
    IndexWriteError,
    Partial,
    close,
    connect,
    gen_dir_name,
    pack_text,
    read_meta,
)
from ..storage.terms import IndexVocabulary, TokenMerger
from ..text.languages import language_for
from ..text.secrets import RULES_VERSION as SECRET_RULES
from .applied import fill_options as _fill, json_object as _json_object
from .batches import Feed, chunked, order_files, segment_cap, text_sha

#: One indexer writes a root's index at a time (core.base.locks).
INDEX_LOCK = "index.lock"
#: Files of the index folder a rebuild keeps: the lock, and the user's tuned fusion settings
#: (core.query.config) and relevance judgments (core.judgments), which no rebuild can recreate.
#: The deep arm's vector cache is keyed by text content and stamped with its model, so it
#: stays valid across rebuilds (core.arms.deep).
KEEP_ON_RESET = frozenset({INDEX_LOCK, "config.json", "judgments.jsonl", "judgments.jsonl.lock", "deep", "deep.lock"})
#: "deep" runs after the commit, only when that arm is wanted (core.engine.Engine.ensure_index).
STAGES = ("discover", "read", "chunk", "lexical", "embed", "write", "deep")
#: What each stage is doing, in the words the UI's status line and MCP's progress use. Chunking
#: and embedding run side by side and a long pass commits in steps, so the stages come round
#: again: a front end names the stage and counts files (``chunk``'s count), never stages (a
#: counter that went 3/7 -> 5/7 -> 3/7 read like progress going back).
STAGE_WORDS = {
    "discover": "listing files",
    "read": "comparing with the index",
    "chunk": "chunking",
    "embed": "chunking",  # the embedder takes each batch as it is chunked
    "lexical": "committing a step",
    "write": "committing a step",
    "deep": "deep vectors",
}
#: A pass with this many files to index reads the whole vocabulary up front (it will meet most
#: of it); a smaller one looks up the tokens its batches hold (a few thousand rows, not millions).
VOCAB_PRELOAD_FILES = 2000
#: Test hook (core.index.indexer._checkpoint): ``name`` or ``name:n`` kills this process with SIGKILL at
#: the n-th (default first) pass through that checkpoint: chunk (a batch stored), segment (a
#: segment folder in place, its generation not committed), merge, generation (a generation
#: folder in place, not committed), commit (just committed).
FAULT_ENV = "RANKLENS_FAULT"
#: Errors writing the index that say nothing is wrong with ranklens: the disk or the folder.
_WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO})


@dataclass
class Progress:
    """One step of indexing, for a progress bar: ``done`` of ``total`` in ``stage``."""

    stage: str
    done: int
    total: int


ProgressFn = Callable[[Progress], None]
NotifyFn = Callable[[str], None]
#: Called after each generation a pass commits before its last, with what it holds.
PartialFn = Callable[[Partial], None]


class Indexer:
    """Brings the index of ``root`` in ``directory`` up to date."""

    def __init__(
        self,
        root: Path,
        directory: Path,
        settings: IndexSettings,
        notify: NotifyFn | None = None,
        watcher=None,
        fresh: bool = False,
        survey=None,
        *,
        on_partial: PartialFn | None = None,
    ) -> None:
        self.root = Path(root)
        self.directory = Path(directory)
        self.settings = settings
        self.notify = notify or (lambda _msg: None)
        self.watcher = watcher  # core.index.watch.TreeWatcher: the check stats only what it saw change
        self.fresh = fresh  # list the whole tree, whatever the snapshot says
        self.survey = survey  # core.index.freshness.Survey: the stat pass a child made meanwhile
        self.on_partial = on_partial  # told of each generation committed before the pass's last

    @property
    def db_path(self) -> Path:
        return self.directory / "index.sqlite"

    def update(self, progress: ProgressFn | None = None) -> IndexStats:
        """Index what changed since the last run (everything, the first time).

        Raises
        ------
        OSError
            When the cache folder cannot be written.
        core.base.locks.LockBusy
            When another indexer of this root holds the index past :func:`core.base.locks.index_wait`.
        """
        from ..base.locks import hold, index_wait

        progress = progress or (lambda _p: None)
        checked = self.check()
        if checked.unchanged:
            return self._unchanged(checked, progress)
        self.directory.mkdir(parents=True, exist_ok=True)
        with hold(self.directory / INDEX_LOCK, "another ranklens indexing this root", index_wait(), self.notify):
            return self._update_locked(progress, checked)

    def _update_locked(self, progress: ProgressFn, checked) -> IndexStats:
        try:
            stats = self._update(progress, checked)
            if self.watcher is not None:  # what it took is in this pass; watch what it listed
                from .freshness import Snapshot, snapshot_id

                self.watcher.settle()
                snap_id = snapshot_id(self.directory)
                snapshot = Snapshot.load(self.directory)
                if snapshot is not None:
                    self.watcher.follow(snapshot, snap_id)
            return stats
        except IndexWriteError:
            raise
        except OSError as exc:
            if exc.errno in _WRITE_ERRORS:
                raise IndexWriteError(exc.errno, self._write_failed(exc.strerror or str(exc))) from exc
            if exc.errno is None and " written" in str(exc):  # numpy's short write: "N requested and M written"
                raise IndexWriteError(self._write_failed("a file could not be written in full")) from exc
            raise
        except sqlite3.OperationalError as exc:
            if not any(word in str(exc) for word in ("full", "disk I/O", "readonly", "unable to open")):
                raise
            raise IndexWriteError(self._write_failed(str(exc))) from exc

    def _write_failed(self, why: str) -> str:
        return f"cannot write the index in {self.directory} ({why}); the previous index is kept"

    def check(self):
        """Whether anything changed since the last pass, without listing the tree
        (:func:`core.index.freshness.check`)."""
        from .freshness import Check, check, snapshot_key

        if self.fresh:
            return Check("none", "--fresh: the tree is listed again")

        def key_for(stored: dict) -> str:
            return snapshot_key(_fill(self.settings.options, stored), self.settings.fingerprint(), self.settings.model)

        return check(self.root, self.directory, key_for, self.watcher, self.survey)

    def _unchanged(self, checked, progress: ProgressFn) -> IndexStats:
        """The stats of a pass that found nothing changed: the last pass's, from its snapshot."""
        from ..discovery import Exclusion, Rule

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
            from ..base.locks import LockBusy, hold

            try:  # never waits: an indexer holding it notes them itself
                with hold(self.directory / INDEX_LOCK, "another ranklens indexing this root", 0):
                    checked.refreshed().save(self.directory)
            except (LockBusy, OSError):
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
            checked.verdict in ("files", "folders")
            and not rebuilt
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
                stats.discovery = {
                    "mode": found.mode,
                    "hidden": bool(options.hidden),
                    "no_ignore": bool(options.no_ignore),
                }
                stats.warning = found.warning(str(self.root))
                progress(Progress("discover", 1, 1))
            with clock("read"):
                plan = self._plan(conn, found.files, progress, stats, checked.recheck if not rebuilt else set())
            prev_gen = int(meta.get("generation", "0"))
            parts = arm_builds(self.settings)
            if prev_gen and not plan.dirty and not any(p.stale(meta) for p in parts.values()):
                self._touch(conn, plan)
                self._store_discovery(conn, meta, stats.discovery)
                if meta.get("partial"):  # a pass killed part-way, whose last files are gone since
                    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('partial', '')")
                self._clean(meta)  # what a pass killed after its commit left behind
                stats = self._finish(stats, conn, prev_gen, parts)
            else:
                stats = self._write(conn, meta, plan, parts, stats, clock, progress)
        finally:
            # The WAL's pages are in the database by now: give its room back (~0.1 GB after a
            # cold build of the Linux sources) rather than leave it to the last reader's close.
            # Without waiting: a reader in the WAL (a UI, the deep build) leaves it for later.
            with contextlib.suppress(sqlite3.Error):
                conn.execute("PRAGMA busy_timeout=0")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            close(conn)
        self._save_snapshot(found, started_ns, stats)
        return stats

    def _save_snapshot(self, found, started_ns: int, stats: IndexStats) -> None:
        """What this pass's discovery saw, for the next pass's :meth:`check` (after the commit:
        a snapshot never describes a generation that is not committed)."""
        from .freshness import make_snapshot, snapshot_key

        applied = {k: stats.discovery[k] for k in ("hidden", "no_ignore")}
        key = snapshot_key(_fill(self.settings.options, applied), self.settings.fingerprint(), self.settings.model)
        report = {
            "files": stats.files,
            "chunks": stats.chunks,
            "kept": stats.kept,
            "skipped": stats.skipped,
            "excluded": [e.to_dict() for e in stats.excluded],
            "warning": stats.warning,
            "dense": stats.dense,
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
        conn = None
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
                reason = (
                    "the credential rules changed" if meta.get("secret_rules") else "it predates credential redaction"
                )
            elif meta and meta.get("settings") != self.settings.fingerprint():
                reason = "chunking or discovery settings changed"
            elif meta and meta.get("arms") != _built_arms():  # an arm's part would be missing
                reason = "the retriever arms changed"
            elif meta.get("generation") and not self._generation_whole(int(meta["generation"])):
                reason = "index files are missing"
        except (sqlite3.DatabaseError, ValueError) as exc:
            reason = f"index database is corrupt ({exc})"
        if reason is None:
            return conn, meta, None
        close(conn)
        self.notify(f"rebuilding the index of {self.root}: {reason}")
        self._reset()
        conn = connect(self.db_path)
        conn.executescript(_schema(self.settings))
        return conn, {}, reason

    def _generation_whole(self, number: int) -> bool:
        """Whether generation ``number``'s folder and every segment it lists are there."""
        try:
            manifest = Manifest.load(self.directory / gen_dir_name(number))
        except (OSError, ValueError, KeyError, TypeError):
            return False
        return all((self.directory / s.name).is_dir() for s in manifest.segments)

    def _reset(self) -> None:
        for entry in self.directory.iterdir():
            if entry.name in KEEP_ON_RESET:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)

    def _plan(
        self,
        conn: sqlite3.Connection,
        files: list[FileEntry],
        progress: ProgressFn,
        stats: IndexStats,
        recheck: set[str] = frozenset(),
    ) -> _Plan:
        """What changed: each listed file compared with the last pass by size and mtime, then (a
        known file whose stat moved) by content hash; ``recheck``: files read and hashed whatever
        their stat says (changed too close to the last listing for their timestamps to tell,
        core.index.freshness). New and changed files are read again when they are chunked (in the
        chunking workers), so no text is held here."""
        known = {
            path: (size, mtime, sha)
            for path, size, mtime, sha in conn.execute("SELECT path, size, mtime_ns, sha256 FROM files")
        }
        unread = {row[0]: row[1:] for row in conn.execute("SELECT path, size, mtime_ns, reason, redacted FROM unread")}
        plan = _Plan()
        total = len(files)
        for i, entry in enumerate(files, start=1):
            if i % 200 == 0 or i == total:
                progress(Progress("read", i, total))
            old = known.pop(entry.path, None)
            if old is None:
                was = unread.pop(entry.path, None)
                if (
                    was is not None
                    and was[0] == entry.size
                    and was[1] == entry.mtime_ns
                    and (entry.path not in recheck or self._still_unread(entry))
                ):
                    stats.skipped.append((entry.path, was[2]))  # as when it was read
                    if was[3]:
                        stats.redacted.append((entry.path, json.loads(was[3])))
                    continue
                if was is not None:
                    plan.unread.add(entry.path)
                plan.changed.append((entry, False))
                continue
            if old[0] == entry.size and old[1] == entry.mtime_ns and entry.path not in recheck:
                stats.unchanged += 1
                continue
            loaded = load_text(self.root, entry, self.settings.options.max_bytes)
            if loaded.text is not None and text_sha(loaded.text) == old[2]:
                plan.touched.append((entry, old[2]))
                stats.unchanged += 1
                continue
            plan.changed.append((entry, True))
        plan.unread_gone.extend(unread)
        plan.removed.extend(known)
        order_files(plan.changed)
        stats.added = sum(1 for _entry, existed in plan.changed if not existed)
        stats.changed = len(plan.changed) - stats.added
        stats.removed = len(plan.removed)
        return plan

    def _still_unread(self, entry: FileEntry) -> bool:
        """Whether a file found unreadable last time (binary, a key …) still cannot be indexed:
        read again when its stat is too recent to tell (core.index.freshness's recheck)."""
        return load_text(self.root, entry, self.settings.options.max_bytes).text is None

    def _touch(self, conn: sqlite3.Connection, plan: _Plan) -> None:
        """Note the new stat of files whose content did not change, and forget unreadable files
        no longer listed."""
        if plan.unread_gone:
            conn.executemany("DELETE FROM unread WHERE path = ?", [(p,) for p in plan.unread_gone])
        if plan.touched:
            conn.executemany(
                "UPDATE files SET size = ?, mtime_ns = ?, sha256 = ? WHERE path = ?",
                [(e.size, e.mtime_ns, sha, e.path) for e, sha in plan.touched],
            )

    def _write(self, conn, meta, plan, parts: dict[str, ArmBuild], stats, clock, progress) -> IndexStats:
        """Store the changed files' chunks and commit them, one generation per segment of
        :data:`core.storage.segments.SEGMENT_CHUNKS` chunks, the first ones smaller (:func:`segment_cap`;
        a cold build commits many, a small update one): a pass killed at any point keeps every
        generation it committed, and the next one goes on from there (the files they hold are
        known). Each generation but the last is :attr:`on_partial`'s to answer from."""
        self._clean(meta)
        documents = {name: p.documents for name, p in parts.items() if p.documents is not None}
        size = meta.get("vocab_size")
        vocab = IndexVocabulary(conn, int(size) if size else None, preload=len(plan.changed) >= VOCAB_PRELOAD_FILES)
        total = len(plan.changed)
        state = _State.of(self.directory, meta)
        # The files this pass will hold (an unreadable new one aside): a generation committed
        # before its last says how many of them it holds (core.storage.store.Partial).
        whole = stats.unchanged + total
        step = 0
        tasks = {name: task for name, p in parts.items() if (task := p.batch_task()) is not None}
        batches = chunked(self.root, plan.changed, self.settings, documents, tasks)
        feed = Feed(batches, parts, int(meta.get("next_chunk_id", "1")), plan.unread)
        try:
            while True:
                gen = self._generation(conn, meta, state, parts, vocab, documents, stats, progress)
                if step == 0:
                    self._remove_files(conn, plan, parts, gen)
                    self._touch(conn, plan)
                with clock("chunk"):
                    new_ids, new_chunks = self._store(conn, feed, parts, gen, stats, progress, total, segment_cap(step))
                gen.final = feed.exhausted and not feed.held
                gen.added, gen.added_ids = new_chunks, np.asarray(new_ids, dtype=np.int64)
                if not new_ids:  # only removals: no new segment
                    shutil.rmtree(gen.segment, ignore_errors=True)
                    gen.segment = None
                for part in parts.values():
                    part.added()
                step += 1
                # Keep the embedder and the chunking workers busy meanwhile; not before the first
                # commit, which a question may be waiting for (its embedder has the GIL to itself).
                if not gen.final and step > 1:
                    with clock("chunk"):
                        feed.pull_ahead(lambda: all(p.ready() for p in parts.values()), segment_cap(step))
                partial = None if gen.final else Partial(stats.unchanged + feed.done, whole)
                meta = self._commit(conn, meta, state, gen, parts, vocab, stats, clock, progress, partial)
                if gen.final:
                    break
                if self.on_partial is not None:
                    self.on_partial(partial)
        except BaseException:
            feed.close()
            for part in parts.values():
                part.abandon()
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._clean(None)
            raise
        stats.added -= feed.unreadable_new
        stats.changed -= feed.unreadable_old
        stats.removed += feed.unreadable_old
        return self._finish(stats, conn, state.generation, parts)

    def _generation(self, conn, meta, state: _State, parts, vocab, documents, stats, progress) -> Generation:
        """Open the next generation's transaction and folders, and begin every arm's part."""
        number = state.generation + 1
        for stale in (self.directory / gen_dir_name(number), self.directory / seg_dir_name(state.next_segment)):
            shutil.rmtree(stale, ignore_errors=True)  # left by a pass that died before committing
        out = self.directory / f"{gen_dir_name(number)}.tmp-{os.getpid()}"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        segment = self.directory / f"{seg_dir_name(state.next_segment)}.tmp-{os.getpid()}"
        shutil.rmtree(segment, ignore_errors=True)
        segment.mkdir()
        conn.execute("BEGIN IMMEDIATE")
        prev = self.directory / gen_dir_name(state.generation) if state.generation else None
        gen = Generation(
            conn=conn,
            out=out,
            prev=prev,
            meta=meta,
            settings=self.settings,
            progress=lambda stage, done, total: progress(Progress(stage, done, total)),
            seconds=stats.seconds,
            segment=segment,
            segments=[(self.directory / s.name, s.first, s.last) for s in state.manifest.segments],
            tokens=TokenMerger(vocab, documents),
            vocab=vocab,
        )
        for part in parts.values():
            part.begin(gen)
        return gen

    def _remove_files(self, conn, plan: _Plan, parts: dict[str, ArmBuild], gen: Generation) -> None:
        """Drop the chunks and rows of the files gone from the tree (in the open transaction)."""
        for batch in _batches(plan.removed, 500):
            marks = ",".join("?" * len(batch))
            ids = [r[0] for r in conn.execute(f"SELECT id FROM chunks WHERE path IN ({marks})", batch)]
            self._drop_chunks(conn, parts, gen, ids)
            conn.execute(f"DELETE FROM files WHERE path IN ({marks})", batch)

    def _drop_chunks(self, conn, parts: dict[str, ArmBuild], gen: Generation, ids: list[int]) -> None:
        if not ids:
            return
        for part in parts.values():
            part.remove(ids)
        for batch in _batches(ids, 500):
            conn.execute(f"DELETE FROM chunks WHERE id IN ({','.join('?' * len(batch))})", batch)
        gen.removed.extend(ids)

    def _store(self, conn, feed: Feed, parts, gen: Generation, stats: IndexStats, progress, total: int, cap: int):
        """Store chunked files into this generation until its segment holds ``cap`` chunks or
        none is left; each file's old chunks leave with it (its new version and its old never
        both count)."""
        new_ids: list[int] = []
        new_chunks: list[Chunk] = []
        while True:
            item = feed.next(room=cap - len(new_ids) if new_ids else None)
            if item is None:
                break
            gen.tokens.add(item.counts)
            for (entry, existed), result, ids in zip(item.files, item.results, item.ids):
                chunks, sha, reason, redacted = result
                if redacted:
                    stats.redacted.append((entry.path, redacted))
                if existed:
                    old = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE path = ?", (entry.path,))]
                    self._drop_chunks(conn, parts, gen, old)
                if chunks is None:  # unreadable now (vanished, binary, credentials only …)
                    stats.skipped.append((entry.path, reason))
                    if existed:
                        conn.execute("DELETE FROM files WHERE path = ?", (entry.path,))
                    conn.execute(
                        "INSERT OR REPLACE INTO unread(path, size, mtime_ns, reason, redacted) VALUES (?, ?, ?, ?, ?)",
                        (entry.path, entry.size, entry.mtime_ns, reason, json.dumps(redacted) if redacted else ""),
                    )
                    continue
                if not existed and feed.was_unread(entry.path):
                    conn.execute("DELETE FROM unread WHERE path = ?", (entry.path,))
                self._store_file(conn, entry, sha, ids, chunks)
                for part in parts.values():
                    part.add(ids, chunks)
                new_ids.extend(ids)
                new_chunks.extend(chunks)
            feed.done += len(item.files)
            progress(Progress("chunk", feed.done, total))
            _checkpoint("chunk")
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('next_chunk_id', ?)", (str(feed.next_id),))
        return new_ids, new_chunks

    def _commit(
        self, conn, meta, state: _State, gen: Generation, parts, vocab, stats, clock, progress, partial: Partial | None
    ) -> dict:
        """Write every arm's part of the generation, merge segments, and commit; the meta as
        committed. ``partial``: what the generation holds when the pass goes on after it."""
        number = state.generation + 1
        manifest = state.manifest
        with clock("lexical"):
            steps = len(parts) + 1
            progress(Progress("lexical", 0, steps))
            gen.tokens.finish()
            for i, part in enumerate(parts.values(), start=1):
                part.write(gen)
                progress(Progress("lexical", i, steps))
            vocab.store(conn)
            segments = list(manifest.segments)
            if gen.segment is not None:
                ChunkTable.of_chunks(gen.added_ids, gen.added).save(gen.segment)
            progress(Progress("lexical", steps, steps))
        for part in parts.values():
            part.finish(gen)
        with clock("write"):
            progress(Progress("write", 0, 1))
            if gen.segment is not None:
                name = seg_dir_name(state.next_segment)
                publish_folder(gen.segment, self.directory / name)
                segments.append(SegmentRef(name, len(gen.added_ids), int(gen.added_ids[0]), int(gen.added_ids[-1])))
                state.next_segment += 1
                _checkpoint("segment")
            dead = np.union1d(manifest.dead, np.asarray(gen.removed, dtype=np.int64))
            manifest = Manifest(segments, dead)
            rewrite = any(p.stale(gen.meta) for p in parts.values()) and gen.prev is not None
            manifest = self._merge(manifest, gen, parts, state, rewrite)
            manifest.save(gen.out)
            publish_folder(gen.out, self.directory / gen_dir_name(number))
            values = {
                "format": str(FORMAT_VERSION),
                "generation": str(number),
                "next_segment": str(state.next_segment),
                "vocab_size": str(len(vocab)),
                "root": str(self.root),
                "settings": self.settings.fingerprint(),
                "secret_rules": str(SECRET_RULES),
                "discovery": json.dumps({k: stats.discovery[k] for k in ("hidden", "no_ignore")}, sort_keys=True),
                "arms": _built_arms(),
                "ranklens": __version__,
                "updated": str(time.time()),
                "partial": partial.to_meta() if partial is not None else "",
            }
            for part in parts.values():
                values.update(part.meta())
            _checkpoint("generation")
            conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", values.items())
            conn.execute("COMMIT")
            _checkpoint("commit")
            progress(Progress("write", 1, 1))
        state.generation, state.manifest = number, manifest
        self._drop_old_generations(number)
        return {**meta, **values}

    def _merge(self, manifest: Manifest, gen: Generation, parts, state: _State, rewrite: bool) -> Manifest:
        """Merge the segments :func:`core.storage.segments.plan_merges` picks (every segment alone when
        an arm's part is stale: it builds it again); the manifest after."""
        runs = [[i] for i in range(len(manifest.segments))] if rewrite else plan_merges(manifest)
        if not runs:
            return manifest
        replaced: dict[int, SegmentRef | None] = {}
        dropped = []
        for run in runs:
            sources = [manifest.segments[i] for i in run]
            dead = np.concatenate([manifest.dead_in(s) for s in sources])
            table = ChunkTable.concat([ChunkTable.load_dir(self.directory / s.name) for s in sources])
            keep = ~np.isin(table.ids, dead)
            dropped.append(dead)
            if not keep.any():
                replaced[run[0]] = None
            else:
                table = table.kept(keep) if not keep.all() else table
                name = seg_dir_name(state.next_segment)
                tmp = self.directory / f"{name}.tmp-{os.getpid()}"
                shutil.rmtree(tmp, ignore_errors=True)
                tmp.mkdir()
                table.save(tmp)
                merge = SegmentMerge([self.directory / s.name for s in sources], dead, table.ids, tmp)
                for part in parts.values():
                    part.merge(gen, merge)
                publish_folder(tmp, self.directory / name)
                state.next_segment += 1
                replaced[run[0]] = SegmentRef(name, len(table), int(table.ids[0]), int(table.ids[-1]))
            for i in run[1:]:
                replaced[i] = None
            _checkpoint("merge")
        segments = [replaced.get(i, s) for i, s in enumerate(manifest.segments) if replaced.get(i, s) is not None]
        return Manifest(segments, np.setdiff1d(manifest.dead, np.concatenate(dropped)))

    def _finish(self, stats: IndexStats, conn, gen: int, parts: dict[str, ArmBuild]) -> IndexStats:
        stats.generation = gen
        stats.files = conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]
        # The generation's live chunks: counting the table's 1.1M rows of the Linux sources took 0.1 s.
        stats.chunks = Manifest.load(self.directory / gen_dir_name(gen)).live if gen else 0
        for part in parts.values():
            part.report(stats)
        return stats

    def _store_file(self, conn, entry: FileEntry, sha: str, ids: list[int], chunks: list[Chunk]) -> None:
        """A file's row and its chunks', each chunk's text compressed as stored (:func:`pack_text`:
        here, not in the chunking workers, which embed and are a cold build's critical path)."""
        conn.execute(
            "INSERT OR REPLACE INTO files(path, size, mtime_ns, sha256, language) VALUES (?, ?, ?, ?, ?)",
            (entry.path, entry.size, entry.mtime_ns, sha, language_for(entry.path)),
        )
        conn.executemany(
            "INSERT INTO chunks(id, path, start_line, end_line, kind, language, context, symbol, text,"
            " piece_start, piece_end, declaration) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    cid,
                    c.path,
                    c.start_line,
                    c.end_line,
                    c.kind,
                    c.language,
                    c.context,
                    c.symbol,
                    blob,
                    *(c.piece_of or (0, 0)),
                    int(c.declaration),
                )
                for cid, c, blob in zip(ids, chunks, map(pack_text, (c.text for c in chunks)))
            ],
        )

    def _clean(self, meta: dict | None) -> None:
        """Remove what a pass that died left: temporary folders, and generations and segments no
        committed generation lists (``meta``: the committed one's; None: read it)."""
        for entry in self.directory.iterdir():
            if ".tmp-" in entry.name and entry.name.startswith(("gen-", "seg-")):
                shutil.rmtree(entry, ignore_errors=True)
        if meta is None:
            try:
                conn = connect(self.db_path, readonly=True)
                try:
                    meta = read_meta(conn)
                finally:
                    close(conn)
            except sqlite3.Error:
                return
        self._drop_old_generations(int(meta.get("generation", "0") or 0))

    def _drop_old_generations(self, current: int) -> None:
        """Keep the current generation and the one before (a reader may still be on it), and the
        segments they list; drop every other generation (and sidecar) and segment."""
        keep: set[str] = set()
        for number in (current, current - 1):
            folder = self.directory / gen_dir_name(number)
            if number > 0 and folder.is_dir():
                with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                    keep.update(s.name for s in Manifest.load(folder).segments)
        for entry in self.directory.iterdir():
            name = entry.name
            if name.startswith("gen-"):
                num = name[4:10]
                if ".tmp-" in name or not num.isdigit() or not current - 1 <= int(num) <= current:
                    shutil.rmtree(entry, ignore_errors=True)
            elif name.startswith("seg-") and name not in keep:
                shutil.rmtree(entry, ignore_errors=True)


@dataclass
class _State:
    """The committed generation a pass builds on: its number, segments and tombstones, and the
    next segment number."""

    generation: int
    manifest: Manifest
    next_segment: int

    @classmethod
    def of(cls, directory: Path, meta: dict) -> _State:
        number = int(meta.get("generation", "0") or 0)
        manifest = Manifest.load(directory / gen_dir_name(number)) if number else Manifest.empty()
        return cls(number, manifest, int(meta.get("next_segment", "1") or 1))


@dataclass
class _Plan:
    changed: list[tuple[FileEntry, bool]] = field(default_factory=list)  # entry, existed
    unread: set[str] = field(default_factory=set)  # of the new ones, those found unreadable last time
    unread_gone: list[str] = field(default_factory=list)  # unreadable last time, no longer listed
    touched: list[tuple[FileEntry, str]] = field(default_factory=list)  # same content, new stat
    removed: list[str] = field(default_factory=list)

    @property
    def dirty(self) -> bool:
        return bool(self.changed or self.removed)


class _Clock:
    """Adds the wall time of each ``with clock(stage):`` block to a dict."""

    def __init__(self, sink: dict[str, float]) -> None:
        self.sink = sink

    def __call__(self, stage: str) -> _Clock:
        self.stage = stage
        return self

    def __enter__(self) -> None:
        self.t0 = time.perf_counter()

    def __exit__(self, *exc) -> None:
        self.sink[self.stage] = self.sink.get(self.stage, 0.0) + time.perf_counter() - self.t0


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


_fault: list = []  # [name, remaining] from FAULT_ENV, read once


def _checkpoint(name: str) -> None:
    """Die here, as kill -9 would, when :data:`FAULT_ENV` names this checkpoint (tests)."""
    if not _fault:
        spec = os.environ.get(FAULT_ENV, "")
        point, _, count = spec.partition(":")
        _fault.extend([point, int(count or 1)])
    if _fault[0] == name:
        _fault[1] -= 1
        if _fault[1] <= 0:
            import signal

            os.kill(os.getpid(), signal.SIGKILL)


def arm_builds(settings: IndexSettings) -> dict[str, ArmBuild]:
    """This update's build of every arm that has files in a generation, in registry order, and
    of the navigation edges (:mod:`core.graph.build`), which a generation holds the same way."""
    from ..graph.build import NAME, UsesBuild

    builds = {name: spec.build(settings) for name, spec in REGISTRY.items() if spec.build is not None}
    builds[NAME] = UsesBuild(settings)
    return builds


def _built_arms() -> str:
    """The arms whose parts a generation holds (stored in the meta: an index built without
    one of them is rebuilt, since an update only edits parts that exist)."""
    return ",".join(name for name, spec in REGISTRY.items() if spec.build is not None)


def _schema(settings: IndexSettings) -> str:
    """The index database's tables: the store's and the arms' own (FTS5's index)."""
    return SCHEMA + "".join(part.schema for part in arm_builds(settings).values())


def _batches(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i : i + size]
