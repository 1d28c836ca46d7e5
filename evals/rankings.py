"""Every ranking a query can show, recorded field for field: the check that a change to the
query path (fusion, grouping, the ranking stage, the chunk step) changes no ranking.

    python -m evals.rankings corpus ROOT --out FILE     # a folder (bench_engine's 50k corpus)
    python -m evals.rankings dev --out FILE             # the benchmark's dev split (420 questions)
    python -m evals.rankings spans --out FILE           # the span set (120)
    python -m evals.rankings slider ROOT --out FILE     # bench_tui's 500 candidates over ROOT
    python -m evals.rankings fixture                    # rewrite tests/test_rankings.py's stored dump
    python -m evals.rankings compare OLD NEW            # which rankings differ

Per question, the engine searches once with the root's settings, then re-fuses those cached
rankings with each of :data:`VARIANTS` in turn (as sliders, ``p`` and the CLI's flags do): the
top 10, 50 and every hit; two other weight and k sets (one weighing an arm 0); without the
ranking stage; without the chunk step and with 10 top files; each arm alone; the rankings as
a plain mapping (no query); and the root's settings again last. Each arm's own ranking is
recorded too. When every question is done they are asked again in reverse order through
``search`` (``again``), so what is kept per query cannot leak into another's answer.

``slider`` is the benchmark of a slider move (``benchmarks/bench_tui.py``): four arms' made-up
rankings of 150 one-line spans of ROOT's files each, 500 groups, fused with each variant (no
question: the stage reads an empty one).

A ranking is recorded as the sha256 of the ``repr`` of its hits (every field, floats exact),
with its length and first docids. To dump another checkout, run this file from that
checkout's folder with ``PYTHONPATH=<checkout>`` (``cd OLD && PYTHONPATH=OLD python
NEW/evals/rankings.py dev --out F``): it imports ``ranklens`` from there, and says which.
``--show QUESTION`` prints the hits themselves, to diff two checkouts. ``RANKLENS_DEEP=0``
is set: the four arms always installed. A full check (the three sets, about 5 minutes
here) compares 15,390 rankings.

:func:`record` is also what ``tests/test_rankings.py`` stores for a small real repository
(``fixture``: :data:`FIXTURE_QUESTIONS` over ``tests/fixtures/ranklens_snapshot/src``), each
ranking's hits with every float rounded to 6 significant digits, hashed without the floats,
which are kept as one sum compared within 1e-5 (a stored file must not depend on the last
bits of one CPU's sums: a dense cosine computed with other SIMD lands across a rounding
boundary). It was written at the commit before the query pipeline (101b972) and is rewritten
only when a ranking is meant to change.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields, is_dataclass
from pathlib import Path

#: Other weights and k a slider may reach: every arm moved, and one weighing an arm 0.
WEIGHTS_A = ({"bm25": 0.5, "fts5": 1.3, "dense": 2.0, "symbols": 0.6}, 20.0)
WEIGHTS_B = ({"bm25": 2.0, "fts5": 0.0, "dense": 0.7, "symbols": 1.5}, 60.0)
#: name -> (weights and k or None for the root's, top-k or None for all, what else changes)
VARIANTS: dict[str, tuple] = {
    "top10": (None, 10, {}),
    "top50": (None, 50, {}),
    "all": (None, None, {}),
    "a-top10": (WEIGHTS_A, 10, {}),
    "a-top50": (WEIGHTS_A, 50, {}),
    "a-all": (WEIGHTS_A, None, {}),
    "b-top10": (WEIGHTS_B, 10, {}),
    "b-all": (WEIGHTS_B, None, {}),
    "nostage-top10": (None, 10, {"priors": False}),
    "nostage-all": (None, None, {"priors": False}),
    "a-nostage-all": (WEIGHTS_A, None, {"priors": False}),
    "nochunk-top10": (None, 10, {"chunk_files": 0}),
    "nochunk-all": (None, None, {"chunk_files": 0}),
    "a-nochunk-all": (WEIGHTS_A, None, {"chunk_files": 0}),
    "files10-all": (None, None, {"chunk_files": 10}),
    "again-all": (None, None, {}),
}
BENCH = Path(os.environ.get("RANKLENS_BENCH", Path(__file__).resolve().parents[2] / "shared" / "bench"))
REPO = Path(__file__).resolve().parents[1]
FIXTURE_ROOT = REPO / "tests" / "fixtures" / "ranklens_snapshot" / "src"
FIXTURE_FILE = REPO / "tests" / "fixtures" / "rankings.json"
#: Every fourth question of evals/ranklens.jsonl (identifiers and paraphrases), and three that
#: quote a passage or name code inside a question.
FIXTURE_QUESTIONS = [
    "reciprocal_rank_fusion",
    "check_weight",
    "write_json_atomic",
    "rows_for searchsorted",
    "work out which programming language a file is written in from its name",
    "list only the files that git tracks or would track",
    "why exact vector search instead of an approximate graph index",
    "stop two indexers from writing the same index at once",
    "restrict results to one folder or one language",
    "emphasise the query words in the code preview",
    "test that the order of the rankings does not change the fused result",
    "build the JSON that hands the results to a coding agent",
    'where is "the index is not ready yet" raised',
    'the error "no retriever could answer"',
    "how does Engine.search fuse the arms",
]


def variants(base) -> Iterable[tuple[str, object, int | None]]:
    """``(name, settings, top-k)`` of each of :data:`VARIANTS` over the settings ``base``."""
    from ranklens.core.query.ranking import Params

    for name, (tuned, top_k, other) in VARIANTS.items():
        settings = base if tuned is None else base.with_(weights=tuned[0], k=tuned[1])
        if "priors" in other:
            settings = settings.with_(priors=other["priors"])
        if "chunk_files" in other:
            settings = settings.with_(stage=Params(chunk_files=other["chunk_files"]))
        yield name, settings, top_k


def rankings(engine, query: str) -> Iterable[tuple[str, list]]:
    """``(variant, hits)`` for every ranking of ``query`` recorded (see the module docstring)."""
    result = engine.search(query, top_k=10)
    yield "search10", result.hits
    for arm in sorted(result.results):
        yield f"arm:{arm}", result.results[arm].hits
    results = list(result.results.values())
    base = result.settings
    for name, settings, top_k in variants(base):
        yield name, engine.fuse(results, settings, top_k=top_k)
    for arm in sorted(result.answered):
        yield f"alone:{arm}", engine.fuse(results, base.with_(arms=(arm,)))
    yield "mapping", engine.fuse({r.arm: r.hits for r in results if r.ok})


def digest(hits: list) -> dict:
    text = "\n".join(repr(h) for h in hits)
    return {"sha": hashlib.sha256(text.encode()).hexdigest()[:20], "n": len(hits), "head": [h.docid for h in hits[:3]]}


def rounded(value, digits: int = 6):
    """``value`` (a hit, a field of one) as plain data, every float rounded to ``digits``
    significant digits; a dataclass or a named tuple as a dict of its fields, whichever it is."""
    if isinstance(value, float):
        return float(f"{value:.{digits}g}")
    if is_dataclass(value):
        return {f.name: rounded(getattr(value, f.name), digits) for f in fields(value)}
    if hasattr(value, "_asdict"):
        return rounded(value._asdict(), digits)
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(v, digits) for v in value]
    return value


def record(engine, queries: Iterable[str], keep: Callable[[list], object] = digest) -> dict:
    """``{query: {variant: keep(hits)}}`` for each query, then ``again`` in reverse order."""
    queries = list(queries)
    out: dict[str, dict] = {}
    for q in queries:
        out[q] = {name: keep(hits) for name, hits in rankings(engine, q)}
    for q in reversed(queries):
        out[q]["again"] = keep(engine.search(q, top_k=1000).hits)
    return out


def as_data(hits: list) -> list:
    """Every field of every hit, floats rounded (:func:`rounded`), but its runners-up
    (``alternatives``: not the ranking, and not in ``repr``, so :func:`digest` skips them too)."""
    return [{k: v for k, v in rounded(h).items() if k != "alternatives"} for h in hits]


def _floats(value, out: list) -> object:
    """``value`` (:func:`as_data`) with each float replaced by ``"f"``, the floats appended to
    ``out`` in order."""
    if isinstance(value, float):
        out.append(value)
        return "f"
    if isinstance(value, dict):
        return {k: _floats(v, out) for k, v in value.items()}
    if isinstance(value, list):
        return [_floats(v, out) for v in value]
    return value


def stored(hits: list) -> dict:
    """What the stored dump keeps of a ranking: the hash of :func:`as_data` with its floats
    taken out (every docid, span, label and order, exact), the floats' sum of magnitudes (a
    dense cosine differs in its last bits between CPUs, so rounding then hashing would fail on
    a machine whose sum lands across a rounding boundary: :func:`same` allows 1e-5 of it), its
    length and first docids."""
    floats: list[float] = []
    shape = _floats(as_data(hits), floats)
    text = json.dumps(shape, sort_keys=True)
    return {
        "sha": hashlib.sha256(text.encode()).hexdigest()[:20],
        "floats": float(f"{sum(abs(f) for f in floats if f == f and abs(f) != float('inf')):.9g}"),
        "n": len(hits),
        "head": [h.docid for h in hits[:3]],
    }


def same(a: dict | None, b: dict | None) -> bool:
    """Whether two :func:`stored` records are one ranking: everything exact but the floats'
    sum, within 1e-5 of it."""
    if a is None or b is None:
        return a is b
    return {**a, "floats": 0} == {**b, "floats": 0} and math.isclose(
        a["floats"], b["floats"], rel_tol=1e-5, abs_tol=1e-9
    )


def fixture_rankings(cache: Path | None = None) -> dict:
    """The stored dump's rankings, from a fresh index of :data:`FIXTURE_ROOT`."""
    from ranklens.core.engine import Engine

    engine = Engine(FIXTURE_ROOT, cache_dir=cache)
    try:
        engine.ensure_index(deep=False)
        return record(engine, FIXTURE_QUESTIONS, stored)
    finally:
        engine.close()


# ---------------------------------------------------------------------------- the sets


def _bench_repos() -> Path:
    sys.path.insert(0, str(BENCH))
    import run  # the benchmark's own runner: unpacking, the questions

    repos = Path(os.environ.get("TMPDIR") or "/tmp") / "ranklens-bench" / "repos"
    run.unpack(repos)
    return repos


def bench_sets(which: str) -> dict[Path, list[str]]:
    """root -> its questions, for the dev split (``dev``) or the span set (``spans``)."""
    repos = _bench_repos()
    import run

    specs = run.load_specs()
    tasks = run.load_tasks(specs) if which == "dev" else run.load_span_tasks(specs)
    out: dict[Path, list[str]] = {}
    for t in tasks:
        spec = specs[t["repo"]]
        root = repos / t["repo"] / spec["benchmark_root"] if spec.get("benchmark_root") else repos / t["repo"]
        out.setdefault(root, []).append(t["query"])
    return out


#: The 50k corpus's questions besides bench_engine's: some quote a passage, some name code.
CORPUS_EXTRA = [
    '"Expecting value"',
    'where is "maximum recursion depth exceeded" raised',
    "JSONDecodeError",
    "ThreadPoolExecutor",
    "urlsplit",
    "csr_matrix",
    "how does TextIOWrapper decode newlines",
    "scipy.optimize.minimize",
    'the error "invalid literal for int"',
    "SequenceMatcher ratio",
]


def corpus_set(root: Path) -> dict[Path, list[str]]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_engine import QUERIES

    return {root: [*QUERIES, *CORPUS_EXTRA]}


def slider(root: Path, out: Path) -> None:
    """The ``slider`` set: bench_tui's synthetic rankings over ``root``, every variant."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_tui import synthetic_rankings

    from ranklens.core.engine import Engine

    engine = Engine(root)
    engine.ensure_index(deep=False)
    results = synthetic_rankings(engine.root, list(engine.fusion().arms))
    base = engine.fusion()
    found: dict[str, dict] = {"slider": {}}
    for name, settings, top_k in variants(base):
        found["slider"][name] = digest(engine.fuse(list(results.values()), settings, top_k=top_k))
    for i in range(10):  # a slider pressed right and left, as bench_tui does
        weights = {"bm25": 1.0 + 0.1 * (i % 2), "dense": 0.8 + 0.05 * i}
        found["slider"][f"move{i}"] = digest(engine.fuse(list(results.values()), weights=weights, k=base.k + i))
    engine.close()
    out.write_text(json.dumps(found, indent=0, sort_keys=True))


def dump(sets: Mapping[Path, list[str]], out: Path, show: str | None = None) -> None:
    import ranklens
    from ranklens.core.engine import Engine

    print(f"ranklens from {Path(ranklens.__file__).parent.parent}", file=sys.stderr)
    found: dict[str, dict] = {}
    t0 = time.perf_counter()
    for root, queries in sets.items():
        engine = Engine(root)
        engine.ensure_index(deep=False)
        if show is not None:
            for q in queries:
                if q == show:
                    for name, hits in rankings(engine, q):
                        print(f"== {name}")
                        for h in hits:
                            print(repr(h))
            engine.close()
            continue
        for q, got in record(engine, queries).items():
            found[f"{root.parent.name}/{root.name}\t{q}"] = got
        engine.close()
        print(
            f"{root.parent.name}/{root.name}: {len(queries)} questions ({time.perf_counter() - t0:.0f} s)",
            file=sys.stderr,
        )
    if show is None:
        out.write_text(json.dumps(found, indent=0, sort_keys=True))
        n = sum(len(v) for v in found.values())
        print(f"{len(found)} questions, {n} rankings -> {out}", file=sys.stderr)


def compare(old: Path, new: Path) -> int:
    a, b = json.loads(old.read_text()), json.loads(new.read_text())
    same = differ = 0
    for q in sorted(set(a) | set(b)):
        for name in sorted(set(a.get(q, {})) | set(b.get(q, {}))):
            x, y = a.get(q, {}).get(name), b.get(q, {}).get(name)
            if x == y:
                same += 1
            else:
                differ += 1
                print(f"DIFFERS {q!r} {name}: {x} -> {y}")
    print(f"{same} rankings identical, {differ} differ ({len(a)} / {len(b)} questions)")
    return 1 if differ else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("set", choices=("corpus", "dev", "spans", "slider", "fixture", "compare"))
    ap.add_argument("paths", nargs="*", type=Path, help="corpus, slider: the root; compare: the two dumps")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--show", help="print every ranking of this question instead")
    args = ap.parse_args(argv)
    if args.set == "compare":
        return compare(*args.paths)
    os.environ["RANKLENS_DEEP"] = "0"
    if args.set == "slider":
        slider(args.paths[0].resolve(), args.out)
        return 0
    if args.set == "fixture":
        out = args.out or FIXTURE_FILE
        out.write_text(json.dumps(fixture_rankings(), indent=1, sort_keys=True) + "\n")
        print(f"{len(FIXTURE_QUESTIONS)} questions -> {out}", file=sys.stderr)
        return 0
    sets = corpus_set(args.paths[0].resolve()) if args.set == "corpus" else bench_sets(args.set)
    if args.out is None and args.show is None:
        ap.error("--out or --show")
    dump(sets, args.out, args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
