"""The commands that serve a root until they are stopped: ``ranklens tui`` (the default) and
``ranklens mcp``."""

from __future__ import annotations

from pathlib import Path

import click

from .common import (
    FRESHNESS_HELP,
    UsageProblem,
    _note,
    discovery_options,
    fresh_option,
    model_option,
    repo_option,
    store_option,
)


@click.command(epilog=FRESHNESS_HELP)
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
    from ..core.service import open_engine

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


@click.command(
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
    from ..mcp_server import serve

    serve(str(path), model, store, repos, fresh)
