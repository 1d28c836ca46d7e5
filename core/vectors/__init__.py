"""Vector index for the dense arms: cosine similarity over float16 vectors, searched exactly.

Modules: :mod:`~core.vectors.index` (:class:`VectorIndex`: add, remove, search, save, load),
:mod:`~core.vectors.storage` (the file format), :mod:`~core.vectors.scan` (the float32 and
int8 scans) and :mod:`~core.vectors._usearch` (usearch's float16 scan, and the one
import-order constraint left, with its cause).

Which scan answers
------------------
* A saved index of 20k vectors or more has an int8 companion; a view scans it with
  numkong's packed int8 dot kernel for 128 candidates (or 4 x k), re-scored exactly from the
  float16 vectors.
* Smaller indexes, filtered searches and indexes being modified scan every vector in float32
  with numpy, over a copy made on the first search.
* An index whose float32 copy would pass 512 MB (~500k vectors of 256) is scanned by
  usearch's exact float16 kernel, multi-threaded, with no copy.

Measured at 50,559 chunks x 256 (this repository's ``benchmarks/bench_engine.py`` corpus:
the Python standard library and scipy), 100 queries (the benchmark's 20 and 80 made from
definition names), ground truth the exact float32 top 30, on the 2-core machine under other
jobs (load average 3-5). CPU per query, p50:

=============================================================  ==========  =========
scan                                                           CPU         recall@30
=============================================================  ==========  =========
int8 companion, numkong packed dot + exact re-score (used)     0.24 ms     1.000
  the same through ``VectorIndex.search`` (all steps)          0.48 ms     1.000
  simsimd ``cdist`` (used before), through ``search``          0.51 ms     1.000
  numkong ``cdist`` (no packing), through ``search``           0.77 ms     1.000
float32 copy, numpy ``einsum`` (used below 20k and filtered)   1.6 ms      1.000
usearch exact, float16, ``search(exact=True)``, 1 thread       4.4 ms      1.000
usearch exact, float16, 2 threads (used past 512 MB)           2.3 ms      1.000
usearch exact, int8 companion + re-score, 1 thread             3.2 ms      1.000
usearch ``Index(i8)`` exact + re-score (needs the graph built) 0.75 ms     1.000
usearch HNSW i8, M=16 ef_add=64 ef_search=256, pool 128        0.22 ms     0.958
usearch HNSW f16, M=16 ef_add=64 ef_search=256, k=30           0.22 ms     0.955
=============================================================  ==========  =========

Packing costs ~8 ms on the first search of a view and 1.3x the codes' size in memory
(16.6 MB at 50k; peak RSS 174 MB against 157 MB with simsimd); the top 30 are the same keys
as with simsimd on 100 of 100 queries.

Design decision: exact search, no HNSW graph
--------------------------------------------
usearch's HNSW graph answers in ~0.2 ms but loses 4-5 % of the true top 30 (text queries
are out of distribution for a graph built from code chunks), must be built (1.3-2 s here
with 2 threads at M=16 ef_add=64; earlier, under heavier load, 16-51 s for recall 0.95-0.97,
8-60 % of the embedding time, against a budget of a cold index no more than 1.3x the
embedding step alone) and saved beside the vectors. Exact search costs nothing to build, is
exact (so ``allowed`` filters are exact too, with no over-fetching heuristics), loads as a
memory map in under a millisecond and answers in ~0.5 ms at 50k vectors, far inside an
interactive keystroke budget. Its cost grows linearly (~10x at ~500k vectors): that is the
size at which an HNSW layer would start to pay. usearch's exact kernels lose to the int8
scan at 50k, so usearch does the work no other scan here does without a copy: the float16
scan of an index too big for the float32 copy.
"""

from .index import SegmentedVectors, VectorIndex

__all__ = ["SegmentedVectors", "VectorIndex"]
