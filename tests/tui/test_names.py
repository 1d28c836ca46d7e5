"""One name and one number for each thing: the ``p`` toggle is the "ranking stage" in the
footer, the status line, the help, the README and the docs; the help's calibration figures
are the measured ones (core/calibration.json); ``agree`` counts the capitals of ``via``."""

from __future__ import annotations

from pathlib import Path

from pilot_helpers import column, ready, run_query, settled
from textual.widgets._footer import FooterKey

from ranklens.core.query import calibration
from ranklens.core.query.labels import AGREEMENT_DEPTH, voters
from ranklens.tui.app import HELP_KEYS, RanklensApp
from ranklens.tui.screens.help import HelpScreen
from ranklens.tui.widgets.results_table import arm_letters

SIZE = (120, 36)
REPO = Path(__file__).resolve().parents[2]


def plain(renderable) -> str:
    from rich.console import Console

    console = Console(width=100, color_system=None, record=True)
    console.print(renderable)
    return console.export_text()


async def test_the_p_toggle_is_the_ranking_stage_in_the_footer_status_line_and_help(engine) -> None:
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "password hash")
        app.table.focus()
        await pilot.pause()
        footer = {key.key: key.description for key in app.query(FooterKey)}
        assert footer["p"] == "Ranking stage"
        assert "Priors" not in footer.values()
        await pilot.press("p")
        await settled(pilot, app)
        assert "ranking stage off" in app.status.note and "priors off" not in app.status.note
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        source = app.screen.markdown
        assert "## Ranking stage" in source and "*ranking stage off*" in source
        assert "## Priors" not in source
    assert dict(HELP_KEYS)["p"].startswith("ranking stage on / off")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    tui_doc = (REPO / "docs" / "tui.md").read_text(encoding="utf-8")
    assert "| p | ranking stage on / off" in readme
    assert "| p | outside the query | ranking stage on / off" in tui_doc


async def test_the_help_reads_the_measured_calibration(engine) -> None:
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        right = calibration.relevant_percents()
        source = app.screen.markdown
        assert calibration.sentence() in source
        assert f"{right['high']} % of high hits" in source


async def test_agree_counts_the_capitals_of_via_and_the_trace_names_the_voters(engine) -> None:
    app = RanklensApp(engine)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_query(pilot, app, "password hash")
        letters = arm_letters(app.arms)
        via, agree = column(app, "via"), column(app, "agree")
        assert len(via) == len(app.table.hits) > 3
        deeper = 0
        for hit, v, a in zip(app.table.hits, via, agree, strict=True):
            votes = voters(hit)
            assert int(a.split("/")[0]) == hit.agreement == len(votes)
            assert "".join(letters[arm] for arm in app.arms if arm in votes) == "".join(c for c in v if c.isupper())
            # Every arm that ranked it is there, in capitals or in lowercase.
            assert all(letters[arm] in v or letters[arm].lower() in v for arm in hit.provenance)
            deeper += any(arm not in votes for arm in hit.provenance)
        assert deeper, "some hit was ranked by an arm lower than its top 5 (a lowercase letter)"
        # The preview's trace marks the voting arms and lists them after agree: a hit every
        # arm votes for, and one an arm ranked lower than its top 5.
        rows = [0, next(i for i, h in enumerate(app.table.hits) if set(h.provenance) - set(voters(h)))]
        app.table.focus()
        for row in rows:
            app.table.move_cursor(row=row)
            await settled(pilot, app)
            hit = app.table.current_hit
            trace = plain(app.preview.trace)
            votes = [arm for arm in app.answered() if arm in voters(hit)]
            listed = f" ({', '.join(votes)})" if votes else ""
            assert f"agree {hit.agreement}/{len(app.answered())}{listed}" in trace
            marked = [
                line.split()[0] for line in trace.splitlines() if line.rstrip().endswith(f"top {AGREEMENT_DEPTH}")
            ]
            assert marked == votes
            assert set(hit.provenance) <= {line.split()[0] for line in trace.splitlines() if line.strip()}
