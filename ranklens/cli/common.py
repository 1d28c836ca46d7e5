"""What the commands share: the options, the help texts they all show and the lazy help
(:class:`_LazyHelp`, :class:`_LazyDefault`), :class:`UsageProblem` and the output helpers."""

from __future__ import annotations

import click

# Only what every command needs is imported here: the engine (numpy, the arm registry, the
# ranking stage) loads when a command runs, so `--version`, `--help` and `why` start in a
# fraction of the time (benchmarks/bench_startup.py). Help texts that name the arms, the
# priors or the engine's limits hold placeholders filled when they are shown (_LazyHelp).
from ..core.base.errors import RequestError

#: The import package these commands belong to (``ranklens``): ``core.…`` is ``ranklens.core.…``.
PACKAGE = __package__.rpartition(".")[0]


def _help_values() -> dict[str, str]:
    """The placeholders of the help texts, read from the registry and the engine (loaded now)."""
    from ..core.arms import REGISTRY, always_fused, optional_defaults
    from ..core.engine import CANDIDATE_DEPTH, MAX_TOP_K
    from ..core.query.priors import RULES

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
        return getattr(import_module(f"{PACKAGE}.{module}"), name)


def _given_or_default(command: click.Command, name: str, value):
    """``value``, or the default of ``command``'s :class:`_LazyDefault` option ``name``."""
    if value is not None:
        return value
    return next(p for p in command.params if p.name == name).read()


class UsageProblem(RequestError):
    """Bad usage or input: exit 2 with this one-line message (as a request the service
    cannot answer, :class:`RequestError`)."""


def _note(message: str) -> None:
    click.echo(f"ranklens: {message}", err=True)


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


def _console():
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal and console.width < 110:
        console = Console(highlight=False, width=110)
    return console
