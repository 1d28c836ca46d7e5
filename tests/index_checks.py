"""Checks of an index's SQLite tables shared by the tests."""

from __future__ import annotations

from ranklens.core.arms.fts5 import Fts5Build
from ranklens.core.base._sqlite import sqlite3
from ranklens.core.storage.store import unpack_text


def fts_instances(conn: sqlite3.Connection, schema: str = "main") -> list[tuple]:
    """Every (term, rowid, column, offset) the ``fts`` table of ``schema`` holds, sorted."""
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_inst_{schema} USING fts5vocab({schema}, 'fts', 'instance')"
    )
    return sorted(conn.execute(f"SELECT term, doc, col, offset FROM temp.fts_inst_{schema}"))


def assert_fts_matches_chunks(conn: sqlite3.Connection) -> None:
    """The ``fts`` index holds exactly the terms of the chunks table's text, row for row.

    A contentless FTS5 table cannot check itself against the text (``integrity-check`` passes
    after a 'delete' given the wrong text, leaving stale terms behind): it is compared with one
    built afresh from the stored text."""
    conn.execute("INSERT INTO fts(fts, rank) VALUES ('integrity-check', 1)")  # its own structure
    fresh = sqlite3.connect(":memory:")
    try:
        fresh.executescript(Fts5Build.schema)
        fresh.executemany(
            "INSERT INTO fts(rowid, text) VALUES (?, ?)",
            ((cid, unpack_text(blob)) for cid, blob in conn.execute("SELECT id, text FROM chunks")),
        )
        assert fts_instances(conn) == fts_instances(fresh)
    finally:
        fresh.close()
