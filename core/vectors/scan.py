"""The two scans behind :class:`core.vectors.VectorIndex`: exact float32, and int8 candidates.

:class:`Float32Scan` is a float32 copy of the stored float16 vectors, scanned exactly with
numpy. :class:`Int8Scan` is the int8 companion of a saved index of 20k vectors or more,
scanned with numkong's packed int8 kernel to pick candidates that are then re-scored
exactly. numkong is the SIMD kernel library usearch itself runs on (a dependency of
usearch >= 2.25); see :mod:`core.vectors` for the measurements.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..base import npyfile
from ..base.atomic import atomic_write

__all__ = ["Float32Scan", "Int8Scan", "SignBits", "nearest_by_bits", "numkong"]


class Float32Scan:
    """A float32 copy of the stored float16 vectors and their inverse norms, scanned with numpy.

    usearch's exact f16 scan costs ~4.4 ms of CPU per query at 50k x 256 (see
    :mod:`core.vectors`); one single-threaded float32 ``einsum`` over the copy ~1.6 ms: the
    same dot products of the same float16 values, summed in float32. The copy is made on the
    first search (~50-100 ms, 4 bytes a component); an index too big for it stays on usearch.
    """

    __slots__ = ("vecs", "inv_norms")

    def __init__(self, vecs16: np.ndarray) -> None:
        self.vecs = np.asarray(vecs16, dtype=np.float32)
        norms = np.sqrt(np.einsum("ij,ij->i", self.vecs, self.vecs))
        # A zero vector matches nothing (similarity 0), as in usearch.
        self.inv_norms = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)

    def __len__(self) -> int:
        return len(self.vecs)

    def subset(self, rows: np.ndarray) -> Float32Scan:
        sub = Float32Scan.__new__(Float32Scan)
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


class Int8Scan:
    """An int8 copy of the vectors, row for row, scanned exactly to pick candidates.

    Every row is its unit vector times :data:`SCALE`, rounded: one scale for all rows, so the
    int8 dot product ranks them as cosine would. numkong's packed int8 dot kernel scans the
    codes as they are stored (memory-mapped), with the *query* as the packed operand: packing
    the codes instead (as before) cost a copy of them all (1.3x their size, 370 MB) on the
    first search, 0.2 s on the Linux sources (1.1M rows), for a scan ~10 % faster (28-31 ms
    there against 33 ms through the dense arm; ~0.21 ms at 32k rows against ~0.27 ms, the
    5.7 ms packing aside). The query is scaled to a largest component of 127 (the best int8 grid for it; its
    scale does not change the order). The ``pool`` best rows are then re-scored exactly from
    the float16 vectors, so only a true neighbour ranked below ``pool`` by the int8 scan could
    be lost: the top 30 equals the full scan's on all 100 benchmark queries. Saved as a
    ``.npy`` file, memory-mapped by a view.
    """

    #: Candidates re-scored per query: recall@30 1.0 over 98 queries at 50k chunks with 100.
    MIN_POOL = 128
    #: Fewer rows than this (an index, or the segments searched together) are scanned exactly
    #: in float32 (under ~1 ms) ...
    MIN_VECTORS = 20_000
    #: ... but a segment of this many rows or more gets its companion, so the tail segment
    #: of a larger index joins the others' candidate pool instead of being scanned apart (at
    #: 50k chunks a 17,800-row tail cost ~1 ms of the dense arm's 2.5).
    MIN_SEGMENT = 4_096
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

    def appended(self, vecs: np.ndarray) -> Int8Scan:
        return Int8Scan(np.concatenate([self.codes, self.encode(vecs)]))

    def kept(self, keep: np.ndarray) -> Int8Scan:
        return Int8Scan(self.codes[keep])

    def sims(self, query: np.ndarray) -> np.ndarray:
        """Every row's int8 dot product with ``query`` (needs :func:`numkong`)."""
        kernels = numkong()
        return np.asarray(kernels.dots_packed(self.codes, kernels.dots_pack(self.encode_query(query)))).reshape(-1)

    def sims_of(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The int8 dot products of ``rows`` with ``query``, as :meth:`sims` gives them, in
        float32 with numpy (exact: the sums stay below 2**24 at up to 1040 dimensions). For a
        few thousand rows this is as fast as numkong (~0.5 ms for 8192 rows of 256, gathered
        rows already paged in), and the sign-bit path then needs numpy alone."""
        q = self.encode_query(query).reshape(-1).astype(np.float32)
        return np.einsum("ij,j->i", self.codes[rows].astype(np.float32), q)

    def candidates(self, query: np.ndarray, pool: int, mask: np.ndarray | None = None) -> np.ndarray:
        """The ``pool`` rows nearest ``query`` by int8 dot product, in row order, of the rows
        ``mask`` allows (a boolean array; None: all) (needs :func:`numkong`)."""
        sims = self.sims(query)
        if mask is not None:
            allowed = np.flatnonzero(mask)
            if allowed.size <= pool:
                return allowed
            sims = sims[allowed]
            return np.sort(allowed[np.argpartition(-sims, pool)[:pool]])
        return np.sort(np.argpartition(-sims, pool)[:pool])

    def save(self, path: Path) -> None:
        with atomic_write(path, chmod=0o644) as fh:
            np.save(fh, self.codes, allow_pickle=False)

    @classmethod
    def load(cls, path: Path, dim: int, n: int, view: bool) -> Int8Scan | None:
        """The companion of a vector file, or None when it is absent or does not match it
        (the vectors are then scanned without it; the next save writes a new one)."""
        try:
            codes = npyfile.load(path, mmap=view)
        except (OSError, ValueError):
            return None
        if codes.dtype != np.int8 or codes.shape != (n, dim):
            return None
        return cls(np.asarray(codes))  # a plain array on the map: np.memmap's indexing is slow


class SignBits:
    """One bit a component, row for row: the sign of each stored unit vector's components,
    scanned by Hamming distance to pick candidates for the int8 scan in very large indexes.

    Stored column-major (``words[w, i]`` is 64-bit word ``w`` of row ``i``; 32 bytes a row at
    256 dimensions, an eighth of the int8 codes), so numpy XORs and counts the bits of one
    word of every row at a time: ~3 ms for 1.1M rows, where the int8 scan takes ~26 ms and
    numkong's own Hamming kernels 15-50 ms. The query's bits are its own signs. On the Linux
    sources (1.1M chunks) the 8192 rows nearest by Hamming distance held 99.7 % of the exact
    top 30 over 120 questions (int8 codes re-score them; sign bits of mean-centred vectors
    did no better across segments, whose means differ). Saved as a ``.npy`` file,
    memory-mapped by a view; needs numpy's ``bitwise_count`` (numpy >= 2), else unused.
    """

    #: Rows that the Hamming scan hands on to the int8 re-score, per query.
    CANDIDATES = 8192
    #: The bits pick candidates only among at least this many rows (with int8 codes); below
    #: it the int8 scan of every row is cheap (~0.27 ms at 50k) and needs no such cut.
    MIN_ROWS = 131_072

    __slots__ = ("words",)

    def __init__(self, words: np.ndarray) -> None:
        self.words = words  # uint64 [words, n]

    def __len__(self) -> int:
        return self.words.shape[1]

    @staticmethod
    def width(dim: int) -> int:
        """64-bit words a row of ``dim`` components takes."""
        return (dim + 63) // 64

    @classmethod
    def encode(cls, vecs: np.ndarray) -> np.ndarray:
        """The rows' words (``vecs``: [n, dim], any float type), column-major."""
        vecs = np.asarray(vecs).reshape(-1, vecs.shape[-1])
        n, dim = vecs.shape
        width = cls.width(dim)
        out = np.empty((width, n), dtype="<u8")
        for i in range(0, n, 8192):  # bounded temporaries
            bits = np.packbits(vecs[i : i + 8192] > 0, axis=1)
            padded = np.zeros((len(bits), width * 8), dtype=np.uint8)
            padded[:, : bits.shape[1]] = bits
            out[:, i : i + 8192] = padded.view("<u8").T
        return out

    @classmethod
    def encode_query(cls, query: np.ndarray) -> np.ndarray:
        return cls.encode(np.asarray(query).reshape(1, -1))[:, 0]

    @staticmethod
    def usable() -> bool:
        return hasattr(np, "bitwise_count")

    def distances(self, query_words: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Every row's Hamming distance (uint16, into ``out`` when given) to the query whose
        :meth:`encode_query` is ``query_words``."""
        n = len(self)
        acc = np.empty(n, dtype=np.uint16) if out is None else out
        tmp = np.empty(n, dtype="<u8")
        count = np.empty(n, dtype=np.uint8)
        for w, word in enumerate(query_words):
            np.bitwise_xor(self.words[w], word, out=tmp)
            if w:
                np.bitwise_count(tmp, out=count)
                np.add(acc, count, out=acc)
            else:
                np.bitwise_count(tmp, out=acc)
        return acc

    def save(self, path: Path) -> None:
        with atomic_write(path, chmod=0o644) as fh:
            np.save(fh, self.words, allow_pickle=False)

    @classmethod
    def load(cls, path: Path, dim: int, n: int, view: bool) -> SignBits | None:
        """The sign bits of a vector file, or None when they are absent or do not match it
        (candidates then come from the int8 scan of every row; the next save writes new ones)."""
        try:
            words = npyfile.load(path, mmap=view)
        except (OSError, ValueError):
            return None
        if words.dtype != np.dtype("<u8") or words.shape != (cls.width(dim), n):
            return None
        return cls(np.asarray(words))  # a plain array on the map: np.memmap's indexing is slow


def nearest_by_bits(distances: np.ndarray, count: int, dead: int) -> np.ndarray:
    """The positions (ascending) of the ``count`` smallest ``distances`` (uint16), never one of
    value ``dead`` (larger than any real distance); ties at the cut go to the earlier position.
    numpy's SIMD partition of 16-bit values finds the cut in ~0.2 ms at 1.1M."""
    if count >= len(distances) or count <= 0:
        return np.flatnonzero(distances < dead) if count > 0 else np.empty(0, dtype=np.int64)
    cut = int(np.partition(distances, count - 1)[count - 1])
    if cut >= dead:  # fewer than ``count`` live rows
        return np.flatnonzero(distances < dead)
    below = np.flatnonzero(distances < cut)
    at = np.flatnonzero(distances == cut)[: count - len(below)]
    return np.sort(np.concatenate([below, at]))


_numkong_module = None  # the module, False when unusable, None before the first call


def numkong():
    """``numkong`` when its packed int8 kernel works in this process, else None (the
    companions are then not used: the vectors are scanned in full)."""
    global _numkong_module
    if _numkong_module is None:
        try:
            import numkong as module

            probe = np.array([[1, 2], [3, 4]], dtype=np.int8)
            got = np.asarray(module.dots_packed(probe, module.dots_pack(probe[:1])))
            if got.tolist() != [[5], [11]]:
                raise ValueError(f"numkong's int8 kernel answered {got.tolist()}")
            _numkong_module = module
        except Exception:  # missing or broken
            _numkong_module = False
    return _numkong_module or None
