"""The rules discovery applies to names and sizes, and the collector that counts them.

Both listing modes (:mod:`~core.discovery.git`, :mod:`~core.discovery.walk`) hand every
candidate to :class:`_Collector`, which applies ignore layers, ``exclude_globs``, the
built-in name rules (:data:`BUILTIN_EXCLUDED_DIRS`, :data:`BINARY_EXTENSIONS`, hidden and
secret-looking names) and the size limit, and counts each entry passed over against its
:class:`~core.discovery.results.Rule`.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Callable
from dataclasses import dataclass

from ..text.secrets import is_secret_name
from .ignore import _compile, _Layer
from .results import (
    REASON_BINARY,
    REASON_OUTSIDE_ROOT,
    REASON_SECRET,
    REASON_TOO_LARGE,
    REASON_UNREADABLE_DIR,
    RULE_EXCLUDED_DIR,
    RULE_EXTENSIONS,
    RULE_HIDDEN,
    DiscoveryResult,
    Exclusion,
    FileEntry,
    Rule,
)

#: Directory basenames never descended into, at any depth below the root: version
#: control metadata, dependency trees, virtualenvs, caches and build output. They are
#: large, generated or vendored, and drown real matches. Deliberately *not* listed:
#: ``env`` (a common source package name), ``.vscode`` (shared editor config worth
#: searching with ``hidden``) and ``coverage`` (coverage.py's own package is called that;
#: generated HTML reports land in ``htmlcov``). ``*.egg-info`` is matched by suffix, see
#: :data:`_EXCLUDED_DIR_SUFFIXES`. These apply with ``hidden`` and ``no_ignore`` too.
BUILTIN_EXCLUDED_DIRS: frozenset[str] = frozenset(
    {
        # version control
        ".git",
        ".hg",
        ".svn",
        ".bzr",
        # dependencies and virtualenvs
        "node_modules",
        "bower_components",
        ".venv",
        "venv",
        "site-packages",
        ".eggs",
        # caches
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".cache",
        ".gradle",
        ".terraform",
        # build output
        "dist",
        "build",
        "target",
        ".next",
        ".nuxt",
        "htmlcov",
        # IDE state (per-user, machine generated)
        ".idea",
    }
)
_EXCLUDED_DIR_SUFFIXES: tuple[str, ...] = (".egg-info",)

#: Extensions (lowercase, with the dot) of formats that are never text: skipped by name
#: without opening the file.
BINARY_EXTENSIONS: frozenset[str] = frozenset(
    {
        # images
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".bmp",
        ".ico",
        ".icns",
        ".tif",
        ".tiff",
        ".webp",
        ".avif",
        ".heic",
        ".psd",
        ".xcf",
        ".svgz",
        # documents
        ".pdf",
        ".doc",
        ".docx",
        ".xls",
        ".xlsx",
        ".ppt",
        ".pptx",
        ".odt",
        ".ods",
        ".odp",
        # archives and packages
        ".zip",
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".zst",
        ".lz",
        ".lzma",
        ".7z",
        ".rar",
        ".tar",
        ".whl",
        ".egg",
        ".jar",
        ".war",
        ".ear",
        ".deb",
        ".rpm",
        ".apk",
        ".ipa",
        ".dmg",
        ".iso",
        ".img",
        ".msi",
        ".nupkg",
        ".gem",
        # compiled code and objects
        ".so",
        ".dll",
        ".dylib",
        ".exe",
        ".bin",
        ".o",
        ".obj",
        ".a",
        ".lib",
        ".pyc",
        ".pyo",
        ".pyd",
        ".class",
        ".wasm",
        ".mo",
        ".lockb",
        # fonts
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        # audio and video
        ".mp3",
        ".mp4",
        ".m4a",
        ".wav",
        ".flac",
        ".ogg",
        ".opus",
        ".aac",
        ".avi",
        ".mov",
        ".mkv",
        ".webm",
        ".flv",
        ".wmv",
        ".swf",
        # databases and data/model blobs
        ".sqlite",
        ".sqlite3",
        ".db",
        ".npy",
        ".npz",
        ".pkl",
        ".pickle",
        ".h5",
        ".hdf5",
        ".parquet",
        ".feather",
        ".arrow",
        ".onnx",
        ".pt",
        ".pth",
        ".ckpt",
        ".safetensors",
        ".tflite",
        ".pb",
    }
)


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
        indexer reads None as "as the index was last built" (:mod:`core.index.indexer`).
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
        self.globs = (
            _compile((g, Rule("option", "exclude_globs", i, g)) for i, g in enumerate(options.exclude_globs, start=1))
            if options.exclude_globs
            else None
        )
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
            found = patterns.verdict(rel[len(prefix) :], is_dir)
            if found is not None:
                return found[1] if found[0] else None
        return None

    def dir_rule(self, name: str, rel: str, layers: tuple[_Layer, ...]) -> Rule | None:
        """The rule that keeps discovery out of directory ``rel``, or None to enter it."""
        if name in self.excluded_dirs or name.endswith(_EXCLUDED_DIR_SUFFIXES):
            rule = self._dir_rules.get(name)
            if rule is None:
                shown = name if name in self.excluded_dirs else "*" + name[name.rindex(".") :]
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
        if (
            self.extensions is not None
            and ext not in self.extensions
            and name not in self.options.include_basenames
            and not (self.multi_dot_extensions and lower.endswith(self.multi_dot_extensions))
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
        self.folders: dict[str, int] = {}
        self.watched: dict[str, tuple[int, int, int]] = {}
        self.entries: list[tuple[Rule, str, bool]] = []  # every exclusion, as (rule, rel, is_dir)
        self.digests: dict[str, str] = {}  # ignore file -> digest of the text this listing read

    def folder(self, rel_dir: str, st: os.stat_result) -> None:
        """Note folder ``rel_dir``'s state, stat'ed before its entries are listed."""
        self.folders[rel_dir] = st.st_ctime_ns

    def watch(self, key: str, path: str | None = None) -> None:
        """Note the state of a file whose edit can change the listing (``key``: relative to the
        root, or absolute; ``path``: where to stat it, default ``key``)."""
        try:
            st = os.stat(path or key)
        except OSError:
            self.watched[key] = ABSENT
            return
        self.watched[key] = file_state(st)

    def exclude(self, rule: Rule, rel: str, is_dir: bool = False) -> None:
        """Count ``rel`` as passed over by ``rule`` (and report it by path when the rule is
        one of the reported built-in ones)."""
        self.entries.append((rule, rel, is_dir))
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

    def consider(
        self, name: str, rel: str, layers: tuple[_Layer, ...], get_stat: Callable[[], os.stat_result | None]
    ) -> None:
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
            self.watched[rel] = file_state(st)  # shrunk in place, it would be listed
            return
        self.files.append(FileEntry(rel, st.st_size, st.st_mtime_ns, st.st_ctime_ns))

    def result(self, mode: str) -> DiscoveryResult:
        self.files.sort(key=lambda f: f.path)
        self.skipped.sort()
        excluded = sorted(self.tally.values(), key=lambda e: (-e.entries, str(e.rule)))
        return DiscoveryResult(
            self.files, self.skipped, excluded, mode, self.folders, self.watched, self.entries, self.digests
        )


#: The state of a watched file that does not exist.
ABSENT = (-1, -1, -1)


def file_state(st: os.stat_result) -> tuple[int, int, int]:
    """``(size, mtime_ns, ctime_ns)``: what a watched file is compared by."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns)
