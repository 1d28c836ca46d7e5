"""Where an index lives: the local segments (the default) or a Milvus collection.

A store is named by a URI: ``local`` (the per-root index under the user cache folder,
:mod:`core.storage.store`), a path ending in ``.db`` (Milvus Lite, an embedded engine in this
process), or ``http(s)://host:port`` (a Milvus server or cluster; its token is read from
:data:`TOKEN_ENV`). ``--store`` picks it per command; else :data:`STORE_ENV`, else the
``"store"`` key of the root's ``config.json``, else ``local``.

Nothing here imports pymilvus: the Milvus modules (:mod:`core.backends.milvus`,
:mod:`core.milvus_engine`) load only when a Milvus store is asked for, so the default
install never needs it.

``__init__``  store URIs: parse_store, resolve_store, StoreError (this file)
``milvus``    a team's shared index in a Milvus collection: the store, indexing a repository
``sparse``    the lexical arms' BM25 weights as sparse vectors, for the Milvus collection
(The engine over a Milvus store, an :class:`core.engine.Engine` subclass, is
:mod:`core.milvus_engine`: a surface beside the engine, since it builds on it.)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

#: The store every command uses when none is named.
STORE_ENV = "RANKLENS_STORE"
#: A Milvus server's token (``user:password`` or an API key); never on the command line.
TOKEN_ENV = "RANKLENS_MILVUS_TOKEN"
#: The collection ranklens writes (``RANKLENS_MILVUS_COLLECTION`` overrides it).
COLLECTION_ENV = "RANKLENS_MILVUS_COLLECTION"
DEFAULT_COLLECTION = "ranklens"


class StoreError(Exception):
    """The store cannot be used (one line, shown to the user; the CLI exits 1)."""


@dataclass(frozen=True)
class StoreSpec:
    """A parsed store URI: ``kind`` is ``local``, ``lite`` or ``server``."""

    kind: str
    uri: str
    collection: str = DEFAULT_COLLECTION

    @property
    def local(self) -> bool:
        return self.kind == "local"

    def __str__(self) -> str:
        return self.uri


def parse_store(uri: str | None) -> StoreSpec:
    """``local``/None -> the local store; ``*.db`` -> Milvus Lite; ``http(s)://…`` -> a server.
    StoreError for anything else."""
    text = (uri or "local").strip()
    collection = os.environ.get(COLLECTION_ENV) or DEFAULT_COLLECTION
    if text == "local":
        return StoreSpec("local", "local")
    if text.startswith(("http://", "https://", "tcp://", "unix:")):
        return StoreSpec("server", text, collection)
    if text.endswith(".db"):
        return StoreSpec("lite", str(Path(text).expanduser().resolve()), collection)
    raise StoreError(
        f"unknown store {text!r}: use local, a Milvus Lite file ending in .db, or http://host:19530 for a Milvus server"
    )


def configured_store(root: Path | str | None = None, cache_dir: Path | None = None) -> str | None:
    """The store named once for every command: :data:`STORE_ENV`, else the ``"store"`` key of
    ``root``'s config.json (None: neither)."""
    named = os.environ.get(STORE_ENV)
    if named:
        return named
    if root is None:
        return None
    from ..query.config import config_path

    try:
        data = json.loads(config_path(root, cache_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("store") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def resolve_store(uri: str | None, root: Path | str | None = None, cache_dir: Path | None = None) -> StoreSpec:
    """``--store`` when given, else the configured store, else ``local``."""
    return parse_store(uri if uri else configured_store(root, cache_dir))


def repo_names(text: str | None) -> list[str] | None:
    """``--repo``: None (the root's repository), ``["*"]`` for ``all``, else the names."""
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise StoreError("--repo is empty: name repositories (a,b) or all")
    if "all" in names:
        return ["*"]
    return list(dict.fromkeys(names))
