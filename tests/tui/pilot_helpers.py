"""Helpers for driving :class:`tui.app.RanklensApp` with a Pilot (tests and snapshots)."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

from ranklens.core.arms import DEFAULT_ARMS
from ranklens.core.engine import Engine
from ranklens.tui.app import RanklensApp


def count_arm_calls(eng: Engine) -> Counter:
    """Wrap ``eng.run_arm`` so every call is counted per arm."""
    calls: Counter = Counter()
    real = eng.run_arm

    def counted(name, query, **kwargs):
        calls[name] += 1
        return real(name, query, **kwargs)

    eng.run_arm = counted
    return calls


def gate_arms(eng: Engine) -> dict[str, threading.Event]:
    """Make every arm wait for its own event before it runs."""
    gates = {arm: threading.Event() for arm in DEFAULT_ARMS}
    real = eng.run_arm

    def gated(name, query, **kwargs):
        gates[name].wait(20)
        return real(name, query, **kwargs)

    eng.run_arm = gated
    return gates


async def wait_for(pilot, condition, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.02)


async def ready(pilot, app: RanklensApp) -> None:
    """Wait for the index to be open and refreshed."""
    await wait_for(pilot, lambda: app.index_ready)
    await app.workers.wait_for_complete()
    await pilot.pause()


async def run_query(pilot, app: RanklensApp, text: str) -> None:
    """Type ``text`` into the query, press enter and wait for every arm."""
    app.query_input.focus()
    app.query_input.value = text
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.query_text == text and app.query_complete)
    await settled(pilot, app)


async def settled(pilot, app: RanklensApp) -> None:
    """Wait for the preview to show the span under the cursor."""
    await pilot.pause()
    await wait_for(pilot, lambda: not app.preview_pending)
    await pilot.pause()


def record_notifications(app: RanklensApp) -> list[str]:
    """Collect the text of every notification the app shows."""
    shown: list[str] = []
    real = app.notify

    def notify(message, *args, **kwargs):
        shown.append(str(message))
        return real(message, *args, **kwargs)

    app.notify = notify
    return shown


def column(app: RanklensApp, key: str) -> list[str]:
    table = app.table
    return [table.cell_text(row, key) for row in range(table.row_count)]
