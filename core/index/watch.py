"""Which paths may have changed since the last freshness check, from inotify, for a process
that outlives one query (the terminal UI, the MCP server).

The freshness check (:mod:`core.index.freshness`) stats every file and folder the last listing saw:
~0.1 s at 20k files here, over a second for the Linux sources on a slow VM. A long-lived
process need not: a :class:`TreeWatcher` holds an inotify watch on each folder that listing
entered (and on the folders holding the git and ignore files it watched), and the check then
stats only what an event names (:class:`Changes`), or nothing when no event came.

Why it can be trusted: the kernel queues an inotify event before the ``write``, ``rename`` or
``unlink`` that caused it returns, and :meth:`TreeWatcher.take` drains that queue without
blocking when the check starts, so every change completed before a query is in what it
returns. A library that reads events on a thread of its own and debounces them (watchdog,
watchfiles) cannot promise that without a round trip through the file system, so this reads
the descriptor itself through ``inotify_simple`` (a ctypes wrapper of the three system calls).
Whatever the watcher cannot vouch for makes the next check a whole one (:meth:`take` returns
None): watches just added (a change before a watch existed was not queued), a queue overflow,
a watch that could not be added (``max_user_watches``), another process's snapshot, a pass
that failed after its events were taken. Only Linux has inotify; elsewhere :func:`open_watcher`
gives None and every check stats the tree as before.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .freshness import Snapshot

# inotify masks (linux/inotify.h), spelled here so the module imports without the library.
_MODIFY, _ATTRIB, _CLOSE_WRITE = 0x2, 0x4, 0x8
_MOVED_FROM, _MOVED_TO, _CREATE, _DELETE = 0x40, 0x80, 0x100, 0x200
_DELETE_SELF, _MOVE_SELF = 0x400, 0x800
_Q_OVERFLOW, _IGNORED, _ISDIR, _ONLYDIR = 0x4000, 0x8000, 0x40000000, 0x01000000
#: Entry events: the folder's listing (and ctime) changed.
_ENTRY = _MOVED_FROM | _MOVED_TO | _CREATE | _DELETE
#: What a watch asks for: entries added, removed or renamed, contents written, stats changed,
#: and the folder itself going away.
MASK = _MODIFY | _ATTRIB | _CLOSE_WRITE | _ENTRY | _DELETE_SELF | _MOVE_SELF | _ONLYDIR


@dataclass
class Changes:
    """What events named since the changes were last settled: ``folders`` whose entries (or
    own stat) changed, ``files`` written or chmod'ed, ``watched`` keys of the snapshot's
    watched files (git's index, ignore files) touched. Empty: nothing the listing saw moved."""

    folders: set[str] = field(default_factory=set)
    files: set[str] = field(default_factory=set)
    watched: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.folders or self.files or self.watched)

    def update(self, other: Changes) -> None:
        self.folders |= other.folders
        self.files |= other.files
        self.watched |= other.watched


def open_watcher(root) -> TreeWatcher | None:
    """A watcher for ``root``, or None where inotify is not there (not Linux, no library)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        from inotify_simple import INotify

        return TreeWatcher(str(root), INotify(nonblocking=True))
    except (ImportError, OSError, AttributeError):
        return None


class TreeWatcher:
    """inotify watches over the folders a snapshot's listing entered (see the module docstring).

    Thread-safe: :meth:`take`, :meth:`settle`, :meth:`follow` and :meth:`invalidate` run on
    whichever thread checks or updates the index.
    """

    def __init__(self, root: str, inotify) -> None:
        self.root = root.rstrip(os.sep) or os.sep
        self._inotify = inotify
        self._lock = threading.Lock()
        self._wd: dict[int, str] = {}  # watch descriptor -> absolute folder
        self._by_dir: dict[str, int] = {}
        self._listed: dict[str, str] = {}  # absolute folder -> rel folder ("" for the root) it lists
        self._names: dict[str, dict[str, str]] = {}  # absolute folder -> {entry name: watched key}
        self._files: frozenset[str] = frozenset()
        self._pending = Changes()
        self._whole = True  # the next check must stat everything
        self._snapshot_id: tuple | None = None
        self.snapshot: Snapshot | None = None  # the one followed, kept for checks that stat nothing
        self.events = 0  # inotify events read so far (for tests and benchmarks)

    # -- following a snapshot ----------------------------------------------------------

    def follow(self, snapshot: Snapshot, snapshot_id: tuple | None) -> None:
        """Watch what ``snapshot``'s listing saw (its folders, the folders of its watched
        files). A watch added now did not see what happened before it, so the next check is
        a whole one unless every watch was already there."""
        base = self.root + os.sep if self.root != os.sep else os.sep
        listed = {(base + rel if rel else self.root): rel for rel in snapshot.folders}
        names: dict[str, dict[str, str]] = {}
        for key in snapshot.watched:
            path = key if os.path.isabs(key) else base + key
            folder, name = _existing_parent(path)
            names.setdefault(folder, {})[name] = key
        wanted = set(listed) | set(names)
        with self._lock:
            added = False
            for folder in wanted - set(self._by_dir):
                try:
                    wd = self._inotify.add_watch(folder, MASK)
                except OSError:  # gone meanwhile, unreadable, or out of watches
                    self._whole = True
                    continue
                self._wd[wd] = folder
                self._by_dir[folder] = wd
                added = True
            for folder in set(self._by_dir) - wanted:
                wd = self._by_dir.pop(folder)
                self._wd.pop(wd, None)
                with contextlib.suppress(OSError):
                    self._inotify.rm_watch(wd)
            self._listed, self._names = listed, names
            self._files = frozenset(snapshot.files)
            self.snapshot, self._snapshot_id = snapshot, snapshot_id
            if added:
                self._whole = True

    def follows(self, snapshot_id: tuple | None) -> bool:
        """Whether the snapshot on disk (by its file's identity) is the one followed."""
        return snapshot_id is not None and snapshot_id == self._snapshot_id

    # -- what changed ------------------------------------------------------------------

    def take(self) -> Changes | None:
        """Everything events named since the last :meth:`settle` (the kernel's queue drained
        now, without blocking); None when only a whole check can say (see the module
        docstring). What it returns stays pending until settled."""
        with self._lock:
            try:
                events = self._inotify.read(timeout=0)
            except OSError:
                self._whole = True
                events = []
            self.events += len(events)
            fresh = Changes()
            for ev in events:
                if ev.mask & _Q_OVERFLOW:
                    self._whole = True
                    continue
                folder = self._wd.get(ev.wd)
                if folder is None:
                    continue
                if ev.mask & (_DELETE_SELF | _MOVE_SELF | _IGNORED):
                    self._whole = True  # a watched folder went away: its watch is gone too
                    continue
                self._note(fresh, folder, ev)
            self._pending.update(fresh)
            if self._whole or self.snapshot is None:
                return None
            return Changes(set(self._pending.folders), set(self._pending.files), set(self._pending.watched))

    def _note(self, out: Changes, folder: str, ev) -> None:
        name = ev.name
        key = self._names.get(folder, {}).get(name)
        if key is not None:
            out.watched.add(key)
        rel = self._listed.get(folder)
        if rel is None:
            return  # a folder watched for a git or ignore file only
        if not name or ev.mask & _ENTRY:  # its own stat (chmod, touch) or its entries: its ctime moved
            out.folders.add(rel)
        else:
            path = f"{rel}/{name}" if rel else name
            if path in self._files:
                out.files.add(path)

    def settle(self) -> None:
        """The check (and the pass, if one ran) answered for everything taken: forget it."""
        with self._lock:
            self._pending = Changes()
            self._whole = False

    def invalidate(self) -> None:
        """Something went wrong after changes were taken: the next check is a whole one."""
        with self._lock:
            self._whole = True

    @property
    def watches(self) -> int:
        return len(self._wd)

    def close(self) -> None:
        with self._lock:
            with contextlib.suppress(OSError):
                self._inotify.close()
            self._wd.clear()
            self._by_dir.clear()
            self._whole = True


def _existing_parent(path: str) -> tuple[str, str]:
    """The deepest existing folder on ``path``'s way and the entry name in it that leads to
    ``path`` (a missing ``.git/info/exclude`` is watched for by its nearest folder)."""
    path = os.path.abspath(path)
    parent, name = os.path.split(path)
    while parent and not os.path.isdir(parent):
        parent, name = os.path.split(parent)
    return parent or os.sep, name
