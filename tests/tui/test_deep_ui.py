"""The deep arm in the app: built in the background after the index commits, its ranking
joins the table when its vectors are ready; the other arms never wait for it."""

from __future__ import annotations

import threading
import time

from pilot_helpers import column, settled, wait_for

from ranklens.core.arms import DEFAULT_ARMS
from ranklens.core.engine import Engine
from ranklens.tui.app import RanklensApp

SIZE = (120, 36)


async def test_deep_joins_the_table_when_its_vectors_are_ready(fake_deep, sample_repo) -> None:
    fake_deep.gate = threading.Event()  # the model is "slow" until the test says otherwise
    engine = Engine(sample_repo)
    app = RanklensApp(engine)
    assert app.arms == [*DEFAULT_ARMS, "deep"]
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.index_ready and app.deep_building)
            app.query_input.value = "password hash"
            await pilot.press("enter")
            # The fast arms answer and fill the table while deep is still embedding.
            await wait_for(pilot, lambda: app.query_complete)
            await settled(pilot, app)
            assert all(app.results[a].ok for a in DEFAULT_ARMS)
            assert not app.results["deep"].ok
            assert column(app, "location")[0] == "app/auth.py:1-25"
            assert column(app, "agree")[0] == "4/4"
            state = app.status.states["deep"]
            assert state.state == "running" and state.detail.startswith("indexing"), state
            # Vectors done: deep runs again on its own, and its ranking joins the table.
            fake_deep.gate.set()
            await wait_for(pilot, lambda: app.results["deep"].ok)
            await settled(pilot, app)
            assert app.status.states["deep"].state == "done"
            assert column(app, "agree")[0] == "5/5"
            assert "deep" in app.table.hits[0].provenance
    finally:
        fake_deep.gate.set()
        engine.close()


async def test_quitting_stops_a_deep_build(fake_deep, sample_repo) -> None:
    fake_deep.gate = threading.Event()
    engine = Engine(sample_repo)
    returned = threading.Event()
    build_deep = engine.build_deep

    def build_deep_then_say_so(*args, **kwargs):
        try:
            return build_deep(*args, **kwargs)
        finally:
            returned.set()

    engine.build_deep = build_deep_then_say_so
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        # In flight: the worker's thread is inside the model (a worker quit before its thread
        # starts is cancelled and never builds, which would leave nothing to stop).
        await wait_for(pilot, lambda: app.deep_building and fake_deep.started.is_set())
        worker = app._deep_worker
    assert app.session.deep_stop.is_set()
    fake_deep.gate.set()  # the batch in flight ends; the build sees the stop flag
    assert returned.wait(30)  # unstopped, it would return only after embedding all ~20 texts
    # The worker's state turns finished just after the build returns (on its own thread).
    deadline = time.monotonic() + 30
    while not worker.is_finished and time.monotonic() < deadline:
        time.sleep(0.01)
    assert worker.is_finished
    assert len(fake_deep.seen) < 20 and not engine.view.sidecar_dir("deep").exists()
    engine.close()
