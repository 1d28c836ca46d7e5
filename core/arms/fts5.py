"""``fts5``: SQLite FTS5's native ``bm25()`` over the chunks — the exact-identifier signal.

The user's text never reaches FTS5's query parser: the application tokenizes it into whole
identifiers, quotes each one and joins them with OR, so ``NOT``, ``"``, ``*``, ``:`` or
``NEAR(`` in a query are just words.

FTS5 scores every row that matches any term before it can sort (~2 µs a row with ``bm25()``),
so a term found in a large share of the chunks ("a", "the", "self", "file") costs most of a
query while adding little to the ranking (its idf is low). Terms in more than
:data:`PRUNE_FRACTION` of the chunks are left out of the MATCH (the rarest term always stays).
Measured on the 50k-chunk benchmark corpus and its 20 questions, against the 30 % cut used
before: CPU p50 9.2 -> 4.3 ms, the top 10 keeps 96 % of its members; on the labeled sets fused
nDCG@10 is unchanged (0.661 and 0.921) and this arm alone moves 0.575 -> 0.576 on this
repository and 0.814 -> 0.792 on polyglot (where 10 % of its few chunks is a handful).

A chunk holding only the commoner kept terms seldom reaches the top: a query holding terms the
common-terms file lists (in at least its floor of chunks, :data:`SPLIT_ROWS` in all) besides
rarer ones runs ``(rare) AND (listed)`` and ``(rare) NOT (listed)``, which score every chunk
holding a rare term as the whole OR query does, and asks for ``(listed) NOT (rare)`` only
when the rows found do not all outscore what a chunk holding listed terms alone can score
(each term's idf times ``k1 + 1``). Every expression names the terms in one order, rare
before listed (``bm25()`` adds their shares in that order), so the ranking is the whole OR
query's to the last bit, without scoring most of the chunks that hold only common words.

On a large tree the kept terms can still match hundreds of thousands of chunks (0.45 µs a
chunk for ``bm25()``: 91 ms for "spin lock with interrupts disabled" over the 1.1M chunks of
the Linux sources). When the kept terms' chunks add up to more than :data:`SCORE_BUDGET`, the
rarest terms that fit the budget must match: the arm runs ``(rare) AND (rest)`` and
``(rare) NOT (rest)``, which together score exactly as the whole OR query every chunk holding
a rare term (FTS5 weighs each term by its own document frequency, whatever the expression),
and leaves out the chunks holding only common terms. On the kernel's 20 benchmark questions
the top 10 stays the same on all 20 and the top 100 keeps 98 % of its members; CPU p50/p95
28/70 -> 19/33 ms. Indexes under ~30k chunks never reach the budget (every kept term is in at
most 10 % of the chunks), so the public benchmark's rankings do not change.
"""

from __future__ import annotations

import json
import math
import re
from typing import NamedTuple

import numpy as np

from ..base._sqlite import sqlite3
from ..base.types import LEXICAL, Chunk, Hit
from ..storage.store import IndexView, unpack_text
from ..text.tokenize import identifiers
from .protocol import ArmBuild, ArmSpec, Generation

PRUNE_FRACTION = 0.1
#: Chunks a query may score before its rarest terms must match (~14 ms of ``bm25()``).
SCORE_BUDGET = 30_000
#: Listed terms' chunks (in all) worth the plan's split: fewer cost less to score than the
#: one or two statements more.
SPLIT_ROWS = 1_000
#: The most a term's count adds in ``bm25()``, per unit of its idf: ``k1 + 1`` (FTS5's k1 is 1.2).
_MOST_PER_IDF = 2.2
#: Written per generation: the document frequency of every term in at least
#: min(5 % of the chunks, 2,000 chunks), that floor, and N.
COMMON_TERMS_FILE = "fts5-common.json"
_RECORD_FRACTION = 0.05
_RECORD_ROWS = 2_000


def common_terms(conn: sqlite3.Connection) -> dict:
    """``{"n": chunks, "floor": f, "df": {term: chunks holding it}}`` for the terms in at least
    ``f`` chunks: 5 % of them, or 2,000 when that is fewer (what :data:`SCORE_BUDGET` needs)."""
    n = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    floor = max(1, min(int(n * _RECORD_FRACTION), _RECORD_ROWS))
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_vocab USING fts5vocab(main, 'fts', 'row')")
    rows = conn.execute("SELECT term, doc FROM temp.fts_vocab WHERE doc >= ?", (floor,))
    return {"n": n, "floor": floor, "df": dict(rows.fetchall())}


def _quoted(terms: list[str]) -> str:
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def match_expression(query: str, common: dict | None = None) -> str:
    """The FTS5 MATCH string for a query: each distinct identifier quoted, OR-joined.

    With ``common`` (see :func:`common_terms`), terms in more than :data:`PRUNE_FRACTION` of
    the chunks are dropped, keeping at least the rarest one.
    """
    return _quoted(_kept_terms(query, common))


def _kept_terms(query: str, common: dict | None) -> list[str]:
    terms = list(dict.fromkeys(identifiers(query)))
    if common and terms:
        df, limit = common["df"], PRUNE_FRACTION * common["n"]
        kept = [t for t in terms if df.get(t, 0) <= limit]
        terms = kept or [min(terms, key=lambda t: (df.get(t, 0), t))]
    return terms


class Plan(NamedTuple):
    """How to run a query's MATCH (:func:`match_plan`): the rows of ``exprs``, merged by score,
    are its ranking, unless ``rest`` is set and the worst of the rows kept does not beat
    ``bound``: then ``rest``'s rows are merged in too. ``rest`` matches the rows ``exprs``
    leave out, each scoring below ``bound``; None: those rows are left out (over the budget)."""

    exprs: list[str]
    rest: str | None = None
    bound: float = math.inf


def _ordered(terms: list[str], common: dict) -> list[str]:
    """The order the terms are scored in: those the common-terms file does not list (fewer
    chunks than its floor) as the query has them, then the listed ones, fewest chunks first.
    ``bm25()`` adds the terms' shares in the expression's order, so every expression of a
    plan names them in this one order (rare before common) and a chunk scores the same to the
    last bit whichever expression matched it."""
    df = common["df"]
    return [t for t in terms if t not in df] + sorted((t for t in terms if t in df), key=lambda t: (df[t], t))


def _idf(n_rows: float, n: float) -> float:
    """FTS5's idf for a term in ``n`` of ``n_rows`` chunks (``bm25()`` floors it at 1e-6)."""
    return max(1e-6, math.log((n_rows - n + 0.5) / (n + 0.5)))


def _bound(terms: list[str], common: dict) -> float:
    """More than any chunk can score on ``terms`` alone: ``bm25()`` gives a term at most
    ``idf * (k1 + 1)`` (its count without end, a document of no length), with FTS5's idf
    ``log((N - n + 0.5) / (n + 0.5))`` taken at a larger N and a smaller n than recorded
    (a bound too high only costs the query it would have saved)."""
    n_rows, df = common["n"] * 1.01 + 10, common["df"]
    return sum(_MOST_PER_IDF * _idf(n_rows, 0.99 * df[t]) for t in terms)


def match_plan(query: str, common: dict | None = None) -> Plan:
    """The :class:`Plan` of a query (its terms: :func:`match_expression`'s, in
    :func:`_ordered`'s order).

    Under :data:`SCORE_BUDGET`, when the query holds terms the common-terms file lists
    (:data:`SPLIT_ROWS` chunks or more in all) besides rarer ones: ``(rare) AND (listed)``
    and ``(rare) NOT (listed)``, then ``(listed) NOT (rare)`` only when the rows found do not
    outscore the listed terms' :func:`_bound` (the same ranking as the whole OR query, to the
    last bit, without scoring the chunks that hold only common terms); not when that bound is
    above the most one unlisted term can add (the rest query would then mostly run too, so
    the one OR query costs less). Over the budget: the
    rarest terms that fit it must match, ``(rare) AND (rest)`` and ``(rare) NOT (rest)`` (see
    the module's docstring). A term the file does not list counts as in ``floor`` chunks.
    """
    terms = _kept_terms(query, common)
    if not terms:
        return Plan([])
    if not common or "floor" not in common:
        return Plan([_quoted(terms)])
    terms = _ordered(terms, common)
    df, floor = common["df"], common["floor"]
    rows = [df.get(t, floor) for t in terms]
    if sum(rows) > SCORE_BUDGET:
        cut, total = 0, 0
        while cut < len(terms) and (not cut or total + rows[cut] <= SCORE_BUDGET):
            total += rows[cut]
            cut += 1
        if cut == len(terms):
            return Plan([_quoted(terms)])
        return Plan(_split(terms[:cut], terms[cut:]))
    cut = sum(1 for t in terms if t not in df) or 1  # the unlisted terms, else the rarest
    listed = terms[cut:]
    if not listed or sum(df[t] for t in listed) < SPLIT_ROWS:
        return Plan([_quoted(terms)])
    rare, bound = terms[:cut], _bound(listed, common)
    # The rest query is needed when the rows found score below the bound: seldom when one
    # unlisted term alone (at most idf at the floor) may add more than the listed ones can;
    # otherwise the split's three statements cost more than the one.
    n = common["n"]
    if bound > _MOST_PER_IDF * _idf(n, floor):
        return Plan([_quoted(terms)])
    return Plan(_split(rare, listed), f"({_quoted(listed)}) NOT ({_quoted(rare)})", bound)


def _split(rare: list[str], rest: list[str]) -> list[str]:
    return [f"({_quoted(rare)}) AND ({_quoted(rest)})", f"({_quoted(rare)}) NOT ({_quoted(rest)})"]


#: A quoted passage of a question (an error message, a log line, a flag): a pair of the same
#: quote marks, opened after the start, a space, a bracket or another quote mark and closed
#: before the end, a space, punctuation or another quote mark, so the apostrophe of
#: "parent's" opens nothing and a message holding quotes of another kind stays whole.
_QUOTED = re.compile(
    r"(?:^|(?<=[\s(\[\"'`“‘]))"
    r"(?:\"([^\"\n]{3,200}?)\"|'([^'\n]{3,200}?)'|`([^`\n]{3,200}?)`|“([^”\n]{3,200}?)”|‘([^’\n]{3,200}?)’)"
    r"(?=$|[\s),.;:?!\]\"'`”’])"
)
#: An ellipsis inside a quotation stands for words left out: each side is a phrase of its own.
_ELLIPSIS = re.compile(r"\.\.\.|…")


def _passages(text: str) -> list[str]:
    """The passages ``text`` quotes, each cut at its ellipses."""
    out = []
    for m in _QUOTED.finditer(text):
        out.extend(_ELLIPSIS.split(next(g for g in m.groups() if g is not None)))
    return out


def quoted_phrases(query: str) -> list[list[str]]:
    """The token runs of the passages a question quotes and of those quoted inside them, two
    tokens or more each (a quoted single identifier is already a term of the OR query):
    ``Where is "Nesting limit ... reached" thrown`` -> [["nesting", "limit"]]."""
    out: list[list[str]] = []
    for passage in _passages(query):
        for part in (passage, *_passages(passage)):
            tokens = identifiers(part)
            if len(tokens) >= 2 and tokens not in out:
                out.append(tokens)
    return out


def phrase_expression(phrases: list[list[str]]) -> str:
    """FTS5 phrase queries for ``phrases``, OR-joined (tokens quoted, never parsed as syntax)."""
    return " OR ".join('"' + " ".join(t.replace('"', '""') for t in tokens) + '"' for tokens in phrases)


class Fts5Arm:
    """FTS5's ``bm25()`` over the query's identifiers; chunks holding a passage the question
    quotes (``"Duplicate Operation ID"``, an error message pasted in) come first, best first,
    then the rest of the ranking."""

    name = "fts5"

    def __init__(self, view: IndexView) -> None:
        self.view = view
        path = view.gen_dir / COMMON_TERMS_FILE
        self.common = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    def search(self, query: str, limit: int, allowed: np.ndarray | None = None) -> list[Hit]:
        rows, scores = self.scores(query, limit, allowed)
        return self.view.chunks.hits(self.name, rows, scores)

    def scores(self, query: str, limit: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The best ``limit`` chunk rows and their scores (higher is better): those holding
        a quoted passage first, scored above every other."""
        phrases = quoted_phrases(query)
        if not phrases or limit <= 0:
            return self._ranked(match_plan(query, self.common), limit, allowed)
        first, first_scores = self._ranked(Plan([phrase_expression(phrases)]), limit, allowed)
        rest, rest_scores = self._ranked(match_plan(query, self.common), limit + len(first), allowed)
        keep = ~np.isin(rest, first)
        rest, rest_scores = rest[keep], rest_scores[keep]
        if len(first) and len(rest):  # every phrase hit above the rest, in its own order
            first_scores = first_scores - first_scores.min() + rest_scores.max() + 1.0
        rows = np.concatenate([first, rest])[:limit]
        return rows, np.concatenate([first_scores, rest_scores])[:limit]

    def phrase_rows(self, phrases: list[list[str]], limit: int) -> np.ndarray:
        """The chunk rows holding any of ``phrases`` (token runs), best first; none when more
        than ``limit`` do (a passage found everywhere marks nothing)."""
        rows, _ = self._ranked(Plan([phrase_expression(phrases)]), limit + 1, None)
        return rows if len(rows) <= limit else np.empty(0, dtype=np.int64)

    def _ranked(self, plan: Plan, limit: int, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        empty = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        if not plan.exprs or limit <= 0:
            return empty
        conn = self.view.connection()
        chunks = self.view.chunks
        fetch = limit if allowed is None else limit * 4

        def run(exprs: list[str], rows: list) -> list:
            merge = len(exprs) > 1 or bool(rows)
            for expr in exprs:  # their rows are disjoint and scored alike
                rows += conn.execute(
                    "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts), rowid LIMIT ?",
                    (expr, fetch),
                ).fetchall()
            return sorted(rows, key=lambda r: (r[1], r[0]))[:fetch] if merge else rows

        while True:
            rows = run(plan.exprs, [])
            # bm25() is negative: the rows the plan left out score above -bound.
            if plan.rest is not None and (len(rows) < fetch or rows[-1][1] >= -plan.bound):
                rows = run([plan.rest], rows)
            ids = np.array([r[0] for r in rows], dtype=np.int64)
            pos = chunks.rows_for(ids)
            keep = pos >= 0
            if allowed is not None:
                keep &= allowed[np.maximum(pos, 0)]
            # With a filter, widen the pool until enough rows pass or FTS5 has no more.
            if allowed is None or keep.sum() >= limit or len(rows) < fetch:
                break
            fetch *= 4
        kept = np.flatnonzero(keep)[:limit]
        # FTS5's bm25() is lower-is-better (negative); report it as higher-is-better.
        scores = -np.array([rows[i][1] for i in kept.tolist()], dtype=np.float64)
        return pos[kept].astype(np.int64), scores


class Fts5Build(ArmBuild):
    """Keeps the ``fts`` table (a contentless FTS5 index of the chunks' text, keyed by chunk id,
    in the index database, committed with each generation: a cold build's rows go in one
    bounded transaction per segment) and writes the generation's common terms.

    Contentless (``content=''``): the index holds no copy of the text and reads none back
    (the chunks table has it); the arm asks only for rowids, ``bm25()`` and ``fts5vocab``,
    which need none. It was external-content over ``chunks.text`` (the same room on disk),
    which ties that column to the text FTS5 tokenizes; contentless leaves the chunks table
    free to store it compressed."""

    # Identifiers stay whole ('_' is a token character): this arm is the exact-symbol signal.
    schema = """
    CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
        text, content='', tokenize="unicode61 tokenchars '_'"
    );
    """

    def begin(self, gen: Generation) -> None:
        self.conn = gen.conn

    def remove(self, ids: list[int]) -> None:
        # A contentless index deletes a row by the very text it indexed (anything else leaves
        # stale terms behind, silently): read from the chunk before it goes.
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            marks = ",".join("?" * len(batch))
            rows = self.conn.execute(f"SELECT id, text FROM chunks WHERE id IN ({marks})", batch).fetchall()
            self.conn.executemany(
                "INSERT INTO fts(fts, rowid, text) VALUES ('delete', ?, ?)",
                [(cid, unpack_text(blob)) for cid, blob in rows],
            )

    def add(self, ids: list[int], chunks: list[Chunk]) -> None:
        self.conn.executemany(
            "INSERT INTO fts(rowid, text) VALUES (?, ?)", [(cid, c.text) for cid, c in zip(ids, chunks)]
        )

    def write(self, gen: Generation) -> None:
        """FTS5's frequent terms. They are counted again when the chunks changed by 1 % or more
        since the list was made, and only in the last generation of a pass (a cold build's
        earlier ones keep the last list: scanning the terms takes seconds on the Linux
        sources); otherwise the last list is kept."""
        prev = gen.prev / COMMON_TERMS_FILE if gen.prev is not None else None
        if prev is not None and prev.exists():
            common = json.loads(prev.read_text(encoding="utf-8"))
            drift = common.get("drift", 0) + len(gen.removed) + len(gen.added_ids)
            if not gen.final or drift < 0.01 * common["n"]:  # shares barely move
                common["drift"] = drift
                (gen.out / COMMON_TERMS_FILE).write_text(json.dumps(common), encoding="utf-8")
                return
        elif not gen.final:
            return
        (gen.out / COMMON_TERMS_FILE).write_text(json.dumps(common_terms(gen.conn)), encoding="utf-8")


SPEC = ArmSpec(Fts5Arm.name, LEXICAL, Fts5Arm, fused_by_default=True, weight=0.4, build=lambda _settings: Fts5Build())
