"""The ``ranklens`` command line: ``index``, ``query``, ``eval``, ``tune``, ``why`` and (default) the terminal UI.

Bad input gets a one-line ``ranklens: error: …`` and exit 2; an unexpected failure gets a
one-line ``ranklens: internal error: …`` and exit 1; never a traceback.

The group and the error mapping are here; each command group has a module of its own
(:mod:`.serve`: tui and mcp, :mod:`.index`, :mod:`.query`, :mod:`.evaluate`: eval and tune,
:mod:`.why`), and :mod:`.common` holds the options and output helpers they share. None of
them imports the engine at its top: a command imports what it needs when it runs.
"""

from __future__ import annotations

import sys

import click

from ..core.base.errors import RequestError
from . import evaluate, index, query, related, serve, why
from .common import PACKAGE, _note
from .index import Terminated

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


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ranklens", prog_name="ranklens")
def cli() -> None:
    """Explore a code repository with several retrievers at once.

    \b
    ranklens [ROOT]            open the terminal UI on ROOT (default: .)
    ranklens index [ROOT]      build or update ROOT's index
    ranklens query TEXT        search from the command line
    ranklens related PATH:LINE a unit's callers, callees and tests
    ranklens eval FILE         measure retrieval on a labeled query file
    ranklens tune FILE         tune the fusion weights and k on a labeled query file
    ranklens mcp [ROOT]        serve ROOT to coding agents (Model Context Protocol, stdio)
    ranklens why PATH          say why discovery skips or keeps PATH
    """


# In this order: a mistyped command's message lists them so (_Group._check_root).
cli.add_command(serve.tui)
cli.add_command(index.index)
cli.add_command(serve.mcp_command)
cli.add_command(query.query)
cli.add_command(related.related)
cli.add_command(evaluate.eval_command)
cli.add_command(evaluate.tune)
cli.add_command(why.why)


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
    loaded = sys.modules.get(f"{PACKAGE}.{module}")
    return (getattr(loaded, name),) if loaded is not None else ()
