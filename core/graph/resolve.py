"""Which definition a name means from where it is used: the closest.

Search-based navigation resolves a name by where its definitions are, not by types. From the
file that uses it, a definition is, best first: in the **same file**; in a module that file
**imports** (it uses the module's name: ``from .retry import``, ``retry.Do``, ``import
"./retry"``); in the **same directory** (a Go package, a Python package's siblings); or
**elsewhere**. A use resolves to its best tier's definitions, and says how many there were.
"""

from __future__ import annotations

import posixpath

from .edges import Graph

SAME_FILE, IMPORTED, SAME_DIRECTORY, ELSEWHERE = range(4)
#: How each tier is shown (the ``resolution`` of a caller or callee).
LABELS = ("same file", "imported", "same directory", "by name")
#: File names that say nothing of their module: its folder names it (``retry/__init__.py``,
#: ``retry/index.ts``, ``retry/mod.rs``).
GENERIC_STEMS = frozenset({"__init__", "index", "mod", "main", "lib", "init", "package", "module"})


def module_names(path: str) -> tuple[str, ...]:
    """The names a file's module goes by where it is imported: its stem (unless generic) and
    its folder's name (the package)."""
    folder, base = posixpath.split(path)
    stem = base.split(".", 1)[0]
    parent = posixpath.basename(folder)
    names = [] if stem in GENERIC_STEMS else [stem]
    if parent:
        names.append(parent)
    return tuple(n for n in names if n)


class Closeness:
    """The tier of a definition's file from a using file, with the imports looked up once."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def imports(self, user: str, definer: str) -> bool:
        """Whether file ``user`` uses a name of ``definer``'s module."""
        return any(user in self.graph.paths_using(name) for name in module_names(definer))

    def tier(self, user: str, definer: str) -> int:
        if user == definer:
            return SAME_FILE
        if self.imports(user, definer):
            return IMPORTED
        if posixpath.dirname(user) == posixpath.dirname(definer):
            return SAME_DIRECTORY
        return ELSEWHERE

    def best(self, user: str, definers: list[str]) -> tuple[int, list[int]]:
        """The best tier from ``user`` among the files ``definers`` (one per definition) and the
        positions in ``definers`` of the definitions in it."""
        tiers = [self.tier(user, d) for d in definers]
        top = min(tiers, default=ELSEWHERE)
        return top, [i for i, t in enumerate(tiers) if t == top]
