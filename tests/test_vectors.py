from __future__ import annotations

import itertools
import os
import threading
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import assert_python_prints_ok

import ranklens.core.vectors.index as vectors_mod
from ranklens.core.vectors import VectorIndex, scan, storage

DIM = 16


def _data(n: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    keys = rng.choice(10_000_000, size=n, replace=False).astype(np.int64)
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    return keys, vecs


def _brute(keys: np.ndarray, vecs: np.ndarray, q: np.ndarray, k: int, allowed=None):
    if allowed is not None:
        keep = np.isin(keys, allowed)
        keys, vecs = keys[keep], vecs[keep]
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    sims = unit @ (q / np.linalg.norm(q))
    order = np.argsort(-sims, kind="stable")[:k]
    return keys[order], sims[order]


def _index(keys, vecs) -> VectorIndex:
    index = VectorIndex(DIM)
    index.add(keys, vecs)
    return index


def _agree(got_keys, got_sims, want_keys, want_sims):
    # float16 storage: compare similarities, and keys up to near-ties.
    assert len(got_keys) == len(want_keys)
    np.testing.assert_allclose(got_sims, want_sims, atol=5e-3)
    assert len(set(got_keys.tolist()) & set(want_keys.tolist())) >= len(want_keys) - 1


def test_add_and_search_matches_brute_force():
    keys, vecs = _data()
    index = _index(keys, vecs)
    assert len(index) == len(keys) and index.dim == DIM
    q = vecs[7] + 0.1
    got_keys, got_sims = index.search(q, 30)
    assert got_keys.dtype == np.int64 and got_sims.dtype == np.float32
    assert np.all(np.diff(got_sims) <= 0), "similarities must be descending"
    _agree(got_keys, got_sims, *_brute(keys, vecs, q, 30))
    top_key, top_sim = index.search(vecs[7], 1)
    assert top_key[0] == keys[7] and top_sim[0] == pytest.approx(1.0, abs=2e-3)


def test_k_larger_than_index_and_nonpositive_k():
    keys, vecs = _data(5)
    index = _index(keys, vecs)
    got, sims = index.search(vecs[0], 50)
    assert sorted(got.tolist()) == sorted(keys.tolist()) and len(sims) == 5
    assert index.search(vecs[0], 0)[0].size == 0


def test_uint64_keys_and_single_vector_add():
    index = VectorIndex(DIM)
    index.add(np.array([2**40, 5], dtype=np.uint64), np.eye(DIM, dtype=np.float32)[:2])
    index.add(np.array([9]), np.eye(DIM, dtype=np.float32)[2])
    got, _ = index.search(np.eye(DIM)[0], 1)
    assert got.tolist() == [2**40]
    assert 9 in index and 5 in index and 4 not in index


def test_readding_a_key_replaces_its_vector():
    index = VectorIndex(DIM)
    eye = np.eye(DIM, dtype=np.float32)
    index.add(np.array([1, 2]), eye[:2])
    index.add(np.array([1]), eye[5:6])
    assert len(index) == 2
    got, sims = index.search(eye[5], 1)
    assert got.tolist() == [1] and sims[0] == pytest.approx(1.0, abs=1e-3)
    got, sims = index.search(eye[0], 2)
    assert sims[0] < 0.5  # key 1 no longer points at e0


def test_remove():
    keys, vecs = _data(100)
    index = _index(keys, vecs)
    gone = keys[:10]
    index.remove(gone)
    index.remove(np.array([123456789012], dtype=np.int64))  # absent: ignored
    index.remove(np.array([], dtype=np.int64))
    assert len(index) == 90
    got, _ = index.search(vecs[0], 100)
    assert len(got) == 90 and not np.isin(got, gone).any()
    assert int(keys[0]) not in index and int(keys[50]) in index
    # Adding after removal keeps working.
    index.add(gone[:1], vecs[:1])
    assert index.search(vecs[0], 1)[0].tolist() == [keys[0]]


def test_bad_input_is_rejected():
    index = VectorIndex(DIM)
    with pytest.raises(ValueError):
        index.add(np.array([1, 2]), np.zeros((3, DIM)))
    with pytest.raises(ValueError):
        index.add(np.array([1]), np.zeros((1, DIM + 1)))
    with pytest.raises(ValueError):
        index.add(np.array([1, 1]), np.ones((2, DIM)))
    with pytest.raises(ValueError):
        index.add(np.array([1]), np.full((1, DIM), np.nan))
    with pytest.raises(ValueError):
        VectorIndex(0)
    index.add(np.array([1]), np.ones((1, DIM)))
    with pytest.raises(ValueError):
        index.search(np.ones(DIM + 1), 3)


def test_empty_index_and_zero_query():
    index = VectorIndex(DIM)
    keys, sims = index.search(np.ones(DIM), 10)
    assert keys.shape == (0,) and sims.shape == (0,)
    assert keys.dtype == np.int64 and sims.dtype == np.float32
    assert index.search(np.ones(DIM), 10, np.array([1, 2], dtype=np.int64))[0].size == 0
    index.add(np.array([1]), np.ones((1, DIM)))
    assert index.search(np.zeros(DIM), 10)[0].size == 0


@pytest.mark.parametrize("fraction", [1.0, 0.9, 0.5, 0.2, 0.02])
def test_allowed_filter_is_exact(fraction):
    keys, vecs = _data(2000, seed=3)
    index = _index(keys, vecs)
    rng = np.random.default_rng(4)
    allowed = np.sort(rng.choice(keys, size=max(1, int(len(keys) * fraction)), replace=False))
    for qi in range(5):
        q = vecs[qi * 17] + rng.normal(scale=0.5, size=DIM)
        got_keys, got_sims = index.search(q, 30, allowed)
        assert np.isin(got_keys, allowed).all()
        _agree(got_keys, got_sims, *_brute(keys, vecs, q, 30, allowed))


def test_allowed_far_from_query_falls_back_to_exact(monkeypatch):
    # The allowed rows are the *least* similar ones: the bigger pool of the dense-filter
    # path misses them, so the search must fall back to the allowed rows themselves.
    keys, vecs = _data(1000, seed=5)
    q = vecs[0]
    far = _brute(keys, vecs, q, 1000)[0][-400:]
    index = _index(keys, vecs)
    allowed = np.sort(np.concatenate([far, keys[:1]]))
    monkeypatch.setattr(vectors_mod, "_DENSE_FILTER", 0.0)  # take the pool path first
    got_keys, got_sims = index.search(q, 30, allowed)
    assert np.isin(got_keys, allowed).all() and len(got_keys) == 30
    _agree(got_keys, got_sims, *_brute(keys, vecs, q, 30, allowed))


def test_allowed_unknown_unsorted_and_empty():
    keys, vecs = _data(50)
    index = _index(keys, vecs)
    allowed = np.array([keys[3], 10**15, keys[1], keys[3]], dtype=np.int64)  # unsorted, dup, unknown
    got, _ = index.search(vecs[0], 10, allowed)
    assert sorted(got.tolist()) == sorted([keys[1], keys[3]])
    assert index.search(vecs[0], 10, np.array([], dtype=np.int64))[0].size == 0
    assert index.search(vecs[0], 10, np.array([10**15], dtype=np.int64))[0].size == 0


def test_save_and_load_round_trip(tmp_path: Path):
    keys, vecs = _data(300)
    index = _index(keys, vecs)
    path = tmp_path / "vectors.idx"
    index.save(path)
    q = vecs[11] - 0.2
    want = index.search(q, 20)

    viewed = VectorIndex.load(path)  # view=True by default
    assert viewed.is_view and len(viewed) == 300 and viewed.dim == DIM
    np.testing.assert_array_equal(viewed.search(q, 20)[0], want[0])
    np.testing.assert_array_equal(viewed.search(q, 20)[1], want[1])
    assert sorted(viewed.keys().tolist()) == sorted(keys.tolist())

    loaded = VectorIndex.load(path, view=False)
    assert not loaded.is_view
    np.testing.assert_array_equal(loaded.search(q, 20)[0], want[0])
    loaded.remove(keys[:100])
    loaded.add(np.array([42]), np.ones((1, DIM)))
    loaded.save(path)
    again = VectorIndex.load(path, view=True)
    assert len(again) == 201 and 42 in again and int(keys[0]) not in again
    # The older view still reads its (replaced) file unchanged.
    assert len(viewed) == 300
    np.testing.assert_array_equal(viewed.search(q, 20)[0], want[0])


def test_modifying_a_view_copies_it_and_leaves_the_file_alone(tmp_path: Path):
    keys, vecs = _data(40)
    path = tmp_path / "v.idx"
    _index(keys, vecs).save(path)
    before = path.read_bytes()
    view = VectorIndex.load(path, view=True)
    view.add(np.array([7]), np.ones((1, DIM)))
    view.remove(keys[:5])
    assert not view.is_view and len(view) == 36
    assert path.read_bytes() == before


def test_empty_index_round_trip(tmp_path: Path):
    path = tmp_path / "empty.idx"
    VectorIndex(DIM).save(path)
    for view in (True, False):
        index = VectorIndex.load(path, view=view)
        assert len(index) == 0 and index.dim == DIM
        assert index.search(np.ones(DIM), 5)[0].size == 0
        index.add(np.array([1]), np.ones((1, DIM)))
        assert len(index) == 1


def test_save_is_atomic_and_leaves_no_temp_files(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(scan.Int8Scan, "MIN_VECTORS", 10)  # with its int8 companion
    monkeypatch.setattr(scan.Int8Scan, "MIN_SEGMENT", 10)
    keys, vecs = _data(60)
    path = tmp_path / "sub" / "v.idx"
    _index(keys, vecs).save(path)
    _index(keys[:10], vecs[:10]).save(path)  # overwrite: the old companion goes too
    names = sorted(p.name for p in path.parent.iterdir())
    assert names[0] == "v.idx" and len(names) == 3 and names[1].endswith(".b1") and names[2].endswith(".i8")
    assert names[1][:-3] == names[2][:-3]  # one stamp for both companions
    assert len(VectorIndex.load(path)) == 10
    before = path.read_bytes()

    def boom(src, dst):
        raise OSError("disk on fire")

    monkeypatch.setattr(storage.os, "replace", boom)
    with pytest.raises(OSError, match="disk on fire"):
        _index(keys, vecs).save(path)
    assert sorted(p.name for p in path.parent.iterdir()) == names
    assert path.read_bytes() == before


def test_corrupt_files_are_rejected(tmp_path: Path):
    keys, vecs = _data(20)
    path = tmp_path / "v.idx"
    _index(keys, vecs).save(path)
    data = path.read_bytes()
    (tmp_path / "short.idx").write_bytes(data[:-10])
    (tmp_path / "junk.idx").write_bytes(b"not an index at all" * 10)
    (tmp_path / "tiny.idx").write_bytes(b"RLV")
    for name in ("short.idx", "junk.idx", "tiny.idx"):
        with pytest.raises(ValueError):
            VectorIndex.load(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        VectorIndex.load(tmp_path / "missing.idx")


def test_many_small_adds_and_concurrent_searches():
    keys, vecs = _data(3000, seed=9)
    index = VectorIndex(DIM)
    errors: list[BaseException] = []
    stop = threading.Event()

    def searcher():
        try:
            while not stop.is_set():
                got, sims = index.search(vecs[0], 10)
                assert len(got) == len(sims) <= 10
                assert np.all(np.diff(sims) <= 0)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=searcher) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for start in range(0, len(keys), 100):
            index.add(keys[start : start + 100], vecs[start : start + 100])
            if start % 500 == 0:
                index.remove(keys[start : start + 10])
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors
    assert len(index) == len(keys) - 10 * len(range(0, len(keys), 500))
    _agree(*index.search(vecs[1], 20), *_brute(*_live(index, keys, vecs), vecs[1], 20))


def _live(index: VectorIndex, keys: np.ndarray, vecs: np.ndarray):
    keep = np.isin(keys, index.keys())
    return keys[keep], vecs[keep]


def test_fsync_dir_tolerates_unopenable_directories(tmp_path: Path):
    storage.fsync_dir(tmp_path / "does-not-exist")
    assert os.path.isdir(tmp_path)


@pytest.mark.parametrize("fraction", [None, 0.5, 0.02])
def test_float32_scan_and_usearch_scan_agree(monkeypatch, fraction):
    # Small indexes are scanned in float32 with numpy; one over _F32_MAX_BYTES by usearch.
    keys, vecs = _data(3000, seed=9)
    rng = np.random.default_rng(10)
    allowed = None if fraction is None else np.sort(rng.choice(keys, size=int(len(keys) * fraction), replace=False))
    queries = [vecs[i] + rng.normal(scale=0.3, size=DIM) for i in range(0, 200, 20)]
    index = _index(keys, vecs)
    fast = [index.search(q, 30, allowed) for q in queries]
    assert index._f32 is not None
    monkeypatch.setattr(vectors_mod, "_F32_MAX_BYTES", 0)
    slow_index = _index(keys, vecs)
    slow = [slow_index.search(q, 30, allowed) for q in queries]
    assert slow_index._f32 is None
    for q, (fk, fs), (sk, ss) in zip(queries, fast, slow):
        _agree(fk, fs, sk, ss)
        _agree(fk, fs, *_brute(keys, vecs, q, 30, allowed))


def test_float32_copy_follows_modifications():
    keys, vecs = _data(200)
    index = _index(keys, vecs)
    index.search(vecs[0], 5)
    before = index._f32
    assert before is not None
    index.add(np.array([123456789]), vecs[:1] * 3.0 + 1.0)  # a new vector, the nearest to itself
    got, _ = index.search(vecs[0] * 3.0 + 1.0, 1)
    assert got[0] == 123456789 and index._f32 is not before
    index.remove(np.array([123456789]))
    assert 123456789 not in index.search(vecs[0] * 3.0 + 1.0, 5)[0]


def _coarse_scan_count(monkeypatch) -> list[int]:
    monkeypatch.setattr(scan.Int8Scan, "MIN_VECTORS", 100)
    monkeypatch.setattr(scan.Int8Scan, "MIN_SEGMENT", 100)
    calls: list[int] = []
    real = scan.Int8Scan.candidates

    def counting(self, query, pool, mask=None):
        calls.append(pool)
        return real(self, query, pool, mask)

    monkeypatch.setattr(scan.Int8Scan, "candidates", counting)
    return calls


def test_a_loaded_view_picks_candidates_by_its_int8_companion_and_rescores_them_exactly(tmp_path: Path, monkeypatch):
    calls = _coarse_scan_count(monkeypatch)
    keys, vecs = _data(2000)
    index = _index(keys, vecs)
    path = tmp_path / "v.idx"
    index.save(path)
    viewed = VectorIndex.load(path)
    rng = np.random.default_rng(5)
    for q in rng.normal(size=(20, DIM)).astype(np.float32):
        got, want = viewed.search(q, 30), index.search(q, 30)  # the latter scans every vector
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])  # the same bits, not just close
    assert calls == [scan.Int8Scan.MIN_POOL] * 20
    # A filter, or a pool as big as the index, scans the vectors themselves.
    viewed.search(vecs[0], 30, allowed=keys[:500])
    viewed.search(vecs[0], 1000)
    assert len(calls) == 20


def test_the_companion_is_dropped_on_modification_and_rebuilt_on_save(tmp_path: Path, monkeypatch):
    calls = _coarse_scan_count(monkeypatch)
    keys, vecs = _data(600)
    path = tmp_path / "v.idx"
    _index(keys[:500], vecs[:500]).save(path)
    viewed = VectorIndex.load(path)
    viewed.add(keys[500:], vecs[500:])  # no longer the file's vectors
    assert viewed.search(vecs[550], 1)[0][0] == keys[550] and calls == []
    viewed.save(path)
    again = VectorIndex.load(path)
    assert again.search(vecs[550], 1)[0][0] == keys[550] and len(calls) == 1
    # Loaded for modification, the companion follows removals and additions.
    editable = VectorIndex.load(path, view=False)
    editable.remove(keys[:100])
    editable.add(keys[:50], vecs[:50] * -1)
    editable.save(path)
    final = VectorIndex.load(path)
    q = -vecs[10]
    np.testing.assert_array_equal(final.search(q, 5)[0], editable.search(q, 5)[0])
    assert keys[60] not in final.search(vecs[60], 30)[0]


def test_a_missing_or_foreign_companion_means_a_full_scan(tmp_path: Path, monkeypatch):
    calls = _coarse_scan_count(monkeypatch)
    keys, vecs = _data(400)
    path = tmp_path / "v.idx"
    _index(keys, vecs).save(path)
    want = _index(keys, vecs).search(vecs[3], 10)
    companion = next(tmp_path.glob("v.idx.*.i8"))
    other = tmp_path / "w.idx"
    _index(keys[:300], vecs[:300]).save(other)
    os.replace(next(tmp_path.glob("w.idx.*.i8")), companion)  # 300 vectors, not 400
    got = VectorIndex.load(path).search(vecs[3], 10)
    companion.write_bytes(b"junk")
    got2 = VectorIndex.load(path).search(vecs[3], 10)
    companion.unlink()
    got3 = VectorIndex.load(path).search(vecs[3], 10)
    assert calls == []
    for g in (got, got2, got3):
        np.testing.assert_array_equal(g[0], want[0])


def test_small_indexes_get_no_companion(tmp_path: Path):
    keys, vecs = _data(300)
    _index(keys, vecs).save(tmp_path / "v.idx")
    assert [p.name for p in tmp_path.iterdir()] == ["v.idx"]


def test_onnxruntime_still_loads_after_usearch_scanned_a_big_index():
    """usearch initialised before the system libstdc++'s locale breaks onnxruntime's import
    (core/vectors/_usearch.py); the vector index imports usearch only after that, so the
    deep arm can follow."""
    pytest.importorskip("onnxruntime")
    code = (
        "import sys, numpy as np\n"
        "import ranklens.core.vectors.index as v\n"
        "v._F32_MAX_BYTES = 0\n"  # scanned by usearch, as an index too big for the copy is
        "rng = np.random.default_rng(0)\n"
        "x = v.VectorIndex(16); x.add(np.arange(300), rng.normal(size=(300, 16)))\n"
        "assert x.search(rng.normal(size=16), 5)[0].size == 5\n"
        "assert 'usearch.index' in sys.modules and 'onnxruntime' not in sys.modules\n"
        "import onnxruntime\n"
        "print('ok')\n"
    )
    assert_python_prints_ok(code)


def test_the_companion_is_scanned_whatever_was_imported_before(tmp_path: Path):
    """numkong scans the companion even after usearch and onnxruntime are loaded (simsimd,
    used before, refused every input once usearch was imported)."""
    pytest.importorskip("onnxruntime")
    path = tmp_path / "v.idx"
    assert_python_prints_ok(
        "import sys, numpy as np\n"
        "from ranklens.core.vectors import _usearch\n"
        "_usearch.index()\n"
        "import onnxruntime\n"
        "from ranklens.core.vectors import VectorIndex, scan\n"
        "scan.Int8Scan.MIN_VECTORS = 100; scan.Int8Scan.MIN_SEGMENT = 100\n"
        "rng = np.random.default_rng(0)\n"
        "x = VectorIndex(16); x.add(np.arange(3000), rng.normal(size=(3000, 16)))\n"
        f"x.save(scan.Path({str(path)!r}))\n"
        "q = rng.normal(size=16)\n"
        f"view = VectorIndex.load(scan.Path({str(path)!r}))\n"
        "got, want = view.search(q, 30), x.search(q, 30)\n"
        "assert scan.numkong() is not None and view._coarse is not None\n"
        "assert (got[0] == want[0]).all() and (got[1] == want[1]).all()\n"
        "print('ok')\n"
    )


def test_without_numkong_a_view_scans_every_vector_with_the_same_results(tmp_path: Path):
    """The companion is scanned by numkong; where it cannot be used the index still answers."""
    path = tmp_path / "v.idx"
    assert_python_prints_ok(
        "import sys, numpy as np\n"
        "sys.modules['numkong'] = None\n"  # numkong missing: importing it fails
        "from ranklens.core.vectors import VectorIndex, scan\n"
        "scan.Int8Scan.MIN_VECTORS = 100; scan.Int8Scan.MIN_SEGMENT = 100\n"
        "rng = np.random.default_rng(0)\n"
        "x = VectorIndex(16); x.add(np.arange(3000), rng.normal(size=(3000, 16)))\n"
        f"x.save(scan.Path({str(path)!r}))\n"
        "q = rng.normal(size=16)\n"
        f"got = VectorIndex.load(scan.Path({str(path)!r})).search(q, 30)\n"
        "want = x.search(q, 30)\n"
        "assert scan.numkong() is None\n"
        "assert (got[0] == want[0]).all() and (got[1] == want[1]).all()\n"
        "print('ok')\n"
    )


def test_segments_with_companions_share_one_candidate_pool(tmp_path: Path, monkeypatch):
    """Unfiltered, the segments' int8 companions pick one pool of candidates across them (as one
    index would), re-scored exactly; a segment without a companion is scanned exactly; a
    tombstoned row is never returned; a filter searches each segment alone. Each answer is
    the exact top-k over the live rows."""

    monkeypatch.setattr(scan.Int8Scan, "MIN_VECTORS", 300)
    monkeypatch.setattr(scan.Int8Scan, "MIN_SEGMENT", 300)
    scanned: list[int] = []
    real = scan.Int8Scan.sims
    monkeypatch.setattr(scan.Int8Scan, "sims", lambda self, q: scanned.append(len(self.codes)) or real(self, q))
    rescored: list[int] = []
    real_exact = VectorIndex.exact_sims
    monkeypatch.setattr(VectorIndex, "exact_sims", lambda self, q, r: rescored.append(len(r)) or real_exact(self, q, r))
    keys, vecs = _data(2000, seed=3)
    bounds = [0, 700, 1400, 1600, 2000]  # three with a companion (700, 700, 400), one without (200)
    segmented, all_live, live_vecs = _segmented(tmp_path, keys, vecs, bounds, every=7)
    rng = np.random.default_rng(9)
    for q in rng.normal(size=(15, DIM)).astype(np.float32):
        got_rows, got_sims = segmented.search(q, 10)
        want_keys, want_sims = _brute(all_live, live_vecs, q, 10)
        _agree(all_live[got_rows], got_sims, want_keys, want_sims)
    assert set(scanned) == {700, 400} and len(scanned) == 15 * 3  # each companion once a query
    assert sum(rescored) == 15 * scan.Int8Scan.MIN_POOL  # one pool a query, not one per segment
    allowed = np.zeros(len(all_live), dtype=bool)
    allowed[::3] = True
    got_rows, got_sims = segmented.search(rng.normal(size=DIM).astype(np.float32), 10, allowed)
    assert allowed[got_rows].all()


def test_a_small_tail_segment_joins_the_pool_and_a_small_index_stays_exact(tmp_path: Path, monkeypatch):
    """A segment of MIN_SEGMENT rows or more carries its companions, so the tail segment of a
    larger index joins the other segments' candidate pool (one int8 scan, not a float32 scan of
    its own); fewer than MIN_VECTORS rows searched together are scanned exactly, companions or
    not. Each answer is the exact top-k."""
    monkeypatch.setattr(scan.Int8Scan, "MIN_VECTORS", 1000)
    monkeypatch.setattr(scan.Int8Scan, "MIN_SEGMENT", 300)
    scanned: list[int] = []
    real = scan.Int8Scan.sims
    monkeypatch.setattr(scan.Int8Scan, "sims", lambda self, q: scanned.append(len(self.codes)) or real(self, q))
    keys, vecs = _data(2000, seed=5)
    segmented, all_live, live_vecs = _segmented(tmp_path / "big", keys, vecs, [0, 1500, 1900, 2000], every=11)
    rng = np.random.default_rng(2)
    for q in rng.normal(size=(10, DIM)).astype(np.float32):
        got_rows, got_sims = segmented.search(q, 10)
        _agree(all_live[got_rows], got_sims, *_brute(all_live, live_vecs, q, 10))
    assert sorted(set(scanned)) == [400, 1500] and len(scanned) == 10 * 2  # the 100-row tail has none
    scanned.clear()
    small, small_live, small_vecs = _segmented(tmp_path / "small", keys[:900], vecs[:900], [0, 500, 900], every=11)
    for q in rng.normal(size=(5, DIM)).astype(np.float32):
        got_rows, got_sims = small.search(q, 10)
        _agree(small_live[got_rows], got_sims, *_brute(small_live, small_vecs, q, 10))
    assert scanned == []  # 900 rows: exact, though both segments carry companions
    assert len(list((tmp_path / "small").glob("*.i8"))) == 2


# -- sign bits: candidates for the int8 scan in very large indexes -------------------------


def test_sign_bits_count_the_differing_signs_of_any_width():
    rng = np.random.default_rng(1)
    for dim in (16, 64, 100, 256):
        vecs = rng.normal(size=(500, dim)).astype(np.float16)
        bits = scan.SignBits(scan.SignBits.encode(vecs))
        assert bits.words.shape == (scan.SignBits.width(dim), 500) and len(bits) == 500
        q = rng.normal(size=dim)
        got = bits.distances(scan.SignBits.encode_query(q))
        assert got.dtype == np.uint16
        np.testing.assert_array_equal(got, ((vecs > 0) != (q > 0)).sum(axis=1))


def test_nearest_by_bits_takes_the_smallest_with_ties_to_the_earlier_row_and_never_a_dead_one():
    dist = np.array([5, 3, 9, 3, 1, 3, 300, 0, 3], dtype=np.uint16)
    dead = 300
    np.testing.assert_array_equal(scan.nearest_by_bits(dist, 4, dead), [1, 3, 4, 7])  # 0, 1, then 3s
    np.testing.assert_array_equal(scan.nearest_by_bits(dist, 3, dead), [1, 4, 7])
    np.testing.assert_array_equal(scan.nearest_by_bits(dist, 8, dead), [0, 1, 2, 3, 4, 5, 7, 8])
    np.testing.assert_array_equal(scan.nearest_by_bits(dist, 50, dead), [0, 1, 2, 3, 4, 5, 7, 8])
    assert scan.nearest_by_bits(dist, 0, dead).size == 0


def _segmented(tmp_path: Path, keys, vecs, bounds, every: int):
    """``keys``/``vecs`` cut at ``bounds`` into segments (each sorted by key), saved and loaded,
    every ``every``-th of their keys tombstoned: (the SegmentedVectors, the live keys in row
    order, their vectors)."""
    from ranklens.core.vectors import SegmentedVectors

    parts, ids = [], []
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        order = np.argsort(keys[lo:hi])
        path = tmp_path / f"seg{i}.idx"
        index = VectorIndex(vecs.shape[1])
        index.add(keys[lo:hi][order], vecs[lo:hi][order])
        index.save(path)
        parts.append(VectorIndex.load(path))
        ids.append(keys[lo:hi][order])
    dead = set(np.concatenate(ids)[::every].tolist())
    rows, live_keys, start = [], [], 0
    for seg_keys in ids:
        live = np.array([k not in dead for k in seg_keys.tolist()])
        rows.append(np.where(live, np.cumsum(live) - 1 + start, -1))
        start += int(live.sum())
        live_keys.append(seg_keys[live])
    all_live = np.concatenate(live_keys)
    by_key = dict(zip(keys.tolist(), vecs))
    return SegmentedVectors(parts, rows, ids), all_live, np.array([by_key[k] for k in all_live.tolist()])


def _clustered(n: int, dim: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Vectors around 40 topics, plus a shared direction (as the bundled model's have): the
    sign bits must rank by topic, not by the direction everything shares."""
    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(40, dim))
    common = rng.normal(size=dim) * 1.5
    vecs = topics[rng.integers(0, 40, n)] + rng.normal(size=(n, dim)) * 0.9 + common
    keys = rng.choice(10_000_000, size=n, replace=False).astype(np.int64)
    return keys, vecs.astype(np.float32)


def _bits_on(monkeypatch, min_rows: int = 1000, candidates: int = 1500) -> list[int]:
    """Sign bits pick candidates among ``min_rows`` rows or more; the Hamming scans' sizes."""
    monkeypatch.setattr(scan.Int8Scan, "MIN_VECTORS", 200)
    monkeypatch.setattr(scan.Int8Scan, "MIN_SEGMENT", 200)
    monkeypatch.setattr(scan.SignBits, "MIN_ROWS", min_rows)
    monkeypatch.setattr(scan.SignBits, "CANDIDATES", candidates)
    scanned: list[int] = []
    real = scan.SignBits.distances
    monkeypatch.setattr(
        scan.SignBits, "distances", lambda self, q, out=None: scanned.append(len(self)) or real(self, q, out)
    )
    return scanned


def test_sign_bit_candidates_hold_the_exact_top_30(tmp_path: Path, monkeypatch):
    """On a set with a known answer (the brute-force top 30), the view that picks its candidates
    by sign bits (a quarter of the rows), then int8, then exactly, finds >= 99 % of it."""
    scanned = _bits_on(monkeypatch)
    keys, vecs = _clustered(6000, 128, seed=4)
    path = tmp_path / "v.idx"
    index = VectorIndex(128)
    index.add(keys, vecs)
    index.save(path)
    view = VectorIndex.load(path)
    rng = np.random.default_rng(8)
    recalls = []
    for i in rng.choice(len(keys), 40, replace=False):
        q = vecs[i] + rng.normal(size=128) * 0.8
        unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
        want = keys[np.argsort(-(unit @ q), kind="stable")[:30]]
        got, sims = view.search(q, 30)
        assert np.all(np.diff(sims) <= 0)
        recalls.append(len(set(got.tolist()) & set(want.tolist())) / 30)
    assert scanned == [6000] * 40  # the bits were scanned, every query
    assert np.mean(recalls) >= 0.99


def test_without_sign_bits_or_with_foreign_ones_the_int8_scan_picks_candidates(tmp_path: Path, monkeypatch):
    """An index written before the sign bits existed (no ``.b1``), or whose ``.b1`` is not its
    own (another index's, junk), answers as before: every row scanned in int8."""
    scanned = _bits_on(monkeypatch, min_rows=100)
    calls = _coarse_scan_count(monkeypatch)
    keys, vecs = _data(400)
    path = tmp_path / "v.idx"
    _index(keys, vecs).save(path)
    bits_file = next(tmp_path.glob("v.idx.*.b1"))
    q = vecs[3] + 0.2
    with_bits = VectorIndex.load(path).search(q, 10)
    assert scanned == [400] and calls == []
    want = _index(keys, vecs).search(q, 10)
    other = tmp_path / "w.idx"
    _index(keys[:300], vecs[:300]).save(other)
    os.replace(next(tmp_path.glob("w.idx.*.b1")), bits_file)  # 300 rows, not 400
    foreign = VectorIndex.load(path).search(q, 10)
    bits_file.write_bytes(b"junk")
    junk = VectorIndex.load(path).search(q, 10)
    bits_file.unlink()
    missing = VectorIndex.load(path).search(q, 10)
    assert scanned == [400] and calls == [scan.Int8Scan.MIN_POOL] * 3
    for got in (with_bits, foreign, junk, missing):
        np.testing.assert_array_equal(got[0], want[0])
    VectorIndex.load(path).save(path)  # the next save writes them again
    assert len(list(tmp_path.glob("v.idx.*.b1"))) == 1


def test_sign_bits_honour_filters_and_tombstones_across_segments(tmp_path: Path, monkeypatch):
    """With sign bits on, segments share one Hamming cut; a tombstoned row is never a candidate
    and a filter (a mask over the rows) returns only allowed rows, exactly ranked."""

    scanned = _bits_on(monkeypatch, min_rows=1000, candidates=2000)
    keys, vecs = _clustered(4000, 64, seed=6)
    bounds = [0, 1500, 3000, 3900, 4000]  # three with companions, one without (100 rows)
    segmented, all_live, live_vecs = _segmented(tmp_path, keys, vecs, bounds, every=5)
    rng = np.random.default_rng(2)
    recalls = []
    for i in rng.choice(len(all_live), 20, replace=False):
        q = live_vecs[i] + rng.normal(size=64) * 0.8
        got_rows, got_sims = segmented.search(q, 20)
        assert got_rows.min() >= 0 and np.all(np.diff(got_sims) <= 0)
        want = set(_brute(all_live, live_vecs, q, 20)[0].tolist())
        recalls.append(len(want & set(all_live[got_rows].tolist())) / 20)
    assert sorted(set(scanned)) == [900, 1500] and len(scanned) == 20 * 3  # one cut: every bits file once
    assert np.mean(recalls) >= 0.99
    allowed = np.zeros(len(all_live), dtype=bool)
    allowed[::3] = True
    for q in rng.normal(size=(5, 64)):
        got_rows, got_sims = segmented.search(q, 10, allowed)
        assert allowed[got_rows].all()
        want_keys, want_sims = _brute(all_live, live_vecs, q, 10, all_live[allowed])
        _agree(all_live[got_rows], got_sims, want_keys, want_sims)


def test_a_masked_search_of_one_big_view_picks_by_bits_among_the_allowed_rows_only(tmp_path: Path, monkeypatch):
    scanned = _bits_on(monkeypatch, min_rows=1000, candidates=800)
    keys, vecs = _clustered(10_000, 64, seed=3)
    index = VectorIndex(64)
    index.add(keys, vecs)
    index.save(tmp_path / "v.idx")
    view = VectorIndex.load(tmp_path / "v.idx")
    mask = np.zeros(10_000, dtype=bool)
    mask[::2] = True  # 5000 allowed: past _FEW_ROWS (scanned exactly) and MIN_ROWS
    q = vecs[10]
    rows, _ = view.search_rows(q, 30, mask)
    assert scanned == [10_000] and mask[rows].all() and rows[0] == 10
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    allowed_rows = np.flatnonzero(mask)
    want = allowed_rows[np.argsort(-(unit[allowed_rows] @ q), kind="stable")[:30]]
    assert len(set(rows.tolist()) & set(want.tolist())) >= 29


def test_sign_bits_need_no_numkong(tmp_path: Path):
    """The Hamming scan and the int8 re-score of its candidates are numpy's: a big index
    answers where numkong is missing or broken."""
    path = tmp_path / "v.idx"
    assert_python_prints_ok(
        "import sys, numpy as np\n"
        "sys.modules['numkong'] = None\n"
        "from ranklens.core.vectors import VectorIndex, scan\n"
        "scan.Int8Scan.MIN_VECTORS = 100; scan.Int8Scan.MIN_SEGMENT = 100; scan.SignBits.MIN_ROWS = 1000\n"
        "rng = np.random.default_rng(0)\n"
        "x = VectorIndex(64); x.add(np.arange(3000), rng.normal(size=(3000, 64)))\n"
        f"x.save(scan.Path({str(path)!r}))\n"
        "q = rng.normal(size=64)\n"
        f"view = VectorIndex.load(scan.Path({str(path)!r}))\n"
        "got, want = view.search(q, 10), x.search(q, 10)\n"
        "assert scan.numkong() is None and view._bits is not None\n"
        "assert len(set(got[0].tolist()) & set(want[0].tolist())) >= 9\n"
        "print('ok')\n"
    )


def test_a_search_among_given_rows_is_the_masked_search_bit_for_bit(tmp_path: Path, monkeypatch):
    """``among`` (the rows of a mask, ascending) gives the rows and similarities of the masked
    search exactly, with runs of rows converted once and kept: on segments whose rows are the
    caller's in order, with tombstones (a mask then), with all or none of a segment, with more
    rows than a few, and after the kept copies are dropped for their size or a modification."""
    monkeypatch.setattr(vectors_mod, "_RUNS32_MAX_BYTES", 64 * 40 * 4)
    monkeypatch.setattr(vectors_mod, "_FEW_ROWS", 300)
    keys, vecs = _clustered(2000, 64, seed=11)
    rng = np.random.default_rng(5)
    for every in (10**9, 7):  # no tombstone (each segment a range of rows), then some
        segmented, all_live, live_vecs = _segmented(tmp_path, keys, vecs, [0, 900, 1700, 2000], every)
        n = len(all_live)
        for trial in range(60):
            allowed = np.zeros(n, dtype=bool)
            for lo in rng.integers(0, n, rng.integers(1, 12)):  # runs of rows, as a file's chunks are
                allowed[lo : lo + rng.integers(1, 80)] = True
            if trial == 0:
                allowed[900:1700] = True  # a whole segment
            if trial == 1:
                allowed[:] = True
            rows = np.flatnonzero(allowed)
            q = live_vecs[rng.integers(0, n)] + rng.normal(size=64)
            for k in (len(rows), 5):
                want = segmented.search(q, k, allowed)
                for _again in range(2):  # converted, then kept
                    got = segmented.search(q, k, allowed, rows)
                    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    index = VectorIndex(DIM)
    keys, vecs = _data(300, seed=4)
    index.add(keys, vecs)
    rows = np.arange(10, 60)
    mask = np.zeros(300, dtype=bool)
    mask[rows] = True
    q = vecs[3]
    assert all(
        np.array_equal(a, b) for a, b in zip(index.search_rows(q, 50, among=rows), index.search_rows(q, 50, mask))
    )
    index.add(keys[10:11], -vecs[10:11])  # the kept copy of rows 10-59 is stale now
    want = index.search_rows(q, 50, mask)
    assert all(np.array_equal(a, b) for a, b in zip(index.search_rows(q, 50, among=rows), want))
