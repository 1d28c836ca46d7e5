"""The preview pane: a highlighted span of a file and the fused trace of the hit under it.

The widget does no I/O: the app reads the file and hands over the text (any slice of it,
with the line number of its first line); the widget cuts the span plus a few lines of
context out of it, highlights it with the lexer chosen from the file name, marks the span's
lines, emphasises the query terms and lists what every arm said about the hit.
"""

from __future__ import annotations

import re
from fnmatch import fnmatch
from functools import lru_cache
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from rich.console import Group
from rich.style import Style
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from ranklens.core.query.labels import AGREEMENT_DEPTH, voters

if TYPE_CHECKING:
    from ranklens.core.base.types import ConsolidatedHit

# Identifiers and numbers, and the sub-words inside an identifier (snake_case, camelCase,
# HTTPServer, digits). The same split the lexical arms index with, so what is emphasised
# is what could have matched.
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

#: Lines highlighted before the window so a lexer state (an open docstring, say) that
#: started above it is usually right, without highlighting a whole large file.
LEXER_LOOKBEHIND = 200

#: Columns between the trace table's columns.
TRACE_PADDING = 2

#: How query terms are emphasised in the code (on top of the syntax colours).
TERM_STYLE = Style(bold=True, underline=True)


@lru_cache(maxsize=1)
def _filename_patterns() -> tuple[tuple[str, str], ...]:
    """(file name pattern, lexer alias) of every lexer bundled with pygments."""
    from pygments.lexers._mapping import LEXERS

    return tuple(
        (pattern, aliases[0])
        for _module, _name, aliases, patterns, _mimes in LEXERS.values()
        if aliases
        for pattern in patterns
    )


_LEXERS: dict[str, str] = {}


def lexer_for(path: str, text: str | None = None) -> str:
    """The pygments lexer alias for a file name, or ``"text"`` when none matches.

    An alias (not a lexer instance) is returned so rich builds the lexer itself with
    ``stripnl=False``; pygments' default strips leading blank lines, which would shift
    every line number below them.

    Only the lexers bundled with pygments are considered. ``get_lexer_for_filename`` also
    loads every third-party lexer plugin on each call (IPython's, when it is installed,
    takes ~0.6 s to import), which froze the preview on the first hit of a new file.
    When several lexers claim the name (``*.h``, ``*.m``, ``*.pl``) the file's ``text``
    decides, as pygments does, through each candidate's ``analyse_text`` and priority.
    The answer is cached per path.
    """
    found = _LEXERS.get(path)
    if found is not None:
        return found
    name = PurePosixPath(path).name
    candidates = list(dict.fromkeys(alias for pattern, alias in _filename_patterns() if fnmatch(name, pattern)))
    if not candidates:
        found = "text"
    elif len(candidates) == 1:
        found = candidates[0]
    else:
        from pygments.lexers import find_lexer_class_by_name

        def rank(alias: str) -> float:
            cls = find_lexer_class_by_name(alias)
            return (cls.analyse_text(text[:4000]) if text else 0.0) + cls.priority

        found = max(candidates, key=rank)
    if len(_LEXERS) > 512:
        _LEXERS.clear()
    _LEXERS[path] = found
    return found


def query_terms(query: str) -> set[str]:
    """Lowercased identifiers of the query and their sub-words (``getUser`` -> getuser, get, user)."""
    terms: set[str] = set()
    for match in _WORD.finditer(query):
        word = match.group(0)
        terms.add(word.lower())
        terms.update(part.lower() for part in _PART.findall(word))
    return terms


def term_ranges(line: str, terms: set[str]) -> list[tuple[int, int]]:
    """Column ranges ``[start, end)`` in ``line`` to emphasise for ``terms``.

    An identifier equal to a term (ignoring case) is emphasised whole; otherwise each of
    its sub-words equal to a term is. One-letter sub-words are skipped so a query word
    such as ``x`` does not light up every ``xOffset``.
    """
    ranges: list[tuple[int, int]] = []
    if not terms:
        return ranges
    for match in _WORD.finditer(line):
        word = match.group(0)
        if word.lower() in terms:
            ranges.append(match.span())
            continue
        for part in _PART.finditer(word):
            if len(part.group(0)) > 1 and part.group(0).lower() in terms:
                ranges.append((match.start() + part.start(), match.start() + part.end()))
    return ranges


def _fmt_score(score: float) -> str:
    return f"{score:.4g}"


def describe_priors(hit: ConsolidatedHit) -> Text:
    """``priors tests ×0.5 · examples lifted by "example"``."""
    out = Text.assemble(("priors ", "dim"))
    for i, prior in enumerate(hit.priors):
        if i:
            out.append(" · ", style="dim")
        if prior.lifted_by:
            out.append(f"{prior.name} lifted by {prior.lifted_by!r}")
        else:
            out.append(f"{prior.name} ×{prior.factor:g}", style="yellow" if prior.factor < 1 else "green")
    return out


def describe_signals(hit: ConsolidatedHit) -> Text:
    """``signals definition +0.4 · path +0.13 · diversity ×0.3`` (the ranking stage's steps)."""
    out = Text.assemble(("signals ", "dim"))
    for i, signal in enumerate(hit.signals):
        if i:
            out.append(" · ", style="dim")
        if signal.boost:
            out.append(f"{signal.name} +{_fmt_score(signal.boost)}", style="green")
        elif signal.factor != 1.0:
            out.append(f"{signal.name} ×{signal.factor:.2g}", style="yellow")
        else:
            out.append(signal.name)
    return out


#: The signals that speak for the file (the stage's file step), not for the chunk shown.
FILE_SIGNALS = ("path", "name-coverage", "file-evidence", "coverage")


def describe_why(hit: ConsolidatedHit) -> list[Text]:
    """``why this file: …`` (the file step's reasons) and ``why this chunk: …`` (the chunk
    step's, and what the chunk itself defines or quotes), when the stage said so."""
    out = []
    files = [s.reason for s in hit.signals if s.name in FILE_SIGNALS]
    if files:
        out.append(Text.assemble(("why this file ", "dim"), "; ".join(files)))
    chunk = [s.reason for s in hit.signals if s.name in ("chunk", "definition", "quote")]
    if chunk:
        out.append(Text.assemble(("why this chunk ", "dim"), "; ".join(dict.fromkeys(chunk))))
    return out


def describe_rescoring(hit: ConsolidatedHit) -> Text | None:
    """What the ranking stage did to a hit: its signals, why this file and why this chunk,
    its priors, then ``fused 0.03 → 0.015``; None when nothing moved it."""
    lines = [describe_signals(hit), *describe_why(hit)] if hit.signals else []
    if hit.priors:
        lines.append(describe_priors(hit))
    if not lines:
        return None
    out = Text("\n").join(lines)
    if hit.fused_score is not None and hit.fused_score != hit.score:
        out.append("  fused ", style="dim")
        out.append(f"{_fmt_score(hit.fused_score)} → {_fmt_score(hit.score)}")
    return out


def describe_runner_up(parent: ConsolidatedHit, view: ConsolidatedHit, place: int) -> Text:
    """The trace of a runner-up (``view``, the ``place``-th, 0-based, of ``parent``'s
    runners-up): under which hit, why the chunk step ranks it there, its score in the file."""
    total = len(parent.alternatives)
    why = "; ".join(s.reason for s in view.signals if s.name == "chunk")
    return Text.assemble(
        ("runner-up ", "dim"),
        f"{place + 1} of {total}",
        ("  in its file, under hit ", "dim"),
        (f"#{parent.rank}", "bold"),
        f" ({parent.start_line}-{parent.end_line})",
        "\n",
        ("why this chunk ", "dim"),
        why or "—",
        "\n",
        ("score in its file ", "dim"),
        _fmt_score(view.score),
        ("  (the hit's own part scored at least as much; a shows / hides them)", "dim"),
    )


class Preview(VerticalScroll):
    """Scrollable preview of one hit: header, highlighted code, fused trace.

    Call :meth:`show` to display a hit and :meth:`clear` to blank the pane.

    Parameters
    ----------
    context_lines:
        Lines shown above and below the span (when the text passed in has them).
    max_lines:
        Most lines highlighted; a longer span is cut there (the header says so).
    theme:
        Pygments style for the code; ``None`` picks one matching the app's dark/light theme.
    """

    DEFAULT_CSS = """
    Preview {
        height: 1fr;
        background: $surface;
        scrollbar-gutter: stable;
    }
    Preview > #preview-header {
        width: 1fr;
        height: auto;
        padding: 0 1;
        background: $panel;
        color: $text;
        text-style: bold;
        /* One line: a header that re-wraps when the context changes would force a
           layout pass (re-measuring the code) on every re-fuse. */
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    Preview > #preview-code {
        width: 1fr;
        height: auto;
    }
    Preview > #preview-trace {
        width: 1fr;
        height: auto;
        padding: 1 1 0 1;
    }
    Preview > #preview-message {
        width: 1fr;
        height: auto;
        padding: 1 2;
        color: $text-muted;
    }
    Preview.-empty > #preview-header,
    Preview.-empty > #preview-code,
    Preview.-empty > #preview-trace {
        display: none;
    }
    Preview > #preview-message {
        display: none;
    }
    Preview.-empty > #preview-message {
        display: block;
    }
    """

    def __init__(
        self,
        *,
        context_lines: int = 3,
        max_lines: int = 200,
        theme: str | None = None,
        name: str | None = None,
        id: str | None = None,  # noqa: A002
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.context_lines = context_lines
        self.max_lines = max_lines
        self.cut_at: int | None = None  # last line shown when a long span was cut
        self.theme = theme
        self._syntax: Syntax | None = None
        self._trace: Group | Text | None = None
        self.add_class("-empty")

    def compose(self) -> ComposeResult:
        yield Static(id="preview-header", markup=False)
        yield Static(id="preview-code")
        yield Static(id="preview-trace")
        yield Static(id="preview-message", markup=False)

    # -- public API -----------------------------------------------------------------------

    @property
    def syntax(self) -> Syntax | None:
        """The code renderable currently shown (``None`` when cleared)."""
        return self._syntax

    @property
    def trace(self) -> Group | Text | None:
        """The trace renderable currently shown (``None`` when cleared or without a hit)."""
        return self._trace

    def show(
        self,
        *,
        path: str,
        text: str,
        first_line: int,
        span: tuple[int, int],
        query: str,
        hit: ConsolidatedHit | None,
        arms: list[str],
        trace: Text | None = None,
    ) -> None:
        """Show ``span`` of ``path`` with context, emphasised ``query`` terms and the trace.

        Parameters
        ----------
        path:
            File path (for the header and the lexer choice).
        text:
            The file's text, or a slice of it, starting at line ``first_line``.
        first_line:
            1-based number of the first line of ``text``.
        span:
            ``(start, end)``, 1-based inclusive lines of the hit.
        query:
            The query whose terms are emphasised.
        hit:
            The fused hit whose trace is shown under the code, or ``None`` for no trace.
        arms:
            Arms to list in the trace, in order (the arms that answered the query); the
            agreement's denominator is their number.
        trace:
            Shown instead of the hit's fused trace (a runner-up's: :func:`describe_runner_up`).
        """
        start, end = span
        self._syntax = self._build_syntax(path, text, first_line, start, end, query)
        self._trace = trace if trace is not None else None if hit is None else self.build_trace(hit, arms)
        self.query_one("#preview-header", Static).update(self._header(path, start, end, hit))
        self.query_one("#preview-code", Static).update(self._syntax)
        self.query_one("#preview-trace", Static).update(self._trace or "")
        self.remove_class("-empty")
        self.scroll_home(animate=False)

    def show_trace(self, hit: ConsolidatedHit, arms: list[str]) -> None:
        """Replace only the trace (same span, new fusion): the code is not re-highlighted.

        A re-fuse (new weights or k, another arm landing) changes the trace but not the
        code; re-highlighting the code would cost far more than the fusion itself.
        """
        self._trace = self.build_trace(hit, arms)
        header = self._header(hit.path, hit.start_line, hit.end_line, hit)
        # A layout pass re-measures the highlighted code too (tens of ms): skip it when the
        # new content takes as many lines as the old. The header never wraps (one line).
        self.query_one("#preview-header", Static).update(header, layout=False)
        trace = self.query_one("#preview-trace", Static)
        same_height = self._trace_height(trace, self._trace) == trace.content_size.height
        trace.update(self._trace, layout=not same_height)

    def show_note(self, hit: ConsolidatedHit, trace: Text) -> None:
        """Replace only the header and the trace with ``trace`` (a runner-up's, after a re-fuse)."""
        self._trace = trace
        self.query_one("#preview-header", Static).update(self._header(hit.path, hit.start_line, hit.end_line, hit))
        self.query_one("#preview-trace", Static).update(trace)

    def _trace_height(self, widget: Static, trace: Group) -> int:
        """Lines ``trace`` takes in ``widget`` at its current width (-1: unknown).

        Rendering the trace to count its lines would cost more than the rest of a re-fuse.
        """
        width = widget.content_size.width
        if width <= 0:
            return -1
        table, _blank, summary = trace.renderables
        # The table's natural width: its widest cell per column plus the padding between
        # columns. Comfortably narrower than the pane, no row wraps and the table takes a
        # line per row; near the edge, render it to count. The summary is wrapped as text.
        natural = sum(
            max([len(str(column.header)), *(len(str(cell)) for cell in column.cells)]) for column in table.columns
        ) + TRACE_PADDING * (len(table.columns) - 1)
        console = self.app.console
        if natural + 4 <= width:
            table_lines = 1 + table.row_count
        else:
            table_lines = len(console.render_lines(table, console.options.update_width(width), pad=False))
        return table_lines + 1 + len(summary.wrap(console, width))

    def _header(self, path: str, start: int, end: int, hit: ConsolidatedHit | None) -> Text:
        header = Text(f"{path}:{start}-{end}", no_wrap=True, overflow="ellipsis")
        if self.cut_at is not None:
            header.append(f" (to line {self.cut_at})", style="italic")
        if hit is not None and hit.context and hit.context != path:
            # The breadcrumb without the path the header starts with.
            crumb = hit.context.removeprefix(f"{path} > ")
            header.append(f"  {crumb}", style="dim")
        return header

    def clear(self, message: str = "") -> None:
        """Blank the pane, optionally showing ``message`` instead (e.g. "no results")."""
        self._syntax = None
        self._trace = None
        self.query_one("#preview-header", Static).update("")
        self.query_one("#preview-code", Static).update("")
        self.query_one("#preview-trace", Static).update("")
        self.query_one("#preview-message", Static).update(message)
        self.add_class("-empty")
        self.scroll_home(animate=False)

    # -- building blocks ------------------------------------------------------------------

    def _is_dark(self) -> bool:
        try:
            return self.app.current_theme.dark
        except Exception:  # no app yet: Textual's default theme is dark
            return True

    def _pick_theme(self) -> str:
        if self.theme is not None:
            return self.theme
        return "github-dark" if self._is_dark() else "default"

    def _build_syntax(self, path: str, text: str, first_line: int, start: int, end: int, query: str) -> Syntax:
        # Count lines on "\n" only, as editors and the chunker do (splitlines() would also
        # split on form feeds and other separators and shift the numbering).
        lines = [line.rstrip("\r") for line in text.split("\n")]
        if len(lines) > 1 and lines[-1] == "":
            lines.pop()
        last_line = first_line + max(0, len(lines) - 1)
        window_start = max(first_line, start - self.context_lines)
        window_end = max(window_start, min(last_line, end + self.context_lines))
        # A merged span can cover most of a file; highlighting all of it would cost far more
        # than a screenful (hundreds of ms for 600 lines) for lines seldom scrolled to.
        self.cut_at = None
        if window_end - window_start + 1 > self.max_lines:
            window_end = window_start + self.max_lines - 1
            self.cut_at = window_end
        # Keep some lines above the window for the lexer, drop everything below it.
        code_first = max(first_line, window_start - LEXER_LOOKBEHIND)
        code_lines = lines[code_first - first_line : window_end - first_line + 1]
        syntax = Syntax(
            "\n".join(code_lines),
            lexer_for(path, text),
            theme=self._pick_theme(),
            line_numbers=True,
            start_line=code_first,
            # line_range is relative to the code handed over, numbers are absolute.
            line_range=(window_start - code_first + 1, window_end - code_first + 1),
            highlight_lines=set(range(start, end + 1)),
            tab_size=4,
            # Long lines wrap (the gutter stays blank on the continuation rows): cut at the
            # pane's edge, the end of a 300-column line could not be read at all.
            word_wrap=True,
        )
        span_background = Style(bgcolor="grey23" if self._is_dark() else "grey93")
        terms = query_terms(query)
        for number in range(window_start, window_end + 1):
            index = number - code_first  # 0-based in code_lines
            line = code_lines[index] if index < len(code_lines) else ""
            row = index + 1  # stylize_range rows are 1-based in the code
            if start <= number <= end and line:
                # Under the syntax colours, so tokens keep their foreground.
                syntax.stylize_range(span_background, (row, 0), (row, len(line)), style_before=True)
            for col_start, col_end in term_ranges(line, terms):
                syntax.stylize_range(TERM_STYLE, (row, col_start), (row, col_end))
        return syntax

    @staticmethod
    def build_trace(hit: ConsolidatedHit, arms: list[str]) -> Group:
        """The fused trace: one row per arm (rank, native score, RRF share, ``top 5`` when it
        votes for the hit, as ``agree`` counts) and a summary (``agree 1/4 (bm25)``).

        Arms in ``arms`` that did not rank the hit are shown dimmed as ``absent``; arms that
        contributed but are not in ``arms`` are appended so no contribution is hidden.
        """
        table = Table(
            box=None,
            show_edge=False,
            pad_edge=False,
            header_style="bold",
            padding=(0, TRACE_PADDING, 0, 0),
        )
        table.add_column("arm")
        table.add_column("rank", justify="right")
        table.add_column("score", justify="right")
        table.add_column("rrf", justify="right")
        table.add_column("vote")
        by_arm = {c.arm: c for c in hit.contributors}
        listed = list(arms) + [c.arm for c in hit.contributors if c.arm not in arms]
        voting = set(voters(hit))
        votes = [arm for arm in listed if arm in voting]  # in the trace's order
        for arm in listed:
            contribution = by_arm.get(arm)
            if contribution is None:
                table.add_row(arm, "absent", "", "", "", style="dim")
            else:
                table.add_row(
                    arm,
                    str(contribution.rank),
                    _fmt_score(contribution.score),
                    _fmt_score(contribution.contribution),
                    f"top {AGREEMENT_DEPTH}" if arm in votes else "",
                )
        summary = Text.assemble(
            ("score ", "dim"),
            (_fmt_score(hit.score), "bold"),
            ("  agree ", "dim"),
            f"{hit.agreement}/{len(listed)}",
            (f" ({', '.join(votes)})" if votes else "", "dim"),
            ("  conf ", "dim"),
            hit.confidence,
            ("  via ", "dim"),
            ", ".join(hit.provenance) or "—",
        )
        rescoring = describe_rescoring(hit)
        if rescoring is not None:
            summary.append("\n")
            summary.append_text(rescoring)
        return Group(table, Text(""), summary)
