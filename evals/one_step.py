"""How often the answer is one step away: in the hits, in their runners-up, or among the
related units (callers, callees, tests) of the answering file's first hit.

A user reads a hit; if it is the right file but not the right function, the next step is a
runner-up (``ConsolidatedHit.alternatives``) or a walk to a caller, callee or test
(``ranklens related``, the UI's neighbourhood). Per question of the span set (and of the
held-out set, where its trees are given; its rows also by style, ``user`` for the questions
marked ``"style": "user"`` (8-15 words, as typed into a search box) and ``long`` for the
rest), counted cumulatively:

* ``hit``: a top-10 hit overlaps a gold span (clipped to 80 lines, as the span set scores);
* ``+runners-up``: or a runner-up of a top-10 hit does;
* ``+related``: or a related unit of the first top-10 hit in a gold file does (the walk
  starts where ``r`` on the hit does: every definition packed in its lines, their
  neighbourhoods merged, ``related PATH:START-END``; else the unit at its first line inside a
  definition); in brackets, the same from every definition that starts inside that hit,
  nested ones too, and from every definition of the first three hits;
* ``+look-alikes``: or a top-10 hit of more-like-this from that same unit does (``query
  --like``, the UI's ``m``: the unit's names and code as the question, the unit itself left
  out), the fourth way on from a hit the walk offers.

    python -m evals.one_step                       # the span set
    python -m evals.one_step --heldout /tmp/heldout  # also the held-out trees (<name>/)
    python -m evals.one_step --heldout /tmp/heldout --heldout-only
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from evals import codesearch, spans
from evals.codesearch import Repo, Task, bench_dir, collect

HELDOUT = Path(__file__).resolve().parent / "heldout"


def _touches(path: str, start: int, end: int, gold) -> bool:
    return spans._touches(path, start, end, gold)


def related_units(engine, hit, wide: bool = False) -> list:
    """The callers, callees and tests of the unit at ``hit``'s first line inside a definition
    (``wide``: of every definition whose first line is in the hit)."""
    from ranklens.core.base.errors import RequestError
    from ranklens.core.graph.related import reading
    from ranklens.core.navigate import neighbourhood

    if wide:
        defs = reading(engine.root, hit.path).defs
        lines = [d.start_line for d in defs if hit.start_line <= d.start_line <= hit.end_line] or [hit.start_line]
    else:  # as ``r`` on the hit: its lines (every definition it packs), else its first unit
        lines = [(hit.start_line, hit.end_line), *range(hit.start_line, hit.end_line + 1)]
    out = []
    for line in lines:
        try:
            found = neighbourhood(engine, hit.path, line, limit=50)
        except RequestError:
            continue
        out += [found.unit, *found.callers, *found.callees, *found.tests]
        if not wide:
            break
    return out


def look_alikes(run, hit, top_k: int = 10) -> list:
    """The top ``top_k`` hits of more-like-this from the unit at ``hit``'s first line inside a
    definition (as ``query --like`` answers: the unit itself left out)."""
    from ranklens.core.graph.like import like_question, overlaps
    from ranklens.core.graph.related import RelatedError
    from ranklens.core.navigate import graph_of

    engine = run.engine
    for line in range(hit.start_line, hit.end_line + 1):
        try:
            unit, question = like_question(graph_of(engine), engine.root, hit.path, line)
        except RelatedError:  # no definition holds this line: the next one
            continue
        results = [engine.run_arm(name, question) for name in run.results[0]]
        found = engine.fuse(results, top_k=top_k + 1, query=question)
        return [h for h in found if not overlaps(unit, h.path, h.start_line, h.end_line)][:top_k]
    return []


def reach(run) -> list[dict]:
    rows = []
    for i, task in enumerate(run.repo.tasks):
        hits = codesearch.hits_for(run, i, top_k=10)
        gold = task.targets
        hit = any(_touches(h.path, h.start_line, h.end_line, gold) for h in hits)
        alt = hit or any(_touches(h.path, a.start_line, a.end_line, gold) for h in hits for a in h.alternatives)
        rel = alt
        first = next((h for h in hits if any(h.path == p for p, _s, _e in gold)), None)
        if not rel and first is not None:
            rel = any(_touches(p.path, p.start_line, p.end_line, gold) for p in related_units(run.engine, first))
        like = rel
        if not like and first is not None:
            like = any(_touches(h.path, h.start_line, h.end_line, gold) for h in look_alikes(run, first))
        wide = rel
        if not wide and first is not None:
            wide = any(_touches(p.path, p.start_line, p.end_line, gold) for p in related_units(run.engine, first, True))
        three = wide or any(
            _touches(p.path, p.start_line, p.end_line, gold)
            for h in hits[:3]
            for p in related_units(run.engine, h, True)
        )
        row = {"repo": task.repo, "kind": task.category, "style": task.style, "query": task.query}
        row.update(hit=hit, alt=alt, rel=rel, like=like)
        row.update(wide=wide, three=three, in_file=first is not None, gold=[f"{p}:{a}-{b}" for p, a, b in gold])
        row["top"] = [f"{h.path}:{h.start_line}-{h.end_line} {h.context}" for h in hits[:5]]
        rows.append(row)
    return rows


def heldout(trees: Path) -> list[Repo]:
    meta = json.loads((HELDOUT / "repos.json").read_text())
    out = []
    for repo in meta:
        path, root = HELDOUT / f"{repo['name']}.jsonl", trees / repo["name"]
        if not path.exists() or not root.is_dir():
            continue
        r = Repo(repo["name"], repo["language"], root, root)
        for line in path.read_text().splitlines():
            if line.strip():
                item = json.loads(line)
                targets = [(g["path"], int(g["start_line"]), int(g["end_line"])) for g in item["gold"]]
                style = "user" if item.get("style") == "user" else "long"
                r.tasks.append(Task(r.name, r.language, item["kind"], item["query"], targets, style=style))
        out.append(r)
    return out


def table(label: str, rows: list[dict]) -> None:
    by = defaultdict(list)
    styles = {r.get("style") for r in rows} - {"", None}
    for r in rows:
        by[r["kind"]].append(r)
        by["all"].append(r)
        if len(styles) > 1:  # the held-out set: its short and long questions apart
            by[f"{r['style']}/{r['kind']}"].append(r)
            by[f"{r['style']}/all"].append(r)
    for kind, rs in sorted(by.items()):
        n = len(rs)
        print(
            f"{label:8s} {kind:22s} of {n:3d}: hit {sum(r['hit'] for r in rs):3d}  "
            f"+runners-up {sum(r['alt'] for r in rs):3d}  +related {sum(r['rel'] for r in rs):3d}  "
            f"+look-alikes {sum(r['like'] for r in rs):3d}  "
            f"(+related of every unit of that hit {sum(r['wide'] for r in rs):3d}; of the first 3 hits "
            f"{sum(r['three'] for r in rs):3d}; gold file in the hits "
            f"{sum(r['in_file'] for r in rs):3d})"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default=None)
    ap.add_argument("--repo", action="append", default=[])
    ap.add_argument("--heldout", type=Path, help="folder holding the held-out trees as <name>/")
    ap.add_argument("--heldout-only", action="store_true", help="skip the span set")
    ap.add_argument("--json", default=None, help="write every question's row here")
    args = ap.parse_args(argv)
    sets = {} if args.heldout_only else {"spans": spans.load(bench_dir(args.bench), args.repo)}
    if args.heldout:
        sets["heldout"] = heldout(args.heldout)
    out = {}
    for label, repos in sets.items():
        rows = []
        for repo in repos:
            run = collect(repo)
            rows.extend(reach(run))
            run.engine.close()
            print(f"{repo.name:20s} done", file=sys.stderr)
        table(label, rows)
        out[label] = rows
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
