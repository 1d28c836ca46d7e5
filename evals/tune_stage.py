"""Choose the fusion defaults (arm weights, RRF k, the ranking stage's constants and the prior
factors) for repositories ranklens has never seen, and say how well they do on held-out ones.

The data are the public code-search benchmark's 21 repositories (``evals/codesearch.py``)
pooled with the shipped labelled sets (``evals/polyglot.jsonl`` over the polyglot fixture,
``evals/ranklens.jsonl`` over the snapshot of ranklens's sources), each set counting as one more repository.
The objective is nDCG@10 averaged over repositories (the benchmark's headline), each scored
by its own metric (the benchmark's for its repositories, :func:`core.evaluation.ndcg_at_k`
for the shipped sets).

With ``--spans`` the benchmark's span set (``evals/spans.py``: 120 questions over 8 of those
repositories whose gold is the answering function, each hit clipped to 80 lines) joins them,
each of its repositories one more unit scored by span NDCG@10, and the objective is the mean
of the two sides: the file-level units' macro and the span units' macro (a user reads the
span; a gain on one side that costs the other must pay for itself). Every question is ranked
as the product ranks it, the chunk step included (the repository's engine is its source).

Cross-validation is by repository: a fold holds whole repositories out (a repository's span
unit with its benchmark unit), coordinate ascent picks every constant on the other folds,
and the held-out repositories are scored with what it picked. The figures to quote are those
held-out ones; the defaults shipped are one more ascent on everything (in-sample, printed
for comparison only).

    python -m evals.tune_stage                 # 7 folds, prints held-out figures and the choice
    python -m evals.tune_stage --spans         # the span set too (the objective both sides)
    python -m evals.tune_stage --spans --keep-files   # ... and nothing that costs the benchmark
    python -m evals.tune_stage --folds 3 --rounds 1   # quicker
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evals import codesearch, spans
from ranklens.core.arms import DEFAULT_ARMS
from ranklens.core.engine import Engine
from ranklens.core.evaluation import load_queries, ndcg_at_k
from ranklens.core.query.config import DEFAULT_K, default_weights
from ranklens.core.query.fusion import fuse
from ranklens.core.query.labels import label_hits
from ranklens.core.query.pipeline import QueryWork, rank
from ranklens.core.query.priors import RULES, adjuster
from ranklens.core.query.ranking import DEFAULT_PARAMS, Params, Stage, rank_files
from ranklens.core.query.settings import FusionSettings

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = (
    ("polyglot", ROOT / "evals" / "polyglot.jsonl", ROOT / "tests" / "fixtures" / "polyglot"),
    ("ranklens", ROOT / "evals" / "ranklens.jsonl", ROOT / "tests" / "fixtures" / "ranklens_snapshot" / "src"),
)

#: The values coordinate ascent tries for each constant.
GRID: dict[str, tuple] = {
    "w:bm25": (0.4, 0.8, 1.2, 1.6, 2.4),
    "w:fts5": (0.0, 0.2, 0.4, 0.8, 1.2),
    "w:dense": (0.4, 0.8, 1.2, 1.6, 2.4),
    "w:symbols": (0.0, 0.4, 0.8, 1.2, 1.6),
    "k": (2.0, 5.0, 10.0, 20.0, 40.0),
    "p:definition": (0.0, 1.0, 2.0, 3.0, 5.0),
    "p:embedded_share": (0.0, 0.25, 0.5, 1.0),
    "p:stem_bonus": (1.0, 1.5, 2.0, 3.0),
    "p:path": (0.0, 0.5, 1.0, 2.0, 3.0),
    "p:file_evidence": (0.0, 0.5, 1.0, 2.0, 3.0),
    "p:diversity": (0.0, 0.1, 0.3, 0.5, 1.0),
    "p:top_file_diversity": (0.3, 0.5, 0.7, 1.0),
    "p:chunk_fused": (0.5, 1.0, 1.5, 2.0),
    "p:chunk_definition": (0.5, 1.0, 2.0),
    "p:chunk_label": (0.5, 1.0, 2.0),
    "p:chunk_declaration": (0.0, 0.25, 0.5, 1.0, 1.5),
    "p:chunk_called": (0.0, 0.1, 0.2, 0.3, 0.5),
    "p:name_coverage": (0.0, 0.25, 0.5),
    "p:coverage": (0.0, 0.1, 0.15, 0.25, 0.5),
    "p:depth": (1.0, 0.9, 0.85, 0.8, 0.7),
    "p:name_length": (1.0, 0.9, 0.85, 0.8, 0.75),
    "f:tests": (1.0, 0.5, 0.25),
    "f:examples": (1.0, 0.5, 0.25),
    "f:project-docs": (1.0, 0.5, 0.25),
    "f:non-code": (1.0, 0.5, 0.25),
}


#: The arms tuned: the default install's, or with ``--deep`` the optional arm too.
ARMS: tuple[str, ...] = DEFAULT_ARMS


def default_setting() -> dict:
    shipped = default_weights(with_deep="deep" in ARMS)
    out: dict = {f"w:{a}": shipped.get(a, 1.0) for a in ARMS}
    out["k"] = DEFAULT_K
    out.update({f"p:{f.name}": getattr(DEFAULT_PARAMS, f.name) for f in dataclasses.fields(Params)})
    out.update({f"f:{r.name}": r.factor for r in RULES if f"f:{r.name}" in GRID})
    return out


@dataclass
class Unit:
    """One repository (or shipped set): its questions, each arm's rankings, grouped once."""

    name: str
    language: str
    scorer: object  # (hits, i) -> nDCG@10
    queries: list[str]
    categories: list[str]
    works: list[QueryWork] = field(default_factory=list)
    #: The open index the chunk step reads a top file's chunks from (None: no chunk step).
    source: object = None
    #: The repository it belongs to (a fold holds a repository's units out together), and
    #: which side of the objective it counts for ("file", or "span" for the span set).
    repo: str = ""
    side: str = "file"


def _repo_unit(run: codesearch.Run, name: str, scorer, side: str) -> Unit:
    repo = run.repo
    unit = Unit(name, repo.language, scorer, [t.query for t in repo.tasks], [t.category for t in repo.tasks])
    unit.works = [
        QueryWork({a: r.hits for a, r in res.items() if r.ok}, q, check=False)
        for q, res in zip(unit.queries, run.results)
    ]
    unit.source, unit.repo, unit.side = run.engine, repo.name, side
    print(f"  {name:26s} {run.index_s:5.1f}s", file=sys.stderr)
    return unit


def collect(depth: int | None = None, with_spans: bool = False) -> list[Unit]:
    units = []
    bench = codesearch.bench_dir()
    for repo in codesearch.load(bench):
        run = codesearch.collect(repo, arms=ARMS, depth=depth)

        def scorer(hits, i, repo=repo):
            task = repo.tasks[i]
            found = codesearch.ranks([(repo.located(h.path), h.start_line, h.end_line) for h in hits], task.targets)
            return codesearch.ndcg(found, len(task.targets))

        units.append(_repo_unit(run, repo.name, scorer, "file"))
    for repo in spans.load(bench) if with_spans else ():
        run = codesearch.collect(repo, arms=ARMS, depth=depth)

        def span_scorer(hits, i, repo=repo):
            return spans.span_ndcg(hits, repo.tasks[i].targets)

        units.append(_repo_unit(run, f"{repo.name} (spans)", span_scorer, "span"))
    for name, path, root in SHIPPED:
        engine = Engine(root)
        engine.ensure_index(deep="deep" in ARMS)
        queries = [q for q in load_queries(path) if q.gold]

        def scorer(hits, i, queries=queries):
            return ndcg_at_k(hits, queries[i].gold)

        unit = Unit(name, "mixed", scorer, [q.query for q in queries], [q.kind or "-" for q in queries])
        unit.source, unit.repo = engine, name
        for q in queries:
            res = [engine.run_arm(a, q.query, **({"depth": depth} if depth else {})) for a in ARMS]
            unit.works.append(QueryWork({r.arm: r.hits for r in res if r.ok}, q.query, check=False))
        units.append(unit)
    return units


def _parts(setting: dict) -> tuple[dict, float, Params, tuple]:
    weights = {k[2:]: v for k, v in setting.items() if k.startswith("w:")}
    params = Params(**{k[2:]: v for k, v in setting.items() if k.startswith("p:")})
    rules = tuple(dataclasses.replace(r, factor=setting.get(f"f:{r.name}", r.factor)) for r in RULES)
    return weights, float(setting["k"]), params, rules


def unit_scores(unit: Unit, setting: dict) -> list[float]:
    """Every question's nDCG@10 under ``setting``. With the shipped prior factors this is the
    engine's own ranking (:func:`core.query.pipeline.rank`); other factors need the stage built
    here with those rules (then the file step and the labelled hits, as the pipeline runs them)."""
    weights, k, params, rules = _parts(setting)
    shipped = all(r.factor == s.factor for r, s in zip(rules, RULES))
    settings = FusionSettings(tuple(weights), weights, k, True, params)
    out = []
    for i, work in enumerate(unit.works):
        if shipped:
            hits = rank(work, settings, 10, unit.source)
        else:  # no chunk step: the prior factors decide files, not a file's chunks
            stage = Stage(unit.queries[i], adjuster(unit.queries[i], True, rules), params)
            fused = fuse(work.groups, weights, k)
            hits = label_hits(fused, rank_files(fused, stage), None, 10)
        out.append(unit.scorer(hits, i))
    return out


def sides(units: Sequence[Unit], setting: dict) -> dict[str, float]:
    """Each side's macro: the mean over its units of their mean score ("file", and "span"
    with the span set)."""
    out: dict[str, list[float]] = {}
    for u in units:
        out.setdefault(u.side, []).append(statistics.fmean(unit_scores(u, setting)))
    return {side: statistics.fmean(v) for side, v in out.items()}


#: With ``--keep-files``, a setting whose file side falls more than this under the start's
#: scores nothing: the span set is bought with no loss on the benchmark.
FILE_SLACK = 0.001


def ascend(
    units: Sequence[Unit], start: dict, rounds: int = 2, log=lambda *a: None, keep_files: bool = False
) -> tuple[dict, float]:
    """Coordinate ascent over :data:`GRID` from ``start``; ties keep the current value. With
    ``keep_files`` a setting scores only while its file side stays within :data:`FILE_SLACK`
    of the start's."""
    floor = sides(units, start).get("file", 0.0) - FILE_SLACK if keep_files else None

    def objective(setting: dict) -> float:
        by_side = sides(units, setting)
        if floor is not None and by_side.get("file", 0.0) < floor:
            return float("-inf")
        return statistics.fmean(by_side.values())

    best = dict(start)
    best_score = objective(best)
    for r in range(rounds):
        changed = False
        for name, values in GRID.items():
            for value in values:
                if value == best[name]:
                    continue
                trial = {**best, name: value}
                s = objective(trial)
                if s > best_score + 1e-4:
                    best, best_score, changed = trial, s, True
            log(f"    round {r + 1} {name:18s} -> {best[name]!s:6s} {best_score:.4f}")
        if not changed:
            break
    return best, best_score


def folds(units: Sequence[Unit], n: int, seed: int = 7) -> list[list[int]]:
    """``n`` folds of unit positions, a repository's units always in the same fold."""
    repos = list(dict.fromkeys(u.repo or u.name for u in units))
    random.Random(seed).shuffle(repos)
    fold_of = {r: i % n for i, r in enumerate(repos)}
    return [sorted(i for i, u in enumerate(units) if fold_of[u.repo or u.name] == f) for f in range(n)]


def _bench(units: Sequence[Unit]) -> list[Unit]:
    """The benchmark's own units (file-level; not the shipped sets, not the span set)."""
    return [u for u in units if u.language != "mixed" and u.side == "file"]


def _span_figures(units: Sequence[Unit], per: dict[str, list[float]]) -> dict:
    """The span set's macro over repositories, per kind, and per repository (empty without it)."""
    span_units = [u for u in units if u.side == "span"]
    if not span_units:
        return {}

    def kind(k: str) -> float:
        return statistics.fmean(
            statistics.fmean(v for v, c in zip(per[u.name], u.categories) if c == k) for u in span_units
        )

    return {
        "span": statistics.fmean(statistics.fmean(per[u.name]) for u in span_units),
        "lexical": kind("lexical-friendly"),
        "paraphrase": kind("paraphrase"),
        "by_repo": {u.repo: statistics.fmean(per[u.name]) for u in span_units},
    }


def report(units: Sequence[Unit], setting: dict) -> dict:
    """Per category, per language and overall (macro over the benchmark's repositories), and
    the span set's figures when it is in."""
    bench = _bench(units)
    per = {u.name: unit_scores(u, setting) for u in units}
    cats = {}
    for c in ("symbol", "semantic", "architecture"):
        vals = [
            statistics.fmean(v for v, cat in zip(per[u.name], u.categories) if cat == c)
            for u in bench
            if c in u.categories
        ]
        cats[c] = statistics.fmean(vals)
    langs: dict[str, list[float]] = {}
    for u in bench:
        langs.setdefault(u.language, []).append(statistics.fmean(per[u.name]))
    return {
        "benchmark": statistics.fmean(statistics.fmean(per[u.name]) for u in bench),
        "by_category": cats,
        "by_language": {k: statistics.fmean(v) for k, v in sorted(langs.items())},
        "shipped": {u.name: statistics.fmean(per[u.name]) for u in units if u.language == "mixed"},
        "spans": _span_figures(units, per),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--folds", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--depth", type=int, default=None, help="candidates each arm ranks (default: CANDIDATE_DEPTH)")
    ap.add_argument("--json", default=None, help="write the figures here")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument(
        "--deep", action="store_true", help="fuse the optional deep arm too (its extra installed; slow to index)"
    )
    ap.add_argument("--spans", action="store_true", help="the span set too: the objective is both sides' mean")
    ap.add_argument(
        "--keep-files",
        action="store_true",
        help="with --spans: no setting that costs the file-level side more than FILE_SLACK",
    )
    ap.add_argument("--only", default=None, help="tune only these comma-separated constants (e.g. w:bm25,w:deep,k)")
    args = ap.parse_args(argv)
    global ARMS
    if args.deep:
        ARMS = (*DEFAULT_ARMS, "deep")
        GRID["w:deep"] = (0.4, 0.8, 1.2, 1.6, 2.4)
    if args.spans:  # other prior factors rank without the chunk step (unit_scores): not comparable
        for name in [n for n in GRID if n.startswith("f:")]:
            del GRID[name]
    if args.only:
        keep = set(args.only.split(","))
        for name in [n for n in GRID if n not in keep]:
            del GRID[name]
    log = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=sys.stderr, flush=True))
    t0 = time.perf_counter()
    units = collect(args.depth, args.spans)
    log(f"collected {sum(len(u.queries) for u in units)} questions in {time.perf_counter() - t0:.0f}s")
    start = default_setting()
    held_out: dict[str, list[float]] = {}
    choices = []
    for f, test in enumerate(folds(units, args.folds)):
        train = [u for i, u in enumerate(units) if i not in test]
        chosen, train_score = ascend(train, start, args.rounds, keep_files=args.keep_files)
        choices.append(chosen)
        for i in test:
            held_out[units[i].name] = unit_scores(units[i], chosen)
        names = ", ".join(units[i].name for i in test)
        log(
            f"fold {f + 1}: train {train_score:.3f}; held out {names}: "
            + " ".join(f"{statistics.fmean(held_out[units[i].name]):.3f}" for i in test)
        )
    bench = _bench(units)
    cv = {
        "benchmark": statistics.fmean(statistics.fmean(held_out[u.name]) for u in bench),
        "by_category": {
            c: statistics.fmean(
                statistics.fmean(v for v, cat in zip(held_out[u.name], u.categories) if cat == c)
                for u in bench
                if c in u.categories
            )
            for c in ("symbol", "semantic", "architecture")
        },
        "by_repo": {u.name: statistics.fmean(held_out[u.name]) for u in units},
        "by_language": {
            lang: statistics.fmean(statistics.fmean(held_out[u.name]) for u in bench if u.language == lang)
            for lang in sorted({u.language for u in bench})
        },
        "spans": _span_figures(units, held_out),
    }
    final, _final_score = ascend(units, start, args.rounds, log, keep_files=args.keep_files)
    out = {
        "held_out": cv,
        "start": {"setting": start, **report(units, start)},
        "final": {"setting": final, **report(units, final)},
        "fold_choices": choices,
    }

    def spans_text(fig: dict) -> str:
        if not fig:
            return ""
        return f"  spans {fig['span']:.3f} (lexical {fig['lexical']:.3f}, paraphrase {fig['paraphrase']:.3f})"

    print(
        f"held out (CV by repository): benchmark {cv['benchmark']:.3f}  "
        + "  ".join(f"{c}={v:.3f}" for c, v in cv["by_category"].items())
        + spans_text(cv["spans"])
    )
    print("  held out by language: " + " ".join(f"{k}={v:.3f}" for k, v in cv["by_language"].items()))
    for name in ("start", "final"):
        fig = out[name]
        print(
            f"{name} (in-sample):  benchmark {fig['benchmark']:.3f}  shipped {fig['shipped']}"
            + spans_text(fig["spans"])
        )
    print("final setting: " + json.dumps(final))
    stable = {k: sorted({str(c[k]) for c in choices}) for k in GRID}
    print("per-fold choices: " + json.dumps(stable))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
