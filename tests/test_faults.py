"""Faults the index must survive: kill -9 at any point of a cold build or an update, a disk
that fills up while writing, the index folder deleted under a running engine.

Each kill runs a real child indexer (segments of ~50 chunks, so a cold build of this copy of
``core/`` commits a dozen generations) killed with SIGKILL at a named checkpoint
(``RANKLENS_FAULT``, core.index.indexer) or after a random delay. The next run must serve a
consistent index (every chunk row resolvable, every arm answering, the chunk table matching
the database and the files) and go on from what was committed.
"""

from __future__ import annotations

import hashlib
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from index_checks import assert_fts_matches_chunks

from ranklens.core.base._sqlite import sqlite3
from ranklens.core.engine import INDEX_GONE, Engine
from ranklens.core.index import indexer
from ranklens.core.storage import segments
from ranklens.core.storage.segments import Manifest
from ranklens.core.storage.store import gen_dir_name

pytestmark = pytest.mark.slow

CORE = Path(__file__).resolve().parents[1] / "core"
ARMS = ("bm25", "fts5", "dense", "symbols", "lexical+ctx", "hybrid")

# The child indexer: small segments (as the fixture below sets them in this process).
CHILD = r"""
import sys
from pathlib import Path
from ranklens.core.index import batches
from ranklens.core.storage import segments
batches.SEGMENT_CHUNKS = segments.SEGMENT_CHUNKS = 50
segments.SMALL_SEGMENT = 12
batches.CHUNK_BATCH_BYTES = 20_000
batches.POOL_MIN_BYTES = int(sys.argv[3])
from ranklens.core.engine import Engine
stats = Engine(Path(sys.argv[1]), cache_dir=Path(sys.argv[2])).ensure_index(deep=False)
print("done", stats.generation, flush=True)
"""


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(CORE, root, ignore=shutil.ignore_patterns("models", "__pycache__", "schemas"))
    return root


def child(root: Path, cache: Path, fault: str | None = None, pooled: bool = False, **popen):
    env = {**os.environ, "RANKLENS_DEEP": "0"}
    env.pop(indexer.FAULT_ENV, None)
    if fault:
        env[indexer.FAULT_ENV] = fault
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), str(cache), "0" if pooled else str(10**12)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def check_consistent(root: Path, cache: Path) -> Engine | None:
    """The committed index (None when none was committed yet) is whole and answers."""
    engine = Engine(root, cache_dir=cache)
    if not engine.open():
        assert not (engine.directory / "index.sqlite").exists() or _generation(engine.directory) == 0
        return None
    view = engine.view
    conn = sqlite3.connect(view.db_path)
    try:
        ids = [r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY id")]
        files = {r[0] for r in conn.execute("SELECT path FROM files")}
        chunk_paths = {r[0] for r in conn.execute("SELECT DISTINCT path FROM chunks")}
        assert_fts_matches_chunks(conn)
    finally:
        conn.close()
    # Every chunk row of the generation is a chunk of the database, and the other way round.
    assert view.chunks.ids().tolist() == ids
    assert set(view.chunks.paths) == chunk_paths <= files
    assert view.manifest.live == len(ids)
    for folder in view.segment_dirs:
        assert folder.is_dir()
    for arm in ARMS:
        result = engine.run_arm(arm, "merge the segments of the index")
        assert result.ok and result.hits, (arm, result.error or result.skipped)
    assert engine.search("vector search").hits
    return engine


def _generation(directory: Path) -> int:
    conn = sqlite3.connect(directory / "index.sqlite")
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    except sqlite3.Error:
        return 0
    finally:
        conn.close()
    return int(row[0]) if row else 0


def check_clean(directory: Path) -> None:
    """No temporary folder or file, and no segment or generation the kept generations do not list."""
    names = {p.name for p in directory.iterdir()}
    assert not [n for n in names if ".tmp" in n], names
    current = _generation(directory)
    listed = set()
    for number in (current, current - 1):
        if (directory / gen_dir_name(number)).is_dir():
            listed |= {s.name for s in Manifest.load(directory / gen_dir_name(number)).segments}
    assert {n for n in names if n.startswith("seg-")} == listed
    for seg in directory.glob("seg-*"):
        assert not [p for p in seg.iterdir() if ".tmp" in p.name]


def chunk_set(engine: Engine) -> set:
    table = engine.view.chunks
    return set(zip(table.paths, table.starts.tolist(), table.ends.tolist()))


def finish_and_compare(root: Path, cache: Path, tmp_path: Path) -> tuple:
    """Run the index to the end in this process; it must equal a fresh build of the tree."""
    engine = Engine(root, cache_dir=cache)
    stats = engine.ensure_index(deep=False)
    check_clean(engine.directory)
    check_consistent(root, cache)
    fresh = Engine(root, cache_dir=tmp_path / f"fresh-{time.monotonic_ns()}")
    fresh.ensure_index(deep=False)
    assert chunk_set(engine) == chunk_set(fresh)
    for arm in ("bm25", "symbols", "dense"):
        got = sorted(h.score for h in engine.run_arm(arm, "index generation commit").hits)
        want = sorted(h.score for h in fresh.run_arm(arm, "index generation commit").hits)
        np.testing.assert_allclose(got, want, rtol=1e-9)
    return stats, fresh.view.manifest.live


@pytest.mark.parametrize("fault", ["chunk:3", "segment:2", "generation:4", "commit:3"])
def test_a_cold_build_killed_at_a_checkpoint_resumes_from_what_it_committed(fault, repo, tmp_path, small_segments):
    cache = tmp_path / "cache"
    proc = child(repo, cache, fault)
    _out, err = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL, err[-2000:]
    committed = check_consistent(repo, cache)
    assert committed is not None  # each checkpoint is past the first commit
    kept = len(set(committed.view.chunks.paths))
    total = sum(1 for p in repo.rglob("*") if p.is_file())  # every file is indexed, not only *.py
    stats, _chunks = finish_and_compare(repo, cache, tmp_path)
    # It went on from there: the files committed before the kill were not indexed again.
    assert stats.added <= total - kept and stats.rebuilt is None


@pytest.mark.parametrize("fault", ["chunk:1", "segment:1", "merge:1", "generation:1", "commit:1"])
def test_an_update_killed_at_a_checkpoint_serves_the_old_or_the_new_index(fault, repo, tmp_path, small_segments):
    cache = tmp_path / "cache"
    first = child(repo, cache)
    assert first.communicate(timeout=300)[0].startswith("done")
    # Many small updates' segments, so that the next one merges them.
    engine = Engine(repo, cache_dir=cache)
    for i in range(segments.MERGE_RUN - 1):
        (repo / f"extra_{i}.py").write_text(f"def extra_function_{i}():\n    return {i}\n")
        engine.ensure_index(deep=False)
    before = chunk_set(engine)
    victim = sorted(repo.rglob("*.py"))[3]
    victim.write_text(victim.read_text() + "\n\ndef appended_by_the_update():\n    return 'merge'\n")
    (repo / "extra_0.py").unlink()
    proc = child(repo, cache, fault)
    _out, err = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL, err[-2000:]
    after = check_consistent(repo, cache)
    assert after is not None
    got = chunk_set(after)
    committed = _generation(after.directory) > engine.view.generation
    assert (got != before) == committed  # the whole update, or none of it
    finish_and_compare(repo, cache, tmp_path)


def _committed_generation(directory: Path) -> int:
    """The newest generation folder the build has published (0 before the first): read from
    the folder's names, so the watching test takes no lock the build could wait on."""
    numbers = [int(p.name[4:]) for p in directory.glob("gen-*") if p.name[4:].isdigit()]
    return max(numbers, default=0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_kills_of_a_cold_build_leave_a_consistent_index_that_resumes(seed, repo, tmp_path, small_segments):
    """Killed twice at random moments of the build's first half. A moment is a point of the
    build's own progress (a random one of the first half of its generations published, then a
    random few more milliseconds), never a time taken from another run: a timed run the load
    slowed, then a build it did not, put both kills after the end (seed 2, under load)."""
    cache = tmp_path / "cache"
    timed = child(repo, cache / "counted", pooled=seed == 3)
    assert timed.communicate(timeout=300)[0].startswith("done")
    generations = _committed_generation(Engine(repo, cache_dir=cache / "counted").directory)
    assert generations >= 4, generations  # a dozen with segments of ~50 chunks
    directory = Engine(repo, cache_dir=cache).directory
    rng = random.Random(seed)
    interrupted = 0
    for _ in range(2):
        start = _committed_generation(directory)  # the second build resumes from the first's
        target = start + rng.randint(1, max(1, (generations - start) // 2))
        proc = child(repo, cache, pooled=seed == 3, start_new_session=True)
        while proc.poll() is None and _committed_generation(directory) < target:
            time.sleep(0.005)
        time.sleep(rng.uniform(0, 0.05))
        os.killpg(proc.pid, signal.SIGKILL)
        interrupted += not proc.communicate(timeout=60)[0].startswith("done")
        check_consistent(repo, cache)
    assert interrupted  # at least one kill landed before the build was done
    finish_and_compare(repo, cache, tmp_path)


def _edit_half(root: Path, seed: int) -> None:
    """Edit, remove and add files (the same for the same seed and tree): an update of about
    half the tree, long enough to be killed at random moments."""
    rng = random.Random(seed)
    for i, path in enumerate(sorted(root.rglob("*.py"))):
        roll = rng.random()
        if roll < 0.1:
            path.unlink()
        elif roll < 0.5:
            path.write_text(path.read_text() + f"\n\ndef edited_by_update_{i}():\n    return {i}\n")
    for i in range(5):
        (root / f"added_{seed}_{i}.py").write_text(f"def added_by_update_{i}():\n    return 'segment {i}'\n")


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_kills_at_random_points_of_an_update_leave_a_consistent_index_that_resumes(
    seed, repo, tmp_path, small_segments
):
    """An update of half the tree (several segments of ~50 chunks) killed twice, each time at a
    random pass through a random checkpoint (a random point that does not depend on timing)."""
    cache = tmp_path / "cache"
    assert child(repo, cache).communicate(timeout=300)[0].startswith("done")
    before = check_consistent(repo, cache)
    generation, chunks_before = before.view.generation, chunk_set(before)
    _edit_half(repo, seed)
    rng = random.Random(seed)
    for _ in range(2):
        point = rng.choice(["chunk", "segment", "generation", "commit"])
        fault = f"{point}:{rng.randint(1, 6 if point == 'chunk' else 2)}"
        proc = child(repo, cache, fault)
        _out, err = proc.communicate(timeout=300)
        assert proc.returncode == -signal.SIGKILL, (fault, err[-2000:])
        after = check_consistent(repo, cache)
        # Nothing of the update committed yet, or some of its generations: never a broken index.
        assert after.view.generation >= generation
        if after.view.generation == generation:
            assert chunk_set(after) == chunks_before
    finish_and_compare(repo, cache, tmp_path)


def _limited(max_bytes: int):
    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    return limit


# Three places a write fails: a numpy array written short (64 KiB), a file write refused
# with EFBIG (256 KiB), SQLite's own write ("disk I/O error", 1 MiB).
@pytest.mark.parametrize("limit", [64 << 10, 256 << 10, 1 << 20])
def test_a_full_disk_keeps_the_previous_index_serving(limit, repo, tmp_path, small_segments):
    cache = tmp_path / "cache"
    engine = Engine(repo, cache_dir=cache)
    engine.ensure_index(deep=False)
    before = chunk_set(engine)
    generation = engine.view.generation
    # A big new file: its segment, vectors and rows do not fit under the limit (hex digests:
    # text that zlib cannot shrink much, as the index stores it compressed).
    (repo / "big.py").write_text(
        "".join(
            f"def generated_function_{i}(x):\n    return x + {i}  # {hashlib.sha256(str(i).encode()).hexdigest()}\n\n"
            for i in range(6000)
        )
    )
    env = {**os.environ, "RANKLENS_CACHE_DIR": str(cache), "RANKLENS_DEEP": "0", "COLUMNS": "200"}
    out = subprocess.run(
        [sys.executable, "-m", "ranklens", "index", str(repo)],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=_limited(limit),
        timeout=300,
    )
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 1 and len(lines) == 1, out.stderr[-3000:]
    assert lines[0].startswith("ranklens: error: cannot write the index") and "previous index is kept" in lines[0]
    assert "Traceback" not in out.stderr
    check_clean(engine.directory)
    served = check_consistent(repo, cache)
    assert served.view.generation == generation and chunk_set(served) == before
    # A query under the same limit still answers, from the index as it was committed.
    query = subprocess.run(
        [sys.executable, "-m", "ranklens", "query", "vector search", "--root", str(repo)],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=_limited(limit),
        timeout=300,
    )
    assert query.returncode == 0 and query.stdout.strip(), query.stderr[-2000:]
    assert "the previous index is kept; answering from it" in query.stderr
    check_clean(engine.directory)
    # With room again, the update goes through.
    stats = Engine(repo, cache_dir=cache).ensure_index(deep=False)
    assert stats.added == 1 and stats.generation > generation


def test_the_index_folder_deleted_under_a_running_engine_is_rebuilt(repo, tmp_path, small_segments):
    notes = []
    engine = Engine(repo, cache_dir=tmp_path / "cache", notify=notes.append)
    engine.ensure_index(deep=False)
    assert engine.search("vector search").hits
    shutil.rmtree(engine.directory)
    # An arm asked alone says so (the terminal UI then rebuilds); a search rebuilds first.
    assert engine.run_arm("bm25", "vector search").error == INDEX_GONE and not engine.ready
    result = engine.search("vector search")
    assert result.hits and set(result.answered) == {"bm25", "fts5", "dense", "symbols"}
    assert any("was deleted; rebuilding it" in n for n in notes)
    assert engine.ready and check_consistent(repo, tmp_path / "cache")
