"""Labeled query files: the JSONL format, and the public code-search benchmark's annotations.

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
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple, Protocol

#: Largest labeled query file read (bytes).
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


def parse_queries(lines: Iterable[str], source: str = "<queries>", notify: Notify | None = None) -> list[LabeledQuery]:
    """Validate JSONL lines into labeled queries; blank lines are skipped."""
    out: list[LabeledQuery] = []
    seen: dict[str, int] = {}
    ignored: set[str] = set()
    for number, raw in enumerate(lines, start=1):
        line = raw.strip().lstrip("\ufeff") if number == 1 else raw.strip()
        if not line:
            continue
        bad = _error_at(f"{source}:{number}")
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


def parse_annotations(text: str, source: str = "<annotations>", notify: Notify | None = None) -> list[LabeledQuery]:
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
        bad = _error_at(f"{source}: item {number}")
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


def _error_at(where: str) -> Callable[[str], EvalFileError]:
    """The error for a line or item of a file: ``where: message``."""
    return lambda message: EvalFileError(f"{where}: {message}")


def _note_ignored(source: str, ignored: set[str], notify: Notify | None) -> None:
    # Once per file: a field every line carries would otherwise bury the other messages.
    if ignored and notify is not None:
        notify(f"{source}: ignored fields ranklens does not use: {', '.join(sorted(ignored))}")


def _query_text(obj: dict, bad: Callable[[str], EvalFileError]) -> str:
    from ..query.pipeline import QueryError, check_query

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


def _targets(value: object, name: str, bad: Callable[[str], EvalFileError], ignored: set[str]) -> tuple[Span, ...]:
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
