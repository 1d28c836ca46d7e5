"""A floor on the public code-search benchmark: `ranklens eval` over a slice of it, and over a
slice of its span set (questions whose gold is the function that answers: is the code shown
the answer?).

The slice (six repositories in six languages) is unpacked from the benchmark folder at test
time, never copied into this repository; where that folder is absent (a user's clone) the
test is skipped and says why. Each repository's fused nDCG@10 must stay above a floor set
just under what the shipped defaults reach, so a change that costs retrieval quality on
code ranklens has never seen cannot land unnoticed. ``RANKLENS_BENCH`` points elsewhere.
"""

from __future__ import annotations

import json
import os
import statistics
import tarfile
from pathlib import Path

import pytest
from cli_helpers import run

REPO = Path(__file__).resolve().parent.parent
BENCH = Path(os.environ.get("RANKLENS_BENCH") or REPO.parent / "shared" / "bench")

#: repository -> fused nDCG@10 floor (a little under what the defaults reach; see the README's
#: benchmark table for the figures themselves).
FLOORS = {
    "redux": 0.93,  # javascript/typescript (0.942)
    "gin": 0.84,  # go (0.848; 0.857 before ranklens's own model, issue #25)
    "fastapi": 0.80,  # python (0.805; 0.821 before)
    "phoenix": 0.93,  # elixir (0.944)
    "bats-core": 0.97,  # bash (0.982; 1.000 before)
    "telescope.nvim": 0.87,  # lua (0.882; 0.901 before)
}
#: The slice's mean must stay above this (0.901; 0.908 before).
MEAN_FLOOR = 0.89

#: The span set (``spans/<repo>.jsonl``): repository -> fused nDCG@10 floor over its 15
#: questions, as `ranklens eval` scores a span (the lines must overlap the gold function).
SPAN_FLOORS = {
    "gin": 0.45,  # go (0.483; 0.426 before ranklens's own model)
    "libuv": 0.49,  # c (0.520; 0.476 before)
    "fastapi": 0.44,  # python (0.473; 0.475 before)
    "vitest": 0.52,  # typescript (0.556; 0.468 before)
}
SPAN_MEAN_FLOOR = 0.48  # (0.508; 0.461 before)

pytestmark = pytest.mark.skipif(
    not (BENCH / "repos.tar.xz").is_file(),
    reason=f"the code-search benchmark is not at {BENCH} (set RANKLENS_BENCH); a user's clone has none",
)


@pytest.fixture(scope="module")
def slice_roots(tmp_path_factory) -> dict[str, Path]:
    """The slice's repositories unpacked into a temporary folder: name -> folder searched."""
    out = tmp_path_factory.mktemp("bench")
    specs = {r["name"]: r for r in json.loads((BENCH / "repos.json").read_text())}
    with tarfile.open(BENCH / "repos.tar.xz") as tar:
        members = [m for m in tar.getmembers() if m.name.split("/", 1)[0] in FLOORS.keys() | SPAN_FLOORS.keys()]
        tar.extractall(out, members=members, filter="data")
    roots = {}
    for name in FLOORS.keys() | SPAN_FLOORS.keys():
        spec = specs[name]
        roots[name] = out / name / spec["benchmark_root"] if spec.get("benchmark_root") else out / name
    return roots


def _fused_ndcg(questions: Path, root: Path, cache: Path) -> float:
    env = {"RANKLENS_CACHE_DIR": str(cache), "RANKLENS_DEEP": "0"}  # the default install
    out = run("eval", str(questions), "--root", str(root), "--json", env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["groups"]["all"]["rows"]["fused"]["ndcg@10"]


@pytest.mark.slow  # ~6.5 s: indexes and evaluates the benchmark slice
def test_the_benchmark_slice_stays_above_its_floors(slice_roots, tmp_path):
    scores = {
        name: _fused_ndcg(BENCH / "annotations" / f"{name}.json", slice_roots[name], tmp_path / "cache")
        for name in FLOORS
    }
    report = ", ".join(f"{n} {v:.3f} (floor {FLOORS[n]})" for n, v in scores.items())
    assert all(scores[n] >= FLOORS[n] for n in FLOORS), report
    assert statistics.fmean(scores.values()) >= MEAN_FLOOR, report


@pytest.mark.slow  # ~10 s: indexes four repositories and asks their span questions
def test_the_span_slice_stays_above_its_floors(slice_roots, tmp_path):
    scores = {
        name: _fused_ndcg(BENCH / "spans" / f"{name}.jsonl", slice_roots[name], tmp_path / "cache")
        for name in SPAN_FLOORS
    }
    report = ", ".join(f"{n} {v:.3f} (floor {SPAN_FLOORS[n]})" for n, v in scores.items())
    assert all(scores[n] >= SPAN_FLOORS[n] for n in SPAN_FLOORS), report
    assert statistics.fmean(scores.values()) >= SPAN_MEAN_FLOOR, report
