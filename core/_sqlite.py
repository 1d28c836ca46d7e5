"""The SQLite binding every module uses: pysqlite3's where installed, else the standard library's.

pysqlite3-binary bundles a current SQLite (3.51 against the interpreter's 3.40 here): its FTS5
answers the fts5 arm's ``bm25()`` queries in ~2.8 instead of ~4.1 ms of CPU (50k chunks, the
benchmark's questions, interleaved; the same rows and scores). One binding for the whole
process, never two: two copies of SQLite in one process release each other's POSIX locks on
close, which can corrupt a database (https://sqlite.org/howtocorrupt.html, 2.2.1).
"""

try:
    from pysqlite3 import dbapi2 as sqlite3
except ImportError:  # no wheel for this platform: the interpreter's SQLite works, slower
    import sqlite3

__all__ = ["sqlite3"]
