"""Answering one search request, the same way for every front end.

The command line (``ranklens query``, ``--batch``), the MCP server and ``eval`` check a
request here (:func:`check_request`: the query text, top-k, retrievers, weights, k, filters),
open the engine the same way (:func:`open_engine`), resolve its fusion settings the same way
(:func:`settings_for`) and answer it with :func:`answer_query`, so one question gets one
ranking and one JSON envelope wherever it is asked.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from .arms import REGISTRY, default_arms
from .arms.protocol import IndexSettings
from .base.errors import RequestError
from .base.rrf import check_k, check_weight
from .discovery import DiscoveryOptions
from .engine import DEFAULT_TOP_K, MAX_TOP_K, Engine, QueryError
from .handoff import envelope
from .query.config import ConfigError
from .query.settings import FusionSettings

RETRIEVERS = ("all", *REGISTRY)


def parse_weights(text: str | None) -> dict[str, float]:
    """``"dense:1.5,bm25:0.5"`` -> ``{"dense": 1.5, "bm25": 0.5}``; RequestError when malformed."""
    out: dict[str, float] = {}
    if not text:
        return out
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition(":")
        name = name.strip()
        if not sep or not name:
            raise RequestError(f"malformed weight {part!r}: use NAME:VALUE, e.g. dense:1.5,bm25:0.5")
        if name not in REGISTRY:
            raise RequestError(f"unknown retriever {name!r} in --weights (choose from {', '.join(REGISTRY)})")
        try:
            out[name] = check_weight(name, float(value))
        except ValueError as exc:
            raise RequestError(f"bad weight {part!r}: {exc}") from None
    return out


def open_engine(
    root: str | Path,
    model: str | None = None,
    notify=None,
    hidden: bool | None = None,
    no_ignore: bool | None = None,
    *,
    store: str | None = None,
    repos: str | None = None,
    name: str | None = None,
) -> Engine:
    """The engine over ``root`` with the chunking, model and discovery settings every front end
    uses (RequestError when ``root`` is not a folder). ``store``: where the index lives
    (``--store``; None: the configured store, else local, :func:`core.backends.resolve_store`);
    ``repos``: ``--repo``, the repositories a shared store's query searches; ``name``: the
    root's repository name in a shared store (default: its folder's)."""
    path = Path(root).expanduser()
    if not path.is_dir():
        raise RequestError(f"{root} is not a directory")
    options = DiscoveryOptions(hidden=hidden, no_ignore=no_ignore)
    settings = IndexSettings(model=model, options=options)
    from .backends import StoreError, repo_names, resolve_store

    try:
        spec = resolve_store(store, path)
        names = repo_names(repos)
    except StoreError as exc:
        raise RequestError(str(exc)) from None
    if spec.local:
        if names is not None:
            raise RequestError("--repo searches a shared store: give --store too")
        return Engine(path, settings, notify=notify)
    from .milvus_engine import MilvusEngine  # imports nothing of pymilvus until it opens

    try:
        return MilvusEngine(path, settings, store=spec, repos=names, name=name, notify=notify)
    except StoreError as exc:
        raise RequestError(str(exc)) from None


#: A query embeds at most this many texts for the deep arm before answering (about a minute
#: on 2 cores); a first build is left to `ranklens index`, and deep sits that query out.
QUERY_DEEP_LIMIT = 200


@dataclass
class QueryRequest:
    """One query's text and options, checked (:func:`check_request`)."""

    text: str
    top_k: int = DEFAULT_TOP_K
    retriever: str = "all"
    weights_text: str | None = None  # as given (None: not given), for settings_for
    weights: dict[str, float] = field(default_factory=dict)
    rrf_k: float | None = None
    path_glob: str | None = None
    language: str | None = None
    priors: bool = True
    #: ``PATH:LINE``: answer with units like that one (:mod:`core.graph.like`), not ``text``.
    like: str | None = None

    @property
    def arms(self) -> list[str]:
        """The arms asked for, ``all`` being those fused whatever the root (:meth:`arms_of`)."""
        return fused_arms(self.retriever)

    def arms_of(self, engine: Engine) -> list[str]:
        """The arms asked for on ``engine``'s root (``all``: deep too where it is turned on)."""
        return fused_arms(self.retriever, getattr(engine, "directory", None))


def check_request(
    text: str,
    *,
    top_k: int = DEFAULT_TOP_K,
    retriever: str = "all",
    weights: str | None = None,
    rrf_k: float | None = None,
    path_glob: str | None = None,
    language: str | None = None,
    priors: bool = True,
    like: str | None = None,
) -> QueryRequest:
    """Check a query and its options: RequestError, one line naming every bad one. With
    ``like`` (a place), ``text`` may be empty: the unit's names and code are the question."""
    from .engine import check_query

    problems: list[str] = []

    def check(fn):
        try:
            return fn()
        except RequestError as exc:
            problems.extend(exc.all)
        except (TypeError, ValueError, QueryError) as exc:
            problems.append(str(exc))
        return None

    if not isinstance(retriever, str):
        problems.append("the retriever must be a name or a comma-separated list of names")
        retriever = "all"
    retriever = check(lambda: "all" if retriever.strip() == "all" else ",".join(fused_arms(retriever))) or "all"
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        problems.append(f"--top-k must be from 1 to {MAX_TOP_K}, got {top_k}")
    if rrf_k is not None:
        check(lambda: check_k(rrf_k))
    ws = check(lambda: parse_weights(weights)) or {}
    if language is not None:
        from .text.languages import LANGUAGE_NAMES

        if not isinstance(language, str):
            problems.append("the language must be a name such as python")
            language = None
        elif language.strip() and language.strip().lower() not in LANGUAGE_NAMES:
            # A filter on a name no chunk can have would answer "no results" for a typo.
            problems.append(f"unknown language {language!r} (known: {', '.join(LANGUAGE_NAMES)})")
        else:
            language = language.strip().lower() or None  # "": no filter, as before
    if like is not None:
        from .navigate import parse_place

        check(lambda: parse_place(like))
        text = text or str(like)
    text = check(lambda: check_query(text))
    if problems:
        raise RequestError.of(problems)
    return QueryRequest(text, top_k, retriever, weights, ws, rrf_k, path_glob, language, priors, like)


class NoAnswer(RuntimeError):
    """Every arm asked for was skipped or failed; ``skipped`` says why, arm by arm."""

    def __init__(self, skipped: list[tuple[str, str]]) -> None:
        super().__init__("no retriever could answer")
        self.skipped = skipped

    def detail(self) -> str:
        return f"{self} ({'; '.join(f'{name}: {reason}' for name, reason in self.skipped)})"


def deep_ready(stats) -> bool:
    """Whether the last index pass left the deep arm able to answer."""
    return not (stats.deep or stats.deep_deferred or stats.deep_busy)


def answer_query(
    engine: Engine, request: QueryRequest, *, deep: bool | None = None, hashes: bool = True
) -> tuple[dict, list, list[tuple[str, str]]]:
    """Run one checked query on an open index: ``(envelope, hits, skipped arms)``.

    The envelope is the handoff format (each hit with its span's ``sha256``) plus ``query_ms``,
    the time spent here, and ``partial`` when the index was still being built (how many of
    its files the arms searched, :class:`core.storage.store.Partial`). ``deep``: whether the deep arm can answer (:func:`deep_ready`); when
    it cannot it takes its weights with it. The CLI's ``query`` and the MCP server both answer
    through this, so they rank alike. ``hashes=False`` leaves ``sha256`` to a caller that reads
    the files itself.
    """
    t0 = time.perf_counter()
    settings = settings_for(engine, request, deep=deep)
    asked, unit = request, None
    if request.like is not None:  # more like this: the unit's names and code ask (core.graph.like)
        from .navigate import like_request

        unit, asked = like_request(engine, request.like, request)
    try:
        result = engine.search(
            asked.text, settings, top_k=asked.top_k, path_glob=request.path_glob, language=request.language
        )
    except QueryError as exc:
        raise RequestError(str(exc)) from None
    if not result.answered:
        raise NoAnswer(result.skipped)
    hits = result.hits
    data = envelope(
        query=asked.text,
        mode=request.retriever,
        retrievers=result.answered,
        skipped=result.skipped,
        weights=settings.fused_weights(),
        k=settings.k,
        hits=hits,
        priors=request.priors,
        root=engine.root,
        with_hashes=hashes,
        roots=repo_roots(engine, hits),
    )
    if unit is not None:
        from .navigate import without_unit

        data, hits = without_unit(unit, data, hits, request.top_k)
    partial = getattr(result, "partial", None)
    if partial is not None:
        data["partial"] = partial.to_dict()
    data["query_ms"] = round((time.perf_counter() - t0) * 1000.0, 3)
    return data, hits, result.skipped


def repo_roots(engine: Engine, hits) -> dict:
    """A shared store's hits' repositories and their folders here (empty for a local index)."""
    if not getattr(engine, "shared", False):
        return {}
    from .milvus_engine import repo_roots as roots

    return dict(roots(engine, hits))


def settings_for(engine: Engine, request: QueryRequest, *, deep: bool | None = None) -> FusionSettings:
    """The fusion settings of a checked request on ``engine``'s root: the root's config over
    the shipped defaults, its --weights (per arm) and --rrf-k on top. ``deep``: whether the
    deep arm can answer; when it cannot it takes its shipped weights with it (the other arms'
    are those tuned without it)."""
    arms = request.arms_of(engine)
    served = getattr(engine, "served", None)
    if served is not None and request.retriever == "all":  # a shared store: the arms it serves
        arms = [a for a in arms if a in served]
        deep = False
    with_deep = deep if "deep" in arms else None
    try:
        try:  # the engine keeps the root's config while its file stays the same
            config = engine.root_config("deep" in arms if with_deep is None else with_deep)
        except ConfigError:
            config = None  # resolve reads it again: refused, unless the request gives weights and k
        return engine.fusion(
            FusionSettings.resolve(
                engine.root,
                arms=arms,
                weights=request.weights if request.weights_text is not None else None,
                k=request.rrf_k,
                priors=request.priors,
                with_deep=with_deep,
                cache_dir=engine.cache_dir,
                config=config,
            )
        )
    except (ConfigError, QueryError) as exc:
        raise RequestError(str(exc)) from None


def fused_arms(retriever: str, directory: Path | None = None) -> list[str]:
    """``all`` -> the default arms (of the root whose index folder is ``directory``: deep where
    it is turned on); ``name`` or ``a,b`` -> those arms (RequestError if unknown)."""
    if retriever.strip() == "all":
        return list(default_arms(directory))
    names = [n.strip() for n in retriever.split(",") if n.strip()]
    if not names:
        raise RequestError("--retriever is empty")
    for name in names:
        if name not in REGISTRY:
            raise RequestError(f"unknown retriever {name!r} (choose from {', '.join(RETRIEVERS)})")
    return list(dict.fromkeys(names))
