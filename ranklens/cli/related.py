"""``ranklens related``: a unit's callers, callees and tests (the neighbourhood of a place)."""

from __future__ import annotations

import json
import sys

import click

from .common import (
    FRESHNESS_HELP,
    UsageProblem,
    _note,
    discovery_options,
    fresh_option,
    model_option,
    store_option,
)
from .index import _run_index, _save_on_sigterm, _survey

RELATED_HELP = (
    "Edges are name-based, as search-based code navigation: a unit's callers are the units "
    "whose code uses its name (a call, a member access, a type, an import), its callees the "
    "definitions of the names it uses; callers in test files are its tests. A name defined "
    "more than once resolves to the closest definitions: same file, then a module the using "
    "file imports, then the same directory, then by name anywhere; each line says which, and "
    "how many definitions the name has. With a shared --store, the edges are the store's (the "
    "root's repository as it was last indexed into it; --repo names it when its folder's name "
    "does not), and the files are read from --root. " + FRESHNESS_HELP
)


@click.command(epilog=RELATED_HELP)
@click.argument("place", metavar="PATH:LINE")
@click.option("--root", default=".", show_default=True, help="Repository the place is in.")
@click.option("--limit", type=int, default=20, show_default=True, help="Places listed per kind (1..200).")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the JSON envelope (unit, callers, callees, tests, counts)."
)
@model_option
@discovery_options
@store_option
@click.option(
    "--repo",
    "repos",
    metavar="NAME",
    default=None,
    help="With a shared --store: the root's repository in it (default: its folder's name).",
)
@fresh_option
def related(
    place: str,
    root: str,
    limit: int,
    as_json: bool,
    model: str | None,
    hidden,
    no_ignore,
    store: str | None,
    repos: str | None,
    fresh: bool,
) -> None:
    """Show the unit at PATH:LINE (or PATH:NAME) and its callers, callees and tests.

    The unit is the innermost definition (function, method, class …) holding the line.
    PATH:START-END (a hit's lines) follows every definition packed there, their lists merged.
    Each listed place is path:start-end, its name, the line of the use that links it, and how
    the name was resolved; best first. PATH is relative to --root (or absolute, inside it).
    """
    survey = _survey(root, fresh) if store is None else None
    from ..core.navigate import answer_related, check_limit, parse_place
    from ..core.service import open_engine

    parse_place(place)  # a malformed place fails before the index is opened
    check_limit(limit)
    if repos is not None and ("," in repos or repos.strip() in ("all", "*")):
        raise UsageProblem("related follows one repository: --repo NAME, the root's")
    engine = open_engine(root, model, _note, hidden, no_ignore, store=store, repos=repos, name=repos)
    _save_on_sigterm()
    _run_index(engine, show_progress=sys.stderr.isatty() and not as_json, fresh=fresh, survey=survey)
    data = answer_related(engine, place, limit=limit)
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    unit = data["unit"]
    click.echo(f"{unit['path']}:{unit['start_line']}-{unit['end_line']}  {unit['context']}")
    counts = data["counts"]
    if counts.get("unfollowed"):
        click.echo(f"(the lines pack {counts['unfollowed']} more definitions, not followed: ask for one by its line)")
    for kind in ("callers", "tests", "callees"):
        places = data[kind]
        shown = f"{len(places)} of {counts[kind]}" if counts[kind] > len(places) else f"{counts[kind]}"
        click.echo(f"\n{kind} ({shown})")
        for p in places:
            name = p["name"] or "(module level)"
            ambiguous = f", {p['candidates']} definitions" if p["candidates"] > 1 else ""
            click.echo(
                f"  {p['path']}:{p['start_line']}-{p['end_line']}  {name}  "
                f"[line {p['line']}: {p['via']}, {p['resolution']}{ambiguous}]"
            )
        if not places:
            click.echo("  (none)")
