"""Ignore files (``.gitignore``, ``.ignore``, ``.ranklensignore``), matched the way git matches them."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable

from .results import Rule

# Ignore files read while walking; git mode reads only the last two (git has already
# applied every .gitignore itself).
_GITIGNORE = ".gitignore"
_EXTRA_IGNORE_FILES: tuple[str, ...] = (".ignore", ".ranklensignore")
_WALK_IGNORE_FILES: tuple[str, ...] = (_GITIGNORE, *_EXTRA_IGNORE_FILES)


# Name of the regex group pathspec uses to mark a match ending at a directory boundary.
_DIR_MARK = "ps_d"


class _IgnoreFile:
    """The patterns of one directory's ignore files, matched the way git matches them.

    Parsing is pathspec's (``GitIgnoreSpec``: escapes, ``**``, anchoring, trailing
    spaces). Evaluation is git's own algorithm rather than ``GitIgnoreSpec.check_file``:
    the last pattern that matches the path *itself* decides, and a directory that ends
    up excluded is never entered, so nothing below it can be re-included (not even by
    a deeper ignore file). ``check_file`` cannot give that verdict for directories: it
    ranks a pattern's match on a parent directory below a match on the file, so e.g.
    ``*`` then ``!*/`` reports every directory as ignored.

    pathspec (>= 1.0) compiles each pattern to a regex whose optional ``ps_d`` group
    marks a match that stopped at a directory boundary: ``foo`` becomes
    ``^(?:.+/)?foo(?:(?P<ps_d>/)|$)``, ``foo/`` ``^(?:.+/)?foo(?P<ps_d>/)``, ``*/``
    ``(?P<ps_d>/)``; patterns without the group (``.`` for ``*``, ``^deep/`` for
    ``deep/**``) match everything they find. A full match on the path (or, for
    directory-only patterns, on the path plus "/") is a match on the path itself.

    Each pattern keeps the :class:`Rule` it came from (file, line, text), so the verdict
    names the line that decided.
    """

    __slots__ = ("any_full", "any_loose", "any_marked", "rules")

    def __init__(self, patterns: list[tuple[bool, re.Pattern[str], Rule]]) -> None:
        # Newest first: the first self-match found is the last one in file order.
        self.rules: list[tuple[bool, re.Pattern[str], bool, Rule]] = [
            (include, rx, _DIR_MARK in rx.groupindex, rule) for include, rx, rule in reversed(patterns)
        ]
        # Most paths match none of a file's patterns, and every path below a folder is asked
        # about each of its ancestors' files (the kernel's top .gitignore has 92): a file of
        # several patterns first asks them all at once, as alternations that match wherever
        # one of its patterns could, and its patterns one by one only then.
        self.any_full = self.any_loose = self.any_marked = None
        if len(self.rules) >= _AT_ONCE:
            self.any_full = _either(rx for _, rx, _, _ in self.rules)
            self.any_loose = _either(rx for _, rx, marks, _ in self.rules if not marks)
            self.any_marked = _either(rx for _, rx, marks, _ in self.rules if marks)

    def verdict(self, rel: str, is_dir: bool) -> tuple[bool, Rule] | None:
        """(True: ignored, False: negated; and the deciding rule), or None when no pattern
        is about ``rel``."""
        if (
            self.any_full is not None
            and self.any_full.fullmatch(rel) is None
            and (self.any_loose is None or self.any_loose.search(rel) is None)
            and not (
                is_dir
                and self.any_marked is not None
                and (self.any_marked.fullmatch(rel + "/") or self.any_marked.match(rel + "/", len(rel)))
            )
        ):
            return None
        for include, rx, marks_dirs, rule in self.rules:
            if rx.fullmatch(rel) is not None:
                return include, rule
            if not marks_dirs:
                if rx.search(rel) is not None:  # "*", "**" and "dir/**" forms
                    return include, rule
            elif is_dir:
                slashed = rel + "/"
                # fullmatch: "foo/", "a/*/"; match at the slash: "*/" (any directory).
                m = rx.fullmatch(slashed) or rx.match(slashed, len(rel))
                if m is not None and m.group(_DIR_MARK) is not None:
                    return include, rule
        return None


#: A file with this many patterns or more is first asked with all of them at once.
_AT_ONCE = 4
#: How pathspec starts a pattern that matches at any depth (``foo``, ``*.o``, ``**/bar``).
_ANY_DEPTH = "^(?:.+/)?"


def _either(patterns: Iterable[re.Pattern[str]]) -> re.Pattern[str] | None:
    """One pattern matching wherever one of ``patterns`` does (their ``ps_d`` groups made
    plain: a name may not be defined twice, and this answers only whether one matches)."""
    patterns = list(patterns)
    if not patterns or len({rx.flags for rx in patterns}) != 1:
        return None  # (one set of flags: pathspec's are the default)
    plain = [rx.pattern.replace("(?P<" + _DIR_MARK + ">", "(?:") for rx in patterns]
    # Those that match at any depth (most) share their leading "any folders": matched once,
    # not once a pattern, ahead of their alternation.
    deep = [p[len(_ANY_DEPTH) :] for p in plain if p.startswith(_ANY_DEPTH)]
    parts = [f"(?:{p})" for p in plain if not p.startswith(_ANY_DEPTH)]
    if deep:
        parts.append(_ANY_DEPTH + "(?:" + "|".join(f"(?:{p})" for p in deep) + ")")
    return re.compile("|".join(parts), patterns[0].flags)


# Each ignore layer is (directory prefix relative to root, "" or "a/b/", its patterns).
_Layer = tuple[str, _IgnoreFile]


def _normalise_line(line: str) -> str:
    # pathspec turns "x/**/" (directories strictly inside x) into "x/" (x itself);
    # "x/**/*/" is the same set of directories in a form it compiles faithfully.
    stripped = line.rstrip()
    if stripped.endswith("/**/") and stripped.lstrip("!/") != "**/":
        return stripped + "*/"
    return line


def _compile(lines: Iterable[tuple[str, Rule]]) -> _IgnoreFile | None:
    """Compile gitignore lines, each with the rule naming it; a malformed line is dropped
    (as git does), not fatal. None when no line is a pattern."""
    import pathspec  # ~30 ms to import: a process that lists nothing does not

    patterns: list[tuple[bool, re.Pattern[str], Rule]] = []
    for line, rule in lines:
        if not line or line.startswith("#"):
            continue
        try:
            spec = pathspec.GitIgnoreSpec.from_lines([_normalise_line(line)])
        except Exception:  # pathspec raises its own error types for malformed patterns
            continue
        for p in spec.patterns:
            if p.include is not None and p.regex is not None:
                patterns.append((bool(p.include), p.regex, rule))
    # Comments and blank lines compile to no-op patterns; an empty layer costs time.
    return _IgnoreFile(patterns) if patterns else None


def _read_ignore_lines(
    dir_path: str, names: Iterable[str], rel_dir: str, digests: dict[str, str] | None = None
) -> list[tuple[str, Rule]]:
    """The lines of one directory's ignore files, later files taking precedence, each with
    its rule (file relative to the root, line number, the line as written). ``digests``
    receives each file's :func:`digest` under its path relative to the root."""
    lines: list[tuple[str, Rule]] = []
    for name in names:
        try:
            with open(os.path.join(dir_path, name), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        source = f"{rel_dir}/{name}" if rel_dir else name
        if digests is not None:
            digests[source] = digest(text)
        lines.extend(
            (line, Rule("ignore", source, number, line.strip()))
            for number, line in enumerate(text.splitlines(), start=1)
        )
    return lines


def digest(text: str) -> str:
    """What an ignore file's text is compared by (core.index.freshness: the text a listing used)."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def _extra_layer(root: str, rel_dir: str, layers: tuple[_Layer, ...], names: tuple[str, ...]) -> tuple[_Layer, ...]:
    """``layers`` plus the ignore files ``names`` of directory ``rel_dir``, if it has any."""
    abs_dir = os.path.join(root, rel_dir) if rel_dir else root
    present = [n for n in names if os.path.isfile(os.path.join(abs_dir, n))]
    if present:
        spec = _compile(_read_ignore_lines(abs_dir, present, rel_dir))
        if spec is not None:
            return (*layers, (rel_dir + "/" if rel_dir else "", spec))
    return layers
