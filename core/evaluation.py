"""Retrieval evaluation and fusion tuning over a labeled query file.

A labeled query file is JSONL, one query per line::

    {"id": "q1", "query": "where are passwords hashed", "kind": "paraphrase",
     "gold": [{"path": "app/auth.py", "start_line": 9, "end_line": 11}, "app/hashing.py"]}

``path`` is POSIX and relative to the root; lines are 1-based and inclusive. A gold target
is a span, or a whole file: ``{"path": ...}`` without lines, or the bare path string.
``kind`` is optional and groups the report. ``note`` (free text) and ``not_relevant``
(targets judged not relevant, as the TUI's judgments file writes them) are accepted and not
scored. A query with an empty ``gold`` has nothing to find and is left out of the figures
(and counted). Fields this module does not read (``repo``, a target's ``symbol`` …) are
ignored, and named once per file through ``notify``.

The public code-search benchmark's annotation files are read as they are: a JSON *array* of
``{"query", "relevant": [...], "secondary": [...], "category"}`` whose targets are path
strings or ``{"path", "start_line", "end_line"}``. ``relevant`` and ``secondary`` are both
gold, ``category`` is the ``kind``, and a query's id is its 1-based position in the array.
Their paths are relative to the repository checkout, not to the folder searched inside it:
:func:`rebase_gold` strips that leading folder.

Metrics (pure functions below, over the top 10 of a ranking):

* ``hit@k``: some result among the first k *locates* a gold target (:func:`locates`). A
  whole-file target is located by any result in that file. A span is located by a *span
  hit*: same file, sharing at least half of the shorter of the two, and no longer than
  ``max(100, 2 x the gold's)`` lines. A window that grazes a function by four lines, or a
  whole-file hit that happens to contain it, does not locate it.
* ``file_hit@5``: some result among the first 5 is in a file that holds a gold target.
* ``mrr@10``: 1 / rank of the first result locating a target, 0 when none is in the top 10.
* ``ndcg@10``: binary gain; each gold target is credited at most once, so a result that only
  locates targets already credited earns nothing. A whole-file target is thus credited once,
  by the first result in its file, as the benchmark's own metric does (it takes a target's
  first matching rank). Ideal DCG is that of ``min(len(gold), 10)`` hits at the top.

Each query is run once per arm through :meth:`core.engine.Engine.search` with the run's
:class:`core.settings.FusionSettings`; every arm is scored on its own top 10 as a
single-retriever query shows it (its pool re-ordered by the priors when the ranking stage is
on) and the fused list on the consolidated hits. Tuning re-fuses the cached rankings through
the engine's own fusion (no arm runs again), so it optimises the list a user sees.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple, Protocol

from .settings import FusedBy, FusionSettings

TOP_K = 10
METRICS = ("hit@1", "hit@5", "hit@10", "file_hit@5", "mrr@10", "ndcg@10")
#: The name of the fused row in reports.
FUSED = "fused"
#: Queries without a ``kind`` are grouped under this name.
NO_KIND = "-"
MAX_FILE_BYTES = 20 << 20


class SpanLike(Protocol):
    path: str
    start_line: int
    end_line: int


class Span(NamedTuple):
    """A gold target or a result: POSIX path relative to the root, 1-based inclusive lines;
    without lines (``Span(path)``) a gold target that is the whole file."""

    path: str
    start_line: int | None = None
    end_line: int | None = None

    @property
    def whole_file(self) -> bool:
        return self.start_line is None

    def to_dict(self) -> dict:
        if self.whole_file:
            return {"path": self.path}
        return {"path": self.path, "start_line": self.start_line, "end_line": self.end_line}


@dataclass(frozen=True)
class LabeledQuery:
    """One line of a labeled query file."""

    id: str
    query: str
    gold: tuple[Span, ...]
    kind: str | None = None
    line: int = 0
    not_relevant: tuple[Span, ...] = ()

    def to_dict(self) -> dict:
        out: dict = {"id": self.id, "query": self.query}
        if self.kind is not None:
            out["kind"] = self.kind
        out["gold"] = [g.to_dict() for g in self.gold]
        if self.not_relevant:
            out["not_relevant"] = [g.to_dict() for g in self.not_relevant]
        return out


class EvalFileError(ValueError):
    """A labeled query file cannot be used; the message names the file and line."""


# --------------------------------------------------------------------------- loading

_KEYS = {"id", "query", "gold", "kind", "note", "not_relevant"}
#: The fields of one item of a benchmark annotation file that are read.
_BENCH_KEYS = {"query", "relevant", "secondary", "category"}
_TARGET_KEYS = {"path", "start_line", "end_line"}
_TARGETS = 'a list of paths or {"path", "start_line", "end_line"}'

Notify = Callable[[str], None]


def load_queries(path: Path | str, notify: Notify | None = None) -> list[LabeledQuery]:
    """Read and validate a labeled query file (raises :class:`EvalFileError`).

    JSONL, or a benchmark annotation file (a JSON array, :func:`parse_annotations`).
    ``notify`` gets one line naming the fields that were ignored, if any were.
    """
    p = Path(path).expanduser()
    try:
        if p.is_dir():
            raise EvalFileError(f"{path}: is a directory, not a labeled query file")
        if p.stat().st_size > MAX_FILE_BYTES:
            raise EvalFileError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MB")
        data = p.read_bytes()
    except FileNotFoundError:
        raise EvalFileError(f"{path}: no such file") from None
    except OSError as exc:
        raise EvalFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EvalFileError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    if text.lstrip("\ufeff \t\r\n").startswith("["):
        return parse_annotations(text, source=str(path), notify=notify)
    return parse_queries(text.splitlines(), source=str(path), notify=notify)


def parse_queries(
    lines: Iterable[str], source: str = "<queries>", notify: Notify | None = None
) -> list[LabeledQuery]:
    """Validate JSONL lines into labeled queries; blank lines are skipped."""
    out: list[LabeledQuery] = []
    seen: dict[str, int] = {}
    ignored: set[str] = set()
    for number, raw in enumerate(lines, start=1):
        line = raw.strip().lstrip("\ufeff") if number == 1 else raw.strip()
        if not line:
            continue

        def bad(message: str) -> EvalFileError:
            return EvalFileError(f"{source}:{number}: {message}")

        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise bad(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise bad(f"expected a JSON object, got {type(obj).__name__}")
        ignored.update(set(obj) - _KEYS)
        qid = obj.get("id")
        if isinstance(qid, bool) or not isinstance(qid, (str, int)) or str(qid).strip() == "":
            raise bad('"id" must be a non-empty string')
        qid = str(qid).strip()
        if qid in seen:
            raise bad(f"duplicate id {qid!r} (first on line {seen[qid]})")
        seen[qid] = number
        query = _query_text(obj, bad)
        kind = _kind(obj.get("kind"), "kind", bad)
        if "gold" not in obj:
            raise bad(f'missing "gold" ({_TARGETS})')
        gold = _targets(obj["gold"], "gold", bad, ignored)
        not_relevant = _targets(obj.get("not_relevant", []), "not_relevant", bad, ignored)
        out.append(LabeledQuery(qid, query, gold, kind, number, not_relevant))
    if not out:
        raise EvalFileError(f"{source}: holds no queries")
    _note_ignored(source, ignored, notify)
    return out


def parse_annotations(
    text: str, source: str = "<annotations>", notify: Notify | None = None
) -> list[LabeledQuery]:
    """Validate a benchmark annotation file into labeled queries.

    The file is a JSON array of ``{"query", "relevant", "secondary"?, "category"?}``:
    ``relevant`` and ``secondary`` together are the gold, ``category`` is the kind, and a
    query's id is its 1-based position in the array (the items have none).
    """
    try:
        items = json.loads(text.lstrip("\ufeff"))
    except json.JSONDecodeError as exc:
        where = f"{source}:{exc.lineno}"
        raise EvalFileError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(items, list):
        raise EvalFileError(f"{source}: expected a JSON array of queries, got {type(items).__name__}")
    out: list[LabeledQuery] = []
    ignored: set[str] = set()
    for number, item in enumerate(items, start=1):

        def bad(message: str) -> EvalFileError:
            return EvalFileError(f"{source}: item {number}: {message}")

        if not isinstance(item, dict):
            raise bad(f"expected a JSON object, got {type(item).__name__}")
        ignored.update(set(item) - _BENCH_KEYS)
        query = _query_text(item, bad)
        kind = _kind(item.get("category"), "category", bad)
        if "relevant" not in item:
            raise bad(f'missing "relevant" ({_TARGETS})')
        gold = _targets(item["relevant"], "relevant", bad, ignored)
        gold += _targets(item.get("secondary", []), "secondary", bad, ignored)
        out.append(LabeledQuery(str(number), query, gold, kind))
    if not out:
        raise EvalFileError(f"{source}: holds no queries")
    _note_ignored(source, ignored, notify)
    return out


def _note_ignored(source: str, ignored: set[str], notify: Notify | None) -> None:
    # Once per file: a field every line carries would otherwise bury the other messages.
    if ignored and notify is not None:
        notify(f"{source}: ignored fields ranklens does not use: {', '.join(sorted(ignored))}")


def _query_text(obj: dict, bad: Callable[[str], EvalFileError]) -> str:
    from .engine import QueryError, check_query

    query = obj.get("query")
    if not isinstance(query, str):
        raise bad('"query" must be a string')
    try:
        return check_query(query)
    except QueryError as exc:
        raise bad(f'"query": {exc}') from None


def _kind(value: object, name: str, bad: Callable[[str], EvalFileError]) -> str | None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise bad(f'"{name}" must be a non-empty string when given')
    return value.strip() if value else None


def _targets(
    value: object, name: str, bad: Callable[[str], EvalFileError], ignored: set[str]
) -> tuple[Span, ...]:
    """Gold targets: path strings (whole files) or ``{"path", "start_line"?, "end_line"?}``."""
    if not isinstance(value, list):
        raise bad(f'"{name}" must be {_TARGETS}')
    spans = []
    for i, item in enumerate(value, start=1):
        where = f'"{name}" item {i}'
        if isinstance(item, str):
            item = {"path": item}
        elif not isinstance(item, dict):
            raise bad(f"{where} must be a path or an object")
        ignored.update(f"{name}.{key}" for key in set(item) - _TARGET_KEYS)
        path = item.get("path")
        if not isinstance(path, str) or not path.strip():
            raise bad(f'{where}: "path" must be a non-empty string')
        path = path.strip()
        if path.startswith("/") or "\\" in path or ".." in path.split("/"):
            raise bad(f'{where}: "path" must be relative to the root, with / separators')
        path = path.removeprefix("./")
        start, end = item.get("start_line"), item.get("end_line")
        if start is None and end is None:
            spans.append(Span(path))
            continue
        for key, v in (("start_line", start), ("end_line", end)):
            if v is None:
                raise bad(f'{where}: "{key}" is missing (give both lines, or neither for the whole file)')
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise bad(f'{where}: "{key}" must be a whole number >= 1')
        if end < start:
            raise bad(f"{where}: end_line {end} is before start_line {start}")
        spans.append(Span(path, start, end))
    return tuple(spans)


def rebase_gold(queries: Sequence[LabeledQuery], root: Path | str) -> tuple[list[LabeledQuery], str | None]:
    """Make gold paths written relative to a folder above ``root`` relative to ``root``.

    The benchmark names files relative to the repository checkout while the folder searched
    may be a subfolder of it: redux's targets say ``src/createStore.ts`` and the root is
    ``<checkout>/src``. The prefix to strip is then a trailing part of ``root``'s own path
    (``src``, ``redux/src`` …); the one under which most gold files exist in ``root`` is
    taken, and only when that is more than exist as written (ties: the shorter prefix). One
    prefix for the whole file, from the files on disk, so a path that is already relative
    to ``root`` is never rewritten by a guess. Returns the queries (the same ones when
    nothing is stripped) and a one-line note saying what was done, or None.
    """
    root_path = Path(os.path.abspath(Path(root).expanduser()))
    paths = {g.path for q in queries for g in (*q.gold, *q.not_relevant)}

    def under(prefix: str) -> set[str]:
        return {p for p in paths if p.startswith(prefix + "/")}

    def found(prefix: str) -> int:
        if not prefix:
            return sum((root_path / p).is_file() for p in paths)
        return sum((root_path / p[len(prefix) + 1 :]).is_file() for p in under(prefix))

    best, best_found = "", found("")
    for i in range(1, len(root_path.parts)):
        prefix = "/".join(root_path.parts[-i:])
        n = found(prefix)
        if n > best_found:
            best, best_found = prefix, n
    if not best:
        return list(queries), None
    moved = under(best)

    def strip(spans: tuple[Span, ...]) -> tuple[Span, ...]:
        return tuple(s._replace(path=s.path[len(best) + 1 :]) if s.path in moved else s for s in spans)

    out = [replace(q, gold=strip(q.gold), not_relevant=strip(q.not_relevant)) for q in queries]
    note = (
        f"gold paths are relative to a folder above the root: stripped the root's trailing "
        f"'{best}/' from {len(moved)} of {len(paths)} gold paths"
    )
    return out, note


# --------------------------------------------------------------------------- metrics


def overlaps(hit: SpanLike, gold: SpanLike) -> bool:
    """Same file and at least one line in common (any line of a whole-file ``gold``)."""
    if hit.path != gold.path:
        return False
    return gold.start_line is None or (hit.start_line <= gold.end_line and gold.start_line <= hit.end_line)


#: A hit longer than this (and than twice its gold span) does not locate the gold: it is a
#: file to read, not a place to look. 100 lines is about two budgeted chunks and a half.
MAX_SPAN_LINES = 100


def locates(hit: SpanLike, gold: SpanLike) -> bool:
    """Whether ``hit`` finds the gold target: any hit in the file of a whole-file target;
    for a span, a span hit: same file, at least half of the shorter span shared, and not too
    wide.

    Plain overlap rewards width: a 40-line window sharing four lines with a function, or a
    300-line merged hit, would count as finding it.
    """
    if not overlaps(hit, gold):
        return False
    if gold.start_line is None:
        return True
    hit_len = hit.end_line - hit.start_line + 1
    gold_len = gold.end_line - gold.start_line + 1
    shared = min(hit.end_line, gold.end_line) - max(hit.start_line, gold.start_line) + 1
    return 2 * shared >= min(hit_len, gold_len) and hit_len <= max(MAX_SPAN_LINES, 2 * gold_len)


def hit_at_k(hits: Sequence[SpanLike], gold: Sequence[SpanLike], k: int) -> float:
    """1.0 when one of the first ``k`` hits locates a gold target, else 0.0."""
    return 1.0 if any(locates(h, g) for h in hits[:k] for g in gold) else 0.0


def file_hit_at_k(hits: Sequence[SpanLike], gold: Sequence[SpanLike], k: int = 5) -> float:
    """1.0 when one of the first ``k`` hits is in a file holding a gold target."""
    paths = {g.path for g in gold}
    return 1.0 if any(h.path in paths for h in hits[:k]) else 0.0


def reciprocal_rank(hits: Sequence[SpanLike], gold: Sequence[SpanLike], k: int = TOP_K) -> float:
    """1 / rank of the first hit locating a gold target among the first ``k``, else 0."""
    for rank, h in enumerate(hits[:k], start=1):
        if any(locates(h, g) for g in gold):
            return 1.0 / rank
    return 0.0


def ndcg_at_k(hits: Sequence[SpanLike], gold: Sequence[SpanLike], k: int = TOP_K) -> float:
    """Binary-gain nDCG@k where each gold target is credited at most once.

    A hit earns gain 1 when it locates a gold target not credited yet (the first such target
    in gold order is then credited); a hit locating only credited targets earns nothing, so
    a whole-file target is credited by the first hit in its file and a second hit there
    earns nothing. The ideal DCG puts ``min(len(gold), k)`` hits at the top. No gold: 0.0.
    """
    if not gold:
        return 0.0
    credited = [False] * len(gold)
    dcg = 0.0
    for rank, h in enumerate(hits[:k], start=1):
        for i, g in enumerate(gold):
            if not credited[i] and locates(h, g):
                credited[i] = True
                dcg += 1.0 / math.log2(rank + 1)
                break
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def first_hit_rank(hits: Sequence[SpanLike], gold: Sequence[SpanLike], k: int = TOP_K) -> int | None:
    """1-based rank of the first hit locating a gold target among the first ``k``, or None."""
    rr = reciprocal_rank(hits, gold, k)
    return round(1 / rr) if rr else None


def metric_names(depth: int = TOP_K) -> tuple[str, ...]:
    """The reported metrics for a ranking depth (``METRICS`` at the default depth 10)."""
    names = ["hit@1", "hit@5", f"hit@{depth}", "file_hit@5", f"mrr@{depth}", f"ndcg@{depth}"]
    return tuple(dict.fromkeys(names))


def metrics_for(hits: Sequence[SpanLike], gold: Sequence[SpanLike], depth: int = TOP_K) -> dict[str, float]:
    """Every metric of :func:`metric_names` for one ranking (only its first ``depth`` count)."""
    top = hits[:depth]
    return {
        "hit@1": hit_at_k(top, gold, 1),
        "hit@5": hit_at_k(top, gold, 5),
        f"hit@{depth}": hit_at_k(top, gold, depth),
        "file_hit@5": file_hit_at_k(top, gold, 5),
        f"mrr@{depth}": reciprocal_rank(top, gold, depth),
        f"ndcg@{depth}": ndcg_at_k(top, gold, depth),
    }


def query_metrics(hits: Sequence[SpanLike], gold: Sequence[SpanLike]) -> dict[str, float]:
    """``{"mrr@10": …, "ndcg@10": …}`` of one ranking against relevant spans (the TUI's status)."""
    return {"mrr@10": reciprocal_rank(hits, gold, TOP_K), "ndcg@10": ndcg_at_k(hits, gold, TOP_K)}


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100) with linear interpolation; None for no values."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0


# --------------------------------------------------------------------------- running


@dataclass
class QueryRun:
    """One labeled query's cached answers: each arm's ranking and the fused list."""

    query: LabeledQuery
    rankings: dict[str, list]  # arm -> its raw hits (Hit), best first (pool, not cut to 10)
    arm_ms: dict[str, float]
    fused: list  # consolidated hits of the configuration (top ``top_k``)
    fused_ms: float
    ranked: dict[str, list] = field(default_factory=dict)  # arm -> what it is scored on, if not ``rankings``

    def scored(self, arm: str) -> list | None:
        """The list an arm alone is scored on: re-ordered by the priors, or its raw ranking."""
        found = self.ranked.get(arm)
        return found if found is not None else self.rankings.get(arm)


@dataclass
class EvalRun(FusedBy):
    """Everything one evaluation ran: enough to report and to re-fuse for tuning."""

    queries: list[QueryRun]
    settings: FusionSettings  # the configuration fused (its arms, weights, k, ranking stage)
    measured: list[str]  # every arm measured alone (configuration first)
    skipped: dict[str, str]  # arm -> why it could not answer (first reason seen)
    no_gold: list[str] = field(default_factory=list)  # ids of queries left out (empty gold)
    top_k: int = TOP_K  # the ranking depth every metric looks at

    @property
    def arms(self) -> list[str]:
        return list(self.settings.arms)





def run_queries(
    engine,
    queries: Sequence[LabeledQuery],
    settings: FusionSettings,
    *,
    also: Sequence[str] = (),
    top_k: int = TOP_K,
    progress: Callable[[int, int], None] | None = None,
) -> EvalRun:
    """Run every query once per arm on an opened engine and cache the rankings.

    ``settings`` is the configuration measured (one arm: that arm's own ranking is the
    "fused" list, as ``ranklens query --retriever`` prints it); ``also`` are more arms measured
    alone but not fused (run in a second search, so the configuration's latency is its own).
    Every arm alone is scored as a single-retriever query shows it (its pool re-ordered by the
    priors when ``settings.priors``). Arms are opened before the first query, so latencies do
    not include loading them.
    """
    from .engine import rank_single

    extra = [a for a in dict.fromkeys(also) if a not in settings.arms]
    runs: list[QueryRun] = []
    skipped: dict[str, str] = {}
    scored = [q for q in queries if q.gold]
    no_gold = [q.id for q in queries if not q.gold]
    if hasattr(engine, "warm"):
        engine.warm([*settings.arms, *extra])  # load every artifact first: latencies are steady-state ones
    for i, q in enumerate(scored, start=1):
        result = engine.search(q.query, settings, top_k=top_k)
        results = dict(result.results)
        if extra:
            results.update(engine.search(q.query, settings.with_(arms=tuple(extra)), top_k=top_k).results)
        for name, reason in result.skipped:
            skipped.setdefault(name, reason)
        for name in extra:
            r = results[name]
            if not r.ok:
                skipped.setdefault(name, r.skipped or r.error or "")
        ranked = {
            a: rank_single(r.hits, settings.with_(arms=(a,)), q.query) for a, r in results.items() if r.ok
        }
        runs.append(
            QueryRun(
                query=q,
                rankings={a: list(r.hits) for a, r in results.items() if r.ok},
                arm_ms={a: r.elapsed_ms for a, r in results.items() if r.ok},
                fused=list(result.hits[:top_k]),
                fused_ms=result.elapsed_ms,
                ranked=ranked,
            )
        )
        if progress is not None:
            progress(i, len(scored))
    return EvalRun(runs, settings, [*settings.arms, *extra], skipped, no_gold, top_k)


# --------------------------------------------------------------------------- reporting


def _row(per_query: list[tuple[dict[str, float], float, float]], names: Sequence[str]) -> dict:
    """Aggregate (metrics, latency ms, mean span lines) per query into one report row."""
    row: dict = {"n": len(per_query)}
    for m in names:
        row[m] = mean([pq[0][m] for pq in per_query])
    lat = [pq[1] for pq in per_query]
    row["latency_ms"] = {"p50": percentile(lat, 50), "p95": percentile(lat, 95)}
    row["mean_lines"] = mean([pq[2] for pq in per_query])
    return row


def _lines(hits: Sequence[SpanLike], depth: int) -> float:
    top = hits[:depth]
    return mean([h.end_line - h.start_line + 1 for h in top]) if top else 0.0


def calibration(run: EvalRun) -> dict:
    """Per level of the fused hits' ``confidence``, over every query's fused top K: the
    hits at that level (``hits``, ``share`` of all) and those locating a gold target
    (``relevant``, ``relevant_share``; None for a level with no hits).

    Read from each hit as fusion labelled it, whatever the rule; a level the rule adds is
    listed after the three known ones.
    """
    from .consolidate import HIGH, LOW, MEDIUM

    counts: dict[str, list[int]] = {level: [0, 0] for level in (HIGH, MEDIUM, LOW)}
    for qr in run.queries:
        for h in qr.fused[: run.top_k]:
            found = counts.setdefault(h.confidence, [0, 0])
            found[0] += 1
            found[1] += any(locates(h, g) for g in qr.query.gold)
    order = [HIGH, MEDIUM, LOW, *sorted(set(counts) - {HIGH, MEDIUM, LOW})]
    total = sum(n for n, _ in counts.values())
    levels = {
        level: {
            "hits": n,
            "share": n / total if total else 0.0,
            "relevant": r,
            "relevant_share": r / n if n else None,
        }
        for level in order
        for n, r in [counts[level]]
    }
    return {"top_k": run.top_k, "hits": total, "levels": levels}


def report(run: EvalRun) -> dict:
    """Per-arm and fused figures, overall and per ``kind``, the fused list's confidence
    calibration, and per-query details."""
    depth = run.top_k
    names = metric_names(depth)
    hit_key, ndcg_key = f"hit@{depth}", f"ndcg@{depth}"
    rows: dict[str, list[tuple[str | None, tuple[dict[str, float], float, float]]]] = {}
    details = []
    missed_by_all = []
    for qr in run.queries:
        q = qr.query
        arm_metrics = {}
        for arm in run.measured:
            hits = qr.scored(arm)
            if hits is None:
                continue
            top = hits[:depth]
            m = metrics_for(top, q.gold, depth)
            arm_metrics[arm] = m
            rows.setdefault(arm, []).append((q.kind, (m, qr.arm_ms[arm], _lines(top, depth))))
        fm = metrics_for(qr.fused, q.gold, depth)
        rows.setdefault(FUSED, []).append((q.kind, (fm, qr.fused_ms, _lines(qr.fused, depth))))
        if all(m[hit_key] == 0 for m in [*arm_metrics.values(), fm]):
            missed_by_all.append({"id": q.id, "kind": q.kind, "query": q.query})
        details.append(
            {
                "id": q.id,
                "kind": q.kind,
                "query": q.query,
                "fused": {
                    ndcg_key: fm[ndcg_key],
                    "first_hit": first_hit_rank(qr.fused, q.gold, depth),
                    "top": [f"{h.path}:{h.start_line}-{h.end_line}" for h in qr.fused[:3]],
                },
                "arms": {
                    a: {ndcg_key: m[ndcg_key], "first_hit": first_hit_rank(qr.scored(a), q.gold, depth)}
                    for a, m in arm_metrics.items()
                },
            }
        )
    kinds = sorted({qr.query.kind or NO_KIND for qr in run.queries})
    groups: dict[str, dict] = {}
    order = [a for a in run.measured if a in rows] + [FUSED]
    for group in ["all", *kinds]:
        g_rows = {}
        for name in order:
            picked = [v for kind, v in rows.get(name, []) if group == "all" or (kind or NO_KIND) == group]
            if picked:
                g_rows[name] = _row(picked, names)
        n = sum(1 for qr in run.queries if group == "all" or (qr.query.kind or NO_KIND) == group)
        groups[group] = {"n": n, "rows": g_rows}
    return {
        "queries": len(run.queries),
        "top_k": depth,
        "metrics": list(names),
        "configuration": {
            "arms": list(run.arms),
            "weights": {a: run.weights.get(a, 1.0) for a in run.arms},
            "k": run.k,
            "priors": run.priors,
        },
        "skipped": dict(run.skipped),
        "no_gold": list(run.no_gold),
        "groups": groups,
        "missed_by_all": missed_by_all,
        "calibration": calibration(run),
        "per_query": details,
    }


# --------------------------------------------------------------------------- tuning

#: Weight grid: 0 to 3 in steps of 0.2, a subset of the TUI slider's 0.1 grid, so tuned
#: weights show exactly there.
WEIGHT_GRID: tuple[float, ...] = tuple(round(0.2 * i, 1) for i in range(16))
#: k grid: where RRF's k matters (small k sharpens the top ranks), roughly geometric.
K_GRID: tuple[float, ...] = (5, 10, 20, 30, 45, 60, 90, 120, 200)
DEFAULT_WEIGHT = 1.0
ROUNDS = 4
FOLDS = 5
SEED = 20240601


@dataclass(frozen=True)
class Setting:
    weights: tuple[tuple[str, float], ...]
    k: float

    @property
    def weight_map(self) -> dict[str, float]:
        return dict(self.weights)

    def to_dict(self) -> dict:
        return {"weights": dict(self.weights), "k": self.k}


class _Scorer:
    """Mean fused nDCG@10 of a set of queries for a setting, from cached rankings.

    Each query's rankings are grouped once (grouping does not depend on the weights or k);
    every setting is then fused from those groups by :func:`core.engine.fuse_groups`, the
    function the engine itself ranks with (RRF, then the ranking stage when the run's
    settings have it on), so tuning optimises exactly the list a user sees.
    """

    def __init__(self, run: EvalRun) -> None:
        self.run = run
        self.cache: dict[tuple[Setting, int], float] = {}
        self._groups: dict[int, object] = {}

    def _grouped(self, i: int):
        found = self._groups.get(i)
        if found is None:
            from .consolidate import Groups
            from .engine import MERGE_ADJACENT

            qr = self.run.queries[i]
            rankings = {a: qr.rankings[a] for a in self.run.arms if a in qr.rankings}
            found = self._groups[i] = Groups(rankings, MERGE_ADJACENT, check=False) if rankings else None
        return found

    def hits(self, setting: Setting, i: int) -> list:
        from .engine import fuse_groups

        groups = self._grouped(i)
        if groups is None:
            return []
        settings = self.run.settings.with_(weights=setting.weight_map, k=setting.k)
        return fuse_groups(groups, settings, self.run.queries[i].query.query, TOP_K)

    def query_ndcg(self, setting: Setting, i: int) -> float:
        key = (setting, i)
        found = self.cache.get(key)
        if found is None:
            found = self.cache[key] = ndcg_at_k(self.hits(setting, i), self.run.queries[i].query.gold, TOP_K)
        return found

    def mean(self, setting: Setting, idx: Sequence[int]) -> float:
        return mean([self.query_ndcg(setting, i) for i in idx])


def _closeness(setting: Setting, default: Setting) -> float:
    """How far a setting is from the default (ties go to the nearer one)."""
    d = sum(abs(w - dict(default.weights).get(a, DEFAULT_WEIGHT)) for a, w in setting.weights)
    return d + abs(math.log(setting.k / default.k))


def coordinate_ascent(
    scorer: _Scorer,
    idx: Sequence[int],
    start: Setting,
    *,
    rounds: int = ROUNDS,
    weight_grid: Sequence[float] = WEIGHT_GRID,
    k_grid: Sequence[float] = K_GRID,
) -> tuple[Setting, float]:
    """Maximise mean nDCG@10 over ``idx`` one coordinate at a time (k, then each weight).

    A coordinate moves only on a strict improvement; among equal scores the value nearest
    the default is kept, so the result does not drift on flat ground.
    """
    best = start
    best_score = scorer.mean(best, idx)
    arms = [a for a, _ in start.weights]
    for _ in range(rounds):
        moved = False
        for coord in ["k", *arms]:
            grid = k_grid if coord == "k" else weight_grid
            for value in grid:
                if coord == "k":
                    cand = Setting(best.weights, float(value))
                else:
                    cand = Setting(tuple((a, float(value) if a == coord else w) for a, w in best.weights), best.k)
                if cand == best:
                    continue
                score = scorer.mean(cand, idx)
                if score > best_score + 1e-12 or (
                    abs(score - best_score) <= 1e-12 and _closeness(cand, start) < _closeness(best, start) - 1e-12
                ):
                    moved = moved or score > best_score + 1e-12
                    best, best_score = cand, score
        if not moved:
            break
    return best, best_score


def folds(n: int, k: int = FOLDS, seed: int = SEED) -> list[list[int]]:
    """``k`` disjoint, near-equal held-out folds of ``range(n)``, shuffled with a fixed seed."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    k = max(1, min(k, n))
    return [sorted(order[i::k]) for i in range(k)]


def tune(run: EvalRun, *, n_folds: int = FOLDS, seed: int = SEED, rounds: int = ROUNDS) -> dict:
    """Tune the configuration's weights and k on cached rankings, with k-fold cross-validation.

    Returns the default (the shipped defaults of :mod:`core.config`) and tuned settings with
    their nDCG@10 on all queries (in sample),
    and per fold the train and held-out nDCG@10 of the default and of the setting tuned on
    that fold's train part; ``improves`` says whether tuning beat the default held-out.
    """
    if len(run.arms) < 2:
        raise ValueError("tuning needs at least two fused arms")
    from .config import default_config

    scorer = exact = _Scorer(run)
    n = len(run.queries)
    shipped = default_config()  # the baseline to beat: what query, eval and the TUI use
    default = Setting(
        tuple((a, float(shipped["weights"].get(a, DEFAULT_WEIGHT))) for a in run.arms), float(shipped["k"])
    )
    everyone = list(range(n))
    tuned, _ = coordinate_ascent(scorer, everyone, default, rounds=rounds)
    per_fold = []
    if n >= 2:
        for held in folds(n, n_folds, seed):
            held_set = set(held)
            train = [i for i in everyone if i not in held_set]
            fold_best, _ = coordinate_ascent(scorer, train, default, rounds=rounds)
            per_fold.append(
                {
                    "train": len(train),
                    "held_out": len(held),
                    "tuned": fold_best.to_dict(),
                    "default_train": exact.mean(default, train),
                    "tuned_train": exact.mean(fold_best, train),
                    "default_held_out": exact.mean(default, held),
                    "tuned_held_out": exact.mean(fold_best, held),
                }
            )
    cv = {
        key: mean([f[key] for f in per_fold])
        for key in ("default_train", "tuned_train", "default_held_out", "tuned_held_out")
    }
    return {
        "queries": n,
        "arms": list(run.arms),
        "priors": run.priors,
        "grid": {"weights": list(WEIGHT_GRID), "k": list(K_GRID)},
        "default": {**default.to_dict(), "ndcg@10": exact.mean(default, everyone)},
        "tuned": {**tuned.to_dict(), "ndcg@10": exact.mean(tuned, everyone)},
        "cross_validation": {"folds": len(per_fold), "seed": seed, **cv, "per_fold": per_fold},
        "improves": bool(per_fold) and cv["tuned_held_out"] > cv["default_held_out"] + 1e-12,
    }


def kinds_summary(queries: Sequence[LabeledQuery]) -> dict[str, int]:
    """How many queries of each kind (for messages and tests)."""
    out: dict[str, int] = {}
    for q in queries:
        out[q.kind or NO_KIND] = out.get(q.kind or NO_KIND, 0) + 1
    return out
