"""core._sqlite: one SQLite binding for the whole process, pysqlite3's where installed."""

from cli_helpers import assert_python_prints_ok


def test_every_module_uses_the_one_binding():
    from ranklens.core import _sqlite, bm25, indexer, store
    from ranklens.core.arms import fts5
    from ranklens.core.arms.deep import build as deep_build

    for module in (bm25, indexer, store, deep_build, fts5):
        assert module.sqlite3 is _sqlite.sqlite3, module.__name__


def test_without_pysqlite3_the_standard_library_binding_builds_and_queries_an_index(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def parse_arguments(argv):\n    return argv\n")
    code = (
        "import sys\n"
        "sys.modules['pysqlite3'] = None\n"  # as on a platform without its wheel
        "from ranklens.core._sqlite import sqlite3\n"
        "assert sqlite3.__name__ == 'sqlite3', sqlite3.__name__\n"
        "from ranklens.core.engine import Engine\n"
        f"e = Engine({str(root)!r}, cache_dir=__import__('pathlib').Path({str(tmp_path / 'cache')!r}))\n"
        "e.ensure_index()\n"
        "r = e.search('parse_arguments', arms=['fts5'])\n"
        "assert r.hits and r.hits[0].path == 'a.py', r\n"
        "print('ok')\n"
    )
    assert_python_prints_ok(code)
