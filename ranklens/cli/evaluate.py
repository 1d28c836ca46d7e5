"""``ranklens eval`` and ``ranklens tune``: labeled queries scored, the fusion tuned on them,
and their reports."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .common import (
    UsageProblem,
    _console,
    _given_or_default,
    _LazyDefault,
    _LazyHelp,
    _note,
    discovery_options,
    model_option,
    retriever_option,
    rrf_k_option,
    weights_option,
)
from .index import _run_index

if TYPE_CHECKING:
    from ..core.engine import Engine
    from ..core.query.settings import FusionSettings


def _load_labeled(path: str):
    from ..core.evaluation import EvalFileError, load_queries

    try:
        return load_queries(path, notify=_note)
    except EvalFileError as exc:
        raise UsageProblem(str(exc)) from None


def _run_labeled(engine: Engine, queries, settings: FusionSettings, *, also, top_k: int, quiet: bool):
    """Index, make the gold paths relative to the root, warn about gold files missing from the
    index, and run every query once per arm."""
    from ..core.engine import QueryError
    from ..core.evaluation import rebase_gold, run_queries

    _run_index(engine, show_progress=sys.stderr.isatty() and not quiet, deep="deep" in (*settings.arms, *also))
    queries, rebased = rebase_gold(queries, engine.root)
    if rebased:
        _note(rebased)
    indexed = engine.view.chunks.distinct_paths()
    missing = sorted({(q.id, g.path) for q in queries for g in q.gold if g.path not in indexed})
    for qid, path in missing[:10]:
        _note(f"{qid}: gold file {path} is not in the index of {engine.root}")
    if len(missing) > 10:
        _note(f"… and {len(missing) - 10} more gold files not in the index")
    try:
        run = run_queries(engine, queries, settings, also=also, top_k=top_k)
    except QueryError as exc:
        raise UsageProblem(str(exc)) from None
    for name, reason in run.skipped.items():
        _note(f"{name} skipped: {reason}")
    if run.no_gold:
        _note(f"{len(run.no_gold)} queries have no gold target and are left out: {', '.join(run.no_gold[:5])}")
    if not run.queries:
        raise UsageProblem("no query has a gold target to score")
    if not any(qr.rankings for qr in run.queries):
        raise RuntimeError("no retriever could answer")
    return run


EVAL_HELP = (
    'QUERIES is JSONL, one JSON object a line: {"id", "query", "gold": [TARGET, …], '
    '"kind"?}, where a TARGET is {"path", "start_line", "end_line"} (lines 1-based '
    'inclusive), or a whole file: {"path"} or the bare path; paths relative to ROOT. The public '
    'code-search benchmark\'s annotation files are read as they are: a JSON array of {"query", '
    '"relevant", "secondary", "category"} (relevant and secondary are the gold, category '
    "the kind, a query's id its position); gold paths that start with ROOT's own trailing folders "
    "(the benchmark's src/… when ROOT is <checkout>/src) lose that prefix, with a note. Fields "
    "ranklens does not use are ignored, with one note per file. "
    "Each arm is scored alone on its own top K, and the fused list of the configuration "
    "(--retriever, --weights, --rrf-k) on its consolidated hits. A hit locates a whole-file target "
    "when it is in that file, and a span when it shares at least half of the shorter of the two "
    "and is no longer than 100 lines (or twice the span): a span hit. hit@n: a target located in "
    "the top n; file@5: a gold file in the top 5; MRR@K: 1/rank of the first hit locating one; "
    "nDCG@K: binary gain, each target credited once (a whole file by the first hit in it). "
    "p50/p95: per-query latency in ms (arms loaded first). lines: mean lines per hit (fused hits "
    "merge overlapping spans, so they are wider). Calibration: per confidence level, how many of "
    "the fused top-K hits have it (and their share of all of them) and the share of those that "
    "locate a gold target. Priors: by default every row, each arm alone as well as the fused "
    "list, is re-ordered by the code-aware priors before the cut to K (an arm's whole candidate "
    "pool in its own order); --no-priors scores the raw rankings and the plain fused list."
)


@click.command(name="eval", cls=_LazyHelp, epilog=EVAL_HELP)
@click.argument("queries", metavar="QUERIES")
@click.option("--root", default=".", show_default=True, help="Folder searched; the gold paths are relative to it.")
@click.option("--top-k", type=int, default=10, show_default=True, help="Ranking depth K scored (1..100).")
@retriever_option("Configuration to fuse: all (@ALL_ARMS@), one of @ARMS@, or a comma-separated list.")
@weights_option
@rrf_k_option
@click.option(
    "--no-priors",
    "no_priors",
    is_flag=True,
    help="Score raw rankings and the plain fused list: no ranking stage on any row.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (with per-query details).")
@model_option
@discovery_options
def eval_command(
    queries: str,
    root: str,
    top_k: int,
    retriever: str,
    weights: str | None,
    rrf_k: float | None,
    no_priors: bool,
    as_json: bool,
    model: str | None,
    hidden: bool | None,
    no_ignore: bool | None,
) -> None:
    """Measure retrieval on the labeled queries of QUERIES over ROOT.

    Reports, for every arm alone and for the fused list, hit@1/@5/@K, file hit@5, MRR@K,
    nDCG@K and latency p50/p95, overall and per query kind; the calibration of the fused
    list's confidence levels; and the queries every arm missed.
    """
    from ..core.arms import REGISTRY, default_arms
    from ..core.service import check_request, open_engine, settings_for

    if not 1 <= top_k <= 100:
        raise UsageProblem(f"--top-k must be from 1 to 100, got {top_k}")
    request = check_request("eval", retriever=retriever, weights=weights, rrf_k=rrf_k, priors=not no_priors)
    labeled = _load_labeled(queries)
    engine = open_engine(root, model, _note, hidden, no_ignore)
    settings = settings_for(engine, request)
    from ..core.evaluation import report

    # Every other arm gets a row, an optional one (deep) only where it is a default arm
    # (installed, not switched off): deep's vectors take minutes to build, and a row that says
    # "not installed" is noise.
    also = [
        a
        for a, s in REGISTRY.items()
        if a not in settings.arms and (not s.optional or a in default_arms(engine.directory))
    ]
    run = _run_labeled(engine, labeled, settings, also=also, top_k=top_k, quiet=as_json)
    data = {"root": str(engine.root), "file": queries, **report(run)}
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    _print_eval(data)


def _print_eval(data: dict) -> None:
    from rich.table import Table

    console = _console()
    conf = data["configuration"]
    names = data["metrics"]
    mode = "+".join(conf["arms"])
    weights = " ".join(f"{a}={w:g}" for a, w in conf["weights"].items())
    console.print(
        f"{data['queries']} queries over {data['root']}; fused = {mode} (weights {weights}, k={conf['k']:g}); "
        f"priors {'on' if conf.get('priors') else 'off'}"
    )
    for group, body in data["groups"].items():
        title = "overall" if group == "all" else f"kind: {group}"
        table = Table(title=f"{title} (n={body['n']})", title_justify="left", show_edge=False, pad_edge=False)
        table.add_column("arm")
        for name in names:
            table.add_column(
                name.replace("file_hit", "file").replace("mrr", "MRR").replace("ndcg", "nDCG"), justify="right"
            )
        table.add_column("p50 ms", justify="right")
        table.add_column("p95 ms", justify="right")
        table.add_column("lines", justify="right")
        for arm, row in body["rows"].items():
            lat = row["latency_ms"]
            cells = [f"{row[m]:.3f}" for m in names]
            cells += [f"{lat['p50']:.1f}", f"{lat['p95']:.1f}", f"{row['mean_lines']:.0f}"]
            style = "bold" if arm == "fused" else None
            table.add_row(arm, *cells, style=style)
        console.print()
        console.print(table)
    _print_calibration(console, data["calibration"], data["queries"])
    console.print()
    missed = data["missed_by_all"]
    if missed:
        console.print(f"missed by every arm and the fusion ({len(missed)}):")
        for m in missed:
            console.print(f"  {m['id']}  [{m['kind'] or '-'}]  {m['query']}", markup=False)
    else:
        console.print("every query was found by at least one arm")


def _print_calibration(console, cal: dict, queries: int) -> None:
    from rich.table import Table

    console.print()
    # A line, not the table's title: rich wraps a title to the (narrow) table's width.
    console.print(f"confidence calibration of the fused top {cal['top_k']} ({cal['hits']} hits over {queries} queries)")
    table = Table(show_edge=False, pad_edge=False)
    for name in ("confidence", "hits", "share", "relevant"):
        table.add_column(name, justify="left" if name == "confidence" else "right")
    for level, row in cal["levels"].items():
        relevant = "-" if row["relevant_share"] is None else f"{row['relevant_share']:.1%}"
        table.add_row(level, str(row["hits"]), f"{row['share']:.1%}", relevant)
    console.print(table)


@click.command(
    cls=_LazyHelp,
    epilog=(
        "Coordinate ascent: k over {5, 10, 20, 30, 45, 60, 90, 120, 200}, then each arm's weight over "
        "{0, 0.2, …, 3.0}, moving only on a strict gain in mean nDCG@10, for up to 4 rounds. It re-fuses "
        "cached rankings, so no arm runs twice. Over-fitting check: k-fold cross-validation (fixed "
        "seed) tunes on each training part and scores the held-out part; --save refuses a result that "
        "does not beat the defaults held-out unless --force is given. The fused lists are re-scored by "
        "the code-aware priors while tuning, as query does, unless --no-priors is given. QUERIES is "
        "read as eval reads it (JSONL or a benchmark annotation file; see eval --help)."
    ),
)
@click.argument("queries", metavar="QUERIES")
@click.option("--root", default=".", show_default=True, help="Folder searched; the gold paths are relative to it.")
@retriever_option("Arms to fuse and tune: all (@ALL_ARMS@) or a comma-separated list of two or more.")
@click.option("--folds", type=int, default=5, show_default=True, help="Cross-validation folds (2..20).")
@click.option(
    "--seed",
    type=int,
    cls=_LazyDefault,
    lazy_default=("core.evaluation", "SEED"),
    show_default=True,
    help="Seed of the random fold split.",
)
@click.option(
    "--save", is_flag=True, help="Store the tuned weights and k in ROOT's config (used by query, eval and the TUI)."
)
@click.option("--force", is_flag=True, help="With --save: save even when held-out nDCG@10 does not improve.")
@click.option(
    "--no-priors", "no_priors", is_flag=True, help="Tune the plain fused lists, without the code-aware priors."
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@model_option
@discovery_options
def tune(
    queries: str,
    root: str,
    retriever: str,
    folds: int,
    seed: int | None,
    save: bool,
    force: bool,
    no_priors: bool,
    as_json: bool,
    model: str | None,
    hidden: bool | None,
    no_ignore: bool | None,
) -> None:
    """Tune the per-arm weights and RRF k to maximise fused nDCG@10 on QUERIES.

    Prints the default and tuned figures, with k-fold cross-validated train and held-out
    nDCG@10; --save writes the tuned values to ROOT's config.
    """
    from ..core.engine import DEFAULT_TOP_K, QueryError
    from ..core.evaluation import tune as tune_fusion
    from ..core.query.settings import FusionSettings
    from ..core.service import fused_arms, open_engine

    arms = fused_arms(retriever)
    if len(arms) < 2:
        raise UsageProblem("tuning needs at least two arms to fuse (--retriever all or a,b,…)")
    if not 2 <= folds <= 20:
        raise UsageProblem(f"--folds must be from 2 to 20, got {folds}")
    if force and not save:
        raise UsageProblem("--force only applies with --save")
    labeled = _load_labeled(queries)
    scored = sum(1 for q in labeled if q.gold)
    if scored < folds:
        raise UsageProblem(f"{scored} queries with gold targets are too few for {folds} folds")
    engine = open_engine(root, model, _note, hidden, no_ignore)
    # Tuning starts from the shipped defaults, not the root's last tuned config.
    try:
        settings = engine.fusion(FusionSettings.resolve(arms=arms, priors=not no_priors))
    except QueryError as exc:
        raise UsageProblem(str(exc)) from None
    run = _run_labeled(engine, labeled, settings, also=(), top_k=DEFAULT_TOP_K, quiet=as_json)
    result = tune_fusion(run, n_folds=folds, seed=_given_or_default(tune, "seed", seed))
    result["root"] = str(engine.root)
    result["file"] = queries
    result["saved"] = None
    if save:
        if result["improves"] or force:
            from ..core.query.config import save_config

            cv = result["cross_validation"]
            extra = {
                "tuned": {
                    "queries": str(Path(queries).expanduser().resolve()),
                    "n": result["queries"],
                    "default_ndcg@10": result["default"]["ndcg@10"],
                    "tuned_ndcg@10": result["tuned"]["ndcg@10"],
                    "held_out": {
                        "default": cv["default_held_out"],
                        "tuned": cv["tuned_held_out"],
                        "folds": cv["folds"],
                    },
                }
            }
            try:
                path = save_config(engine.root, result["tuned"]["weights"], result["tuned"]["k"], extra=extra)
            except OSError as exc:
                raise UsageProblem(f"cannot write the config: {exc.strerror or exc}") from None
            result["saved"] = str(path)
        else:
            result["saved"] = False
    if as_json:
        click.echo(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        _print_tune(result)
    if result["saved"] is False:
        _note("not saved: the tuned values do not beat the defaults on held-out queries (--force saves anyway)")


def _print_tune(result: dict) -> None:
    from rich.table import Table

    console = _console()
    cv = result["cross_validation"]
    console.print(
        f"tuned on {result['queries']} queries over {result['root']}; arms {', '.join(result['arms'])}; "
        f"priors {'on' if result.get('priors') else 'off'}; {cv['folds']}-fold cross-validation (seed {cv['seed']})"
    )
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("")
    table.add_column("weights")
    table.add_column("k", justify="right")
    table.add_column("nDCG@10 all", justify="right")
    table.add_column("train (cv mean)", justify="right")
    table.add_column("held-out (cv mean)", justify="right")
    for name in ("default", "tuned"):
        row = result[name]
        ws = " ".join(f"{a}={w:g}" for a, w in row["weights"].items())
        table.add_row(
            name,
            ws,
            f"{row['k']:g}",
            f"{row['ndcg@10']:.3f}",
            f"{cv[name + '_train']:.3f}",
            f"{cv[name + '_held_out']:.3f}",
        )
    console.print(table)
    console.print(
        "train / held-out: each fold tunes on its training part and scores both parts (means over "
        "folds); the tuned weights and k shown are tuned on all queries."
    )
    gain = cv["tuned_held_out"] - cv["default_held_out"]
    console.print(
        f"held-out gain of tuning: {gain:+.3f} nDCG@10 ({'improves' if result['improves'] else 'no improvement'})"
    )
    if result["saved"]:
        console.print(f"saved to {result['saved']}", markup=False)
    elif result["saved"] is None and result["improves"]:
        console.print("use --save to store the tuned values in the root's config")
    elif result["saved"] is None:
        console.print("the defaults generalise as well: --save would refuse these values (--force overrides)")
