"""``a``: a hit's runners-up in its file expand under it, the preview steps through them, and
``a`` folds them again (the JSON and MCP side: tests/test_alternatives.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pilot_helpers import column, ready, record_notifications, run_query, settled

from ranklens.core.engine import Engine
from ranklens.tui.app import RanklensApp
from ranklens.tui.widgets.results_table import RUNNER_UP_MARK

SIZE = (120, 36)
QUERY = "how long does a failed job wait before it is tried again"

#: Filler functions on topics the question never names (their parameter is not ``job``
#: either): more chunks than the arms' candidates cover, so tasks.py has more units than
#: places in the list, and runners-up.
TOPICS = [
    "colour",
    "font",
    "margin",
    "invoice",
    "weather",
    "garden",
    "recipe",
    "ticket",
    "planet",
    "violin",
    "harbour",
    "glacier",
]


def _function(name: str, doc: str, body: str, arg: str = "item") -> str:
    pad = [f"    {name}_{i} = {i} * 7" for i in range(15)]
    return "\n".join([f"def {name}({arg}):", f'    """{doc}"""', f"    {body}", *pad, f"    return {arg}", "", ""])


def write_repo(root: Path) -> None:
    root.mkdir(exist_ok=True)
    functions = [
        _function(
            "retry_delay", "Seconds a failed job sleeps before its next attempt.", "pause = 2 ** job.tries", "job"
        ),
        _function("retry_limit", "How many attempts a failed job gets.", "tries = job.max_tries", "job"),
        *[
            _function(f"{w}_task_{n}", f"Handle the {w} of an item.", f"{w} = item.{w}")
            for n in range(6)
            for w in TOPICS
        ],
    ]
    (root / "tasks.py").write_text("\n".join(functions))
    (root / "README.md").write_text("# Tasks\n\nJobs and the tasks they run.\n")


@pytest.fixture
def tasks_engine(tmp_path):
    write_repo(tmp_path / "repo")
    engine = Engine(tmp_path / "repo")
    engine.ensure_index(deep=False)
    yield engine
    engine.close()


def locations(app: RanklensApp) -> list[str]:
    return column(app, "location")


async def test_a_expands_the_runners_up_under_the_hit_and_the_preview_steps_through_them(tasks_engine) -> None:
    app = RanklensApp(tasks_engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, QUERY)
        table = app.table
        assert app.focused is table
        hits = list(table.hits)
        carrier = next(i for i, h in enumerate(hits) if h.alternatives)
        hit = hits[carrier]
        alternatives = hit.alternatives
        assert table.row_count == len(hits)
        table.move_cursor(row=carrier)
        await settled(pilot, app)

        await pilot.press("a")
        await settled(pilot, app)
        # One row per runner-up, right under the hit; the hits' rows and order unchanged.
        assert table.row_count == len(hits) + len(alternatives)
        assert table.hits == hits and table.current_hit is hit
        shown = locations(app)
        under = shown[carrier + 1 : carrier + 1 + len(alternatives)]
        name = hit.path.rsplit("/", 1)[-1]
        assert under == [f"{RUNNER_UP_MARK}{name}:{a.start_line}-{a.end_line}" for a in alternatives]
        assert [c.strip() for c in column(app, "score")[carrier + 1 : carrier + 1 + len(alternatives)]] == [""] * len(
            alternatives
        )

        # The preview follows the cursor onto each runner-up: its lines, and why it ranks there.
        for place, alternative in enumerate(alternatives):
            await pilot.press("down")
            await settled(pilot, app)
            current = table.current_hit
            assert (current.path, current.start_line, current.end_line) == (
                hit.path,
                alternative.start_line,
                alternative.end_line,
            )
            assert table.current_runner_up == (hit, place)
            header = str(app.query_one("#preview-header").render())
            assert f"{hit.path}:{alternative.start_line}-{alternative.end_line}" in header
            trace = app.preview.trace.plain
            assert f"runner-up {place + 1} of {len(alternatives)}" in trace
            assert f"under hit #{hit.rank}" in trace and alternative.why in trace

        # From a runner-up, a folds them and the cursor goes back to the hit.
        await pilot.press("a")
        await settled(pilot, app)
        assert table.row_count == len(hits) and table.current_hit is hit
        assert not any(cell.startswith(RUNNER_UP_MARK) for cell in locations(app))


async def test_a_on_a_hit_without_runners_up_says_why(tasks_engine) -> None:
    app = RanklensApp(tasks_engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, QUERY)
        table = app.table
        bare = next(i for i, h in enumerate(table.hits) if not h.alternatives)
        table.move_cursor(row=bare)
        await settled(pilot, app)
        shown = record_notifications(app)
        await pilot.press("a")
        await pilot.pause()
        assert table.row_count == len(table.hits)
        assert shown and "runners-up" in shown[-1].lower()


async def test_runners_up_stay_open_across_a_re_fuse_and_space_selects_hits_only(tasks_engine) -> None:
    app = RanklensApp(tasks_engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, QUERY)
        table = app.table
        carrier = next(i for i, h in enumerate(table.hits) if h.alternatives)
        table.move_cursor(row=carrier)
        await pilot.press("a", "down")
        await settled(pilot, app)
        runner_up = table.current_hit
        shown = record_notifications(app)
        await pilot.press("space")
        await pilot.pause()
        assert not table.selected_hits and shown and "o" in shown[-1]
        # A re-fuse (as a slider move or an arm landing makes) keeps the hit open and the
        # cursor on the runner-up.
        app.refuse(cursor="keep")
        await settled(pilot, app)
        current = table.current_hit
        assert (current.start_line, current.end_line) == (runner_up.start_line, runner_up.end_line)
        assert table.current_runner_up is not None
