"""The app when its index is deleted from under it: a clear message, a rebuild, the query again."""

from __future__ import annotations

import shutil

from pilot_helpers import column, ready, record_notifications, run_query, wait_for

from ranklens.tui.app import RanklensApp

SIZE = (120, 36)


async def test_the_index_folder_deleted_under_the_app_is_rebuilt_and_the_query_runs_again(engine) -> None:
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        shown = record_notifications(app)
        await run_query(pilot, app, "password hash")
        assert column(app, "location")[0] == "app/auth.py:1-25"
        shutil.rmtree(engine.directory)
        app.query_input.focus()
        app.query_input.value = "rate limit requests"
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("index folder was deleted" in n for n in shown))
        # Rebuilt, and the query ran again on the new index.
        await wait_for(pilot, lambda: engine.ready and app.query_complete and app.table.row_count > 0, timeout=60)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert (engine.directory / "index.sqlite").exists()
        assert app.query_text == "rate limit requests" and all(r.ok for r in app.results.values())
        assert "server/main.go" in column(app, "location")[0]
