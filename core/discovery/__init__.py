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
secret-looking (:func:`core.text.secrets.is_secret_name`) and known-binary file names, the size
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

Modules: :mod:`~core.discovery.listing` (:func:`discover`, :func:`explain`),
:mod:`~core.discovery.git` and :mod:`~core.discovery.walk` (the two listing modes),
:mod:`~core.discovery.rules` (the built-in rules, :class:`DiscoveryOptions`, the collector),
:mod:`~core.discovery.ignore` (ignore-file matching), :mod:`~core.discovery.results` (what is
reported), :mod:`~core.discovery.read` (reading a file: :func:`read_text`, :func:`load_text`) and
:mod:`~core.discovery.relist` (a walk-mode listing redone in the folders that changed, for
:mod:`core.index.freshness`).
"""

from .listing import discover, explain
from .read import Loaded, load_text, read_text
from .results import DiscoveryResult, Exclusion, FileEntry, Rule, Verdict
from .rules import BINARY_EXTENSIONS, BUILTIN_EXCLUDED_DIRS, DiscoveryOptions

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
