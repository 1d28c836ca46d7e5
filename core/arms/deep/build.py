"""The deep arm's vectors: embedded apart from the rest of the index, cached, committed per
generation as a sidecar folder.

See :mod:`core.arms.deep` for the cache, the sidecar and why the build never holds the index
lock while it embeds.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...base import npyfile
from ...base._sqlite import sqlite3
from ...base.atomic import atomic_write, publish_folder
from ...storage.store import close, connect, gen_dir_name, read_meta, sidecar_dir_name, unpack_text
from ..protocol import ArmUnavailable
from . import model
from .arm import NAME, STAMP_FILE, VECTORS_FILE, read_stamp
from .model import DIM

#: Vectors embedded between two saves of the cache (a stopped or killed build resumes there).
CHECKPOINT = 512

CACHE_DIR = "deep"
CACHE_FILE = "cache.npz"
LOCK_FILE = "deep.lock"


def document_text(text: str, context: str = "") -> str:
    """What gets embedded for a chunk: its breadcrumb line, then its text (as ``dense``)."""
    return f"{context}\n{text}" if context else text


def text_key(text: str) -> int:
    """The cache key of an embedded text: 64 bits of its BLAKE2b hash, as a signed int64."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


@dataclass
class DeepBuild:
    """What one :func:`build_vectors` call did."""

    generation: int = 0  # the generation whose vectors are now complete (0: none)
    chunks: int = 0
    embedded: int = 0  # texts embedded by this call (the rest came from the cache)
    seconds: float = 0.0
    stopped: bool = False  # asked to stop before the vectors were complete
    deferred: int = 0  # texts left to embed when there were more than the caller's ``limit``
    busy: bool = False  # another process was embedding for this index: nothing was done here

    @property
    def complete(self) -> bool:
        return self.generation > 0 and not self.stopped


class _Cache:
    """Content hash -> unit vector (float16), for one model; saved atomically."""

    def __init__(self, directory: Path, model: str) -> None:
        self.path = directory / CACHE_DIR / CACHE_FILE
        self.model = model
        self.keys = np.empty(0, dtype=np.int64)  # sorted
        self.vecs = np.empty((0, DIM), dtype=np.float16)
        self._new_keys: list[np.ndarray] = []
        self._new_vecs: list[np.ndarray] = []
        try:
            z = npyfile.load_npz(self.path)
            if str(z["model"]) == model and z["vecs"].shape[1:] == (DIM,):
                self.keys, self.vecs = z["keys"].astype(np.int64), z["vecs"].astype(np.float16)
        except (OSError, ValueError, KeyError, EOFError):  # none yet, corrupt, or another layout
            pass

    def missing(self, keys: np.ndarray) -> np.ndarray:
        """Those of ``keys`` with no vector (unique)."""
        self._merge()
        uniq = np.unique(keys)
        return uniq[~np.isin(uniq, self.keys, assume_unique=True)]

    def add(self, keys: np.ndarray, vecs: np.ndarray) -> None:
        self._new_keys.append(np.asarray(keys, dtype=np.int64))
        self._new_vecs.append(np.asarray(vecs, dtype=np.float16))

    def vectors(self, keys: np.ndarray) -> np.ndarray:
        self._merge()
        return self.vecs[np.searchsorted(self.keys, keys)]

    def save(self, keep: np.ndarray | None = None) -> None:
        """Write atomically (fsynced); ``keep``: drop every other key first (texts no longer
        indexed)."""
        self._merge()
        if keep is not None:
            live = np.isin(self.keys, keep)
            self.keys, self.vecs = self.keys[live], self.vecs[live]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(self.path) as fh:
            np.savez(fh, keys=self.keys, vecs=self.vecs, model=np.array(self.model))

    def _merge(self) -> None:
        if not self._new_keys:
            return
        keys = np.concatenate([self.keys, *self._new_keys])
        vecs = np.concatenate([self.vecs, *self._new_vecs])
        keys, first = np.unique(keys, return_index=True)
        self.keys, self.vecs = keys, vecs[first]
        self._new_keys, self._new_vecs = [], []


ProgressFn = Callable[[int, int], None]  # (embedded so far, to embed)


def vectors_ready(directory: Path) -> bool:
    """Whether the committed generation of the index in ``directory`` has its deep vectors."""
    try:
        generation, _ = _committed(directory, texts=False)
    except (sqlite3.Error, OSError, ValueError):
        return False
    folder = directory / sidecar_dir_name(generation, NAME)
    return generation > 0 and read_stamp(folder) is not None and (folder / VECTORS_FILE).exists()


def build_vectors(
    directory: Path,
    progress: ProgressFn | None = None,
    stop: threading.Event | None = None,
    notify: Callable[[str], None] | None = None,
    limit: int | None = None,
) -> DeepBuild:
    """Embed what the committed generation lacks and commit its sidecar (``deep.usearch``).

    ``limit``: embed nothing when more than this many texts are missing (``deferred`` then
    says how many): a query should not wait minutes for a first build.

    Never waits for another process's build: when ``deep.lock`` is held, returns at once with
    ``busy`` set (the caller answers without deep). Loops until the vectors match the
    generation committed when it finishes (an update landing meanwhile costs only its new
    texts). Returns with ``stopped`` set when ``stop`` is set; the vectors embedded so far stay
    in the cache, as they do when it is interrupted (Ctrl-C, or SIGTERM where the front end
    turns it into an exception).

    Raises
    ------
    ArmUnavailable
        When the extra is not installed.
    core.base.locks.LockBusy
        When an indexer of this root holds the index lock past :func:`core.base.locks.index_wait`
        as the vectors are to be committed (they stay in the cache).
    """
    from ...base.locks import try_hold

    t0 = time.perf_counter()
    report = progress or (lambda _done, _total: None)
    result = DeepBuild()
    reason = model.unavailable()
    if reason:
        raise ArmUnavailable(reason)
    name = model.model_id()  # the encoder itself (~1 s to load) only when there is text to embed
    ready = _ready(directory, name)
    if ready is not None:  # the usual case: nothing to embed, nothing to lock
        result.generation, result.chunks = ready
        result.seconds = time.perf_counter() - t0
        return result
    lock = try_hold(directory / LOCK_FILE)
    if lock is None:  # another process embeds: it commits them; never wait for it
        result.busy = True
        result.seconds = time.perf_counter() - t0
        return result
    try:
        cache = _Cache(directory, name)
        while True:
            ready = _ready(directory, name)
            if ready is not None:
                result.generation, result.chunks = ready
                break
            generation, rows = _committed(directory, texts=True)
            if generation <= 0:
                break
            ids = np.fromiter((cid for cid, _, _ in rows), dtype=np.int64, count=len(rows))
            docs = [document_text(t, c) for _, t, c in rows]
            keys = np.fromiter((text_key(d) for d in docs), dtype=np.int64, count=len(rows))
            todo = set(cache.missing(keys).tolist())
            texts = {}
            for key, doc in zip(keys.tolist(), docs):
                if key in todo and key not in texts:
                    texts[key] = doc
            del docs
            del rows
            pending = sorted(texts, key=lambda k: len(texts[k]))  # by length: less padding
            total, done = len(pending), 0
            if limit is not None and total > limit:
                result.deferred = total
                break
            enc = model.encoder() if pending else None
            report(0, total)  # the model is loaded: embedding starts now
            try:
                for start in range(0, total, CHECKPOINT):
                    part = pending[start : start + CHECKPOINT]
                    for b in range(0, len(part), model.BATCH):
                        if stop is not None and stop.is_set():
                            result.stopped = True
                            cache.save()
                            return result
                        batch = part[b : b + model.BATCH]
                        cache.add(np.array(batch, dtype=np.int64), enc.encode([texts[k] for k in batch]))
                        done += len(batch)
                        result.embedded += len(batch)
                        report(done, total)
                    if done < total:
                        cache.save()
            except BaseException:  # interrupted or failed: keep what is embedded
                if not result.stopped:
                    cache.save()
                raise
            try:
                committed = _commit_sidecar(directory, generation, ids, keys, cache, name, notify)
            except BaseException:  # the vectors are embedded: keep them for the next try
                cache.save()
                raise
            if committed:
                result.generation, result.chunks = generation, len(ids)
                break
            cache.save()  # a newer generation landed while embedding: go again for it
    finally:
        lock.release()
        result.seconds = time.perf_counter() - t0
    return result


def _ready(directory: Path, name: str) -> tuple[int, int] | None:
    """``(generation, chunks)`` when the committed generation has its vectors of model
    ``name``; None otherwise (no chunk text is read to say so)."""
    try:
        generation, _ = _committed(directory, texts=False)
    except (sqlite3.Error, OSError, ValueError):
        return None
    folder = directory / sidecar_dir_name(generation, NAME)
    stamp = read_stamp(folder)
    if generation <= 0 or stamp is None or stamp.get("model") != name or not (folder / VECTORS_FILE).exists():
        return None
    return generation, int(stamp.get("chunks", 0))


def _committed(directory: Path, *, texts: bool) -> tuple[int, list[tuple[int, str, str]]]:
    """The committed generation and, with ``texts``, its chunks' (id, text, context), read
    together."""
    db = directory / "index.sqlite"
    if not db.exists():
        return 0, []
    conn = connect(db, readonly=True)
    try:
        conn.execute("BEGIN")  # one snapshot: the generation and its chunks agree
        generation = int(read_meta(conn).get("generation", "0") or 0)
        rows = (
            [
                (cid, unpack_text(blob), context)
                for cid, blob, context in conn.execute("SELECT id, text, context FROM chunks ORDER BY id")
            ]
            if texts
            else []
        )
        conn.execute("COMMIT")
    finally:
        close(conn)
    return generation, rows


def _commit_sidecar(
    directory: Path, generation: int, ids, keys, cache: _Cache, model: str, notify: Callable[[str], None] | None
) -> bool:
    """Under the index lock, if ``generation`` is still the committed one: write its vectors
    and stamp into a temporary folder, fsync them and rename it to the generation's sidecar
    (the rename is the commit; the generation's own folder is never written again)."""
    from ...base.locks import hold, index_wait
    from ...vectors import VectorIndex

    with hold(directory / "index.lock", "another ranklens indexing this root", index_wait(), notify):
        current, _ = _committed(directory, texts=False)
        if current != generation or not (directory / gen_dir_name(generation)).is_dir():
            return False
        final = directory / sidecar_dir_name(generation, NAME)
        tmp = directory / f"{final.name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            index = VectorIndex(DIM)
            if len(ids):
                index.add(ids, cache.vectors(keys).astype(np.float32))
            index.save(tmp / VECTORS_FILE)
            with atomic_write(tmp / STAMP_FILE, "w", encoding="utf-8") as fh:
                json.dump({"model": model, "generation": generation, "chunks": len(ids)}, fh)
            # Vectors of another model (the only way a complete sidecar is redone): readers
            # see none for a moment, never a mix.
            shutil.rmtree(final, ignore_errors=True)
            publish_folder(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        cache.save(keep=keys)
    return True
