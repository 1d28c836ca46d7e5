"""Drive the terminal UI over this repository and save the README screenshots as SVG.

    python screenshots/make_screenshots.py            # writes screenshots/*.svg
    python screenshots/make_screenshots.py --out DIR  # somewhere else

The app runs headless (Textual's ``run_test``) at a fixed terminal size and is driven with
a Pilot, key by key, exactly as a user would: type a query, move the cursor, open the tuning
panel and move a slider, open a hit's runners-up (``a``), select hits and open the export
modal, walk from a hit to one of its callers (``r``, enter), open the help. The index of
the repository is brought up to date first, so the app starts warm.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from ranklens.core.engine import Engine
from ranklens.tui.app import RanklensApp

ROOT = Path(__file__).resolve().parent.parent

SIZE = (140, 40)
QUERY = "reciprocal rank fusion"
SHOTS = (
    "ranklens-main.svg",
    "ranklens-tuning.svg",
    "ranklens-export.svg",
    "ranklens-help.svg",
    "ranklens-runners-up.svg",
    "ranklens-walk.svg",
)


async def wait_for(pilot, condition, timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError("the app did not get there in time")
        await pilot.pause(0.02)


async def drive(engine: Engine, out: Path) -> list[Path]:
    app = RanklensApp(engine)
    written: list[Path] = []

    def shoot(name: str) -> None:
        written.append(Path(app.save_screenshot(filename=name, path=str(out))))

    async with app.run_test(size=SIZE) as pilot:
        app.query_input.cursor_blink = False
        await wait_for(pilot, lambda: app.index_ready)
        await app.workers.wait_for_complete()
        # Type the query like a user; it runs by itself after the last key.
        await pilot.press(*QUERY)
        await wait_for(pilot, lambda: app.query_text == QUERY and app.query_complete)
        await pilot.press("down", "down", "down")  # into the results, third hit
        await pilot.pause(0.3)
        shoot(SHOTS[0])

        # The first hit carrying runners-up: open them, the cursor on the first.
        await pilot.press("home")
        while not app.table.current_hit.alternatives and app.table.cursor_row < 9:
            await pilot.press("down")
        await pilot.press("a", "down")
        await pilot.pause(0.3)
        shoot(SHOTS[4])
        await pilot.press("a")

        # Tuning: weigh the lexical arm bm25 up, so rows move and show by how much.
        await pilot.press("t")
        await pilot.pause()
        await pilot.press("shift+right")  # bm25 1.0 -> 2.0
        await pilot.pause(0.3)
        shoot(SHOTS[1])
        await pilot.press("r", "escape")  # back to the defaults, panel closed

        # Select two hits and open the export modal.
        await pilot.press("home", "space", "down", "down", "space", "e")
        await pilot.pause(0.3)
        app.screen.query_one("#export-path").cursor_blink = False
        await pilot.pause()
        shoot(SHOTS[2])
        await pilot.press("escape", "c")

        # The walk: the hit's neighbourhood, then one of its callers (or callees) gone to.
        await pilot.press("home")
        while " > " not in app.table.current_hit.context and app.table.cursor_row < 9:
            await pilot.press("down")  # the first hit inside a definition
        await pilot.press("r")
        await wait_for(pilot, lambda: app.trail.depth == 2)
        rows = app.walk_list.rows
        first = next((i for i, row in enumerate(rows) if row is not None and row.group), None)
        if first is not None:
            app.walk_list.highlighted = first
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.trail.depth == 3)
        await pilot.pause(0.3)
        shoot(SHOTS[5])
        await pilot.press("backspace", "backspace")
        await wait_for(pilot, lambda: app.trail.depth == 1)

        await pilot.press("question_mark")
        await pilot.pause(0.3)
        shoot(SHOTS[3])
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ["RANKLENS_DEEP"] = "0"  # the screens show the four arms every install has
    engine = Engine(ROOT)
    stats = engine.ensure_index()
    print(f"index: {stats.files} files, {stats.chunks} chunks", file=sys.stderr)
    try:
        written = asyncio.run(drive(engine, args.out))
    finally:
        engine.close()
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
