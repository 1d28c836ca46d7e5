"""The benchmark's span set (``../shared/bench/spans``) run in one process.

120 hand-written questions over 8 of the benchmark's repositories whose gold is the function
that answers them (80 ``paraphrase``, 40 ``lexical-friendly``). Scored as the benchmark's
``run.py --set spans`` does: each result clipped to its first 80 lines, a result hits a gold
span when the paths agree and the lines overlap, NDCG@10 with binary gains, the mean over
repositories; ``file`` is the same questions matched by file. Each arm's rankings are cached
per question, so re-fusing with other settings runs no arm again.

    python -m evals.spans                    # default settings: span, span@1, file, per kind
    python -m evals.spans --repo gin --misses
    python -m evals.spans --alternatives     # also: is the gold a hit or one of its runners-up?
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from evals import codesearch
from evals.codesearch import Repo, Run, Task, bench_dir, by_repository, collect, macro, ndcg, ranks

#: run.py's ``--max-span`` for the span set: a whole-file hit does not count as a function.
MAX_SPAN = 80


def load(bench: Path, repos: Sequence[str] = ()) -> list[Repo]:
    """The span set's repositories (unpacked with the benchmark's) and questions; a task's
    ``category`` is its kind."""
    by_name = {r.name: r for r in codesearch.load(bench)}
    out = []
    for f in sorted((bench / "spans").glob("*.jsonl")):
        items = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        if not items or (repos and items[0]["repo"] not in repos):
            continue
        base = by_name[items[0]["repo"]]
        repo = Repo(base.name, base.language, base.root, base.root)  # gold paths are root-relative
        for item in items:
            targets = [(g["path"], int(g["start_line"]), int(g["end_line"])) for g in item["gold"]]
            repo.tasks.append(Task(repo.name, repo.language, item["kind"], item["query"], targets))
        out.append(repo)
    return out


def span_ndcg(hits: Sequence, targets: Sequence[tuple[str, int, int]], k: int = 10) -> float:
    """One question's span NDCG@k, as :func:`score` and ``run.py --set spans`` give it."""
    results = [(h.path, h.start_line, min(h.end_line, h.start_line + MAX_SPAN - 1)) for h in hits[:k]]
    return ndcg(sorted(set(ranks(results, targets, k))), len(targets), k)


def score(runs: Sequence[Run], fuse: Mapping | None = None, k: int = 10) -> list[dict]:
    """Per question: span and file NDCG@k, the first span hit's rank, the top k."""
    rows = []
    for run in runs:
        for i, task in enumerate(run.repo.tasks):
            hits = codesearch.hits_for(run, i, top_k=k, **(fuse or {}))
            results = [(h.path, h.start_line, min(h.end_line, h.start_line + MAX_SPAN - 1)) for h in hits]
            found = ranks(results, task.targets, k)
            files = list(dict.fromkeys(p for p, _, _ in results))
            file_found = ranks([(p, 1, 1) for p in files], [(t[0], None, None) for t in task.targets], k)
            n = len(task.targets)  # run.py: a rank two targets share counts once; file ideal by targets
            rows.append(
                {
                    "repo": task.repo,
                    "kind": task.category,
                    "query": task.query,
                    "span": ndcg(sorted(set(found)), n, k),
                    "at1": 1.0 if found and min(found) == 1 else 0.0,
                    "file": ndcg(sorted(set(file_found)), n, k),
                    "ranks": found,
                    "gold": [f"{p}:{s}-{e}" for p, s, e in task.targets],
                    "top": [f"{p}:{s}-{e}" for p, s, e in results],
                    "lines": [h.end_line - h.start_line + 1 for h in hits],
                    "hits": hits,
                }
            )
    return rows


def summary(rows: Sequence[dict]) -> dict:
    """Means over repositories: span, span@1, file, per kind; mean hit lines."""
    by_repo = by_repository(rows)

    def mean(key: str, kind: str | None = None) -> float:
        return macro(by_repo, key, (lambda x: x["kind"] == kind) if kind else (lambda x: True))

    lines = [n for r in rows for n in r["lines"]]
    return {
        "span": mean("span"),
        "at1": mean("at1"),
        "file": mean("file"),
        "lexical": mean("span", "lexical-friendly"),
        "paraphrase": mean("span", "paraphrase"),
        "by_repo": {name: statistics.fmean(x["span"] for x in rs) for name, rs in sorted(by_repo.items())},
        "lines": statistics.fmean(lines) if lines else 0.0,
        "n": len(rows),
    }


def _touches(path: str, start: int, end: int, targets: Sequence[tuple[str, int, int]]) -> bool:
    end = min(end, start + MAX_SPAN - 1)
    return any(p == path and not (end < s or start > e) for p, s, e in targets)


def with_alternatives(runs: Sequence[Run], rows: Sequence[dict]) -> dict[str, dict[str, int]]:
    """Per kind (and ``all``), of :func:`score`'s rows: questions, those with a top-10 hit in
    a gold file (``file``), a top-10 hit on a gold span (``hit``), and a gold span a top-10
    hit shows or one of its runners-up (``alternatives``: ``ConsolidatedHit.alternatives``,
    each clipped as a hit is)."""
    targets = [t.targets for run in runs for t in run.repo.tasks]
    out: dict[str, dict[str, int]] = {}
    for row, gold in zip(rows, targets, strict=True):
        hits = row["hits"]
        hit = any(_touches(h.path, h.start_line, h.end_line, gold) for h in hits)
        alt = hit or any(_touches(h.path, a.start_line, a.end_line, gold) for h in hits for a in h.alternatives)
        in_file = any(h.path == p for h in hits for p, _s, _e in gold)
        for kind in (row["kind"], "all"):
            c = out.setdefault(kind, {"n": 0, "file": 0, "hit": 0, "alternatives": 0})
            c["n"] += 1
            c["file"] += in_file
            c["hit"] += hit
            c["alternatives"] += alt
    return out


def line(label: str, s: dict) -> str:
    return (
        f"{label}: span={s['span']:.3f} span@1={s['at1']:.3f} file={s['file']:.3f} "
        f"lexical={s['lexical']:.3f} paraphrase={s['paraphrase']:.3f} lines={s['lines']:.1f} n={s['n']}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=None)
    ap.add_argument("--repo", action="append", default=[])
    ap.add_argument("--no-priors", action="store_true")
    ap.add_argument("--misses", action="store_true", help="print the questions whose gold is not first")
    ap.add_argument(
        "--alternatives", action="store_true", help="count the gold among the top 10 hits and their runners-up"
    )
    args = ap.parse_args(argv)
    runs = []
    for repo in load(bench_dir(args.bench), args.repo):
        run = collect(repo)
        runs.append(run)
        print(f"{repo.name:20s} {repo.language:11s} index {run.index_s:5.2f}s", file=sys.stderr)
    rows = score(runs, {"priors": not args.no_priors})
    s = summary(rows)
    print(line("ranklens", s))
    print("by repo: " + "  ".join(f"{k}={v:.3f}" for k, v in s["by_repo"].items()))
    if args.alternatives:
        for kind, c in sorted(with_alternatives(runs, rows).items()):
            print(
                f"{kind:17s} of {c['n']}: gold file in the top 10 {c['file']}, gold span a hit {c['hit']}, "
                f"a hit or one of its runners-up {c['alternatives']}"
            )
    if args.misses:
        for r in rows:
            if not r["ranks"] or min(r["ranks"]) > 1:
                print(f"\n[{r['repo']}/{r['kind']}] {r['query']!r} span={r['span']:.2f} ranks={r['ranks']}")
                print("  gold: " + ", ".join(r["gold"]))
                for t in r["top"][:5]:
                    print("   ", t)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
