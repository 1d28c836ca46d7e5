"""Dense-arm benchmark: embedding throughput, exact vs HNSW vector search.

    python benchmarks/bench_embedding.py [--chunks 50000] [--queries 200]

Corpus: 40-line windows (stride 20) of the ``.py`` files of this interpreter's standard
library (then its site-packages, if more chunks are needed), embedded with the bundled model.
Queries: natural-language phrases made from function names found in the corpus
("parse header line"), i.e. text queries against code, as a user would type them.
Ground truth: exact float32 cosine top-k.

Prints: encode throughput (chunks/s), VectorIndex add/save/load, exact search latency
(p50/p95, 1 and 2 threads), and for a few HNSW settings (usearch, f16, cosine): build time
(also as a fraction of the embedding time), recall@k and query p50/p95.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

from ranklens.core.text.embedding import load_model
from ranklens.core.vectors import VectorIndex

HNSW_GRID = [  # (connectivity, expansion_add, expansion_search)
    (16, 40, 64),
    (16, 40, 256),
    (16, 64, 128),
    (16, 64, 256),
    (16, 128, 256),
    (8, 64, 256),
]


def corpus(n: int, window: int = 40, stride: int = 20) -> list[str]:
    roots = [Path(sysconfig.get_paths()["stdlib"]), Path(sysconfig.get_paths()["purelib"])]
    out: list[str] = []
    seen: set[Path] = set()
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if root == roots[0] and "site-packages" in path.parts:
                continue
            if path in seen:
                continue
            seen.add(path)
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            for start in range(0, max(len(lines) - window + stride, 1), stride):
                text = "\n".join(lines[start : start + window])
                if text.strip():
                    out.append(text)
                if len(out) >= n:
                    return out
    return out


def queries(texts: list[str], count: int, seed: int = 1) -> list[str]:
    names = sorted({m.group(1) for t in texts[::25] for m in re.finditer(r"def ([a-z][a-z_]{5,})\(", t)})
    rng = np.random.default_rng(seed)
    picked = rng.choice(names, size=min(count, len(names)), replace=False)
    return [" ".join(w for w in name.split("_") if w) for name in picked]


def percentiles(times: list[float]) -> str:
    ms = np.asarray(times) * 1e3
    return f"p50 {np.percentile(ms, 50):6.2f} ms  p95 {np.percentile(ms, 95):6.2f} ms"


def recall(found: list[np.ndarray], truth: np.ndarray) -> float:
    k = truth.shape[1]
    return float(np.mean([len(set(f.tolist()) & set(t.tolist())) / k for f, t in zip(found, truth)]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("-k", type=int, default=30)
    parser.add_argument("--no-hnsw", action="store_true", help="skip the HNSW comparison")
    args = parser.parse_args()
    k = args.k
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")

    t = time.perf_counter()
    texts = corpus(args.chunks)
    print(
        f"corpus: {len(texts):,} chunks, {sum(map(len, texts)) / len(texts):,.0f} chars mean "
        f"({time.perf_counter() - t:.1f} s to read)"
    )

    t = time.perf_counter()
    model = load_model()
    print(f"model: {model.name}, dim {model.dim}, loaded in {time.perf_counter() - t:.2f} s")

    t = time.perf_counter()
    vecs = model.encode(texts)
    embed_s = time.perf_counter() - t
    print(f"encode: {len(texts):,} chunks in {embed_s:.1f} s = {len(texts) / embed_s:,.0f} chunks/s")

    qtexts = queries(texts, args.queries)
    qv = model.encode(qtexts)
    qv = qv[np.linalg.norm(qv, axis=1) > 0]
    print(f"queries: {len(qv)} e.g. {qtexts[:3]}")
    truth = np.argsort(-(qv @ vecs.T), axis=1)[:, :k]

    keys = np.arange(len(vecs), dtype=np.int64)
    index = VectorIndex(model.dim)
    t = time.perf_counter()
    index.add(keys, vecs)
    add_s = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "vectors.idx"
        t = time.perf_counter()
        index.save(path)
        save_s = time.perf_counter() - t
        t = time.perf_counter()
        viewed = VectorIndex.load(path, view=True)
        load_s = time.perf_counter() - t
        print(
            f"VectorIndex: add {add_s:.2f} s, save {save_s:.2f} s ({path.stat().st_size / 1e6:.1f} MB), "
            f"load(view) {load_s * 1e3:.1f} ms"
        )
        viewed.search(qv[0], k)  # warm the page cache
        found, times = [], []
        for q in qv:
            t = time.perf_counter()
            found.append(viewed.search(q, k)[0])
            times.append(time.perf_counter() - t)
        print(f"exact (VectorIndex, f16, mmap view): recall@{k} {recall(found, truth):.3f}  {percentiles(times)}")
        del viewed

    from usearch.index import search as usearch_search

    data16 = vecs.astype(np.float16)
    for threads in (1, 2):
        found, times = [], []
        for q in qv.astype(np.float16):
            t = time.perf_counter()
            found.append(usearch_search(data16, q, k, "cos", exact=True, threads=threads).keys)
            times.append(time.perf_counter() - t)
        print(
            f"exact (usearch f16, threads={threads}):     recall@{k} {recall(found, truth):.3f}  {percentiles(times)}"
        )

    rng = np.random.default_rng(2)
    allowed = np.sort(rng.choice(keys, size=len(keys) // 10, replace=False))
    times = []
    for q in qv:
        t = time.perf_counter()
        index.search(q, k, allowed)
        times.append(time.perf_counter() - t)
    print(f"exact with a 10% allowed filter:       {percentiles(times)}")

    if args.no_hnsw:
        return 0
    from usearch.index import Index

    built: dict[tuple[int, int], tuple[Index, float]] = {}
    for conn, ef_add, ef_search in HNSW_GRID:
        if (conn, ef_add) not in built:
            hnsw = Index(ndim=model.dim, metric="cos", dtype="f16", connectivity=conn, expansion_add=ef_add)
            t = time.perf_counter()
            hnsw.add(keys, vecs, threads=2)
            built[(conn, ef_add)] = (hnsw, time.perf_counter() - t)
        hnsw, build_s = built[(conn, ef_add)]
        hnsw.expansion_search = ef_search
        found, times = [], []
        for q in qv:
            t = time.perf_counter()
            found.append(hnsw.search(q, k, threads=1).keys)
            times.append(time.perf_counter() - t)
        print(
            f"HNSW M={conn:<2} ef_add={ef_add:<3} ef_search={ef_search:<3}: build {build_s:5.1f} s "
            f"({build_s / embed_s:4.0%} of embedding)  recall@{k} {recall(found, truth):.3f}  {percentiles(times)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
