"""The ``ranklens`` command line: ``index``, ``query``, ``eval``, ``tune``, ``why`` and (default) the terminal UI.

Bad input gets a one-line ``ranklens: error: …`` and exit 2; an unexpected failure gets a
one-line ``ranklens: internal error: …`` and exit 1; never a traceback.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

# Only what every command needs is imported here: the engine (numpy, the arm registry, the
# ranking stage) loads when a command runs, so `--version`, `--help` and `why` start in a
# fraction of the time (benchmarks/bench_startup.py). Help texts that name the arms, the
# priors or the engine's limits hold placeholders filled when they are shown (_LazyHelp).
from .core.base.errors import RequestError

if TYPE_CHECKING:
    from .core.engine import Engine
    from .core.query.settings import FusionSettings
    from .core.service import QueryRequest


def _help_values() -> dict[str, str]:
    """The placeholders of the help texts, read from the registry and the engine (loaded now)."""
    from .core.arms import REGISTRY, always_fused, optional_defaults
    from .core.engine import CANDIDATE_DEPTH, MAX_TOP_K
    from .core.query.priors import RULES

    return {
        # What "all" fuses (the same text whatever is installed here).
        "@ALL_ARMS@": ", ".join(
            [*always_fused(), *(f"plus {a} where `index --deep` turned it on" for a in optional_defaults())]
        ),
        "@ARMS@": ", ".join(REGISTRY),
        "@PRIOR_RULES@": ", ".join(f"{r.name} x{r.factor:g}" for r in RULES),
        "@CANDIDATE_DEPTH@": str(CANDIDATE_DEPTH),
        "@MAX_TOP_K@": str(MAX_TOP_K),
    }


def _fill(text: str | None, values: dict[str, str]) -> str | None:
    if text and "@" in text:
        for marker, value in values.items():
            text = text.replace(marker, value)
    return text


class _LazyHelp(click.Command):
    """A command whose help (options, epilog, shown defaults) names the arms or the engine's
    limits: the placeholders are filled, and the defaults read (:class:`_LazyDefault`), the
    first time its help is shown."""

    _filled = False

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if not self._filled:
            values = _help_values()
            self.epilog = _fill(self.epilog, values)
            for param in self.params:
                if isinstance(param, click.Option):
                    param.help = _fill(param.help, values)
                    if isinstance(param, _LazyDefault):
                        param.default = param.read()  # shown as [default: …]
            self._filled = True
        super().format_help(ctx, formatter)


class _LazyDefault(click.Option):
    """An option whose default lives in ``ranklens.<module>`` (``lazy_default=(module, name)``):
    None when parsed, so parsing imports nothing (``query`` starts its freshness survey first);
    the command reads it (:meth:`read`) when the option is not given, and its help shows it."""

    def __init__(self, *args, lazy_default: tuple[str, str], **kwargs) -> None:
        super().__init__(*args, default=None, **kwargs)
        self.lazy_default = lazy_default

    def read(self):
        from importlib import import_module

        module, name = self.lazy_default
        return getattr(import_module(f"{__package__}.{module}"), name)


def _given_or_default(command: click.Command, name: str, value):
    """``value``, or the default of ``command``'s :class:`_LazyDefault` option ``name``."""
    if value is not None:
        return value
    return next(p for p in command.params if p.name == name).read()


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
    "holds; signal chunk says why). Text lines end with the signals and "
    "priors that moved a hit, e.g. (definition, tests x0.5). The JSON gives each hit's "
    "fused_score (before the stage), score (after), and the signals and priors applied with "
    "their reasons. --no-priors ranks by the fused score alone."
)

#: The signals a text line names (file-evidence and diversity touch most hits: JSON only).
SHOWN_SIGNALS = ("definition", "quote", "path")

NO_PRIORS_HELP = "Turn off the ranking stage: no code-aware signals, priors or diversity; the plain fused ranking."


class UsageProblem(RequestError):
    """Bad usage or input: exit 2 with this one-line message (as a request the service
    cannot answer, :class:`RequestError`)."""


#: Words a user may reach for, and the command that does it (beside difflib's near misses).
COMMAND_ALIASES = {"search": "query", "find": "query", "serve": "mcp", "server": "mcp", "build": "index"}


class _Group(click.Group):
    """``ranklens [ROOT]`` with no subcommand opens the terminal UI; a first word that is
    neither a command nor an existing path is taken for a mistyped command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            if args and not args[0].startswith("-"):
                self._check_root(args[0])
            args = ["tui", *args]
        return super().parse_args(ctx, args)

    def _check_root(self, word: str) -> None:
        """A ROOT that does not exist and has no path separator is a command typed wrong:
        say so, with the closest command (a folder by that name would have opened)."""
        import difflib
        import os

        if os.path.lexists(os.path.expanduser(word)) or "/" in word or os.sep in word:
            return
        commands = sorted(self.commands, key=list(self.commands).index)
        # The closest of the commands and the words that stand for one ('serch': query).
        close = [
            COMMAND_ALIASES.get(w, w)
            for w in difflib.get_close_matches(word.lower(), [*commands, *COMMAND_ALIASES], n=1, cutoff=0.6)
        ]
        listed = ", ".join(commands)
        if close:
            raise click.UsageError(
                f"{word!r} is no command (nor a folder); did you mean {close[0]!r}? (commands: {listed})"
            )
        raise click.UsageError(
            f"{word!r} is no command and no folder (commands: {listed}; `ranklens FOLDER` opens the terminal UI)"
        )


def _survey(root: str, fresh: bool = False):
    """Start the freshness check's stat pass for ``root`` in a child process, before the engine
    (numpy, the arms) is imported: the two overlap (:class:`core.index.freshness.Survey`). None when
    there is nothing to check or no child can do it."""
    if fresh:
        return None
    from .core.index.freshness import Survey
    from .core.storage.store import index_dir

    try:
        path = Path(root).expanduser().resolve()
        return Survey.start(path, index_dir(path)) if path.is_dir() else None
    except (OSError, RuntimeError):
        return None


def _note(message: str) -> None:
    click.echo(f"ranklens: {message}", err=True)


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
    from .core.storage.store import IndexWriteError

    try:
        if max_wait is None:
            stats = _run_index_stages(engine, show_progress, deep, deep_limit, open_view, fresh, survey)
        else:
            stats = _index_within(engine, max_wait, show_progress, deep, deep_limit, fresh, survey)
    except IndexWriteError as exc:
        if not keep_serving or not engine.open():
            raise
        _note(f"warning: {exc.args[-1]}; answering from it")
        from .core.arms.protocol import IndexStats

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
    from .core.arms.protocol import IndexStats

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

    from .core.index.indexer import STAGES, Progress

    console = Console(stderr=True)
    with Bar(
        TextColumn("{task.description:<9}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as bar:
        tasks = {stage: bar.add_task(stage, total=None, visible=False) for stage in STAGES}

        def progress(p: Progress) -> None:
            _deep_starts(p)
            if check is not None:
                check()
            bar.update(tasks[p.stage], completed=p.done, total=max(p.total, 1), visible=True)

        return engine.ensure_index(
            progress, deep=deep, deep_limit=deep_limit, open_view=open_view, fresh=fresh, survey=survey, **more
        )


# Options shared by several commands, defined once so their help stays the same everywhere.
model_option = click.option(
    "--model", metavar="PATH_OR_ID", help="model2vec model for the dense arm (default: bundled)."
)
#: ripgrep's --hidden and --no-ignore; unset, each is as the root's index was last built.
STICKY = "default: as the index was last built, else off"
hidden_option = click.option(
    "--hidden/--no-hidden",
    default=None,
    help=f"Index hidden files and folders (names starting with a dot), as ripgrep's --hidden ({STICKY}).",
)
no_ignore_option = click.option(
    "--no-ignore/--ignore",
    "no_ignore",
    default=None,
    help=(
        "Read no ignore file (.gitignore, .ignore, .ranklensignore, git's info/exclude and global "
        f"excludes), as ripgrep's --no-ignore; the built-in rules still apply ({STICKY})."
    ),
)


#: What every command that reads the tree promises, and the flag that checks the most.
FRESHNESS_HELP = (
    "Freshness: a file saved before a query is never answered from its old text. Before each "
    "query the files, folders, ignore files and git state the last listing saw are stat'ed (in "
    "the terminal UI and the MCP server on Linux, only what inotify reported changed since the "
    "last check) and what changed is re-indexed first."
)
fresh_option = click.option(
    "--fresh",
    is_flag=True,
    help="List the whole tree again instead of trusting the last listing's snapshot (tui, mcp: and no inotify watcher).",
)

#: Where the index lives; see docs/milvus.md.
STORE_HELP = (
    "Where the index lives: local (default: the user cache folder), a Milvus Lite file (*.db) or a "
    "Milvus server (http://host:19530; token from RANKLENS_MILVUS_TOKEN). Default: RANKLENS_STORE, "
    'else the root\'s config.json "store", else local.'
)
store_option = click.option("--store", metavar="URI", default=None, help=STORE_HELP)
repo_option = click.option(
    "--repo",
    "repos",
    metavar="NAME,…|all",
    default=None,
    help="With a shared --store: the repositories to search (default: the root's, by its folder name; all: every one).",
)


def discovery_options(command):
    """``--hidden/--no-hidden`` and ``--no-ignore/--ignore``, on every command that indexes."""
    return hidden_option(no_ignore_option(command))


def retriever_option(text: str):
    """``--retriever``: which arms a command runs (all of them by default)."""
    return click.option("--retriever", default="all", show_default=True, help=text)


rrf_k_option = click.option(
    "--rrf-k",
    type=float,
    default=None,
    help="RRF constant k (1..1000000; default: the root's tuned config, else the shipped 5).",
)
weights_option = click.option(
    "--weights",
    metavar="ARM:W,…",
    help='Per-arm RRF weights, e.g. "dense:1.5,bm25:0.5" (default: the root\'s tuned config, else the shipped defaults; arms not named keep theirs).',
)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ranklens", prog_name="ranklens")
def cli() -> None:
    """Explore a code repository with several retrievers at once.

    \b
    ranklens [ROOT]            open the terminal UI on ROOT (default: .)
    ranklens index [ROOT]      build or update ROOT's index
    ranklens query TEXT        search from the command line
    ranklens eval FILE         measure retrieval on a labeled query file
    ranklens tune FILE         tune the fusion weights and k on a labeled query file
    ranklens mcp [ROOT]        serve ROOT to coding agents (Model Context Protocol, stdio)
    ranklens why PATH          say why discovery skips or keeps PATH
    """


@cli.command(epilog=FRESHNESS_HELP)
@click.argument("root", default=".", type=click.Path(file_okay=True, dir_okay=True))
@model_option
@discovery_options
@store_option
@repo_option
@fresh_option
def tui(
    root: str,
    model: str | None,
    hidden: bool | None,
    no_ignore: bool | None,
    store: str | None,
    repos: str | None,
    fresh: bool,
) -> None:
    """Open the terminal UI on ROOT (the default command).

    On Linux it watches the tree (inotify): a file saved elsewhere is re-indexed within half
    a second and the query asked again.
    """
    # The composition root: the engine every front end opens, the UI-free session over it,
    # and the app that draws the session.
    from .core.service import open_engine

    engine = open_engine(root, model, _note, hidden, no_ignore, store=store, repos=repos)
    from ranklens.core.session import Session
    from ranklens.tui.app import RanklensApp
    from ranklens.tui.threads import exit_now

    if fresh:
        engine.ensure_index(deep=False, open_view=False, fresh=True)
    app = RanklensApp(session=Session(engine), watch=not fresh)
    app.run()
    # Quit means now: not after a search or an indexing pass in flight (tui.threads).
    exit_now(app.return_code or 0)


@cli.command(epilog=FRESHNESS_HELP)
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
    from .core.service import open_engine

    first = open_engine(roots[0], model, _note, hidden, no_ignore, store=store, name=name)
    if getattr(first, "shared", False):
        _index_shared(roots, first, as_json, model, hidden, no_ignore, store, wait)
        return
    if name is not None:
        raise UsageProblem("--repo names a repository in a shared store: give --store too")
    if deep is True:
        from .core.arms.deep import unavailable

        missing = unavailable()
        if missing:
            raise UsageProblem(f"--deep: the deep arm is {missing}")
    for i, root in enumerate(roots):
        if i:
            t0 = time.perf_counter()
        engine = first if i == 0 else open_engine(root, model, _note, hidden, no_ignore, store=store)
        if deep is not None:
            from .core.query.config import ConfigError, set_deep

            try:
                set_deep(engine.root, deep, engine.cache_dir)
            except (ConfigError, OSError) as exc:
                raise UsageProblem(f"--{'' if deep else 'no-'}deep: {exc}") from None
        _index_local(engine, as_json, fresh, survey if i == 0 else None, t0)


def _index_shared(roots, first, as_json: bool, model, hidden, no_ignore, store, wait: float) -> None:
    """``index ROOT... --store URI``: each root into the shared store, one summary each."""
    from .core.milvus_engine import index_into_store
    from .core.service import open_engine

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


@cli.command(
    name="mcp",
    epilog=(
        'Register it with an MCP client as {"mcpServers": {"ranklens": {"command": "ranklens", "args": '
        '["mcp", "/path/to/repo"]}}}. Tools: search, read_span, check_handoff, index_status (the README '
        'section "Coding agents" describes them). Logs go to stderr; stdout carries the protocol.'
    ),
)
@click.argument("root", default=".", type=click.Path(file_okay=True, dir_okay=True))
@model_option
@store_option
@repo_option
@fresh_option
def mcp_command(root: str, model: str | None, store: str | None, repos: str | None, fresh: bool) -> None:
    """Serve ROOT (default: .) to coding agents over the Model Context Protocol on stdio.

    One process, one engine: the index is built on the first call (with progress
    notifications) and kept up to date as files change: every call first re-indexes what
    changed (on Linux inotify says what; a call waits up to 2 s for that, else its answer
    says it is from the previous index). Read-only; only indexed files inside
    ROOT are ever served. With a shared --store the index is the store's (kept up to date by
    `ranklens index --store`), searches may span --repo repositories, and the text of ROOT's
    repository is served.
    """
    path = Path(root).expanduser()
    if not path.is_dir():
        raise UsageProblem(f"{root} is not a directory")
    from .mcp_server import serve

    serve(str(path), model, store, repos, fresh)


@cli.command(
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
    from .core.service import QUERY_DEEP_LIMIT, NoAnswer, answer_query, check_request, deep_ready, open_engine

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
    if batch:
        if text is not None:
            raise UsageProblem("give TEXT or --batch, not both")
        if output:
            raise UsageProblem("--output does not apply to --batch (its envelopes go to stdout)")
        check_request("batch", **options)  # the defaults must be good before stdin is read
        _query_batch(root, model, options, hidden, no_ignore, store, repos, fresh, survey, max_wait)
        return
    if text is None:
        raise UsageProblem("missing TEXT (or --batch to read queries from stdin)")
    if max_wait is not None and store is not None:
        raise UsageProblem("--max-wait applies to a local index (a shared --store is built by `ranklens index`)")
    request = check_request(text, **options)
    # Span hashes go only into JSON (stdout or --output); the lines printed otherwise show none,
    # and hashing reads each hit's file through the credential detectors (~0.2 s to import).
    hashes = as_json or bool(output)
    if hashes:
        from .core.text.secrets import load_detectors

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
        from .core.base.atomic import write_json_atomic

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
    from .core.storage.store import Partial

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
    from .core.service import check_request

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
    from .core.service import QUERY_DEEP_LIMIT, NoAnswer, answer_query, check_request, deep_ready, open_engine

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


def _load_labeled(path: str):
    from .core.evaluation import EvalFileError, load_queries

    try:
        return load_queries(path, notify=_note)
    except EvalFileError as exc:
        raise UsageProblem(str(exc)) from None


def _run_labeled(engine: Engine, queries, settings: FusionSettings, *, also, top_k: int, quiet: bool):
    """Index, make the gold paths relative to the root, warn about gold files missing from the
    index, and run every query once per arm."""
    from .core.engine import QueryError
    from .core.evaluation import rebase_gold, run_queries

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


def _console():
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal and console.width < 110:
        console = Console(highlight=False, width=110)
    return console


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


@cli.command(name="eval", cls=_LazyHelp, epilog=EVAL_HELP)
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
    from .core.arms import REGISTRY, default_arms
    from .core.service import check_request, open_engine, settings_for

    if not 1 <= top_k <= 100:
        raise UsageProblem(f"--top-k must be from 1 to 100, got {top_k}")
    request = check_request("eval", retriever=retriever, weights=weights, rrf_k=rrf_k, priors=not no_priors)
    labeled = _load_labeled(queries)
    engine = open_engine(root, model, _note, hidden, no_ignore)
    settings = settings_for(engine, request)
    from .core.evaluation import report

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


@cli.command(
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
    from .core.engine import DEFAULT_TOP_K, QueryError
    from .core.evaluation import tune as tune_fusion
    from .core.query.settings import FusionSettings
    from .core.service import fused_arms, open_engine

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
            from .core.query.config import save_config

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


@cli.command()
@click.argument("path", metavar="PATH")
@click.option("--root", default=".", show_default=True, help="The root discovery starts from (PATH must lie under it).")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
@discovery_options
def why(path: str, root: str, as_json: bool, hidden: bool | None, no_ignore: bool | None) -> None:
    """Say why discovery skips or keeps PATH (a file or folder under ROOT).

    A skipped path is explained by the rule that decided: an ignore file's path:line:
    pattern (and the folder it matched, when that is an ancestor), or a built-in rule
    (excluded directory, hidden, secret, binary, too large …). A kept file is read as the
    index reads it: a file refused for its content says why, and credential lines the
    index holds redacted are listed with their kind.
    """
    from .core.discovery import DiscoveryOptions, explain, load_text
    from .core.index.applied import effective_options

    root_path = Path(root).expanduser()
    if not root_path.is_dir():
        raise UsageProblem(f"{root} is not a directory")
    rel = _path_under(root_path, path)
    options = effective_options(root_path, DiscoveryOptions(hidden=hidden, no_ignore=no_ignore))
    verdict = explain(root_path, rel, options)
    data = {**verdict.to_dict(), "hidden": bool(options.hidden), "no_ignore": bool(options.no_ignore)}
    if verdict.kept and not verdict.is_dir:
        loaded = load_text(root_path, rel, options.max_bytes)
        data["indexed"] = loaded.text is not None
        data["refused"] = loaded.reason or None
        data["redacted"] = _redacted_kinds(root_path, rel, loaded.redacted)
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    shown = verdict.path or "."
    if not verdict.kept:
        rule = verdict.rule
        where = f" (it matches {verdict.via}/)" if verdict.via else ""
        hint = f"; {rule.hint}" if rule is not None and rule.hint else ""
        click.echo(f"{shown}: skipped by {rule}{where}{hint}")
    elif verdict.is_dir:
        click.echo(f"{shown}/: entered")
    elif not data["indexed"]:
        click.echo(f"{shown}: listed, but not indexed: {data['refused']}")
    elif data["redacted"]:
        lines = ", ".join(f"{r['line']} ({r['kind']})" for r in data["redacted"])
        click.echo(f"{shown}: kept; credential lines indexed redacted: {lines}")
    else:
        click.echo(f"{shown}: kept")


def _path_under(root: Path, path: str) -> str:
    """``path`` (relative to the working folder, else to ``root``) as a POSIX path relative to
    ``root``; UsageProblem when it does not exist or lies outside."""
    import os

    given = Path(path).expanduser()
    candidates = [given] if given.is_absolute() else [Path.cwd() / given, root / given]
    found = next((c for c in candidates if os.path.lexists(c)), None)
    if found is None:
        raise UsageProblem(f"{path}: no such file or folder")
    found_abs, root_abs = Path(os.path.abspath(found)), Path(os.path.abspath(root))
    # Compare without following the path itself (a link is explained as a link), but with
    # its folder and the root resolved (the root may be reached through a link).
    parent = Path(os.path.realpath(found_abs.parent)) / found_abs.name if found_abs != root_abs else found_abs
    for base, target in ((root_abs, found_abs), (Path(os.path.realpath(root_abs)), parent)):
        try:
            rel = target.relative_to(base)
        except ValueError:
            continue
        return rel.as_posix() if str(rel) != "." else ""
    raise UsageProblem(f"{path} is not under the root {root}")


def _redacted_kinds(root: Path, rel: str, lines: list[int]) -> list[dict]:
    """Each redacted line with the kind of credential on it."""
    if not lines:
        return []
    from .core.text.secrets import find, is_secret_name

    text = (root / rel).read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    text = text.removeprefix("\ufeff")
    kinds = {}
    if not is_secret_name(Path(rel).name):
        for f in find(text):
            for n in range(f.start_line, f.end_line + 1):
                kinds.setdefault(n, f.kind)
    return [{"line": n, "kind": kinds.get(n, "secret file")} for n in lines]


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI and turn every failure into a one-line message and exit code."""
    try:
        # Without standalone mode click returns a command's click.exceptions.Exit code (--batch's).
        code = cli.main(args=argv, prog_name="ranklens", standalone_mode=False)
    except click.exceptions.Abort as exc:
        if isinstance(exc.__cause__ or exc.__context__, Terminated):
            _note("terminated (SIGTERM); what was committed and embedded so far is kept")
            return 143
        _note("aborted")
        return 130
    except click.ClickException as exc:
        _note(f"error: {exc.format_message()}")
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except RequestError as exc:  # UsageProblem too
        _note(f"error: {exc}")
        return 2
    except Terminated:
        _note("terminated (SIGTERM); what was committed and embedded so far is kept")
        return 143
    except KeyboardInterrupt:
        _note("interrupted")
        return 130
    except Exception as exc:
        if isinstance(exc, _raised("core.storage.store", "IndexWriteError")):
            # disk full, a file-size limit: the previous index serves
            _note(f"error: {exc.args[-1]}")
        elif isinstance(
            exc,
            _raised("core.backends", "StoreError")
            + _raised("core.service", "NoAnswer")
            + _raised("core.base.locks", "LockBusy"),
        ):
            # a shared store down, refusing the token, missing or of another format; every
            # arm asked for was skipped (each said why above); another process held a lock
            # past its budget (core.base.locks)
            _note(f"error: {exc}")
        else:  # the promise: a one-line message, never a traceback
            _note(f"internal error: {type(exc).__name__}: {exc}")
        return 1
    return code if isinstance(code, int) else 0


def _raised(module: str, name: str) -> tuple[type, ...]:
    """The exception class ``name`` of ``ranklens.<module>`` if that module is loaded (nothing
    else can have raised it), as a tuple for ``isinstance``; else ``()``."""
    loaded = sys.modules.get(f"{__package__}.{module}")
    return (getattr(loaded, name),) if loaded is not None else ()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
