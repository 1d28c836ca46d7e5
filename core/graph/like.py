"""More like this: a question made of what a unit reveals, not of the user's words.

From a unit, the question is its names (what it defines, then the repository's names it uses,
in order of first use) followed by its code, within a query's length: the lexical and symbol
arms match the names, the dense arm embeds names and code into the unit's own neighbourhood
of meaning. The unit itself, which that question finds first, is left out of the answer.
"""

from __future__ import annotations

from pathlib import Path

from ..query.pipeline import MAX_QUERY_CHARS
from .edges import Graph
from .related import Place, reading, unit_at

#: The names a like-question lists before the code (the rest of its room is the code's).
MAX_NAMES = 24


def like_question(graph: Graph, root: Path, path: str, where: int | str) -> tuple[Place, str]:
    """The unit at ``path:where`` and the question that looks for units like it."""
    unit = unit_at(graph, root, path, where)
    names = [unit.name] if unit.name else []
    for _line, name, _qualifier in reading(root, unit.path).uses(unit.start_line, unit.end_line):
        if name not in names and graph.definers(name):
            names.append(name)
        if len(names) >= MAX_NAMES:
            break
    text = (root / unit.path).read_text(encoding="utf-8", errors="replace").split("\n")
    code = " ".join(" ".join(text[unit.start_line - 1 : unit.end_line]).split())
    question = " ".join(names)
    room = MAX_QUERY_CHARS - len(question) - 1
    if room > 0 and code:
        question = f"{question} {code[:room]}".strip()
    return unit, question[:MAX_QUERY_CHARS] or unit.path


def overlaps(unit: Place, path: str, start: int, end: int) -> bool:
    """Whether a hit's span overlaps the unit (the like-question finds the unit itself)."""
    return path == unit.path and start <= unit.end_line and end >= unit.start_line
