"""``ranklens index``, and running an index pass for every command: the freshness check's
stat pass, progress, the deep arm's stage, --max-wait, SIGTERM."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .common import FRESHNESS_HELP, UsageProblem, _note, discovery_options, fresh_option, model_option, store_option

if TYPE_CHECKING:
    from ..core.engine import Engine


def _survey(root: str, fresh: bool = False):
    """Start the freshness check's stat pass for ``root`` in a child process, before the engine
    (numpy, the arms) is imported: the two overlap (:class:`core.index.freshness.Survey`). None when
    there is nothing to check or no child can do it."""
    if fresh:
        return None
    from ..core.index.freshness import Survey
    from ..core.storage.store import index_dir

    try:
        path = Path(root).expanduser().resolve()
        return Survey.start(path, index_dir(path)) if path.is_dir() else None
    except (OSError, RuntimeError):
        return None


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as Ctrl-C is: whatever keeps its work on Ctrl-C (the
    indexer's committed generations, the deep arm's embedded vectors) keeps it on SIGTERM."""


def _save_on_sigterm() -> None:
    """From now on SIGTERM stops this command as Ctrl-C does (:class:`Terminated`), instead of
    killing it where it stands (the UI and the MCP server keep their own handling)."""
    import signal

    def terminate(signum, _frame) -> None:
        raise Terminated(signum)

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, terminate)


def _run_index(
    engine: Engine,
    show_progress: bool,
    deep: bool | None = None,
    deep_limit: int | None = None,
    open_view: bool = True,
    *,
    keep_serving: bool = True,
    fresh: bool = False,
    survey=None,
    max_wait: float | None = None,
):
    """``deep``: also build the deep arm's vectors (None: when it is fused by default);
    ``deep_limit``: unless more than this many texts lack one (then say so); ``open_view``:
    open the index for querying. ``keep_serving``: when the update cannot be written (disk
    full), say so and answer from the index as it was committed, if there is one. ``fresh``:
    list the whole tree instead of trusting the last listing's snapshot; ``survey``: its stat
    pass, started by :func:`_survey`. ``max_wait``: when a pass that commits in steps (a first
    build, a large change) is still going on after this many seconds, stop it there and answer
    from what it committed (:func:`_index_within`)."""
    from ..core.storage.store import IndexWriteError

    try:
        if max_wait is None:
            stats = _run_index_stages(engine, show_progress, deep, deep_limit, open_view, fresh, survey)
        else:
            stats = _index_within(engine, max_wait, show_progress, deep, deep_limit, fresh, survey)
    except IndexWriteError as exc:
        if not keep_serving or not engine.open():
            raise
        _note(f"warning: {exc.args[-1]}; answering from it")
        from ..core.arms.protocol import IndexStats

        return IndexStats(
            root=str(engine.root),
            index_dir=str(engine.directory),
            generation=engine.view.generation,
            deep="the index could not be updated",
        )
    if stats.warning:
        _note(f"warning: {stats.warning}")
    said = engine.deep_note(stats) if not getattr(engine, "shared", False) else None
    if said:  # once, not on every query (core.engine.Engine.deep_note)
        _note(said)
    return stats


#: Set by `index`: its deep stage is background work, run at a lower CPU priority so that
#: queries from other processes meanwhile get the cores first.
_DEEP_IN_BACKGROUND: list[bool] = []


def _deep_starts(p) -> None:
    """The deep arm starts embedding ``p.total`` texts: in `index`, lower this process's CPU
    priority (it is the last stage; a query's own few texts keep theirs)."""
    if _DEEP_IN_BACKGROUND and p.stage == "deep" and p.done == 0 and p.total > 0:
        import contextlib
        import os

        _DEEP_IN_BACKGROUND.clear()
        with contextlib.suppress(OSError, AttributeError):
            os.nice(10)


def _deep_start_note(p) -> None:
    """Without a progress bar: one line when the deep arm starts embedding (the summary's
    line says how it ended)."""
    _deep_starts(p)
    if p.stage == "deep" and p.done == 0 and p.total > 0:
        _note(f"deep: embedding {p.total:,} chunks (minutes; Ctrl-C or SIGTERM keeps what is done)")


class _IndexStopped(BaseException):
    """The pass was stopped (--max-wait): what it committed is kept. Not an Exception: no
    handler on the way (the deep stage's, say) takes it for a failure."""


def _index_within(engine: Engine, max_wait: float, show_progress: bool, deep, deep_limit, fresh: bool, survey):
    """Index on a thread of its own for at most ``max_wait`` seconds (and at least until a
    first step commits: nothing else can answer). A pass still going on then is stopped at its
    next progress report (what it committed stays, and the next run goes on from there), and
    the stats say the answer is partial (``engine.view.partial``)."""
    from ..core.arms.protocol import IndexStats

    stop = threading.Event()
    landed = threading.Event()
    outcome: dict = {}

    def check() -> None:
        if stop.is_set():
            raise _IndexStopped

    def run() -> None:
        try:
            outcome["stats"] = _run_index_stages(
                engine, show_progress, deep, deep_limit, True, fresh, survey, check, lambda _p: landed.set()
            )
        except BaseException as exc:  # handed to the waiting thread
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="ranklens-index", daemon=True)
    worker.start()
    deadline = time.monotonic() + max_wait
    try:
        while worker.is_alive() and not (landed.is_set() and time.monotonic() >= deadline):
            worker.join(max(0.01, min(0.1, deadline - time.monotonic())))
    finally:  # Ctrl-C too: the pass stops, keeping what it committed
        stop.set()
        worker.join()
    error = outcome.get("error")
    if isinstance(error, _IndexStopped):
        return IndexStats(
            root=str(engine.root),
            index_dir=str(engine.directory),
            generation=engine.view.generation,
            deep="the index is still being built",
        )
    if error is not None:
        raise error
    return outcome["stats"]


def _run_index_stages(
    engine: Engine,
    show_progress: bool,
    deep: bool | None,
    deep_limit: int | None,
    open_view: bool = True,
    fresh: bool = False,
    survey=None,
    check=None,
    on_partial=None,
):
    """``check``: called at each progress report (it may raise to stop the pass);
    ``on_partial``: :meth:`Engine.ensure_index`'s."""
    more = {"on_partial": on_partial} if on_partial is not None else {}
    if not show_progress:

        def quiet_progress(p) -> None:
            _deep_start_note(p)
            if check is not None:
                check()

        return engine.ensure_index(
            quiet_progress, deep=deep, deep_limit=deep_limit, open_view=open_view, fresh=fresh, survey=survey, **more
        )
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn

    from ..core.index.indexer import STAGE_WORDS, Progress

    console = Console(stderr=True)
    with Bar(
        TextColumn("{task.description:<24}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as bar:
        # One bar of files indexed of files to index, the stage in words beside it (a bar per
        # stage went back: a long pass commits in steps, each running its stages again), and
        # the deep arm's chunks on a bar of their own.
        files = bar.add_task(STAGE_WORDS["discover"], total=None)
        deep_bar: list = []

        def progress(p: Progress) -> None:
            _deep_starts(p)
            if check is not None:
                check()
            if p.stage == "deep":
                if not deep_bar:
                    deep_bar.append(bar.add_task(STAGE_WORDS["deep"], total=None))
                bar.update(deep_bar[0], completed=p.done, total=max(p.total, 1))
            elif p.stage == "chunk" and p.total > 0:
                done = max(p.done, int(bar._tasks[files].completed))
                bar.update(files, description=STAGE_WORDS["chunk"], completed=done, total=p.total)
            else:
                bar.update(files, description=STAGE_WORDS.get(p.stage, p.stage))

        stats = engine.ensure_index(
            progress, deep=deep, deep_limit=deep_limit, open_view=open_view, fresh=fresh, survey=survey, **more
        )
        # The files this pass indexed, or (nothing changed) the files the index holds.
        total = int(bar._tasks[files].total or 0)
        described = ("indexed", total) if total else ("up to date", stats.files)
        bar.update(files, description=described[0], completed=described[1], total=max(described[1], 1))
        return stats


@click.command(epilog=FRESHNESS_HELP)
@click.argument("roots", nargs=-1, type=click.Path(file_okay=True, dir_okay=True))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of progress.")
@model_option
@discovery_options
@store_option
@fresh_option
@click.option(
    "--wait",
    type=float,
    default=0.0,
    show_default=True,
    help="With a shared --store: seconds to wait for another indexer of the same repository before refusing.",
)
@click.option(
    "--repo",
    "name",
    metavar="NAME",
    default=None,
    help="With a shared --store and one ROOT: the repository's name in the store (default: ROOT's folder name).",
)
@click.option(
    "--deep/--no-deep",
    default=None,
    help=(
        "Turn the optional deep arm on (or off) for each ROOT, kept in its config.json as "
        '"deep" (default: as set for ROOT, else off; the [deep] extra must be installed).'
    ),
)
def index(
    roots: tuple[str, ...],
    as_json: bool,
    model: str | None,
    hidden: bool | None,
    no_ignore: bool | None,
    store: str | None,
    wait: float,
    name: str | None,
    fresh: bool,
    deep: bool | None,
) -> None:
    """Build or incrementally update the index of each ROOT (default: .).

    Only files added, changed or removed since the last run are re-read, re-chunked and
    re-embedded. A stat pass over what the last run listed says first whether anything
    changed: when nothing did, the tree is not listed again (--json: "check"; --fresh lists
    it anyway). The index lives in the user cache folder, one per root.

    When discovery keeps no file, or passes over more than half of what it met, a warning
    on stderr names the rule (an ignore file's path:line: pattern, or a built-in rule);
    --json lists every rule with its counts under "excluded". Lines holding credentials
    are indexed as "[ranklens: credential redacted]" ("redacted" in --json).

    The summary gives the wall time; --json adds each stage's time ("seconds", stages
    overlap) and "wall".

    The deep arm is off unless --deep turns it on for ROOT (it stays on until --no-deep; the
    [deep] extra must be installed, README "Other installs"). Then a last stage, after the
    index is committed, embeds the chunks it lacks: slow (~10 chunks/s on 2 cores), but only
    text it has never seen, with progress on a terminal and a line when it starts and ends
    otherwise. Queries meanwhile answer without deep and never wait for it; Ctrl-C or SIGTERM
    keeps what is embedded, and the next run goes on from there; the stage runs at a lower
    CPU priority (nice 10). RANKLENS_DEEP=1 or 0 turns it on or off for every root.

    With a shared --store (a Milvus Lite file or a Milvus server, docs/milvus.md) every ROOT
    goes into one collection as a repository named after its folder; only changed files are
    re-chunked and re-embedded, and a second indexer of the same repository waits --wait
    seconds, then refuses.
    """
    t0 = time.perf_counter()
    _save_on_sigterm()
    _DEEP_IN_BACKGROUND[:] = [True]
    roots = roots or (".",)
    if name is not None and len(roots) > 1:
        raise UsageProblem("--repo names one repository: give one ROOT with it")
    # The freshness check's stat pass in a child process, overlapping the engine's imports.
    survey = _survey(roots[0], fresh) if store is None else None
    from ..core.service import open_engine

    first = open_engine(roots[0], model, _note, hidden, no_ignore, store=store, name=name)
    if getattr(first, "shared", False):
        _index_shared(roots, first, as_json, model, hidden, no_ignore, store, wait)
        return
    if name is not None:
        raise UsageProblem("--repo names a repository in a shared store: give --store too")
    if deep is True:
        from ..core.arms.deep import unavailable

        missing = unavailable()
        if missing:
            raise UsageProblem(f"--deep: the deep arm is {missing}")
    for i, root in enumerate(roots):
        if i:
            t0 = time.perf_counter()
        engine = first if i == 0 else open_engine(root, model, _note, hidden, no_ignore, store=store)
        if deep is not None:
            from ..core.query.config import ConfigError, set_deep

            try:
                set_deep(engine.root, deep, engine.cache_dir)
            except (ConfigError, OSError) as exc:
                raise UsageProblem(f"--{'' if deep else 'no-'}deep: {exc}") from None
        _index_local(engine, as_json, fresh, survey if i == 0 else None, t0)


def _index_shared(roots, first, as_json: bool, model, hidden, no_ignore, store, wait: float) -> None:
    """``index ROOT... --store URI``: each root into the shared store, one summary each."""
    from ..core.milvus_engine import index_into_store
    from ..core.service import open_engine

    names: dict[str, str] = {}
    engines = [first] + [open_engine(r, model, _note, hidden, no_ignore, store=store) for r in roots[1:]]
    for engine in engines:
        if engine.repo in names and names[engine.repo] != str(engine.root):
            raise UsageProblem(f"{names[engine.repo]} and {engine.root} would both be repository {engine.repo!r}")
        names[engine.repo] = str(engine.root)
    for engine in engines:
        stats = index_into_store(engine, wait=wait)
        if as_json:
            click.echo(json.dumps(stats.to_dict(), indent=2))
            continue
        click.echo(
            f"indexed {stats.repo}: {stats.files} files, {stats.chunks} chunks "
            f"(+{stats.added} ~{stats.changed} -{stats.removed}, {stats.embedded} embedded, "
            f"{len(stats.skipped)} skipped) in {stats.seconds.get('total', 0.0):.2f}s -> {stats.store}"
        )
    first.close()


def _index_local(engine: Engine, as_json: bool, fresh: bool = False, survey=None, t0: float | None = None) -> None:
    """One root's ``index``: progress on a terminal, then a summary line with the wall time
    since ``t0`` (the command's start), the deep arm's outcome on stderr."""
    t0 = time.perf_counter() if t0 is None else t0
    stats = _run_index(
        engine,
        show_progress=not as_json and sys.stderr.isatty(),
        open_view=False,
        keep_serving=False,
        fresh=fresh,
        survey=survey,
    )
    stats.wall = time.perf_counter() - t0
    if as_json:
        click.echo(json.dumps(stats.to_dict(), indent=2))
        return
    if stats.dense:
        _note(f"dense arm skipped: {stats.dense}")
    said = _deep_outcome(stats)
    if said:
        _note(said)
    deep = f", {stats.deep_embedded} deep-embedded" if "deep" in stats.seconds else ""
    check = stats.check
    how = (
        f"; nothing changed: {check['files']:,} files and {check['folders']:,} folders stat'ed, the tree not listed"
        if check.get("verdict") == "unchanged"
        else ""
    )
    click.echo(
        f"indexed {stats.files} files, {stats.chunks} chunks "
        f"(+{stats.added} ~{stats.changed} -{stats.removed}, {stats.embedded} embedded{deep}, "
        f"{len(stats.skipped)} skipped{how}) in {stats.wall:.2f}s -> {stats.index_dir}"
    )
    # Each stage's own time apart from the wall: chunking, embedding and writing overlap.
    stages = ", ".join(f"{stage} {sec:.2f}s" for stage, sec in stats.seconds.items() if sec >= 0.005)
    if stages:
        click.echo(f"  stages (they overlap): {stages}")


def _deep_outcome(stats) -> str | None:
    """The line ``index`` ends the deep arm's stage with (None: it had nothing to say)."""
    if "deep" not in stats.seconds:
        return None  # not turned on for this root, or not installed
    if stats.deep:
        return f"deep: {stats.deep}"
    if stats.deep_busy:
        return "deep: another ranklens is embedding this root's chunks; it commits them when done"
    if stats.deep_embedded:
        return (
            f"deep: {stats.deep_embedded:,} chunks embedded in {stats.seconds['deep']:.1f}s; "
            "the deep arm answers from now on"
        )
    return None
