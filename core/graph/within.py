"""A file's own call edges: which of its units use the names another of its units defines.

The chunk step (:mod:`core.query.chunkstep`) reads them: a unit that a well-ranked unit of its
file calls is often the code that answers (the public method's docstring matches the question,
the helper it calls does the work). Name-based, as :mod:`core.graph.related` is, and from the
same inverted index of uses (:mod:`core.graph.uses`), restricted to one file's rows: one
binary search per segment for all of the file's names, then each name's rows that lie in the
file.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .edges import Edges
from .uses import name_hash

#: Per unit of a file, the units of the same file whose code uses a name it defines.
Callers = tuple[tuple[int, ...], ...]


def unit_names(symbols: Sequence[str]) -> list[str]:
    """The names a unit defines, from its chunks' symbols (each a space-separated list)."""
    return list(dict.fromkeys(n for s in symbols for n in s.split()))


def callers_within(
    edges: Edges,
    rows: np.ndarray,
    unit_of_row: np.ndarray,
    names: Sequence[Sequence[str]],
    bounds: Sequence[tuple[int, int]],
) -> Callers:
    """For each unit of a file (``names``: the names each defines; ``bounds``: its first and
    last lines), the other units of the file whose chunks use one of those names. ``rows``
    are the file's chunk rows in the view and ``unit_of_row`` each one's unit. A unit holding
    another, or held by it (a class and its method), is not its caller: its lines are the
    other's own."""
    found: list[set[int]] = [set() for _ in names]
    defining = _defining(names)
    if not defining or not len(rows):
        return tuple(() for _ in names)
    listed = list(defining)
    hashes = np.array([name_hash(n) for n in listed], dtype=np.uint64)
    chunks = edges.view.chunks
    for segment, where, local in chunks.by_segment(np.asarray(rows, dtype=np.int64)):
        uses = edges.segments[segment]
        keys = uses.keys
        if not len(keys):
            continue
        order = np.argsort(local, kind="stable")
        mine, mine_units = local[order], np.asarray(unit_of_row)[where][order]
        lo, hi = int(mine[0]), int(mine[-1])
        at = np.minimum(np.searchsorted(keys, hashes), len(keys) - 1)
        for k in np.flatnonzero(keys[at] == hashes).tolist():
            p = int(at[k])
            using = uses.rows[int(uses.indptr[p]) : int(uses.indptr[p + 1])]  # ascending
            a, b = np.searchsorted(using, (lo, hi + 1))
            using = np.asarray(using[a:b], dtype=np.int64)
            if not len(using):
                continue
            i = np.minimum(np.searchsorted(mine, using), len(mine) - 1)
            users = set(mine_units[i[mine[i] == using]].tolist())
            for callee in defining[listed[k]]:
                found[callee] |= users
    return _apart(found, bounds)


def callers_from_refs(
    unit_of_chunk: Sequence[int], refs: Sequence[str], names: Sequence[Sequence[str]], bounds: Sequence[tuple[int, int]]
) -> Callers:
    """:func:`callers_within` from each chunk's own ``refs`` (``Chunk.refs``: the names it
    defines and sets, marked, then the names it uses): what a Milvus store keeps per row."""
    defining = _defining(names)
    found: list[set[int]] = [set() for _ in names]
    for unit, spelled in zip(unit_of_chunk, refs):
        for name in (spelled or "").split():
            for callee in defining.get(name, ()):
                found[callee].add(unit)
    return _apart(found, bounds)


def _defining(names: Sequence[Sequence[str]]) -> dict[str, list[int]]:
    """Name -> the units defining it."""
    out: dict[str, list[int]] = {}
    for unit, of_unit in enumerate(names):
        for name in of_unit:
            out.setdefault(name, []).append(unit)
    return out


def _apart(found: Sequence[set[int]], bounds: Sequence[tuple[int, int]]) -> Callers:
    """``found`` (per unit, the units using its names) less itself and the units holding it or
    held by it (a class and its method: their lines are each other's own)."""

    def apart(a: int, b: int) -> bool:
        (s, e), (t, f) = bounds[a], bounds[b]
        return a != b and not (s <= t and f <= e) and not (t <= s and e <= f)

    return tuple(tuple(sorted(u for u in users if apart(u, callee))) for callee, users in enumerate(found))
