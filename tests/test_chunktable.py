"""The chunk table: columns saved a file each and memory-mapped, and a view's rows across
segments with tombstones, answering as one joined table would."""

from __future__ import annotations

import numpy as np
import pytest

from ranklens.core.storage import chunktable
from ranklens.core.storage.chunktable import ChunkRows, ChunkTable
from ranklens.core.storage.columns import Coded, Packed
from ranklens.core.text.names import defined_names


def table(first_id: int, rows: list[tuple[str, str, str]]) -> ChunkTable:
    """(path, context, symbol) rows, ids from ``first_id``, lines 1-2, 3-4, …"""
    n = len(rows)
    return ChunkTable(
        np.arange(first_id, first_id + n),
        [r[0] for r in rows],
        np.arange(n) * 2 + 1,
        np.arange(n) * 2 + 2,
        [r[1] for r in rows],
        ["python" if r[0].endswith(".py") else "c" for r in rows],
        ["definition"] * n,
        None,
        [r[2] for r in rows],
    )


ROWS_A = [
    ("app/router.py", "app/router.py > Router", "Router Router.add"),
    ("app/router.py", "app/router.py > Router", "Router.match"),
    ("lib/util.c", "lib/util.c > kmalloc_node", "kmalloc_node"),
    ("lib/ünï.py", "lib/ünï.py > Ünï", "Ünï"),
]
ROWS_B = [
    ("src/mod.rs", "src/mod.rs > Engine", "Rails::Engine"),
    ("src/mod.rs", "src/mod.rs > route", "route"),
    ("lib/util.c", "lib/util.c > kmalloc", "kmalloc"),
]


def test_columns_index_like_lists():
    coded = Coded.of(["a", "b", "a"])
    packed = Packed.of(["x y", "", "zé"])
    assert list(coded) == ["a", "b", "a"] and coded[2] == "a" and len(coded.values) == 2
    assert list(packed) == ["x y", "", "zé"] and packed[2] == "zé" and len(packed) == 3
    assert Packed.concat([packed, Packed.of(["w"])]).take(np.array([3, 0])) == ["w", "x y"]
    assert list(packed.kept(np.array([True, False, True]))) == ["x y", "zé"]
    assert list(Coded.concat([coded, Coded.of(["b"])])) == ["a", "b", "a", "b"]


def test_a_saved_table_loads_memory_mapped_with_the_same_rows(tmp_path, monkeypatch):
    t = table(10, ROWS_A)
    t.save(tmp_path)
    monkeypatch.setattr(chunktable, "_recent_tables", chunktable.Recent(4))  # as a fresh process
    loaded = ChunkTable.load_dir(tmp_path)
    assert not loaded.ids.flags.owndata and not loaded.symbols.buf.flags.owndata  # mapped, not read
    for name in ("paths", "contexts", "symbols", "languages", "kinds"):
        assert list(getattr(loaded, name)) == list(getattr(t, name))
    assert loaded.ids.tolist() == list(range(10, 14)) and loaded.starts.tolist() == [1, 3, 5, 7]


def test_a_table_with_rows_dropped_saves_only_the_kept_rows(tmp_path, monkeypatch):
    kept = ChunkTable.concat([table(0, ROWS_A), table(4, ROWS_B)]).kept(np.array([1, 0, 1, 0, 1, 1, 0], dtype=bool))
    kept.save(tmp_path)
    monkeypatch.setattr(chunktable, "_recent_tables", chunktable.Recent(4))
    loaded = ChunkTable.load_dir(tmp_path)
    assert list(loaded.symbols) == ["Router Router.add", "kmalloc_node", "Rails::Engine", "route"]
    assert list(loaded.paths) == ["app/router.py", "lib/util.c", "src/mod.rs", "src/mod.rs"]
    assert len(loaded.paths.values) == 3  # one code a path again


@pytest.mark.parametrize("any_case", [False, True])
def test_definers_are_the_rows_whose_names_define_it_exactly(any_case):
    t = ChunkTable.concat([table(0, ROWS_A), table(4, ROWS_B)])
    names = ["Router", "router", "add", "match", "kmalloc", "kmalloc_node", "node", "Engine", "Rails::Engine", "ünï"]
    for name in names:
        want = [
            r
            for r in range(len(t))
            if (name.lower() if any_case else name)
            in ({f.lower() for f in defined_names((t.symbols[r],))} if any_case else defined_names((t.symbols[r],)))
        ]
        assert t.definers(name, any_case=any_case) == want, name
    assert t.definers("kmalloc") == [6]  # not kmalloc_node
    assert t.definers("ünï", any_case=True) == [3]


def test_rows_across_segments_skip_tombstones_and_answer_as_one_table():
    a, b = table(0, ROWS_A), table(4, ROWS_B)
    rows = ChunkRows([a, b], [np.array([1]), np.array([], dtype=np.int64)])  # id 1 tombstoned
    joined = ChunkTable.concat([a, b]).kept(np.array([1, 0, 1, 1, 1, 1, 1], dtype=bool))
    assert len(rows) == 6 and rows.ids().tolist() == joined.ids.tolist()
    assert rows.paths == list(joined.paths) and rows.starts.tolist() == joined.starts.tolist()
    assert rows.rows_for(np.array([5, 1, 0, 99, 3])).tolist() == [4, -1, 0, -1, 2]
    assert rows.segment_rows(0).tolist() == [0, -1, 1, 2] and rows.segment_rows(1).tolist() == [3, 4, 5]
    hits = rows.hits("bm25", [4, 0], [2.0, 1.0])
    assert [(h.path, h.start_line, h.rank, h.symbol) for h in hits] == [
        ("src/mod.rs", 3, 1, "route"),
        ("app/router.py", 1, 2, "Router Router.add"),
    ]
    assert rows.definers("match") == []  # its chunk is tombstoned
    assert rows.definers("Engine") == [3] and rows.definers("kmalloc_node") == [1]
    assert rows.mask("lib/*").tolist() == [False, True, True, False, False, True]
    assert rows.mask(language="PYTHON").tolist() == [True, False, True, False, False, False]
    assert rows.mask() is None
    assert rows.ids(rows.mask("src/*")).tolist() == [4, 5]
    assert rows.distinct_paths() == {"app/router.py", "lib/util.c", "lib/ünï.py", "src/mod.rs"}
    with pytest.raises(IndexError):
        rows.hits("bm25", [6], [1.0])
