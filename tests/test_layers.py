"""The direction of core's packages: a package imports only from the ones below it.

core/ is grouped by what its modules do (core/__init__.py draws the map). Every import inside
core, at module level, inside a function (lazy) or under ``if TYPE_CHECKING``, must point to
its own package or to a package of a lower tier: none upward, none sideways to another package
of the same tier. A new package must be given its tier here. Read from the source (``ast``),
so nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "core"

#: Each package of core/ and its tier. The modules directly in core/ (the engine and the
#: surfaces built on it: service, session, agent, handoff, judgments, milvus_engine) are
#: :data:`SURFACES`; core/__init__.py holds only ``__version__`` and counts as ``base``.
TIERS = {
    "base": 0,
    "text": 1,
    "vectors": 1,
    "chunking": 2,
    "discovery": 2,
    "storage": 2,
    "arms": 3,
    "query": 4,
    "graph": 5,
    "index": 6,
    "evaluation": 6,
    "backends": 7,
}
SURFACES = "surfaces"
TIERS[SURFACES] = 8
#: The packages whose __init__.py is their map and nothing else: no import, so importing one of
#: their modules loads no other (a warm query must not load the indexer: tests/test_engine.py).
MAP_ONLY = ("base", "text", "storage", "query", "graph", "index")


def _module(path: Path) -> str:
    """``core/query/ranking.py`` -> ``query.ranking``; ``core/arms/__init__.py`` -> ``arms``;
    ``core/__init__.py`` -> ``""``."""
    parts = list(path.relative_to(CORE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module(p): p for p in sorted(CORE.rglob("*.py"))}


def _package(module: str) -> str:
    """The package a module of core belongs to (see :data:`TIERS`)."""
    if not module:
        return "base"
    first, _, rest = module.partition(".")
    if rest or (CORE / first).is_dir():
        return first
    return SURFACES


def _imports(module: str) -> list[tuple[int, str]]:
    """``(line, target module)`` of every import of core by ``module``, wherever it is written."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                up = node.level - 1
                assert up <= len(base), f"{path}:{node.lineno}: the import climbs out of core"
                parts = base[: len(base) - up] + (node.module.split(".") if node.module else [])
                target = ".".join(parts)
            elif node.module and (node.module == "ranklens.core" or node.module.startswith("ranklens.core.")):
                target = node.module.removeprefix("ranklens.core").lstrip(".")
            else:
                continue
            for alias in node.names:  # ``from ..base import npyfile`` imports the module base.npyfile
                sub = f"{target}.{alias.name}" if target else alias.name
                out.append((node.lineno, sub if sub in MODULES else target))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("ranklens.core"):
                    out.append((node.lineno, alias.name.removeprefix("ranklens.core").lstrip(".")))
    return out


def package_edges() -> list[tuple[str, str, str]]:
    """``(where, from package, to package)`` of every import between two packages of core."""
    edges = []
    for module in MODULES:
        for line, target in _imports(module):
            src, dst = _package(module), _package(target)
            if src != dst:
                edges.append((f"core/{MODULES[module].relative_to(CORE)}:{line} imports {target or 'core'}", src, dst))
    return edges


def test_every_package_of_core_has_a_tier():
    packages = {p.parent.name for p in CORE.glob("*/__init__.py")}
    assert packages - TIERS.keys() == set(), "a new package of core/: give it its tier in TIERS"
    assert TIERS.keys() - packages == {SURFACES}, "a package in TIERS is gone from core/"


def test_every_import_of_core_names_a_module_of_core():
    """A lazy import of a module that moved fails only when it runs: here it fails at once."""
    missing = {
        f"core/{MODULES[module].relative_to(CORE)}:{line} imports {target}"
        for module in MODULES
        for line, target in _imports(module)
        if target not in MODULES
    }
    assert sorted(missing) == []


def test_no_package_imports_upward_or_sideways():
    wrong = [
        f"{where} ({src}, tier {TIERS[src]} -> {dst}, tier {TIERS[dst]})"
        for where, src, dst in package_edges()
        if TIERS[dst] >= TIERS[src]
    ]
    assert wrong == []


def test_the_test_sees_the_imports_it_checks():
    """The reader resolves each form: a lazy import, one under TYPE_CHECKING, ``from .. import``
    of a module and of a name, and a relative import two packages up."""
    edges = {(where.split(":")[0], src, dst) for where, src, dst in package_edges()}
    assert ("core/engine.py", SURFACES, "arms") in edges
    assert ("core/index/batches.py", "index", "query") in edges  # lazy: the file order's priors
    assert ("core/index/indexer.py", "index", "base") in edges  # from .. import __version__
    assert ("core/arms/protocol.py", "arms", "discovery") in edges  # under TYPE_CHECKING
    assert ("core/vectors/scan.py", "vectors", "base") in edges  # from ..base import npyfile
    assert ("core/arms/deep/build.py", "arms", "storage") in edges  # from ...storage.store import


def test_the_new_packages_init_is_a_map_of_its_modules_and_imports_nothing():
    for name in MAP_ONLY:
        init = CORE / name / "__init__.py"
        body = ast.parse(init.read_text(encoding="utf-8")).body
        assert len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant), (
            f"{init}: a docstring and nothing else"
        )
        doc = body[0].value.value
        modules = sorted(p.stem for p in (CORE / name).glob("*.py") if p.name != "__init__.py")
        missing = [m for m in modules if f"``{m}``" not in doc]
        assert missing == [], f"{init}'s docstring should name each of its modules: {missing}"
