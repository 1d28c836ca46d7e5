"""The budget packer: a file cut along its definitions into chunks of at most ``window`` lines.

Small neighbouring units (definitions with their leading comments, and the code between
them) are packed together up to the budget; a longer definition with nested definitions (a
class) is cut the same way inside; a longer leaf definition (a long function) is split into
overlapping *pieces* that all name it and record its whole span (``Chunk.piece_of``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..base.types import Chunk
from .comments import MAX_DOCSTRING, comment_block
from .reading import MAX_SIGNATURE
from .specs import Spec
from .windows import even_spans, window_chunks

#: The kind of one piece of a definition cut for being over budget (``Chunk.kind``).
PIECE = "piece"
#: Caps on the joined signatures / docstrings of a chunk holding several definitions.
_MAX_SIGNATURES = 4 * MAX_SIGNATURE
_MAX_DOCSTRINGS = 2 * MAX_DOCSTRING


@dataclass
class _Unit:
    """A definition in the nesting tree the budget walks (lines 1-based, comment included)."""

    start: int
    end: int
    chunk: Chunk
    children: list[_Unit]


class Budget:
    """Cuts one file along its definitions under a budget of ``window`` lines a chunk.

    Why (issue #5, measured in the README): one chunk per definition lets tiny ``__init__``s
    win on cosine while long functions lose their middle; 40-line windows cut functions in
    two. Packing small neighbours and splitting only what is too long keeps every chunk
    near the budget and every short definition whole.
    """

    def __init__(self, path: str, lines: list[str], language: str, spec: Spec, window: int, overlap: int):
        self.path, self.lines, self.language, self.spec = path, lines, language, spec
        self.window, self.overlap = window, overlap
        self.out: list[Chunk] = []

    def chunks(self, defs: list[Chunk]) -> list[Chunk]:
        self._pack(1, len(self.lines), self._tree(defs), self.path, None)
        return fold_trivial(self.out, self.lines)

    def _tree(self, defs: list[Chunk]) -> list[_Unit]:
        """Definitions nested by span; each starts at the comment block right above it."""
        roots: list[_Unit] = []
        stack: list[_Unit] = []
        for d in sorted(defs, key=lambda c: (c.start_line, -c.end_line)):
            while stack and not (stack[-1].chunk.start_line <= d.start_line and d.end_line <= stack[-1].end):
                stack.pop()
            top = comment_block(self.lines, d.start_line - 1, self.spec)[0] + 1
            unit = _Unit(top, d.end_line, d, [])
            (stack[-1].children if stack else roots).append(unit)
            stack.append(unit)
        return roots

    def _blank(self, lo: int, hi: int) -> bool:
        return all(not self.lines[i - 1].strip() for i in range(lo, hi + 1))

    def _pack(self, lo: int, hi: int, units: list[_Unit], scope: str, header: _Unit | None) -> None:
        """Cover lines ``lo..hi``, whose definitions are ``units``, with chunks in budget.

        ``scope`` is the breadcrumb of what encloses the range; ``header`` the definition whose
        body is being cut (its header lines go to the first chunk, with its name).
        """
        # Lay the range out as alternating stretches of code and definitions.
        parts: list[tuple[int, int, _Unit | None]] = []
        cursor = lo
        for u in units:
            start = max(u.start, cursor)
            if u.end < start:
                continue  # folded into its predecessor (two declarators sharing a line)
            if start > cursor:
                parts.append((cursor, start - 1, None))
            parts.append((start, u.end, u))
            cursor = u.end + 1
        if cursor <= hi:
            parts.append((cursor, hi, None))

        run: list[tuple[int, int, _Unit | None]] = []
        for start, end, unit in parts:
            if self._blank(start, end):
                if run:
                    run.append((start, end, unit))
                continue
            if end - start + 1 > self.window:
                header = self._emit(run, scope, header)
                run = []
                if unit is None:
                    self._long_code(start, end, scope, header)
                    header = None  # its first window carries the header's name
                elif unit.children:
                    self._pack(start, end, unit.children, unit.chunk.context, unit)
                else:
                    self._pieces(start, end, unit)
            elif run and end - run[0][0] + 1 <= self.window:
                run.append((start, end, unit))
            else:
                header = self._emit(run, scope, header)
                run = [(start, end, unit)]
        self._emit(run, scope, header)

    def _emit(self, run: list[tuple[int, int, _Unit | None]], scope: str, header: _Unit | None) -> _Unit | None:
        """One chunk of a packed run; returns the header still waiting for its chunk."""
        if not run:
            return header
        start, end = run[0][0], run[-1][1]
        while end > start and not self.lines[end - 1].strip():
            end -= 1  # blank lines between chunks belong to neither
        defs = [u.chunk for _, _, u in run if u is not None]
        named = ([header.chunk] if header is not None else []) + defs
        context = _join_names(header.chunk.context if header is not None else scope, defs)
        if named:
            self.out.append(
                self._chunk(
                    start,
                    end,
                    context=context,
                    kind=self.spec.kind,
                    symbol=" ".join(c.symbol for c in named),
                    signature=_capped("\n".join(c.signature for c in named if c.signature), _MAX_SIGNATURES),
                    docstring=_capped("\n\n".join(c.docstring for c in named if c.docstring), _MAX_DOCSTRINGS),
                )
            )
        else:
            self.out.extend(
                window_chunks(self.path, self.lines, self.language, context, start, end, self.window, self.overlap)
            )
        return None

    def _long_code(self, start: int, end: int, scope: str, header: _Unit | None) -> None:
        """Code between definitions longer than the budget: windows (the first one carries
        the pending header's name)."""
        windows = window_chunks(
            self.path, self.lines, self.language, scope, start, end, self.window, self.overlap, True
        )
        if header is not None:
            h = header.chunk
            windows[0] = replace(
                windows[0], kind=self.spec.kind, symbol=h.symbol, signature=h.signature, docstring=h.docstring
            )
        self.out.extend(windows)

    def _pieces(self, start: int, end: int, unit: _Unit) -> None:
        """A leaf definition over budget: overlapping pieces that all name it. Only the first
        is a symbol document (see :func:`core.arms.symbols.include`)."""
        d = unit.chunk
        for s, e in even_spans(end - start + 1, self.window, self.overlap):
            s, e = s + start - 1, e + start - 1
            while e > s and not self.lines[e - 1].strip():
                e -= 1
            self.out.append(
                self._chunk(
                    s,
                    e,
                    context=d.context,
                    kind=PIECE,
                    symbol=d.symbol,
                    signature=d.signature,
                    docstring=d.docstring if s == start else "",
                    piece_of=(start, end),
                )
            )

    def _chunk(self, start: int, end: int, **fields) -> Chunk:
        """A chunk of lines ``start..end`` of this file with the given fields."""
        return Chunk(
            path=self.path,
            start_line=start,
            end_line=end,
            text="\n".join(self.lines[start - 1 : end]),
            language=self.language,
            **fields,
        )


#: A line with no name or code of its own: closing brackets (``}``, ``});``, ``)``, ``end``),
#: a default export of a name, a bare re-export, ``module.exports = X;``, a package or
#: namespace line (``package main``, ``namespace App\Http;``, ``<?php``).
_TRIVIAL_LINE = re.compile(
    r"""\s*(?:
        [\])};,]*
      | end\b[\s;]*
      | export\s+default\s+[\w$.]+\s*;?
      | export\s+(?:type\s+)?(?:\{[^}]*\}|\*(?:\s+as\s+[\w$]+)?)(?:\s+from\s+\S+)?\s*;?
      | module\.exports\s*=\s*[\w$.]+\s*;?
      | (?:package|namespace)\s+[\w.\\]+\s*;?
      | <\?php
    )\s*""",
    re.VERBOSE,
)


def trivial(text: str) -> bool:
    """Whether a stretch of code has no name or code of its own (every line blank or
    :data:`_TRIVIAL_LINE`): a lone ``}``, ``}`` then ``export default X;``, a bare re-export."""
    return all(_TRIVIAL_LINE.fullmatch(line) for line in text.splitlines())


def fold_trivial(chunks: list[Chunk], lines: list[str]) -> list[Chunk]:
    """Fold each nameless chunk with no code of its own into its neighbour: the chunk before
    it (extended over it), or the one after it for a file's first. The neighbour goes over
    the budget by those lines only; a piece's whole definition (``piece_of``) grows with it,
    in every piece, so they still show as one hit.

    Issue #42: the budget leaves such a stretch alone when the unit beside it is long (the
    ``}`` closing a class after a method cut into pieces, with ``export default X;``;
    ``package main`` above a long first type), and it then came up as a hit or a runner-up
    of its own. A file that is nothing else (a barrel of re-exports) keeps it: it is the file.
    """
    if len(chunks) < 2:
        return chunks
    ordered = sorted(chunks, key=lambda c: (c.start_line, c.end_line))
    out: list[Chunk] = []
    grown: dict[tuple[int, int], tuple[int, int]] = {}
    pending: Chunk | None = None  # trivial chunks before the first kept one
    for c in ordered:
        if not c.symbol and trivial(c.text):
            if not out:
                pending = pending or c
            elif c.end_line > out[-1].end_line:
                out[-1] = _spanning(out[-1], out[-1].start_line, c.end_line, lines, grown)
            continue
        if pending is not None:
            c = _spanning(c, min(pending.start_line, c.start_line), c.end_line, lines, grown)
            pending = None
        out.append(c)
    if not out:
        return chunks
    if grown:
        out = [replace(c, piece_of=grown[c.piece_of]) if c.piece_of in grown else c for c in out]
    return out


def _spanning(chunk: Chunk, start: int, end: int, lines: list[str], grown: dict) -> Chunk:
    """``chunk`` over lines ``start..end``; a piece's definition span grows to hold them
    (``grown``: each piece's ``piece_of`` as made -> the span it grew to)."""
    if chunk.piece_of is not None:
        whole = grown.get(chunk.piece_of, chunk.piece_of)
        grown[chunk.piece_of] = (min(whole[0], start), max(whole[1], end))
    return replace(chunk, start_line=start, end_line=end, text="\n".join(lines[start - 1 : end]))


def _join_names(scope: str, defs: list[Chunk]) -> str:
    """Breadcrumb of a packed chunk: one definition reads as its own, several as ``a, b``."""
    if len(defs) == 1 and defs[0].context.startswith(scope):
        return defs[0].context
    if not defs:
        return scope
    # Definitions sharing a scope the packing does not know of (a C# namespace, a Go
    # receiver) keep it: `path > Geometry > A, B`, not `path > A, B`.
    parents = {c.context[: -len(c.symbol) - 3] if c.context.endswith(" > " + c.symbol) else scope for c in defs}
    if len(parents) == 1:
        parent = parents.pop()
        if parent.startswith(scope):
            scope = parent
    return _capped(scope + " > " + ", ".join(c.symbol for c in defs), MAX_SIGNATURE)


def _capped(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
