"""The child-process map the indexer chunks large updates with."""

import math
import os
import time
from pathlib import Path

import pytest

from ranklens.core.index.workers import WorkerError, ordered_map


@pytest.mark.parametrize("processes", [1, 3])
def test_results_come_back_in_order_and_inputs_are_let_go(processes):
    jobs = [(n,) for n in range(12)]
    assert list(ordered_map(math.factorial, jobs, processes)) == [math.factorial(n) for n in range(12)]
    assert jobs == [None] * 12


def test_an_error_in_the_child_is_raised_with_its_traceback():
    results = ordered_map(math.factorial, [(3,), (-1,), (4,)])
    assert next(results) == 6
    with pytest.raises(WorkerError, match="ValueError"):
        next(results)


def test_closing_early_stops_the_child():
    results = ordered_map(math.factorial, [(n,) for n in range(1000)])
    assert next(results) == 1
    results.close()  # must not hang on the jobs still queued


def _timed(folder: str, n: int, wait_for: int | None) -> bytes:
    """Job ``n``: note that it started; with ``wait_for``, hold until job ``wait_for`` has
    started (60 s at most); answer more than a pipe holds, its first byte whether it saw it."""
    Path(folder, f"{n}.start").touch()
    seen = wait_for is None
    deadline = time.monotonic() + 60
    while not seen and time.monotonic() < deadline:
        seen = Path(folder, f"{wait_for}.start").exists()
        time.sleep(0.01)
    return bytes([seen]) + bytes((1 << 20) - 1)


def test_a_slow_job_holds_up_only_its_own_child(tmp_path, monkeypatch):
    """Child 0 holds job 0 until job 5 has started, while child 1 takes jobs 1, 3 and 5: their
    results (each more than a pipe holds) are read ahead, so child 1 goes on instead of waiting
    to be read. Without the read-ahead job 5 never starts while job 0 holds (checked against
    1e112d2's workers). Nothing here is timed: a loaded machine only makes it slower."""
    here = str(Path(__file__).parent)  # the children import this module to find _timed
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])))
    jobs = [(str(tmp_path), 0, 5)] + [(str(tmp_path), n, None) for n in range(1, 6)]
    results = ordered_map(_timed, jobs, 2)
    first = next(results)
    assert first[0] == 1, "child 1 stood still until job 0's result was taken"
    assert len(first) == 1 << 20 and len(list(results)) == 5


def test_a_chunk_crosses_a_pipe_whole():
    """Chunks pickle as their fields in order (the indexer's workers send a million): every
    field, the defaults and ``piece_of`` included, comes back."""
    import pickle
    from dataclasses import fields

    from ranklens.core.base.types import Chunk

    full = Chunk("a.py", 3, 9, "def f():\n    pass", "python", "a.py > f", "piece", "f", "def f()", "Doc.", (1, 20))
    for chunk in (full, Chunk("b.md", 1, 2, "text", "markdown", "b.md")):
        back = pickle.loads(pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL))
        assert all(getattr(back, f.name) == getattr(chunk, f.name) for f in fields(Chunk)) and back == chunk


def test_a_folder_holding_another_ranklens_lends_the_children_nothing(tmp_path, monkeypatch):
    """Started from a folder with another ranklens in it (a checkout of another version), the
    children import the parent's, not that one (issue 43: the UI run from such a folder failed
    every build with a TypeError from the other version's Chunk)."""
    (tmp_path / "ranklens").mkdir()
    (tmp_path / "ranklens" / "__init__.py").write_text("raise ImportError('the other ranklens')\n")
    monkeypatch.chdir(tmp_path)
    assert list(ordered_map(math.factorial, [(n,) for n in range(4)], 2)) == [1, 1, 2, 6]
    from ranklens.core.base.types import Chunk

    (chunk,) = ordered_map(Chunk, [("a.py", 1, 2, "x", "python", "a.py")], 1)
    assert chunk.path == "a.py"
