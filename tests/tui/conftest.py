"""Fixtures for the app tests: a real engine over the sample repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from ranklens.core.engine import Engine
from ranklens.tui.threads import join_all


@pytest.fixture
def engine(sample_repo: Path):
    """A real engine over the sample repository, already indexed (a warm start)."""
    eng = Engine(sample_repo)
    eng.ensure_index()
    yield eng
    eng.close()


@pytest.fixture(autouse=True)
def _worker_threads_end():
    """The app's worker threads are daemons that quitting does not wait for (tui.threads):
    let each test's end before the next test starts, as the stock executor did at loop close."""
    yield
    join_all(60)
