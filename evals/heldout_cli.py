"""The held-out set (``evals/heldout``) asked of a ``ranklens`` command line, as a user asks it.

Each question goes through ``ranklens query --batch --json --top-k 10`` on its repository's
tree (``<trees>/<name>/``, unpacked at the commit ``evals/heldout/repos.json`` names), so two
installs (today's and an older one's ``ranklens``) are compared on the same trees, each with
its own index folder (``--cache``, given to the command as ``RANKLENS_CACHE_DIR``). Per
question: the rank of the first top-10 hit that overlaps a gold span (each hit clipped to its
first 80 lines, as the span set scores), whether a runner-up of a top-10 hit does
(``alternatives``), and whether a gold file is among the hits. Reported by style (``user``:
8-15 words as typed into a search box; ``long``: the 20-35-word questions, no ``style``
field), by kind, and by repository.

    python -m evals.heldout_cli --trees /tmp/heldout --cache /tmp/rl-cache --json rows.json
    python -m evals.heldout_cli --trees /tmp/heldout --ranklens /old/.venv/bin/ranklens --cache /tmp/old-cache
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HELDOUT = Path(__file__).resolve().parent / "heldout"
MAX_SPAN = 80


def style_of(item: dict) -> str:
    """``user`` for a question marked ``"style": "user"``, else ``long`` (the first 30)."""
    return "user" if item.get("style") == "user" else "long"


def load(root: Path = HELDOUT, trees: Path | None = None) -> list[tuple[dict, list[dict]]]:
    """``(repo meta, [question])`` for each repository of ``repos.json`` with a question file
    (and, where ``trees`` is given, its tree there)."""
    out = []
    for repo in json.loads((root / "repos.json").read_text()):
        path = root / f"{repo['name']}.jsonl"
        if not path.exists() or (trees is not None and not (trees / repo["name"]).is_dir()):
            continue
        out.append((repo, [json.loads(line) for line in path.read_text().splitlines() if line.strip()]))
    return out


def touches(path: str, start: int, end: int, gold: list[dict]) -> bool:
    end = min(end, start + MAX_SPAN - 1)
    return any(g["path"] == path and not (end < g["start_line"] or start > g["end_line"]) for g in gold)


def judge(item: dict, results: list[dict]) -> dict:
    """One question's row from its envelope's ``results`` (the top 10, in order)."""
    gold = item["gold"]
    rank = next((i for i, h in enumerate(results, 1) if touches(h["path"], h["start_line"], h["end_line"], gold)), None)
    alt = rank is not None or any(
        touches(h["path"], a["start_line"], a["end_line"], gold) for h in results for a in h.get("alternatives") or []
    )
    files = {g["path"] for g in gold}
    return {
        "id": item["id"],
        "repo": item["repo"],
        "kind": item["kind"],
        "style": style_of(item),
        "query": item["query"],
        "gold": [f"{g['path']}:{g['start_line']}-{g['end_line']} {g.get('symbol', '')}" for g in gold],
        "rank": rank,
        "top1": rank == 1,
        "top10": rank is not None,
        "alt": alt,
        "in_file": any(h["path"] in files for h in results),
        "top": [f"{h['path']}:{h['start_line']}-{h['end_line']} {h.get('context', '')}" for h in results[:3]],
    }


def ask(ranklens: str, tree: Path, items: list[dict], env: dict, top_k: int = 10) -> list[dict]:
    """Every question of one tree in one ``--batch`` process (the index built first). Both run
    in an empty folder: an older ranklens (09cc6fb) started its index workers with the working
    folder on their path, so run from a ranklens checkout they imported that checkout's code."""
    cwd = tempfile.mkdtemp(prefix="ranklens-heldout-")
    built = subprocess.run(
        [ranklens, "index", str(tree)], env=env, capture_output=True, text=True, check=False, cwd=cwd
    )
    if built.returncode != 0:
        raise SystemExit(f"{tree.name}: ranklens index failed ({built.returncode}): {built.stderr[-800:]}")
    lines = "".join(json.dumps({"id": it["id"], "query": it["query"]}) + "\n" for it in items)
    done = subprocess.run(
        [ranklens, "query", "--root", str(tree), "--batch", "--json", "--top-k", str(top_k)],
        input=lines,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    answers = {}
    for line in done.stdout.splitlines():
        if line.strip():
            env_ = json.loads(line)
            answers[env_.get("id")] = env_
    rows = []
    for it in items:
        got = answers.get(it["id"])
        if got is None or "error" in got:
            raise SystemExit(f"{tree.name}: no answer to {it['id']}: {got or done.stderr[-500:]}")
        rows.append(judge(it, got.get("results", [])[:top_k]))
    return rows


def table(rows: list[dict]) -> list[str]:
    """One line per group: style x kind, style, repository x style, then all."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[(0, r["style"], r["kind"])].append(r)
        groups[(1, r["style"], "all")].append(r)
        groups[(2, r["repo"], r["style"])].append(r)
        groups[(3, "all", "")].append(r)
    out = []
    for key in sorted(groups):
        rs = groups[key]
        label = f"{key[1]} {key[2]}".strip()
        out.append(
            f"{label:30s} of {len(rs):3d}: top1 {sum(r['top1'] for r in rs):3d}  top10 {sum(r['top10'] for r in rs):3d}  "
            f"+runners-up {sum(r['alt'] for r in rs):3d}  gold file in top10 {sum(r['in_file'] for r in rs):3d}  "
            f"MRR@10 {sum(1 / r['rank'] for r in rs if r['rank']) / len(rs):.3f}"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trees", type=Path, required=True, help="folder holding the held-out trees as <name>/")
    ap.add_argument("--ranklens", default=str(Path(sys.executable).with_name("ranklens")), help="the ranklens command")
    ap.add_argument("--cache", type=Path, help="index folder for this install (RANKLENS_CACHE_DIR)")
    ap.add_argument("--repo", action="append", default=[], help="only these repositories (names)")
    ap.add_argument("--json", default=None, help="write every question's row here")
    args = ap.parse_args(argv)
    env = dict(os.environ)
    env.setdefault("RANKLENS_DEEP", "0")
    if args.cache:
        env["RANKLENS_CACHE_DIR"] = str(args.cache)
    rows = []
    for repo, items in load(trees=args.trees):
        if args.repo and repo["name"] not in args.repo:
            continue
        rows += ask(args.ranklens, args.trees / repo["name"], items, env)
        print(f"{repo['name']:12s} done", file=sys.stderr)
    print("\n".join(table(rows)))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
