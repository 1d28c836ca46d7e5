"""The lexical arms' BM25 as sparse vectors whose inner product is the local arm's score.

Milvus's own BM25 function cannot give the local arms' rankings: its idf is
``log(1 + (N - n + 0.5) / (n + 0.5))`` (rank-bm25 drops the 1 and floors a negative idf at a
quarter of the mean; SQLite FTS5 floors it at 1e-6), Milvus Lite keeps the statistics per
segment, and they are the collection's, not a repository's. So ranklens weighs the terms
itself, and Milvus only adds up products (a ``SPARSE_FLOAT_VECTOR`` field, metric ``IP``):

- a chunk's vector holds, per term, ``tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))``, its
  term frequency (of the arm's fields, weighted as the local matrix weighs them) saturated
  and normalised by its length against its repository's average length;
- a query's vector holds, per term, its idf from the repository's document frequencies
  (times its count in the query for ``bm25`` and ``symbols``, whose matrices count a
  repeated query term again; once for ``fts5``, whose MATCH names each term once).

Their inner product is the local score, term for term. The statistics (documents, total
length, the document frequency of every term) are kept per repository and per arm by the
indexer (:class:`TermStats`, in the store's files collection); a query over several
repositories uses their sum. A term's index in the vectors is its CRC-32 (two terms of
one chunk or one query that share it are added together: a handful of pairs among a
repository's ~10^5 terms, each pair a slightly wrong score only where both meet).

``avgdl`` is fixed in the stored weights. Every chunk of a repository is weighed with one
``base`` average kept in its statistics; an update leaves the base alone until the
repository's true average has moved more than :data:`REWEIGHT_DRIFT` from it, then weighs
every chunk again (:func:`reweighed`). Between the two the ranking is BM25 with an average
length off by at most that share.
"""

from __future__ import annotations

import base64
import math
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

#: Sparse indices are uint32 (Milvus refuses 2^32 - 1); :data:`EMPTY` marks a chunk with no
#: document for an arm (Milvus refuses an empty vector); :data:`NOTHING` is a query of no
#: known term (no chunk holds it: the request still tells whether the store answers). No
#: term hashes to either.
EMPTY = 2**32 - 2
NOTHING = 2**32 - 3
_SPAN = 2**32 - 3
#: A repository's chunks are weighed again once its average length moved this much.
REWEIGHT_DRIFT = 0.02
#: FTS5's floor for an idf at or below zero (fts5_aux.c).
FTS5_IDF_FLOOR = 1e-6
#: rank-bm25's: a negative idf becomes this share of the mean idf.
EPSILON = 0.25


@dataclass(frozen=True)
class Scheme:
    """How one arm is weighed: its stored field, its BM25 constants and its idf."""

    arm: str
    field: str
    k1: float
    b: float
    idf: str  # "okapi" (rank-bm25, core.storage.bm25) or "fts5" (SQLite's bm25())


SCHEMES = {
    "bm25": Scheme("bm25", "lex", 1.5, 0.75, "okapi"),
    "fts5": Scheme("fts5", "words", 1.2, 0.75, "fts5"),
    "symbols": Scheme("symbols", "names", 1.5, 0.75, "okapi"),
}


def term_index(term: str) -> int:
    return zlib.crc32(term.encode("utf-8")) % _SPAN


def doc_counts(arm: str, chunk) -> Counter | None:
    """The chunk's term frequencies in ``arm``'s document, as the local index counts them
    (None: the arm has no document for it, as ``symbols`` for a window)."""
    from ..text.tokenize import code_tokens, identifiers

    if arm == "fts5":  # FTS5 indexes the text alone, identifiers whole
        return Counter(identifiers(chunk.text))
    if arm == "bm25":
        from ..arms.bm25 import FIELDS
    else:
        from ..arms.symbols import FIELDS, include

        if not include(chunk):
            return None
    counts: Counter = Counter()
    for name, weight in FIELDS.items():
        for token in code_tokens(getattr(chunk, name) or ""):
            counts[token] += weight
    return counts


def doc_vector(counts: Mapping[str, float] | None, avgdl: float, scheme: Scheme) -> dict[int, float]:
    """A chunk's stored weights (``{EMPTY: 1}`` when it has no document or no term)."""
    if not counts:
        return {EMPTY: 1.0}
    k1, b = scheme.k1, scheme.b
    dl = float(sum(counts.values()))
    norm = k1 * (1 - b + b * dl / avgdl) if avgdl else 0.0
    out: dict[int, float] = {}
    for term, f in counts.items():
        i = term_index(term)
        out[i] = out.get(i, 0.0) + f * (k1 + 1) / (f + norm)
    return out


def doc_length(counts: Mapping[str, float] | None) -> float:
    """The stored length: -1 for a chunk outside the arm (not counted in N)."""
    return -1.0 if counts is None else float(sum(counts.values()))


def reweighed(vector: Mapping[int, float], dl: float, old: float, new: float, scheme: Scheme) -> dict[int, float]:
    """A stored vector weighed with average length ``new`` instead of ``old``: each term's tf
    is read back from its weight (``w = tf (k1+1) / (tf + K)``), then weighed again."""
    if dl <= 0 or EMPTY in vector:
        return dict(vector)
    k1, b = scheme.k1, scheme.b
    k_old = k1 * (1 - b + b * dl / old) if old else 0.0
    k_new = k1 * (1 - b + b * dl / new) if new else 0.0
    out = {}
    for i, w in vector.items():
        room = k1 + 1 - w
        tf = w * k_old / room if room > 0 and k_old else dl  # saturated: tf hardly matters
        out[int(i)] = tf * (k1 + 1) / (tf + k_new)
    return out


class TermStats:
    """One arm's statistics over one repository's chunks (or several's, summed): the number
    of documents, their total length, the document frequency of each term index (sorted
    ``keys`` and their ``counts``), and ``base``, the average length the stored weights use."""

    def __init__(self, keys=None, counts=None, n: int = 0, total: float = 0.0, base: float = 0.0) -> None:
        self.keys = np.asarray(keys if keys is not None else [], dtype=np.uint32)
        self.counts = np.asarray(counts if counts is not None else [], dtype=np.int64)
        self.n, self.total, self.base = int(n), float(total), float(base)
        self._average_idf: float | None = None

    @property
    def avgdl(self) -> float:
        return self.total / self.n if self.n else 0.0

    def df(self, indices: Iterable[int]) -> np.ndarray:
        idx = np.asarray(list(indices), dtype=np.uint32)
        if not len(self.keys) or not idx.size:
            return np.zeros(idx.size, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.keys, idx), len(self.keys) - 1)
        return np.where(self.keys[at] == idx, self.counts[at], 0)

    @property
    def average_idf(self) -> float:
        """rank-bm25's mean idf over the terms (:meth:`core.storage.bm25.CorpusStats._average_idf`)."""
        if self._average_idf is None:
            df = self.counts[self.counts > 0].astype(np.float64)
            self._average_idf = (
                float(np.mean(np.log(self.n - df + 0.5) - np.log(df + 0.5))) if self.n and df.size else 0.0
            )
        return self._average_idf

    def idf(self, indices: list[int], kind: str) -> np.ndarray:
        df = self.df(indices).astype(np.float64)
        idf = np.log(self.n - df + 0.5) - np.log(df + 0.5)
        if kind == "fts5":
            idf[idf <= 0] = FTS5_IDF_FLOOR
        else:
            idf[idf < 0] = EPSILON * self.average_idf
        idf[df == 0] = 0.0
        return idf

    def updated(self, removed: Iterable[tuple[Iterable[int], float]], added: Iterable[tuple[Iterable[int], float]]):
        """Without the documents ``removed`` and with ``added``: ``(term indices, length)``
        pairs (a length below 0: no document, not counted)."""
        delta: Counter = Counter()
        n, total = self.n, self.total
        for sign, docs in ((-1, removed), (1, added)):
            for indices, dl in docs:
                if dl < 0:
                    continue
                n += sign
                total += sign * dl
                for i in set(indices):
                    if i != EMPTY:
                        delta[int(i)] += sign
        df = dict(zip(self.keys.tolist(), self.counts.tolist()))
        for i, d in delta.items():
            df[i] = df.get(i, 0) + d
        keys = np.array(sorted(k for k, c in df.items() if c > 0), dtype=np.uint32)
        counts = np.array([df[int(k)] for k in keys], dtype=np.int64)
        return TermStats(keys, counts, max(n, 0), max(total, 0.0), self.base)

    @classmethod
    def summed(cls, parts: list[TermStats]) -> TermStats:
        if len(parts) == 1:
            return parts[0]
        keys = np.concatenate([p.keys for p in parts]) if parts else np.empty(0, dtype=np.uint32)
        counts = np.concatenate([p.counts for p in parts]) if parts else np.empty(0, dtype=np.int64)
        uniq, inverse = np.unique(keys, return_inverse=True)
        return cls(
            uniq,
            np.bincount(inverse, weights=counts, minlength=len(uniq)).astype(np.int64),
            sum(p.n for p in parts),
            sum(p.total for p in parts),
        )

    def header(self) -> dict:
        return {"n": self.n, "total": self.total, "base": self.base}

    def blob(self) -> str:
        raw = self.keys.astype("<u4").tobytes() + self.counts.astype("<u4").tobytes()
        return base64.b64encode(zlib.compress(raw, 6)).decode("ascii")

    @classmethod
    def from_blob(cls, header: Mapping, blob: str) -> TermStats:
        raw = zlib.decompress(base64.b64decode(blob)) if blob else b""
        half = len(raw) // 2
        keys = np.frombuffer(raw[:half], dtype="<u4")
        counts = np.frombuffer(raw[half:], dtype="<u4").astype(np.int64)
        return cls(keys, counts, header["n"], header["total"], header.get("base", 0.0))


class TermsDf:
    """Document frequencies by term, as the local ``fts5`` arm's common-terms list answers
    them (``df.get(term, default)``), from a :class:`TermStats`."""

    def __init__(self, stats: TermStats) -> None:
        self.stats = stats

    def get(self, term: str, default: int = 0) -> int:
        found = int(self.stats.df([term_index(term)])[0])
        return found if found else default


def query_vector(arm: str, query: str, stats: TermStats) -> dict[int, float]:
    """The query's weights: the idf of each of its terms the searched chunks hold (times its
    count for ``bm25`` and ``symbols``); {} when it has none."""
    from ..text.tokenize import code_tokens

    scheme = SCHEMES[arm]
    if arm == "fts5":  # its distinct identifiers, the common ones left out as locally
        from ..arms.fts5 import _kept_terms

        counts = Counter(_kept_terms(query, {"n": stats.n, "df": TermsDf(stats)}))
    elif arm == "symbols":  # a question's words joined as an identifier too, as locally
        from ..text.tokenize import query_terms

        counts = Counter(query_terms(query, lambda terms: (stats.df([term_index(t) for t in terms]) > 0).tolist()))
    else:
        counts = Counter(code_tokens(query))
    if not counts or not stats.n:
        return {}
    indices = [term_index(t) for t in counts]
    idf = stats.idf(indices, scheme.idf)
    out: dict[int, float] = {}
    for i, w, c in zip(indices, idf.tolist(), counts.values()):
        if w and math.isfinite(w):
            out[i] = out.get(i, 0.0) + w * c
    return out
