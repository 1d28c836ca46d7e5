"""Vector index for the dense arm: cosine similarity over float16 vectors, searched exactly.

An index of 20k vectors or more is saved with an int8 companion (:class:`_Coarse`, scanned
with simsimd's SIMD kernel) that picks 128 candidates (or 4 x k), re-scored exactly from the
float16 vectors: at 50k x 256, ~2 ms of CPU against 5-7 ms for the float32 scan, with the
same top 30 as the full scan on 98 of 98 queries (recall@30 1.0 with even 100 candidates).
Smaller indexes, filtered searches and indexes being modified scan every vector, in float32
with numpy over a copy made on the first search (:class:`_Float32`), or with usearch's
float16 kernel for an index too big for that copy.

Design decision: exact search, no HNSW graph
--------------------------------------------
Measured with ``benchmarks/bench_embedding.py`` on this project's 2-core machine: 50,000 real
chunks (40-line windows, stride 20, of CPython 3.11's standard library ``.py`` files, 1,442
chars mean) embedded with the bundled model (256-d); 200 natural-language queries made from
function names in the corpus ("test make socket transport", "parse header line" …); ground
truth = exact float32 top 30. The machine was shared with other jobs (load average 3-5 on 2
cores), so absolute times are noisy; a first run at 42,194 chunks under lighter load is in
brackets.

==========================================  ================  =========  ==================
step                                        time              recall@30  query p50 / p95
==========================================  ================  =========  ==================
embedding the chunks (the step to compare)  82 s (609/s)      -          -
                                            [68 s, 624/s]
VectorIndex add / save / load(view)         0.45 s / 0.14 s   -          -
                                            / 0.8 ms
exact, VectorIndex (usearch f16, mmap)      no build          0.999      14 / 25 ms
                                                                         [8.0 / 8.9 ms]
exact, 10 % ``allowed`` filter              no build          exact      11 / 23 ms
HNSW M=16 ef_add=40, ef_search=64           16 s (19 %)       0.79       0.25 / 0.7 ms
                                            [3.8 s]           [0.82]
HNSW M=16 ef_add=40, ef_search=256          16 s (19 %)       0.93       0.7 / 9 ms
HNSW M=16 ef_add=64, ef_search=256          23 s (28 %)       0.95       1.3 / 5.6 ms
                                            [5.4 s]           [0.95]
HNSW M=16 ef_add=128 (default), ef_s=256    51 s (62 %)       0.97       1.8 / 6.8 ms
                                            [16.5 s]          [0.97]
HNSW M=8  ef_add=64, ef_search=256          19 s (23 %)       0.93       1.2 / 5.9 ms
==========================================  ================  =========  ==================

(HNSW builds use ``threads=2``; percentages are of the embedding time.) The engine's budget
is a cold index no more than 1.3x the embedding step alone. An HNSW graph good enough to be
worth having (recall@30 >= 0.95) costs 8-60 % of the embedding time to build (under load it
competes with everything else for the 2 cores), i.e. all of that budget, and still loses
3-5 % of the true neighbours: text queries are out of distribution for a graph built from
code chunks. Exact search costs nothing to build, is exact (so ``allowed`` filters are exact
too, with no over-fetching heuristics), loads as a memory map in under a millisecond, and
answers in ~8-14 ms at 50k vectors, inside an interactive keystroke budget. Its cost grows
linearly (~100 ms at ~500k vectors): that is the size at which to add an HNSW layer.

The exact scan itself: usearch's f16 kernel took ~14 ms of CPU per query at 51,652 x 256
(8 ms wall on two threads, the second one taken from the arms running beside it). A float32
copy scanned by one single-threaded ``einsum`` takes ~5-7 ms of CPU, with recall@30 against
an exact float32 scan of 0.9997 (usearch: 0.998), the same top-30 order as usearch on 95 of
98 labeled and benchmark queries (the rest differ at near-ties), at the price of 4 bytes a
component in memory (53 MB here) and ~70 ms to make the copy on the first search.

Storage
-------
Vectors are L2-normalised in float32 and stored as float16 (half the memory, enough for a
cosine ranking: the f16 results above match f32 ground truth exactly). Keys are int64.
The file format is one little-endian file::

    0   8s  magic  b"RLVECIDX"
    8   u4  format version (1)
    12  u4  dim
    16  u8  n (number of vectors)
    24  u8  offset of keys   (int64[n])
    32  u8  offset of vectors (float16[n, dim], 64-byte aligned)
    40  ... zero padding to 64

so ``load(view=True)`` memory-maps both arrays read-only and a warm start reads nothing up
front. A view becomes an in-memory copy on its first modification.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import struct
import sys
import threading
from pathlib import Path

import numpy as np

from .atomic import atomic_write

__all__ = ["VectorIndex"]

_MAGIC = b"RLVECIDX"
_VERSION = 1
_HEADER = struct.Struct("<8sIIQQQQ")
_HEADER_SIZE = 64
_ALIGN = 64
_STORE = np.float16
#: usearch threads for one exact query: it splits the scan across cores (12 -> 8 ms on 2 cores).
_THREADS = max(1, min(os.cpu_count() or 1, 8))
#: An ``allowed`` filter covering at least this fraction of the index is answered by a
#: full search for a larger pool, then filtered; a sparser one by searching only its rows.
_DENSE_FILTER = 0.35
#: Indexes whose float32 copy would take more than this are scanned by usearch in float16.
_F32_MAX_BYTES = 512 << 20

_EMPTY_KEYS = np.empty(0, dtype=np.int64)
_EMPTY_SIMS = np.empty(0, dtype=np.float32)


def _align(offset: int) -> int:
    return (offset + _ALIGN - 1) // _ALIGN * _ALIGN


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

    ``dataset`` is the float16 matrix (scanned by usearch) or a :class:`_Float32` copy of it
    (scanned with numpy).
    """
    if isinstance(dataset, _Float32):
        return dataset.nearest(query, count)
    usearch_search = _usearch().search

    count = min(count, len(dataset))
    if count <= 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    matches = usearch_search(dataset, query, count, "cos", exact=True, threads=_THREADS)
    return matches.keys.astype(np.int64, copy=False), matches.distances.astype(np.float32, copy=False)


class _Float32:
    """A float32 copy of the stored float16 vectors and their inverse norms, scanned with numpy.

    usearch's exact f16 scan costs ~14 ms of CPU per query at 51k x 256 (on two threads, so it
    also takes the core another arm needs). One single-threaded float32 ``einsum`` over the copy
    costs ~5 ms: the same dot products of the same float16 values, summed in float32. The
    copy is made on the first search (~50-100 ms, 4 bytes a component); above
    :data:`_F32_MAX_BYTES` the index stays on usearch.
    """

    __slots__ = ("vecs", "inv_norms")

    def __init__(self, vecs16: np.ndarray) -> None:
        self.vecs = np.asarray(vecs16, dtype=np.float32)
        norms = np.sqrt(np.einsum("ij,ij->i", self.vecs, self.vecs))
        # A zero vector matches nothing (similarity 0), as in usearch.
        self.inv_norms = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)

    def __len__(self) -> int:
        return len(self.vecs)

    def subset(self, rows: np.ndarray) -> "_Float32":
        sub = _Float32.__new__(_Float32)
        sub.vecs, sub.inv_norms = self.vecs[rows], self.inv_norms[rows]
        return sub

    def similarities(self, query16: np.ndarray) -> np.ndarray | None:
        """Cosine similarity of every row to the query (None for a zero query)."""
        q = np.asarray(query16, dtype=np.float32)
        qn = float(np.sqrt(np.dot(q, q)))
        if qn == 0.0:
            return None
        # einsum, not ``@``: BLAS would spread this over every core (and keep them spinning),
        # while the other arms run on the other core.
        sims = np.einsum("ij,j->i", self.vecs, q)
        sims *= self.inv_norms
        sims *= np.float32(1.0 / qn)
        return sims

    def distances(self, query16: np.ndarray) -> np.ndarray:
        """Cosine distance of every row, as :meth:`nearest` reports it."""
        sims = self.similarities(query16)
        return np.ones(len(self.vecs), dtype=np.float32) if sims is None else (1.0 - sims).astype(np.float32)

    def nearest(self, query16: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        n = len(self.vecs)
        count = min(count, n)
        if count <= 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        sims = self.similarities(query16)
        if sims is None:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        if count < n:
            top = np.argpartition(sims, n - count)[n - count :]
            # Everything tied with the count-th similarity, so ties resolve by row.
            rows = np.flatnonzero(sims >= sims[top].min())
        else:
            rows = np.arange(n)
        rows = rows[np.lexsort((rows, -sims[rows]))][:count]
        return rows.astype(np.int64, copy=False), (1.0 - sims[rows]).astype(np.float32)


class _Coarse:
    """An int8 copy of the vectors, row for row, scanned exactly to pick candidates.

    Every row is its unit vector times :data:`SCALE`, rounded: one scale for all rows, so the
    int8 dot product ranks them as cosine would, and simsimd's int8 dot kernel (the SIMD code
    usearch runs inside, GIL released) scans 50k x 256 in ~2 ms of CPU, against ~3 ms for its
    cosine kernel, ~3.8 ms through a usearch ``Index`` and 5-7 ms for the float32 scan. The
    query is scaled to a largest component of 127 (the best int8 grid for it; its scale does
    not change the order). The ``pool`` best rows are then re-scored exactly from the
    float16 vectors, so only a true neighbour ranked below ``pool`` by the int8 scan could be
    lost: the top 30 equals the full scan's on all 98 benchmark and labeled queries. Saved as
    a ``.npy`` file, memory-mapped by a view.
    """

    #: Candidates re-scored per query: recall@30 1.0 over 98 queries at 50k chunks with 100.
    MIN_POOL = 128
    #: Smaller indexes get no companion: their float32 scan takes under ~3 ms.
    MIN_VECTORS = 20_000
    #: Unit vectors' components up to 0.75 map onto the int8 grid (the bundled model's largest
    #: is 0.65 over 50k chunks); a larger one is clipped, which only blurs the candidate scan.
    SCALE = 127 / 0.75

    __slots__ = ("codes",)

    def __init__(self, codes: np.ndarray) -> None:
        self.codes = codes  # int8 [n, dim]; row i is vector row i

    @classmethod
    def encode(cls, unit: np.ndarray) -> np.ndarray:
        """The rows' codes (``unit``: unit vectors, e.g. the stored float16 ones)."""
        unit = np.asarray(unit).reshape(-1, unit.shape[-1])
        out = np.empty(unit.shape, dtype=np.int8)
        for i in range(0, len(unit), 8192):  # bounded float32 temporaries
            part = np.asarray(unit[i : i + 8192], dtype=np.float32) * cls.SCALE
            out[i : i + 8192] = np.clip(np.rint(part), -127, 127)
        return out

    @staticmethod
    def encode_query(query: np.ndarray) -> np.ndarray:
        q = np.asarray(query, dtype=np.float32).reshape(1, -1)
        peak = float(np.abs(q).max())
        return np.rint(q * (127.0 / peak) if peak > 0 else q).astype(np.int8)

    def appended(self, vecs: np.ndarray) -> "_Coarse":
        return _Coarse(np.concatenate([self.codes, self.encode(vecs)]))

    def kept(self, keep: np.ndarray) -> "_Coarse":
        return _Coarse(self.codes[keep])

    def candidates(self, query: np.ndarray, pool: int) -> np.ndarray:
        """The ``pool`` rows nearest ``query`` by int8 dot product, in row order (needs
        :func:`_simsimd`)."""
        sims = np.asarray(_simsimd().cdist(self.encode_query(query), self.codes, metric="dot"))[0]
        return np.sort(np.argpartition(-sims, pool)[:pool])

    def save(self, path: Path) -> None:
        with atomic_write(path, chmod=0o644) as fh:
            np.save(fh, self.codes, allow_pickle=False)

    @classmethod
    def load(cls, path: Path, dim: int, n: int, view: bool) -> "_Coarse | None":
        """The companion of a vector file, or None when it is absent or does not match it
        (the vectors are then scanned without it; the next save writes a new one)."""
        try:
            codes = np.load(path, mmap_mode="r" if view else None, allow_pickle=False)
        except (OSError, ValueError):
            return None
        if codes.dtype != np.int8 or codes.shape != (n, dim):
            return None
        return cls(codes)


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
        self._f32: _Float32 | None = None  # float32 copy of rows [:_n] (see _float32)
        self._f32_lock = threading.Lock()
        self._version = 0  # bumped by every modification: a copy made before one is stale
        # int8 candidate scan (see _Coarse): mirrors rows [:_n] exactly, or is None. A view's is
        # read-only, searched, and dropped on the first modification (see _leave_view); the
        # next save builds a new one. A mutable index keeps its own in step, for saving.
        self._coarse: _Coarse | None = None
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

    def search(
        self, vector: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (keys, cosine similarities, descending). `allowed` = sorted int64 array of keys that may be returned (filters); when given, return only allowed keys.

        Results are exact. Ties are broken by key. A zero query vector matches nothing.
        ``allowed`` need not actually be sorted; keys in it that are not indexed are ignored.
        """
        k = int(k)
        with self._lock:
            if self._coarse_pending is not None:
                self._coarse = _Coarse.load(self._coarse_pending, self.dim, self._n, view=True)
                self._coarse_pending = None
            keys, vecs = self._snapshot()
            # Only a view's companion: it cannot change under a running search.
            coarse = self._coarse if self._view else None
            lookup = self._snapshot_lookup() if allowed is not None else None
            f32, version = self._f32, self._version
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
        pool = max(_Coarse.MIN_POOL, 4 * k)
        if allowed is None and coarse is not None and pool < n and _simsimd() is not None:
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

    @staticmethod
    def _search_coarse(coarse, vecs, q16, pool) -> tuple[np.ndarray, np.ndarray]:
        """The int8 scan's ``pool`` candidate rows and their exact distances, computed as
        :class:`_Float32` computes them (the same bits)."""
        rows = coarse.candidates(q16, pool)
        return rows, _Float32(vecs[rows]).distances(q16)

    def _float32(self, vecs: np.ndarray, version: int) -> _Float32:
        """The float32 copy of this snapshot, made once (kept unless the index changed since)."""
        with self._f32_lock:
            with self._lock:
                if self._f32 is not None and self._version == version:
                    return self._f32
            f32 = _Float32(vecs)
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
        subset = vecs.subset(rows) if isinstance(vecs, _Float32) else np.ascontiguousarray(vecs[rows])
        sub_rows, sub_dist = _exact(subset, q16, want)
        return rows[sub_rows], sub_dist

    # ------------------------------------------------------------------ persistence

    def save(self, path: Path) -> None:
        """atomic: write to a temp file in the same dir, fsync, os.replace"""
        path = Path(path)
        keys, vecs = self._snapshot()
        n = len(keys)
        keys_off = _HEADER_SIZE
        vecs_off = _align(keys_off + 8 * n)
        path.parent.mkdir(parents=True, exist_ok=True)
        # The int8 companion goes first, under a name stamped into this file's header: a
        # reader finds the companion of exactly these vectors, or none (then it scans them all).
        stamp = int.from_bytes(os.urandom(8), "little") | 1 if n >= _Coarse.MIN_VECTORS else 0
        companion = _companion_path(path, stamp)
        if stamp:
            with self._lock:
                coarse = self._coarse if self._n == n else None
            (coarse or _Coarse(_Coarse.encode(vecs))).save(companion)
        header = _HEADER.pack(_MAGIC, _VERSION, self.dim, n, keys_off, vecs_off, stamp)
        try:
            with atomic_write(path, chmod=0o644) as fh:
                fh.write(header.ljust(_HEADER_SIZE, b"\0"))
                fh.write(np.ascontiguousarray(keys, dtype="<i8").tobytes())
                fh.write(b"\0" * (vecs_off - keys_off - 8 * n))
                fh.write(np.ascontiguousarray(vecs, dtype="<f2").tobytes())
        except BaseException:
            if stamp:
                companion.unlink(missing_ok=True)
            raise
        for old in path.parent.glob(f"{glob.escape(path.name)}.*{_COMPANION}"):
            if old != companion:
                old.unlink(missing_ok=True)
        _fsync_dir(path.parent)

    @classmethod
    def load(cls, path: Path, *, view: bool = True) -> "VectorIndex":
        """view=True memory-maps the file read-only (warm start); view=False loads it for modification.

        Raises FileNotFoundError for a missing file and ValueError for one that is not a
        complete index of this format.
        """
        path = Path(path)
        with path.open("rb") as fh:
            head = fh.read(_HEADER_SIZE)
            size = os.fstat(fh.fileno()).st_size
        if len(head) < _HEADER_SIZE or head[:8] != _MAGIC:
            raise ValueError(f"{path}: not a ranklens vector index")
        magic, version, dim, n, keys_off, vecs_off, stamp = _HEADER.unpack_from(head)
        if version != _VERSION:
            raise ValueError(f"{path}: unsupported vector index version {version}")
        if dim <= 0 or keys_off < _HEADER_SIZE or vecs_off < keys_off + 8 * n:
            raise ValueError(f"{path}: corrupt vector index header")
        expected = vecs_off + 2 * n * dim
        if size != expected:
            raise ValueError(f"{path}: truncated or corrupt vector index ({size} bytes, expected {expected})")

        index = cls(dim)
        if n == 0:
            return index
        if view:
            keys = np.memmap(path, dtype="<i8", mode="r", offset=keys_off, shape=(n,))
            vecs = np.memmap(path, dtype="<f2", mode="r", offset=vecs_off, shape=(n, dim))
        else:
            keys = np.fromfile(path, dtype="<i8", count=n, offset=keys_off).astype(np.int64, copy=False)
            vecs = np.fromfile(path, dtype="<f2", count=n * dim, offset=vecs_off).reshape(n, dim)
        index._keys, index._vecs, index._n, index._view = keys, vecs, n, bool(view)
        if stamp and view:
            index._coarse_pending = _companion_path(path, stamp)  # opened by the first search
        elif stamp:
            index._coarse = _Coarse.load(_companion_path(path, stamp), dim, n, view=False)
        return index


def _usearch():
    """``usearch.index``, imported after onnxruntime's extension when that is installed.

    Loading onnxruntime's pybind11 module after usearch's crashes the interpreter (SIGSEGV at
    import, onnxruntime 1.32 with usearch 2.26; the other order is fine). A process that
    scans an index too big for the float32 copy and then opens the ``deep`` arm would die
    there. (simsimd, which scans the companions, is a plain C extension: either order works.)
    """
    _simsimd()
    if "usearch.index" not in sys.modules and "onnxruntime" not in sys.modules:
        try:
            found = importlib.util.find_spec("onnxruntime")
        except (ImportError, ValueError):
            found = None
        if found is not None:
            try:
                importlib.import_module("onnxruntime")
            except Exception:  # a broken onnxruntime is the deep arm's to report
                pass
    import usearch.index

    return usearch.index


_simsimd_module = None  # the module, False when unusable, None before the first call


def _simsimd():
    """``simsimd`` when its int8 kernel works in this process, else None.

    Imported after usearch's extension, simsimd's ``cdist`` refuses every input ("Input
    tensors must have matching datatypes", simsimd 6.5 with usearch 2.26; the other order is
    fine), so :func:`_usearch` imports it first; if something else imported usearch earlier,
    the probe fails and the companions are not used (the vectors are scanned in full).
    """
    global _simsimd_module
    if _simsimd_module is None:
        try:
            import simsimd

            probe = np.array([[1, 2], [3, 4]], dtype=np.int8)
            simsimd.cdist(probe[:1], probe, metric="dot")  # the kernel the scan uses
            _simsimd_module = simsimd
        except Exception:  # missing, broken, or loaded after usearch
            _simsimd_module = False
    return _simsimd_module or None


_COMPANION = ".i8"


def _companion_path(path: Path, stamp: int) -> Path:
    """Where the int8 companion (:class:`_Coarse`) of the vectors saved at ``path`` lives."""
    return path.with_name(f"{path.name}.{stamp:016x}{_COMPANION}")


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable (best effort: not every platform can open a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
