"""Which definition a name means from where it is used: the closest.

Search-based navigation resolves a name by where its definitions are, not by types. From the
file that uses it, a definition is, best first: in the **same file**; in a module that file
**imports** (an import line or path names the module: ``from .retry import``, ``import
"example.com/app/retry"``, ``import { Retry } from "./retry"``); in the **same directory** (a Go package, a Python package's siblings); or
**elsewhere**. A use resolves to its best tier's definitions, and says how many there were.
"""

from __future__ import annotations

import posixpath

from ..chunking.refs import IMPORTS
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


#: A name defined in more files than this is too common to be told apart by imports (``get``,
#: ``run``): its definitions are ranked by file and folder only, which costs a set lookup, not
#: one a definition for every file that uses it.
MAX_IMPORT_CHECKS = 48


class Closeness:
    """The tier of a definition's file from a using file, with the imports looked up once."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._importers: dict[str, frozenset[str]] = {}

    def importers(self, definer: str) -> frozenset[str]:
        """The files that use a name of ``definer``'s module (kept for the call)."""
        found = self._importers.get(definer)
        if found is None:
            names = module_names(definer)
            found = frozenset().union(*(self.graph.paths_using(IMPORTS + name) for name in names))
            self._importers[definer] = found
        return found

    def imports(self, user: str, definer: str) -> bool:
        """Whether file ``user`` imports a name of ``definer``'s module (an import line or
        path names it)."""
        return user in self.importers(definer)

    def tier(self, user: str, definer: str, *, by_imports: bool = True) -> int:
        if user == definer:
            return SAME_FILE
        if by_imports and self.imports(user, definer):
            return IMPORTED
        if posixpath.dirname(user) == posixpath.dirname(definer):
            return SAME_DIRECTORY
        return ELSEWHERE

    def best(self, user: str, definers: list[str]) -> tuple[int, list[int]]:
        """The best tier from ``user`` among the files ``definers`` (one per definition) and the
        positions in ``definers`` of the definitions in it."""
        files = set(definers)
        by_imports = len(files) <= MAX_IMPORT_CHECKS
        tiers = {f: self.tier(user, f, by_imports=by_imports) for f in files}
        top = min(tiers.values(), default=ELSEWHERE)
        if top == IMPORTED:
            # Of modules imported alike (pydantic/fields.py, pydantic/v1/fields.py), the one more
            # of whose names the file's imports spell (``from pydantic.v1.fields import``).
            imported = [f for f in files if tiers[f] == IMPORTED]
            named = {f: self.named_parts(user, f) for f in imported}
            most = max(named.values())
            tiers.update({f: ELSEWHERE for f in imported if named[f] < most})
        return top, [i for i, d in enumerate(definers) if tiers[d] == top]

    def named_parts(self, user: str, definer: str) -> int:
        """How many of ``definer``'s path parts (folders and stem) file ``user``'s imports spell
        (a count, not a share: ``from ._websocket.reader import`` spells one part of
        ``_websocket/reader_c.py`` and one of ``streams.py``, which stay tied)."""
        parts = [p for p in definer.split("/")[:-1] if p] + list(module_names(definer)[:1])
        return sum(user in self.graph.paths_using(IMPORTS + part) for part in dict.fromkeys(parts))
