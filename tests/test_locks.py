"""No wait without a bound: each file lock of ``core/`` held by another process, and what
the waiter does (``core.base.locks``)."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest
from cli_helpers import lock_held_elsewhere, run

from ranklens.core import judgments
from ranklens.core.arms import deep
from ranklens.core.base import locks
from ranklens.core.engine import Engine
from ranklens.core.index.indexer import INDEX_LOCK, Indexer

CORE = Path(__file__).resolve().parent.parent / "core"


def _touch(repo: Path) -> None:
    (repo / "app" / "extra.py").write_text("def fresh_function():\n    return 1\n")


def test_every_file_lock_in_core_goes_through_the_budgeted_helper():
    """A new ``FileLock`` or ``acquire()`` elsewhere in core/ would be a wait this file does not
    test; Milvus Lite's LOCK is only probed (``LOCK_NB``) and the repository lease of a shared
    store has its own ``--wait``."""
    found = []
    for path in CORE.rglob("*.py"):
        if path.name == "locks.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            waits = re.search(r"FileLock\(|\.acquire\(|fcntl\.flock\(|lockf\(", code)
            if waits and "LOCK_NB" not in code and "LOCK_UN" not in code:
                found.append(f"{path.relative_to(CORE)}:{number}: {line.strip()}")
    assert found == []


def test_an_indexer_waits_for_another_within_its_budget_then_says_what_holds_it(sample_repo, monkeypatch):
    engine = Engine(sample_repo)
    engine.ensure_index()
    _touch(sample_repo)
    monkeypatch.setenv(locks.LOCK_WAIT_ENV, "1.5")
    said: list[str] = []
    with lock_held_elsewhere(engine.directory / INDEX_LOCK):
        t0 = time.perf_counter()
        with pytest.raises(locks.LockBusy) as busy:
            Indexer(engine.root, engine.directory, engine.settings, said.append).update()
        waited = time.perf_counter() - t0
    # At least the budget; the upper bound only catches a second wait or none at all ending
    # (an update of this tree takes seconds at load 8 on two cores).
    assert 1.5 <= waited < 30, waited
    assert said == ["waiting for another ranklens indexing this root (index.lock), up to 1.5 s"]
    assert str(busy.value) == (
        "waited 1.5 s for another ranklens indexing this root (index.lock); it still holds it: "
        "try again when it finishes"
    )
    # Released within the budget, the wait ends there and the update goes on.
    monkeypatch.setenv(locks.LOCK_WAIT_ENV, "30")
    with lock_held_elsewhere(engine.directory / INDEX_LOCK) as holder:
        threading.Timer(1.0, holder.stdin.close).start()
        stats = Indexer(engine.root, engine.directory, engine.settings).update()
    assert stats.added == 1


def test_the_cli_says_in_one_line_what_it_waited_for(sample_repo):
    engine = Engine(sample_repo)
    engine.ensure_index()
    _touch(sample_repo)
    with lock_held_elsewhere(engine.directory / INDEX_LOCK):
        out = run("index", str(sample_repo), env={locks.LOCK_WAIT_ENV: "1"})
    assert out.returncode == 1, out.stderr
    assert out.stderr.splitlines() == [
        "ranklens: waiting for another ranklens indexing this root (index.lock), up to 1 s",
        "ranklens: error: waited 1 s for another ranklens indexing this root (index.lock); it still holds it: "
        "try again when it finishes",
    ]


def test_nothing_changed_needs_no_index_lock(sample_repo, monkeypatch):
    """A query over an unchanged tree answers while an indexer holds the lock (it only notes
    what a stat pass saw when the lock is free: never waits for it)."""
    engine = Engine(sample_repo)
    engine.ensure_index()
    for _ in range(50):  # files written just now are stat'ed as racy until a pass is past them
        if engine.check().unchanged:
            break
        time.sleep(0.1)
        engine.ensure_index()
    assert engine.check().unchanged
    monkeypatch.setenv(locks.LOCK_WAIT_ENV, "600")
    with lock_held_elsewhere(engine.directory / INDEX_LOCK):
        t0 = time.perf_counter()
        stats = Engine(sample_repo).ensure_index()
        # A wait would be the 600 s budget: any bound far below it proves none, at any load.
        assert time.perf_counter() - t0 < 60 and stats.unchanged == stats.files


def test_a_deep_build_is_never_waited_for(fake_deep, sample_repo):
    engine = Engine(sample_repo)
    engine.ensure_index(deep=False)
    with lock_held_elsewhere(engine.directory / deep.LOCK_FILE):
        t0 = time.perf_counter()
        build = engine.build_deep()
        assert time.perf_counter() - t0 < 60  # a wait would be the default 600 s budget
        assert build.busy and not build.complete and fake_deep.seen == []
        stats = engine.ensure_index()  # deep is on here (fake_deep): the stage says busy
        assert stats.deep_busy and stats.deep is None and stats.deep_embedded == 0
    assert engine.build_deep().complete


def test_the_deep_commit_waits_for_an_indexer_within_its_budget_and_keeps_the_vectors(
    fake_deep, sample_repo, monkeypatch
):
    engine = Engine(sample_repo)
    engine.ensure_index(deep=False)
    monkeypatch.setenv(locks.LOCK_WAIT_ENV, "1")
    said: list[str] = []
    engine.notify = said.append
    with lock_held_elsewhere(engine.directory / INDEX_LOCK):
        with pytest.raises(locks.LockBusy, match=r"waited 1 s for another ranklens indexing this root"):
            engine.build_deep()
    assert said == ["waiting for another ranklens indexing this root (index.lock), up to 1 s"]
    embedded = len(fake_deep.seen)
    assert embedded > 0
    again = engine.build_deep()  # nothing embedded twice: the vectors were kept in the cache
    assert again.complete and again.embedded == 0 and len(fake_deep.seen) == embedded


def test_a_judgment_waits_for_another_writer_within_its_budget(sample_repo, monkeypatch):
    monkeypatch.setattr(locks, "JUDGMENTS_WAIT_S", 1.0)
    target = judgments.judgments_path(sample_repo)
    target.parent.mkdir(parents=True, exist_ok=True)
    with lock_held_elsewhere(str(target) + ".lock"):
        t0 = time.perf_counter()
        with pytest.raises(locks.LockBusy, match=r"another ranklens saving relevance judgments"):
            judgments.judge(sample_repo, "hash a password", "app/auth.py", 1, 5, True)
        assert 1 <= time.perf_counter() - t0 < 30  # the budget, not a second one
    assert judgments.judge(sample_repo, "hash a password", "app/auth.py", 1, 5, True).relevant
