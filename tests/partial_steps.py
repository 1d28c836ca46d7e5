"""A repository whose first index is built in several steps, for the tests of answers while the
first index builds (issue 36): tests/test_partial.py and tests/tui/test_partial_ui.py."""

from __future__ import annotations

import textwrap
from pathlib import Path

#: Chunks in a pass's first step here (the product's is 1,024): a few files ...
FIRST_STEP_CHUNKS = 6
#: ... chunked in batches of a file or two.
STEP_BATCH_BYTES = 1_500


def small_steps(monkeypatch) -> None:
    """Small first steps (doubling: 6, 12, 24 ... chunks) cut from batches of a file or two,
    the files in :func:`core.index.batches.index_order`, in this process."""
    from ranklens.core.index import batches

    monkeypatch.setattr(batches, "FIRST_SEGMENT_CHUNKS", FIRST_STEP_CHUNKS)
    monkeypatch.setattr(batches, "FIRST_BATCH_BYTES", STEP_BATCH_BYTES)
    monkeypatch.setattr(batches, "CHUNK_BATCH_BYTES", STEP_BATCH_BYTES)
    monkeypatch.setattr(batches, "ORDER_MIN_BYTES", 0)


def small_steps_code() -> list[str]:
    """:func:`small_steps` as lines of a child's sitecustomize."""
    return [
        "import ranklens.core.index.batches as _batches",
        f"_batches.FIRST_SEGMENT_CHUNKS = {FIRST_STEP_CHUNKS}",
        f"_batches.FIRST_BATCH_BYTES = _batches.CHUNK_BATCH_BYTES = {STEP_BATCH_BYTES}",
        "_batches.ORDER_MIN_BYTES = 0",
    ]


def write_stepped_repo(root: Path, modules: int = 48) -> Path:
    """A small real repository (~60 chunks): source a folder or two deep, docs, a test and a
    README, each module three functions."""
    topics = ["config", "retry", "schedule", "template", "cache", "queue", "auth", "storage"]
    for i in range(modules):
        topic = topics[i % len(topics)]
        body = "\n\n".join(
            textwrap.dedent(
                f'''
                def {topic}_step_{i}_{j}(value, attempts={j + 1}):
                    """Handle {topic} for part {j} of module {i}: parse, retry or render as needed."""
                    result = value
                    for attempt in range(attempts):
                        result = f"{{result}}-{topic}-{{attempt}}"
                    return result
                '''
            ).strip()
            for j in range(3)
        )
        folder = "pkg" if i % 3 else "pkg/sub/deeper"
        path = root / folder / f"{topic}_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body + "\n")
    (root / "pkg" / "scheduler.py").write_text(
        'class Scheduler:\n    """Run jobs on a timetable and retry a failed request."""\n\n'
        "    def run(self, job):\n        return job()\n"
    )
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("# Guide\n\nParse the configuration file, then render the template.\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_config.py").write_text("def test_parse_the_configuration_file():\n    assert True\n")
    (root / "README.md").write_text("# Project\n\nRetry a failed request with the scheduler.\n")
    return root
