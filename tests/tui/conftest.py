"""Fixtures for the app tests: a real engine over the sample repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from ranklens.core.engine import Engine


@pytest.fixture
def engine(sample_repo: Path):
    """A real engine over the sample repository, already indexed (a warm start)."""
    eng = Engine(sample_repo)
    eng.ensure_index()
    yield eng
    eng.close()
