"""The child-process map the indexer chunks large updates with."""

import math

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
