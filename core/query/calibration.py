"""How often a hit labelled ``high``, ``medium`` or ``low`` confidence is right: the figures
measured on the public code-search benchmark, read from one file.

``core/calibration.json`` (core's data, beside models/ and schemas/) is written by the script that measures it
(``python evals/codesearch.py --calibration core/calibration.json``: every question's fused
top 10, a hit relevant when it overlaps a target as the benchmark's own runner matches them).
The TUI's help reads it at run time; the README and docs/agents.md quote it, and a test
(``tests/test_calibration.py``) checks that they quote these numbers.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

#: The measured figures (written by ``evals/codesearch.py --calibration``).
PATH = Path(__file__).parents[1] / "calibration.json"
#: The levels, in the order they are told.
LEVELS = ("high", "medium", "low")


@cache
def load() -> dict:
    """The measured calibration: ``levels`` (per level ``hits``, ``share``, ``relevant``,
    ``relevant_share``), ``top_k``, ``hits``, ``questions`` and ``measured_on``."""
    return json.loads(PATH.read_text(encoding="utf-8"))


def percent(value: float) -> int:
    """A share as the whole percent every text quotes (0.674 -> 67)."""
    return round(100 * value)


def relevant_percents() -> dict[str, int]:
    """Per level, the percent of its hits that answer the question (``{"high": 67, …}``)."""
    levels = load()["levels"]
    return {level: percent(levels[level]["relevant_share"]) for level in LEVELS}


def share_percents() -> dict[str, int]:
    """Per level, its percent of all the top-k hits (``{"high": 14, …}``)."""
    levels = load()["levels"]
    return {level: percent(levels[level]["share"]) for level in LEVELS}


def sentence() -> str:
    """The figures in one sentence, as the help says them."""
    right = relevant_percents()
    data = load()
    return (
        f"On {data['measured_on']} ({data['questions']} questions, top {data['top_k']}), "
        f"{right['high']} % of high hits answered the question, {right['medium']} % of medium "
        f"and {right['low']} % of low."
    )
