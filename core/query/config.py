"""Per-root fusion settings: the weights and RRF k that ``ranklens tune --save`` found.

Stored as ``config.json`` in the root's index folder (:func:`core.storage.store.index_dir`), written
atomically::

    {"weights": {"bm25": 0.8, "fts5": 1.0, "dense": 1.4, "symbols": 1.2}, "k": 30,
     "tuned": {"queries": "evals/ranklens.jsonl", "n": 40, ...}, "deep": true}

``"deep": true`` turns the optional deep arm on for this root (``ranklens index --deep``
writes it, ``--no-deep`` writes false; :func:`set_deep`); without it the arm is off, whatever
is installed.

The CLI's ``query``/``eval`` and the TUI start from :func:`load_config`; explicit
``--weights``/``--rrf-k`` win over it. Without a saved config (and for arms it does not
name) the shipped defaults below apply.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from ..base.rrf import check_k, check_weight
from ..storage.store import CONFIG_FILE, index_dir

# The shipped defaults, chosen with the ranking stage's constants on the public code-search
# benchmark pooled with both labelled sets, cross-validated by repository
# (`python -m evals.tune_stage`; the README's "Measuring and tuning" gives the figures).
DEFAULT_K = 5.0


def default_weights(with_deep: bool | None = None) -> dict[str, float]:
    """The shipped weights of the arms fused by default, each arm's from its spec
    (:mod:`core.arms`): tuned with the optional ``deep`` arm or without it (None: whether it is
    a default arm with no root named, i.e. ``RANKLENS_DEEP=1`` and installed; a caller that
    knows deep cannot answer now passes False, and the optional arms are then left out)."""
    from .. import arms

    if with_deep is None:
        with_deep = "deep" in arms.default_arms()
    return {
        s.name: s.default_weight(with_deep)
        for s in arms.REGISTRY.values()
        if s.fused_by_default and (with_deep or not s.optional)
    }


def __getattr__(name: str):
    # Derived from the registry when asked, so no copy goes stale: ``DEFAULT_WEIGHTS``, the
    # four arms every install has (bm25 0.4, fts5 0.4, dense 0.8, symbols 0.4), and
    # ``DEFAULT_WEIGHTS_DEEP``, with the deep extra installed and deep fused by default (bm25
    # 0.8, fts5 0.4, dense 0.4, symbols 0.8, deep 1.4: held out 0.762 against bm25's 0.724).
    if name == "DEFAULT_WEIGHTS":
        return default_weights(False)
    if name == "DEFAULT_WEIGHTS_DEEP":
        return default_weights(True)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ConfigError(ValueError):
    """The root's config file exists but cannot be used (one line, names the file)."""


def config_path(root: Path | str, cache_dir: Path | None = None) -> Path:
    """Where the config of ``root`` lives (it may not exist)."""
    return index_dir(Path(root).expanduser().resolve(), cache_dir) / CONFIG_FILE


def set_deep(root: Path | str, on: bool, cache_dir: Path | None = None) -> Path:
    """Turn the deep arm on (or off) for ``root``: its config's ``deep`` key, written
    atomically with every other key kept. Returns the path; :class:`ConfigError` when the
    existing file cannot be used."""
    from ..base.atomic import write_json_atomic

    path = config_path(root, cache_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}); fix or delete it") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object; fix or delete it")
    if data.get("deep") is on:
        return path
    data["deep"] = on
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, data)
    return path


def default_config(with_deep: bool | None = None) -> dict:
    return {"weights": default_weights(with_deep), "k": DEFAULT_K}


def load_config(root: Path | str, cache_dir: Path | None = None, *, with_deep: bool | None = None) -> dict:
    """``{"weights": {arm: w}, "k": k}`` of ``root``: its saved config over the shipped defaults.

    Raises :class:`ConfigError` for a file that is unreadable, not JSON or holds bad values.
    """
    path = config_path(root, cache_dir)
    if with_deep is None:  # whether deep is a default arm of this root
        from ..arms import default_arms

        with_deep = "deep" in default_arms(path.parent)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return default_config(with_deep)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno})") from None
    return parse_config(data, str(path), with_deep=with_deep)


def parse_config(data: object, source: str = "config", *, with_deep: bool | None = None) -> dict:
    """Validate a config object into ``{"weights": …, "k": …}`` (extra keys are ignored)."""
    from ..arms import REGISTRY

    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a JSON object")
    out = default_config(with_deep)
    weights = data.get("weights", {})
    if not isinstance(weights, dict):
        raise ConfigError(f'{source}: "weights" must be an object of arm: weight')
    for name, w in weights.items():
        if name not in REGISTRY:
            raise ConfigError(f"{source}: unknown retriever {name!r} in weights")
        try:
            out["weights"][name] = check_weight(name, w)
        except ValueError as exc:
            raise ConfigError(f"{source}: {exc}") from None
    if "k" in data:
        try:
            out["k"] = check_k(data["k"])
        except ValueError as exc:
            raise ConfigError(f"{source}: {exc}") from None
    if "deep" in data and not isinstance(data["deep"], bool):
        raise ConfigError(f'{source}: "deep" must be true or false, got {json.dumps(data["deep"])}')
    return out


def save_config(
    root: Path | str,
    weights: Mapping[str, float],
    k: float,
    *,
    extra: Mapping[str, object] | None = None,
    cache_dir: Path | None = None,
) -> Path:
    """Validate and atomically write ``root``'s config; returns its path."""
    from ..base.atomic import write_json_atomic

    data = {"weights": dict(weights), "k": k, **(dict(extra) if extra else {})}
    parsed = parse_config(data, "config")
    data.update(weights=parsed["weights"], k=parsed["k"])
    path = config_path(root, cache_dir)
    try:  # the store named for this root (core.backends) and its deep switch outlive a re-tune
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        kept = {}
    kept = kept if isinstance(kept, dict) else {}
    if isinstance(kept.get("store"), str) and "store" not in data:
        data["store"] = kept["store"]
    if isinstance(kept.get("deep"), bool) and "deep" not in data:
        data["deep"] = kept["deep"]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, data)
    return path
