"""The help modal: how to read the result columns, the fusion formula, the key bindings.

Styles live in ``tui/app.tcss`` (``#help-body``).
"""

from __future__ import annotations

from typing import ClassVar

from rich.markdown import Markdown as RichMarkdown
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ranklens.core.query import calibration
from ranklens.core.query.labels import AGREEMENT_DEPTH
from ranklens.tui.notes import STAGE, STAGE_OFF

#: The fused score, shown verbatim so the help and the tests agree on it.
FORMULA = "score = Σ w_i / (k + rank_i)"


def _explanation() -> str:
    """The help's text before the keys; the calibration figures are read from
    :mod:`core.query.calibration` (the measured source the README and docs quote too)."""
    return f"""\
# ranklens help

Every query runs on several retrievers ("arms") at once; their rankings are fused into one.

## Columns

- **agree** `n/m`: *n* arms vote for this span: it is within their own top {AGREEMENT_DEPTH}
  (they are its capitals in **via**); *m* is the number of arms that have answered so far
  (it grows while slower arms finish).
- **conf**
  - **high**: it defines a symbol the query names, or it scores within 10 % of the best
    hit and an arm votes for it;
  - **medium**: it scores at least half the best hit's score, or two arms vote for it;
  - **low**: anything else.

  {calibration.sentence()}
- **via**: one letter per arm (`B` bm25 and `F` fts5 match words, `D` dense and `DE` deep
  meaning, `S` symbols definitions). A capital: the arm ranked the span within its top {AGREEMENT_DEPTH}, a
  vote counted in **agree**. Lowercase: it ranked the span lower down, or only among its
  file's chunks (the chunk step chose it within a top file); it adds to the score, not to
  **agree**. `·`: the arm did not rank it. The preview's trace gives each arm's rank.
- **move** `↑3 / ↓1`: after you change a weight or k, the hit moved up 3 / down 1 places
  compared with the ranking shown before (`new`: it was not ranked before); the marks
  stay until the next change.
- **●** in the `#` column: the hit is selected (space); export takes the selection.
- **✓** / **✗** in the `#` column: you judged the hit relevant (`+`) / not relevant (`-`)
  to the query; the same key again clears it. Judgments are kept per repository (`judgments.jsonl` in its index
  folder, a labeled query file for `ranklens eval` / `ranklens tune`), and the status line
  shows the query's MRR@10 and nDCG@10 against them.
- Dimmed rows are low-confidence hits.

## Fusion (weighted reciprocal rank fusion)

```
{FORMULA}
```

- the sum runs over the arms that ranked the span; `w_i` is arm *i*'s weight and `k` the
  smoothing constant (both in the tuning panel);
- `rank_i` is 1-based: an arm's top hit has rank 1;
- overlapping spans of one file are merged into one hit, and each arm counts once, with
  its best rank among the merged spans.

## Ranking stage

After fusion the {STAGE} re-scores the list: code-aware signals (a definition of a symbol the
query names, a file named after its words …) add to a hit's score; priors multiply the
score of hits in test code, examples, README/CHANGELOG-style project files and
configuration/data files by a factor below 1, unless the query mentions that kind of file;
diversity lowers a file's second and later hits. The preview's trace lists what moved the
hit and its score before and after. `p` turns the {STAGE} off and on (the status line says
*{STAGE_OFF}*); like the sliders, it re-fuses without running the arms again.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def help_markdown(bindings: list[tuple[str, str]]) -> str:
    """The help text, with a table of ``bindings`` (``(key, description)`` pairs)."""
    lines = [_explanation(), "## Keys", ""]
    if bindings:
        lines += ["| key | action |", "| --- | --- |"]
        # A literal "|" in a cell would end it.
        lines += [f"| `{_cell(key)}` | {_cell(text)} |" for key, text in bindings]
    else:
        lines.append("No key bindings.")
    lines += ["", "*Press escape, q or ? to close.*"]
    return "\n".join(lines)


class HelpScreen(ModalScreen[None]):
    """Modal help text; opened with ``?``, closed with escape, ``q`` or ``?``.

    Parameters
    ----------
    bindings:
        ``(key, description)`` pairs, listed as given; pass the app's live bindings so the
        help stays true.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "close", "Close help"),
    ]

    def __init__(
        self,
        bindings: list[tuple[str, str]],
        *,
        name: str | None = None,
        id: str | None = None,  # noqa: A002
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.bindings = list(bindings)

    @property
    def markdown(self) -> str:
        """The Markdown source shown."""
        return help_markdown(self.bindings)

    def compose(self) -> ComposeResult:
        # One Static holding Rich's Markdown, not Textual's Markdown widget: that one mounts a
        # widget per block (dozens here) and took 0.4-0.8 s of the UI thread to open, several
        # times that while arms or the indexer held the interpreter; this renders in one pass.
        with VerticalScroll(id="help-body") as body:
            body.border_title = "Help"
            yield Static(RichMarkdown(self.markdown, code_theme="ansi_dark"), id="help-text")

    def on_mount(self) -> None:
        # Focus the scroller so arrows/page keys scroll the text.
        self.query_one("#help-body").focus()

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)
