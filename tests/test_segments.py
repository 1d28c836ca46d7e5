"""An index of many segments, with tombstones and merges, answers as one fresh segment would."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from ranklens.core.engine import Engine
from ranklens.core.index import batches
from ranklens.core.storage import segments
from ranklens.core.storage.chunktable import ChunkTable
from ranklens.core.storage.segments import Manifest, SegmentRef, plan_merges
from ranklens.core.vectors import VectorIndex

CORE = Path(__file__).resolve().parents[1] / "core"
ARMS = ("bm25", "symbols", "lexical+ctx", "dense", "fts5")
QUERIES = [
    "merge segments",
    "def return self",
    "vector index search",
    "parse query tokens",
    "lock file write",
    "added_function_3",
    "edit lorem ipsum",
    "IndexView open",
    "chunk table",
]


def _scores(engine: Engine, arm: str, query: str) -> dict[str, float]:
    return {h.docid: h.score for h in engine.run_arm(arm, query, depth=20).hits}


@pytest.mark.slow
def test_segments_tombstones_and_merges_answer_as_one_fresh_segment(small_segments, tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    shutil.copytree(CORE, repo, ignore=shutil.ignore_patterns("models", "__pycache__", "schemas"))
    engine = Engine(repo, cache_dir=tmp_path / "a")
    cold = engine.ensure_index()
    assert cold.generation > 3 and len(engine.view.manifest.segments) == cold.generation  # one per flush
    rng = random.Random(7)
    files = sorted(repo.rglob("*.py"))
    merged = False
    # 24 edits at least, more until a merge has happened and tombstones remain (how many it
    # takes depends on core/'s files, which the edits are made in).
    for step in range(200):
        if step >= 24 and merged and len(engine.view.manifest.dead):
            break
        path = rng.choice(files)
        if not path.exists():
            continue
        roll = rng.random()
        if roll < 0.15:
            path.unlink()
        elif roll < 0.3:
            (path.parent / f"new_{step}.py").write_text(f"def added_function_{step}(x):\n    return x * {step}\n")
        else:
            lines = path.read_text().splitlines()
            lines.insert(rng.randrange(len(lines) + 1), f"# edit {step} lorem ipsum")
            path.write_text("\n".join(lines) + "\n")
        before = len(engine.view.manifest.segments)
        stats = engine.ensure_index()
        manifest = engine.view.manifest
        merged |= len(manifest.segments) < before
        assert stats.chunks == manifest.live == len(engine.view.chunks)
        # Each segment's vectors are its chunks', row for row.
        for folder in engine.view.segment_dirs:
            assert np.array_equal(VectorIndex.load(folder / "dense.usearch").keys(), ChunkTable.load_dir(folder).ids)
    assert merged and len(manifest.dead)
    monkeypatch.setattr(batches, "SEGMENT_CHUNKS", 10**9)
    monkeypatch.setattr(batches, "FIRST_SEGMENT_CHUNKS", 10**9)
    fresh = Engine(repo, cache_dir=tmp_path / "b")
    fresh.ensure_index()
    assert len(fresh.view.manifest.segments) == 1
    assert sorted(zip(engine.view.chunks.paths, engine.view.chunks.starts.tolist())) == sorted(
        zip(fresh.view.chunks.paths, fresh.view.chunks.starts.tolist())
    )
    for arm in ARMS:
        for query in QUERIES:
            got, want = _scores(engine, arm, query), _scores(fresh, arm, query)
            # Chunk ids differ (changed files got new ones), so ties may order differently: the
            # same scores, and the same score for every chunk both rank.
            np.testing.assert_allclose(
                sorted(got.values()), sorted(want.values()), rtol=1e-9, atol=1e-12, err_msg=f"{arm}: {query}"
            )
            for docid in set(got) & set(want):
                assert got[docid] == pytest.approx(want[docid], rel=1e-9), (arm, query, docid)
    # Filters see live rows only.
    some = engine.view.chunks.paths[0]
    result = engine.run_arm("dense", "return", path_glob=some)
    assert result.ok and {h.path for h in result.hits} == {some}


def _manifest(rows: list[int], dead: list[int] = ()) -> Manifest:
    refs, first = [], 1
    for n in rows:
        refs.append(SegmentRef(f"seg-{len(refs) + 1:06d}", n, first, first + n - 1))
        first += n
    return Manifest(refs, np.asarray(sorted(dead), dtype=np.int64))


def test_merges_join_runs_of_small_neighbours_and_expunge_dead_segments(monkeypatch):
    monkeypatch.setattr(segments, "SMALL_SEGMENT", 100)
    monkeypatch.setattr(segments, "MERGE_RUN", 4)
    assert plan_merges(_manifest([1000, 1000, 5, 5, 5])) == []  # a run of three: not yet
    assert plan_merges(_manifest([1000, 1000, 5, 5, 5, 5])) == [[2, 3, 4, 5]]
    # A large segment between two short runs keeps them apart (ids stay ascending).
    assert plan_merges(_manifest([5, 5, 1000, 5, 5])) == []
    # 40 % of a large segment tombstoned: rewritten alone; a small one emptied: dropped by its rewrite.
    assert plan_merges(_manifest([1000, 1000, 5], dead=list(range(1001, 1401)))) == [[1]]
    assert plan_merges(_manifest([1000, 5], dead=list(range(1001, 1006)))) == [[1]]


@pytest.mark.slow
def test_every_segment_written_by_the_dense_build_carries_both_companions(small_segments, tmp_path, monkeypatch):
    """The dense build writes each segment's int8 codes and sign bits with its vectors (a new
    segment and a merged one alike), and the arm's search picks its candidates by the bits."""
    from ranklens.core.vectors import scan, storage

    monkeypatch.setattr(scan.Int8Scan, "MIN_VECTORS", 10)
    monkeypatch.setattr(scan.Int8Scan, "MIN_SEGMENT", 10)
    monkeypatch.setattr(scan.SignBits, "MIN_ROWS", 200)
    monkeypatch.setattr(scan.SignBits, "CANDIDATES", 150)
    repo = tmp_path / "repo"
    shutil.copytree(CORE, repo, ignore=shutil.ignore_patterns("models", "__pycache__", "schemas"))
    engine = Engine(repo, cache_dir=tmp_path / "cache")
    engine.ensure_index()

    def check() -> None:
        for folder in engine.view.segment_dirs:
            stored = storage.read(folder / "dense.usearch", view=True)
            if len(stored.keys) < 10:
                continue
            assert stored.companion.exists() and stored.bits.exists(), folder
            bits = scan.SignBits.load(stored.bits, stored.dim, len(stored.keys), view=True)
            assert bits is not None and np.array_equal(bits.words, scan.SignBits.encode(stored.vecs))
            assert sorted(p.name for p in folder.glob("dense.usearch.*")) == [stored.bits.name, stored.companion.name]

    check()
    first = len(engine.view.manifest.segments)
    for i in range(10):  # small updates, until some merge
        (repo / f"added_{i}.py").write_text(f"def added_function_{i}(x):\n    return x + {i}\n" * 8)
        engine.ensure_index()
    assert len(engine.view.manifest.segments) < first + 10
    check()
    scanned: list[int] = []
    real = scan.SignBits.distances
    monkeypatch.setattr(
        scan.SignBits, "distances", lambda self, q, out=None: scanned.append(len(self)) or real(self, q, out)
    )
    result = engine.run_arm("dense", "search the vectors of every segment", depth=10)
    assert result.ok and len(result.hits) >= 10
    sizes = [len(VectorIndex.load(d / "dense.usearch")) for d in engine.view.segment_dirs]
    assert sum(scanned) == sum(n for n in sizes if n >= 10)  # every segment with companions, once
