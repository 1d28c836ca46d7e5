"""The terminal driver: Textual's own, except that quitting does not wait for its input thread.

Giving the terminal back, Textual's Linux driver sets an event and joins the thread that reads
keys. That thread waits in ``select`` with a 0.1 s timeout, and once it sees the event it waits
once more, 0.1 s, for input still in flight: 0.1-0.2 s of every quit went there (measured with
``benchmarks/bench_keys.py``, ~0.2 s of the 0.25 s from ctrl+q to the process gone). When the
app is quitting, the process ends right after the terminal is restored (``tui.threads.exit_now``),
so the thread is told to stop and not waited for. Suspending for ``$EDITOR`` still waits, as
the editor must get every key.
"""

from __future__ import annotations

import signal
import termios

from textual.drivers.linux_driver import LinuxDriver


class QuitAtOnceDriver(LinuxDriver):
    """:class:`LinuxDriver` whose input thread is not joined once the app is quitting."""

    def disable_input(self) -> None:
        if not getattr(self._app, "quitting", False) or self.exit_event.is_set():
            super().disable_input()
            return
        try:
            signal.signal(signal.SIGWINCH, signal.SIG_DFL)
            self._disable_mouse_support()
            self.exit_event.set()  # the thread ends at its next wake-up, or with the process
            termios.tcflush(self.fileno, termios.TCIFLUSH)
        except Exception:  # as Textual's: giving the terminal back goes on whatever fails here
            pass
