"""One object for everything that turns the arms' rankings into the list a user sees.

:class:`FusionSettings` holds the arms fused (or the one arm whose own ranking is shown), each
arm's weight, the RRF constant k, whether the ranking stage runs (``priors``: its signals,
the path priors and diversity) and the stage's constants. :meth:`FusionSettings.resolve`
builds it the same way for every caller, from three layers, later ones winning:

1. the shipped defaults (:mod:`core.query.config`: the weights with or without the ``deep`` arm, k),
2. the root's tuned config (``ranklens tune --save``),
3. what the caller gives (command-line flags, the TUI's sliders, keyword arguments).

The engine, the CLI, the terminal UI, ``eval``/``tune`` and the MCP server all resolve here,
so one query gives one ranking whichever way it is asked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..base.rrf import check_k, check_weights
from .ranking import DEFAULT_PARAMS, Params


@dataclass(frozen=True)
class FusionSettings:
    """How arm rankings become one list (see the module docstring)."""

    #: The arms asked for, in order. One arm: its own ranking (spans not merged), re-ordered
    #: by the priors; several: fused.
    arms: tuple[str, ...]
    #: Arm -> weight (>= 0); an arm not named weighs 1.0.
    weights: Mapping[str, float] = field(default_factory=dict)
    #: The RRF constant (1..10^6).
    k: float = 5.0
    #: Whether the ranking stage (signals, priors, diversity) re-scores the fused list.
    priors: bool = True
    #: The ranking stage's constants.
    stage: Params = DEFAULT_PARAMS

    def __post_init__(self) -> None:
        object.__setattr__(self, "arms", tuple(dict.fromkeys(self.arms)))
        object.__setattr__(self, "weights", check_weights(self.weights))
        object.__setattr__(self, "k", check_k(self.k))

    @property
    def single(self) -> str | None:
        """The arm whose own ranking is shown, or None when several arms are fused."""
        return self.arms[0] if len(self.arms) == 1 else None

    def weight(self, arm: str) -> float:
        return self.weights.get(arm, 1.0)

    def fused_weights(self) -> dict[str, float]:
        """The weight of every arm asked for (the JSON envelope's ``weights``)."""
        return {a: self.weight(a) for a in self.arms}

    def with_(self, **changes) -> FusionSettings:
        """A copy with some fields changed (``weights`` merge over the current ones)."""
        if "weights" in changes and changes["weights"] is not None:
            changes["weights"] = {**self.weights, **changes["weights"]}
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def to_dict(self) -> dict:
        return {"arms": list(self.arms), "weights": self.fused_weights(), "k": self.k, "priors": self.priors}

    @classmethod
    def resolve(
        cls,
        root: Path | str | None = None,
        *,
        arms: Iterable[str] | None = None,
        weights: Mapping[str, float] | None = None,
        k: float | None = None,
        priors: bool | None = None,
        stage: Params | None = None,
        with_deep: bool | None = None,
        cache_dir: Path | None = None,
        config: Mapping | None = None,
    ) -> FusionSettings:
        """Shipped defaults, then ``root``'s tuned config, then these arguments.

        ``arms``: default :func:`core.arms.default_arms` of ``root``. ``weights``: per arm, over the
        config's (the arms it does not name keep theirs). ``with_deep``: whether the shipped
        weights are those tuned with the ``deep`` arm (default: whether it is asked for);
        a caller that knows deep cannot answer passes False, so the other arms keep the
        weights tuned without it. ``config``: an already loaded config (else read from
        ``root``; raises :class:`core.query.config.ConfigError` for a broken one, unless
        ``weights`` and ``k`` make it unnecessary).
        """
        from ..arms import default_arms
        from .config import ConfigError, config_path, default_config, load_config

        if arms is not None:
            names = tuple(arms)
        else:  # the root's own: deep where it is turned on for it
            names = tuple(default_arms(config_path(root, cache_dir).parent if root is not None else None))
        deep = ("deep" in names) if with_deep is None else with_deep
        if config is None:
            if root is None:
                config = default_config(deep)
            else:
                try:
                    config = load_config(root, cache_dir, with_deep=deep)
                except ConfigError:
                    if weights is None or k is None:
                        raise
                    config = default_config(deep)  # everything is given: the broken file is not needed
        merged = {**config["weights"], **dict(weights or {})}
        return cls(
            arms=names,
            weights=merged,
            k=float(config["k"]) if k is None else k,
            priors=True if priors is None else priors,
            stage=stage or DEFAULT_PARAMS,
        )


class FusedBy:
    """Read-only views of the :class:`FusionSettings` something was ranked with (its
    ``settings``): a search result, an evaluation run, a session."""

    settings: FusionSettings

    @property
    def weights(self) -> dict[str, float]:
        """The weight of every arm asked for."""
        return self.settings.fused_weights()

    @property
    def k(self) -> float:
        return self.settings.k

    @property
    def priors(self) -> bool:
        """Whether the ranking stage re-scores the fused list."""
        return self.settings.priors
