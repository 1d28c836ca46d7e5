"""Plain data shared by every stage of the engine.

Lines are 1-based and inclusive everywhere; paths are POSIX and relative to the root.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Arm families, used by the confidence rule: agreement across families means more than
#: agreement inside one.
LEXICAL = "lexical"
SEMANTIC = "semantic"
STRUCTURAL = "structural"


def make_docid(path: str, start_line: int, end_line: int) -> str:
    """The stable id of a span: ``path:start-end``."""
    return f"{path}:{start_line}-{end_line}"


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrievable span of a file.

    ``kind`` is ``"window"`` for a line window, ``"definition"`` for a tree-sitter
    definition (function, method, class …) and ``"section"`` for a Markdown section.
    ``context`` is the breadcrumb shown to the user (``path > Class > method``); for
    windows it is the path alone.
    """

    path: str
    start_line: int
    end_line: int
    text: str
    language: str
    context: str
    kind: str = "window"
    symbol: str = ""
    signature: str = ""
    docstring: str = ""

    @property
    def docid(self) -> str:
        return make_docid(self.path, self.start_line, self.end_line)


@dataclass(frozen=True, slots=True)
class Hit:
    """One entry of one arm's ranking (``rank`` is 1-based, ``score`` the arm's own)."""

    arm: str
    docid: str
    path: str
    start_line: int
    end_line: int
    rank: int
    score: float
    context: str = ""
    text: str | None = None


@dataclass(frozen=True, slots=True)
class Contribution:
    """What one arm gave a consolidated hit: its best rank and what that was worth."""

    arm: str
    rank: int
    docid: str
    score: float
    contribution: float


@dataclass(slots=True)
class ConsolidatedHit:
    """A group of overlapping spans of one file, fused across arms."""

    path: str
    start_line: int
    end_line: int
    docid: str
    context: str
    score: float
    rank: int
    provenance: list[str]
    agreement: int
    confidence: str
    contributors: list[Contribution] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "docid": self.docid,
            "context": self.context,
            "score": self.score,
            "rank": self.rank,
            "provenance": list(self.provenance),
            "agreement": self.agreement,
            "confidence": self.confidence,
            "contributors": [
                {
                    "arm": c.arm,
                    "rank": c.rank,
                    "docid": c.docid,
                    "score": c.score,
                    "contribution": c.contribution,
                }
                for c in self.contributors
            ],
        }
