"""A static model's ranking alone, fast: every chunk of the span set's (and the dev split's)
repositories embedded with the candidate, each question ranked by cosine, no engine, no other
arm. For choosing among models in minutes; the engine's figures (``evals.model_check``) decide.

    python -m evals.dense_probe /tmp/candidate [/tmp/other ...]   # span set: span, in-file
    python -m evals.dense_probe --set bench /tmp/candidate        # dev split: file NDCG@10

Per model, the span set prints the span NDCG@10 of the top 10 chunks (each clipped to 80 lines,
as ``run.py --set spans``), per kind, and *in-file*: how often the answering chunk is first
among the chunks of its own file (the choice the chunk step makes), with the mean reciprocal
rank. The chunks are ranklens's own (``core.chunking.chunk_file`` over the files discovery
lists), cached per repository under ``$TMPDIR/ranklens-probe``.
"""

from __future__ import annotations

import argparse
import math
import pickle
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

from evals import codesearch, spans

CACHE = Path(tempfile.gettempdir()) / "ranklens-probe"


def repo_chunks(root: Path, name: str) -> list[tuple[str, int, int, str]]:
    """``(path, start, end, text as the dense arm embeds it)`` of every chunk of ``root``."""
    CACHE.mkdir(parents=True, exist_ok=True)
    cached = CACHE / f"{name}.pkl"
    if cached.exists():
        return pickle.loads(cached.read_bytes())
    from ranklens.core.arms.dense import document_text
    from ranklens.core.chunking import chunk_file
    from ranklens.core.discovery.listing import discover
    from ranklens.core.discovery.read import read_text

    out = []
    for entry in discover(root).files:
        text, _ = read_text(root, entry)
        if text is None:
            continue
        for c in chunk_file(entry.path, text):
            out.append((c.path, c.start_line, c.end_line, document_text(c)))
    cached.write_bytes(pickle.dumps(out))
    return out


def _overlaps(a0: int, a1: int, b0: int, b1: int) -> bool:
    return a0 <= b1 and b0 <= a1


def _same_file(a: str, b: str) -> bool:
    """run.py's match: the paths agree, or either is a "/"-suffix of the other."""
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _ndcg(found: list[int], n_targets: int, k: int = 10) -> float:
    dcg = sum(1.0 / math.log2(r + 1) for r in found)
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(k, n_targets) + 1))
    return dcg / ideal if ideal else 0.0


def _models(model_dir: Path):
    from ranklens.core.text.embedding import load_model

    model = load_model(model_dir)
    return model, model


def probe_spans(model_dir: Path, bench: Path) -> dict:
    model, qmodel = _models(model_dir)
    rows = []
    for repo in spans.load(bench):
        chunks = repo_chunks(repo.root, repo.name)
        vecs = model.encode([c[3] for c in chunks])
        by_file: dict[str, list[int]] = defaultdict(list)
        for i, c in enumerate(chunks):
            by_file[c[0]].append(i)
        queries = qmodel.encode([t.query for t in repo.tasks])
        sims = queries @ vecs.T
        for task, s in zip(repo.tasks, sims, strict=True):
            top = np.argsort(-s, kind="stable")[:10]
            found, used = [], set()
            for rank, i in enumerate(top, 1):
                p, a, b, _ = chunks[i]
                b = min(b, a + spans.MAX_SPAN - 1)
                for t, (tp, ta, tb) in enumerate(task.targets):
                    if t not in used and p == tp and _overlaps(a, b, ta, tb):
                        used.add(t)
                        found.append(rank)
                        break
            tp, ta, tb = task.targets[0]
            idx = by_file.get(tp, [])
            order = sorted(idx, key=lambda i: -s[i])
            first = next((r for r, i in enumerate(order, 1) if _overlaps(chunks[i][1], chunks[i][2], ta, tb)), None)
            rows.append(
                {
                    "repo": repo.name,
                    "kind": task.category,
                    "span": _ndcg(found, len(task.targets)),
                    "in_file_r1": float(first == 1),
                    "in_file_rr": 1.0 / first if first else 0.0,
                }
            )
    return summarise(rows)


def summarise(rows: list[dict]) -> dict:
    def mean_over_repos(sel: list[dict], key: str) -> float:
        per: dict[str, list[float]] = defaultdict(list)
        for r in sel:
            per[r["repo"]].append(r[key])
        return float(np.mean([np.mean(v) for v in per.values()])) if per else 0.0

    out = {"span": mean_over_repos(rows, "span")}
    for kind in ("paraphrase", "lexical-friendly"):
        sel = [r for r in rows if r["kind"] == kind]
        out[kind] = mean_over_repos(sel, "span")
        out[f"{kind}_in_file_r1"] = sum(r["in_file_r1"] for r in sel)
        out[f"{kind}_in_file_mrr"] = float(np.mean([r["in_file_rr"] for r in sel]))
    return out


def probe_bench(model_dir: Path, bench: Path) -> dict:
    model, qmodel = _models(model_dir)
    per_lang: dict[str, list[float]] = defaultdict(list)
    for repo in codesearch.load(bench):
        chunks = repo_chunks(repo.root, "bench-" + repo.name)
        vecs = model.encode([c[3] for c in chunks])
        queries = qmodel.encode([t.query for t in repo.tasks])
        sims = queries @ vecs.T
        scores = []
        for task, s in zip(repo.tasks, sims, strict=True):
            files: list[str] = []
            for i in np.argsort(-s, kind="stable"):
                if chunks[i][0] not in files:
                    files.append(chunks[i][0])
                if len(files) == 10:
                    break
            targets = {t[0] for t in task.targets}
            found = [r for r, f in enumerate(files, 1) if any(_same_file(f, t) for t in targets)]
            scores.append(_ndcg(found, len(targets)))
        per_lang[repo.language].append(float(np.mean(scores)))
    langs = {k: float(np.mean(v)) for k, v in sorted(per_lang.items())}
    return {"file": float(np.mean([s for v in per_lang.values() for s in v])), "by_language": langs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", type=Path)
    ap.add_argument("--set", choices=("spans", "bench", "both"), default="spans")
    ap.add_argument("--bench", default=None)
    args = ap.parse_args(argv)
    bench = codesearch.bench_dir(args.bench)
    for m in args.models:
        if args.set in ("spans", "both"):
            s = probe_spans(m, bench)
            print(
                f"{m}: span={s['span']:.3f} para={s['paraphrase']:.3f} lex={s['lexical-friendly']:.3f} "
                f"in-file r1 para={s['paraphrase_in_file_r1']:.0f}/80 lex={s['lexical-friendly_in_file_r1']:.0f}/40 "
                f"mrr para={s['paraphrase_in_file_mrr']:.3f}",
                flush=True,
            )
        if args.set in ("bench", "both"):
            b = probe_bench(m, bench)
            langs = " ".join(f"{k}={v:.2f}" for k, v in b["by_language"].items())
            print(f"{m}: bench file={b['file']:.3f}  {langs}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
