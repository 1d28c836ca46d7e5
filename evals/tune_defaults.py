"""Choose ranklens's default fusion weights and RRF k from both shipped labeled sets.

    python evals/tune_defaults.py [--folds 5] [--seed N] [--json]

Runs every question of ``evals/polyglot.jsonl`` (over ``tests/fixtures/polyglot``) and
``evals/ranklens.jsonl`` (over the snapshot of ranklens's sources in
``tests/fixtures/ranklens_snapshot``) once per arm (``--arms``, default the default
arms: ``deep`` too where its extra is installed), pools the 78 cached
rankings into one run and tunes it as ``ranklens tune`` does (coordinate ascent, priors on),
with k-fold cross-validation for the held-out figures. Prints, for the pooled set and each
set alone: every arm alone, the fused list at equal weights (k 60), the fused list at the
tuned values, and the held-out (cross-validated) fused figure beside each arm on the same
held-out queries. The defaults in ``core/config.py`` are what this printed; the README
quotes it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.arms import default_arms  # noqa: E402
from core.engine import Engine  # noqa: E402
from core.evaluation import (  # noqa: E402
    FOLDS,
    SEED,
    EvalRun,
    Setting,
    _Scorer,
    folds,
    load_queries,
    mean,
    ndcg_at_k,
    run_queries,
    tune,
)

SETS = {
    "polyglot": (ROOT / "evals" / "polyglot.jsonl", ROOT / "tests" / "fixtures" / "polyglot"),
    "ranklens": (ROOT / "evals" / "ranklens.jsonl", ROOT / "tests" / "fixtures" / "ranklens_snapshot" / "src"),
}


def pooled_run(arms: list[str]) -> tuple[EvalRun, dict[str, list[int]]]:
    """One run holding every question of both sets; set name -> its query indices."""
    runs, members, engines = [], {}, []
    for name, (path, root) in SETS.items():
        engine = Engine(root)
        engine.ensure_index()
        engines.append(engine)
        run = run_queries(engine, load_queries(path), arms=arms, priors=True)
        start = sum(len(r.queries) for r in runs)
        members[name] = list(range(start, start + len(run.queries)))
        runs.append(run)
    first = runs[0]
    pooled = EvalRun(
        queries=[q for r in runs for q in r.queries],
        arms=first.arms,
        measured=first.measured,
        weights=first.weights,
        k=first.k,
        skipped={k: v for r in runs for k, v in r.skipped.items()},
        top_k=first.top_k,
        fuse=first.fuse,  # Engine.fuse does not depend on the root
        priors=True,
    )
    return pooled, members


def arm_ndcg(run: EvalRun, arm: str, idx: list[int]) -> float:
    return mean([ndcg_at_k(run.queries[i].scored(arm) or [], run.queries[i].query.gold) for i in idx])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--folds", type=int, default=FOLDS)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--arms", default=",".join(default_arms()), help="comma-separated (default: the default arms)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    run, members = pooled_run(arms)
    result = tune(run, n_folds=args.folds, seed=args.seed)
    exact = _Scorer(run, exact=True)
    equal = Setting(tuple((a, 1.0) for a in arms), 60.0)
    tuned = Setting(tuple(result["tuned"]["weights"].items()), float(result["tuned"]["k"]))

    # Held-out: each fold's tuned setting scored on its held-out queries, every arm beside it.
    n = len(run.queries)
    held_fused, held_arms = [], {a: [] for a in arms}
    for fold, held in zip(result["cross_validation"]["per_fold"], folds(n, args.folds, args.seed)):
        setting = Setting(tuple(fold["tuned"]["weights"].items()), float(fold["tuned"]["k"]))
        held_fused += [exact.mean(setting, [i]) for i in held]
        for a in arms:
            held_arms[a] += [arm_ndcg(run, a, [i]) for i in held]

    report = {"tuned": result["tuned"], "cross_validation": {k: v for k, v in result["cross_validation"].items() if k != "per_fold"},
              "folds": [f["tuned"] for f in result["cross_validation"]["per_fold"]], "sets": {}}
    report["held_out"] = {"fused (tuned per fold)": mean(held_fused), **{a: mean(v) for a, v in held_arms.items()}}
    for name, idx in [("all", list(range(n))), *members.items()]:
        paraphrase = [i for i in idx if run.queries[i].query.kind == "paraphrase"]
        row = {}
        for label, part in (("all", idx), ("paraphrase", paraphrase)):
            row[label] = {
                **{a: arm_ndcg(run, a, part) for a in arms},
                "fused equal, k 60": exact.mean(equal, part),
                "fused tuned": exact.mean(tuned, part),
            }
        report["sets"][name] = row

    if args.json:
        print(json.dumps(report, indent=2))
        return
    t = result["tuned"]
    print(f"tuned on {n} questions: weights {t['weights']}, k {t['k']:g}")
    cv = report["cross_validation"]
    print(f"{cv['folds']}-fold CV: default held-out {cv['default_held_out']:.3f}, tuned held-out {cv['tuned_held_out']:.3f}")
    print("per-fold tuned:", "; ".join(f"{f['weights']} k {f['k']:g}" for f in report["folds"]))
    print("held-out nDCG@10, same queries: " + ", ".join(f"{k} {v:.3f}" for k, v in report["held_out"].items()))
    for name, row in report["sets"].items():
        for label, vals in row.items():
            print(f"{name:9} {label:10} " + "  ".join(f"{k} {v:.3f}" for k, v in vals.items()))


if __name__ == "__main__":
    main()
