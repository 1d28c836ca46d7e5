"""Retriever arms: one small protocol, one module each, one registry line each.

An arm turns a query into a ranking of chunks of the loaded index. Arms are built by the
indexer (their artifacts live in the index generation) and opened over a loaded
:class:`core.store.IndexView`; an arm that cannot open (missing dependency, no model) raises
:class:`ArmUnavailable` and is skipped with that one-line reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ..types import Hit

if TYPE_CHECKING:
    from ..store import IndexView


class ArmUnavailable(Exception):
    """Why an arm is skipped (one line, shown to the user)."""


class Arm(Protocol):
    name: str
    family: str

    def search(self, query: str, limit: int, allowed: np.ndarray | None = None) -> list[Hit]:
        """The arm's best ``limit`` chunks, best first; ``allowed`` masks chunk rows."""
        ...


def _bm25(view: "IndexView") -> Arm:
    from .bm25 import Bm25Arm

    return Bm25Arm(view)


def _fts5(view: "IndexView") -> Arm:
    from .fts5 import Fts5Arm

    return Fts5Arm(view)


def _dense(view: "IndexView") -> Arm:
    from .dense import DenseArm

    return DenseArm(view)


def _symbols(view: "IndexView") -> Arm:
    from .symbols import SymbolsArm

    return SymbolsArm(view)


def _deep(view: "IndexView") -> Arm:
    from .deep import DeepArm

    return DeepArm(view)


def _hybrid(view: "IndexView") -> Arm:
    from .hybrid import HybridArm

    return HybridArm(view)


def _lexical_ctx(view: "IndexView") -> Arm:
    from .lexical_ctx import LexicalCtxArm

    return LexicalCtxArm(view)


#: Every arm by name. Imports are deferred so a broken optional dependency only skips its arm.
REGISTRY: dict[str, Callable[["IndexView"], Arm]] = {
    "bm25": _bm25,
    "fts5": _fts5,
    "dense": _dense,
    "symbols": _symbols,
    "deep": _deep,
    "hybrid": _hybrid,
    "lexical+ctx": _lexical_ctx,
}

#: The arms always fused by default (:func:`default_arms` adds the optional ``deep``).
#: ``hybrid`` and ``lexical+ctx`` re-use other arms' signals and would double count them, so
#: they are single-retriever modes only.
DEFAULT_ARMS: tuple[str, ...] = ("bm25", "fts5", "dense", "symbols")


def default_arms() -> tuple[str, ...]:
    """The arms fused when none are named: :data:`DEFAULT_ARMS`, plus ``deep`` when its
    extra is installed (``pip install 'ranklens[deep]'``) and ``RANKLENS_DEEP`` is not 0."""
    from .deep.model import enabled_by_default

    return (*DEFAULT_ARMS, "deep") if enabled_by_default() else DEFAULT_ARMS
