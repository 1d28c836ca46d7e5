"""The vector index: keys -> unit vectors, searched by exact cosine similarity.

What it stores and how is :mod:`core.vectors.storage`; the scans are :mod:`core.vectors.scan`
(float32 copy, int8 candidates) and :mod:`core.vectors._usearch` (float16, for an index too
big for the float32 copy). :mod:`core.vectors` says which runs when, with the measurements.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from . import _usearch, storage
from .scan import Float32Scan, Int8Scan, SignBits, nearest_by_bits, numkong

__all__ = ["SegmentedVectors", "VectorIndex"]

_STORE = np.float16
#: An ``allowed`` filter covering at least this fraction of the index is answered by a
#: full search for a larger pool, then filtered; a sparser one by searching only its rows.
_DENSE_FILTER = 0.35
#: Indexes whose float32 copy would take more than this are scanned by usearch in float16.
_F32_MAX_BYTES = 512 << 20
#: The float32 copies of runs of rows a search among a few rows keeps (:meth:`VectorIndex._runs32`).
_RUNS32_MAX_BYTES = 16 << 20
#: A filter allowing at most this many rows is answered from those rows' vectors alone.
_FEW_ROWS = 4096

_EMPTY_KEYS = np.empty(0, dtype=np.int64)
_EMPTY_SIMS = np.empty(0, dtype=np.float32)


def _best_first(ids: np.ndarray, dist: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``k`` of ``ids`` by cosine similarity (``1 - dist``, clipped), ties to the
    smaller id, as contiguous (ids, similarities)."""
    sims = np.clip(1.0 - dist, -1.0, 1.0).astype(np.float32)
    order = np.lexsort((ids, -sims))[:k]
    return np.ascontiguousarray(ids[order]), np.ascontiguousarray(sims[order])


def _as_keys(keys: np.ndarray) -> np.ndarray:
    arr = np.asarray(keys)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"keys must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        return _EMPTY_KEYS
    if arr.dtype.kind not in "iu":
        raise TypeError(f"keys must be integers, got {arr.dtype}")
    if arr.dtype.kind == "u" and arr.dtype.itemsize >= 8 and int(arr.max()) > np.iinfo(np.int64).max:
        raise ValueError("keys must fit in int64")
    return arr.astype(np.int64, copy=False)


def _exact(dataset, query: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices and cosine distances of the ``count`` rows nearest ``query`` (sorted).

    ``dataset`` is a :class:`Float32Scan` copy (scanned with numpy) or the float16 matrix
    itself (scanned by usearch).
    """
    if isinstance(dataset, Float32Scan):
        return dataset.nearest(query, count)
    return _usearch.exact(dataset, query, count)


def _by_bits(bits: SignBits | None, rows: int) -> bool:
    """Whether sign bits pick the candidates among ``rows`` rows."""
    return bits is not None and rows >= SignBits.MIN_ROWS and SignBits.usable()


def _as_range(rows: np.ndarray) -> tuple[int, int] | None:
    """``(lo, hi)`` when ``rows`` is ``lo, lo + 1, ..., hi - 1``, else None."""
    if not len(rows) or rows[0] < 0:
        return None
    lo = int(rows[0])
    return (lo, lo + len(rows)) if np.array_equal(rows, np.arange(lo, lo + len(rows))) else None


def _coarse_usable(coarse: tuple[Int8Scan | None, SignBits | None], rows: int) -> bool:
    """Whether a view's companions pick candidates among ``rows`` rows: there are
    :attr:`Int8Scan.MIN_VECTORS` of them or more (fewer are scanned exactly), by sign bits or by
    the int8 scan of every row (which needs :func:`numkong`)."""
    return (
        coarse[0] is not None and rows >= Int8Scan.MIN_VECTORS and (_by_bits(coarse[1], rows) or numkong() is not None)
    )


def _coarse_candidates(
    coarse: Int8Scan, bits: SignBits | None, q16: np.ndarray, pool: int, mask: np.ndarray | None, allowed: int
) -> np.ndarray:
    """The ``pool`` rows (ascending) nearest ``q16`` by int8 score among those ``mask`` allows
    (``allowed`` of them): from the :attr:`SignBits.CANDIDATES` nearest by sign bits when
    there are bits and :attr:`SignBits.MIN_ROWS` allowed rows or more, else from every row."""
    if not _by_bits(bits, allowed):
        return coarse.candidates(q16, pool, mask)
    dist = bits.distances(SignBits.encode_query(q16))
    dead = SignBits.width(len(q16)) * 64 + 1
    if mask is not None:
        dist[~mask] = dead
    rows = nearest_by_bits(dist, SignBits.CANDIDATES, dead)
    if rows.size <= pool:
        return rows
    sims = coarse.sims_of(q16, rows)
    return np.sort(rows[np.argpartition(-sims, pool)[:pool]])


class VectorIndex:
    """Keys -> unit vectors, searched by exact cosine similarity.

    Adding a key that is already present replaces its vector. Thread-safe: searches work
    on a snapshot and may run concurrently with each other and with modifications.
    """

    def __init__(self, dim: int):
        dim = int(dim)
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self.dim: int = dim
        self._lock = threading.RLock()
        self._n = 0
        self._keys = _EMPTY_KEYS  # capacity >= _n; rows [:_n] are live
        self._vecs = np.empty((0, dim), dtype=_STORE)
        self._view = False
        self._lookup: tuple[np.ndarray, np.ndarray] | None = None  # (sorted keys, their rows)
        self._f32: Float32Scan | None = None  # float32 copy of rows [:_n] (see _float32)
        self._f32_lock = threading.Lock()
        self._version = 0  # bumped by every modification: a copy made before one is stale
        # (version, {(first row, end row): their float32 vectors}, bytes): see _runs32.
        self._runs: tuple[int, OrderedDict[tuple[int, int], np.ndarray], list[int]] = (0, OrderedDict(), [0])
        # int8 candidate scan (see Int8Scan): mirrors rows [:_n] exactly, or is None. A view's is
        # read-only, searched, and dropped on the first modification (see _leave_view); the
        # next save builds a new one. A mutable index keeps its own in step, for saving.
        self._coarse: Int8Scan | None = None
        self._coarse_pending: Path | None = None  # a view's companion, not opened yet
        # A view's sign bits (see SignBits), opened with its companion; a mutable index has
        # none (the next save writes them from the vectors).
        self._bits: SignBits | None = None
        self._bits_pending: Path | None = None

    # ------------------------------------------------------------------ basics

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        return f"VectorIndex(dim={self.dim}, n={self._n}{', view' if self._view else ''})"

    def __contains__(self, key: object) -> bool:
        try:
            k = int(key)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            return False
        sorted_keys, _ = self._snapshot_lookup()
        i = int(np.searchsorted(sorted_keys, k))
        return i < len(sorted_keys) and int(sorted_keys[i]) == k

    @property
    def is_view(self) -> bool:
        """True while the vectors are a read-only memory map of a file."""
        return self._view

    def keys(self) -> np.ndarray:
        """A copy of the keys, in storage order."""
        with self._lock:
            return np.array(self._keys[: self._n], dtype=np.int64)

    # ------------------------------------------------------------------ modification

    def add(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        """Add (or replace) ``vectors[i]`` under ``keys[i]``; keys must be unique in a call."""
        keys = _as_keys(keys)
        vecs = np.asarray(vectors, dtype=np.float32)
        if vecs.ndim == 1 and keys.size == 1:
            vecs = vecs.reshape(1, -1)
        if vecs.ndim != 2 or vecs.shape[1] != self.dim:
            raise ValueError(f"vectors must have shape (n, {self.dim}), got {vecs.shape}")
        if len(vecs) != len(keys):
            raise ValueError(f"{len(keys)} keys for {len(vecs)} vectors")
        if keys.size == 0:
            return
        if np.unique(keys).size != keys.size:
            raise ValueError("duplicate keys in one add()")
        if not np.isfinite(vecs).all():
            raise ValueError("vectors must be finite")
        norms = np.sqrt(np.einsum("ij,ij->i", vecs, vecs))[:, None]
        unit = np.divide(vecs, norms, out=np.zeros_like(vecs), where=norms > 0).astype(_STORE)

        with self._lock:
            if self._n:
                self._drop(keys)  # replace: a new array, so running searches keep theirs
            self._materialise()
            need = self._n + len(keys)
            if need > len(self._keys):
                cap = max(need, int(len(self._keys) * 1.5) + 16)
                new_keys = np.empty(cap, dtype=np.int64)
                new_vecs = np.empty((cap, self.dim), dtype=_STORE)
                new_keys[: self._n] = self._keys[: self._n]
                new_vecs[: self._n] = self._vecs[: self._n]
                self._keys, self._vecs = new_keys, new_vecs
            # Rows past _n are invisible to snapshots taken before this point.
            self._keys[self._n : need] = keys
            self._vecs[self._n : need] = unit
            self._n = need
            if self._coarse is not None:
                self._coarse = self._coarse.appended(unit)
            self._lookup = None
            self._f32 = None
            self._version += 1

    def remove(self, keys: np.ndarray) -> None:
        """Remove these keys; absent keys are ignored."""
        keys = _as_keys(keys)
        if keys.size == 0:
            return
        with self._lock:
            if self._n:
                self._drop(keys)

    def _drop(self, keys: np.ndarray) -> None:
        live = self._keys[: self._n]
        gone = np.isin(live, keys)
        if not gone.any():
            return
        keep = ~gone
        self._leave_view()
        if self._coarse is not None:
            self._coarse = self._coarse.kept(keep)
        # Fresh arrays (never compaction in place): concurrent searches hold the old ones.
        self._keys = np.ascontiguousarray(live[keep])
        self._vecs = np.ascontiguousarray(self._vecs[: self._n][keep])
        self._n = len(self._keys)
        self._view = False
        self._lookup = None
        self._f32 = None
        self._version += 1

    def _leave_view(self) -> None:
        """Before a view's first modification: its companion describes the file, not this."""
        if self._view:
            self._coarse = self._coarse_pending = None
            self._bits = self._bits_pending = None

    def _materialise(self) -> None:
        self._leave_view()
        if self._view:
            self._keys = np.array(self._keys[: self._n], dtype=np.int64)
            self._vecs = np.array(self._vecs[: self._n], dtype=_STORE)
            self._view = False

    # ------------------------------------------------------------------ search

    def _snapshot(self) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            n = self._n
            return self._keys[:n], self._vecs[:n]

    def _snapshot_lookup(self) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            if self._lookup is None:
                live = self._keys[: self._n]
                order = np.argsort(live, kind="stable")
                self._lookup = (live[order], order.astype(np.int64, copy=False))
            return self._lookup

    def _companions(self) -> tuple[Int8Scan | None, SignBits | None]:
        """A view's int8 codes and sign bits (opened on first use; they cannot change under a
        running search), (None, None) for a mutable index. Sign bits come only with codes.
        Called under the lock."""
        if self._coarse_pending is not None:
            self._coarse = Int8Scan.load(self._coarse_pending, self.dim, self._n, view=True)
            self._coarse_pending = None
        if self._bits_pending is not None:
            self._bits = SignBits.load(self._bits_pending, self.dim, self._n, view=True)
            self._bits_pending = None
        if not self._view or self._coarse is None:
            return None, None
        return self._coarse, self._bits

    def _search_state(self, *, lookup: bool):
        """What one search reads, taken together under the lock: keys, vectors, the companions
        (:meth:`_companions`), the float32 copy with its version and, with ``lookup``, the
        key lookup."""
        with self._lock:
            coarse, bits = self._companions()
            keys, vecs = self._snapshot()
            found = self._snapshot_lookup() if lookup else None
            return keys, vecs, (coarse, bits), self._f32, self._version, found

    def search(self, vector: np.ndarray, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (keys, cosine similarities, descending). `allowed` = sorted int64 array of keys that may be returned (filters); when given, return only allowed keys.

        Results are exact. Ties are broken by key. A zero query vector matches nothing.
        ``allowed`` need not actually be sorted; keys in it that are not indexed are ignored.
        """
        k = int(k)
        keys, vecs, coarse, f32, version, lookup = self._search_state(lookup=allowed is not None)
        n = len(keys)
        if n == 0 or k <= 0:
            return _EMPTY_KEYS.copy(), _EMPTY_SIMS.copy()
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"query has {q.shape[0]} dimensions, index has {self.dim}")
        norm = float(np.linalg.norm(q))
        if not np.isfinite(norm) or norm == 0.0:
            return _EMPTY_KEYS.copy(), _EMPTY_SIMS.copy()
        q16 = (q / norm).astype(_STORE)
        pool = max(Int8Scan.MIN_POOL, 4 * k)
        if allowed is None and pool < n and _coarse_usable(coarse, n):
            rows = _coarse_candidates(*coarse, q16, pool, None, n)
            dist = Float32Scan(vecs[rows]).distances(q16)
        else:
            if f32 is None and vecs.size * 4 <= _F32_MAX_BYTES:
                f32 = self._float32(vecs, version)
            if f32 is not None:
                vecs = f32
            if allowed is None:
                rows, dist = _exact(vecs, q16, k)
            else:
                rows, dist = self._search_allowed(vecs, q16, k, _as_keys(allowed), lookup)
        if rows.size == 0:
            return _EMPTY_KEYS.copy(), _EMPTY_SIMS.copy()
        out_keys = keys[rows]
        return _best_first(out_keys, dist, k)

    def search_rows(
        self, vector: np.ndarray, k: int, mask: np.ndarray | None = None, among: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (storage rows, cosine similarities, descending) among the rows ``mask`` allows
        (a boolean array over the rows; None: all), or the rows ``among`` (ascending, no row
        twice: the rows such a mask allows, without making it). Ties go to the earlier row.

        Scans as :meth:`search` does: a view's int8 companion picks candidates (among the
        allowed rows only; from its sign bits' nearest when there are :attr:`SignBits.MIN_ROWS`
        of them or more), re-scored exactly; else every allowed row in float32. A few
        allowed rows (filters) are scanned exactly from their float16 vectors, with no copy
        of the rest.
        """
        k = int(k)
        keys, vecs, coarse, f32, version, _ = self._search_state(lookup=False)
        n = len(keys)
        q16 = self._unit_query(vector)
        if n == 0 or k <= 0 or q16 is None:
            return _EMPTY_KEYS.copy(), _EMPTY_SIMS.copy()
        allowed = n
        if among is not None and len(among) <= _FEW_ROWS and len(among) < n:
            rows = among  # the few rows' branch below, as a mask of them would take it
            if not len(rows):
                return _EMPTY_KEYS.copy(), _EMPTY_SIMS.copy()
            sub_rows, dist = Float32Scan(self._runs32(vecs, rows, version)).nearest(q16, k)
            if sub_rows.size == 0:
                return _EMPTY_KEYS.copy(), _EMPTY_SIMS.copy()
            rows = rows[sub_rows]
            return _best_first(rows, dist, k)
        if among is not None:
            mask = np.zeros(n, dtype=bool)
            mask[among] = True
        if mask is not None:
            mask = np.asarray(mask, dtype=bool)
            allowed = int(np.count_nonzero(mask))
            if allowed == 0:
                return _EMPTY_KEYS.copy(), _EMPTY_SIMS.copy()
            if allowed == n:
                mask = None
        pool = max(Int8Scan.MIN_POOL, 4 * k)
        if mask is not None and allowed <= _FEW_ROWS:
            rows = np.flatnonzero(mask)
            sub_rows, dist = Float32Scan(vecs[rows]).nearest(q16, k)
            rows = rows[sub_rows]
        elif pool < allowed and _coarse_usable(coarse, allowed):
            rows = _coarse_candidates(*coarse, q16, pool, mask, allowed)
            dist = Float32Scan(vecs[rows]).distances(q16)
        else:
            if f32 is None and vecs.size * 4 <= _F32_MAX_BYTES:
                f32 = self._float32(vecs, version)
            if mask is None:
                rows, dist = _exact(f32 if f32 is not None else vecs, q16, k)
            else:
                rows = np.flatnonzero(mask)
                subset = f32.subset(rows) if f32 is not None else Float32Scan(vecs[rows])
                sub_rows, dist = _exact(subset, q16, k)
                rows = rows[sub_rows]
        if rows.size == 0:
            return _EMPTY_KEYS.copy(), _EMPTY_SIMS.copy()
        return _best_first(rows, dist, k)

    def _runs32(self, vecs: np.ndarray, rows: np.ndarray, version: int) -> np.ndarray:
        """``vecs[rows]`` in float32 (``rows`` ascending): the same values as converting them,
        made of the float32 copies of their runs of consecutive rows, each converted once and
        kept (up to :data:`_RUNS32_MAX_BYTES`, the oldest used dropped first). The chunk step
        asks for the chunks of the same top files again and again (a file's chunks are a run),
        and converting float16 is most of such a search."""
        with self._lock:
            if self._runs[0] != version:
                self._runs = (version, OrderedDict(), [0])
            _, runs, size = self._runs
        cut = (np.flatnonzero(np.diff(rows) != 1) + 1).tolist()
        parts = []
        for lo, hi in zip([0, *cut], [*cut, len(rows)]):
            key = (int(rows[lo]), int(rows[hi - 1]) + 1)
            with self._lock:
                found = runs.get(key)
                if found is not None:
                    runs.move_to_end(key)
            if found is None:
                found = np.asarray(vecs[key[0] : key[1]], dtype=np.float32)
                with self._lock:
                    runs[key] = found
                    size[0] += found.nbytes
                    while size[0] > _RUNS32_MAX_BYTES and len(runs) > 1:
                        size[0] -= runs.popitem(last=False)[1].nbytes
            parts.append(found)
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def companions(self) -> tuple[Int8Scan | None, SignBits | None]:
        """A view's int8 codes and sign bits (None for what it does not have, and for bits
        numpy cannot count: :meth:`SignBits.usable`)."""
        with self._lock:
            coarse, bits = self._companions()
        return coarse, bits if SignBits.usable() else None

    def coarse_sims(self, q16: np.ndarray) -> np.ndarray | None:
        """Every row's int8 dot product with the unit query ``q16`` from a view's companion;
        None when there is none (or no :func:`numkong`)."""
        coarse = self.companions()[0]
        return None if coarse is None or numkong() is None else coarse.sims(q16)

    def exact_sims(self, q16: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The cosine similarity of ``rows`` (storage rows) with the unit query ``q16``."""
        vecs = self._snapshot()[1]
        return np.clip(1.0 - Float32Scan(vecs[rows]).distances(q16), -1.0, 1.0).astype(np.float32)

    def _unit_query(self, vector: np.ndarray) -> np.ndarray | None:
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"query has {q.shape[0]} dimensions, index has {self.dim}")
        norm = float(np.linalg.norm(q))
        if not np.isfinite(norm) or norm == 0.0:
            return None
        return (q / norm).astype(_STORE)

    def vectors(self) -> np.ndarray:
        """The stored (unit, float16) vectors, in storage order (read-only for a view)."""
        return self._snapshot()[1]

    def _float32(self, vecs: np.ndarray, version: int) -> Float32Scan:
        """The float32 copy of this snapshot, made once (kept unless the index changed since)."""
        with self._f32_lock:
            with self._lock:
                if self._f32 is not None and self._version == version:
                    return self._f32
            f32 = Float32Scan(vecs)
            with self._lock:
                if self._version == version:
                    self._f32 = f32
            return f32

    @staticmethod
    def _search_allowed(
        vecs: np.ndarray,
        q16: np.ndarray,
        k: int,
        allowed: np.ndarray,
        lookup: tuple[np.ndarray, np.ndarray] | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        assert lookup is not None
        sorted_keys, sorted_rows = lookup
        n = len(vecs)
        if allowed.size == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        idx = np.searchsorted(sorted_keys, allowed)
        idx_c = np.minimum(idx, n - 1)
        hit = (idx < n) & (sorted_keys[idx_c] == allowed)
        mask = np.zeros(n, dtype=bool)
        mask[sorted_rows[idx_c[hit]]] = True  # duplicates in `allowed` collapse here
        m = int(np.count_nonzero(mask))
        if m == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        want = min(k, m)
        if m == n:
            return _exact(vecs, q16, want)
        if m >= _DENSE_FILTER * n:
            # Dense filter: one full scan for a pool big enough to hold `want` allowed rows
            # unless the allowed rows are unusually far from the query; else fall through.
            pool = min(n, max(2 * k, int(np.ceil(want * n / m)) * 2 + 16))
            got_rows, got_dist = _exact(vecs, q16, pool)
            keep = mask[got_rows]
            if int(np.count_nonzero(keep)) >= want or pool >= n:
                return got_rows[keep][:want], got_dist[keep][:want]
        rows = np.flatnonzero(mask)
        # Sparse filter (or unlucky pool): exact search over the allowed rows only.
        subset = vecs.subset(rows) if isinstance(vecs, Float32Scan) else np.ascontiguousarray(vecs[rows])
        sub_rows, sub_dist = _exact(subset, q16, want)
        return rows[sub_rows], sub_dist

    # ------------------------------------------------------------------ persistence

    def save(self, path: Path) -> None:
        """Write atomically (temp file in the same folder, fsync, rename); see
        :mod:`core.vectors.storage` for the format."""
        path = Path(path)
        keys, vecs = self._snapshot()
        with self._lock:
            coarse = self._coarse if self._n == len(keys) else None
        storage.write(path, self.dim, keys, vecs, coarse)

    @classmethod
    def load(cls, path: Path, *, view: bool = True) -> VectorIndex:
        """view=True memory-maps the file read-only (warm start); view=False loads it for modification.

        Raises FileNotFoundError for a missing file and ValueError for one that is not a
        complete index of this format.
        """
        stored = storage.read(Path(path), view)
        index = cls(stored.dim)
        n = len(stored.keys)
        if n == 0:
            return index
        index._keys, index._vecs, index._n, index._view = stored.keys, stored.vecs, n, bool(view)
        if stored.companion is not None and view:
            index._coarse_pending = stored.companion  # opened by the first search
            index._bits_pending = stored.bits
        elif stored.companion is not None:
            index._coarse = Int8Scan.load(stored.companion, stored.dim, n, view=False)
        return index


class SegmentedVectors:
    """The vectors of an index's segments, one :class:`VectorIndex` each, searched together:
    each segment's best ``k`` among its allowed rows, merged (ties to the earlier row).

    ``rows[i]`` maps segment ``i``'s chunk rows to the caller's rows (-1: left out, a
    tombstoned chunk); ``ids[i]`` are its chunk ids. A segment's vector rows are its chunk
    rows when their keys are its ids (the indexer writes them so), else they are mapped by id.
    """

    def __init__(self, parts: list[VectorIndex], rows: list[np.ndarray], ids: list[np.ndarray]) -> None:
        self.parts = parts
        self.rows: list[np.ndarray] = []
        for part, seg_rows, seg_ids in zip(parts, rows, ids):
            keys = part.keys()
            if len(keys) == len(seg_ids) and np.array_equal(keys, seg_ids):
                self.rows.append(np.asarray(seg_rows, dtype=np.int64))
                continue
            pos = np.minimum(np.searchsorted(seg_ids, keys), max(len(seg_ids) - 1, 0))
            found = (seg_ids[pos] == keys) if len(seg_ids) else np.zeros(len(keys), dtype=bool)
            self.rows.append(np.where(found, np.asarray(seg_rows)[pos] if len(seg_ids) else -1, -1))
        self._live = [None if (r >= 0).all() else r >= 0 for r in self.rows]
        # A segment whose rows are the caller's rows lo..hi-1 in order (every chunk live, the
        # usual case): its share of a mask over the caller's rows is a slice of it.
        self._range = [_as_range(r) for r in self.rows]

    def search(
        self, vector: np.ndarray, k: int, allowed: np.ndarray | None = None, among: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` rows nearest ``vector`` (the caller's rows, similarities, descending) among
        ``allowed`` (a boolean mask over the caller's rows; None: all), or among the rows
        ``among`` (the caller's, ascending, no row twice; with ``allowed`` their mask).

        Unfiltered, the segments with an int8 companion share one candidate pool, as one index
        would: the ``max(128, 4k)`` best rows by int8 score across all of them, re-scored
        exactly (a pool per segment re-scored ~35 times as many rows on the Linux sources,
        each read paging in the rows around it); the others are scanned exactly. Past
        :attr:`SignBits.MIN_ROWS` rows with sign bits, only their nearest by Hamming distance
        get an int8 score (:meth:`_pooled`).
        """
        found_rows, found_sims = [], []
        pooled: set[int] = set()
        if allowed is None and among is None and k > 0 and self.parts:
            pooled = self._pooled(vector, k, found_rows, found_sims)
        for i, (part, seg_rows, live) in enumerate(zip(self.parts, self.rows, self._live)):
            if i in pooled:
                continue
            mask = live
            span = self._range[i]
            if among is not None and span is not None:
                # The segment's share of the rows: its rows lo..hi-1 are the caller's in order.
                lo, hi = np.searchsorted(among, span)
                if lo == hi:
                    continue  # none of its rows asked for (the chunk step's few files)
                rows, sims = part.search_rows(vector, k, among=among[lo:hi] - span[0])
            elif allowed is not None:
                if span is not None and allowed.dtype == bool:
                    mask = allowed[span[0] : span[1]]
                else:
                    mask = (seg_rows >= 0) & allowed[np.maximum(seg_rows, 0)]
                rows, sims = part.search_rows(vector, k, mask)
            else:
                rows, sims = part.search_rows(vector, k, mask)
            if rows.size:
                found_rows.append(seg_rows[rows])
                found_sims.append(sims)
        if not found_rows:
            return _EMPTY_KEYS.copy(), _EMPTY_SIMS.copy()
        rows, sims = np.concatenate(found_rows), np.concatenate(found_sims)
        order = np.lexsort((rows, -sims))[:k]
        return rows[order], sims[order]

    def _pooled(self, vector: np.ndarray, k: int, found_rows: list, found_sims: list) -> set[int]:
        """Search the segments with a companion through one candidate pool (appending to
        ``found_rows``/``found_sims``); the positions of the segments it answered for.

        With :attr:`SignBits.MIN_ROWS` live rows or more in segments with sign bits, those
        segments' :attr:`SignBits.CANDIDATES` rows nearest by Hamming distance (one cut across
        them) are the only ones of theirs the int8 codes score; the others' every row is."""
        q16 = self.parts[0]._unit_query(vector)
        if q16 is None:
            return set()
        found = []  # (segment, int8 codes, sign bits, live rows)
        for i, part in enumerate(self.parts):
            coarse, signs = part.companions() if len(part) else (None, None)
            if coarse is not None:
                live = self._live[i]
                found.append((i, coarse, signs, len(part) if live is None else int(np.count_nonzero(live))))
        bit_rows = sum(rows for _, _, signs, rows in found if signs is not None)
        use_bits = bit_rows >= SignBits.MIN_ROWS and SignBits.usable()
        if any(not use_bits or f[2] is None for f in found) and numkong() is None:
            found = [f for f in found if use_bits and f[2] is not None]  # the others need numkong
        pool = max(Int8Scan.MIN_POOL, 4 * int(k))
        total = sum(f[3] for f in found)
        if total <= pool or total < Int8Scan.MIN_VECTORS:
            return set()  # so few rows (or none): each segment scans its own, exactly
        which = [f[0] for f in found]
        picked: list[np.ndarray | None] = [None] * len(found)  # None: every row
        by_bits = [j for j, f in enumerate(found) if use_bits and f[2] is not None]
        if by_bits:
            # One array of every such segment's distances, one cut across them.
            dead = SignBits.width(len(q16)) * 64 + 1
            q_words = SignBits.encode_query(q16)
            starts = np.cumsum([0] + [len(found[j][2]) for j in by_bits])
            dist = np.empty(starts[-1], dtype=np.uint16)
            for j, lo, hi in zip(by_bits, starts[:-1], starts[1:]):
                found[j][2].distances(q_words, dist[lo:hi])
                live = self._live[found[j][0]]
                if live is not None:
                    dist[lo:hi][~live] = dead
            near = nearest_by_bits(dist, SignBits.CANDIDATES, dead)
            cuts = np.searchsorted(near, starts)
            for j, lo, a, b in zip(by_bits, starts[:-1], cuts[:-1], cuts[1:]):
                picked[j] = near[a:b] - lo
        scores, rows_of = [], []
        for (i, coarse, _signs, _n), rows in zip(found, picked):
            if rows is None:
                sims = np.asarray(coarse.sims(q16), dtype=np.float32)
                if self._live[i] is not None:
                    sims = np.where(self._live[i], sims, -np.inf)
                rows = np.arange(len(sims))
            else:
                sims = coarse.sims_of(q16, rows)
            scores.append(sims)
            rows_of.append(rows)
        joined = np.concatenate(scores)
        finite = int(np.count_nonzero(np.isfinite(joined)))
        best = np.flatnonzero(np.isfinite(joined)) if finite <= pool else np.argpartition(-joined, pool)[:pool]
        starts = np.cumsum([0] + [len(x) for x in scores])
        for j, i in enumerate(which):
            mine = best[(best >= starts[j]) & (best < starts[j + 1])] - starts[j]
            if mine.size:
                rows = np.sort(rows_of[j][mine])
                found_rows.append(self.rows[i][rows])
                found_sims.append(self.parts[i].exact_sims(q16, rows))
        return set(which)
