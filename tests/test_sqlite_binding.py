"""core.base._sqlite: one SQLite binding for the whole process, sqlean.py's where installed; not a
SQLite whose unix VFS deadlocks (issue #19)."""

import pytest
from cli_helpers import assert_python_prints_ok

#: SQLite releases whose unix VFS can deadlock an open against a WAL close on another thread
#: (3.51.0's broken-POSIX-lock detection; fixed in 3.51.2).
DEADLOCKING = {(3, 51, 0), (3, 51, 1)}


def test_every_module_uses_the_one_binding():
    from ranklens.core.arms import fts5
    from ranklens.core.arms.deep import build as deep_build
    from ranklens.core.base import _sqlite
    from ranklens.core.index import indexer
    from ranklens.core.storage import bm25, store, terms

    for module in (bm25, terms, indexer, store, deep_build, fts5):
        assert module.sqlite3 is _sqlite.sqlite3, module.__name__


def test_the_binding_is_sqlean_and_not_a_deadlocking_sqlite():
    pytest.importorskip("sqlean")
    from ranklens.core.base._sqlite import sqlite3

    assert sqlite3.__name__ == "sqlean.dbapi2"
    assert sqlite3.sqlite_version_info not in DEADLOCKING, sqlite3.sqlite_version
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text)")  # the fts5 arm needs it
    conn.close()


def _builds_and_queries(tmp_path, env_lines: str, expect: str) -> str:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def parse_arguments(argv):\n    return argv\n")
    return (
        "import sys, os\n" + env_lines + "from ranklens.core.base._sqlite import sqlite3\n"
        f"assert sqlite3.__name__ == {expect!r}, sqlite3.__name__\n"
        "from ranklens.core.engine import Engine\n"
        f"e = Engine({str(root)!r}, cache_dir=__import__('pathlib').Path({str(tmp_path / 'cache')!r}))\n"
        "e.ensure_index()\n"
        "r = e.search('parse_arguments', arms=['fts5'])\n"
        "assert r.hits and r.hits[0].path == 'a.py', r\n"
        "print('ok')\n"
    )


def test_without_sqlean_the_standard_library_binding_builds_and_queries_an_index(tmp_path):
    # as on a platform without its wheel
    assert_python_prints_ok(_builds_and_queries(tmp_path, "sys.modules['sqlean'] = None\n", "sqlite3"))


def test_ranklens_sqlite_picks_the_standard_library_binding(tmp_path):
    assert_python_prints_ok(_builds_and_queries(tmp_path, "os.environ['RANKLENS_SQLITE'] = 'sqlite3'\n", "sqlite3"))
