"""Whether anything changed since the last index pass: a stat pass instead of a listing.

Listing a tree (walking it and applying every ignore rule, or asking git) costs ~2 s at 78k
files; stat'ing what that listing depended on costs a fraction of it. So after every pass the
indexer saves a *snapshot* (:data:`SNAPSHOT_FILE` in the index folder) of what discovery saw:

* the files it listed, each with its size, mtime and ctime;
* every folder whose entries it listed, with its ctime taken before the listing (an entry
  added, removed or renamed changes it; so do ``chmod`` and ``touch``);
* the other files whose edit can change the listing: ignore files read, files passed over as
  too large, in git mode git's index, config and excludes files (``git add`` rewrites the
  index), and the ``.git`` a repository created above a walked root would add.

Folders discovery did not enter (ignored, built-in excluded, hidden) are not in it, so nothing
written inside them is ever taken for a change. :func:`check` stats the snapshot's entries and
answers one of:

``unchanged``
    nothing differs: the committed generation is current; no listing, no model, no chunker.
``files``
    only listed files differ, each still a regular file under the size limit: the listing is
    the snapshot's with their new stats (the indexer then reads just those).
``listing``
    a folder, an ignore or git file, or a file's kind or size class differs, or a listed file
    is gone: discovery lists the tree again.
``none``
    no usable snapshot (first pass, another generation, other settings): discovery runs.

A file is compared by ctime, which every write, ``touch``, ``chmod`` or rename moves and user
code cannot set back; one whose ctime moved but whose size and mtime did not (``chmod``, a new
hard link) is refreshed in the snapshot, not re-read, as the indexer's own size + mtime
comparison would have it. Timestamps are coarse (a few ms, 1-2 s on some file systems), so an
entry changed within :data:`RACY_NS` of the listing that saw it is stored as *racy*: it always
counts as changed, and the indexer reads and hashes such a file whatever its stat says (git's
"racily clean" entries).

This module imports no discovery, chunking, model or SciPy code, so a process that finds
nothing changed loads none of them.
"""

from __future__ import annotations

import json
import marshal
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

#: The snapshot's file in the index folder (removed with the rest on a rebuild).
SNAPSHOT_FILE = "fresh.snapshot"
#: Bumped when the snapshot's content changes; another version is ignored (``none``).
VERSION = 1
#: An entry whose mtime or ctime is this close to the listing that saw it is stored as racy.
RACY_NS = 2_000_000_000
_RACY = -2


@dataclass
class Snapshot:
    """What the last pass's discovery saw, for :func:`check` (see the module docstring)."""

    generation: int
    key: str  # what decided the listing and the chunks (:func:`snapshot_key`)
    discovery: dict  # hidden and no_ignore as applied, and the mode
    files: list[str]
    sizes: list[int]
    mtimes: list[int]
    ctimes: list[int]  # _RACY for a racy file
    folders: dict[str, int]  # rel folder -> ctime_ns (_RACY when racy)
    watched: dict[str, tuple[int, int, int]]  # rel or absolute path -> (size, mtime, ctime)
    rules: list[dict] = field(default_factory=list)  # the rules of ``exclusions``
    exclusions: list[tuple[int, str, bool]] = field(default_factory=list)  # (rule index, path, is_dir)
    digests: dict[str, str] = field(default_factory=dict)  # ignore file -> digest of the text listed with
    report: dict = field(default_factory=dict)  # what an unchanged pass reports (IndexStats fields)

    def save(self, directory: Path) -> None:
        data = {
            "version": VERSION,
            "generation": self.generation,
            "key": self.key,
            "discovery": self.discovery,
            "files": self.files,
            "sizes": self.sizes,
            "mtimes": self.mtimes,
            "ctimes": self.ctimes,
            "folders": self.folders,
            "watched": self.watched,
            "rules": json.dumps(self.rules),
            "exclusions": self.exclusions,
            "digests": self.digests,
            "report": json.dumps(self.report),
        }
        path = Path(directory) / SNAPSHOT_FILE
        tmp = path.with_name(f"{SNAPSHOT_FILE}.tmp-{os.getpid()}")
        tmp.write_bytes(marshal.dumps(data))
        os.replace(tmp, path)

    @classmethod
    def load(cls, directory: Path) -> Snapshot | None:
        """The saved snapshot, or None when there is none or it is unreadable or of another version."""
        try:
            data = marshal.loads((Path(directory) / SNAPSHOT_FILE).read_bytes())
            if not isinstance(data, dict) or data.get("version") != VERSION:
                return None
            return cls(
                data["generation"],
                data["key"],
                data["discovery"],
                data["files"],
                data["sizes"],
                data["mtimes"],
                data["ctimes"],
                data["folders"],
                data["watched"],
                json.loads(data["rules"]),
                data["exclusions"],
                data["digests"],
                json.loads(data["report"]),
            )
        except (OSError, ValueError, EOFError, TypeError, KeyError):
            return None

    @property
    def racy(self) -> set[str]:
        """Listed files stored as racy: their content must be read whatever their stat says."""
        return {p for p, c in zip(self.files, self.ctimes) if c == _RACY}


def snapshot_key(options, fingerprint: str, model: str | None) -> str:
    """What the listing and the chunks depend on besides the tree: the discovery options as
    applied (``hidden``/``no_ignore`` resolved), the chunking settings, the model asked for, the
    index format, the credential rules and this version.

    An unchanged verdict skips the arms' ``stale(meta)`` too (:class:`core.arms.protocol.ArmBuild`):
    ``dense`` is stale when its model changes, which ``model`` stands for here (the same spec is
    taken to load the same model). An arm whose staleness reads anything else must put it here.
    """
    from . import __version__
    from .secrets import RULES_VERSION
    from .store import FORMAT_VERSION

    return json.dumps(
        {
            "extensions": sorted(options.extensions) if options.extensions is not None else None,
            "exclude_dirs": sorted(options.exclude_dirs),
            "exclude_globs": list(options.exclude_globs),
            "include_basenames": sorted(options.include_basenames),
            "max_bytes": options.max_bytes,
            "hidden": bool(options.hidden),
            "no_ignore": bool(options.no_ignore),
            "settings": fingerprint,
            "model": model or "",
            "format": FORMAT_VERSION,
            "secret_rules": RULES_VERSION,
            "ranklens": __version__,
        },
        sort_keys=True,
    )


def make_snapshot(found, started_ns: int, generation: int, key: str, discovery: dict, report: dict) -> Snapshot:
    """The snapshot of a pass whose discovery (``found``, a DiscoveryResult) started at
    ``started_ns`` (``time.time_ns()``), for the committed ``generation``."""
    cutoff = started_ns - RACY_NS
    files, sizes, mtimes, ctimes = [], [], [], []
    for entry in found.files:
        files.append(entry.path)
        sizes.append(entry.size)
        mtimes.append(entry.mtime_ns)
        ctime = entry.ctime_ns
        ctimes.append(_RACY if ctime >= cutoff or entry.mtime_ns >= cutoff or not ctime else ctime)
    folders = {rel: (_RACY if c >= cutoff else c) for rel, c in found.folders.items()}
    watched = {
        key_: (s, m, _RACY if c >= cutoff or m >= cutoff else c) if c >= 0 else (s, m, c)
        for key_, (s, m, c) in found.watched.items()
    }
    index: dict = {}
    exclusions = [(index.setdefault(rule, len(index)), rel, is_dir) for rule, rel, is_dir in found.exclusions]
    rules = [{"kind": r.kind, "name": r.name, "line": r.line, "pattern": r.pattern} for r in index]
    return Snapshot(
        generation,
        key,
        {**discovery, "mode": found.mode},
        files,
        sizes,
        mtimes,
        ctimes,
        folders,
        watched,
        rules,
        exclusions,
        dict(found.digests),
        report,
    )


@dataclass
class Check:
    """What :func:`check` found (see the module docstring for ``verdict``)."""

    verdict: str
    reason: str = ""
    snapshot: Snapshot | None = None
    changed: dict[str, os.stat_result] = field(default_factory=dict)  # path -> new stat ("files")
    moved: list[str] = field(default_factory=list)  # folders whose entries changed ("folders")
    restat: dict[str, os.stat_result] = field(default_factory=dict)  # ctime moved, content did not
    rewatched: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # the same for watched files
    seconds: float = 0.0
    started_ns: int = 0  # time.time_ns() when the check began: its stats are no older
    files: int = 0  # files, folders and watched files stat'ed
    folders: int = 0
    watched: int = 0

    @property
    def unchanged(self) -> bool:
        return self.verdict == "unchanged"

    @property
    def recheck(self) -> set[str]:
        """Files whose content must be read whatever their size and mtime say (racy ones)."""
        return self.snapshot.racy if self.snapshot is not None else set()

    def to_dict(self) -> dict:
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "files": self.files,
            "folders": self.folders,
            "watched": self.watched,
            "changed": len(self.changed),
            "seconds": round(self.seconds, 4),
        }

    def refreshed(self) -> Snapshot:
        """The snapshot with the ctimes that moved without a change of content (``restat``,
        ``rewatched``)."""
        snap = self.snapshot
        assert snap is not None
        cutoff = time.time_ns() - RACY_NS
        ctimes = list(snap.ctimes)
        for i, path in enumerate(snap.files):
            st = self.restat.get(path)
            if st is not None:
                ctimes[i] = _RACY if st.st_ctime_ns >= cutoff else st.st_ctime_ns
        watched = dict(snap.watched)
        for key, (size, mtime, ctime) in self.rewatched.items():
            watched[key] = (size, mtime, _RACY if ctime >= cutoff else ctime)
        return Snapshot(
            snap.generation,
            snap.key,
            snap.discovery,
            snap.files,
            snap.sizes,
            snap.mtimes,
            ctimes,
            snap.folders,
            watched,
            snap.rules,
            snap.exclusions,
            snap.digests,
            snap.report,
        )

    def listing(self, root: Path, options):
        """The listing this check allows without listing the whole tree: the snapshot's with the
        changed files' new stats (``files``), and the changed folders listed again
        (``folders``, :func:`core.discovery.relist.relist`); None when only a whole listing
        can answer."""
        from .discovery import DiscoveryResult, FileEntry, Rule
        from .discovery.relist import relist, with_stats

        snap = self.snapshot
        assert snap is not None and self.verdict in ("files", "folders")
        files = [
            FileEntry(path, size, mtime, ctime if ctime != _RACY else 0)
            for path, size, mtime, ctime in zip(snap.files, snap.sizes, snap.mtimes, snap.ctimes)
        ]
        rules = [Rule(**r) for r in snap.rules]
        exclusions = [(rules[i], rel, bool(is_dir)) for i, rel, is_dir in snap.exclusions]
        base = DiscoveryResult(
            files,
            [],
            [],
            snap.discovery.get("mode", "walk"),
            dict(snap.folders),
            {k: tuple(v) for k, v in snap.watched.items()},
            exclusions,
            dict(snap.digests),
        )
        base.watched.update(self.rewatched)
        base = with_stats(base, {**self.restat, **self.changed})
        return relist(root, options, base, self.moved if self.verdict == "folders" else ())


def check(root: Path, directory: Path, key_for, model_spec: str | None = None) -> Check:
    """Compare the tree under ``root`` with the snapshot in the index folder ``directory``.

    ``key_for(discovery)`` gives the key the caller's settings make, with ``hidden`` and
    ``no_ignore`` left unset taken from ``discovery`` (the snapshot's, as last applied). Never
    raises: anything unexpected is verdict ``none``.
    """
    t0, started = time.perf_counter(), time.time_ns()
    try:
        result = _check(str(root), Path(directory), key_for)
    except Exception as exc:  # a check must never stop an index pass: list the tree instead
        result = Check("none", f"check failed ({type(exc).__name__}: {exc})")
    result.seconds = time.perf_counter() - t0
    result.started_ns = started
    return result


def _check(root: str, directory: Path, key_for) -> Check:
    snap = Snapshot.load(directory)
    if snap is None:
        return Check("none", "no snapshot of the last listing")
    if snap.key != key_for(snap.discovery):
        return Check("none", "settings differ from the last pass's", snap)
    generation = _committed_generation(directory)
    if generation != snap.generation:
        return Check("none", "the snapshot is of another generation", snap)
    out = Check("unchanged", "", snap)
    base = root.rstrip(os.sep) + os.sep
    stat = os.stat
    out.folders = len(snap.folders)
    moved = out.moved
    for rel, ctime in snap.folders.items():
        try:
            if stat(base + rel if rel else root).st_ctime_ns != ctime:
                moved.append(rel)
        except OSError:
            moved.append(rel)
    if moved and snap.discovery.get("mode") != "walk":
        out.verdict, out.reason = "listing", f"folder {moved[0] or '.'} changed"
        return out
    out.watched = len(snap.watched)
    for key, state in snap.watched.items():
        try:
            st = stat(key if os.path.isabs(key) else base + key)
            now = (st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        except OSError:
            now = (-1, -1, -1)
        if now != tuple(state):
            if now[:2] == tuple(state[:2]) and state[2] not in (_RACY, -1):
                out.rewatched[key] = now  # chmod, a new hard link: the same content
                continue
            if key in snap.digests and now[0] >= 0 and _same_text(base + key, snap.digests[key]):
                out.rewatched[key] = now  # saved again (or racy) with the text the listing read
                continue
            out.verdict, out.reason = "listing", f"{key} changed"
            return out
    out.files = len(snap.files)
    changed, restat = out.changed, out.restat
    skip = set(moved)
    from stat import S_ISREG

    limit = _max_bytes(snap.key)
    for path, size, mtime, ctime in zip(snap.files, snap.sizes, snap.mtimes, snap.ctimes):
        if skip and path.rpartition("/")[0] in skip:
            continue  # its folder is listed again
        try:
            st = stat(base + path)
        except OSError:
            out.verdict, out.reason = "listing", f"{path} is gone"  # yet its folder did not change
            return out
        if st.st_ctime_ns == ctime:
            continue
        if not S_ISREG(st.st_mode) or st.st_size > limit:
            out.verdict, out.reason = "listing", f"{path} is no longer a file under the size limit"
            return out
        if ctime == _RACY or st.st_size != size or st.st_mtime_ns != mtime:
            changed[path] = st
        else:
            restat[path] = st
    if moved:
        out.verdict = "folders"
        out.reason = f"folder {moved[0] or '.'} changed" if len(moved) == 1 else f"{len(moved)} folders changed"
    elif changed:
        out.verdict = "files"
        first = next(iter(changed))
        out.reason = f"{first} changed" if len(changed) == 1 else f"{len(changed)} files changed ({first} …)"
    return out


def _same_text(path: str, expected: str) -> bool:
    """Whether the ignore file at ``path`` still holds the text its digest was made of."""
    from .discovery.ignore import digest

    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return digest(fh.read()) == expected
    except OSError:
        return False


def _max_bytes(key: str) -> int:
    return int(json.loads(key)["max_bytes"])


def _committed_generation(directory: Path) -> int | None:
    from ._sqlite import sqlite3
    from .store import close, connect, gen_dir_name

    db = directory / "index.sqlite"
    if not db.exists():
        return None
    try:
        conn = connect(db, readonly=True)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        finally:
            close(conn)
    except sqlite3.DatabaseError:
        return None
    if row is None or not str(row[0]).isdigit():
        return None
    generation = int(row[0])
    return generation if (directory / gen_dir_name(generation)).is_dir() else None
