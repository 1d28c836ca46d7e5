"""What discovery reports: the files kept, the rules that passed entries over, and counts.

:class:`Rule` names what decided (an ignore file's line, an ``exclude_globs`` entry, a
built-in rule); :class:`DiscoveryResult` holds what :func:`core.discovery.discover` found and
:class:`Verdict` what :func:`core.discovery.explain` says of one path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Skip reasons (the second item of ``DiscoveryResult.skipped``).
REASON_SECRET = "secret"
REASON_BINARY = "binary"
REASON_TOO_LARGE = "too large"
REASON_OUTSIDE_ROOT = "symlink outside root"
REASON_UNREADABLE_DIR = "unreadable directory"
REASON_PRIVATE_KEY = "private key"
REASON_CREDENTIALS = "credentials only"
REASON_HANDOFF = "ranklens handoff"  # an export of ranklens itself (core.base.handoff_schema.is_handoff_text)

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
class FileEntry:
    """A file worth indexing: POSIX path relative to the root, size and mtime."""

    path: str
    size: int
    mtime_ns: int
    ctime_ns: int = field(default=0, compare=False)  # for core.index.freshness; 0 when not known


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
    #: What a later change to the listing would change (:mod:`core.index.freshness` stats them
    #: instead of listing again): every folder whose entries were listed (relative, "" for the
    #: root) -> its ctime in ns, taken before it was listed (an entry added, removed or renamed
    #: changes it), and every other file whose edit can change the listing (ignore files read,
    #: files passed over as too large; in git mode git's index and excludes files; absolute
    #: when outside the root) -> (size, mtime_ns, ctime_ns), (-1, -1, -1) when absent.
    folders: dict[str, int] = field(default_factory=dict, repr=False)
    watched: dict[str, tuple[int, int, int]] = field(default_factory=dict, repr=False)
    #: Every entry passed over, as ``(rule, path, is_dir)``: ``excluded`` and ``skipped`` are
    #: made from these, so a listing redone folder by folder (:mod:`~core.discovery.relist`)
    #: can count them again.
    exclusions: list[tuple[Rule, str, bool]] = field(default_factory=list, repr=False)
    #: The ignore files this listing read itself (walk mode), each with a digest of the text
    #: it read: one whose stat moved but whose text did not (a new hard link, a save of the
    #: same text) changes nothing.
    digests: dict[str, str] = field(default_factory=dict, repr=False)

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
        head = (
            f"kept no files under {root}"
            if not kept
            else (
                f"kept {kept:,} files under {root} and passed over {passed:,} entries ({passed / (kept + passed):.0%})"
            )
        )
        others = len(self.excluded) - 1
        tail = f"; {others} other rule{'s' if others != 1 else ''} in --json" if others else ""
        hint = f"; {top.rule.hint}" if top.rule.hint else ""
        example = f", e.g. {top.example}" if top.example else ""
        return f"{head}: {top.rule} passed over {what}{example}{hint}{tail}"


def _count(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}" if n else ""


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
            "path": self.path,
            "is_dir": self.is_dir,
            "kept": self.kept,
            "rule": self.rule.to_dict() if self.rule is not None else None,
            "via": self.via,
            "mode": self.mode,
        }
