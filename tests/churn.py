"""A file that keeps changing while something searches (issue #19): its versions, the span each
puts its one definition on, and a thread that saves them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

#: The churned file, relative to the repository root, and a query that finds every version.
CHURN_PATH = "app/churn.py"
CHURN_QUERY = "churn_marker version"


def churn_text(version: int) -> str:
    """Version ``version`` of the file: one function whose name and span move with it."""
    lead = "\n" * (version % 5)  # blank lines: the definition starts lower
    body = "".join(f"    step_{i} = {version} + {i}\n" for i in range(version % 3))
    return (
        f"{lead}def churn_marker_{version}(value):\n"
        f'    """churn_marker version {version}: the churned definition."""\n'
        f"{body}    return value\n"
    )


def churn_span(version: int) -> tuple[int, int]:
    """The lines of the definition in :func:`churn_text` (``version``)."""
    start = 1 + version % 5
    return start, start + 2 + version % 3


def save(root: Path, version: int) -> None:
    (root / CHURN_PATH).write_text(churn_text(version), encoding="utf-8")


class Churn:
    """Saves a new version of the churned file every ``every`` seconds on a thread of its own
    (``after_save`` is called after each), for at most ``limit`` versions; ``saved`` is the
    last version written. Stops with :meth:`stop` (or at the limit)."""

    def __init__(
        self, root: Path, every: float = 0.25, limit: int = 400, after_save: Callable[[int], None] | None = None
    ) -> None:
        self.root, self.every, self.limit, self.after_save = root, every, limit, after_save
        save(root, 0)
        self.saved = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="churn", daemon=True)

    def __enter__(self) -> Churn:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the saver is still writing versions (it stops at ``limit`` or :meth:`stop`)."""
        return self._thread.is_alive()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        version = 0
        while not self._stop.wait(self.every) and version < self.limit:
            version += 1
            save(self.root, version)
            self.saved = version
            if self.after_save is not None:
                try:
                    self.after_save(version)
                except Exception as exc:  # reported by the test, not lost in a thread
                    self.errors.append(f"{type(exc).__name__}: {exc}")
            time.sleep(0)


def consistent_spans(spans: list[tuple[int, int]], newest: int) -> int | None:
    """The version (at most ``newest``) whose definition's span is every one of ``spans``
    (the churned file's hits of one answer), or None when no single saved version explains
    them all."""
    wanted = set(spans)
    for version in range(newest, -1, -1):
        if wanted <= {churn_span(version)}:
            return version
    return None
