"""The vector index: keys -> unit vectors, searched by exact cosine similarity.

What it stores and how is :mod:`core.vectors.storage`; the scans are :mod:`core.vectors.scan`
(float32 copy, int8 candidates) and :mod:`core.vectors._usearch` (float16, for an index too
big for the float32 copy). :mod:`core.vectors` says which runs when, with the measurements.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from . import _usearch, storage
from .scan import Float32Scan, Int8Scan, numkong

__all__ = ["SegmentedVectors", "VectorIndex"]

_STORE = np.float16
#: An ``allowed`` filter covering at least this fraction of the index is answered by a
#: full search for a larger pool, then filtered; a sparser one by searching only its rows.
_DENSE_FILTER = 0.35
#: Indexes whose float32 copy would take more than this are scanned by usearch in float16.
_F32_MAX_BYTES = 512 << 20
#: A filter allowing at most this many rows is answered from those rows' vectors alone.
_FEW_ROWS = 4096

_EMPTY_KEYS = np.empty(0, dtype=np.int64)
_EMPTY_SIMS = np.empty(0, dtype=np.float32)


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
        # int8 candidate scan (see Int8Scan): mirrors rows [:_n] exactly, or is None. A view's is
        # read-only, searched, and dropped on the first modification (see _leave_view); the
        # next save builds a new one. A mutable index keeps its own in step, for saving.
        self._coarse: Int8Scan | None = None
        self._coarse_pending: Path | None = None  # a view's companion, not opened yet

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

    def _search_state(self, *, lookup: bool):
        """What one search reads, taken together under the lock: keys, vectors, the int8
        companion (loaded on first use; only a view's, which cannot change under a running
        search), the float32 copy with its version and, with ``lookup``, the key lookup."""
        with self._lock:
            if self._coarse_pending is not None:
                self._coarse = Int8Scan.load(self._coarse_pending, self.dim, self._n, view=True)
                self._coarse_pending = None
            keys, vecs = self._snapshot()
            coarse = self._coarse if self._view else None
            found = self._snapshot_lookup() if lookup else None
            return keys, vecs, coarse, self._f32, self._version, found

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
        if allowed is None and coarse is not None and pool < n and numkong() is not None:
            rows, dist = self._search_coarse(coarse, vecs, q16, pool)
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
        sims = np.clip(1.0 - dist, -1.0, 1.0).astype(np.float32)
        order = np.lexsort((out_keys, -sims))[:k]
        return np.ascontiguousarray(out_keys[order]), np.ascontiguousarray(sims[order])

    def search_rows(self, vector: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (storage rows, cosine similarities, descending) among the rows ``mask`` allows
        (a boolean array over the rows; None: all). Ties go to the earlier row.

        Scans as :meth:`search` does: a view's int8 companion picks candidates (among the
        allowed rows only), re-scored exactly; else every allowed row in float32. A few
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
        elif coarse is not None and pool < allowed and numkong() is not None:
            rows = coarse.candidates(q16, pool, mask)
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
        sims = np.clip(1.0 - dist, -1.0, 1.0).astype(np.float32)
        order = np.lexsort((rows, -sims))[:k]
        return np.ascontiguousarray(rows[order]), np.ascontiguousarray(sims[order])

    def coarse_sims(self, q16: np.ndarray) -> np.ndarray | None:
        """Every row's int8 dot product with the unit query ``q16`` from a view's companion;
        None when there is none (or no :func:`numkong`)."""
        with self._lock:
            if self._coarse_pending is not None:
                self._coarse = Int8Scan.load(self._coarse_pending, self.dim, self._n, view=True)
                self._coarse_pending = None
            coarse = self._coarse if self._view else None
        if coarse is None or numkong() is None:
            return None
        return coarse.sims(q16)

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

    @staticmethod
    def _search_coarse(coarse, vecs, q16, pool) -> tuple[np.ndarray, np.ndarray]:
        """The int8 scan's ``pool`` candidate rows and their exact distances, computed as
        :class:`Float32Scan` computes them (the same bits)."""
        rows = coarse.candidates(q16, pool)
        return rows, Float32Scan(vecs[rows]).distances(q16)

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

    def search(self, vector: np.ndarray, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` rows nearest ``vector`` (the caller's rows, similarities, descending) among
        ``allowed`` (a boolean mask over the caller's rows; None: all).

        Unfiltered, the segments with an int8 companion share one candidate pool, as one index
        would: the ``max(128, 4k)`` best rows by int8 score across all of them, re-scored
        exactly (a pool per segment re-scored ~35 times as many rows on the Linux sources,
        each read paging in the rows around it); the others are scanned exactly.
        """
        found_rows, found_sims = [], []
        pooled: set[int] = set()
        if allowed is None and k > 0 and self.parts:
            pooled = self._pooled(vector, k, found_rows, found_sims)
        for i, (part, seg_rows, live) in enumerate(zip(self.parts, self.rows, self._live)):
            if i in pooled:
                continue
            mask = live
            if allowed is not None:
                mask = (seg_rows >= 0) & allowed[np.maximum(seg_rows, 0)]
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
        ``found_rows``/``found_sims``); the positions of the segments it answered for."""
        q16 = self.parts[0]._unit_query(vector)
        if q16 is None:
            return set()
        which, scores = [], []
        for i, (part, live) in enumerate(zip(self.parts, self._live)):
            sims = part.coarse_sims(q16) if len(part) else None
            if sims is None:
                continue
            sims = np.asarray(sims, dtype=np.float32)
            if live is not None:
                sims = np.where(live, sims, -np.inf)
            which.append(i)
            scores.append(sims)
        pool = max(Int8Scan.MIN_POOL, 4 * int(k))
        if not which:
            return set()
        joined = np.concatenate(scores)
        if int(np.count_nonzero(np.isfinite(joined))) <= pool:
            return set()  # so few rows: each segment scans its own
        picked = np.argpartition(-joined, pool)[:pool]
        starts = np.cumsum([0] + [len(s) for s in scores])
        for j, i in enumerate(which):
            rows = np.sort(picked[(picked >= starts[j]) & (picked < starts[j + 1])] - starts[j])
            if rows.size:
                found_rows.append(self.rows[i][rows])
                found_sims.append(self.parts[i].exact_sims(q16, rows))
        return set(which)
