"""How ranklens's callers and tests compare with a type-aware tool's references (jedi).

For Python repositories: a sample of definitions (functions, methods, classes) is taken from
each repository, every ``k``-th in path order; for each, jedi's ``get_references`` (the
reference tool: it follows imports and infers receivers' types) and ranklens's ``related``
(callers + tests, name-based, best first) are both mapped to the *enclosing unit* of each use:
the innermost definition holding it (uses at module level, import lines and the definition
itself are left out on both sides, since neither is a unit that calls anything). Then:

* **recall**: the share of jedi's units that ranklens lists (micro, over every definition);
* **precision@10**: of the first 10 units ranklens lists, the share jedi also has;
* **extra**: units ranklens lists that jedi's references do not hold. Each is asked of jedi
  again from the use itself (``goto`` at the name on the use's line): when that lands on the
  definition, the reference search missed it (``tool missed``); when it lands on another
  definition, the edge is wrong (``edge wrong``); when it lands nowhere (an untyped
  receiver), it stays ``unresolved``. They are written to ``--extra`` (JSONL) with the line
  of use, for reading by hand; **precision@10, adjudicated** counts the ``tool missed`` ones
  as right.

Usage::

    pip install jedi
    python -m evals.graph_reference [--repo aiohttp --repo fastapi --repo pydantic] [--sample 40]

The benchmark's Python repositories are unpacked from ``../shared/bench`` (as evals.codesearch
does); ``--root DIR`` adds any other folder. Prints a table and writes ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent.parent / "shared" / "bench"


def _units(root: Path, path: str):
    from ranklens.core.graph.related import reading

    return reading(root, path)


def unit_of(root: Path, path: str, line: int) -> tuple[str, int, int] | None:
    """The innermost definition of ``path`` holding ``line``, as ``(path, start, end)``."""
    from ranklens.core.graph.related import enclosing

    defs = _units(root, path).defs
    d = enclosing(defs, line)
    return (path, d.start_line, d.end_line) if d is not None else None


def sample_definitions(root: Path, paths: list[str], every: int, limit: int) -> list:
    """Every ``every``-th definition of the files, in path order, up to ``limit``: functions,
    methods and classes with a name (no nested helper of 2 lines or fewer)."""
    found = []
    for path in sorted(paths):
        if not path.endswith(".py"):
            continue
        defs = _units(root, path).defs
        for d in defs:
            if d.symbol and d.end_line - d.start_line >= 2 and not d.symbol.startswith("__"):
                found.append(d)
    return found[::every][:limit]


def jedi_units(root: Path, project, d) -> set[tuple[str, int, int]] | None:
    """The units holding jedi's references to definition ``d`` (None: jedi found no name there)."""
    import jedi

    text = (root / d.path).read_text(encoding="utf-8", errors="replace").split("\n")
    name = d.symbol
    for ln in range(d.start_line, min(d.end_line, d.start_line + 8) + 1):
        col = _column(text[ln - 1], name)
        if col is not None:
            break
    else:
        return None
    script = jedi.Script(path=str(root / d.path), project=project)
    try:
        refs = script.get_references(ln, col, include_builtins=False)
    except Exception:
        return None
    out = set()
    for r in refs:
        if r.module_path is None or r.line is None:
            continue
        try:
            rel = Path(r.module_path).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            continue
        if rel == d.path and r.line == ln:
            continue  # the definition itself
        if r.is_definition():
            continue  # an import binding the name, or another definition of it
        unit = unit_of(root, rel, r.line)
        if unit is None or (rel == d.path and unit[1] == d.start_line and unit[2] == d.end_line):
            continue
        out.add(unit)
    return out


def _column(line: str, name: str) -> int | None:
    import re

    m = re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", line)
    return m.start() if m else None


def adjudicate(root: Path, project, d, path: str, line: int) -> str:
    """What jedi says the name on ``path:line`` means: ``tool missed`` (definition ``d``),
    ``edge wrong`` (another definition) or ``unresolved``."""
    import jedi

    text = (root / path).read_text(encoding="utf-8", errors="replace").split("\n")
    col = _column(text[line - 1], d.symbol) if 0 < line <= len(text) else None
    if col is None:
        return "unresolved"
    try:
        found = jedi.Script(path=str(root / path), project=project).goto(line, col, follow_imports=True)
    except Exception:
        return "unresolved"
    if not found:
        return "unresolved"
    for g in found:
        if g.module_path is not None and g.line is not None:
            rel = Path(g.module_path).resolve()
            if rel == (root / d.path).resolve() and d.start_line <= g.line <= d.end_line:
                return "tool missed"
    return "edge wrong"


def ranklens_units(engine, d, limit: int = 200) -> list[tuple[str, int, int, int]]:
    """ranklens's callers then tests of ``d``, as listed: ``(path, start, end, line of use)``
    of those inside a definition."""
    from ranklens.core.navigate import neighbourhood

    found = neighbourhood(engine, d.path, d.start_line, limit)
    if found.unit.start_line != d.start_line:
        return []
    return [(p.path, p.start_line, p.end_line, p.line) for p in found.callers + found.tests if p.name]


def run_repo(name: str, root: Path, sample: int, extra_out) -> dict:
    import jedi

    from ranklens.core.engine import Engine

    engine = Engine(root)
    engine.ensure_index()
    paths = sorted(engine.view.chunks.distinct_paths())
    defs_all = sample_definitions(root, paths, 1, 10**9)
    every = max(1, len(defs_all) // (sample * 3))
    # The benchmark keeps a package folder (fastapi/fastapi): its parent is the project, so the
    # package's imports resolve and its modules do not shadow the standard library's (with the
    # folder itself on the path, pydantic/dataclasses.py was taken for `from dataclasses import`).
    project = jedi.Project(str(root.parent)) if (root / "__init__.py").exists() else jedi.Project(str(root))
    rows = []
    times = {"jedi": 0.0, "ranklens": 0.0}
    for d in defs_all[::every]:
        t0 = time.perf_counter()
        ref = jedi_units(root, project, d)
        t1 = time.perf_counter()
        if not ref:
            continue  # nothing to recall: no reference jedi could find
        ours = ranklens_units(engine, d)
        t2 = time.perf_counter()
        times["jedi"] += t1 - t0
        times["ranklens"] += t2 - t1
        listed = [(p, s, e) for p, s, e, _ln in ours]
        hit = [u for u in ref if u in set(listed)]
        top = listed[:10]
        verdicts = {}
        for p, s, e, ln in ours[:10]:
            if (p, s, e) not in ref:
                verdicts[(p, s, e)] = adjudicate(root, project, d, p, ln)
        rows.append(
            {
                "definition": f"{d.path}:{d.start_line} {d.symbol}",
                "jedi": len(ref),
                "ranklens": len(listed),
                "recalled": len(hit),
                "top10": len(top),
                "top10_in_jedi": sum(1 for u in top if u in ref),
                "top10_tool_missed": sum(1 for v in verdicts.values() if v == "tool missed"),
                "top10_edge_wrong": sum(1 for v in verdicts.values() if v == "edge wrong"),
                "missed": sorted(f"{p}:{s}-{e}" for p, s, e in ref - set(listed))[:10],
            }
        )
        for p, s, e, ln in ours:
            if (p, s, e) not in ref:
                extra = {"repo": name, "definition": rows[-1]["definition"], "extra": f"{p}:{s}-{e}", "line": ln}
                extra["verdict"] = verdicts.get((p, s, e), "not in the first 10")
                extra_out.write(json.dumps(extra) + "\n")
        if len(rows) >= sample:
            break
    engine.close()
    jedi_n = sum(r["jedi"] for r in rows)
    recalled = sum(r["recalled"] for r in rows)
    top = sum(r["top10"] for r in rows)
    top_ok = sum(r["top10_in_jedi"] for r in rows)
    missed = sum(r["top10_tool_missed"] for r in rows)
    return {
        "repo": name,
        "definitions": len(rows),
        "jedi_units": jedi_n,
        "recall": recalled / jedi_n if jedi_n else 0.0,
        "precision_at_10": top_ok / top if top else 0.0,
        "precision_at_10_adjudicated": (top_ok + missed) / top if top else 0.0,
        "top10_edge_wrong": sum(r["top10_edge_wrong"] for r in rows),
        "top10_unresolved": top - top_ok - missed - sum(r["top10_edge_wrong"] for r in rows),
        "seconds": {k: round(v, 2) for k, v in times.items()},
        "rows": rows,
    }


def bench_roots(names: list[str]) -> list[tuple[str, Path]]:
    sys.path.insert(0, str(HERE.parent))
    from evals.codesearch import load

    return [(r.name, r.root) for r in load(BENCH, names)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", action="append", default=[], help="a Python repository of the benchmark")
    ap.add_argument("--root", action="append", default=[], help="any other folder (NAME=DIR or DIR)")
    ap.add_argument("--sample", type=int, default=40, help="definitions with jedi references per repository")
    ap.add_argument("--json", default="graph_reference.json")
    ap.add_argument("--extra", default="graph_reference_extra.jsonl")
    args = ap.parse_args(argv)
    os.environ.setdefault("RANKLENS_CACHE_DIR", str(Path(os.environ.get("TMPDIR", "/tmp")) / "ranklens-graph-bench"))
    roots = bench_roots(args.repo or ([] if args.root else ["aiohttp", "fastapi", "pydantic"]))
    for spec in args.root:
        name, _, folder = spec.rpartition("=")
        roots.append((name or Path(folder).name, Path(folder)))
    results = []
    with open(args.extra, "w") as extra:
        for name, root in roots:
            r = run_repo(name, root, args.sample, extra)
            results.append(r)
            print(
                f"{name:12} defs={r['definitions']:3} jedi units={r['jedi_units']:4} "
                f"recall={r['recall']:.3f} P@10={r['precision_at_10']:.3f} "
                f"adjudicated={r['precision_at_10_adjudicated']:.3f} (wrong {r['top10_edge_wrong']}, "
                f"unresolved {r['top10_unresolved']})  "
                f"jedi {r['seconds']['jedi']}s ranklens {r['seconds']['ranklens']}s",
                flush=True,
            )
    jedi_n = sum(r["jedi_units"] for r in results)
    recalled = sum(sum(x["recalled"] for x in r["rows"]) for r in results)
    top = sum(sum(x["top10"] for x in r["rows"]) for r in results)
    top_ok = sum(sum(x["top10_in_jedi"] for x in r["rows"]) for r in results)
    missed = sum(sum(x["top10_tool_missed"] for x in r["rows"]) for r in results)
    wrong = sum(r["top10_edge_wrong"] for r in results)
    print(
        f"{'all':12} recall={recalled / max(jedi_n, 1):.3f} P@10={top_ok / max(top, 1):.3f} "
        f"adjudicated={(top_ok + missed) / max(top, 1):.3f} (of {top} listed: {wrong} wrong by jedi's goto)"
    )
    Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
