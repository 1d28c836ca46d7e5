"""The SQLite binding every module uses: sqlean.py's where installed, else the standard library's.

Why sqlean.py (SQLite 3.50.4, a drop-in copy of the ``sqlite3`` module with FTS5), measured
with ``benchmarks/bench_fts5_binding.py`` on bench_engine.py's 50k chunks and 20 questions
(each binding builds its own index, then fresh processes take turns, 5 rounds; CPU per query,
p50; a loaded machine):

=============================  =========  ==================  =============================
binding                        SQLite     the fts5 arm        the arm's SQL alone
=============================  =========  ==================  =============================
sqlean.py 3.50.4.5             3.50.4     3.36 ms             2.18 ms
pysqlite3-binary 0.5.4.post2   3.51.1     3.14 ms (0.94x)     1.74 ms (0.80x)
the interpreter's ``sqlite3``  3.40.1     3.66 ms (1.09x)     2.58 ms (1.18x)
apsw 3.54.1.0                  3.54.1     (another API)       1.63 ms (0.75x)
=============================  =========  ==================  =============================

The arm's rankings (chunk ids and scores, top 30) are the same on every binding: 20 of 20
questions on those 50k chunks and on the code-search benchmark's gin and fastapi.

- pysqlite3-binary, used before, bundles SQLite 3.51.1, whose unix VFS deadlocks an open
  against a WAL close on another thread of the same process (the lock-order inversion of
  3.51.0's broken-POSIX-lock detection, fixed in 3.51.2): ``.ci/run`` hung on it (issue
  #19). That wheel is its last release.
- sqlean.py predates that code, is the ``sqlite3`` API (nothing else changes) and costs
  ~0.2 ms of CPU a query more than 3.51.1 did (~2 % of an all-arm query's CPU).
- apsw (3.54) has the fix and the fastest FTS5, ~0.5 ms a query less, but another API: no
  DB-API cursors or ``isolation_level``, its own exceptions, ``uri=`` as flags. Every
  connection site and every ``except sqlite3.…`` would change, for ~4 % of a query's CPU.
- The interpreter's own SQLite (3.40 here) is the fallback where sqlean.py has no wheel: the
  same rankings, ~10 % more CPU for the arm.

Whatever the binding, :mod:`core.storage.store` opens and closes every connection to an index under
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
