"""File discovery: which files under a root are worth indexing, and how to read them.

:func:`discover` does only cheap checks (names and ``stat``) so it can run on every
refresh; content checks (binary sniffing, private-key detection, decoding) live in
:func:`read_text`, which the indexer calls only for new or changed files.

Listing modes
-------------
* Inside a git work tree the list is git's own: tracked files plus untracked files that
  are not ignored (``git ls-files --cached --others --exclude-standard``), so every
  ignore source git knows (nested ``.gitignore``, ``.git/info/exclude``, the global
  excludes file) is honoured exactly.
* Elsewhere, or when git is missing or fails, the tree is walked with ``os.scandir``,
  honouring ``.gitignore`` files at every level via ``pathspec.GitIgnoreSpec``.

In both modes ``.ignore`` and ``.ranklensignore`` files (gitignore syntax, any level),
:data:`BUILTIN_EXCLUDED_DIRS`, hidden files and folders (names starting with a dot),
secret-looking (:func:`core.secrets.is_secret_name`) and known-binary file names, the size
limit and the caller's :class:`DiscoveryOptions` apply on top. ``no_ignore`` and ``hidden``
mean what ripgrep's ``--no-ignore`` and ``--hidden`` mean: no ignore file of any kind is
read (nor git's own: the listing then holds untracked ignored files too), and hidden
entries are kept.

Every entry passed over is counted against the rule that decided it (:class:`Rule`: an
ignore file's path, line and pattern, an ``exclude_globs`` entry, or a built-in rule), so
a tree that looks empty can say why (:attr:`DiscoveryResult.excluded`,
:meth:`DiscoveryResult.warning`); :func:`explain` answers for one path.

Symlinks whose target resolves outside the root are never followed. The walk follows
directory links that stay inside, after the real tree, so content reachable both ways
is listed once, under its real path; git mode, like git, lists links but never
descends through a directory link.
"""

from __future__ import annotations

import os
import re
import stat as stat_mod
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import pathspec

from .secrets import is_secret_name, redact

__all__ = [
    "BINARY_EXTENSIONS",
    "BUILTIN_EXCLUDED_DIRS",
    "DiscoveryOptions",
    "DiscoveryResult",
    "Exclusion",
    "FileEntry",
    "Loaded",
    "Rule",
    "Verdict",
    "discover",
    "explain",
    "load_text",
    "read_text",
]

#: Directory basenames never descended into, at any depth below the root: version
#: control metadata, dependency trees, virtualenvs, caches and build output. They are
#: large, generated or vendored, and drown real matches. Deliberately *not* listed:
#: ``env`` (a common source package name), ``.vscode`` (shared editor config worth
#: searching with ``hidden``) and ``coverage`` (coverage.py's own package is called that;
#: generated HTML reports land in ``htmlcov``). ``*.egg-info`` is matched by suffix, see
#: :data:`_EXCLUDED_DIR_SUFFIXES`. These apply with ``hidden`` and ``no_ignore`` too.
BUILTIN_EXCLUDED_DIRS: frozenset[str] = frozenset({
    # version control
    ".git", ".hg", ".svn", ".bzr",
    # dependencies and virtualenvs
    "node_modules", "bower_components", ".venv", "venv", "site-packages", ".eggs",
    # caches
    "__pycache__", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".cache", ".gradle", ".terraform",
    # build output
    "dist", "build", "target", ".next", ".nuxt", "htmlcov",
    # IDE state (per-user, machine generated)
    ".idea",
})
_EXCLUDED_DIR_SUFFIXES: tuple[str, ...] = (".egg-info",)

#: Extensions (lowercase, with the dot) of formats that are never text: skipped by name
#: without opening the file.
BINARY_EXTENSIONS: frozenset[str] = frozenset({
    # images
    ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".icns", ".tif", ".tiff", ".webp",
    ".avif", ".heic", ".psd", ".xcf", ".svgz",
    # documents
    ".pdf", ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".odp",
    # archives and packages
    ".zip", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".lz", ".lzma", ".7z", ".rar", ".tar",
    ".whl", ".egg", ".jar", ".war", ".ear", ".deb", ".rpm", ".apk", ".ipa", ".dmg",
    ".iso", ".img", ".msi", ".nupkg", ".gem",
    # compiled code and objects
    ".so", ".dll", ".dylib", ".exe", ".bin", ".o", ".obj", ".a", ".lib", ".pyc", ".pyo",
    ".pyd", ".class", ".wasm", ".mo", ".lockb",
    # fonts
    ".woff", ".woff2", ".ttf", ".otf", ".eot",
    # audio and video
    ".mp3", ".mp4", ".m4a", ".wav", ".flac", ".ogg", ".opus", ".aac", ".avi", ".mov",
    ".mkv", ".webm", ".flv", ".wmv", ".swf",
    # databases and data/model blobs
    ".sqlite", ".sqlite3", ".db", ".npy", ".npz", ".pkl", ".pickle", ".h5", ".hdf5",
    ".parquet", ".feather", ".arrow", ".onnx", ".pt", ".pth", ".ckpt", ".safetensors",
    ".tflite", ".pb",
})

# Ignore files read while walking; git mode reads only the last two (git has already
# applied every .gitignore itself).
_GITIGNORE = ".gitignore"
_EXTRA_IGNORE_FILES: tuple[str, ...] = (".ignore", ".ranklensignore")
_WALK_IGNORE_FILES: tuple[str, ...] = (_GITIGNORE, *_EXTRA_IGNORE_FILES)

_SNIFF_BYTES = 8192

# Environment variables that would point git at another repository than root's.
_GIT_ENV_OVERRIDES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX")
_GIT_TIMEOUT_S = 60.0

# Skip reasons (the second item of ``DiscoveryResult.skipped``).
REASON_SECRET = "secret"
REASON_BINARY = "binary"
REASON_TOO_LARGE = "too large"
REASON_OUTSIDE_ROOT = "symlink outside root"
REASON_UNREADABLE_DIR = "unreadable directory"
REASON_PRIVATE_KEY = "private key"
REASON_CREDENTIALS = "credentials only"

# Built-in rules that pass entries over without a per-path skip report: ranklens's own
# scope, not a file the user may have expected to be indexed one by one.
RULE_EXCLUDED_DIR = "excluded directory"
RULE_HIDDEN = "hidden"
RULE_EXTENSIONS = "extension filter"

#: When discovery keeps no file, or passes over more entries than this share of all it met
#: (kept files plus entries passed over; a directory not entered counts once), and at least
#: :data:`WARN_MIN_ENTRIES` of them, :meth:`DiscoveryResult.warning` says which rule did it.
WARN_SHARE = 0.5
WARN_MIN_ENTRIES = 20


@dataclass(frozen=True)
class DiscoveryOptions:
    """What to look for, on top of the built-in rules (see the module docstring).

    Attributes
    ----------
    extensions : frozenset of str or None
        Extensions to keep (``".py"``; a missing dot and case are forgiven, multi-dot
        entries such as ``".d.ts"`` work). None keeps every text file.
    exclude_dirs : frozenset of str
        Extra directory basenames never entered, added to BUILTIN_EXCLUDED_DIRS.
    exclude_globs : tuple of str
        gitignore-syntax patterns relative to the root (order matters: negations).
    include_basenames : frozenset of str
        Names kept although ``extensions`` would drop them (``"Makefile"``). They do
        not override the secret, binary or size rules.
    max_bytes : int
        Larger files are skipped as ``"too large"``.
    hidden : bool or None
        Keep hidden files and folders (ripgrep's ``--hidden``). None is False here; the
        indexer reads None as "as the index was last built" (:mod:`core.indexer`).
    no_ignore : bool or None
        Read no ignore file (``.gitignore``, ``.ignore``, ``.ranklensignore``, git's
        ``info/exclude`` and global excludes; ripgrep's ``--no-ignore``). The built-in
        rules and ``exclude_globs`` still apply. None as for ``hidden``.
    """

    extensions: frozenset[str] | None = None
    exclude_dirs: frozenset[str] = frozenset()
    exclude_globs: tuple[str, ...] = ()
    include_basenames: frozenset[str] = frozenset()
    max_bytes: int = 1 << 20
    hidden: bool | None = None
    no_ignore: bool | None = None


@dataclass(frozen=True)
class FileEntry:
    """A file worth indexing: POSIX path relative to the root, size and mtime."""

    path: str
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class Rule:
    """What decided that an entry is passed over.

    Attributes
    ----------
    kind : str
        ``"ignore"`` (a pattern of an ignore file), ``"option"`` (an ``exclude_globs``
        entry) or ``"builtin"``.
    name : str
        The ignore file (relative to the root, or absolute for git's global excludes),
        ``"exclude_globs"``, or the built-in rule: ``"excluded directory"``, ``"hidden"``,
        ``"secret"``, ``"binary"``, ``"too large"``, ``"extension filter"``,
        ``"symlink outside root"``, ``"unreadable directory"``.
    line : int
        1-based line of the pattern in the ignore file (position in ``exclude_globs``);
        0 for a built-in rule.
    pattern : str
        The pattern as written; for a built-in rule its detail (the directory name, the
        secret-name rule, the size limit …) or "".
    """

    kind: str
    name: str
    line: int = 0
    pattern: str = ""

    def __str__(self) -> str:
        if self.kind == "ignore":
            return f"{self.name}:{self.line}: {self.pattern}"
        if self.kind == "option":
            return f"exclude_globs[{self.line}]: {self.pattern}"
        return f"{self.name} ({self.pattern})" if self.pattern else self.name

    @property
    def hint(self) -> str:
        """How to index what the rule passes over anyway ("" when nothing should)."""
        if self.kind == "ignore":
            return "--no-ignore reads no ignore file"
        if self.name == RULE_HIDDEN:
            return "--hidden includes hidden files and folders"
        return ""

    def to_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "line": self.line, "pattern": self.pattern, "rule": str(self)}


@dataclass
class Exclusion:
    """How many entries one rule passed over: files, and directories it kept discovery out
    of (whatever they hold: their files are not counted), with the first one met."""

    rule: Rule
    files: int = 0
    dirs: int = 0
    example: str = ""

    @property
    def entries(self) -> int:
        return self.files + self.dirs

    def to_dict(self) -> dict:
        return {**self.rule.to_dict(), "files": self.files, "dirs": self.dirs, "example": self.example}


@dataclass
class DiscoveryResult:
    """Files found (sorted by path), files passed over by built-in rules (sorted), and
    every entry passed over counted per deciding rule (most entries first)."""

    files: list[FileEntry]
    skipped: list[tuple[str, str]]
    excluded: list[Exclusion] = field(default_factory=list)
    mode: str = "walk"  # "git": git's listing; "walk": the tree walked

    @property
    def excluded_entries(self) -> int:
        return sum(e.entries for e in self.excluded)

    def warning(self, root: str = "the root") -> str | None:
        """One line saying why the tree looks empty or smaller than expected, or None.

        Given when no file is kept, or when more than :data:`WARN_SHARE` of the entries
        met (and at least :data:`WARN_MIN_ENTRIES`) were passed over; it names the rule
        that passed over the most (an ignore file's ``path:line: pattern``, or a built-in
        rule) and how to lift it.
        """
        passed = self.excluded_entries
        kept = len(self.files)
        if kept and (passed < WARN_MIN_ENTRIES or passed <= WARN_SHARE * (kept + passed)):
            return None
        if not self.excluded:
            return f"no files found under {root}" if not kept else None
        top = self.excluded[0]
        what = ", ".join(
            p for p in (_count(top.dirs, "directory", "directories"), _count(top.files, "file", "files")) if p
        )
        head = f"kept no files under {root}" if not kept else (
            f"kept {kept:,} files under {root} and passed over {passed:,} entries ({passed / (kept + passed):.0%})"
        )
        others = len(self.excluded) - 1
        tail = f"; {others} other rule{'s' if others != 1 else ''} in --json" if others else ""
        hint = f"; {top.rule.hint}" if top.rule.hint else ""
        example = f", e.g. {top.example}" if top.example else ""
        return f"{head}: {top.rule} passed over {what}{example}{hint}{tail}"


def _count(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}" if n else ""


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

    __slots__ = ("rules",)

    def __init__(self, patterns: list[tuple[bool, re.Pattern[str], Rule]]) -> None:
        # Newest first: the first self-match found is the last one in file order.
        self.rules: list[tuple[bool, re.Pattern[str], bool, Rule]] = [
            (include, rx, _DIR_MARK in rx.groupindex, rule) for include, rx, rule in reversed(patterns)
        ]

    def verdict(self, rel: str, is_dir: bool) -> tuple[bool, Rule] | None:
        """(True: ignored, False: negated; and the deciding rule), or None when no pattern
        is about ``rel``."""
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


def _read_ignore_lines(dir_path: str, names: Iterable[str], rel_dir: str) -> list[tuple[str, Rule]]:
    """The lines of one directory's ignore files, later files taking precedence, each with
    its rule (file relative to the root, line number, the line as written)."""
    lines: list[tuple[str, Rule]] = []
    for name in names:
        try:
            with open(os.path.join(dir_path, name), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        source = f"{rel_dir}/{name}" if rel_dir else name
        lines.extend(
            (line, Rule("ignore", source, number, line.strip()))
            for number, line in enumerate(text.splitlines(), start=1)
        )
    return lines


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


# Built-in rules met by name, made once (``Rule`` is the key of the per-rule counts).
_HIDDEN = Rule("builtin", RULE_HIDDEN, 0, "name starts with a dot")
_EXTENSION_FILTER = Rule("builtin", RULE_EXTENSIONS)
_BINARY_NAME = Rule("builtin", REASON_BINARY, 0, "known binary extension")
_OUTSIDE = Rule("builtin", REASON_OUTSIDE_ROOT)
_UNREADABLE_DIR = Rule("builtin", REASON_UNREADABLE_DIR)
# Rules whose every file is also reported by path in ``DiscoveryResult.skipped``.
_REPORTED = frozenset({REASON_SECRET, REASON_BINARY, REASON_TOO_LARGE, REASON_OUTSIDE_ROOT, REASON_UNREADABLE_DIR})


class _Rules:
    """Name-based decisions shared by both listing modes, each naming its :class:`Rule`."""

    def __init__(self, options: DiscoveryOptions) -> None:
        self.options = options
        self.excluded_dirs = BUILTIN_EXCLUDED_DIRS | options.exclude_dirs
        self.globs = _compile(
            (g, Rule("option", "exclude_globs", i, g)) for i, g in enumerate(options.exclude_globs, start=1)
        ) if options.exclude_globs else None
        self.hidden = bool(options.hidden)
        self.respect_ignores = not options.no_ignore
        self.max_bytes = options.max_bytes
        self.too_large = Rule("builtin", REASON_TOO_LARGE, 0, f"over {options.max_bytes:,} bytes")
        self.extensions: frozenset[str] | None = None
        self.multi_dot_extensions: tuple[str, ...] = ()
        if options.extensions is not None:
            # Accept "py" as well as ".py", any case; ".d.ts"-style entries need endswith.
            norm = {("" if e.startswith(".") else ".") + e.lower() for e in options.extensions}
            self.extensions = frozenset(norm)
            self.multi_dot_extensions = tuple(e for e in norm if e.count(".") > 1)
        self._name_cache: dict[str, Rule | None] = {}
        self._dir_rules: dict[str, Rule] = {}

    def ignored(self, rel: str, is_dir: bool, layers: tuple[_Layer, ...]) -> Rule | None:
        """The ``exclude_globs`` entry or ignore-file line excluding ``rel``, or None.

        Only called once every ancestor directory has passed, so the path's own
        matches decide; the deepest ignore file with an opinion wins.
        """
        if self.globs is not None:
            found = self.globs.verdict(rel, is_dir)
            if found is not None and found[0]:
                return found[1]
        for prefix, patterns in reversed(layers):
            found = patterns.verdict(rel[len(prefix):], is_dir)
            if found is not None:
                return found[1] if found[0] else None
        return None

    def dir_rule(self, name: str, rel: str, layers: tuple[_Layer, ...]) -> Rule | None:
        """The rule that keeps discovery out of directory ``rel``, or None to enter it."""
        if name in self.excluded_dirs or name.endswith(_EXCLUDED_DIR_SUFFIXES):
            rule = self._dir_rules.get(name)
            if rule is None:
                shown = name if name in self.excluded_dirs else "*" + name[name.rindex("."):]
                rule = self._dir_rules[name] = Rule("builtin", RULE_EXCLUDED_DIR, 0, shown)
            return rule
        if layers or self.globs is not None:
            rule = self.ignored(rel, True, layers)
            if rule is not None:
                return rule
        if not self.hidden and name.startswith("."):
            return _HIDDEN
        return None

    def name_verdict(self, name: str) -> Rule | None:
        """The rule passing a file over by its name, or None to keep it."""
        try:
            return self._name_cache[name]
        except KeyError:
            verdict = self._name_cache[name] = self._name_verdict(name)
            return verdict

    def _name_verdict(self, name: str) -> Rule | None:
        lower = name.lower()
        ext = os.path.splitext(lower)[1]
        # The caller's scope first: a file outside it is not "missing", so not reported.
        if self.extensions is not None and ext not in self.extensions:
            if name not in self.options.include_basenames and not (
                self.multi_dot_extensions and lower.endswith(self.multi_dot_extensions)
            ):
                return _EXTENSION_FILTER
        secret = is_secret_name(name)
        if secret:
            return Rule("builtin", REASON_SECRET, 0, secret)
        if ext in BINARY_EXTENSIONS:
            return _BINARY_NAME
        if not self.hidden and name.startswith("."):
            return _HIDDEN
        return None


class _Collector:
    def __init__(self, rules: _Rules) -> None:
        self.rules = rules
        self.files: list[FileEntry] = []
        self.skipped: list[tuple[str, str]] = []
        self.tally: dict[Rule, Exclusion] = {}

    def exclude(self, rule: Rule, rel: str, is_dir: bool = False) -> None:
        """Count ``rel`` as passed over by ``rule`` (and report it by path when the rule is
        one of the reported built-in ones)."""
        found = self.tally.get(rule)
        if found is None:
            found = self.tally[rule] = Exclusion(rule, example=rel)
        elif rel < found.example:
            found.example = rel  # the smallest path, not the first met: scan order varies
        if is_dir:
            found.dirs += 1
        else:
            found.files += 1
        if rule.kind == "builtin" and rule.name in _REPORTED:
            self.skipped.append((rel, rule.name))

    def consider(self, name: str, rel: str, layers: tuple[_Layer, ...],
                 get_stat: Callable[[], os.stat_result | None]) -> None:
        """Apply ignore, name and size rules to one candidate file.

        ``get_stat`` is called only when the name rules pass (most skips cost no
        syscall); it returns None, or raises OSError, to drop the file silently.
        """
        rules = self.rules
        if layers or rules.globs is not None:
            rule = rules.ignored(rel, False, layers)
            if rule is not None:
                self.exclude(rule, rel)
                return
        rule = rules.name_verdict(name)
        if rule is not None:
            self.exclude(rule, rel)
            return
        try:
            st = get_stat()
        except OSError:
            # Vanished between listing and stat (or turned unreachable): nothing to index.
            return
        if st is None:
            return
        if not stat_mod.S_ISREG(st.st_mode):
            return  # FIFOs, sockets, devices, submodule directories: never read them
        if st.st_size > rules.max_bytes:
            self.exclude(rules.too_large, rel)
            return
        self.files.append(FileEntry(rel, st.st_size, st.st_mtime_ns))

    def result(self, mode: str) -> DiscoveryResult:
        self.files.sort(key=lambda f: f.path)
        self.skipped.sort()
        excluded = sorted(self.tally.values(), key=lambda e: (-e.entries, str(e.rule)))
        return DiscoveryResult(self.files, self.skipped, excluded, mode)


# --- git mode ------------------------------------------------------------------------


def _git_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in _GIT_ENV_OVERRIDES}


def _git_exclude_args(dir_names: Iterable[str]) -> list[str]:
    # Tell git not to descend into untracked excluded directories (a venv or
    # node_modules missing from .gitignore can hold 100k files); tracked files in
    # them are still listed and dropped by our own rules.
    escape = re.compile(r"([\\*?\[\]!# ])")
    names = sorted(escape.sub(r"\\\1", n) for n in dir_names)
    return [f"--exclude={n}/" for n in names] + [f"--exclude=*{s}/" for s in _EXCLUDED_DIR_SUFFIXES]


def _git(root: str, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess | None:
    """Run git in ``root`` (None when git is missing, hangs or fails to start)."""
    try:
        return subprocess.run(
            ["git", *args], cwd=root, env=_git_env(), input=stdin,
            capture_output=True, timeout=_GIT_TIMEOUT_S, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None


def _git_list(root: str, excluded_dirs: Iterable[str] = (), respect_ignores: bool = True) -> list[str] | None:
    """Paths (relative to root) git tracks or would track, or None when not in git.

    Without ``respect_ignores`` the untracked files git would ignore are listed too.
    """
    # ls-files alone also "succeeds" inside a .git directory, so ask explicitly.
    probe = _git(root, "rev-parse", "--is-inside-work-tree")
    if probe is None or probe.returncode != 0 or probe.stdout.strip() != b"true":
        return None
    # Run in root without --full-name: git limits the listing to root's subtree
    # and prints paths relative to it, which is exactly what we need.
    standard = ["--exclude-standard"] if respect_ignores else []
    proc = _git(root, "ls-files", "-z", "--cached", "--others", *standard, *_git_exclude_args(excluded_dirs))
    if proc is None or proc.returncode != 0:
        return None
    # Decode once, not per path. Unmerged paths appear once per stage (dedupe);
    # untracked nested repositories appear as "dir/" (not files: drop).
    listed = os.fsdecode(proc.stdout).split("\0")
    return [p for p in dict.fromkeys(listed) if p and not p.endswith("/")]


def _git_ignore_rule(root: str, rel: str) -> Rule | None:
    """The ignore-file line by which git leaves ``rel`` out (``git check-ignore -v``)."""
    proc = _git(root, "check-ignore", "-v", "-z", "--stdin", stdin=os.fsencode(rel) + b"\0")
    if proc is None or proc.returncode != 0:
        return None
    fields = os.fsdecode(proc.stdout).split("\0")
    if len(fields) < 4 or not fields[0]:
        return None
    source, line, pattern = fields[0], fields[1], fields[2]
    if not os.path.isabs(source):  # relative to the work tree's top, which root may be below
        top = _git(root, "rev-parse", "--show-toplevel")
        if top is not None and top.returncode == 0:
            source = os.path.join(os.fsdecode(top.stdout.strip()), source)
    if os.path.isabs(source):
        real_source, real_root = os.path.realpath(source), os.path.realpath(root)
        if _inside(real_source, real_root):
            source = Path(os.path.relpath(real_source, real_root)).as_posix()
    return Rule("ignore", source, int(line) if line.isdigit() else 0, pattern)


def _extra_layer(root: str, rel_dir: str, layers: tuple[_Layer, ...], names: tuple[str, ...]) -> tuple[_Layer, ...]:
    """``layers`` plus the ignore files ``names`` of directory ``rel_dir``, if it has any."""
    abs_dir = os.path.join(root, rel_dir) if rel_dir else root
    present = [n for n in names if os.path.isfile(os.path.join(abs_dir, n))]
    if present:
        spec = _compile(_read_ignore_lines(abs_dir, present, rel_dir))
        if spec is not None:
            return (*layers, (rel_dir + "/" if rel_dir else "", spec))
    return layers


def _discover_git(root: str, root_real: str, paths: list[str], rules: _Rules) -> DiscoveryResult:
    out = _Collector(rules)
    # rel dir -> (excluded, layers); built lazily from the root down, once per directory.
    dirs: dict[str, tuple[bool, tuple[_Layer, ...]]] = {}
    # git has applied every .gitignore itself; .ignore and .ranklensignore are ours.
    names = _EXTRA_IGNORE_FILES if rules.respect_ignores else ()

    def dir_state(rel_dir: str) -> tuple[bool, tuple[_Layer, ...]]:
        state = dirs.get(rel_dir)
        if state is None:
            if not rel_dir:
                state = (False, _extra_layer(root, "", (), names))
            else:
                parent, _, name = rel_dir.rpartition("/")
                excluded, layers = dir_state(parent)
                if excluded:
                    state = (True, layers)
                else:
                    rule = rules.dir_rule(name, rel_dir, layers)
                    if rule is not None:
                        out.exclude(rule, rel_dir, is_dir=True)
                        state = (True, layers)
                    else:
                        state = (False, _extra_layer(root, rel_dir, layers, names))
            dirs[rel_dir] = state
        return state

    base = root.rstrip(os.sep) + os.sep
    for rel in paths:
        parent, _, name = rel.rpartition("/")
        excluded, layers = dir_state(parent)
        if excluded:
            continue
        out.consider(name, rel, layers, _git_stat(base + rel, rel, root_real, out))
    return out.result("git")


def _git_stat(abs_path: str, rel: str, root_real: str,
              out: _Collector) -> Callable[[], os.stat_result | None]:
    def get() -> os.stat_result | None:
        st = os.lstat(abs_path)
        if stat_mod.S_ISLNK(st.st_mode):
            # git tracks symlinks as links; only follow those that stay inside root.
            if not _inside(os.path.realpath(abs_path), root_real):
                out.exclude(_OUTSIDE, rel)
                return None
            st = os.stat(abs_path)
        return st
    return get


# --- walk mode -------------------------------------------------------------------------


def _discover_walk(root: str, root_real: str, rules: _Rules) -> DiscoveryResult:
    out = _Collector(rules)
    ignore_files = _WALK_IGNORE_FILES if rules.respect_ignores else ()
    root_st = os.stat(root)
    # (st_dev, st_ino) of every directory scanned: a symlink (or bind mount) back to an
    # ancestor is then recognised instead of recursing forever.
    visited: set[tuple[int, int]] = {(root_st.st_dev, root_st.st_ino)}
    # (absolute dir, rel dir, ignore layers of the parent)
    stack: list[tuple[str, str, tuple[_Layer, ...]]] = [(root, "", ())]
    # Symlinked directories are followed only after the real tree is done, so content
    # reachable both ways is listed under its real path, and only once.
    deferred: list[tuple[str, str, tuple[_Layer, ...], tuple[int, int]]] = []

    while stack or deferred:
        if not stack:
            deferred.sort(key=lambda d: d[1], reverse=True)
            abs_dir, rel_dir, layers, key = deferred.pop()
            if key in visited:
                continue
            visited.add(key)
        else:
            abs_dir, rel_dir, layers = stack.pop()
        try:
            with os.scandir(abs_dir) as it:
                entries = list(it)
        except FileNotFoundError:
            continue  # vanished mid-scan
        except OSError:
            out.exclude(_UNREADABLE_DIR, rel_dir or ".", is_dir=True)
            continue

        present = [e.name for e in entries if e.name in ignore_files]
        if present:
            # The order of _WALK_IGNORE_FILES sets precedence: .ranklensignore beats
            # .ignore beats .gitignore within one directory (last match wins).
            present.sort(key=_WALK_IGNORE_FILES.index)
            spec = _compile(_read_ignore_lines(abs_dir, present, rel_dir))
            if spec is not None:
                layers = (*layers, (rel_dir + "/" if rel_dir else "", spec))

        prefix = rel_dir + "/" if rel_dir else ""
        for entry in entries:
            name = entry.name
            rel = prefix + name
            try:
                is_link = entry.is_symlink()
                is_dir = not is_link and entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_link:
                _walk_symlink(entry, name, rel, layers, root_real, rules, out, deferred)
            elif is_dir:
                rule = rules.dir_rule(name, rel, layers)
                if rule is not None:
                    out.exclude(rule, rel, is_dir=True)
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                key = (st.st_dev, st.st_ino)
                if key in visited:
                    continue
                visited.add(key)
                stack.append((entry.path, rel, layers))
            elif entry.is_file(follow_symlinks=False):
                out.consider(name, rel, layers, entry.stat)
    return out.result("walk")


def _walk_symlink(entry: os.DirEntry, name: str, rel: str, layers: tuple[_Layer, ...],
                  root_real: str, rules: _Rules, out: _Collector,
                  deferred: list[tuple[str, str, tuple[_Layer, ...], tuple[int, int]]]) -> None:
    try:
        st = os.stat(entry.path)  # follows; raises on dangling links and link loops
    except OSError:
        return
    if stat_mod.S_ISDIR(st.st_mode):
        rule = rules.dir_rule(name, rel, layers)
        if rule is not None:
            out.exclude(rule, rel, is_dir=True)
            return
        if not _inside(os.path.realpath(entry.path), root_real):
            out.exclude(_OUTSIDE, rel, is_dir=True)
            return
        deferred.append((entry.path, rel, layers, (st.st_dev, st.st_ino)))
        return
    if layers or rules.globs is not None:
        rule = rules.ignored(rel, False, layers)
        if rule is not None:
            out.exclude(rule, rel)
            return
    if not _inside(os.path.realpath(entry.path), root_real):
        out.exclude(_OUTSIDE, rel)
        return
    out.consider(name, rel, layers, lambda: st)


# --- public API ------------------------------------------------------------------------


def discover(root: Path | str, options: DiscoveryOptions | None = None) -> DiscoveryResult:
    """List the files under ``root`` worth indexing.

    Parameters
    ----------
    root : Path or str
        Directory to search. Inside a git work tree git's listing is used (tracked
        plus untracked-not-ignored files); otherwise the tree is walked, honouring
        ``.gitignore`` files at every level.
    options : DiscoveryOptions, optional
        Extension filter, extra exclusions, the size limit, ``hidden`` and ``no_ignore``;
        defaults apply when None.

    Returns
    -------
    DiscoveryResult
        ``files`` sorted by path. ``skipped`` lists, sorted, the files passed over by a
        built-in rule that would otherwise have been indexed: ``"secret"`` (secret-looking
        name), ``"binary"`` (known binary extension), ``"too large"``,
        ``"symlink outside root"`` and ``"unreadable directory"``. ``excluded`` counts
        every entry passed over, per deciding rule, including those of the caller's own
        scope (ignore files, excluded directories, hidden entries, ``exclude_globs``, the
        extension filter), most entries first; files that vanish mid-scan are not
        counted, nor, in git mode, the untracked files git itself ignores.

    Raises
    ------
    NotADirectoryError
        If ``root`` is not an existing directory.
    """
    options = options or DiscoveryOptions()
    root_str = os.path.abspath(os.fspath(root))
    if not os.path.isdir(root_str):
        raise NotADirectoryError(f"not a directory: {root_str}")
    root_real = os.path.realpath(root_str)
    rules = _Rules(options)
    paths = _git_list(root_str, rules.excluded_dirs, rules.respect_ignores)
    # An empty listing means root is itself git-ignored (or holds nothing git would
    # track): the user opened it on purpose, so walk it with its own ignore files.
    if paths:
        return _discover_git(root_str, root_real, paths, rules)
    return _discover_walk(root_str, root_real, rules)


@dataclass
class Verdict:
    """Whether discovery keeps one path, and the rule that decided when it does not.

    Attributes
    ----------
    path : str
        POSIX path relative to the root.
    is_dir : bool
        The path is a directory (kept: discovery enters it).
    kept : bool
        Discovery lists the file (or enters the directory).
    rule : Rule or None
        What passed it over; None when kept.
    via : str
        The directory ``rule`` matched when that is an ancestor of ``path`` ("" when the
        rule is about the path itself).
    mode : str
        ``"git"`` (git's listing) or ``"walk"``.
    """

    path: str
    is_dir: bool
    kept: bool
    rule: Rule | None = None
    via: str = ""
    mode: str = "walk"

    def to_dict(self) -> dict:
        return {
            "path": self.path, "is_dir": self.is_dir, "kept": self.kept,
            "rule": self.rule.to_dict() if self.rule is not None else None, "via": self.via, "mode": self.mode,
        }


def explain(root: Path | str, path: str, options: DiscoveryOptions | None = None) -> Verdict:
    """Say whether :func:`discover` keeps ``path`` and, if not, which rule decides.

    Parameters
    ----------
    root : Path or str
        The root discovery starts from.
    path : str
        A path relative to ``root`` (POSIX or native separators).
    options : DiscoveryOptions, optional
        The options discovery runs with.

    Returns
    -------
    Verdict
        The rules are applied as :func:`discover` applies them, from the root down: the
        first ancestor directory not entered (built-in excluded name, ignore file,
        hidden) decides; in git mode a path git does not list is explained by
        ``git check-ignore``; then the file's own ignore, name, hidden and size rules.

    Raises
    ------
    NotADirectoryError
        If ``root`` is not an existing directory.
    FileNotFoundError
        If ``path`` does not exist under ``root``.
    """
    options = options or DiscoveryOptions()
    root_str = os.path.abspath(os.fspath(root))
    if not os.path.isdir(root_str):
        raise NotADirectoryError(f"not a directory: {root_str}")
    root_real = os.path.realpath(root_str)
    rel = Path(os.path.normpath(path)).as_posix().strip("/")
    rel = "" if rel == "." else rel
    full = os.path.join(root_str, rel) if rel else root_str
    if not os.path.lexists(full):
        raise FileNotFoundError(f"no such file or directory: {full}")
    is_dir = os.path.isdir(full)
    rules = _Rules(options)
    listed = _git_list(root_str, rules.excluded_dirs, rules.respect_ignores)
    mode = "git" if listed else "walk"
    if not rel:
        return Verdict("", True, True, mode=mode)
    names = (_WALK_IGNORE_FILES if mode == "walk" else _EXTRA_IGNORE_FILES) if rules.respect_ignores else ()
    parts = rel.split("/")
    layers = _extra_layer(root_str, "", (), names)
    for i, name in enumerate(parts[:-1] if not is_dir else parts):
        rel_dir = "/".join(parts[: i + 1])
        abs_dir = os.path.join(root_str, rel_dir)
        rule = rules.dir_rule(name, rel_dir, layers)
        if rule is None and os.path.islink(abs_dir) and not _inside(os.path.realpath(abs_dir), root_real):
            rule = _OUTSIDE
        if rule is not None:
            return Verdict(rel, is_dir, False, rule, "" if rel_dir == rel else rel_dir, mode)
        layers = _extra_layer(root_str, rel_dir, layers, names)
    if mode == "git":
        inside = rel + "/"
        if not (rel in set(listed) if not is_dir else any(p.startswith(inside) for p in listed)):
            rule = _git_ignore_rule(root_str, rel) if rules.respect_ignores else None
            return Verdict(rel, is_dir, False, rule or Rule("builtin", "not listed by git"), mode=mode)
    if is_dir:
        return Verdict(rel, True, True, mode=mode)
    out = _Collector(rules)
    if os.path.islink(full) and not _inside(os.path.realpath(full), root_real):
        out.exclude(_OUTSIDE, rel)
    else:
        out.consider(parts[-1], rel, layers, lambda: os.stat(full))
    if out.files:
        return Verdict(rel, False, True, mode=mode)
    rule = next(iter(out.tally), None) or Rule("builtin", "not a regular file")
    return Verdict(rel, False, False, rule, mode=mode)


@dataclass
class Loaded:
    """A file read for the index: its text (credential lines redacted) or why not.

    ``text`` is None when the file is refused, ``reason`` then says why (see
    :func:`read_text`); ``redacted`` are the 1-based numbers of the lines
    :func:`core.secrets.redact` replaced.
    """

    text: str | None
    reason: str = ""
    redacted: list[int] = field(default_factory=list)


def load_text(root: Path | str, entry_or_path: FileEntry | str, max_bytes: int = 1 << 20) -> Loaded:
    """Read one discovered file as :func:`read_text` does, and say which lines were redacted."""
    rel = entry_or_path.path if isinstance(entry_or_path, FileEntry) else entry_or_path
    path = os.path.join(os.fspath(root), rel)
    # O_NONBLOCK: if the path has been replaced by a FIFO, open must not hang.
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return Loaded(None, "vanished")
    except OSError:
        return Loaded(None, "unreadable")
    try:
        with open(fd, "rb") as fh:
            st = os.fstat(fd)
            if not stat_mod.S_ISREG(st.st_mode):
                return Loaded(None, "unreadable")
            if st.st_size > max_bytes:
                return Loaded(None, REASON_TOO_LARGE)
            data = fh.read(max_bytes + 1)
    except OSError:
        return Loaded(None, "unreadable")
    if len(data) > max_bytes:
        return Loaded(None, REASON_TOO_LARGE)
    if data.find(b"\0", 0, _SNIFF_BYTES) != -1:
        return Loaded(None, REASON_BINARY)
    if is_secret_name(os.path.basename(rel)):
        return Loaded(None, REASON_SECRET)  # discovery never lists these; nor is one read by name
    text = data.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    clean = redact(text, rel)
    if clean is text:
        return Loaded(text)
    before, after = text.split("\n"), clean.split("\n")
    redacted = [n for n, (old, new) in enumerate(zip(before, after), start=1) if old != new]
    gone = set(redacted)
    rest = (line for n, line in enumerate(before, start=1) if n not in gone)
    if not any(_SEARCHABLE.search(line) for line in rest):
        # Nothing but credentials: a key file, or a token pasted alone.
        return Loaded(None, REASON_PRIVATE_KEY if _is_key(text) else REASON_CREDENTIALS, redacted)
    return Loaded(clean, "", redacted)


# A letter or digit: a file whose lines outside its credentials hold none has nothing to search.
_SEARCHABLE = re.compile(r"[^\W_]")


def _is_key(text: str) -> bool:
    return "PRIVATE KEY" in text or "PuTTY-User-Key-File-" in text


def read_text(root: Path | str, entry_or_path: FileEntry | str,
              max_bytes: int = 1 << 20) -> tuple[str | None, str]:
    """Read one discovered file as text, refusing content that must not be indexed.

    Parameters
    ----------
    root : Path or str
        The root the path is relative to.
    entry_or_path : FileEntry or str
        A discovered entry or a POSIX path relative to ``root``.
    max_bytes : int, optional
        Files larger than this are refused (checked again: files grow).

    Returns
    -------
    tuple of (str or None, str)
        ``(text, "")`` on success: decoded as UTF-8 with invalid bytes replaced, a
        leading BOM removed, CRLF/CR line ends turned into LF, and every line holding a
        credential (a private-key block, a token in a well-known format) replaced by
        :data:`core.secrets.MARKER` (:func:`core.secrets.redact`). Otherwise
        ``(None, reason)`` with reason ``"binary"`` (NUL byte in the first 8 KiB),
        ``"private key"`` (nothing but private-key blocks: PEM/OpenSSH/PGP/PuTTY),
        ``"credentials only"`` (nothing but lines holding tokens), ``"secret"`` (a secret
        file by name), ``"too large"``, ``"vanished"`` or ``"unreadable"``.
    """
    loaded = load_text(root, entry_or_path, max_bytes)
    return loaded.text, loaded.reason
