"""How ranklens's callers and tests compare with a type-aware tool's references.

The reference tool is jedi for Python, the TypeScript compiler's language service
(``evals/ts_references.mjs``, run with Node) for TypeScript and JavaScript, Go's type checker
(``evals/go_references``, go/types, built with the ``go`` on PATH) for Go. A sample of
definitions (functions, methods, classes) is taken from each repository, every ``k``-th in path
order; for each, the tool's references (it follows imports and infers receivers' types) and
ranklens's ``related`` (callers + tests, name-based, best first) are both mapped to the
*enclosing unit* of each use: the innermost definition holding it (uses at module level, in an
anonymous function no definition holds, import lines and the definition itself are left out on
both sides, since neither is a unit that calls anything). Then:

* **recall**: the share of the tool's units that ranklens lists (micro, over every definition);
* **precision@10**: of the first 10 units ranklens lists, the share the tool also has;
* **extra**: units ranklens lists that the tool's references do not hold. Each is asked of the
  tool again from the use itself (jedi's ``goto``, the language service's
  ``getDefinitionAtPosition``, at the name on the use's line): when that lands on the
  definition, the reference search missed it (``tool missed``); when it lands on another
  definition, the edge is wrong (``edge wrong``); when it lands nowhere (an untyped
  receiver), it stays ``unresolved``. They are written to ``--extra`` (JSONL) with the line
  of use, for reading by hand, and so are the units ranklens misses (``missed``, with the
  tool's line of use); **precision@10, adjudicated** counts the ``tool missed`` ones as right.

Also counted, not scored: ``outside``, the tool's references that no definition holds (module
level, a test's anonymous ``it(() => ...)`` callback), left out on both sides; ``missed
inside``, the units missed that lie in the definition itself (a class's methods naming it);
and per definition its ``kind`` as the tool gives it (the run also prints TypeScript's figures
without object literals' members).

Usage::

    pip install jedi
    python -m evals.graph_reference [--repo aiohttp --repo fastapi --repo pydantic] [--sample 40]
    npm install --prefix /some/folder typescript@5
    TYPESCRIPT_DIR=/some/folder python -m evals.graph_reference --language typescript \
        [--repo vitest --repo redux] [--root yup=DIR ...]
    apt-get install golang-go
    python -m evals.graph_reference --language go [--repo gin] [--root pflag=DIR ...]

The benchmark's repositories are unpacked from ``../shared/bench`` (as evals.codesearch does);
``--root NAME=DIR`` adds any other folder. Prints a table and writes ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent.parent / "shared" / "bench"
#: The files each language's definitions are sampled from.
SUFFIXES = {"python": (".py",), "typescript": (".ts", ".tsx", ".mts", ".cts"), "go": (".go",)}
#: The files a TypeScript program holds besides (allowJs).
SCRIPT_SUFFIXES = (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")
#: The kind the language service gives an object literal's method or property: a value the
#: literal's reader calls through its type (``props.validator``), seldom by its own name.
OBJECT_MEMBER = "object member"
#: The benchmark's repositories measured by default, per language.
DEFAULT_REPOS = {"python": ["aiohttp", "fastapi", "pydantic"], "typescript": ["vitest", "redux"], "go": ["gin"]}


def _units(root: Path, path: str):
    from ranklens.core.graph.related import reading

    return reading(root, path)


def unit_of(root: Path, path: str, line: int) -> tuple[str, int, int] | None:
    """The innermost definition of ``path`` holding ``line``, as ``(path, start, end)``."""
    from ranklens.core.graph.related import enclosing

    defs = _units(root, path).defs
    d = enclosing(defs, line)
    return (path, d.start_line, d.end_line) if d is not None else None


def _sampled(language: str, path: str, d) -> bool:
    """Whether definition ``d`` of ``path`` is one to sample: named, 3 lines or more, not a
    dunder (Python), a constructor (its callers call the class) nor Go's init or main, not in a
    declaration file."""
    if not d.symbol or d.end_line - d.start_line < 2:
        return False
    if language == "python":
        return not d.symbol.startswith("__")
    if language == "go":
        return d.symbol not in ("init", "main")  # called by the runtime only
    return d.symbol != "constructor" and not path.endswith((".d.ts", ".d.mts", ".d.cts"))


def sample_definitions(root: Path, paths: list[str], every: int, limit: int, language: str = "python") -> list:
    """Every ``every``-th definition of the files, in path order, up to ``limit``: functions,
    methods and classes with a name (no nested helper of 2 lines or fewer)."""
    found = []
    for path in sorted(paths):
        if not path.endswith(SUFFIXES[language]):
            continue
        found.extend(d for d in _units(root, path).defs if _sampled(language, path, d))
    return found[::every][:limit]


def _column(line: str, name: str) -> int | None:
    m = re.search(rf"(?<![A-Za-z0-9_$]){re.escape(name)}(?![A-Za-z0-9_$])", line)
    return m.start() if m else None


def name_site(root: Path, d) -> tuple[int, int] | None:
    """Where definition ``d``'s header spells its name, ``(line, column)``; past a Go method's
    receiver (``func (msg *Error) Error()`` is the method, not its type)."""
    text = (root / d.path).read_text(encoding="utf-8", errors="replace").split("\n")
    for ln in range(d.start_line, min(d.end_line, d.start_line + 8) + 1):
        line = text[ln - 1]
        skip = line.index(")") + 1 if d.path.endswith(".go") and line.startswith("func (") and ")" in line else 0
        col = _column(line[skip:], d.symbol)
        if col is not None:
            return ln, col + skip
    return None


def reference_units(root: Path, d, site: tuple[int, int], refs) -> tuple[dict[tuple[str, int, int], int], int]:
    """The units holding the tool's references ``refs`` (``(path, line, is a definition)``,
    paths relative to ``root``) to definition ``d`` whose name is at ``site``, each with its
    first line of use, and how many references no definition holds (``outside``)."""
    out: dict[tuple[str, int, int], int] = {}
    outside = 0
    for rel, line, definition in refs:
        if rel == d.path and line == site[0]:
            continue  # the definition itself
        if definition:
            continue  # an import binding the name, or another definition of it
        unit = unit_of(root, rel, line)
        if unit is None:
            outside += 1
            continue
        if rel == d.path and unit[1] == d.start_line and unit[2] == d.end_line:
            continue
        out.setdefault(unit, line)
    return out, outside


def verdict(d, found) -> str:
    """What the tool's definitions ``found`` (``(path, line)``, path relative or None) of a use
    of ``d``'s name say: ``tool missed`` (one is ``d``), ``edge wrong`` (another definition) or
    ``unresolved`` (none)."""
    if found is None or not found:
        return "unresolved"
    for rel, line in found:
        if rel == d.path and line is not None and d.start_line <= line <= d.end_line:
            return "tool missed"
    return "edge wrong"


def _relative(root: Path, path) -> str | None:
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


class Jedi:
    """jedi as the reference tool of a Python repository."""

    language = "python"
    label = "jedi"

    def __init__(self, root: Path, paths: list[str]) -> None:
        import jedi

        self.root = root
        # The benchmark keeps a package folder (fastapi/fastapi): its parent is the project, so
        # the package's imports resolve and its modules do not shadow the standard library's
        # (with the folder itself on the path, pydantic/dataclasses.py was taken for `from
        # dataclasses import`).
        self.project = jedi.Project(str(root.parent if (root / "__init__.py").exists() else root))

    def _script(self, path: str):
        import jedi

        return jedi.Script(path=str(self.root / path), project=self.project)

    def references(self, path: str, line: int, col: int) -> list[tuple[str, int, bool]] | None:
        try:
            refs = self._script(path).get_references(line, col, include_builtins=False)
        except Exception:
            return None
        out = []
        for r in refs:
            if r.module_path is None or r.line is None:
                continue
            rel = _relative(self.root, r.module_path)
            if rel is not None:
                out.append((rel, r.line, r.is_definition()))
        return out

    def goto(self, path: str, line: int, col: int) -> list[tuple[str | None, int | None]] | None:
        try:
            found = self._script(path).goto(line, col, follow_imports=True)
        except Exception:
            return None
        return [(_relative(self.root, g.module_path) if g.module_path else None, g.line) for g in found]

    def close(self) -> None:
        pass


class LineTool:
    """A reference tool in another process, asked one JSON line at a time (the protocol of
    ``evals/ts_references.mjs`` and ``evals/go_references``): the files it holds are the ones
    ranklens indexed that end in ``suffixes``."""

    suffixes: tuple[str, ...] = ()

    def __init__(self, root: Path, paths: list[str], command: list[str]) -> None:
        self.root = root
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump([p for p in paths if p.endswith(self.suffixes)], f)
            self._list = f.name
        self.proc = subprocess.Popen(
            [*command, str(root), self._list],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def ask(self, request: dict) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.label} ended (exit {self.proc.poll()})")
        return json.loads(line)

    def column(self, path: str, line: int, col: int) -> int:
        """The column as the tool counts it (characters here)."""
        return col

    def references(self, path: str, line: int, col: int) -> list[tuple[str, int, bool]] | None:
        answer = self.ask({"op": "refs", "file": path, "line": line, "column": self.column(path, line, col)})
        found = answer.get("refs")
        self.last_kind = answer.get("kind", "")
        if found is None:
            return None
        return [(r["file"], r["line"], r["definition"]) for r in found]

    def goto(self, path: str, line: int, col: int) -> list[tuple[str | None, int | None]] | None:
        request = {"op": "goto", "file": path, "line": line, "column": self.column(path, line, col)}
        found = self.ask(request).get("definitions")
        return [(None if g.get("outside") or os.path.isabs(g["file"]) else g["file"], g["line"]) for g in found or []]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        os.unlink(self._list)


class TypeScriptService(LineTool):
    """The TypeScript compiler's language service (``evals/ts_references.mjs``, one Node
    process a repository; the typescript package from ``TYPESCRIPT_DIR``) as the reference tool
    of a TypeScript or JavaScript repository."""

    language = "typescript"
    label = "tsserver"
    suffixes = SCRIPT_SUFFIXES
    SCRIPT = HERE / "ts_references.mjs"

    def __init__(self, root: Path, paths: list[str]) -> None:
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not on PATH")
        super().__init__(root, paths, [node, str(self.SCRIPT)])


class GoTypes(LineTool):
    """Go's type checker (``evals/go_references``, go/types of the standard library, built once
    a run with the ``go`` on PATH) as the reference tool of a Go module."""

    language = "go"
    label = "go/types"
    suffixes = (".go",)
    SOURCE = HERE / "go_references"
    _built: Path | None = None

    def __init__(self, root: Path, paths: list[str]) -> None:
        super().__init__(root, paths, [str(self.build())])

    @classmethod
    def build(cls) -> Path:
        if cls._built is None or not cls._built.exists():
            go = shutil.which("go")
            if go is None:
                raise RuntimeError("go is not on PATH")
            exe = Path(tempfile.mkdtemp(prefix="go-references-")) / "go_references"
            env = {**os.environ, "GO111MODULE": "off"}
            subprocess.run([go, "build", "-o", str(exe), "."], cwd=cls.SOURCE, env=env, check=True)
            cls._built = exe
        return cls._built

    def column(self, path: str, line: int, col: int) -> int:
        """go/token counts bytes."""
        text = (self.root / path).read_text(encoding="utf-8", errors="replace").split("\n")
        return len(text[line - 1][:col].encode("utf-8")) if 0 < line <= len(text) else col


TOOLS = {"python": Jedi, "typescript": TypeScriptService, "go": GoTypes}


def tool_units(root: Path, tool, d) -> tuple[dict[tuple[str, int, int], int], int] | None:
    """The units holding the tool's references to definition ``d`` and the count of those
    outside any (None: the tool found no name there)."""
    site = name_site(root, d)
    if site is None:
        return None
    refs = tool.references(d.path, *site)
    if refs is None:
        return None
    return reference_units(root, d, site, refs)


def adjudicate(root: Path, tool, d, path: str, line: int) -> str:
    """What the tool says the name on ``path:line`` means (:func:`verdict`)."""
    text = (root / path).read_text(encoding="utf-8", errors="replace").split("\n")
    col = _column(text[line - 1], d.symbol) if 0 < line <= len(text) else None
    if col is None:
        return "unresolved"
    return verdict(d, tool.goto(path, line, col))


def ranklens_units(engine, d, limit: int = 200) -> list[tuple[str, int, int, int]]:
    """ranklens's callers then tests of ``d``, as listed: ``(path, start, end, line of use)``
    of those inside a definition."""
    from ranklens.core.navigate import neighbourhood

    found = neighbourhood(engine, d.path, d.start_line, limit)
    if found.unit.start_line != d.start_line:
        return []
    return [(p.path, p.start_line, p.end_line, p.line) for p in found.callers + found.tests if p.name]


def score(definition: str, ref: set, ours: list, verdicts: dict, span: tuple[str, int, int] | None = None) -> dict:
    """One definition's row: the tool's units ``ref``, ranklens's ``ours`` as listed
    (``(path, start, end, line)``), and the verdicts on those of its first 10 the tool lacks;
    ``missed_inside``: the units missed that lie in the definition's own ``span`` (a class's
    methods naming the class: ranklens reads a unit's own code as no caller of it)."""
    listed = [(p, s, e) for p, s, e, _ln in ours]
    top = listed[:10]
    missed = set(ref) - set(listed)
    return {
        "definition": definition,
        "tool": len(ref),
        "ranklens": len(listed),
        "recalled": sum(1 for u in ref if u in set(listed)),
        "top10": len(top),
        "top10_in_tool": sum(1 for u in top if u in ref),
        "top10_tool_missed": sum(1 for v in verdicts.values() if v == "tool missed"),
        "top10_edge_wrong": sum(1 for v in verdicts.values() if v == "edge wrong"),
        "missed": sorted(f"{p}:{s}-{e}" for p, s, e in missed)[:10],
        "missed_inside": sum(1 for p, s, e in missed if span and p == span[0] and span[1] <= s and e <= span[2]),
    }


def totals(rows: list[dict]) -> dict:
    """The figures of a set of rows (one repository's, or all)."""
    n = sum(r["tool"] for r in rows)
    recalled = sum(r["recalled"] for r in rows)
    top = sum(r["top10"] for r in rows)
    top_ok = sum(r["top10_in_tool"] for r in rows)
    missed = sum(r["top10_tool_missed"] for r in rows)
    wrong = sum(r["top10_edge_wrong"] for r in rows)
    return {
        "definitions": len(rows),
        "tool_units": n,
        "recall": recalled / n if n else 0.0,
        "top10": top,
        "precision_at_10": top_ok / top if top else 0.0,
        "precision_at_10_adjudicated": (top_ok + missed) / top if top else 0.0,
        "top10_edge_wrong": wrong,
        "top10_unresolved": top - top_ok - missed - wrong,
        "outside": sum(r.get("outside", 0) for r in rows),
        "missed_inside": sum(r.get("missed_inside", 0) for r in rows),
    }


def run_repo(name: str, root: Path, sample: int, extra_out, language: str = "python") -> dict:
    from ranklens.core.engine import Engine

    engine = Engine(root)
    engine.ensure_index()
    paths = sorted(engine.view.chunks.distinct_paths())
    defs_all = sample_definitions(root, paths, 1, 10**9, language)
    every = max(1, len(defs_all) // (sample * 3))
    tool = TOOLS[language](root, paths)
    rows = []
    times = {"tool": 0.0, "ranklens": 0.0}
    try:
        for d in defs_all[::every]:
            t0 = time.perf_counter()
            found = tool_units(root, tool, d)
            t1 = time.perf_counter()
            if not found or not found[0]:
                continue  # nothing to recall: no reference the tool could find
            ref, outside = found
            ours = ranklens_units(engine, d)
            t2 = time.perf_counter()
            times["tool"] += t1 - t0
            times["ranklens"] += t2 - t1
            verdicts = {}
            for p, s, e, ln in ours[:10]:
                if (p, s, e) not in ref:
                    verdicts[(p, s, e)] = adjudicate(root, tool, d, p, ln)
            rows.append(
                score(f"{d.path}:{d.start_line} {d.symbol}", ref, ours, verdicts, (d.path, d.start_line, d.end_line))
            )
            rows[-1]["outside"] = outside
            rows[-1]["kind"] = getattr(tool, "last_kind", "")
            for p, s, e, ln in ours:
                if (p, s, e) not in ref:
                    extra = {"repo": name, "definition": rows[-1]["definition"], "extra": f"{p}:{s}-{e}", "line": ln}
                    extra["verdict"] = verdicts.get((p, s, e), "not in the first 10")
                    extra_out.write(json.dumps(extra) + "\n")
            listed = {(p, s, e) for p, s, e, _ln in ours}
            for (p, s, e), ln in sorted(ref.items()):
                if (p, s, e) not in listed:
                    miss = {"repo": name, "definition": rows[-1]["definition"], "missed": f"{p}:{s}-{e}", "line": ln}
                    extra_out.write(json.dumps(miss) + "\n")
            if len(rows) >= sample:
                break
    finally:
        tool.close()
        engine.close()
    return {
        "repo": name,
        "language": language,
        "tool": tool.label,
        **totals(rows),
        "seconds": {k: round(v, 2) for k, v in times.items()},
        "rows": rows,
    }


def bench_roots(names: list[str]) -> list[tuple[str, Path]]:
    if not names:
        return []  # (load() takes no names for all of them)
    sys.path.insert(0, str(HERE.parent))
    from evals.codesearch import load

    return [(r.name, r.root) for r in load(BENCH, names)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--language", choices=sorted(TOOLS), default="python")
    ap.add_argument("--repo", action="append", default=[], help="a repository of the benchmark")
    ap.add_argument("--root", action="append", default=[], help="any other folder (NAME=DIR or DIR)")
    ap.add_argument("--sample", type=int, default=40, help="definitions with the tool's references per repository")
    ap.add_argument("--json", default="graph_reference.json")
    ap.add_argument("--extra", default="graph_reference_extra.jsonl")
    args = ap.parse_args(argv)
    os.environ.setdefault("RANKLENS_CACHE_DIR", str(Path(os.environ.get("TMPDIR", "/tmp")) / "ranklens-graph-bench"))
    roots = bench_roots(args.repo or ([] if args.root else DEFAULT_REPOS[args.language]))
    for spec in args.root:
        name, _, folder = spec.rpartition("=")
        roots.append((name or Path(folder).name, Path(folder)))
    results = []
    with open(args.extra, "w") as extra:
        for name, root in roots:
            r = run_repo(name, root, args.sample, extra, args.language)
            results.append(r)
            print(
                f"{name:12} defs={r['definitions']:3} {r['tool']} units={r['tool_units']:4} "
                f"recall={r['recall']:.3f} P@10={r['precision_at_10']:.3f} "
                f"adjudicated={r['precision_at_10_adjudicated']:.3f} (wrong {r['top10_edge_wrong']}, "
                f"unresolved {r['top10_unresolved']}; missed inside itself {r['missed_inside']}; "
                f"outside any unit {r['outside']})  "
                f"{r['tool']} {r['seconds']['tool']}s ranklens {r['seconds']['ranklens']}s",
                flush=True,
            )
    t = totals([row for r in results for row in r["rows"]])
    print(
        f"{'all':12} recall={t['recall']:.3f} P@10={t['precision_at_10']:.3f} "
        f"adjudicated={t['precision_at_10_adjudicated']:.3f} (of {t['top10']} listed: "
        f"{t['top10_edge_wrong']} wrong by the tool's goto)"
    )
    rows = [row for r in results for row in r["rows"]]
    if any(row["kind"] == OBJECT_MEMBER for row in rows):
        t = totals([row for row in rows if row["kind"] != OBJECT_MEMBER])
        print(
            f"all but object literals' members: defs={t['definitions']} "
            f"recall={t['recall']:.3f} P@10={t['precision_at_10']:.3f}"
        )
    Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
