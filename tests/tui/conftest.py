"""Fixtures for the app tests: a real engine over the sample repository."""

from __future__ import annotations

from pathlib import Path

import pytest
import textual.constants

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


#: The colours the app draws with in every test, whatever terminal runs them. Textual's "auto"
#: reads TERM and COLORTERM: under tmux or an xterm-256color terminal Rich's syntax gutter took
#: other styles and the snapshots (recorded with 16 colours) failed there.
COLOR_SYSTEM = "standard"


@pytest.fixture(autouse=True)
def _one_terminal(monkeypatch):
    """Draw as in the terminal the snapshots were recorded in (App reads both at start)."""
    monkeypatch.setattr(textual.constants, "COLOR_SYSTEM", COLOR_SYSTEM)
    monkeypatch.delenv("NO_COLOR", raising=False)
