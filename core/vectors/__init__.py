"""Vector index for the dense arms: cosine similarity over float16 vectors, searched exactly.

(Exactly: the candidates of the int8 and sign-bit scans are re-scored from the float16
vectors; what they can lose is a true neighbour they rank below the cut, measured below.)

Modules: :mod:`~core.vectors.index` (:class:`VectorIndex`: add, remove, search, save, load),
:mod:`~core.vectors.storage` (the file format), :mod:`~core.vectors.scan` (the float32 and
int8 scans) and :mod:`~core.vectors._usearch` (usearch's float16 scan, and the one
import-order constraint left, with its cause).

Which scan answers
------------------
* A saved index (a segment) of 4,096 vectors or more has two companions: int8 codes and sign
  bits. Searching 20k rows or more (an index, or the segments searched together), a view
  scans the codes with numkong's int8 dot kernel (the query packed, the codes as they are
  mapped) for 128 candidates (or 4 x k), re-scored exactly from the float16 vectors.
* Past 131,072 rows (:attr:`~core.vectors.scan.SignBits.MIN_ROWS`: an index, or the
  segments of one searched together) the sign bits cut that scan short: the 8192 rows
  nearest by Hamming distance are the only ones the int8 codes score (with numpy), then the
  pool is re-scored exactly. An index written before the sign bits (no ``.b1``) scans every
  int8 code as above.
* Fewer rows, filtered searches and indexes being modified scan every vector in float32
  with numpy, over a copy made on the first search.
* An index whose float32 copy would pass 512 MB (~500k vectors of 256) is scanned by
  usearch's exact float16 kernel, multi-threaded, with no copy.

At 1.1M vectors: sign bits
--------------------------
The Linux 6.1 sources, 1,124,071 chunks x 256 in 35 segments, 120 questions (the 20 of
``benchmarks/bench_scale.py`` and the 100 of ``benchmarks/bench_dense.py``), ground truth the
exact float32 top 30 over every vector, on the 2-core machine shared with other jobs (load
average 2-5), ``benchmarks/bench_dense.py`` (one search, in process, after a warm-up pass;
each row in processes of its own, alternated with the others'):

=============================================================  ========  ========  =========
candidate scan (then the pool re-scored exactly)               p50       p95       recall@30
=============================================================  ========  ========  =========
sign bits -> 8192 rows -> int8 (numpy) -> pool 128 (used)      7.4 ms    8.7 ms    0.998
  the same with 4096 / 12288 / 16384 rows                      6.7-8.9   13-16     0.995-0.999
int8 codes, every row, the query packed (an older index)       33 ms     38-41 ms  1.000
int8 codes, every row, the codes packed (before)               28-31 ms  37-48 ms  1.000
=============================================================  ========  ========  =========

(the 4096-16384 row is one process under heavier load, 7.3 ms at 8192 there.) The first
search in a fresh process (``bench_dense.py``, 3 processes) took 0.31-0.69 s before
(numkong copying the 271 MB of codes into its packed layout, 1.3x their size then kept in
memory), 0.11-0.13 s for an older index now (every int8 code paged in and scanned once)
and 75-92 ms with sign bits. Those figures include, when it falls there, a garbage
collection walking the chunk tables' Python lists (45-60 ms at 1.1M chunks, in whichever
query or import it falls); collected just before, the first search takes 27-47 ms with sign
bits, 71-91 ms for an older index, 265-324 ms before (load average 4.4). What is left with
sign bits is opening the 68 companion files, the float32 copy of the one segment under 20k
vectors, and first page touches.

Choices measured on the way: sign bits of mean-centred vectors (each segment's own mean)
found fewer of the top 30 (0.995 at 4000 candidates against 0.996: the segments' means
differ by up to 0.3 and their Hamming distances stop comparing),
and one mean for all would need a centre shared by every segment of every build (the 50k
corpus gained nothing from its own); int8 codes of the first 64/96/128 PCA components
find 0.980/0.999/1.000 at 4000 candidates but their scan takes 6-8 ms (numkong) against
~3 ms for the bits, with a projection per segment to keep; numkong's Hamming kernels
(``cdist``, ``hammings_packed``) take 15-66 ms over the 36 MB of bits against ~3 ms for
numpy's ``bitwise_count`` over column-major words. numkong releases the GIL (its int8 scan
ran beside a Python thread at 70 % of that thread's speed on the loaded machine), and so do
numpy's loops here.

At 50k vectors every row's int8 code is scanned as before: the 20 questions of
``benchmarks/bench_engine.py`` and 80 made from definition names find 0.9997 of the exact top
30 (the sign bits, forced on with ``--min-rows``, 0.999).

Measured at 50,559 chunks x 256 (this repository's ``benchmarks/bench_engine.py`` corpus:
the Python standard library and scipy), 100 queries (the benchmark's 20 and 80 made from
definition names), ground truth the exact float32 top 30, on the 2-core machine under other
jobs (load average 3-5). CPU per query, p50:

=============================================================  ==========  =========
scan                                                           CPU         recall@30
=============================================================  ==========  =========
int8 companion, numkong packed dot + exact re-score (used)     0.24 ms     1.000
  (the query packed instead of the codes, used since: ~0.27 ms, no 5.7 ms packing)
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

Packing the codes cost ~8 ms on the first search of a view and 1.3x the codes' size in
memory (16.6 MB at 50k; peak RSS 174 MB against 157 MB with simsimd); the top 30 are the
same keys as with simsimd on 100 of 100 queries. The query is packed instead now (above).

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
