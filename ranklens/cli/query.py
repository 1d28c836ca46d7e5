"""``ranklens query``: one query's lines or JSON envelope, or many with --batch."""

from __future__ import annotations

import json
import sys
import threading
from typing import TYPE_CHECKING

import click

from ..core.base.errors import RequestError
from .common import (
    FRESHNESS_HELP,
    UsageProblem,
    _given_or_default,
    _LazyDefault,
    _LazyHelp,
    _note,
    discovery_options,
    fresh_option,
    model_option,
    repo_option,
    retriever_option,
    rrf_k_option,
    store_option,
    weights_option,
)
from .index import _run_index, _save_on_sigterm, _survey

if TYPE_CHECKING:
    from ..core.service import QueryRequest


CONFIDENCE_HELP = (
    "Each hit is a span merged from every arm that ranked an overlapping span of the same "
    "file, scored with weighted Reciprocal Rank Fusion: score = sum of w_arm / (k + rank_arm), "
    "ranks 1-based, then re-scored by the ranking stage. agree=n/m: n arms rank it within "
    "their top 5, of the m that answered. conf=high: it defines a symbol the query names, or "
    "it scores within 10% of the best hit and an arm ranks it in its top 5; medium: at least "
    "half the best hit's score, or two arms agree; low: otherwise. via: every arm that ranked "
    "it, at any depth (agree counts those of them that rank it in their top 5)."
)

PRIORS_HELP = (
    "Ranking stage: after fusion, code-aware signals re-score the hits (in units of the best "
    "fused score): definition (the hit defines a symbol the query names; most for a one-"
    "identifier query and a file named after it), path (query words are the file's stem or "
    "folder), name-coverage (the query names the words of the file's name), file-evidence (the "
    "file holds several ranked hits), coverage (the file's path, defined names and breadcrumbs "
    "hold the query's keywords), quote (the hit holds a passage the query quotes); then depth and "
    "name-length lift a file higher in the tree or "
    "with a shorter name than the median candidate (and lower a deeper or longer-named one), "
    "and the priors multiply a hit "
    "in test code, examples, a README/CHANGELOG-style file, documentation, a non-code, vendored "
    "or generated file (@PRIOR_RULES@) "
    "unless the query asks for it (test/spec, example/demo, doc/readme, config/yaml/json …); "
    "then diversity scales a file's further hits down (the first file's less, so it may show "
    "a second function). That orders the files; then, in each of "
    "the top 5 files, every chunk of the file competes for its places (the chunk step: its "
    "ranks within the file by bm25 and dense, the arms' own ranks, the names it defines and "
    "holds; for a question in words, less when it only declares, more when a better unit of "
    "the file calls it; signal chunk says why). Text lines end with the signals and "
    "priors that moved a hit, e.g. (definition, tests x0.5). The JSON gives each hit's "
    "fused_score (before the stage), score (after), and the signals and priors applied with "
    "their reasons. --no-priors ranks by the fused score alone."
)

#: The signals a text line names (file-evidence and diversity touch most hits: JSON only).
SHOWN_SIGNALS = ("definition", "quote", "path")

NO_PRIORS_HELP = "Turn off the ranking stage: no code-aware signals, priors or diversity; the plain fused ranking."


BATCH_HELP = (
    '--batch: JSON lines on stdin, each {"id": ..., "query": "..."} plus any of "top_k", '
    '"retriever", "weights" ({"dense": 1.5} or "dense:1.5,bm25:0.5"), "rrf_k", "path", "lang", '
    '"no_priors" (the command\'s options are the defaults); one JSON envelope a line on stdout, in '
    'order, led by the line\'s "id" (its line number when it has none). The index is brought up to '
    "date once, first (for the command's --retriever; with --max-wait, for at most that long, every "
    "line then answered from the same part of it). A line that cannot be answered gets "
    '{"id", "error"} and the batch goes on; the exit code is 0 when every line was answered, 2 when '
    "a line was malformed (not JSON, an unknown field, a bad value) or the batch could not start, "
    "1 when no retriever could answer a line."
)


@click.command(
    cls=_LazyHelp, epilog=FRESHNESS_HELP + "\n\n" + CONFIDENCE_HELP + "\n\n" + PRIORS_HELP + "\n\n" + BATCH_HELP
)
@click.argument("text", required=False)
@click.option("--root", default=".", show_default=True, help="Repository to search.")
@click.option(
    "--top-k",
    type=int,
    cls=_LazyDefault,
    lazy_default=("core.engine", "DEFAULT_TOP_K"),
    show_default=True,
    help="Hits to show (1..@MAX_TOP_K@): the first N of one ranking, whatever N (each arm ranks @CANDIDATE_DEPTH@).",
)
@retriever_option("all (fuse @ALL_ARMS@), one of: @ARMS@ (its own ranking), or a comma-separated list to fuse.")
@weights_option
@rrf_k_option
@click.option("--path", "path_glob", metavar="GLOB", help="Only paths matching GLOB (fnmatch; * crosses /).")
@click.option(
    "--lang",
    "language",
    metavar="NAME",
    help="Only chunks in this language (python, go, markdown …; an unknown name is an error that lists them).",
)
@click.option("--no-priors", "no_priors", is_flag=True, help=NO_PRIORS_HELP)
@click.option(
    "--like",
    metavar="PATH:LINE",
    help="More like this: search with the names and code of the unit at PATH:LINE (or PATH:NAME) "
    "instead of TEXT; the unit itself is left out.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the JSON envelope (with each span's sha256 and query_ms).")
@click.option("--output", metavar="FILE", help="Also write the JSON envelope to FILE (atomically): a handoff.")
@click.option(
    "--batch", is_flag=True, help="Read JSON-line queries from stdin, print one JSON envelope a line (below)."
)
@click.option(
    "--max-wait",
    "max_wait",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    default=None,
    help=(
        "While the index is still being built (a first build, a large change), answer after at most SECONDS "
        'from the part committed so far, saying so (stderr, and "partial" in the JSON), instead of waiting '
        "for the whole index; the build stops there and the next run goes on from it. Default: wait."
    ),
)
@model_option
@discovery_options
@store_option
@repo_option
@fresh_option
def query(
    text: str | None,
    root: str,
    top_k: int | None,
    retriever: str,
    weights: str | None,
    rrf_k: float | None,
    path_glob: str | None,
    language: str | None,
    no_priors: bool,
    like: str | None,
    as_json: bool,
    output: str | None,
    batch: bool,
    max_wait: float | None,
    model: str | None,
    hidden: bool | None,
    no_ignore: bool | None,
    store: str | None,
    repos: str | None,
    fresh: bool,
) -> None:
    """Search ROOT for TEXT; one line per hit, first token path:start-end.

    A missing or stale index is brought up to date first: a file saved before the query is
    never answered from its old text (below). The fused list goes through the
    code-aware ranking stage (a single retriever's ranking through the priors) unless
    --no-priors is given.
    A first build commits its work in steps (its first files within seconds); --max-wait
    SECONDS answers from what is committed by then rather than from the whole index.
    The deep arm joins only where `ranklens index --deep` turned it on. Then a query embeds
    up to 200 new chunks for it before answering; a larger (first) build is left to
    `ranklens index`, and while that or another process's build runs, deep sits the query
    out without waiting (said once, not on every query), unless --retriever deep asks for
    it. --batch answers many queries in one process.
    """
    # First, while nothing else runs: the freshness check's stat pass in a child process,
    # overlapping the engine's imports below (~0.1 s at 20k files, over a second at 80k).
    survey = _survey(root, fresh) if store is None else None
    from ..core.service import QUERY_DEEP_LIMIT, NoAnswer, answer_query, check_request, deep_ready, open_engine

    top_k = _given_or_default(query, "top_k", top_k)

    options = dict(
        top_k=top_k,
        retriever=retriever,
        weights=weights,
        rrf_k=rrf_k,
        path_glob=path_glob,
        language=language,
        priors=not no_priors,
    )
    if like is not None:
        if batch:
            raise UsageProblem("--like does not apply to --batch")
        options["like"] = like
    if batch:
        if text is not None:
            raise UsageProblem("give TEXT or --batch, not both")
        if output:
            raise UsageProblem("--output does not apply to --batch (its envelopes go to stdout)")
        check_request("batch", **options)  # the defaults must be good before stdin is read
        _query_batch(root, model, options, hidden, no_ignore, store, repos, fresh, survey, max_wait)
        return
    if text is None and like is None:
        raise UsageProblem("missing TEXT (or --batch to read queries from stdin, or --like PATH:LINE)")
    if max_wait is not None and store is not None:
        raise UsageProblem("--max-wait applies to a local index (a shared --store is built by `ranklens index`)")
    request = check_request(text or "", **options)
    # Span hashes go only into JSON (stdout or --output); the lines printed otherwise show none,
    # and hashing reads each hit's file through the credential detectors (~0.2 s to import).
    hashes = as_json or bool(output)
    if hashes:
        from ..core.text.secrets import load_detectors

        threading.Thread(target=load_detectors, name="ranklens-detectors", daemon=True).start()
    engine = open_engine(root, model, _note, hidden, no_ignore, store=store, repos=repos)
    _save_on_sigterm()
    # Asked for by name, deep is built whatever it costs; as one arm of many (turned on for
    # the root) it does not hold the answer up for a first build, nor wait for another
    # process's.
    arms = request.arms_of(engine)
    stats = _run_index(
        engine,
        show_progress=sys.stderr.isatty() and not as_json,
        deep="deep" in arms,
        deep_limit=None if arms == ["deep"] else QUERY_DEEP_LIMIT,
        fresh=fresh,
        survey=survey,
        max_wait=max_wait,
    )
    quiet = set() if deep_ready(stats) or "deep" in request.retriever.split(",") else {"deep"}
    try:
        data, hits, skipped = answer_query(engine, request, deep=deep_ready(stats), hashes=hashes)
    except NoAnswer as exc:
        for name, reason in exc.skipped:
            _note(f"{name} skipped: {reason}")
        raise
    for name, reason in skipped:
        if name not in quiet:  # deep sitting out was said once by _run_index; the JSON says why
            _note(f"{name} skipped: {reason}")
    if "partial" in data:
        _note_partial(data["partial"])
    if output:
        from ..core.base.atomic import write_json_atomic

        try:
            write_json_atomic(output, data)
        except OSError as exc:
            raise UsageProblem(f"cannot write {output}: {exc.strerror or exc}") from None
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    m = len(data["retrievers"])
    for hit in hits:
        label = hit.context[len(hit.path) + 3 :] if hit.context.startswith(hit.path + " > ") else ""
        applied = ", ".join(
            [s.name for s in hit.signals if s.name in SHOWN_SIGNALS]
            + [f"{p.name} x{p.factor:g}" for p in hit.priors if p.factor != 1.0]
        )
        where = f"{hit.repo}:{hit.path}" if hit.repo and getattr(engine, "multi", False) else hit.path
        click.echo(
            f"{where}:{hit.start_line}-{hit.end_line}  [score={hit.score:.4f} agree={hit.agreement}/{m} "
            f"conf={hit.confidence}  via {_via(hit)}]  {label}".rstrip()
            + (f"  ({applied})" if applied else "")
        )
    if not hits:
        _note("no results")


def _note_partial(partial: dict) -> None:
    """Say on stderr that an answer is from part of the index (--max-wait)."""
    from ..core.storage.store import Partial

    _note(
        f"partial answer, {Partial(partial['files'], partial['total']).describe()}: the index is still being "
        "built (what it committed is kept; the next `ranklens query` or `ranklens index` goes on from there)"
    )


def _via(hit) -> str:
    """The arms that ranked a hit over the whole index; else, for a chunk the chunk step chose,
    those that ranked it within its file."""
    if hit.provenance or not hit.within:
        return ",".join(hit.provenance)
    return ",".join(sorted(hit.within, key=lambda arm: (hit.within[arm], arm))) + " (in its file)"


#: Fields a --batch line may carry, and the option each stands for.
BATCH_FIELDS = {
    "id": None,
    "query": None,
    "top_k": "top_k",
    "retriever": "retriever",
    "weights": "weights",
    "rrf_k": "rrf_k",
    "path": "path_glob",
    "lang": "language",
    "no_priors": "priors",
}


def _batch_request(line: str, defaults: dict) -> QueryRequest:
    """One --batch line as a checked request (UsageProblem saying what is wrong with it)."""
    from ..core.service import check_request

    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        raise UsageProblem(f"not JSON ({exc.msg}, column {exc.colno})") from None
    if not isinstance(item, dict):
        raise UsageProblem('a line must be a JSON object such as {"id": 1, "query": "..."}')
    unknown = sorted(set(item) - set(BATCH_FIELDS))
    if unknown:
        raise UsageProblem(f"unknown field {unknown[0]!r} (known: {', '.join(BATCH_FIELDS)})")
    text = item.get("query")
    if not isinstance(text, str):
        raise UsageProblem('"query" must be a string')
    options = dict(defaults)
    for name, value in item.items():
        option = BATCH_FIELDS[name]
        if option is None:
            continue
        if name == "no_priors":
            if not isinstance(value, bool):
                raise UsageProblem('"no_priors" must be true or false')
            value = not value
        elif name == "weights" and isinstance(value, dict):
            if not all(isinstance(w, (int, float)) and not isinstance(w, bool) for w in value.values()):
                raise UsageProblem('"weights" values must be numbers')
            value = ",".join(f"{arm}:{w!r}" for arm, w in value.items())
        elif name in ("retriever", "weights", "path", "lang") and not isinstance(value, str):
            raise UsageProblem(f'"{name}" must be a string')
        elif name == "rrf_k" and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise UsageProblem('"rrf_k" must be a number')
        options[option] = value
    return check_request(text, **options)


def _query_batch(
    root: str,
    model: str | None,
    defaults: dict,
    hidden: bool | None = None,
    no_ignore: bool | None = None,
    store: str | None = None,
    repos: str | None = None,
    fresh: bool = False,
    survey=None,
    max_wait: float | None = None,
) -> None:
    """``query --batch``: one envelope (or error) per stdin line, one engine for all."""
    from ..core.service import QUERY_DEEP_LIMIT, NoAnswer, answer_query, check_request, deep_ready, open_engine

    if max_wait is not None and store is not None:
        raise UsageProblem("--max-wait applies to a local index (a shared --store is built by `ranklens index`)")
    engine = open_engine(root, model, _note, hidden, no_ignore, store=store, repos=repos)
    _save_on_sigterm()
    asked = check_request("batch", **defaults)
    arms = asked.arms_of(engine)
    stats = _run_index(
        engine,
        show_progress=False,
        deep="deep" in arms,
        deep_limit=None if arms == ["deep"] else QUERY_DEEP_LIMIT,
        fresh=fresh,
        survey=survey,
        max_wait=max_wait,
    )
    if max_wait is not None and engine.view.partial is not None:
        _note_partial(engine.view.partial.to_dict())
    noted: set[tuple[str, str]] = set()
    quiet = set() if deep_ready(stats) else {"deep"}  # said once by _run_index
    failed = malformed = total = 0
    for number, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        total += 1
        qid: object = number
        try:
            item_id = json.loads(line).get("id", number)
            qid = item_id
        except (json.JSONDecodeError, AttributeError):
            pass
        try:
            data, _hits, skipped = answer_query(engine, _batch_request(line, defaults), deep=deep_ready(stats))
        except (RequestError, NoAnswer) as exc:
            failed += 1
            malformed += isinstance(exc, RequestError)
            out = {"id": qid, "error": exc.detail() if isinstance(exc, NoAnswer) else str(exc)}
        else:
            for pair in skipped:
                if pair not in noted and pair[0] not in quiet:
                    noted.add(pair)
                    _note(f"{pair[0]} skipped: {pair[1]}")
            out = {"id": qid, **data}
        click.echo(json.dumps(out, ensure_ascii=False, separators=(",", ":")))
    if failed:
        _note(f"{failed} of {total} batch lines could not be answered")
        # Every line had its answer or its error on stdout; the exit code tells a script that
        # not all were answers: 2 when a line was bad input, 1 when no retriever could answer.
        raise click.exceptions.Exit(2 if malformed else 1)
