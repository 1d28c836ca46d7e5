"""The vector index's file format: one file of keys and float16 vectors, plus its companions.

Vectors are L2-normalised in float32 and stored as float16 (half the memory, enough for a
cosine ranking: the f16 results match f32 ground truth exactly). Keys are int64. The file is
little-endian::

    0   8s  magic  b"RLVECIDX"
    8   u4  format version (1)
    12  u4  dim
    16  u8  n (number of vectors)
    24  u8  offset of keys   (int64[n])
    32  u8  offset of vectors (float16[n, dim], 64-byte aligned)
    40  u8  stamp of the int8 companion (0: none)
    48  ... zero padding to 64

so a view memory-maps both arrays read-only and a warm start reads nothing up front. The
companions, int8 codes (:class:`core.vectors.scan.Int8Scan`, ``<file>.<stamp:016x>.i8``) and
sign bits (:class:`core.vectors.scan.SignBits`, ``<file>.<stamp:016x>.b1``), are written
first, under a random stamp then written into the header: a reader finds the companions of
exactly these vectors, or none. Files written before the sign bits existed have only the
``.i8``; a reader then picks candidates with the int8 codes alone.
"""

from __future__ import annotations

import glob
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..base.atomic import atomic_write, fsync_dir
from .scan import Int8Scan, SignBits

_MAGIC = b"RLVECIDX"
_VERSION = 1
_HEADER = struct.Struct("<8sIIQQQQ")
_HEADER_SIZE = 64
_ALIGN = 64
_COMPANION = ".i8"
_BITS = ".b1"


@dataclass
class Stored:
    """What :func:`read` found: the arrays (memory maps for a view) and the companion's path."""

    dim: int
    keys: np.ndarray
    vecs: np.ndarray
    companion: Path | None
    bits: Path | None = None


def _align(offset: int) -> int:
    return (offset + _ALIGN - 1) // _ALIGN * _ALIGN


def companion_path(path: Path, stamp: int, suffix: str = _COMPANION) -> Path:
    """Where the int8 companion (or, with ``suffix`` ``.b1``, the sign bits) of the vectors
    saved at ``path`` lives."""
    return path.with_name(f"{path.name}.{stamp:016x}{suffix}")


def write(path: Path, dim: int, keys: np.ndarray, vecs: np.ndarray, coarse: Int8Scan | None) -> None:
    """Write ``keys`` and their float16 ``vecs`` atomically (temp file, fsync, rename), with
    companions when there are :attr:`Int8Scan.MIN_SEGMENT` or more (the int8 codes:
    ``coarse``, when it mirrors these rows, or new ones; the sign bits) and no other companion
    of ``path`` left behind."""
    n = len(keys)
    keys_off = _HEADER_SIZE
    vecs_off = _align(keys_off + 8 * n)
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = int.from_bytes(os.urandom(8), "little") | 1 if n >= Int8Scan.MIN_SEGMENT else 0
    companion, bits = companion_path(path, stamp), companion_path(path, stamp, _BITS)
    if stamp:
        try:
            (coarse or Int8Scan(Int8Scan.encode(vecs))).save(companion)
            SignBits(SignBits.encode(vecs)).save(bits)
        except BaseException:
            companion.unlink(missing_ok=True)
            raise
    header = _HEADER.pack(_MAGIC, _VERSION, dim, n, keys_off, vecs_off, stamp)
    try:
        with atomic_write(path, chmod=0o644) as fh:
            fh.write(header.ljust(_HEADER_SIZE, b"\0"))
            fh.write(np.ascontiguousarray(keys, dtype="<i8").tobytes())
            fh.write(b"\0" * (vecs_off - keys_off - 8 * n))
            fh.write(np.ascontiguousarray(vecs, dtype="<f2").tobytes())
    except BaseException:
        if stamp:
            companion.unlink(missing_ok=True)
            bits.unlink(missing_ok=True)
        raise
    for suffix, mine in ((_COMPANION, companion), (_BITS, bits)):
        for old in path.parent.glob(f"{glob.escape(path.name)}.*{suffix}"):
            if old != mine:
                old.unlink(missing_ok=True)
    fsync_dir(path.parent)


def read(path: Path, view: bool) -> Stored:
    """The file's arrays: read-only memory maps with ``view``, else arrays in memory.

    Raises FileNotFoundError for a missing file and ValueError for one that is not a
    complete index of this format.
    """
    with path.open("rb") as fh:
        head = fh.read(_HEADER_SIZE)
        size = os.fstat(fh.fileno()).st_size
    if len(head) < _HEADER_SIZE or head[:8] != _MAGIC:
        raise ValueError(f"{path}: not a ranklens vector index")
    _magic, version, dim, n, keys_off, vecs_off, stamp = _HEADER.unpack_from(head)
    if version != _VERSION:
        raise ValueError(f"{path}: unsupported vector index version {version}")
    if dim <= 0 or keys_off < _HEADER_SIZE or vecs_off < keys_off + 8 * n:
        raise ValueError(f"{path}: corrupt vector index header")
    expected = vecs_off + 2 * n * dim
    if size != expected:
        raise ValueError(f"{path}: truncated or corrupt vector index ({size} bytes, expected {expected})")
    if n == 0:
        return Stored(dim, np.empty(0, dtype=np.int64), np.empty((0, dim), dtype=np.float16), None)
    if view:
        keys = np.memmap(path, dtype="<i8", mode="r", offset=keys_off, shape=(n,))
        vecs = np.memmap(path, dtype="<f2", mode="r", offset=vecs_off, shape=(n, dim))
    else:
        keys = np.fromfile(path, dtype="<i8", count=n, offset=keys_off).astype(np.int64, copy=False)
        vecs = np.fromfile(path, dtype="<f2", count=n * dim, offset=vecs_off).reshape(n, dim)
    if not stamp:
        return Stored(dim, keys, vecs, None)
    return Stored(dim, keys, vecs, companion_path(path, stamp), companion_path(path, stamp, _BITS))
