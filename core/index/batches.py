"""The chunked batches an index pass is fed, and what the chunking workers do.

A pass's changed files are cut into batches of about :data:`CHUNK_BATCH_BYTES` of text (the
first ones less: :func:`_file_batches`); each batch is read, chunked, its tokens counted
(:func:`core.storage.terms.count_batch`) and its chunks embedded by :func:`_chunk_batch`, in
worker processes (:mod:`core.index.workers`) when the pass has enough text to pay for them
(:func:`chunked`). :class:`Feed` hands the batches to the indexer in order, with their chunk
ids, and to every arm's build as soon as a generation holds them. The order of the files
(:func:`index_order`, the files a first question most likely wants first, for a large pass)
and the size of each generation's segment (:func:`segment_cap`) are decided here too; the pass
itself (:mod:`core.index.indexer`) stores the batches, commits the generations and merges.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..arms.protocol import ArmBuild, Documents, IndexSettings
from ..chunking import chunk_file
from ..discovery import FileEntry, load_text
from ..storage.segments import FIRST_SEGMENT_CHUNKS, SEGMENT_CHUNKS
from ..storage.terms import TokenBatch, count_batch
from ..text.languages import language_for
from .workers import ordered_map

#: Files are chunked and their tokens counted in batches of about this much text ...
CHUNK_BATCH_BYTES = 256_000
#: ... the first batch of a pass of this much, the next ones twice as much as the one before.
FIRST_BATCH_BYTES = 32_000
#: A pass chunked by worker processes chunks its first batches, up to this much text, itself
#: while they start (their imports take 0.5-3 s, the machine's load deciding).
LEAD_BYTES = 200_000
#: An update with at least this much text to chunk does it in worker processes: tree-sitter,
#: the Python-side span work and embedding then overlap the SQLite inserts instead of holding
#: this process's GIL. Below it (an edited file or a few) starting a worker (~0.3 s)
#: would cost more than it saves.
POOL_MIN_BYTES = 2_000_000
#: A pass with this much text to index or more (it commits in several steps) indexes its files
#: in :func:`index_order`, the files a first question most likely wants first; a smaller one
#: (done in a few seconds) in the listing's (path) order. Chunk ids follow the order, so two
#: chunks an arm scores exactly alike may rank the other way round than in a path-ordered
#: build: on a 41k-chunk repository the final top 10 of 30 questions were the same either way
#: (docs/appendix/bench-first-answer.md).
ORDER_MIN_BYTES = 2_000_000
#: Two worker processes on two cores: with one, chunking was the critical path and a core sat
#: idle whenever the embedder waited for chunks (cold index 58.3 -> 48.3 s, interleaved pair).
POOL_PROCESSES = 2


def segment_cap(step: int) -> int:
    """The most chunks the ``step``-th (from 0) segment of a pass holds:
    :data:`core.storage.segments.FIRST_SEGMENT_CHUNKS`, doubled at each step, up to
    :data:`core.storage.segments.SEGMENT_CHUNKS`."""
    return min(SEGMENT_CHUNKS, FIRST_SEGMENT_CHUNKS << min(step, 40))


def index_order(path: str) -> tuple:
    """Where a file comes in a pass: the files a first question most likely wants first, since
    a question asked while a first build runs is answered from the files committed so far.
    Code no prior demotes, then documentation pages, then what the priors demote (by their
    factor: examples, configuration and data before tests and README-like files); shallow
    before deep within each, then by path. The order a complete index ranks in is not this
    one's business: its scores do not depend on it (tests/test_partial.py)."""
    from ..query.priors import PROSE_LANGUAGES, matching_rules

    factor = 1.0
    for rule in matching_rules(path):
        factor *= rule.factor
    return (-factor, language_for(path) in PROSE_LANGUAGES, path.count("/"), path)


def order_files(changed: list) -> None:
    """Put a pass's ``(entry, existed)`` files in the order it indexes them: :func:`index_order`
    when they hold :data:`ORDER_MIN_BYTES` of text or more, else as listed (by path)."""
    if sum(entry.size for entry, _existed in changed) >= ORDER_MIN_BYTES:
        changed.sort(key=lambda item: index_order(item[0].path))


def chunked(
    root: Path, changed: list, settings: IndexSettings, documents: dict[str, Documents], tasks: dict[str, Callable]
) -> Iterator[tuple[list, tuple[list, TokenBatch, dict]]]:
    """Each batch of ``changed`` ``(entry, existed)`` files under ``root`` with, per file,
    ``(chunks, sha, reason, redacted)`` (chunks None when it cannot be read now), the token
    counts of ``documents`` and what each arm's batch task made of the chunks, in order; read
    and chunked in worker processes when there is enough text to pay for them (started now:
    their start-up overlaps what comes before the first batch). The files are read there too:
    this process never holds more text than a few batches' chunks."""
    w, o = settings.window, settings.overlap
    max_bytes = settings.options.max_bytes
    groups = list(_file_batches(changed, CHUNK_BATCH_BYTES))
    folder = str(root)
    jobs = [(folder, [entry for entry, _existed in group], max_bytes, w, o, documents, tasks) for group in groups]
    pooled = sum(entry.size for entry, _existed in changed) >= POOL_MIN_BYTES
    if not pooled:
        return _in_process(groups, jobs)
    # The first batches are chunked here while the workers start (their imports take
    # 0.5-2 s of a loaded machine's time, and this process waits for its first chunks).
    lead, chars = 0, 0
    while lead < len(jobs) and chars < LEAD_BYTES:
        chars += sum(entry.size for entry, _existed in groups[lead])
        lead += 1
    pool = ordered_map(_chunk_batch, jobs[lead:], POOL_PROCESSES)
    here = (_chunk_batch(*job) for job in jobs[:lead])
    return _Zipped(groups, itertools.chain(here, pool), pool)


def _file_batches(changed: list, size: int):
    """Consecutive runs of ``changed`` ``(entry, existed)`` files holding about ``size`` bytes
    each, the first ones less (:data:`FIRST_BATCH_BYTES`, doubling): the first segment of a
    pass, small itself, is then cut from several batches that the chunking workers share, not
    from one that one of them takes long over."""
    batch: list = []
    chars = 0
    limit = min(size, FIRST_BATCH_BYTES)
    for item in changed:
        batch.append(item)
        chars += item[0].size
        if chars >= limit:
            yield batch
            batch, chars = [], 0
            limit = min(size, 2 * limit)
    if batch:
        yield batch


def _chunk_batch(
    root: str,
    entries: list[FileEntry],
    max_bytes: int,
    window: int,
    overlap: int,
    documents: dict[str, Documents],
    tasks: dict[str, Callable],
) -> tuple[list[tuple], TokenBatch, dict]:
    """Read and chunk files (in a worker process for a large pass, see :func:`chunked`),
    count the tokens of each arm's ``documents`` of their chunks, and run each arm's batch task
    (:meth:`core.arms.protocol.ArmBuild.batch_task`: the dense vectors) over them. Per file:
    ``(chunks, sha, reason, redacted lines)``, chunks None (and ``reason``) when it cannot be
    read now. Embedding is the workers' so that the process storing the chunks, whose one GIL
    serves its every thread, is not a cold build's bottleneck."""
    per_file = []
    for entry in entries:
        loaded = load_text(root, entry, max_bytes)
        if loaded.text is None:
            per_file.append((None, "", loaded.reason, loaded.redacted))
            continue
        chunks = chunk_file(entry.path, loaded.text, window=window, overlap=overlap, language=language_for(entry.path))
        per_file.append((chunks, text_sha(loaded.text), "", loaded.redacted))
    chunks = [c for file_chunks, *_ in per_file if file_chunks for c in file_chunks]
    fields = {f for d in documents.values() for f in d.fields}
    everything = np.ones(len(chunks), dtype=bool)
    counts = count_batch(
        {f: [getattr(c, f) for c in chunks] for f in fields},
        {
            name: (d.fields, everything if d.include is None else np.array([d.include(c) for c in chunks], dtype=bool))
            for name, d in documents.items()
        },
    )
    return per_file, counts, {name: task(chunks) for name, task in tasks.items()} if chunks else {}


def text_sha(text: str) -> str:
    """A file's content hash, as the ``files`` table stores it."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _in_process(groups: list, jobs: list):
    """:func:`chunked` without worker processes."""
    for i, group in enumerate(groups):
        job, jobs[i] = jobs[i], None
        yield group, _chunk_batch(*job)


class _Zipped:
    """Each batch with its result from the worker processes; :meth:`close` stops them."""

    def __init__(self, groups: list, results, pool) -> None:
        self._pairs = zip(groups, results)
        self._pool = pool

    def __iter__(self) -> _Zipped:
        return self

    def __next__(self):
        return next(self._pairs)

    def close(self) -> None:
        self._pool.close()


@dataclass
class _Item:
    """One chunked batch: its ``(entry, existed)`` files, each file's result and new chunk ids,
    and its token counts."""

    files: list
    results: list
    counts: TokenBatch
    ids: list[list[int]]
    done: dict  # arm name -> its batch task's result for the batch's chunks
    prepared: bool = False

    @property
    def chunks(self) -> int:
        return sum(len(ids) for ids in self.ids)


class Feed:
    """The chunked batches of a pass, in order, with chunk ids given as they arrive (ids only
    grow). A batch's chunks go to every arm's :meth:`ArmBuild.prepare` once the batch belongs to
    a generation: the current one, or (:meth:`pull_ahead`) the next while the current one is
    written, so the embedder starts on the next segment at once."""

    def __init__(self, batches: Iterator, parts: dict[str, ArmBuild], next_id: int, unread: set[str]) -> None:
        self._batches = batches
        self.was_unread = unread.__contains__
        self.parts = parts
        self.next_id = next_id
        self.held: list[_Item] = []
        self.exhausted = False
        self.done = 0
        self.unreadable_new = 0  # planned files found unreadable when chunked
        self.unreadable_old = 0

    def _pull(self) -> _Item | None:
        if self.exhausted:
            return None
        found = next(self._batches, None)
        if found is None:
            self.exhausted = True
            return None
        files, (results, counts, done) = found
        ids = []
        for (_entry, existed), (chunks, *_rest) in zip(files, results):
            n = len(chunks) if chunks is not None else 0
            ids.append(list(range(self.next_id, self.next_id + n)))
            self.next_id += n
            if chunks is None:
                if existed:
                    self.unreadable_old += 1
                else:
                    self.unreadable_new += 1
        return _Item(files, results, counts, ids, done)

    def _prepare(self, item: _Item) -> None:
        if item.prepared:
            return
        item.prepared = True
        ids = [i for file_ids in item.ids for i in file_ids]
        if ids:
            chunks = [c for file_chunks, *_rest in item.results if file_chunks for c in file_chunks]
            for name, part in self.parts.items():
                part.prepare(ids, chunks, item.done.get(name))

    def next(self, room: int | None) -> _Item | None:
        """The next batch, if it fits in ``room`` chunks (None: any); else it is held back."""
        item = self.held.pop(0) if self.held else self._pull()
        if item is not None and room is not None and item.chunks > room:
            self.held.insert(0, item)
            return None
        if item is not None:
            self._prepare(item)
        return item

    def pull_ahead(self, ready: Callable[[], bool], cap: int) -> None:
        """Chunk (and prepare) batches for the next generation until ``ready()``, half a segment's
        worth is held, or the next batch would not fit in the next generation's segment of
        ``cap`` chunks (its chunks must not reach the embedder before that segment is cut)."""
        planned = 0
        for item in self.held:  # in id order: the embedder keeps a segment's rows in id order
            if planned and planned + item.chunks > cap:
                return
            self._prepare(item)
            planned += item.chunks
        while not ready() and planned < cap // 2:
            item = self._pull()
            if item is None:
                return
            self.held.append(item)
            if planned and planned + item.chunks > cap:
                return
            self._prepare(item)
            planned += item.chunks

    def close(self) -> None:
        close = getattr(self._batches, "close", None)
        if close is not None:
            close()
