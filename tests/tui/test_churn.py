"""The app while a file is saved every few hundred milliseconds (issue #19): its index worker
refreshes after each save, as after an edit in ``$EDITOR``, while queries run."""

from __future__ import annotations

from churn import CHURN_PATH, CHURN_QUERY, Churn, churn_span, consistent_spans, save
from pilot_helpers import ready, run_query, settled, wait_for

from ranklens.core.engine import Engine
from ranklens.tui.app import RanklensApp

SIZE = (120, 36)


def churn_spans(app: RanklensApp) -> dict[str, list[tuple[int, int]]]:
    """Each answered arm's spans on the churned file."""
    return {arm: [(h.start_line, h.end_line) for h in r.hits if h.path == CHURN_PATH] for arm, r in app.results.items()}


async def test_queries_answer_while_a_file_is_saved_every_300_ms(sample_repo) -> None:
    save(sample_repo, 0)
    engine = Engine(sample_repo)
    engine.ensure_index()
    app = RanklensApp(engine)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot, app)
            first = app.session.generation()
            queries = [CHURN_QUERY, "churned definition", "password hash", CHURN_QUERY + " value"]
            answered = 0

            def refresh(_version: int) -> None:
                app.call_from_thread(app._start_index)  # what returning from the editor does

            with Churn(sample_repo, every=0.3, limit=30, after_save=refresh) as churn:
                # At least four queries, and on until five saves landed (or the saver stopped at
                # its limit): counted in answers and saves, not seconds, so a loaded machine only
                # makes it slower. run_query waits 20 s at most for every arm: a frozen app fails there.
                while answered < len(queries) or (churn.saved < 5 and churn.running):
                    await run_query(pilot, app, queries[answered % len(queries)])
                    answered += 1
                    assert all(r.error is None for r in app.results.values()), app.results
                    for arm, spans in churn_spans(app).items():  # each arm answers from one generation
                        assert not spans or consistent_spans(spans, churn.saved) is not None, (arm, spans)
            assert churn.errors == [] and churn.saved >= 5 and answered >= len(queries)

            # Once the saves stop, the app settles on the last version: every arm agrees on it.
            # The pass a late save asked for starts only once the running one's state change is
            # handled (IndexOrchestration._index_again): wait for both, not the first alone.
            def idle() -> bool:
                return not app._index_again and (app._index_worker is None or app._index_worker.is_finished)

            await wait_for(pilot, idle, 60)
            await app.workers.wait_for_complete()
            await wait_for(pilot, idle, 60)
            await run_query(pilot, app, CHURN_QUERY + " last")
            await settled(pilot, app)
            last = churn_span(churn.saved)
            assert all(set(spans) <= {last} for spans in churn_spans(app).values()), (last, churn_spans(app))
            assert [(h.start_line, h.end_line) for h in app.table.hits if h.path == CHURN_PATH] == [last]
            assert app.session.generation() > first  # it did index the saves meanwhile
    finally:
        engine.close()
