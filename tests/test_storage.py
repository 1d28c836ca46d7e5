"""How the index is stored on disk: the chunks' text compressed, identical files stored once."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import given, strategies as st

from ranklens.core.arms.dense import VECTORS_FILE
from ranklens.core.arms.protocol import IndexSettings
from ranklens.core.base._sqlite import sqlite3
from ranklens.core.base.atomic import link_identical, publish_folder
from ranklens.core.chunking import DEFAULT_OVERLAP, DEFAULT_WINDOW, chunk_file
from ranklens.core.engine import Engine
from ranklens.core.storage.store import pack_text, unpack_text
from ranklens.core.text.languages import language_for
from ranklens.core.vectors import VectorIndex

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@given(st.text())
def test_packed_text_round_trips(text):
    assert unpack_text(pack_text(text)) == text


def test_packed_text_is_smaller_for_source_code():
    text = "".join(f"static int probe_{i}(struct device *dev)\n{{\n\treturn 0;\n}}\n\n" for i in range(50))
    assert len(pack_text(text)) < 0.5 * len(text.encode())


def test_the_chunks_table_stores_each_chunks_text_compressed(sample_repo):
    engine = Engine(sample_repo)
    engine.ensure_index()
    conn = sqlite3.connect(engine.directory / "index.sqlite")
    try:
        rows = conn.execute("SELECT path, start_line, end_line, typeof(text), text FROM chunks").fetchall()
    finally:
        conn.close()
        engine.close()
    assert rows and {kind for *_, kind, _blob in rows} == {"blob"}
    stored = {(path, start, end): unpack_text(blob) for path, start, end, _kind, blob in rows}
    # The text a chunk of each file had when it was cut, exactly.
    for path in {path for path, _start, _end in stored}:
        text = (sample_repo / path).read_text()
        for chunk in chunk_file(
            path, text, window=DEFAULT_WINDOW, overlap=DEFAULT_OVERLAP, language=language_for(path)
        ):
            assert stored[(chunk.path, chunk.start_line, chunk.end_line)] == chunk.text


def _vectors(engine: Engine) -> dict[int, np.ndarray]:
    out = {}
    for folder in engine.view.segment_dirs:
        index = VectorIndex.load(folder / VECTORS_FILE, view=False)
        out.update(zip(index.keys().tolist(), index.vectors()))
    return out


def test_a_new_model_embeds_the_stored_text_again(sample_repo, tmp_path):
    # Vectors of another model (here: none) are rebuilt from the chunks table's text.
    first = Engine(sample_repo, IndexSettings(model=str(sample_repo / "no-such-model")), cache_dir=tmp_path / "a")
    assert first.ensure_index().dense
    first.close()
    again = Engine(sample_repo, cache_dir=tmp_path / "a")
    again.ensure_index()
    fresh = Engine(sample_repo, cache_dir=tmp_path / "b")
    fresh.ensure_index()
    try:
        rebuilt, built = _vectors(again), _vectors(fresh)
        assert rebuilt and rebuilt.keys() == built.keys()
        for key, vector in built.items():
            assert np.array_equal(rebuilt[key], vector), key
    finally:
        again.close()
        fresh.close()


def test_identical_files_of_a_published_folder_are_stored_once(tmp_path):
    tmp, final = tmp_path / "seg.tmp", tmp_path / "seg"
    tmp.mkdir()
    files = {
        "a.npy": b"x" * 5000,
        "b.npy": b"x" * 5000,  # a's bytes
        "c.npy": b"x" * 4999 + b"y",  # a's size, other bytes
        "d.npy": b"x" * 10,
        "e.json": b"{}",
        "f.json": b"{}",
        "g.json": b"{}",  # three alike
    }
    for name, data in files.items():
        (tmp / name).write_bytes(data)
    publish_folder(tmp, final)
    assert sorted(p.name for p in final.iterdir()) == sorted(files)  # no temporary name left
    for name, data in files.items():
        assert (final / name).read_bytes() == data
    inode = {name: (final / name).stat().st_ino for name in files}
    assert inode["a.npy"] == inode["b.npy"] and (final / "a.npy").stat().st_nlink == 2
    assert inode["e.json"] == inode["f.json"] == inode["g.json"]
    assert len({inode["a.npy"], inode["c.npy"], inode["d.npy"], inode["e.json"]}) == 4


def test_link_identical_says_what_it_saved(tmp_path):
    (tmp_path / "a").write_bytes(b"1" * 100)
    (tmp_path / "b").write_bytes(b"1" * 100)
    (tmp_path / "c").write_bytes(b"2" * 100)
    assert link_identical(tmp_path) == 100
    assert link_identical(tmp_path) == 0  # linked already


C_FILE = """#include <linux/kernel.h>
/* probe device {i} */
static int probe_dev_{i}(struct device *dev)
{{
\tint ret = register_thing(dev, {i});
\tif (ret)
\t\treturn ret;
\treturn 0;
}}
"""


def test_an_index_stores_the_same_matrices_of_two_arms_once(tmp_path):
    # In C the breadcrumb adds no token the bm25 documents lack: lexical+ctx's files are
    # bm25's, byte for byte, and each segment (and generation) stores them once.
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    for i in range(4):
        (root / "src" / f"dev{i}.c").write_text(C_FILE.format(i=i))
    engine = Engine(root, cache_dir=tmp_path / "cache")
    engine.ensure_index()
    (root / "src" / "dev0.c").write_text(C_FILE.format(i=9))  # an update: a new segment
    engine.ensure_index()
    try:
        folders = [*engine.view.segment_dirs, engine.view.gen_dir]
        assert len(folders) == 3
        for folder in folders:
            for bm25 in folder.glob("bm25.*"):
                ctx = folder / bm25.name.replace("bm25.", "lexical+ctx.", 1)
                assert ctx.read_bytes() == bm25.read_bytes()
                assert ctx.stat().st_ino == bm25.stat().st_ino, ctx
        assert engine.run_arm("lexical+ctx", "probe_dev_9").hits[0].path == "src/dev0.c"
        assert not engine.run_arm("fts5", "probe_dev_0").hits
    finally:
        engine.close()


def test_bench_scale_du_counts_a_hard_linked_file_once(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_scale", BENCHMARKS / "bench_scale.py")
    bench_scale = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, bench_scale)
    spec.loader.exec_module(bench_scale)
    (tmp_path / "sub").mkdir()
    (tmp_path / "a").write_bytes(os.urandom(64 * 1024))
    os.link(tmp_path / "a", tmp_path / "sub" / "b")
    (tmp_path / "c").write_bytes(os.urandom(8 * 1024))
    one = (tmp_path / "a").stat().st_blocks * 512 + (tmp_path / "c").stat().st_blocks * 512
    assert bench_scale.du(tmp_path) == one
    du = subprocess.run(["du", "-s", "-B1", str(tmp_path)], capture_output=True, text=True)
    if du.returncode == 0:  # as du counts it (du adds the folders' own blocks)
        folders = sum(p.stat().st_blocks * 512 for p in (tmp_path, tmp_path / "sub"))
        assert int(du.stdout.split()[0]) == one + folders
