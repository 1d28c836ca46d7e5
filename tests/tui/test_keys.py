"""Keys answer at once: quitting does not wait for an arm still searching or an indexing pass
in flight (their workers are cancelled, their threads dropped, the index keeps what it
committed), the help opens while arms search, and a long line's end can be read in the
preview."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from pilot_helpers import gate_arms, ready, run_query, settled, wait_for
from textual.geometry import Region
from textual.worker import WorkerState

from ranklens.core.engine import Engine
from ranklens.tui import threads
from ranklens.tui.app import RanklensApp
from ranklens.tui.screens.help import HelpScreen

SIZE = (120, 36)

#: The real app, headless, driven by a Pilot: an arm (``search``) or the index refresh
#: (``index``) blocks for five minutes once started; the Pilot presses ctrl+q as soon as it
#: is in flight. The process then prints a line and must exit (it would wait the five
#: minutes if quitting joined the worker's thread).
SCRIPT = textwrap.dedent(
    """
    import sys, threading
    from pathlib import Path
    from ranklens.core.engine import Engine
    from ranklens.tui.app import RanklensApp

    root, mode = Path(sys.argv[1]), sys.argv[2]
    engine = Engine(root)
    entered, never = threading.Event(), threading.Event()
    if mode == "search":
        real_arm = engine.run_arm

        def run_arm(name, query, **kwargs):
            if name == "bm25":
                entered.set()
                never.wait(300)
            return real_arm(name, query, **kwargs)

        engine.run_arm = run_arm
        query = "password hash"
    else:
        real_index = engine.ensure_index

        def ensure_index(progress=None, **kwargs):
            def report(p):
                entered.set()
                never.wait(300)

            return real_index(report, **kwargs)

        engine.ensure_index = ensure_index
        query = ""
    app = RanklensApp(engine, query=query)

    async def auto_pilot(pilot):
        while not entered.is_set():
            await pilot.pause(0.02)
        await pilot.press("ctrl+q")

    app.run(headless=True, size=(120, 36), auto_pilot=auto_pilot)
    stopped = app.session.index_stop.is_set() and app.session.deep_stop.is_set()
    print(f"exited while in flight: {entered.is_set() and not never.is_set()}; workers told to stop: {stopped}")
    """
)


def quit_in_flight(root: Path, mode: str, tmp_path: Path) -> subprocess.CompletedProcess:
    script = tmp_path / "quit_in_flight.py"
    script.write_text(SCRIPT)
    return subprocess.run([sys.executable, str(script), str(root), mode], capture_output=True, text=True, timeout=120)


def test_quit_exits_while_an_arm_is_still_searching(sample_repo, tmp_path) -> None:
    Engine(sample_repo).ensure_index()
    done = quit_in_flight(sample_repo, "search", tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "exited while in flight: True; workers told to stop: True" in done.stdout


def test_quit_exits_while_the_index_refreshes_and_the_index_keeps_what_it_committed(sample_repo, tmp_path) -> None:
    engine = Engine(sample_repo)
    engine.ensure_index()
    before = engine.search("password hash", top_k=3).hits
    engine.close()
    (sample_repo / "app" / "extra.py").write_text("def extra_token_refresh():\n    return 1\n")
    done = quit_in_flight(sample_repo, "index", tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "exited while in flight: True" in done.stdout
    # The index committed before is intact and answers as before; the next pass picks up
    # the file the stopped one never reached.
    again = Engine(sample_repo)
    try:
        assert again.open()
        assert [(h.path, h.start_line) for h in again.search("password hash", top_k=3).hits] == [
            (h.path, h.start_line) for h in before
        ]
        stats = again.ensure_index()
        assert stats.added == 1
        assert any(h.path == "app/extra.py" for h in again.search("extra_token_refresh", top_k=3).hits)
    finally:
        again.close()


async def test_quit_cancels_the_arm_workers_in_flight_without_waiting_for_them(engine) -> None:
    gates = gate_arms(engine)
    app = RanklensApp(engine)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot, app)
            app.query_input.value = "password hash"
            await pilot.press("enter")
            await wait_for(pilot, lambda: len(app._arm_workers) == len(app.arms))
            workers = list(app._arm_workers)
            assert all(w.state == WorkerState.RUNNING for w in workers)
            await pilot.press("ctrl+q")
            await wait_for(pilot, lambda: app._exit)
        # The app has exited; its arm workers were cancelled, their threads still blocked.
        assert all(w.is_cancelled for w in workers)
        assert app.session.index_stop.is_set()
        assert any(t.is_alive() for t in threads.live())
        assert not app.results  # no arm answered
    finally:
        for gate in gates.values():
            gate.set()
        assert threads.join_all(30)


async def test_help_opens_while_the_arms_are_searching_and_opens_again_as_it_was(engine) -> None:
    gates = gate_arms(engine)
    app = RanklensApp(engine)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot, app)
            app.query_input.value = "password hash"
            await pilot.press("enter")
            await wait_for(pilot, lambda: len(app._arm_workers) == len(app.arms))
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            first = app.screen
            # Every arm is still searching: the help did not wait for one.
            assert all(w.state == WorkerState.RUNNING for w in app._arm_workers)
            assert not app.results
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, HelpScreen)
            await pilot.press("question_mark")
            await pilot.pause()
            assert app.screen is first  # built once, shown again
            await pilot.press("escape")
            for gate in gates.values():
                gate.set()
            await wait_for(pilot, lambda: app.query_complete)
            assert app.table.row_count > 0
    finally:
        for gate in gates.values():
            gate.set()


LONG_END = "END_OF_THE_LONG_LINE"


async def test_the_end_of_a_300_column_line_is_visible_in_the_preview(tmp_path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    long_line = "    message = " + repr(" ".join(["word"] * 55)) + " + " + LONG_END
    assert len(long_line) >= 300
    (root / "banner.py").write_text(f"def build_banner():\n{long_line}\n    return message\n")
    engine = Engine(root)
    engine.ensure_index()
    app = RanklensApp(engine)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot, app)
            await run_query(pilot, app, "build_banner")
            await settled(pilot, app)
            assert app.table.current_hit.path == "banner.py"
            code = app.preview.query_one("#preview-code")
            assert code.size.width < len(long_line)  # the pane is narrower than the line
            shown = [strip.text for strip in code.render_lines(Region(0, 0, *code.outer_size))]
            assert any(LONG_END in line for line in shown)
            # And on the screen itself, inside the pane, not cut at its edge.
            assert LONG_END in app.export_screenshot()
    finally:
        engine.close()


def test_quitting_gives_the_terminal_back_without_waiting_for_the_input_thread(monkeypatch) -> None:
    """Textual's driver joins its key-reading thread, which waits in select for up to 0.2 s:
    once the app quits, ranklens's does not (tui/driver.py); suspending for $EDITOR still does."""
    import signal
    import threading
    from types import SimpleNamespace

    from ranklens.tui.driver import QuitAtOnceDriver

    monkeypatch.setattr(signal, "signal", lambda *_: None)  # leave this process's handlers alone
    driver = object.__new__(QuitAtOnceDriver)  # no terminal here: only what disable_input reads
    driver._app = SimpleNamespace(quitting=True)
    driver.exit_event = threading.Event()
    driver.fileno = -1  # tcflush fails, as Textual's own call may: ignored
    driver._disable_mouse_support = lambda: None
    joined = []
    driver._key_thread = SimpleNamespace(join=lambda *_: joined.append(True))

    driver.disable_input()
    assert driver.exit_event.is_set() and joined == []  # told to stop, not waited for

    driver._app.quitting = False  # suspending: the thread is waited for, then input resumes
    driver.exit_event.clear()
    driver.disable_input()
    assert joined == [True] and not driver.exit_event.is_set()
    assert RanklensApp.get_driver_class(RanklensApp.__new__(RanklensApp)) is QuitAtOnceDriver
