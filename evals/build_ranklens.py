"""Build ``evals/ranklens.jsonl``: the labeled questions over ranklens's own sources.

The questions are asked of a frozen copy of the sources, ``tests/fixtures/ranklens_snapshot/src``
(``core/`` without its models, ``tui/``, ``tests/`` without their fixtures and snapshots, and
``README.md``), not of the live tree: a refactor then leaves the gold spans where they are
and ``tests/test_eval_guard.py`` keeps measuring retrieval, not where code went.

Each gold span is given by what it is (a definition's breadcrumb, a run of lines from one
regex to another, or explicit lines) plus an *anchor*: text the span was chosen for, checked
to lie inside it and written into the query's ``note`` (``tests/test_eval_guard.py`` checks
it again, so a snapshot refreshed under the gold fails CI instead of silently lowering scores).

    python evals/build_ranklens.py                     # re-resolve the spans in the snapshot
    python evals/build_ranklens.py --show r27          # print spans, to read them
    python evals/build_ranklens.py --refresh-snapshot  # copy today's sources in, then re-resolve

Refresh the snapshot deliberately (a new retriever to measure on newer code, a question whose
answer moved), then read every changed span (``--show``) before committing: a question's answer
may have changed, not only its lines, and the floors in ``tests/test_eval_guard.py`` were set
on the old snapshot.

A third of the questions use the code's own words (``identifier``); two thirds are phrased
the way a newcomer would ask without knowing the identifiers (``paraphrase``).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

from ranklens.core.chunking import definitions

REPO = Path(__file__).resolve().parent.parent
#: The frozen sources the questions are asked of (the ``--root`` of the set).
ROOT = REPO / "tests" / "fixtures" / "ranklens_snapshot" / "src"
#: What the snapshot copies from the live tree, and what it leaves out of those folders:
#: the models are large and not source; test fixtures and SVG snapshots are data.
SNAPSHOT_PARTS = ("core", "tui", "tests", "README.md")
SNAPSHOT_SKIP = ("core/models", "tests/fixtures", "tests/tui/__snapshots__", "__pycache__")

I, P = "identifier", "paraphrase"  # noqa: E741  (one letter keeps each row of the table below on one line)


def span(path: str, what) -> tuple[int, int]:
    """Resolve a span spec against the file as it is now."""
    text = (ROOT / path).read_text(encoding="utf-8")
    lines = text.split("\n")
    if isinstance(what, tuple) and what[0] == "lines":
        return what[1], what[2]
    if isinstance(what, tuple) and what[0] == "from":  # ("from", start regex, end regex)
        s = next((i for i, line in enumerate(lines, 1) if re.search(what[1], line)), None)
        e = next((i for i, line in enumerate(lines, 1) if s and i >= s and re.search(what[2], line)), None)
        if s is None or e is None:
            raise SystemExit(f"{path}: no lines from {what[1]!r} to {what[2]!r}")
        return s, e
    # A definition's breadcrumb below the path, with the comment lines just above it.
    for c in definitions(path, text):
        if c.kind != "window" and c.context == f"{path} > {what}":
            s = c.start_line
            while s > 1 and re.match(r"\s*(#|//|/\*|\*)", lines[s - 2]):
                s -= 1
            return s, c.end_line
    raise SystemExit(f"no definition {what!r} in {path}")


Q = [
    ("r01", I, "reciprocal_rank_fusion", [("core/fusion.py", "reciprocal_rank_fusion", "def reciprocal_rank_fusion(")]),
    ("r02", I, "line_windows step overlap", [("core/chunking.py", "line_windows", "def line_windows(")]),
    (
        "r03",
        I,
        "TREE_SITTER_LANGUAGES",
        [("core/languages.py", ("from", r"^#: Languages for which", r"^\)$"), "TREE_SITTER_LANGUAGES: frozenset")],
    ),
    ("r04", I, "_comment_block block_comment", [("core/chunking.py", "_comment_block", "def _comment_block(")]),
    ("r05", I, "check_weight", [("core/fusion.py", "check_weight", "def check_weight(")]),
    ("r06", I, "make_docid", [("core/types.py", "make_docid", "def make_docid(")]),
    (
        "r07",
        I,
        "ARM_FAMILIES",
        [("core/consolidate.py", ("from", r"^#: The family of each", r"^}$"), "ARM_FAMILIES: dict")],
    ),
    ("r08", I, "match_expression", [("core/arms/fts5.py", "match_expression", "def match_expression(")]),
    ("r09", I, "write_json_atomic", [("core/handoff.py", "write_json_atomic", "def write_json_atomic(")]),
    ("r10", I, "_go_receiver", [("core/chunking.py", "_go_receiver", "def _go_receiver(")]),
    ("r11", I, "describe_count", [("tui/screens/export.py", "describe_count", "def describe_count(")]),
    ("r12", I, "Slider action_nudge", [("tui/widgets/slider.py", "Slider > action_nudge", "def action_nudge(")]),
    ("r13", I, "rows_for searchsorted", [("core/store.py", "ChunkTable > rows_for", "def rows_for(")]),
    ("r14", I, "_git_exclude_args", [("core/discovery.py", "_git_exclude_args", "def _git_exclude_args(")]),
    (
        "r15",
        I,
        "test_weights_of_wrong_length_are_refused",
        [
            (
                "tests/test_fusion.py",
                "test_weights_of_wrong_length_are_refused",
                "def test_weights_of_wrong_length_are_refused(",
            )
        ],
    ),
    (
        "r20",
        P,
        "how many lines go into a chunk and how much do neighbouring chunks share",
        [
            (
                "core/chunking.py",
                ("from", r"^Defaults \(window 40", r"issue #5, step 2"),
                "Defaults (window 40, overlap 10)",
            ),
            ("core/chunking.py", ("from", r"^# Why 40/10", r"^DEFAULT_OVERLAP"), "DEFAULT_WINDOW = 40"),
        ],
    ),
    (
        "r21",
        P,
        "work out which programming language a file is written in from its name",
        [("core/languages.py", "language_for", "def language_for(")],
    ),
    (
        "r22",
        P,
        "merge results from different retrievers that point at overlapping lines of the same file",
        [
            (
                "core/consolidate.py",
                ("from", r"^def _groups\(", r"tuple\(best\[a\] for a in sorted\(best\)\)"),
                "Union overlapping (and, optionally, touching) spans",
            )
        ],
    ),
    (
        "r23",
        P,
        "how is it decided whether a result is high, medium or low confidence",
        [
            ("core/consolidate.py", "confidence", "def confidence("),
            ("tui/screens/help.py", ("from", r"^- \*\*conf\*\*", r"^  medium and 5 % of low"), "**conf**"),
        ],
    ),
    (
        "r24",
        P,
        "skip files that look like they hold passwords or keys",
        [
            (
                "core/secrets.py",
                ("from", r"^# --- secret files, by name", r"^_ENV_TEMPLATES"),
                "_SECRET_EXACT = frozenset",
            ),
            ("core/secrets.py", "is_secret_name", "def is_secret_name("),
        ],
    ),
    (
        "r25",
        P,
        "list only the files that git tracks or would track",
        [("core/discovery.py", "_git_list", "def _git_list(")],
    ),
    (
        "r26",
        P,
        "split camelCase and snake_case identifiers into separate words",
        [
            (
                "core/tokenize.py",
                ("from", r"^# Split points inside an identifier", r"return \(whole,\)$"),
                "def split_identifier(",
            )
        ],
    ),
    (
        "r27",
        P,
        "why is bm25 scoring fast when a query runs",
        [
            (
                "core/bm25.py",
                ("from", r'^"""BM25Okapi served', r"does not recompute 7 million of them"),
                "computes the impacts of its few columns only",
            )
        ],
    ),
    (
        "r28",
        P,
        "nearest neighbour search over the embedding vectors",
        [("core/vectors.py", "VectorIndex > search", "def search(")],
    ),
    (
        "r29",
        P,
        "why exact vector search instead of an approximate graph index",
        [
            (
                "core/vectors.py",
                ("from", r"^Design decision: exact search", r"that is the size at which to add an HNSW layer"),
                "exact search, no HNSW graph",
            )
        ],
    ),
    (
        "r30",
        P,
        "make sure loading the local model never downloads anything from the hub",
        [("core/embedding.py", "_offline", "def _offline(")],
    ),
    (
        "r31",
        P,
        "rebuild the index from scratch when its format or settings changed",
        [("core/indexer.py", "Indexer > _open", "chunking or discovery settings changed")],
    ),
    (
        "r32",
        P,
        "only re-read and re-embed files that changed since the last index run",
        [("core/indexer.py", "Indexer > _plan", "if old and old[2] == sha:")],
    ),
    (
        "r33",
        P,
        "stop two indexers from writing the same index at once",
        [("core/indexer.py", "Indexer > update", "FileLock(")],
    ),
    (
        "r34",
        P,
        "run each retriever on its own thread and combine their rankings",
        [("core/engine.py", "Engine > search", "self._pool.submit(job, name)")],
    ),
    (
        "r35",
        P,
        "change the weights and re-rank without running the retrievers again",
        [("core/engine.py", "Engine > fuse", "def fuse(")],
    ),
    ("r36", P, "refuse an empty or overly long query", [("core/engine.py", "check_query", "def check_query(")]),
    ("r37", P, "restrict results to one folder or one language", [("core/store.py", "ChunkTable > mask", "def mask(")]),
    (
        "r38",
        P,
        "keep special characters in the user's text from being parsed as search syntax",
        [
            ("core/arms/fts5.py", ("from", r'^"""``fts5``', r"are just words"), "never reaches FTS5's query parser"),
            ("core/arms/fts5.py", "match_expression", "'\"' + t.replace('\"', '\"\"') + '\"'"),
        ],
    ),
    (
        "r39",
        P,
        "make a function's name count more than words that merely mention it",
        [("core/arms/symbols.py", ("lines", 1, 16), "times, so a name match outweighs a passing mention")],
    ),
    (
        "r40",
        P,
        "slider values stay on a fixed grid so repeated steps do not drift",
        [
            (
                "tui/widgets/slider.py",
                ("from", r'^"""A horizontal float slider', r"land on exactly 3.0"),
                "never accumulate float drift",
            ),
            ("tui/widgets/slider.py", ("from", r"def _index_of\(", r"return self._at\(self._index_of"), "def _at("),
        ],
    ),
    (
        "r41",
        P,
        "emphasise the query words in the code preview",
        [("tui/widgets/preview.py", ("from", r"^def query_terms\(", r"^    return ranges$"), "def term_ranges(")],
    ),
    (
        "r42",
        P,
        "dialog asking where to write the exported results",
        [("tui/screens/export.py", "ExportScreen", "class ExportScreen(")],
    ),
    (
        "r43",
        P,
        "what do the agree and conf columns mean",
        [("tui/screens/help.py", ("from", r"^## Columns", r"^- Dimmed rows"), "**agree**")],
    ),
    (
        "r44",
        P,
        "get the docstring of a python function",
        [("core/chunking.py", "_python_docstring", "def _python_docstring(")],
    ),
    (
        "r45",
        P,
        "test that the order of the rankings does not change the fused result",
        [
            (
                "tests/test_fusion.py",
                ("from", r"^@given\(st.lists", r"assert math.isfinite"),
                "def test_order_of_rankings_does_not_change_the_result(",
            )
        ],
    ),
    (
        "r46",
        P,
        "what does the vector index file look like on disk",
        [("core/vectors.py", ("from", r"^Storage$", r"front. A view becomes an in-memory copy"), 'magic  b"RLVECIDX"')],
    ),
    (
        "r47",
        P,
        "which folders are never searched, like node_modules or virtualenvs",
        [
            (
                "core/discovery.py",
                ("from", r"^#: Directory basenames never descended", r"^}\)$"),
                "BUILTIN_EXCLUDED_DIRS: frozenset",
            )
        ],
    ),
    (
        "r48",
        P,
        "detect a private key pasted inside a file",
        [
            ("core/secrets.py", ("from", r"^# --- private-key blocks", r"^_KEY_HINTS"), "_KEY_BLOCK = re.compile("),
            ("core/secrets.py", "_key_blocks", "def _key_blocks("),
        ],
    ),
    (
        "r49",
        P,
        "build the JSON that hands the results to a coding agent",
        [("core/handoff.py", "envelope", "def envelope(")],
    ),
    (
        "r50",
        P,
        "a model that fails to load should only switch off the semantic retriever",
        [
            ("core/arms/dense.py", "DenseArm > __init__", "raise ArmUnavailable(str(exc))"),
            ("core/engine.py", "Engine > _arm_on_view", "except ArmUnavailable as exc:"),
        ],
    ),
]


def build() -> list[dict]:
    out = []
    for qid, kind, query, golds in Q:
        gold, anchors = [], []
        for path, what, anchor in golds:
            s, e = span(path, what)
            text = "\n".join((ROOT / path).read_text(encoding="utf-8").split("\n")[s - 1 : e])
            if anchor not in text:
                raise SystemExit(f"{qid}: {anchor!r} is not in {path}:{s}-{e}")
            gold.append({"path": path, "start_line": s, "end_line": e})
            anchors.append(anchor)
        note = "gold holds " + "; ".join("`" + a + "`" for a in anchors)
        out.append({"id": qid, "kind": kind, "query": query, "gold": gold, "note": note})
    return out


def refresh_snapshot() -> None:
    """Replace the snapshot with a copy of the live sources (git-tracked or not)."""
    if ROOT.exists():
        shutil.rmtree(ROOT)

    def skip(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).relative_to(REPO).as_posix()
        return {n for n in names if n == "__pycache__" or f"{rel}/{n}" in SNAPSHOT_SKIP}

    for part in SNAPSHOT_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, ROOT / part, ignore=skip)
        else:
            ROOT.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, ROOT / part)
    print(f"snapshot refreshed: {sum(1 for p in ROOT.rglob('*') if p.is_file())} files in {ROOT}")


def main(argv: list[str]) -> None:
    if argv[:1] == ["--refresh-snapshot"]:
        refresh_snapshot()
        argv = argv[1:]
    queries = build()
    if argv[:1] == ["--show"]:
        wanted = set(argv[1].split(",")) if len(argv) > 1 else None
        for q in queries:
            if wanted and q["id"] not in wanted:
                continue
            print(f"== {q['id']} [{q['kind']}] {q['query']}")
            for g in q["gold"]:
                lines = (ROOT / g["path"]).read_text(encoding="utf-8").split("\n")
                print(f"-- {g['path']}:{g['start_line']}-{g['end_line']}")
                for n in range(g["start_line"], g["end_line"] + 1):
                    print(f"{n:5} {lines[n - 1]}")
        return
    target = REPO / "evals" / "ranklens.jsonl"
    with open(target, "w", encoding="utf-8") as fh:
        for q in queries:
            fh.write(json.dumps(q, ensure_ascii=False) + "\n")
    kinds = [q["kind"] for q in queries]
    print(f"{len(queries)} queries ({kinds.count(I)} identifier, {kinds.count(P)} paraphrase) -> {target}")


if __name__ == "__main__":
    main(sys.argv[1:])
