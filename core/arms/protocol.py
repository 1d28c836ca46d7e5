"""What an arm is to the rest of ranklens.

:class:`ArmSpec` is the one place an arm's name, family and shipped weights are given (each
arm module defines its ``SPEC``; :mod:`core.arms` lists them). :class:`Arm` is the opened arm
that answers queries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ..types import Hit

if TYPE_CHECKING:
    from ..store import IndexView


class ArmUnavailable(Exception):
    """Why an arm is skipped (one line, shown to the user)."""


class Arm(Protocol):
    name: str  # the arm's name, tagging its hits (its family is its spec's)

    def search(self, query: str, limit: int, allowed: np.ndarray | None = None) -> list[Hit]:
        """The arm's best ``limit`` chunks, best first; ``allowed`` masks chunk rows."""
        ...


@dataclass(frozen=True)
class ArmSpec:
    """One arm: everything the indexer, the engine, the defaults and the CLI know of it."""

    name: str
    family: str
    #: Opens the arm over a committed generation (raises :class:`ArmUnavailable` to be skipped).
    open: Callable[["IndexView"], Arm]
    #: Fused when no arm is named (``all``) ...
    fused_by_default: bool = False
    #: ... with these shipped RRF weights, tuned without the optional ``deep`` arm and with
    #: it (None: as ``weight``; an arm given none weighs 1.0).
    weight: float | None = None
    weight_with_deep: float | None = None
    #: For an arm needing an optional extra: whether it is installed and switched on here
    #: (only then is it fused by default). None: always.
    enabled: Callable[[], bool] | None = None

    @property
    def optional(self) -> bool:
        return self.enabled is not None

    def default_weight(self, with_deep: bool) -> float:
        weight = self.weight_with_deep if with_deep and self.weight_with_deep is not None else self.weight
        return 1.0 if weight is None else weight
