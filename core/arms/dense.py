"""``dense``: model2vec static embeddings, exact cosine search over the stored f16 vectors.

Each segment holds its chunks' vectors (``dense.usearch``, memory-mapped read-only on warm
start, with its int8 codes and sign bits when it has 20k chunks or more, see
:mod:`core.vectors`); a query scans every segment and merges their best. The model is the one the index
was embedded with (recorded in the index meta); if it cannot load, the arm is skipped with
the reason rather than failing the query.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..base.types import SEMANTIC, Chunk, Hit
from ..storage.store import IndexView, unpack_text
from .protocol import ArmBuild, ArmSpec, ArmUnavailable, Generation, SegmentMerge

if TYPE_CHECKING:
    from .protocol import IndexSettings, IndexStats

VECTORS_FILE = "dense.usearch"
#: Texts per model call while indexing.
EMBED_BATCH = 512


def document_text(chunk: Chunk) -> str:
    """What gets embedded for a chunk: its breadcrumb (path, class, definition names), then its
    text. The breadcrumb's words say what the code is for in the words a question uses; it
    lifted this arm's nDCG@10 from 0.356 to 0.414 on this repository's set and from 0.734 to
    0.770 on polyglot (README, issue #5)."""
    return f"{chunk.context}\n{chunk.text}"


class DenseArm:
    name = "dense"

    def __init__(self, view: IndexView) -> None:
        reason = view.meta.get("dense_reason")
        if reason:
            raise ArmUnavailable(reason)
        paths = [d / VECTORS_FILE for d in view.segment_dirs]
        if not all(p.exists() for p in paths):
            raise ArmUnavailable("no vectors in this index (re-run `ranklens index`)")
        from ..text.embedding import ModelUnavailable, load_model
        from ..vectors import SegmentedVectors, VectorIndex

        try:
            self.model = load_model(view.meta.get("dense_spec") or None)
        except ModelUnavailable as exc:
            raise ArmUnavailable(str(exc)) from None
        if self.model.name != view.meta.get("dense_model"):
            raise ArmUnavailable(f"index was embedded with {view.meta.get('dense_model')}, not {self.model.name}")
        self.view = view
        self._last: tuple[str, np.ndarray] | None = None  # (query, its vector): one tuple, swapped atomically
        self.vectors = view.cached(
            "vectors",
            lambda: SegmentedVectors(
                [VectorIndex.load(p, view=True) for p in paths],
                [view.segment_rows(i) for i in range(len(paths))],
                [table.ids for table in view.chunks.tables],
            ),
        )

    def search(self, query: str, limit: int, allowed: np.ndarray | None = None) -> list[Hit]:
        if limit <= 0:
            return []
        rows, sims = self.scores(query, limit, allowed)
        return self.view.chunks.hits(self.name, rows, sims)

    def scores(
        self, query: str, limit: int, allowed: np.ndarray | None = None, among: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The nearest ``limit`` chunk rows and their cosines, without building hits, among
        ``allowed`` (a mask over the chunk rows) whose rows, when given, are ``among``
        (ascending: a segment then takes its few rows without a mask of its own). The
        query's vector is kept for the next call (the chunk step asks again, within files)."""
        last = self._last
        if last is not None and last[0] == query:
            vec = last[1]
        else:
            vec = self.model.encode([query])[0]
            self._last = (query, vec)
        rows, sims = self.vectors.search(vec, limit, allowed, among)
        return np.asarray(rows, dtype=np.int64), np.asarray(sims, dtype=np.float64)


class DenseBuild(ArmBuild):
    """Embeds the new chunks on a thread of its own and writes each new segment's vectors.

    Embedding runs mostly outside the GIL (Rust tokenizer, BLAS): it consumes chunks on
    another core while the indexer chunks files and the other arms build their matrices, so a
    cold index costs little more than embedding alone. One thread serves the whole pass: the
    chunks of the next segment are fed (:meth:`prepare`) while the current one is written, so
    the embedder never waits for a commit. A merge joins its segments' vectors, less the
    tombstoned chunks; a new model re-embeds every chunk (every segment is rewritten). The
    model is the settings' (recorded in the index meta, which the arm checks on opening).
    """

    def __init__(self, settings: IndexSettings) -> None:
        self.spec = settings.model
        self._model: tuple | None = None
        self.embedder: _Embedder | None = None
        self._cut: threading.Event | None = None
        self._adding = 0
        self._rebuild = False

    def model(self):
        """(the model, None) or (None, why it cannot load); loaded once per update."""
        if self._model is None:
            from ..text.embedding import ModelUnavailable, load_model

            try:
                self._model = (load_model(self.spec), None)
            except ModelUnavailable as exc:
                self._model = (None, str(exc))
        return self._model

    def stale(self, meta: Mapping[str, str]) -> bool:
        model, reason = self.model()
        return (model.name if model else "") != meta.get("dense_model", "") or (reason or "") != meta.get(
            "dense_reason", ""
        )

    def begin(self, gen: Generation) -> None:
        self._cut = None
        self._adding = 0
        model, _reason = self.model()
        if model is None:
            return
        # Vectors of another model (or none) in the previous generation's segments: the
        # indexer rewrites every segment in this generation, and merge() embeds them again.
        self._rebuild = gen.prev is not None and self.stale(gen.meta)
        self._segment = gen.segment
        if self.embedder is None:
            self.embedder = _Embedder(model, gen.progress, gen.seconds)

    def batch_task(self) -> EmbedChunks:
        return EmbedChunks(self.spec)

    def prepare(self, ids: list[int], chunks: list[Chunk], done: object = None) -> None:
        if self.embedder is None:
            return
        model, _reason = self.model()
        if isinstance(done, tuple) and done[0] == model.name and len(done[1]) == len(ids):
            self.embedder.feed_vectors(ids, done[1])
        else:  # the worker could not load the model (or loaded another): embed them here
            self.embedder.feed([(cid, document_text(c)) for cid, c in zip(ids, chunks)])

    def add(self, ids: list[int], chunks: list[Chunk]) -> None:
        self._adding += len(ids)

    def added(self) -> None:
        if self.embedder is not None and self._adding:
            # The segment's last vector and its save overlap the other arms' writes.
            self._cut = self.embedder.cut(self._segment / VECTORS_FILE)

    def merge(self, gen: Generation, merge: SegmentMerge) -> None:
        model, _reason = self.model()
        if model is None:
            return
        from ..vectors import VectorIndex

        index = VectorIndex(model.dim)
        if self._rebuild:
            t0 = time.perf_counter()
            for start in range(0, len(merge.ids), EMBED_BATCH * 8):
                ids = merge.ids[start : start + EMBED_BATCH * 8].tolist()
                marks = ",".join("?" * len(ids))
                rows = gen.conn.execute(
                    "SELECT id, path, start_line, end_line, kind, language, context, symbol, text"
                    f" FROM chunks WHERE id IN ({marks}) ORDER BY id",
                    ids,
                ).fetchall()
                for b in range(0, len(rows), EMBED_BATCH):
                    part = rows[b : b + EMBED_BATCH]
                    index.add(
                        np.array([r[0] for r in part], dtype=np.int64),
                        model.encode([document_text(_row_chunk(r[1:])) for r in part]),
                    )
            gen.seconds["embed"] = gen.seconds.get("embed", 0.0) + time.perf_counter() - t0
            if self.embedder is not None:
                self.embedder.count += len(index)
        else:
            for folder in merge.sources:
                part = VectorIndex.load(folder / VECTORS_FILE, view=True)
                keys = part.keys()
                keep = ~np.isin(keys, merge.dead)
                if keep.any():
                    index.add(keys[keep], part.vectors()[keep])
        index.save(merge.out / VECTORS_FILE)

    def ready(self) -> bool:
        return self._cut is None or self._cut.is_set()

    def finish(self, gen: Generation) -> None:
        if self.embedder is None:
            return
        t0 = time.perf_counter()
        if self._cut is not None:
            saved = self.embedder.wait(self._cut)
            if saved != self._adding:  # a segment's vectors must be its chunks', row for row
                raise RuntimeError(f"the dense arm embedded {saved} vectors for a segment of {self._adding} chunks")
        if gen.final:
            self.embedder.close()
        gen.seconds["embed wait"] = gen.seconds.get("embed wait", 0.0) + time.perf_counter() - t0

    def meta(self) -> dict[str, str]:
        model, reason = self.model()
        return {"dense_model": model.name if model else "", "dense_spec": self.spec or "", "dense_reason": reason or ""}

    def report(self, stats: IndexStats) -> None:
        stats.dense = self.model()[1]
        if self.embedder is not None:
            stats.embedded = self.embedder.count

    def abandon(self) -> None:
        if self.embedder is not None:
            self.embedder.abandon()


SPEC = ArmSpec(
    DenseArm.name, SEMANTIC, DenseArm, fused_by_default=True, weight=0.8, weight_with_deep=0.4, build=DenseBuild
)


@dataclass(frozen=True)
class EmbedChunks:
    """A batch's dense vectors, made in a chunking worker (:meth:`DenseBuild.batch_task`):
    ``(model name, float32 rows)`` or None where the model cannot load there. Encoding was
    ~60 % of a cold build's CPU in the indexing process, on its one GIL with the storing of
    chunks: the Linux sources' build was bound by that process while the workers waited.
    A text's vector does not depend on the batch it is encoded in."""

    spec: str | None

    def __call__(self, chunks: list[Chunk]) -> tuple[str, np.ndarray] | None:
        from ..text.embedding import ModelUnavailable, load_model

        if self.spec in _UNAVAILABLE:
            return None
        try:
            model = load_model(self.spec)
        except ModelUnavailable:
            _UNAVAILABLE.add(self.spec)  # once per worker: the indexer says why, from its own try
            return None
        return model.name, model.encode([document_text(c) for c in chunks])


_UNAVAILABLE: set[str | None] = set()


def nearest(arm: str, view: IndexView, vectors, vec: np.ndarray, limit: int, allowed: np.ndarray | None) -> list[Hit]:
    """The ``limit`` chunks whose vectors (one index keyed by chunk id) are nearest ``vec``, as
    ``arm``'s ranking (the deep arm's); ``allowed`` masks chunk rows."""
    chunks = view.chunks
    allowed_keys = None if allowed is None else chunks.ids(allowed)
    keys, sims = vectors.search(vec, limit, allowed_keys)
    rows = chunks.rows_for(keys)
    known = rows >= 0
    return chunks.hits(arm, rows[known], np.asarray(sims, dtype=np.float64)[known])


class _Embedder:
    """Embeds (id, text) pairs fed from another thread, in batches, into one vector index per
    segment; :meth:`cut` ends a segment: its index is saved (on this thread too: the save
    overlaps the lexical stage) and a fresh one started for the pairs fed after it."""

    _END = None

    def __init__(self, model, progress: Callable[[str, int, int], None], seconds: dict[str, float]) -> None:
        self.model, self.progress, self.seconds = model, progress, seconds
        self.count = 0
        self._fed = 0
        self._queue: queue.Queue = queue.Queue()
        self._error: BaseException | None = None
        self._stop = False
        self._cuts: list[threading.Event] = []
        self._saved: dict[threading.Event, int] = {}
        self._thread = threading.Thread(target=self._run, name="ranklens-embed", daemon=True)
        self._thread.start()

    def feed(self, pairs: list[tuple[int, str]]) -> None:
        """Chunks to embed, as (id, text)."""
        if pairs:
            self._fed += len(pairs)
            self._queue.put(pairs)

    def feed_vectors(self, ids: list[int], vectors: np.ndarray) -> None:
        """Chunks embedded already (:class:`EmbedChunks`), kept in order with those fed as text."""
        if ids:
            self._fed += len(ids)
            self._queue.put(_Vectors(np.asarray(ids, dtype=np.int64), vectors))

    def cut(self, save_to: Path) -> threading.Event:
        """End the current segment: its vectors go to ``save_to``; the event is set once saved
        (or once the thread failed)."""
        done = threading.Event()
        self._cuts.append(done)
        self._queue.put((save_to, done))
        return done

    def wait(self, done: threading.Event) -> int:
        """Wait for a cut's save and say how many vectors it saved; re-raise what the thread raised."""
        while not done.wait(0.5):
            if not self._thread.is_alive():
                break
        if self._error is not None:
            raise self._error
        return self._saved.pop(done, -1)

    def close(self) -> None:
        self._queue.put(self._END)
        self._thread.join()
        self.model.forget_words()

    def abandon(self) -> None:
        """Stop after the batch or save in flight, and wait for it: the indexer then removes
        the folders this thread writes into (a save landing after that left a partial file)."""
        self._stop = True
        self._queue.put(self._END)
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=60)

    def _run(self) -> None:
        from ..vectors import VectorIndex

        t0 = time.perf_counter()
        index = VectorIndex(self.model.dim)
        pending: list[tuple[int, str]] = []
        try:
            while not self._stop:
                item = self._queue.get()
                if item is self._END:
                    break
                if not isinstance(item, list) and pending:  # a cut, or vectors: after the texts before
                    self._encode(index, pending)
                    pending = []
                if isinstance(item, _Vectors):
                    index.add(item.ids, item.vectors)
                    self.count += len(item.ids)
                    self.progress("embed", self.count, self._fed)
                    continue
                if isinstance(item, tuple):  # a cut
                    save_to, done = item
                    index.save(save_to)
                    self._saved[done] = len(index)
                    index = VectorIndex(self.model.dim)
                    done.set()
                    continue
                pending.extend(item)
                while len(pending) >= EMBED_BATCH:
                    batch, pending = pending[:EMBED_BATCH], pending[EMBED_BATCH:]
                    self._encode(index, batch)
        except BaseException as exc:  # handed to the thread that waits
            self._error = exc
        finally:
            for done in self._cuts:
                done.set()  # nobody waits forever on a thread that is gone
            self.seconds["embed"] = self.seconds.get("embed", 0.0) + time.perf_counter() - t0

    def _encode(self, index, batch: list[tuple[int, str]]) -> None:
        vectors = self.model.encode([text for _, text in batch])
        index.add(np.array([cid for cid, _ in batch], dtype=np.int64), vectors)
        self.count += len(batch)
        self.progress("embed", self.count, self._fed)


@dataclass
class _Vectors:
    ids: np.ndarray
    vectors: np.ndarray


def _row_chunk(row) -> Chunk:
    """A stored chunk, as :func:`document_text` reads it (signatures and docstrings are not
    stored: they feed the matrices, written when the chunk was cut)."""
    path, start, end, kind, language, context, symbol, text = row
    return Chunk(path, start, end, unpack_text(text), language, context, kind, symbol)
