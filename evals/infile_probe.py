"""The in-file probe for contextual encoders: is the answering chunk first among its file's
chunks? The choice the chunk step makes, measured in minutes per candidate.

Two steps, so a candidate can be scored from the trainer's environment (torch, no ranklens
dependencies) as well as from ranklens's own (onnxruntime):

    python -m evals.infile_probe prepare            # ranklens's venv: chunks + static scores
    /work/torchenv/bin/python -m evals.infile_probe score /tmp/encA/snap-4000 [...]
    python -m evals.infile_probe score /tmp/onnx-4k     # an int8 ONNX export (scripts/export_encoder.py)

``prepare`` reads the span set (``../shared/bench/spans``) and the held-out set
(``evals/heldout``: questions in a user's words on repositories in no set and in no
training data, the answering function read by hand), chunks each question's gold file as
ranklens does, and stores per question its chunks (as the dense arm embeds them) and the
static model's cosine of each (the dense arm's in-file ranking, the baseline). ``score``
encodes the questions and chunks with each candidate and prints, per set and kind: answer
first / in the first 3 / MRR, for the encoder alone and added to the static score
(z-normalised within the file, weights :data:`MIXES`).
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

CACHE = Path(tempfile.gettempdir()) / "ranklens-probe" / "infile.pkl"
HELDOUT = Path(__file__).resolve().parent / "heldout"
MIXES = (0.5, 1.0, 2.0)


def _overlaps(a0: int, a1: int, b0: int, b1: int) -> bool:
    return a0 <= b1 and b0 <= a1


def heldout_tasks(root: Path = HELDOUT):
    """``(repo name, tree root, [task dict])`` of the held-out set whose trees are here
    (``evals/heldout/repos.json`` names each tree's repository and commit; ``--trees`` holds
    them as ``<name>/``)."""
    out = []
    meta = json.loads((root / "repos.json").read_text())
    for repo in meta:
        path = root / f"{repo['name']}.jsonl"
        if path.exists():
            out.append((repo, [json.loads(line) for line in path.read_text().splitlines() if line.strip()]))
    return out


def prepare(bench: Path, trees: Path) -> list[dict]:
    from evals import dense_probe, spans
    from ranklens.core.text.embedding import load_model

    model = load_model(None)
    rows = []

    def add(set_name: str, repo_name: str, chunks, query: str, kind: str, targets) -> None:
        tp, ta, tb = targets[0]
        mine = [c for c in chunks if c[0] == tp]
        if not any(_overlaps(c[1], c[2], ta, tb) for c in mine):
            print(f"  no chunk of {tp} holds {ta}-{tb} ({repo_name}: {query[:50]})", file=sys.stderr)
            return
        vecs = model.encode([c[3] for c in mine])
        q = model.encode([query])[0]
        rows.append(
            {
                "set": set_name,
                "repo": repo_name,
                "kind": kind,
                "query": query,
                "gold": [(ta, tb)],  # the first target, as dense_probe counts it
                "chunks": [(c[1], c[2], c[3]) for c in mine],
                "static": (vecs @ q).tolist(),
            }
        )

    for repo in spans.load(bench):
        chunks = dense_probe.repo_chunks(repo.root, repo.name)
        for t in repo.tasks:
            add("spans", repo.name, chunks, t.query, t.category, t.targets)
    for repo, tasks in heldout_tasks():
        root = trees / repo["name"]
        if not root.is_dir():
            print(f"  held-out tree {root} missing: skipped", file=sys.stderr)
            continue
        chunks = dense_probe.repo_chunks(root, "heldout-" + repo["name"])
        for t in tasks:
            targets = [(g["path"], g["start_line"], g["end_line"]) for g in t["gold"]]
            # the short questions (``"style": "user"``) apart, so the first 30's figures keep their meaning
            set_name = "heldout-user" if t.get("style") == "user" else "heldout"
            add(set_name, repo["name"], chunks, t["query"], t["kind"], targets)
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    CACHE.write_bytes(pickle.dumps(rows))
    return rows


def first_rank(scores: np.ndarray, row: dict) -> int | None:
    order = np.argsort(-scores, kind="stable")
    for r, i in enumerate(order, 1):
        s, e, _ = row["chunks"][i]
        if any(_overlaps(s, e, a, b) for a, b in row["gold"]):
            return r
    return None


def _z(x: np.ndarray) -> np.ndarray:
    sd = x.std()
    return (x - x.mean()) / sd if sd > 0 else x * 0.0


def table(rows: list[dict], scorer) -> dict:
    """``{(set, kind): (first, top3, mrr, n)}`` for ``scorer(row) -> scores``."""
    out: dict = defaultdict(lambda: [0, 0, 0.0, 0])
    for row in rows:
        r = first_rank(np.asarray(scorer(row)), row)
        cell = out[(row["set"], row["kind"])]
        cell[0] += r == 1
        cell[1] += r is not None and r <= 3
        cell[2] += 1.0 / r if r else 0.0
        cell[3] += 1
    return {k: (v[0], v[1], v[2] / v[3], v[3]) for k, v in out.items()}


def fmt(label: str, t: dict) -> str:
    cells = []
    for key in (
        ("spans", "paraphrase"),
        ("spans", "lexical-friendly"),
        ("heldout", "paraphrase"),
        ("heldout", "lexical-friendly"),
        ("heldout-user", "paraphrase"),
        ("heldout-user", "lexical-friendly"),
    ):
        if key in t:
            a, b, m, n = t[key]
            cells.append(f"{key[0].replace('heldout-user', 'user')[:4]}/{key[1][:4]} {a}/{n} top3 {b} mrr {m:.3f}")
    return f"{label:28s} " + " | ".join(cells)


def encoder_for(model_dir: Path):
    """``encode(texts, max_len) -> vectors`` of a torch checkpoint or an int8 ONNX folder."""
    if (model_dir / "model.onnx").exists():
        from evals.infile_encoder import InFileEncoder

        enc = InFileEncoder(model_dir)
        return lambda texts, max_len: enc.encode(texts, max_len)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    from train_encoder import Encoder

    enc = Encoder(model_dir)
    return lambda texts, max_len: enc.encode(texts, max_len)


_COMMENT = re.compile(r'^\s*(//|#|/\*|\*|--|"""|\'\'\'|///)')


def comments_first(text: str) -> str:
    """A chunk read with its most telling lines first: the breadcrumb, its comment lines, then
    the rest (so 256 tokens reach the prose a long body keeps past its first lines)."""
    head, _, body = text.partition("\n")
    lines = body.splitlines()
    said = [line for line in lines if _COMMENT.match(line)]
    return "\n".join([head, *said, *(line for line in lines if not _COMMENT.match(line))])


def score(model_dirs: list[Path], code_tokens: int, reading: str = "plain") -> None:
    rows = pickle.loads(CACHE.read_bytes())
    print(fmt("static (dense arm)", table(rows, lambda r: r["static"])), flush=True)
    for model_dir in model_dirs:
        encode = encoder_for(model_dir)
        # Several questions share a file: each distinct chunk text is encoded once.
        texts = sorted({c[2] for row in rows for c in row["chunks"]})
        read = comments_first if reading == "comments-first" else (lambda t: t)
        vec = dict(zip(texts, encode([read(t) for t in texts], code_tokens)))
        queries = encode([row["query"] for row in rows], 64)
        for row, q in zip(rows, queries):
            row["enc"] = np.stack([vec[c[2]] for c in row["chunks"]]) @ q
        print(fmt(f"{model_dir.name} alone", table(rows, lambda r: r["enc"])), flush=True)
        for w in MIXES:
            print(
                fmt(
                    f"{model_dir.name} + static w{w}",
                    table(rows, lambda r, w=w: _z(np.asarray(r["static"])) + w * _z(r["enc"])),
                ),
                flush=True,
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--bench", default=None)
    p.add_argument("--trees", type=Path, default=Path("/work/heldout/repos"), help="the held-out trees, <name>/ each")
    s = sub.add_parser("score")
    s.add_argument("models", nargs="+", type=Path)
    s.add_argument("--code-tokens", type=int, default=256)
    s.add_argument("--reading", choices=("plain", "comments-first"), default="plain", help="how a chunk is read")
    args = ap.parse_args(argv)
    if args.cmd == "prepare":
        from evals import codesearch

        rows = prepare(codesearch.bench_dir(args.bench), args.trees)
        print(f"{len(rows)} questions prepared")
        print(fmt("static (dense arm)", table(rows, lambda r: r["static"])))
    else:
        score(args.models, args.code_tokens, args.reading)
    return 0


if __name__ == "__main__":
    sys.exit(main())
