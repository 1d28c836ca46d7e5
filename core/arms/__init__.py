"""Retriever arms: one small protocol, one module each, one registry line each.

An arm turns a query into a ranking of chunks of the loaded index. Each arm module defines
its ``SPEC`` (:class:`ArmSpec`: name, family, shipped weights, how it opens, and how it
builds and updates its part of a generation, :class:`core.arms.protocol.ArmBuild`), and
:data:`MODULES` lists the modules: :data:`REGISTRY`, the indexer's build, the default arms,
the shipped weights (:mod:`core.query.config`) and the command line's arm lists all derive from it,
so adding an arm is its module and a line there (``tests/toy_arm.py`` is one). An arm opens over a loaded :class:`core.storage.store.IndexView`; one
that cannot open (missing dependency, no model) raises :class:`ArmUnavailable` and is
skipped with that one-line reason.

Every arm module is imported with this package, so its top level imports nothing optional:
a missing dependency is imported where the arm opens (and then only skips that arm).
"""

from __future__ import annotations

from importlib import import_module

from .protocol import Arm, ArmSpec, ArmUnavailable

#: The arm modules under ``core.arms``, in the order their arms are listed, run and fused.
MODULES = ("bm25", "fts5", "dense", "symbols", "deep", "hybrid", "lexical_ctx")

#: Every arm by name.
REGISTRY: dict[str, ArmSpec] = {}
for _module in MODULES:
    _spec: ArmSpec = import_module(f".{_module}", __name__).SPEC
    REGISTRY[_spec.name] = _spec


def always_fused() -> tuple[str, ...]:
    """The arms fused by default whatever is installed."""
    return tuple(s.name for s in REGISTRY.values() if s.fused_by_default and not s.optional)


def default_arms(directory=None) -> tuple[str, ...]:
    """The arms fused when none are named: :func:`always_fused`, plus each optional arm
    (``deep``) switched on for the root whose index folder is ``directory`` (its config, or
    ``RANKLENS_DEEP=1``; None: no root, only the variable) and installed."""
    return tuple(
        s.name for s in REGISTRY.values() if s.fused_by_default and (s.enabled is None or s.enabled(directory))
    )


def optional_defaults() -> tuple[str, ...]:
    """The optional arms fused by default where installed and turned on (``deep``)."""
    return tuple(s.name for s in REGISTRY.values() if s.fused_by_default and s.optional)


def __getattr__(name: str):
    # Read from the registry when asked, so nothing holds a stale copy of it.
    if name == "DEFAULT_ARMS":  # the arms always fused by default; ``hybrid`` and
        # ``lexical+ctx`` re-use other arms' signals and would double count them
        return always_fused()
    if name == "ARM_FAMILIES":
        return {s.name: s.family for s in REGISTRY.values()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ARM_FAMILIES",
    "DEFAULT_ARMS",
    "MODULES",
    "REGISTRY",
    "Arm",
    "ArmSpec",
    "ArmUnavailable",
    "always_fused",
    "default_arms",
    "optional_defaults",
]
