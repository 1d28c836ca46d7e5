"""Overlapping line windows: the chunks of a file without a grammar, and the cut of whatever
the budget finds too long.

Defaults (window 40, overlap 10). Windows were measured first on the CPython 3.11 stdlib
top level, whose 7 808 definitions have a median of 8 lines (p75 19, p90 42): 40/10 gives
4 436 windows for 132k lines (1.32x the text) and 80% of definitions lie whole inside some
window. 40/0 costs 1.00x but only 69% lie whole; 40/20 reaches 85% for 1.96x the text;
20/5 doubles the windows yet only 64% fit; 60/15 and 80/20 fit 87-91% but a median 8-line
function is then an eighth of its window, diluting BM25 and embedding scores. The budget
keeps 40 and makes "lies whole" true of every definition up to 40 lines; how it compares
with plain windows and plain definitions per arm is in the README (issue #5, step 2).
"""

from __future__ import annotations

from ..base.types import DEFAULT_OVERLAP, DEFAULT_WINDOW, Chunk

# Why 40/10: see "Defaults" in the module docstring (chunk count vs whole-definition coverage).

#: The kind of a window chunk (``Chunk.kind``).
WINDOW = "window"


def check_window(window: int, overlap: int) -> None:
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    if not 0 <= overlap < window:
        raise ValueError(f"overlap must be in [0, window), got {overlap} for window {window}")


def line_windows(n_lines: int, window: int = DEFAULT_WINDOW, overlap: int = DEFAULT_OVERLAP) -> list[tuple[int, int]]:
    """The 1-based inclusive ``(start, end)`` line spans of the windows over a file.

    Windows start at lines ``1, 1 + step, 1 + 2*step, …`` with ``step = window - overlap``
    (predictable docids, and every pair of neighbours shares exactly ``overlap`` lines).
    The last window is cut at the last line, and none starts once a window has reached
    the end, so there is no window lying wholly inside its predecessor.

    Parameters
    ----------
    n_lines : int
        Number of lines in the file.
    window : int
        Lines per window, >= 1.
    overlap : int
        Lines shared by consecutive windows, ``0 <= overlap < window``.

    Returns
    -------
    list[tuple[int, int]]
        Empty when ``n_lines`` is 0.
    """
    check_window(window, overlap)
    step = window - overlap
    spans = []
    start = 1
    while start <= n_lines:
        end = min(start + window - 1, n_lines)
        spans.append((start, end))
        if end == n_lines:
            break
        start += step
    return spans


def even_spans(n_lines: int, window: int = DEFAULT_WINDOW, overlap: int = DEFAULT_OVERLAP) -> list[tuple[int, int]]:
    """As few spans of at most ``window`` lines as cover ``n_lines``, of near-equal length,
    neighbours sharing exactly ``overlap`` lines.

    Used to cut one long definition: :func:`line_windows` would end on a stub (41 lines give
    1-40 and 31-41, whose last piece adds one line); this gives 1-25 and 16-41.
    """
    check_window(window, overlap)
    if n_lines <= window:
        return [(1, n_lines)] if n_lines > 0 else []
    step = window - overlap
    count = -(-(n_lines - overlap) // step)  # ceil: pieces needed at full size
    spans = []
    for i in range(count):
        start = 1 + (i * (n_lines - overlap)) // count
        end = overlap + ((i + 1) * (n_lines - overlap)) // count
        spans.append((start, min(end, n_lines)))
    return spans


def window_chunks(
    path: str,
    lines: list[str],
    language: str,
    context: str,
    lo: int,
    hi: int,
    window: int,
    overlap: int,
    even: bool = False,
) -> list[Chunk]:
    """Window chunks over lines ``lo..hi`` (1-based, inclusive); ``even``: see :func:`even_spans`."""
    out = []
    spans = even_spans(hi - lo + 1, window, overlap) if even else line_windows(hi - lo + 1, window, overlap)
    for start, end in spans:
        start, end = start + lo - 1, end + lo - 1
        out.append(
            Chunk(
                path=path,
                start_line=start,
                end_line=end,
                text="\n".join(lines[start - 1 : end]),
                language=language,
                context=context,
                kind=WINDOW,
            )
        )
    return out


def split_lines(text: str) -> list[str]:
    """A file's lines, split on ``\\n`` only (as tree-sitter and editors count them), without
    their trailing ``\\r``."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline ending the last line does not start another
    if "\r" not in text:
        return lines
    return [line[:-1] if line.endswith("\r") else line for line in lines]
