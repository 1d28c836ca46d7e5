"""How the index is stored on disk: the chunks' text compressed, identical files stored once."""

from __future__ import annotations

import numpy as np
from hypothesis import given, strategies as st

from ranklens.core._sqlite import sqlite3
from ranklens.core.arms.dense import VECTORS_FILE
from ranklens.core.chunking import DEFAULT_OVERLAP, DEFAULT_WINDOW, chunk_file
from ranklens.core.engine import Engine
from ranklens.core.indexer import IndexSettings
from ranklens.core.languages import language_for
from ranklens.core.store import pack_text, unpack_text
from ranklens.core.vectors import VectorIndex


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
