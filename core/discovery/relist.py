"""A walk-mode listing redone only in the folders that changed since the last one.

A file added, removed or renamed changes its folder; :mod:`core.index.freshness` finds those folders
by stat. Each is listed again with the ignore layers of its ancestors (their ignore files have
not changed, or the freshness check would have asked for a whole listing), a new sub-folder is
walked whole, and what the last listing held directly in those folders (files, passed-over
entries, ignore and too-large files, and everything under a sub-folder that is gone or now
passed over) is replaced. Exclusions are counted again from the entries, so ``excluded``,
``skipped`` and the warning come out as a whole listing would give them.

It gives up (None: list the whole tree) where the answer could differ from a whole listing's:
a symbolic link in a folder to list, a folder whose set of ignore files changed (what it holds
below could change), a folder gone whose parent did not change, or a root that is not a folder.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Iterable
from pathlib import Path

from .ignore import _WALK_IGNORE_FILES, _compile, _Layer, _read_ignore_lines
from .results import DiscoveryResult, FileEntry
from .rules import ABSENT, DiscoveryOptions, _Collector, _Rules
from .walk import LinkMet, _walk


def _parent(rel: str) -> str:
    return rel.rpartition("/")[0]


def relist(
    root: Path | str, options: DiscoveryOptions, base: DiscoveryResult, changed: Iterable[str]
) -> DiscoveryResult | None:
    """``base`` (the last walk-mode listing, with the current stats of its files) listed again
    in the ``changed`` folders; None when only a whole listing can answer (module docstring)."""
    root_str = os.path.abspath(os.fspath(root))
    root_real = os.path.realpath(root_str)
    if not os.path.isdir(root_str):
        return None
    rules = _Rules(options)
    names = _WALK_IGNORE_FILES if rules.respect_ignores else ()
    known = set(base.folders)
    todo = sorted(set(changed), key=lambda r: (r.count("/") if r else -1, r))  # parents first
    redone: list[str] = []
    gone: set[str] = set()
    out = _Collector(rules)
    entered: set[str] = set()
    layer_cache: dict[str, tuple[_Layer, ...]] = {}

    def own_layer(rel_dir: str, layers: tuple[_Layer, ...]) -> tuple[_Layer, ...]:
        prefix = rel_dir + "/" if rel_dir else ""
        present = [n for n in names if base.watched.get(prefix + n, ABSENT) != ABSENT]
        if not present:
            return layers
        spec = _compile(_read_ignore_lines(os.path.join(root_str, rel_dir), present, rel_dir))
        return (*layers, (prefix, spec)) if spec is not None else layers

    def through(rel_dir: str) -> tuple[_Layer, ...]:
        """The layers in force inside ``rel_dir`` (its own ignore files included)."""
        found = layer_cache.get(rel_dir)
        if found is None:
            above = through(_parent(rel_dir)) if rel_dir else ()
            found = layer_cache[rel_dir] = own_layer(rel_dir, above)
        return found

    def under_gone(rel: str) -> bool:
        while rel:
            rel = _parent(rel)
            if rel in gone:
                return True
        return False

    for rel_dir in todo:
        if rel_dir in gone or under_gone(rel_dir):
            continue
        parent = _parent(rel_dir)
        if rel_dir and parent in redone and rel_dir not in entered:
            gone.add(rel_dir)  # its parent no longer enters it (removed, renamed or now passed over)
            continue
        abs_dir = os.path.join(root_str, rel_dir) if rel_dir else root_str
        try:
            st = os.lstat(abs_dir)
        except OSError:
            st = None
        if st is None or not stat_mod.S_ISDIR(st.st_mode):
            if rel_dir and parent in known and parent not in todo:
                return None  # gone, yet its parent did not change: do not guess
            gone.add(rel_dir)
            continue
        out.folder(rel_dir, st)
        try:
            _walk(
                root_real,
                rules,
                out,
                [(abs_dir, rel_dir, through(parent) if rel_dir else ())],
                {(st.st_dev, st.st_ino)},
                known=known - {rel_dir},
                entered=entered,
            )
        except LinkMet:
            return None
        redone.append(rel_dir)
        prefix = rel_dir + "/" if rel_dir else ""
        before = {n for n in _WALK_IGNORE_FILES if base.watched.get(prefix + n, ABSENT) != ABSENT}
        after = {n for n in _WALK_IGNORE_FILES if prefix + n in out.watched}
        if names and before != after:
            return None  # a new or removed ignore file: what lies below may be decided anew
    # Sub-folders of a redone folder that it no longer enters, and all below them, are gone.
    redone_set = set(redone)
    for rel in known:
        if rel and _parent(rel) in redone_set and rel not in entered and rel not in out.folders:
            gone.add(rel)
    gone_all = {rel for rel in known if rel in gone or under_gone(rel)}
    drop = redone_set | gone_all

    keep = _Collector(rules)
    keep.files = [f for f in base.files if _parent(f.path) not in drop] + out.files
    for rule, rel, is_dir in base.exclusions:
        if _parent(rel) not in drop:
            keep.exclude(rule, rel, is_dir)
    for rule, rel, is_dir in out.entries:
        keep.exclude(rule, rel, is_dir)
    keep.folders = {k: v for k, v in base.folders.items() if k not in gone_all and k not in redone_set}
    keep.folders.update(out.folders)
    keep.watched = {k: v for k, v in base.watched.items() if os.path.isabs(k) or _parent(k) not in drop}
    keep.watched.update(out.watched)
    keep.digests = {k: v for k, v in base.digests.items() if _parent(k) not in drop}
    keep.digests.update(out.digests)
    return keep.result("walk")


def with_stats(base: DiscoveryResult, stats: dict[str, os.stat_result]) -> DiscoveryResult:
    """``base`` with the files in ``stats`` given those stats."""
    if not stats:
        return base
    files = [
        FileEntry(f.path, st.st_size, st.st_mtime_ns, st.st_ctime_ns) if (st := stats.get(f.path)) is not None else f
        for f in base.files
    ]
    return DiscoveryResult(
        files, base.skipped, base.excluded, base.mode, base.folders, base.watched, base.exclusions, base.digests
    )
