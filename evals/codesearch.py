"""The public code-search benchmark (semble's, development split) run in one process.

``../shared/bench/run.py`` runs one ``ranklens query`` process per question (about three
minutes for 420); this runs the same questions through one :class:`core.engine.Engine` per
repository and scores them with the benchmark's own metric (a port of ``run.py``: chunk
match, binary gains over relevant + secondary targets, mean over repositories), so a ranking
change is measured in seconds. Each arm's rankings are cached per question, so re-fusing
with other settings runs no arm again (:func:`collect`, then :func:`score`).

    python evals/codesearch.py                    # default settings, tables per category/language
    python evals/codesearch.py --repo gin --misses  # the questions whose target is not first
    python evals/codesearch.py --calibration core/calibration.json  # the confidence figures quoted

``--bench`` (or ``RANKLENS_BENCH``) points at the benchmark folder (default ``../shared/bench``
next to the repository); the repositories are unpacked once into ``$TMPDIR/ranklens-bench``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tarfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BENCH = ROOT.parent / "shared" / "bench"
WORK = Path(os.environ.get("TMPDIR") or "/tmp") / "ranklens-bench"


# ---------------------------------------------------------------- data
@dataclass
class Task:
    repo: str
    language: str
    category: str
    query: str
    targets: list[tuple[str, int | None, int | None]]
    #: How many of ``targets`` (the first ones) are the annotation's ``relevant`` ones; the
    #: rest are its ``secondary`` targets.
    n_relevant: int = 0
    #: The held-out set's question style: ``user`` (8-15 words, as typed into a search box)
    #: or ``long`` (its first 30 questions, 20-35 words); empty for the other sets.
    style: str = ""


@dataclass
class Repo:
    name: str
    language: str
    root: Path  # the folder searched
    checkout: Path
    tasks: list[Task] = field(default_factory=list)

    def located(self, path: str) -> str:
        """A root-relative result path made checkout-relative, as the targets are (run.py
        compares absolute paths, so a result never matches a target of another folder)."""
        prefix = self.root.relative_to(self.checkout).as_posix()
        return path if prefix == "." else f"{prefix}/{path}"


def bench_dir(given: str | None = None) -> Path:
    return Path(given or os.environ.get("RANKLENS_BENCH") or DEFAULT_BENCH).resolve()


def _target(raw) -> tuple[str, int | None, int | None]:
    if isinstance(raw, str):
        return (raw, None, None)
    s, e = raw.get("start_line"), raw.get("end_line")
    return (str(raw["path"]), None if s is None else int(s), None if e is None else int(e))


def load(bench: Path, repos: Iterable[str] = (), languages: Iterable[str] = ()) -> list[Repo]:
    """The benchmark's repositories (unpacked on first use) with their questions."""
    specs = json.loads((bench / "repos.json").read_text())
    repos_dir = WORK / "repos"
    if not all((repos_dir / s["name"]).is_dir() for s in specs):
        repos_dir.mkdir(parents=True, exist_ok=True)
        with tarfile.open(bench / "repos.tar.xz") as tar:
            tar.extractall(repos_dir, filter="data")
    want, langs = set(repos), set(languages)
    out = []
    for spec in specs:
        if (want and spec["name"] not in want) or (langs and spec["language"] not in langs):
            continue
        checkout = repos_dir / spec["name"]
        root = checkout / spec["benchmark_root"] if spec.get("benchmark_root") else checkout
        repo = Repo(spec["name"], spec["language"], root, checkout)
        for item in json.loads((bench / "annotations" / f"{spec['name']}.json").read_text()):
            relevant = [_target(t) for t in item.get("relevant", [])]
            targets = relevant + [_target(t) for t in item.get("secondary", [])]
            repo.tasks.append(Task(repo.name, repo.language, item["category"], item["query"], targets, len(relevant)))
        out.append(repo)
    return out


# ---------------------------------------------------------------- metric (as run.py)
def _path_matches(file_path: str, target: str) -> bool:
    return file_path == target or file_path.endswith("/" + target) or target.endswith("/" + file_path)


def ranks(results: Sequence[tuple[str, int, int]], targets, k: int = 10) -> list[int]:
    """Per target, the rank of the first result among the first k that matches it."""
    out = []
    for tpath, ts, te in targets:
        for i, (p, s, e) in enumerate(results[:k], 1):
            if _path_matches(p, tpath) and (ts is None or te is None or not (e < ts or s > te)):
                out.append(i)
                break
    return out


def ndcg(found: list[int], n_targets: int, k: int = 10) -> float:
    if not n_targets:
        return 0.0
    dcg = sum(1 / math.log2(r + 1) for r in found if r <= k)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, n_targets)))
    return dcg / ideal


# ---------------------------------------------------------------- running
@dataclass
class Run:
    """Every arm's ranking of every question of one repository (re-fusable)."""

    repo: Repo
    engine: object
    results: list[dict]  # per task: arm -> ArmResult
    index_s: float


def collect(
    repo: Repo, *, arms: Sequence[str] | None = None, depth: int | None = None, cache_dir: Path | None = None
) -> Run:
    """Index ``repo`` (incrementally, in ``cache_dir``) and run every arm on its questions,
    each ranking ``depth`` candidates (default: the product's, ``CANDIDATE_DEPTH``)."""
    from ranklens.core.arms import default_arms
    from ranklens.core.engine import Engine

    t0 = time.perf_counter()
    engine = Engine(repo.root, cache_dir=cache_dir)
    engine.ensure_index(deep="deep" in (arms or default_arms()))
    index_s = time.perf_counter() - t0
    names = list(arms or default_arms())
    results = []
    for task in repo.tasks:
        results.append({n: engine.run_arm(n, task.query, **({"depth": depth} if depth else {})) for n in names})
    return Run(repo, engine, results, index_s)


def hits_for(run: Run, i: int, *, top_k: int = 10, **fuse) -> list:
    arm_results = list(run.results[i].values())
    return run.engine.fuse(arm_results, top_k=top_k, query=run.repo.tasks[i].query, **fuse)


def score(runs: Sequence[Run], fuse: Mapping | Callable[[Run], Mapping] | None = None, k: int = 10) -> list[dict]:
    """Per question: its score and top k under these fusion settings (none: the engine's defaults)."""
    rows = []
    for run in runs:
        settings = fuse(run) if callable(fuse) else (fuse or {})
        for i, task in enumerate(run.repo.tasks):
            hits = hits_for(run, i, top_k=k, **settings)
            results = [(run.repo.located(h.path), h.start_line, h.end_line) for h in hits]
            found = ranks(results, task.targets, k)
            rows.append(
                {
                    "repo": task.repo,
                    "language": task.language,
                    "category": task.category,
                    "query": task.query,
                    "ndcg": ndcg(found, len(task.targets), k),
                    "ranks": found,
                    "n_targets": len(task.targets),
                    "targets": [t[0] for t in task.targets],
                    "top": [f"{p}:{s}-{e}" for p, s, e in results],
                    "hits": hits,
                }
            )
    return rows


def by_repository(rows: Sequence[dict]) -> dict[str, list[dict]]:
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_repo[r["repo"]].append(r)
    return by_repo


def macro(by_repo: Mapping[str, Sequence[dict]], key: str, pred: Callable[[dict], bool] = lambda r: True) -> float:
    """The mean over repositories of each one's mean ``key`` over its rows that ``pred`` keeps
    (the benchmark's headline: every repository weighs the same)."""
    vals = [statistics.fmean(x[key] for x in rs if pred(x)) for rs in by_repo.values() if any(pred(x) for x in rs)]
    return statistics.fmean(vals) if vals else float("nan")


def summary(rows: Sequence[dict]) -> dict:
    """Mean over repositories, overall and per category; per language; mean hit lines."""
    by_repo = by_repository(rows)

    langs: dict[str, list[float]] = defaultdict(list)
    for rs in by_repo.values():
        langs[rs[0]["language"]].append(statistics.fmean(x["ndcg"] for x in rs))
    lines = [h.end_line - h.start_line + 1 for r in rows for h in r["hits"]]
    return {
        "overall": macro(by_repo, "ndcg"),
        "by_category": {
            c: macro(by_repo, "ndcg", lambda x, c=c: x["category"] == c) for c in ("symbol", "semantic", "architecture")
        },
        "by_language": {lang: statistics.fmean(v) for lang, v in sorted(langs.items())},
        "by_repo": {name: statistics.fmean(x["ndcg"] for x in rs) for name, rs in sorted(by_repo.items())},
        "mean_hit_lines": statistics.fmean(lines) if lines else 0.0,
        "n": len(rows),
    }


def calibration(rows: Sequence[dict], runs: Sequence[Run], k: int = 10) -> dict:
    """Per confidence level, over every question's fused top ``k`` (``rows`` from
    :func:`score`): its hits, their share of all, and those that overlap a target as
    :func:`ranks` matches them (what ``core/calibration.json`` holds)."""
    located = {run.repo.name: run.repo.located for run in runs}
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    targets_of = {(t.repo, t.query): t.targets for run in runs for t in run.repo.tasks}
    for r in rows:
        targets = targets_of[(r["repo"], r["query"])]
        for h in r["hits"][:k]:
            found = counts[h.confidence]
            found[0] += 1
            found[1] += bool(ranks([(located[r["repo"]](h.path), h.start_line, h.end_line)], targets, 1))
    total = sum(n for n, _ in counts.values())
    return {
        "written_by": "python evals/codesearch.py --calibration core/calibration.json",
        "relevant_means": "the hit overlaps a target (relevant or secondary; a whole-file target: any hit in the file), as the benchmark's runner matches them",
        "measured_on": "the public code-search benchmark",
        "questions": len(rows),
        "repositories": len(runs),
        "top_k": k,
        "hits": total,
        "levels": {
            level: {"hits": n, "share": round(n / total, 4), "relevant": rel, "relevant_share": round(rel / n, 4)}
            for level in ("high", "medium", "low")
            for n, rel in [counts[level]]
            if n
        },
    }


def print_summary(label: str, s: dict) -> None:
    cats = "  ".join(f"{c}={v:.3f}" for c, v in s["by_category"].items())
    print(f"{label}: overall={s['overall']:.3f}  {cats}  lines={s['mean_hit_lines']:.1f}  n={s['n']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=None)
    ap.add_argument("--repo", action="append", default=[])
    ap.add_argument("--language", action="append", default=[])
    ap.add_argument("--arms", default=None, help="comma-separated arms (default: the default arms)")
    ap.add_argument("--no-priors", action="store_true")
    ap.add_argument("--misses", action="store_true", help="print the questions whose first target is not first")
    ap.add_argument("--json", default=None, help="write per-question rows here")
    ap.add_argument(
        "--calibration",
        default=None,
        help="write the confidence calibration here (core/calibration.json: the help, README and docs quote it)",
    )
    args = ap.parse_args(argv)
    from ranklens.core.query.config import load_config

    repos = load(bench_dir(args.bench), args.repo, args.language)
    arms = args.arms.split(",") if args.arms else None
    runs = []
    for repo in repos:
        run = collect(repo, arms=arms)
        runs.append(run)
        print(f"{repo.name:20s} {repo.language:11s} index {run.index_s:5.2f}s", file=sys.stderr)
    config = load_config(runs[0].repo.root) if runs else {}
    rows = score(runs, {"weights": config.get("weights"), "k": config.get("k", 60), "priors": not args.no_priors})
    s = summary(rows)
    print_summary("ranklens", s)
    print("by language: " + "  ".join(f"{k}={v:.3f}" for k, v in s["by_language"].items()))
    if args.misses:
        for r in rows:
            if not r["ranks"] or min(r["ranks"]) > 1:
                print(f"\n[{r['repo']}/{r['category']}] {r['query']!r} ndcg={r['ndcg']:.2f} ranks={r['ranks']}")
                print("  targets: " + ", ".join(r["targets"]))
                for t in r["top"][:5]:
                    print("   ", t)
    if args.calibration:
        cal = calibration(rows, runs)
        Path(args.calibration).write_text(json.dumps(cal, indent=1) + "\n")
        print(
            "calibration: "
            + "  ".join(
                f"{lv} {v['share']:.0%} of hits, {v['relevant_share']:.0%} relevant" for lv, v in cal["levels"].items()
            )
        )
    if args.json:
        Path(args.json).write_text(json.dumps([{k: v for k, v in r.items() if k != "hits"} for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
