"""Git mode: the files git tracks or would track, and git's own word on an ignored path."""

from __future__ import annotations

import os
import re
import stat as stat_mod
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

from .ignore import _EXTRA_IGNORE_FILES, _extra_layer, _Layer
from .results import DiscoveryResult, Rule
from .rules import _EXCLUDED_DIR_SUFFIXES, _OUTSIDE, _Collector, _inside, _Rules

# Environment variables that would point git at another repository than root's.
_GIT_ENV_OVERRIDES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX")
_GIT_TIMEOUT_S = 60.0


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
            ["git", *args],
            cwd=root,
            env=_git_env(),
            input=stdin,
            capture_output=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
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


def _discover_git(root: str, root_real: str, paths: list[str], rules: _Rules, watch: bool = False) -> DiscoveryResult:
    out = _Collector(rules)
    if watch:  # before the listing is read: a change while it is read shows next time
        _watch_git(root, rules, out)
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


def _git_stat(abs_path: str, rel: str, root_real: str, out: _Collector) -> Callable[[], os.stat_result | None]:
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


def _watch_git(root: str, rules: _Rules, out: _Collector) -> None:
    """Note what a later change to git's listing would change (:attr:`DiscoveryResult.folders`
    and ``watched``): git's index, config and excludes files, the ignore files above ``root``
    up to the work tree's top, and every folder git would look into for untracked files (those
    it ignores left out, so nothing written inside them is taken for a change), with the
    ignore files they hold."""
    proc = _git(root, "rev-parse", "--absolute-git-dir", "--show-toplevel", "--git-path", "info/exclude")
    if proc is None or proc.returncode != 0:
        return
    lines = os.fsdecode(proc.stdout).splitlines()
    if len(lines) < 3:
        return
    git_dir, top, exclude = lines[0], lines[1], lines[2]
    if not os.path.isabs(exclude):
        exclude = os.path.join(root, exclude)
    for path in (
        os.path.join(git_dir, "index"),
        os.path.join(git_dir, "config"),
        exclude,
        _global_excludes(root),
        os.path.expanduser("~/.gitconfig"),
    ):
        if path:
            out.watch(os.path.abspath(path))
    rel_top = os.path.relpath(root, top)
    if rel_top != ".":  # .gitignore files between the work tree's top and root apply too
        folder = os.path.dirname(os.path.abspath(root))
        for _ in rel_top.split(os.sep):
            out.watch(os.path.join(folder, ".gitignore"))
            folder = os.path.dirname(folder)
    ignored: set[str] = set()
    if rules.respect_ignores:
        listing = _git(
            root,
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
            *_git_exclude_args(rules.excluded_dirs),
        )
        if listing is not None and listing.returncode == 0:
            ignored = {p[:-1] for p in os.fsdecode(listing.stdout).split("\0") if p.endswith("/")}
    names = _EXTRA_IGNORE_FILES if rules.respect_ignores else ()
    stack: list[tuple[str, tuple[_Layer, ...]]] = [("", _extra_layer(root, "", (), names))]
    while stack:
        rel_dir, layers = stack.pop()
        abs_dir = os.path.join(root, rel_dir) if rel_dir else root
        try:
            out.folder(rel_dir, os.stat(abs_dir))
            with os.scandir(abs_dir) as it:
                entries = list(it)
        except OSError:
            continue
        prefix = rel_dir + "/" if rel_dir else ""
        for entry in entries:
            name = entry.name
            if name in (".gitignore", *_EXTRA_IGNORE_FILES):
                out.watch(prefix + name, entry.path)
                continue
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue  # git never descends through a directory link
            except OSError:
                continue
            rel = prefix + name
            if rel in ignored or rules.dir_rule(name, rel, layers) is not None:
                continue
            if os.path.lexists(os.path.join(entry.path, ".git")):
                continue  # another repository (or a submodule): git does not list its files
            stack.append((rel, _extra_layer(root, rel, layers, names)))


def _global_excludes(root: str) -> str:
    """git's global excludes file: ``core.excludesFile``, else ``$XDG_CONFIG_HOME/git/ignore``."""
    proc = _git(root, "config", "--path", "--get", "core.excludesFile")
    if proc is not None and proc.returncode == 0 and proc.stdout.strip():
        return os.path.expanduser(os.fsdecode(proc.stdout.strip()))
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return os.path.join(config, "git", "ignore")
