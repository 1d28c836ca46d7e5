"""``ranklens why``: why discovery skips or keeps a path."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .common import UsageProblem, discovery_options


@click.command()
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
    from ..core.discovery import DiscoveryOptions, explain, load_text
    from ..core.index.applied import effective_options

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
    from ..core.text.secrets import find, is_secret_name

    text = (root / rel).read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    text = text.removeprefix("\ufeff")
    kinds = {}
    if not is_secret_name(Path(rel).name):
        for f in find(text):
            for n in range(f.start_line, f.end_line + 1):
                kinds.setdefault(n, f.kind)
    return [{"line": n, "kind": kinds.get(n, "secret file")} for n in lines]
