"""The public entry points: :func:`discover` (list a root) and :func:`explain` (one path)."""

from __future__ import annotations

import os
from pathlib import Path

from .git import _discover_git, _git_ignore_rule, _git_list
from .ignore import _EXTRA_IGNORE_FILES, _WALK_IGNORE_FILES, _extra_layer
from .results import DiscoveryResult, Rule, Verdict
from .rules import _OUTSIDE, ABSENT, DiscoveryOptions, _Collector, _inside, _Rules, file_state
from .walk import _discover_walk


def discover(root: Path | str, options: DiscoveryOptions | None = None, *, watch: bool = False) -> DiscoveryResult:
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

    watch : bool
        Also fill :attr:`DiscoveryResult.folders` and ``watched`` in git mode (a few more
        git calls and a walk of the folders; the walk mode always fills them, at no cost).

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
        return _discover_git(root_str, root_real, paths, rules, watch)
    found = _discover_walk(root_str, root_real, rules)
    if watch:
        # A repository created above root would turn this listing into git's.
        parent = os.path.dirname(root_str)
        while True:
            found.watched[os.path.join(parent, ".git")] = _state(os.path.join(parent, ".git"))
            if os.path.dirname(parent) == parent:
                break
            parent = os.path.dirname(parent)
    return found


def _state(path: str) -> tuple[int, int, int]:
    try:
        return file_state(os.stat(path))
    except OSError:
        return ABSENT


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
