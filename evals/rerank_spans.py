"""Measure a semantic reranking or chunk step on the span set (``../shared/bench/spans``) and
the benchmark, in-process (issue #18, item 2; results in docs/appendix/eval-reranker.md).

For every question the engine answers as the CLI does (default arms, the ranking stage) with
a deep candidate list; each *variant* re-orders it and the first 10 are scored with the
benchmark's own metric (``run.py``: on the span set a result hits a gold function when the
paths agree and its first 80 lines overlap it; NDCG@10, mean over repositories), split into
paraphrase / lexical-friendly, with span@1 and the file-level figure.

Shapes of candidates (``python -m evals.rerank_spans``, the span set):

- ``top``: the first N fused hits, re-ordered by RRF of the stage rank and the model's rank
  (weight ``w``; ``model``: the model's order alone), as a reranker after the stage;
- ``files``: those plus every chunk of the first F files (a chunk step that considers every
  chunk of the chosen files), the file's rank a third RRF term (weight ``fw``);
- ``slots`` / ``fileslots``: files keep their places, each file's places filled with its own
  hits (``fileslots``: every chunk of it) in the RRF order.

Scorers: ``minilm`` (all-MiniLM-L6-v2 int8 ONNX, the ``deep`` arm's model, as a bi-encoder run
at query time over the breadcrumb and text cut at ``--tokens``), ``static`` (the ``dense``
arm's static model over the same texts; ``--text doc``: only the breadcrumb, the comment lines
and the first code line's words). Embeddings are cached in ``$TMPDIR/rerank-spans`` by text.

The shipped chunk step (``core/query/chunkstep.py``) is measured with ``python -m evals.spans``.

    python -m evals.rerank_spans --per-repo               # both scorers, every shape
    python -m evals.rerank_spans --scorer static --grid slots

The repositories are those ``run.py`` unpacked under ``$TMPDIR/ranklens-bench/repos`` (run it
once); indexes go to ``RANKLENS_CACHE_DIR``; run with ``RANKLENS_DEEP=0`` as the default
install does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"
WORK = Path(os.environ.get("TMPDIR") or "/tmp") / "ranklens-bench"
CACHE = Path(os.environ.get("TMPDIR") or "/tmp") / "rerank-spans"
MAX_SPAN = 80


def bench_module(path: Path):
    sys.path.insert(0, str(path))
    import run  # the benchmark's runner: its metric and loaders

    return run


def read_chunks(view, paths: list[str]) -> dict[str, list[tuple[int, int, str, str]]]:
    """Each path's chunks ``(start, end, context, text)`` in line order, from the index."""
    from ranklens.core.storage.store import unpack_text

    out: dict[str, list] = {}
    conn = view.connection()
    for p in paths:
        rows = conn.execute(
            "SELECT start_line, end_line, context, text FROM chunks WHERE path = ? ORDER BY start_line", (p,)
        ).fetchall()
        out[p] = [(s, e, c, unpack_text(t)) for s, e, c, t in rows]
    return out


def span_text(chunks: list[tuple[int, int, str, str]], start: int, end: int) -> str:
    """The breadcrumb and text of the chunks inside ``start..end`` (the first such chunk's
    breadcrumb; a merged hit's chunks joined)."""
    inside = [c for c in chunks if c[0] >= start and c[1] <= end] or [
        c for c in chunks if not (c[1] < start or c[0] > end)
    ]
    if not inside:
        return ""
    return inside[0][2] + "\n" + "\n".join(c[3] for c in inside)


class Embeddings:
    """Texts -> unit vectors, cached on disk by (scorer, tokens, sha1 of the text)."""

    def __init__(self, scorer: str, tokens: int) -> None:
        self.scorer, self.tokens = scorer, tokens
        CACHE.mkdir(parents=True, exist_ok=True)
        self.file = CACHE / f"{scorer}-{tokens}.npz"
        self.vecs: dict[str, np.ndarray] = {}
        if self.file.exists():
            data = np.load(self.file)
            self.vecs = dict(zip(data["keys"].tolist(), data["vecs"]))
        self._model = None
        self.dirty = False
        self.encode_ms: list[float] = []

    def model(self):
        if self._model is None:
            if self.scorer == "minilm":
                from ranklens.core.arms.deep.model import DeepEncoder

                enc = DeepEncoder(threads=2)
                enc.tokenizer.enable_truncation(self.tokens)
                self._model = lambda texts: enc.encode(texts, batch_size=8)
            else:
                from ranklens.core.text.embedding import load_model

                m = load_model(None)
                self._model = lambda texts: _unit(np.asarray(m.encode(texts), dtype=np.float32))
        return self._model

    def get(self, texts: list[str]) -> np.ndarray:
        keys = [hashlib.sha1(t.encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts) if k not in self.vecs}.items())
        if missing:
            t0 = time.perf_counter()
            vecs = self.model()([t for _, t in missing])
            self.encode_ms.append((time.perf_counter() - t0) * 1000 / len(missing))
            for (k, _), v in zip(missing, vecs):
                self.vecs[k] = v
            self.dirty = True
        return np.stack([self.vecs[k] for k in keys]) if keys else np.zeros((0, 384), np.float32)

    def save(self) -> None:
        if self.dirty:
            keys = list(self.vecs)
            np.savez(self.file, keys=np.array(keys), vecs=np.stack([self.vecs[k] for k in keys]))


COMMENT = re.compile(r"^\s*(//+|#|\*|/\*+|\"\"\"|\'\'\'|--|;+|%)")
WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def doc_view(text: str) -> str:
    """A chunk's words a paraphrase may share: the breadcrumb, its comment and docstring
    lines, and the identifiers of its first code line split into words."""
    lines = text.splitlines()
    crumb, body = (lines[0], lines[1:]) if lines else ("", [])
    comments = [ln.strip() for ln in body if COMMENT.match(ln)]
    code = next((ln for ln in body if ln.strip() and not COMMENT.match(ln)), "")
    words = " ".join(WORD.findall(crumb + " " + code)).lower()
    return "\n".join([words, *comments])


def _unit(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, n, out=np.zeros_like(x), where=n > 0)


def collect(run, repos: list[str] | None, depth: int, files: int) -> list[dict]:
    """Per question: the fused hits (``depth`` deep) and every chunk of the first ``files``
    files, with their texts. Cached in CACHE/cands.json."""
    from ranklens.core.engine import Engine

    out_file = CACHE / f"cands-{depth}-{files}.json"
    if out_file.exists():
        data = json.loads(out_file.read_text())
        return [d for d in data if not repos or d["repo"] in repos]
    specs = run.load_specs()
    run.unpack(WORK / "repos")
    tasks = run.load_span_tasks(specs)
    by_repo = defaultdict(list)
    for t in tasks:
        by_repo[t["repo"]].append(t)
    out = []
    for repo, items in sorted(by_repo.items()):
        spec = specs[repo]
        root = WORK / "repos" / repo / spec.get("benchmark_root", "")
        engine = Engine(root)
        engine.ensure_index()
        for t in items:
            t0 = time.perf_counter()
            res = engine.search(t["query"], top_k=depth)
            ms = (time.perf_counter() - t0) * 1000
            hits = res.hits
            top_files = list(dict.fromkeys(h.path for h in hits))[:files]
            chunks = read_chunks(engine.view, list(dict.fromkeys([h.path for h in hits])))
            out.append(
                {
                    "repo": repo,
                    "query": t["query"],
                    "kind": t["category"],
                    "targets": [list(x) for x in t["targets"]],
                    "search_ms": ms,
                    "hits": [
                        [h.path, h.start_line, h.end_line, span_text(chunks[h.path], h.start_line, h.end_line)]
                        for h in hits
                    ],
                    "files": {p: [[s, e, c + "\n" + x] for s, e, c, x in chunks[p]] for p in top_files},
                }
            )
        engine.close()
        print(f"collected {repo}", file=sys.stderr, flush=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    if not repos:
        out_file.write_text(json.dumps(out))
    return out


def rrf(ranks: list[dict[int, int]], weights: list[float], k: float = 10.0) -> dict[int, float]:
    score: dict[int, float] = defaultdict(float)
    for r, w in zip(ranks, weights):
        for i, rank in r.items():
            score[i] += w / (k + rank)
    return score


def variant_order(q: dict, emb: Embeddings | None, v: dict) -> list[tuple[str, int, int]]:
    """The re-ordered list of (path, start, end) for one question under variant ``v``."""
    hits = [tuple(h[:3]) for h in q["hits"]]
    if v["shape"] == "base":
        return hits[:10]
    n, w = v["n"], v["w"]
    cands: list[tuple[str, int, int, str]] = [tuple(h) for h in q["hits"][:n]]
    if v["shape"] == "files":
        seen = {(c[0], c[1], c[2]) for c in cands}
        for p in list(q["files"])[: v["files"]]:
            for s, e, text in q["files"][p]:
                inside = any(c[0] == p and c[1] <= s and e <= c[2] for c in cands)
                if (p, s, e) not in seen and not inside:
                    cands.append((p, s, e, text))
                    seen.add((p, s, e))
    if v["shape"] in ("slots", "fileslots"):
        return slot_order(q, emb, v)
    qv = emb.get([q["query"]])[0]
    view = doc_view if v.get("text") == "doc" else (lambda t: t)
    cv = emb.get([view(c[3]) for c in cands])
    sims = cv @ qv
    order_model = np.argsort(-sims, kind="stable")
    model_rank = {int(i): r for r, i in enumerate(order_model, 1)}
    fused_rank = {i: i + 1 for i in range(min(n, len(cands)))}
    ranks = [fused_rank, model_rank]
    weights = [1.0, w]
    if v["shape"] == "files":
        file_order = {p: r for r, p in enumerate(q["files"], 1)}
        ranks.append({i: file_order.get(c[0], 99) for i, c in enumerate(cands)})
        weights.append(v.get("fw", 1.0))
    if v["mix"] == "model":
        score = {i: float(sims[i]) for i in range(len(cands))}
    else:
        score = rrf(ranks, weights, v.get("k", 10.0))
    order = sorted(range(len(cands)), key=lambda i: -score.get(i, 0.0))
    out = [tuple(cands[i][:3]) for i in order]
    rest = [h for h in hits[n:] if h not in out]
    return (out + rest)[:10]


def slot_order(q: dict, emb: Embeddings, v: dict) -> list[tuple[str, int, int]]:
    """Files keep their places; each file's places among the first ``n`` hits are filled with
    its chunks in the order of RRF(stage rank inside the file, similarity rank inside the
    file). ``fileslots``: every chunk of the file is a candidate (not only its ranked hits)."""
    n, w, k = v["n"], v["w"], v.get("k", 10.0)
    hits = [tuple(h) for h in q["hits"][:n]]
    qv = emb.get([q["query"]])[0]
    by_file: dict[str, list[tuple[str, int, int, str]]] = defaultdict(list)
    for h in hits:
        by_file[h[0]].append(h)
    filled: dict[str, list[tuple[str, int, int]]] = {}
    for p, own in by_file.items():
        cands = list(own)
        if v["shape"] == "fileslots" and p in q["files"]:
            for s, e, text in q["files"][p]:
                if not any(c[1] <= s and e <= c[2] for c in cands):
                    cands.append((p, s, e, text))
        sims = emb.get([c[3] for c in cands]) @ qv
        sim_rank = {int(i): r for r, i in enumerate(np.argsort(-sims, kind="stable"), 1)}
        score = {i: w / (k + sim_rank[i]) + (1.0 / (k + i + 1) if i < len(own) else 0.0) for i in range(len(cands))}
        filled[p] = [tuple(cands[i][:3]) for i in sorted(score, key=lambda i: -score[i])]
    out, used = [], defaultdict(int)
    for h in hits:
        p = h[0]
        out.append(filled[p][used[p]])
        used[p] += 1
    return out[:10]


def score(run, q: dict, results: list[tuple[str, int, int]]) -> tuple[float, float, float]:
    targets = [tuple(t) for t in q["targets"]]
    clipped = [(p, s, min(e, s + MAX_SPAN - 1)) for p, s, e in results]
    span = run.ndcg_at_k(run.chunk_ranks(clipped, targets), len(targets), 10)
    at1 = 1.0 if run.chunk_ranks(clipped[:1], targets) else 0.0
    files = list(dict.fromkeys(p for p, _, _ in results))
    file = run.ndcg_at_k(run.file_ranks(files, targets), len({t[0] for t in targets}), 10)
    return span, at1, file


def report(run, qs: list[dict], orders: list[list], label: str, per_repo: bool) -> dict:
    rows = defaultdict(list)
    for q, o in zip(qs, orders):
        rows[q["repo"]].append((q["kind"], *score(run, q, o)))

    def mean_over_repos(pick) -> float:
        vals = [statistics.mean(pick(r)) for r in rows if pick(r)]
        return statistics.mean(vals) if vals else 0.0

    fig = {
        "span": mean_over_repos(lambda r: [x[1] for x in rows[r]]),
        "para": mean_over_repos(lambda r: [x[1] for x in rows[r] if x[0] == "paraphrase"]),
        "lex": mean_over_repos(lambda r: [x[1] for x in rows[r] if x[0] != "paraphrase"]),
        "at1": mean_over_repos(lambda r: [x[2] for x in rows[r]]),
        "file": mean_over_repos(lambda r: [x[3] for x in rows[r]]),
    }
    print(
        f"{label:44s} span {fig['span']:.3f}  para {fig['para']:.3f}  lex {fig['lex']:.3f}  "
        f"@1 {fig['at1']:.3f}  file {fig['file']:.3f}",
        flush=True,
    )
    if per_repo:
        print("    " + "  ".join(f"{r} {statistics.mean(x[1] for x in v):.2f}" for r, v in sorted(rows.items())))
    return fig


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=str(BENCH), help="the shared benchmark folder (run.py, spans/)")
    ap.add_argument("--repo", action="append", default=[])
    ap.add_argument("--scorer", action="append", default=[], help="minilm, static (default both)")
    ap.add_argument("--tokens", type=int, action="append", default=[], help="token cut (default 128)")
    ap.add_argument("--depth", type=int, default=50, help="fused hits asked of the engine")
    ap.add_argument("--files", type=int, default=5, help="files whose chunks are collected")
    ap.add_argument("--per-repo", action="store_true")
    ap.add_argument("--text", default="full", help="full: breadcrumb and text; doc: doc_view")
    ap.add_argument(
        "--grid", default="all", help="all; files: the file-step shapes only; slots: files keep their places"
    )
    args = ap.parse_args()
    run = bench_module(Path(args.bench))
    qs = collect(run, args.repo, args.depth, args.files)
    print(f"{len(qs)} questions; engine search p50 {statistics.median(q['search_ms'] for q in qs):.0f} ms")
    report(run, qs, [variant_order(q, None, {"shape": "base"}) for q in qs], "fused (the stage), no rerank", True)
    variants = []
    for n in (10, 20, 30, 50) if args.grid == "all" else ():
        for w in (0.5, 1.0, 2.0, 4.0):
            variants.append({"shape": "top", "n": n, "w": w, "mix": "rrf"})
        variants.append({"shape": "top", "n": n, "w": 1.0, "mix": "model"})
    for shape in ("slots", "fileslots"):
        for n in (10, 30, 50):
            for w in (0.5, 1.0, 2.0, 4.0):
                variants.append({"shape": shape, "n": n, "w": w, "mix": "rrf"})
    for f in (1, 3, 5) if args.grid in ("all", "files") else ():
        for n in (10, 30):
            for w, fw in ((1.0, 1.0), (2.0, 1.0), (2.0, 2.0), (4.0, 2.0), (1.0, 0.0)):
                variants.append({"shape": "files", "files": f, "n": n, "w": w, "fw": fw, "mix": "rrf"})
    for scorer in args.scorer or ["minilm", "static"]:
        for tokens in args.tokens or [128]:
            emb = Embeddings(scorer, tokens)
            for v in variants:
                v["text"] = args.text
                label = (
                    f"{scorer}/{tokens}/{args.text} "
                    + " ".join(f"{k}={x}" for k, x in v.items() if k not in ("mix", "text"))
                    + f" {v['mix']}"
                )
                orders = [variant_order(q, emb, v) for q in qs]
                report(run, qs, orders, label, args.per_repo)
                emb.save()
            if emb.encode_ms:
                print(
                    f"  {scorer}/{tokens}: {statistics.median(emb.encode_ms):.1f} ms per text encoded (median of batches)"
                )
