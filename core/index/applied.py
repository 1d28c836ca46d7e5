"""The discovery options an index was last built with, read from its database alone.

``hidden`` and ``no_ignore`` left unset on the command line are as the root's index was last
built (ripgrep's flags, made sticky). ``ranklens why`` asks that without loading the indexer
(numpy, the chunkers), so it lives here rather than in :mod:`core.index.indexer`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..base._sqlite import sqlite3
from ..storage.store import close, connect, index_dir

if TYPE_CHECKING:
    from ..discovery import DiscoveryOptions


def fill_options(options: DiscoveryOptions, stored: dict) -> DiscoveryOptions:
    """``options`` with ``hidden`` and ``no_ignore`` left at None taken from ``stored``."""
    return replace(
        options,
        hidden=options.hidden if options.hidden is not None else bool(stored.get("hidden")),
        no_ignore=options.no_ignore if options.no_ignore is not None else bool(stored.get("no_ignore")),
    )


def effective_options(root: Path, options: DiscoveryOptions, cache_dir: Path | None = None) -> DiscoveryOptions:
    """The discovery options an index update of ``root`` would apply: ``hidden`` and
    ``no_ignore`` left at None as its index was last built (off when it has none)."""
    stored: dict = {}
    db = index_dir(Path(root), cache_dir) / "index.sqlite"
    if db.exists():
        try:
            conn = connect(db, readonly=True)
            try:
                row = conn.execute("SELECT value FROM meta WHERE key = 'discovery'").fetchone()
            finally:
                close(conn)
            stored = json_object(row[0] if row else None)
        except sqlite3.DatabaseError:
            stored = {}
    return fill_options(options, stored)


def json_object(text: str | None) -> dict:
    """``text`` parsed as a JSON object; {} when it is missing or anything else."""
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
