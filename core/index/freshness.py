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

With a :class:`core.index.watch.TreeWatcher` (the terminal UI and the MCP server hold one), the
check stats only what inotify events named since the last check, and nothing at all when no
event came; whatever the watcher cannot vouch for (watches just added, an overflowed queue)
makes it a whole check.

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

    def positions(self) -> dict[str, int]:
        """Each listed file's position in :attr:`files` (made once, for a watcher's checks)."""
        at = self.__dict__.get("_positions")
        if at is None:
            at = self.__dict__["_positions"] = {p: i for i, p in enumerate(self.files)}
        return at

    @property
    def racy(self) -> set[str]:
        """Listed files stored as racy: their content must be read whatever their stat says."""
        return {p for p, c in zip(self.files, self.ctimes) if c == _RACY}


def model_key(spec: str | None) -> str:
    """The dense model asked for, as far as two stats see it without loading it: the spec, and
    for a local folder (the bundled model's for None) its weights' and tokenizer's size and
    mtime."""
    from ..text.embedding import DEFAULT_MODEL_DIR

    folder = Path(spec).expanduser() if spec else DEFAULT_MODEL_DIR
    stats = []
    for name in ("model.safetensors", "tokenizer.json"):
        try:
            st = (folder / name).stat()
        except (OSError, ValueError):  # a hub id, or no such file: the spec alone
            continue
        stats.append(f"{st.st_size}:{st.st_mtime_ns}")
    return "|".join([spec or "", *stats])


def snapshot_key(options, fingerprint: str, model: str | None) -> str:
    """What the listing and the chunks depend on besides the tree: the discovery options as
    applied (``hidden``/``no_ignore`` resolved), the chunking settings, the model asked for, the
    index format, the credential rules and this version.

    An unchanged verdict skips the arms' ``stale(meta)`` too (:class:`core.arms.protocol.ArmBuild`):
    ``dense`` is stale when its model changes, which :func:`model_key` stands for here (the spec,
    and a local model's files as stat sees them, so a bundled model replaced under the same
    version is embedded again). An arm whose staleness reads anything else must put it here.
    """
    from .. import __version__
    from ..storage.store import FORMAT_VERSION
    from ..text.secrets import NAME_RULES_VERSION, RULES_VERSION

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
            "model": model_key(model),
            "format": FORMAT_VERSION,
            "secret_rules": RULES_VERSION,
            "name_rules": NAME_RULES_VERSION,
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
    by: str = "stat"  # "stat": every entry stat'ed; "watcher": only what inotify events named

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
            "by": self.by,
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
        from ..discovery import DiscoveryResult, FileEntry, Rule
        from ..discovery.relist import relist, with_stats

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


class _Stat(tuple):
    """The fields of an ``os.stat_result`` a check hands on, rebuilt from a survey's tuple."""

    __slots__ = ()

    st_size = property(lambda self: self[0])
    st_mtime_ns = property(lambda self: self[1])
    st_ctime_ns = property(lambda self: self[2])
    st_mode = property(lambda self: self[3])


def _stat_tuple(st) -> tuple[int, int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


class Survey:
    """A check's stat pass run by a forked child while the parent imports the engine and opens
    the index: ``ranklens query`` and ``index`` start one before they load numpy, and the
    indexer's check takes its answer (:func:`check`, ``survey=``) instead of stat'ing the tree
    itself. The command line has no watcher (no process outlives the query), so this is what it
    saves: the stat pass no longer adds to the start-up. Linux only (elsewhere, or when the
    fork fails, :meth:`start` gives None and the check stats in-process)."""

    def __init__(self, pid: int, fd: int, started_ns: int) -> None:
        self.pid, self.fd = pid, fd
        self.started_ns = started_ns  # before the fork: the child's stats are no older
        self._result: dict | None = None
        self._done = False

    @classmethod
    def start(cls, root, directory) -> Survey | None:
        """Fork the stat pass of ``root`` against the snapshot in ``directory``; call before any
        thread is started (a forked child has only the thread that forked)."""
        import sys
        import threading

        directory = Path(directory)
        if not sys.platform.startswith("linux") or threading.active_count() > 1:
            return None
        if not (directory / SNAPSHOT_FILE).exists():
            return None
        started = time.time_ns()
        try:
            read_fd, write_fd = os.pipe()
            pid = os.fork()
        except OSError:
            return None
        if pid == 0:  # the child: stat, write the answer, leave without running any exit hook
            code = 1
            try:
                os.close(read_fd)
                data = marshal.dumps(_survey(str(root), directory))
                with os.fdopen(write_fd, "wb") as out:
                    out.write(data)
                code = 0
            finally:
                os._exit(code)
        os.close(write_fd)
        return cls(pid, read_fd, started)

    def result(self) -> dict | None:
        """The child's answer (waiting for it), or None when it failed."""
        if not self._done:
            self._done = True
            try:
                with os.fdopen(self.fd, "rb") as pipe:
                    data = pipe.read()
                _, status = os.waitpid(self.pid, 0)
                if os.waitstatus_to_exitcode(status) == 0:
                    self._result = marshal.loads(data)
            except (OSError, ValueError, EOFError, TypeError):
                self._result = None
        return self._result

    def check_for(self, snap: Snapshot, snap_id: tuple | None) -> Check | None:
        """The survey as the check of ``snap`` (the snapshot the parent loaded), or None when the
        child stat'ed against another one or failed."""
        data = self.result()
        if data is None or snap_id is None or tuple(data["snapshot"]) != snap_id:
            return None
        out = Check(data["verdict"], data["reason"], snap)
        out.changed = {p: _Stat(t) for p, t in data["changed"].items()}
        out.restat = {p: _Stat(t) for p, t in data["restat"].items()}
        out.rewatched = {k: tuple(v) for k, v in data["rewatched"].items()}
        out.moved = list(data["moved"])
        out.files, out.folders, out.watched = data["files"], data["folders"], data["watched"]
        out.by = "survey"
        return out


def _survey(root: str, directory: Path) -> dict:
    """The child's half of :class:`Survey`: the stat pass, as plain data."""
    snap_id = snapshot_id(directory)
    snap = Snapshot.load(directory)
    if snap is None or snap_id is None:
        raise ValueError("no snapshot")
    out = _compare(root, snap, None)
    listed = out.verdict in ("files", "folders")
    return {
        "snapshot": snap_id,
        "verdict": out.verdict,
        "reason": out.reason,
        "changed": {p: _stat_tuple(st) for p, st in out.changed.items()} if listed else {},
        "restat": {p: _stat_tuple(st) for p, st in out.restat.items()},
        "rewatched": out.rewatched,
        "moved": out.moved,
        "files": out.files,
        "folders": out.folders,
        "watched": out.watched,
    }


def check(root: Path, directory: Path, key_for, watcher=None, survey: Survey | None = None) -> Check:
    """Compare the tree under ``root`` with the snapshot in the index folder ``directory``.

    ``key_for(discovery)`` gives the key the caller's settings make, with ``hidden`` and
    ``no_ignore`` left unset taken from ``discovery`` (the snapshot's, as last applied).
    ``watcher`` (:class:`core.index.watch.TreeWatcher`): stat only what its events named; an
    unchanged verdict settles them. ``survey``: the stat pass a child already made
    (:class:`Survey`), used when it is of the snapshot this check loads. Never raises: anything
    unexpected is verdict ``none``.
    """
    t0, started = time.perf_counter(), time.time_ns()
    try:
        result = _check(str(root), Path(directory), key_for, watcher, survey)
    except Exception as exc:  # a check must never stop an index pass: list the tree instead
        result = Check("none", f"check failed ({type(exc).__name__}: {exc})")
        if watcher is not None:
            watcher.invalidate()
    result.seconds = time.perf_counter() - t0
    result.started_ns = survey.started_ns if result.by == "survey" else started
    return result


def snapshot_id(directory: Path) -> tuple | None:
    """The saved snapshot file's identity (inode, size, mtime): a watcher keeps the snapshot it
    follows in memory while this stays the same."""
    try:
        st = os.stat(Path(directory) / SNAPSHOT_FILE)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _check(root: str, directory: Path, key_for, watcher, survey: Survey | None = None) -> Check:
    snap_id = snapshot_id(directory) if watcher is not None or survey is not None else None
    followed = watcher is not None and watcher.follows(snap_id)
    snap = watcher.snapshot if followed else Snapshot.load(directory)
    if snap is None:
        return Check("none", "no snapshot of the last listing")
    if snap.key != key_for(snap.discovery):
        return Check("none", "settings differ from the last pass's", snap)
    generation = _committed_generation(directory)
    if generation != snap.generation:
        return Check("none", "the snapshot is of another generation", snap)
    if survey is not None and watcher is None:
        surveyed = survey.check_for(snap, snap_id)
        if surveyed is not None:
            return surveyed
    only = None
    if watcher is not None:
        if not followed:  # watches first: a change after this is queued, one before it is stat'ed
            watcher.follow(snap, snap_id)
        only = watcher.take()  # None: the watcher cannot vouch for everything, stat it all
    out = _compare(root, snap, only)
    if watcher is not None and out.unchanged:
        watcher.settle()
    return out


def _compare(root: str, snap: Snapshot, only) -> Check:
    """Stat the snapshot's entries (``only``: those a watcher's :class:`core.index.watch.Changes`
    names) and say what differs."""
    out = Check("unchanged", "", snap)
    if only is not None:
        out.by = "watcher"
    base = root.rstrip(os.sep) + os.sep
    stat = os.stat
    folders = snap.folders if only is None else {rel: snap.folders[rel] for rel in only.folders if rel in snap.folders}
    watched = snap.watched if only is None else {key: snap.watched[key] for key in only.watched if key in snap.watched}
    out.folders = len(folders)
    moved = out.moved
    for rel, ctime in folders.items():
        try:
            if stat(base + rel if rel else root).st_ctime_ns != ctime:
                moved.append(rel)
        except OSError:
            moved.append(rel)
    if moved and snap.discovery.get("mode") != "walk":
        out.verdict, out.reason = "listing", f"folder {moved[0] or '.'} changed"
        return out
    out.watched = len(watched)
    for key, state in watched.items():
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
    changed, restat = out.changed, out.restat
    skip = set(moved)
    from stat import S_ISREG

    limit = _max_bytes(snap.key)
    rows = zip(snap.files, snap.sizes, snap.mtimes, snap.ctimes)
    if only is not None:
        at = snap.positions()
        rows = [(p, snap.sizes[i], snap.mtimes[i], snap.ctimes[i]) for p in only.files if (i := at.get(p)) is not None]
    out.files = len(snap.files) if only is None else len(rows)
    for path, size, mtime, ctime in rows:
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
    from ..discovery.ignore import digest

    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return digest(fh.read()) == expected
    except OSError:
        return False


def _max_bytes(key: str) -> int:
    return int(json.loads(key)["max_bytes"])


def _committed_generation(directory: Path) -> int | None:
    from ..base._sqlite import sqlite3
    from ..storage.store import close, connect, gen_dir_name

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
