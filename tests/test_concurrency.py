"""Never hang, never crash under concurrency (issue #19).

The pattern that hung ``.ci/run``: in one process, engines open and close views of an index
(their read connections, the prewarm of every ``ensure_index``) while the indexer updates it
after a file changed. SQLite 3.51.1's unix VFS deadlocked an open against a WAL close on
another thread; Python 3.11's AST construction, which numpy's ``.npy`` header parsing uses,
raised ``SystemError`` when two threads parsed at once. Each loop here is bounded in rounds
and in time; a hang fails the test through pytest-timeout (``pyproject.toml``), with every
thread's stack.
"""

from __future__ import annotations

import gc
import io
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from churn import CHURN_PATH, CHURN_QUERY, consistent_spans, save

from ranklens.core.base import npyfile
from ranklens.core.engine import Engine
from ranklens.core.storage import store


def _answer_errors(result, newest: int) -> list[str]:
    """What is wrong with one search's answer: an arm that failed, or the churned file's hits
    not all from one saved version (one committed generation)."""
    errors = [f"{r.arm}: {r.error}" for r in result.results.values() if r.error]
    spans = [(h.start_line, h.end_line) for r in result.results.values() for h in r.hits if h.path == CHURN_PATH]
    if spans and consistent_spans(spans, newest) is None:
        errors.append(f"the churned file's spans {sorted(set(spans))} are not one version's (newest {newest})")
    return errors


def stress(root: Path, rounds: int) -> tuple[int, list[str]]:
    """``rounds`` rounds (fewer only when one fails): the file changes, a fresh engine's
    ``ensure_index()`` runs on this thread while two threads each open a fresh engine and
    search. Counted in rounds, not seconds, so a loaded machine only makes it slower. Returns
    the rounds run and every error seen."""
    errors: list[str] = []
    done = 0

    def reader(newest: int) -> None:
        try:
            engine = Engine(root)
            try:
                if engine.open():
                    errors.extend(_answer_errors(engine.search(CHURN_QUERY, top_k=20), newest))
            finally:
                engine.close()
        except Exception as exc:
            errors.append(f"reader: {type(exc).__name__}: {exc}")

    for n in range(1, rounds + 1):
        save(root, n)
        threads = [threading.Thread(target=reader, args=(n,), daemon=True) for _ in range(2)]
        for t in threads:
            t.start()
        engine = Engine(root)
        try:
            engine.ensure_index()
            errors.extend(_answer_errors(engine.search(CHURN_QUERY, top_k=20), n))
        finally:
            engine.close()
        for t in threads:
            t.join(60)
            if t.is_alive():
                errors.append(f"round {n}: a reader is still running after 60 s")
        done = n
        if errors:
            break
    return done, errors


@pytest.fixture
def churn_repo(sample_repo: Path) -> Path:
    save(sample_repo, 0)
    Engine(sample_repo).ensure_index()
    return sample_repo


def test_views_open_and_close_while_the_indexer_updates(churn_repo):
    done, errors = stress(churn_repo, rounds=4)
    assert errors == [] and done == 4


@pytest.mark.slow  # the loop, long enough to meet a rare interleaving (was: up to 90 s)
def test_views_open_and_close_while_the_indexer_updates_long(churn_repo):
    done, errors = stress(churn_repo, rounds=100)
    assert errors == [] and done == 100


def test_the_connection_rule_holds_even_on_the_deadlocking_sqlite(sample_repo, tmp_path):
    """pysqlite3-binary 0.5.4.post2 (SQLite 3.51.1, which deadlocks an open against a WAL
    close in one process) with the store's connection lock: the stress loop still passes."""
    try:
        from pysqlite3 import dbapi2
    except ImportError:
        pytest.skip("pysqlite3-binary is not installed")
    if dbapi2.sqlite_version_info[:2] != (3, 51):
        pytest.skip(f"pysqlite3 bundles SQLite {dbapi2.sqlite_version}, not 3.51")
    save(sample_repo, 0)
    tests = Path(__file__).parent
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from pathlib import Path\n"
        "from ranklens.core.base._sqlite import sqlite3\n"
        "assert sqlite3.sqlite_version_info[:2] == (3, 51), sqlite3.sqlite_version\n"
        "from test_concurrency import stress\n"
        "done, errors = stress(Path(sys.argv[2]), rounds=4)\n"
        "assert not errors and done == 4, (done, errors)\n"
        "print('ok')\n"
    )
    env = {**os.environ, "RANKLENS_SQLITE": "pysqlite3", "PYTHONFAULTHANDLER": "1"}
    out = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", code, str(tests), str(sample_repo)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]


def test_connections_open_and_close_under_the_one_lock(sample_repo):
    """A thread holding the store's connection lock keeps every other thread's open and close
    of an index connection waiting (and only that: the held thread itself may re-enter)."""
    Engine(sample_repo).ensure_index()
    view = store.IndexView.open(sample_repo, Engine(sample_repo).directory)
    events: list[str] = []

    def other() -> None:
        conn = store.connect(view.db_path, readonly=True)
        events.append("opened")
        store.close(conn)
        events.append("closed")

    with store.CONNECTION_LOCK:
        conn = store.connect(view.db_path, readonly=True)  # re-entered on this thread
        t = threading.Thread(target=other, daemon=True)
        t.start()
        t.join(0.3)
        assert events == []  # waiting for the lock
        store.close(conn)
    t.join(10)
    assert events == ["opened", "closed"]


def test_a_views_thread_connection_closes_when_its_thread_ends(sample_repo):
    Engine(sample_repo).ensure_index()
    view = store.IndexView.open(sample_repo, Engine(sample_repo).directory)
    seen = []

    def use() -> None:
        conn = view.connection()
        conn.execute("SELECT COUNT(*) FROM chunks").fetchone()
        seen.append(conn)

    t = threading.Thread(target=use)
    t.start()
    t.join(10)
    gc.collect()
    with pytest.raises(store.sqlite3.ProgrammingError):  # closed: "Cannot operate on a closed database"
        seen[0].execute("SELECT 1")
    assert view.connection().execute("SELECT COUNT(*) FROM chunks").fetchone()[0] > 0  # this thread's own


class _Interleave:
    """Cyclic garbage whose finalizer hands the interpreter to another thread's ``.npy`` read
    and waits (briefly) for it: a collection that lands inside numpy's header parse
    (``ast.literal_eval``) then interleaves two parses, as the garbage of a busy process
    (connections, arrays, workers) can. Without the lock this fails ~15 % of the loads."""

    go = threading.Event()
    done = threading.Event()

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        _Interleave.done.clear()
        _Interleave.go.set()
        _Interleave.done.wait(0.01)


def test_npy_headers_are_never_parsed_on_two_threads_at_once():
    buffers = []
    for i in range(6):
        out = io.BytesIO()
        np.save(out, np.arange(12 * (i + 1), dtype=np.int64 if i % 2 else np.float32).reshape(-1, 1 + i % 3))
        buffers.append(out.getvalue())
    errors: list[str] = []
    stop = threading.Event()

    def other() -> None:  # loads whenever a finalizer on the main thread asks
        while not stop.is_set():
            if _Interleave.go.wait(0.1):
                _Interleave.go.clear()
                try:
                    npyfile.load(io.BytesIO(buffers[0]))
                except Exception as exc:
                    errors.append(f"other thread: {type(exc).__name__}: {exc}")
                _Interleave.done.set()

    thread = threading.Thread(target=other, daemon=True)
    thread.start()
    old = gc.get_threshold()
    loads = 0
    try:
        # Where a collection falls depends on how much numpy allocates: sweep the threshold.
        for threshold in range(6, 60, 3):
            gc.set_threshold(threshold, 1, 1)
            until = time.monotonic() + 0.1
            while time.monotonic() < until:
                for i, raw in enumerate(buffers):
                    _Interleave()
                    loads += 1
                    try:
                        a = npyfile.load(io.BytesIO(raw))
                        assert a.size == 12 * (i + 1)
                    except Exception as exc:
                        errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        gc.set_threshold(*old)
        stop.set()
        thread.join(5)
    assert errors == [], f"{len(errors)} of {loads} loads failed: {errors[0]}"


def test_npy_files_load_whole_or_mapped(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.arange(6, dtype=np.int32).reshape(2, 3))
    mapped, whole = npyfile.load(path, mmap=True), npyfile.load(path)
    assert isinstance(mapped, np.memmap) and not isinstance(whole, np.memmap)
    assert mapped.tolist() == whole.tolist() == [[0, 1, 2], [3, 4, 5]]
    np.save(tmp_path / "o.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError):  # never unpickles
        npyfile.load(tmp_path / "o.npy")


def test_npz_members_are_read_under_the_lock(tmp_path):
    path = tmp_path / "cache.npz"
    np.savez(path, keys=np.arange(4, dtype=np.int64), model=np.array("m"))
    got = npyfile.load_npz(path)
    assert got["keys"].tolist() == [0, 1, 2, 3] and str(got["model"]) == "m"
