"""Relevance judgments per root: marks made while searching, kept as a labeled query file.

The TUI marks the selected hit relevant (``+``) or not (``-``); :func:`judge` records it in
``judgments.jsonl`` in the root's index folder. Each line is one query in the labeled query
format of :mod:`core.evaluation` (``gold`` = the spans judged relevant, ``not_relevant`` =
those judged not), so the file feeds ``ranklens eval`` and ``ranklens tune`` as it is (pass
:func:`judgments_path` of the root as QUERIES.jsonl).

Writes are atomic (temp file + rename) and serialised across threads and processes with a
file lock, so two windows judging the same root do not lose each other's marks.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .base.atomic import write_text_atomic
from .evaluation import EvalFileError, LabeledQuery, Span, SpanLike, load_queries, overlaps, query_metrics
from .storage.store import index_dir

JUDGMENTS_FILE = "judgments.jsonl"
KIND = "judged"

_lock = threading.Lock()


def judgments_path(root: Path | str, cache_dir: Path | None = None) -> Path:
    """Where the judgments of ``root`` live (the file may not exist)."""
    return index_dir(Path(root).expanduser().resolve(), cache_dir) / JUDGMENTS_FILE


def normalize_query(query: str) -> str:
    """The key a query is judged under: its words joined by single spaces."""
    return " ".join((query or "").split())


def query_id(query: str) -> str:
    return "j-" + hashlib.sha256(normalize_query(query).encode("utf-8")).hexdigest()[:12]


@dataclass
class QueryJudgments:
    """What was judged for one query: spans marked relevant and not relevant."""

    query: str
    relevant: list[Span] = field(default_factory=list)
    not_relevant: list[Span] = field(default_factory=list)

    @property
    def gold(self) -> list[Span]:
        return list(self.relevant)

    def verdict(self, hit: SpanLike) -> bool | None:
        """True when ``hit`` overlaps a relevant span, False when it overlaps only spans judged
        not relevant, None when nothing judged touches it."""
        if any(overlaps(hit, g) for g in self.relevant):
            return True
        if any(overlaps(hit, g) for g in self.not_relevant):
            return False
        return None

    def metrics(self, hits: Sequence[SpanLike]) -> dict[str, float] | None:
        """MRR@10 and nDCG@10 of ``hits`` against the relevant spans; None without any."""
        return query_metrics(hits, self.relevant) if self.relevant else None

    def to_labeled(self) -> LabeledQuery:
        return LabeledQuery(query_id(self.query), self.query, tuple(self.relevant), KIND, 0, tuple(self.not_relevant))


def load_judgments(root: Path | str, cache_dir: Path | None = None) -> dict[str, QueryJudgments]:
    """Every judged query of ``root`` by normalised query text ({} when none).

    Raises :class:`core.evaluation.EvalFileError` when the file exists but is malformed.
    """
    path = judgments_path(root, cache_dir)
    if not path.exists():
        return {}
    try:
        queries = load_queries(path)
    except EvalFileError as exc:
        if str(exc).endswith("holds no queries"):
            return {}
        raise
    out: dict[str, QueryJudgments] = {}
    for q in queries:
        key = normalize_query(q.query)
        found = out.setdefault(key, QueryJudgments(key))
        found.relevant.extend(s for s in q.gold if s not in found.relevant)
        found.not_relevant.extend(s for s in q.not_relevant if s not in found.not_relevant)
    return out


def save_judgments(root: Path | str, judgments: dict[str, QueryJudgments], cache_dir: Path | None = None) -> Path:
    """Atomically rewrite ``root``'s judgments file (queries with no judgment are dropped)."""
    path = judgments_path(root, cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(j.to_labeled().to_dict(), ensure_ascii=False)
        for _key, j in sorted(judgments.items())
        if j.relevant or j.not_relevant
    ]
    write_text_atomic(path, "".join(line + "\n" for line in lines))
    return path


def judge(
    root: Path | str,
    query: str,
    path: str,
    start: int,
    end: int,
    relevant: bool | None,
    *,
    cache_dir: Path | None = None,
) -> QueryJudgments:
    """Record that span ``path:start-end`` is (``True``) or is not (``False``) relevant to
    ``query``; ``None`` forgets the judgment of that exact span. A new judgment of the same
    span replaces the old one. Returns the query's judgments after the change.

    Raises ValueError for an empty query or a bad span, OSError when the file cannot be written,
    :class:`core.base.locks.LockBusy` when another process holds its lock past
    :data:`core.base.locks.JUDGMENTS_WAIT_S`.
    """
    from .base.locks import JUDGMENTS_WAIT_S, hold

    key = normalize_query(query)
    if not key:
        raise ValueError("the query is empty")
    if not isinstance(path, str) or not path or path.startswith("/"):
        raise ValueError(f"path must be relative to the root, got {path!r}")
    if isinstance(start, bool) or isinstance(end, bool) or not (1 <= int(start) <= int(end)):
        raise ValueError(f"bad span {start}-{end}")
    span = Span(path, int(start), int(end))
    target = judgments_path(root, cache_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _lock, hold(str(target) + ".lock", "another ranklens saving relevance judgments", JUDGMENTS_WAIT_S):
        everything = load_judgments(root, cache_dir)
        found = everything.setdefault(key, QueryJudgments(key))
        found.relevant = [s for s in found.relevant if s != span]
        found.not_relevant = [s for s in found.not_relevant if s != span]
        if relevant is True:
            found.relevant.append(span)
        elif relevant is False:
            found.not_relevant.append(span)
        save_judgments(root, everything, cache_dir)
    return found


def judgments_for(root: Path | str, query: str, cache_dir: Path | None = None) -> QueryJudgments | None:
    """The judgments of one query (matched on its normalised text), or None when it has none."""
    found = load_judgments(root, cache_dir).get(normalize_query(query))
    if found is None or not (found.relevant or found.not_relevant):
        return None
    return found


__all__ = [
    "JUDGMENTS_FILE",
    "QueryJudgments",
    "judge",
    "judgments_for",
    "judgments_path",
    "load_judgments",
    "query_metrics",
    "save_judgments",
]
