"""Walk mode: the tree walked with ``os.scandir``, honouring ignore files at every level."""

from __future__ import annotations

import os
import stat as stat_mod

from .ignore import _WALK_IGNORE_FILES, _compile, _Layer, _read_ignore_lines
from .results import DiscoveryResult
from .rules import _OUTSIDE, _UNREADABLE_DIR, _Collector, _inside, _Rules


class LinkMet(Exception):
    """A symbolic link met by a walk that may not follow links (:func:`_walk`'s ``known``)."""


def _discover_walk(root: str, root_real: str, rules: _Rules) -> DiscoveryResult:
    out = _Collector(rules)
    root_st = os.stat(root)
    out.folder("", root_st)
    _walk(root_real, rules, out, [(root, "", ())], {(root_st.st_dev, root_st.st_ino)})
    return out.result("walk")


def _walk(
    root_real: str,
    rules: _Rules,
    out: _Collector,
    stack: list[tuple[str, str, tuple[_Layer, ...]]],
    visited: set[tuple[int, int]],
    known: set[str] | None = None,
    entered: set[str] | None = None,
) -> None:
    """Walk from the folders on ``stack`` (absolute, relative, ignore layers of the parent),
    collecting into ``out``. With ``known`` (a listing redone folder by folder,
    :mod:`~core.discovery.relist`): folders in it are noted in ``entered`` when they would be
    entered, not walked, and a symbolic link raises :class:`LinkMet`."""
    ignore_files = _WALK_IGNORE_FILES if rules.respect_ignores else ()
    # ``visited``: (st_dev, st_ino) of every directory scanned: a symlink (or bind mount) back
    # to an ancestor is then recognised instead of recursing forever.
    # Symlinked directories are followed only after the real tree is done, so content
    # reachable both ways is listed under its real path, and only once.
    deferred: list[tuple[str, str, tuple[_Layer, ...], os.stat_result]] = []

    while stack or deferred:
        if not stack:
            deferred.sort(key=lambda d: d[1], reverse=True)
            abs_dir, rel_dir, layers, st = deferred.pop()
            key = (st.st_dev, st.st_ino)
            if key in visited:
                continue
            visited.add(key)
            out.folder(rel_dir, st)
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
            prefix = rel_dir + "/" if rel_dir else ""
            for name in present:
                out.watch(prefix + name, os.path.join(abs_dir, name))
            spec = _compile(_read_ignore_lines(abs_dir, present, rel_dir, out.digests))
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
                if known is not None:
                    raise LinkMet(rel)
                _walk_symlink(entry, name, rel, layers, root_real, rules, out, deferred)
            elif is_dir:
                rule = rules.dir_rule(name, rel, layers)
                if rule is not None:
                    out.exclude(rule, rel, is_dir=True)
                    continue
                if known is not None and rel in known:
                    entered.add(rel)
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                key = (st.st_dev, st.st_ino)
                if key in visited:
                    continue
                visited.add(key)
                out.folder(rel, st)
                stack.append((entry.path, rel, layers))
            elif entry.is_file(follow_symlinks=False):
                out.consider(name, rel, layers, entry.stat)


def _walk_symlink(
    entry: os.DirEntry,
    name: str,
    rel: str,
    layers: tuple[_Layer, ...],
    root_real: str,
    rules: _Rules,
    out: _Collector,
    deferred: list[tuple[str, str, tuple[_Layer, ...], os.stat_result]],
) -> None:
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
        deferred.append((entry.path, rel, layers, st))
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
