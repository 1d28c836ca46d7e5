"""Two structural ideas for choosing the chunk *within* a chosen file, measured on the span
set and the benchmark (issue #18; results in docs/appendix/eval-span-set.md, "Measured and not kept").

- ``calls``: call-graph neighbours. A question that describes behaviour often names the
  concept the dispatcher or caller names, while the answer is a function it calls in the same
  file (or the reverse). A unit is a neighbour of the file's first unit when the first unit's
  text calls a name the unit defines (``name(``, ``name<``, ``name::``, ``name!``) or the
  unit's text calls a name the first unit defines; ``mentions``: the same with any use of the
  name as a whole word (a reference, a type, a comment), not only a call.
- ``comments`` / ``lead``: a unit's comments (every comment and docstring line in it) or its
  leading doc comment alone, matched to the question by the static model (the dense arm's),
  apart from the code: comments describe behaviour in prose, as paraphrased questions do.

Three measurements (``--part``):

- ``reach``: of the paraphrased questions whose answering file is in the first 10 hits but
  not the answering function, how many show (first, or among the file's first 3 hits) a chunk
  that calls the gold function or that the gold function calls (or mentions it): at most what
  ``calls`` / ``mentions`` can fix;
- ``within``: inside the file that holds the answer (the first of the first 5 files that
  does), the answering unit's rank under each within-file ranking (@1 / @3 / @5 per kind);
- ``e2e``: each idea as one more within-file ranking of the chunk step (weighted RRF beside
  bm25 and dense, weight ``w``), both sets scored end to end, per repository and language,
  with a leave-one-repository-out choice of ``w`` (0: off).

The experiment wraps :func:`core.query.chunkstep.rank_units` as the chunk step calls it (through
:func:`core.query.chunkstep.distinct_units`); nothing in the product changes. Unit texts are read
from the files on disk.

    python -m evals.chunk_evidence                       # all three parts
    python -m evals.chunk_evidence --part e2e --no-bench  # the span set only
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from evals import codesearch, spans
from evals.codesearch import bench_dir, collect

#: Preprocessor lines and attributes start with ``#`` but are code, not comments.
_NOT_COMMENT = re.compile(r"^#\s*(include|define|if|ifdef|ifndef|endif|else|elif|undef|pragma|error|line)\b|^#!?\[")
_OPENER = re.compile(r"^[rRbBuU]?(/\*+!?|\"\"\"|''')")
_MARK = re.compile(r"^(//+!?|#+|--+)\s?")
_STAR = re.compile(r"^\*+/?\s?")
#: A definition's first line: where a leading comment ends.
_DEFINES = re.compile(
    r"^(@|def |func |fn |fun |pub |public |private |protected |internal |static |export |async |function "
    r"|override |suspend |class |impl |interface |struct |enum |type |const |let |var |val )"
)


def comments(lines: Sequence[str]) -> str:
    """The comment and docstring text of ``lines``, marks stripped, one line each."""
    out: list[str] = []
    closer = None
    for raw in lines:
        s = raw.strip()
        if closer:
            at = s.find(closer)
            out.append(_STAR.sub("", s if at < 0 else s[:at]))
            closer = None if at >= 0 else closer
            continue
        m = _OPENER.match(s)
        if m:
            mark = m.group(1)
            end = "*/" if mark.startswith("/*") else mark
            rest = s[m.end() :]
            out.append(rest[: rest.find(end)] if end in rest else rest)
            closer = None if end in rest else end
        elif s.startswith(("//", "--")) or (s.startswith("#") and not _NOT_COMMENT.match(s)):
            out.append(_MARK.sub("", s))
        elif s.startswith("*"):
            out.append(_STAR.sub("", s))
        elif " // " in raw:
            out.append(raw[raw.find(" // ") + 4 :])
    return "\n".join(t for t in out if t.strip())


def leading(lines: Sequence[str]) -> str:
    """The doc comment a unit opens with: above its definition, or a docstring on its second line."""
    held: list[str] = []
    for i, raw in enumerate(lines[:40]):
        s = raw.strip()
        if s.startswith(("//", "/*", "*", "#", '"""', "'''", "--")):
            held.append(raw)
        elif held and s and not (_DEFINES.match(s) or "(" in s):
            held.append(raw)  # the inside of a block comment
        elif held or i >= 1:
            break
    return comments(held)


_SHORT = re.compile(r"[.:#]+")


def short(symbol: str) -> str:
    """A qualified name's last part (``Context.Copy`` -> ``Copy``)."""
    return _SHORT.split(symbol)[-1]


def calls(name: str, text: str) -> bool:
    """Whether ``text`` calls ``name`` (a name of 3 characters or more, then ``(``, ``<``, ``::`` or ``!``)."""
    return len(name) > 2 and re.search(r"(?<![\w$])" + re.escape(name) + r"\s*(\(|<|::|!)", text) is not None


def mentions(name: str, text: str) -> bool:
    """Whether ``text`` holds ``name`` (3 characters or more) as a whole word: a call, a
    reference, a type or a comment naming it."""
    return len(name) > 2 and re.search(r"(?<![\w$])" + re.escape(name) + r"(?![\w$])", text) is not None


#: How a unit links to another: ``calls`` (a call of a name it defines), ``mentions`` (any use).
LINKS = {"calls": calls, "mentions": mentions}


class Texts:
    """File lines and the static model's unit vectors of comment texts, cached."""

    def __init__(self) -> None:
        from ranklens.core.text.embedding import load_model

        self.model = load_model(None)
        self._lines: dict[tuple[str, str], list[str]] = {}
        self._vecs: dict[tuple, tuple[np.ndarray, list[bool]]] = {}
        self._queries: dict[str, np.ndarray] = {}
        self.encoder = None  # evals.infile_encoder.InFileEncoder, for the ``encoder`` idea
        self._enc: dict[str, np.ndarray] = {}
        self._enc_q: dict[str, np.ndarray] = {}

    def lines(self, root: str, path: str) -> list[str]:
        key = (root, path)
        if key not in self._lines:
            self._lines[key] = (Path(root) / path).read_text(errors="replace").splitlines()
        return self._lines[key]

    def text(self, root: str, path: str, start: int, end: int) -> str:
        return "\n".join(self.lines(root, path)[start - 1 : end])

    def _unit(self, texts: list[str]) -> np.ndarray:
        m = np.asarray(self.model.encode(texts), dtype=np.float32)
        return m / (np.linalg.norm(m, axis=-1, keepdims=True) + 1e-9)

    def query(self, q: str) -> np.ndarray:
        if q not in self._queries:
            self._queries[q] = self._unit([q])[0]
        return self._queries[q]

    def comment_vectors(self, root: str, path: str, units, kind: str) -> tuple[np.ndarray, list[bool]]:
        key = (root, path, kind, tuple((u.start, u.end) for u in units))
        if key not in self._vecs:
            lines = self.lines(root, path)
            pick = comments if kind == "comments" else leading
            found = [pick(lines[u.start - 1 : u.end]) for u in units]
            self._vecs[key] = (self._unit([t or " " for t in found]), [bool(t) for t in found])
        return self._vecs[key]

    def encoder_order(self, root: str, path: str, units, among: Sequence[int], q: str) -> list[int]:
        """``among`` (unit positions) ordered by the in-file encoder's cosine to the question
        (``--encoder``: a folder of ``scripts/export_encoder.py``'s int8 ONNX model), each unit read as the
        chunk step shows it: its breadcrumb, then its lines."""
        if self.encoder is None:
            raise SystemExit("chunk_evidence: the encoder idea needs --encoder DIR")
        from evals.infile_encoder import QUERY_TOKENS

        texts = [f"{units[i].context}\n{self.text(root, path, units[i].start, units[i].end)}" for i in among]
        todo = [t for t in dict.fromkeys(texts) if t not in self._enc]
        if todo:
            self._enc.update(zip(todo, self.encoder.encode(todo)))
        if q not in self._enc_q:
            self._enc_q[q] = self.encoder.encode([q], QUERY_TOKENS)[0]
        sims = [float(self._enc[t] @ self._enc_q[q]) for t in texts]
        return [among[j] for j in sorted(range(len(among)), key=lambda j: -sims[j])]

    def comment_order(self, root: str, path: str, units, kind: str, q: str) -> list[int]:
        """The units holding comments, most similar to the question first."""
        vecs, has = self.comment_vectors(root, path, units, kind)
        sims = vecs @ self.query(q)
        return sorted((i for i in range(len(units)) if has[i]), key=lambda i: -sims[i])

    def neighbours(self, root: str, path: str, units, top: int, link=calls) -> list[int]:
        """The units the unit ``top`` calls or that call it (``link``: :data:`LINKS`), in their
        order in ``units``."""
        head = units[top]
        text = self.text(root, path, head.start, head.end)
        out = []
        for i, u in enumerate(units):
            if i == top:
                continue
            if any(link(short(s), text) for s in u.symbols) or any(
                link(short(s), self.text(root, path, u.start, u.end)) for s in head.symbols
            ):
                out.append(i)
        return out


def gold_symbols(bench: Path) -> dict[str, list[dict]]:
    out = {}
    for f in sorted((bench / "spans").glob("*.jsonl")):
        for line in f.read_text().splitlines():
            if line.strip():
                item = json.loads(line)
                out[item["query"]] = item["gold"]
    return out


# ---------------------------------------------------------------- reach
def reach(runs, rows, texts: Texts, golds: dict[str, list[dict]]) -> None:
    counts: dict[str, int] = defaultdict(int)
    sizes: dict[str, list[int]] = defaultdict(list)
    roots = {r.repo.name: str(r.repo.root) for r in runs}
    for row in rows:
        if row["kind"] != "paraphrase":
            continue
        if row["ranks"]:
            counts["the function in the first 10"] += 1
            continue
        gold = golds[row["query"]]
        shown = [h for h in row["hits"] if h.path in {g["path"] for g in gold}]
        if not shown:
            counts["the file missed"] += 1
            continue
        counts["the file, not the function"] += 1
        root = roots[row["repo"]]
        for how, link in LINKS.items():
            _reach_one(row, gold, shown, root, texts, runs, how, link, counts, sizes)
    print("reach (paraphrased questions):")
    for k, v in counts.items():
        print(f"  {k}: {v}")
    for how, got in sizes.items():
        print(f"  {how}: the first shown chunk's neighbours, median {statistics.median(got)} a question")


def _reach_one(row, gold, shown, root, texts, runs, how, link, counts, sizes) -> None:
    """:func:`reach` of one question for one kind of link."""
    first = any_of_3 = False
    engine = next(r.engine for r in runs if r.repo.name == row["repo"])
    for j, h in enumerate(shown[:3]):
        text = texts.text(root, h.path, h.start_line, h.end_line)
        units = list(engine.file_units(row["query"], [h.path])[h.path].units)
        here = [u for u in units if not (u.end < h.start_line or u.start > h.end_line)]
        defined = {short(s) for u in here for s in u.symbols}
        hit = False
        for g in gold:
            if g["path"] != h.path:
                continue
            name = short(g["symbol"])
            body = texts.text(root, g["path"], g["start_line"], g["end_line"])
            hit |= link(name, text) or any(link(n, body) for n in defined if n != name)
        if j == 0:
            first = hit
            others = [u for u in units if u not in here]
            sizes[how].append(
                sum(
                    any(link(short(s), text) for s in u.symbols)
                    or any(link(n, texts.text(root, h.path, u.start, u.end)) for n in defined)
                    for u in others
                )
            )
        any_of_3 |= hit
    counts[f"  {how}: its first shown chunk links to the gold function (either way)"] += first
    counts[f"  {how}: one of its first 3 shown chunks does"] += any_of_3


# ---------------------------------------------------------------- within
def within(runs, rows, texts: Texts) -> None:
    found: dict[str, dict[str, list[tuple[int, str]]]] = defaultdict(lambda: defaultdict(list))
    by_query = {(r.repo.name, t.query): (r, t) for r in runs for t in r.repo.tasks}
    for row in rows:
        run, task = by_query[(row["repo"], row["query"])]
        root = str(run.repo.root)
        files = list(dict.fromkeys(h.path for h in row["hits"]))[:5]
        targets = [t for t in task.targets if t[0] in files]
        if not targets:
            continue
        path = targets[0][0]
        units = list(run.engine.file_units(task.query, [path])[path].units)
        gold = [
            i
            for i, u in enumerate(units)
            if any(t[0] == path and not (u.end < t[1] or u.start > t[2]) for t in targets)
        ]
        if not gold:
            continue
        last = len(units) + 1
        rank: dict[str, list[int]] = {
            "bm25": [u.ranks.get("bm25", last) for u in units],
            "dense": [u.ranks.get("dense", last) for u in units],
        }
        for kind in ("comments", "lead"):
            order = texts.comment_order(root, path, units, kind, task.query)
            rank[kind] = [last] * len(units)
            for r, i in enumerate(order, 1):
                rank[kind][i] = r

        def rrf(weights: dict[str, float], rank=rank, n=last - 1) -> list[int]:
            score = [sum(w / (60 + rank[a][i]) for a, w in weights.items()) for i in range(n)]
            order = sorted(range(n), key=lambda i: -score[i])
            out = [0] * n
            for r, i in enumerate(order, 1):
                out[i] = r
            return out

        both = rank["bm25+dense"] = rrf({"bm25": 1, "dense": 1})
        for kind in ("comments", "lead"):
            for w in (0.5, 1.0):
                rank[f"bm25+dense+{kind} x{w}"] = rrf({"bm25": 1, "dense": 1, kind: w})
        top = both.index(1)
        for how, link in LINKS.items():
            near = texts.neighbours(root, path, units, top, link)
            order = [top, *sorted(near, key=lambda i: both[i])]
            order += sorted((i for i in range(len(units)) if i not in order), key=lambda i: both[i])
            name = f"bm25+dense, the first unit's neighbours ({how}) next"
            rank[name] = [0] * len(units)
            for r, i in enumerate(order, 1):
                rank[name][i] = r
        for name, r in rank.items():
            found[task.category][name].append((min(r[i] for i in gold), task.repo))
    for kind, by_name in found.items():
        n = len(next(iter(by_name.values())))
        print(f"within the answering file ({kind}, {n} questions): @1 / @3 / @5")
        for name, got in by_name.items():
            at = [sum(b <= k for b, _ in got) for k in (1, 3, 5)]
            print(f"  {name:52s} {at[0]:3d} / {at[1]:3d} / {at[2]:3d}")


# ---------------------------------------------------------------- e2e
#: The ``encoder`` idea reads a file's first this many units (the chunk step's order).
ENCODER_UNITS = 8


class Injected:
    """The chunk step's ranking with one more within-file ranking (``kind``, weight ``w``)."""

    def __init__(self, texts: Texts) -> None:
        import ranklens.core.query.chunkstep as chunkstep

        self.texts = texts
        self.kind: str | None = None
        self.w = 0.0
        self.query = self.root = ""
        self.original = chunkstep.rank_units
        chunkstep.rank_units = self.rank_units  # distinct_units looks it up at each call
        self.hits_for = codesearch.hits_for
        codesearch.hits_for = self.hits

    def hits(self, run, i, **kw):
        self.query, self.root = run.repo.tasks[i].query, str(run.repo.root)
        return self.hits_for(run, i, **kw)

    def rank_units(self, fu, weights, k, groups, labelled, quoted, n_keywords, params, places=None):
        from ranklens.core.query.chunkstep import FileUnits

        rest = (groups, labelled, quoted, n_keywords, params)
        if self.kind is None:
            return self.original(fu, weights, k, *rest, places)
        units = [dataclasses.replace(u, ranks=dict(u.ranks)) for u in fu.units]
        if self.kind == "encoder":
            # The product's shape: only the chunk step's first ENCODER_UNITS units of the file
            # are read by the encoder, and ranked among themselves.
            ranked = self.original(FileUnits(fu.path, units), weights, k, *rest)
            at = {id(u): i for i, u in enumerate(units)}
            among = [at[id(u)] for u, _ in ranked[:ENCODER_UNITS]]
            order = self.texts.encoder_order(self.root, fu.path, units, among, self.query)
        elif self.kind in LINKS:
            ranked = self.original(FileUnits(fu.path, units), weights, k, *rest)
            at = {id(u): i for i, u in enumerate(units)}
            near = set(self.texts.neighbours(self.root, fu.path, units, at[id(ranked[0][0])], LINKS[self.kind]))
            order = [at[id(u)] for u, _ in ranked[1:] if at[id(u)] in near]
        else:
            order = self.texts.comment_order(self.root, fu.path, units, self.kind, self.query)
        for r, i in enumerate(order, 1):
            units[i].ranks["extra"] = r
        weights = {**weights, "extra": self.w}
        return self.original(FileUnits(fu.path, units), weights, k, *rest, places)


def e2e(span_runs, bench_runs, texts: Texts, grid: dict[str, Sequence[float]]) -> None:
    inject = Injected(texts)
    results = {}
    for kind, ws in [(None, (0.0,)), *grid.items()]:
        for w in ws:
            inject.kind, inject.w = kind, w
            s = spans.summary(spans.score(span_runs))
            b = codesearch.summary(codesearch.score(bench_runs)) if bench_runs else None
            results[(kind, w)] = (s, b)
            label = "shipped" if kind is None else f"{kind} w {w}"
            bench = f" benchmark={b['overall']:.4f}" if b else ""
            print(spans.line(label, s) + bench)
            print("   " + " ".join(f"{r}={v:.3f}" for r, v in s["by_repo"].items()))
            if b:
                print("   " + " ".join(f"{lang}={v:.3f}" for lang, v in b["by_language"].items()))
    base = results[(None, 0.0)][0]["by_repo"]
    repos = list(base)
    for kind, ws in grid.items():
        # Leave one repository out: w chosen (0 = off) on the other 7, the held-out one scored.
        held = []
        for out in repos:
            choices = [(0.0, base)] + [(w, results[(kind, w)][0]["by_repo"]) for w in ws]
            w, _ = max(choices, key=lambda c: statistics.fmean(c[1][r] - base[r] for r in repos if r != out))
            held.append((out, w, (dict(choices)[w][out] - base[out])))
        ups = sum(d > 0.0005 for _, _, d in held)
        downs = sum(d < -0.0005 for _, _, d in held)
        mean = statistics.fmean(d for _, _, d in held)
        print(
            f"{kind}: leave-one-repository-out span {mean:+.4f} ({ups} up, {downs} down): "
            + " ".join(f"{r}:w{w}:{d:+.3f}" for r, w, d in held)
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=None)
    ap.add_argument("--part", action="append", choices=("reach", "within", "e2e"), default=[])
    ap.add_argument("--no-bench", action="store_true", help="e2e: the span set only")
    ap.add_argument("--encoder", type=Path, help="e2e: also the in-file encoder (an int8 ONNX folder) as an idea")
    ap.add_argument("--only", action="append", default=[], help="e2e: only these ideas (repeatable)")
    ap.add_argument("--encoder-units", type=int, default=ENCODER_UNITS)
    args = ap.parse_args(argv)
    parts = args.part or ["reach", "within", "e2e"]
    bench = bench_dir(args.bench)
    span_runs = [collect(r) for r in spans.load(bench)]
    rows = spans.score(span_runs)
    texts = Texts()
    if args.encoder:
        from evals.infile_encoder import InFileEncoder

        texts.encoder = InFileEncoder(args.encoder)
        globals()["ENCODER_UNITS"] = args.encoder_units
    if "reach" in parts:
        reach(span_runs, rows, texts, gold_symbols(bench))
    if "within" in parts:
        within(span_runs, rows, texts)
    if "e2e" in parts:
        bench_runs = [] if args.no_bench else [collect(r) for r in codesearch.load(bench)]
        grid = {
            "calls": (0.5, 1.0, 2.0),
            "mentions": (0.5, 1.0, 2.0),
            "comments": (0.5, 1.0, 2.0, 4.0),
            "lead": (0.5, 1.0, 2.0),
        }
        if args.encoder:
            grid["encoder"] = (1.0, 2.0, 4.0, 8.0)
        if args.only:
            grid = {k: v for k, v in grid.items() if k in args.only}
        e2e(span_runs, bench_runs, texts, grid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
