"""The terminal UI over a shared Milvus store: a real Milvus Lite server process, stopped mid-session."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pilot_helpers import column, ready, run_query, wait_for

pytest.importorskip("pymilvus", reason="pymilvus is not installed (pip install 'ranklens[milvus]')")

from ranklens.core.service import open_engine
from ranklens.tui.app import RanklensApp

SIZE = (140, 36)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lite_server(tmp_path: Path):
    """``milvus-lite server`` on a free port (the way a team shares a Milvus Lite store)."""
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "milvus_lite",
            "server",
            "--data-dir",
            str(tmp_path / "srv"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    yield proc, f"http://127.0.0.1:{port}"
    proc.kill()
    proc.wait()


async def test_the_status_line_shows_the_store_and_the_last_answer_stays_when_it_goes_down(lite_server, sample_repo):
    proc, uri = lite_server
    out = subprocess.run(
        [sys.executable, "-m", "ranklens", "index", str(sample_repo), "--store", uri],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    engine = open_engine(sample_repo, store=uri)
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        assert f"store {uri}: repo" in app.status.note
        await run_query(pilot, app, "password hash")
        shown = column(app, "location")
        assert shown[0].startswith("repo:app/auth.py:")  # the location names the repository
        assert set(app.arms) == {"bm25", "fts5", "dense", "symbols"}
        proc.kill()
        proc.wait()
        app.query_input.focus()
        app.query_input.value = "rate limit requests"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.query_text == "rate limit requests" and app.query_complete, timeout=120)
        await pilot.pause()
        assert not any(r.ok for r in app.results.values())
        assert column(app, "location") == shown  # the last answer stays on screen
        assert f"store {uri}: cannot reach Milvus" in app.status.note
    engine.close()
