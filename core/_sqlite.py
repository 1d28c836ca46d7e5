"""The SQLite binding every module uses: sqlean.py's where installed, else the standard library's.

Why sqlean.py (SQLite 3.50.4, a drop-in copy of the ``sqlite3`` module with FTS5), measured
on this machine (issue #19; ``benchmarks/bench_fts5_binding.py``, 50k chunks, the benchmark's
20 questions, the bindings interleaved in fresh processes):

- pysqlite3-binary 0.5.4.post2, used before, bundles SQLite 3.51.1, whose unix VFS deadlocks
  an open against a WAL close on another thread of the same process (the lock-order inversion
  of 3.51.0's broken-POSIX-lock detection, fixed in 3.51.2): ``.ci/run`` hung on it. Its
  last release is that one.
- sqlean.py predates that code and answers the fts5 arm's ``bm25()`` queries as fast as
  3.51.1 did (see the figures in ``CHANGELOG.md``), with the same rows and scores; it is the
  ``sqlite3`` API, so nothing else changes.
- apsw (3.54) has the fix too, but another API (no DB-API cursors, ``isolation_level``,
  ``uri=`` ...): every connection site would change for no speed.
- The interpreter's own SQLite (3.40 here) is the fallback where sqlean.py has no wheel: the
  same rankings, its FTS5 ``bm25()`` slower.

Whatever the binding, :mod:`core.store` opens and closes every connection to an index under
one process-wide lock, so no binding's luck is relied on.

One binding for the whole process, never two: two copies of SQLite in one process release
each other's POSIX locks on close, which can corrupt a database
(https://sqlite.org/howtocorrupt.html, 2.2.1). ``RANKLENS_SQLITE`` (``sqlean``,
``pysqlite3``, ``sqlite3``) picks one for measurements (``benchmarks/stress_concurrency.py``);
a named binding that is not installed is the standard library's.
"""

import os

_CHOICE = os.environ.get("RANKLENS_SQLITE", "sqlean")

try:
    if _CHOICE == "sqlean":
        from sqlean import dbapi2 as sqlite3
    elif _CHOICE == "pysqlite3":
        from pysqlite3 import dbapi2 as sqlite3
    else:
        import sqlite3
except ImportError:  # no wheel for this platform: the interpreter's SQLite works, slower
    import sqlite3

__all__ = ["sqlite3"]
