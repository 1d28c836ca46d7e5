"""Reading ``.npy``/``.npz`` files from any thread: every read of the core goes through here.

numpy parses each ``.npy`` header with ``ast.literal_eval``, and CPython 3.11's conversion of
a parse tree to ``ast`` objects keeps its recursion depth in state shared by every thread
(https://github.com/python/cpython/issues/106905): two threads parsing at once can fail with
``SystemError: AST constructor recursion depth mismatch``. The arms load their segments on
worker threads (a first search, the prewarm of every ``ensure_index``, the terminal UI's
workers), so each load here holds one process-wide lock. A memory-mapped load only parses
the header and maps the file (~80 µs here, the lock adding nothing measurable); the arrays
read whole are small (tombstones, a postings' few large counts), except the indexer's and the
deep build's, which run off the query path.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import BinaryIO

import numpy as np

#: Held around every header parse (numpy's ``ast.literal_eval``) of the core's reads.
HEADER_LOCK = threading.Lock()


def load(path: Path | str | BinaryIO, *, mmap: bool = False) -> np.ndarray:
    """The array saved at ``path`` (``np.save``; a path or an open binary file), memory-mapped
    read-only with ``mmap``; no pickled objects."""
    with HEADER_LOCK:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)


def load_npz(path: Path | str) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` at ``path`` (``np.savez``), read now: an ``NpzFile`` parses
    each member's header when it is first indexed, which would be outside the lock."""
    with HEADER_LOCK, np.load(path, allow_pickle=False) as z:
        return {name: z[name] for name in z.files}
