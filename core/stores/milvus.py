"""A team's shared index in Milvus: one collection of chunks for many repositories.

The chunks collection holds, per chunk, its repository, path, span and breadcrumb, three
text fields that Milvus turns into BM25 sparse vectors with its own full-text function, and
the model2vec vector ranklens embeds client-side with the model of :mod:`core.embedding`:

- ``lex``: the code-aware tokens the local ``bm25`` arm counts (text, path, symbol names;
  identifiers whole and split, :func:`core.tokenize.code_tokens`), space-joined, so Milvus's
  ``standard`` tokenizer (``\\w+``, lowercased) sees exactly ranklens's terms;
- ``words``: the text's identifiers whole, the document of the local ``fts5`` arm (SQLite FTS5
  indexes the chunk's text alone: the breadcrumb is in ``lex`` and ``names``);
- ``names``: a definition chunk's names (three times), signature, docstring and path tokens
  (the ``symbols`` arm's document; empty for windows);
- ``dense``: the chunk's breadcrumb and text embedded as the local ``dense`` arm embeds it.

A second collection, ``<name>_files``, holds one row per indexed file (its content hash,
size and mtime: an update re-reads a file only when its stat changed and re-chunks it only
when its hash did), one row per repository (its root, counts), the collection's meta row
(store format, embedding model and dimension: a collection built otherwise is refused), and
the indexers' lease rows (one indexer per repository at a time).

pymilvus is imported when a store opens (:func:`_pymilvus`), never by the default install.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import TOKEN_ENV, StoreError, StoreSpec

#: Bumped whenever the collection's fields or their meaning change; a collection of another
#: format is refused, never read.
STORE_FORMAT = 1
#: Milvus's VARCHAR limit is 65,535 bytes; longer token texts are cut (a minified file's line).
MAX_TEXT_BYTES = 65_000
MAX_PATH_BYTES = 2_000
#: Chunks sent in one insert (each with a 256-d vector and three texts: ~1-2 MB).
INSERT_BATCH = 1_000
#: Paths in one ``path in [...]`` delete expression.
DELETE_BATCH = 200
#: An indexer's lease on a repository expires when it has not renewed it for this long (a
#: killed indexer does not block the repository forever).
LEASE_SECONDS = 300.0
#: The BM25 constants of the local arms: rank-bm25's k1 1.5 for ``bm25`` and ``symbols``,
#: SQLite FTS5's 1.2 for ``fts5``; b 0.75 for all.
BM25_PARAMS = {"lex": (1.5, 0.75), "words": (1.2, 0.75), "names": (1.5, 0.75)}
#: The chunk fields a search returns (what a :class:`core.types.Hit` needs).
HIT_FIELDS = ["repo", "path", "start", "end", "pstart", "pend", "context", "symbol"]
_ANALYZER = {"tokenizer": "standard", "filter": ["lowercase"]}


def _pymilvus():
    try:
        import pymilvus
    except ImportError:
        raise StoreError("Milvus support is not installed: pip install 'ranklens[milvus]'") from None
    # Milvus Lite logs a traceback when its data folder is held by another process; the
    # store says so in one line instead.
    for name in ("milvus_lite", "pymilvus"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return pymilvus


def clip(text: str, limit: int = MAX_TEXT_BYTES) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, at a character boundary."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", errors="ignore")


def quote(value: str) -> str:
    """A string literal for a Milvus filter expression."""
    return json.dumps(value, ensure_ascii=False)


def lex_text(chunk) -> str:
    """The ``bm25`` arm's document: text, path and symbol as ranklens tokenizes them."""
    from ..tokenize import code_tokens

    return " ".join(code_tokens(f"{chunk.text}\n{chunk.path}\n{chunk.symbol}"))


def words_text(chunk) -> str:
    """The ``fts5`` arm's document: the text's identifiers, whole (as FTS5's ``unicode61``
    tokenizer with ``_`` as a token character cuts it)."""
    from ..tokenize import identifiers

    return " ".join(identifiers(chunk.text))


def names_text(chunk) -> str:
    """The ``symbols`` arm's document (its fields weighted as the local matrix weighs them:
    names three times), or "" for a chunk that arm does not rank."""
    from ..arms.symbols import include
    from ..tokenize import code_tokens

    if not include(chunk):
        return ""
    names = " ".join(code_tokens(chunk.symbol))
    rest = " ".join(code_tokens(f"{chunk.signature}\n{chunk.docstring}\n{chunk.path}"))
    return f"{names} {names} {names} {rest}"


def _one_line(exc: BaseException) -> str:
    text = str(getattr(exc, "message", "") or exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


@dataclass
class RepoInfo:
    name: str
    root: str = ""
    files: int = 0
    chunks: int = 0
    indexed_at: float = 0.0


class MilvusStore:
    """One Milvus collection of ranklens chunks (and its files collection), over pymilvus's
    ``MilvusClient``: the same calls for Milvus Lite and a server."""

    def __init__(self, spec: StoreSpec) -> None:
        self.spec = spec
        self.name = spec.collection
        self.files_name = f"{spec.collection}_files"
        self._loaded = False
        pm = _pymilvus()
        self._pm = pm
        if spec.kind == "lite":
            self._check_lite_free(Path(spec.uri))
        try:
            # No keepalive pings while idle: a Milvus Lite server (grpc's defaults) answers a
            # ping every 10 s between calls (an indexer embedding, an idle UI) with GOAWAY
            # "too_many_pings".
            options = {"grpc_options": {"grpc.keepalive_permit_without_calls": 0}}
            if spec.kind == "lite":
                Path(spec.uri).parent.mkdir(parents=True, exist_ok=True)
                self.client = pm.MilvusClient(spec.uri, **options)
            else:
                token = os.environ.get(TOKEN_ENV, "")
                self.client = pm.MilvusClient(uri=spec.uri, token=token, timeout=10, **options)
            self._collections = set(self.client.list_collections())
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(self._why(exc)) from None

    # -- connection -----------------------------------------------------------------------

    @staticmethod
    def _check_lite_free(path: Path) -> None:
        """Milvus Lite holds its data folder for one process: say so, rather than its traceback."""
        lock = path / "LOCK"
        if not lock.exists():
            return
        import fcntl

        try:
            fd = os.open(lock, os.O_RDWR)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BlockingIOError:
            raise StoreError(
                f"the Milvus Lite store {path} is open in another process (an indexer or a server); "
                f"wait for it, or share it: milvus-lite server --data-dir {path}, then --store http://127.0.0.1:19530"
            ) from None
        finally:
            os.close(fd)

    def _why(self, exc: BaseException) -> str:
        text = _one_line(exc)
        low = text.lower()
        if any(w in low for w in ("auth", "token", "credential", "password", "permission", "denied")):
            return f"Milvus at {self.spec.uri} refused the credentials ({TOKEN_ENV}): {text}"
        if (
            not text
            or text == "MilvusException"
            or any(w in low for w in ("connect", "unavailable", "timeout", "deadline", "refused", "fail to"))
        ):
            return f"cannot reach Milvus at {self.spec.uri}" + (
                f": {text}" if text and text != "MilvusException" else ""
            )
        return f"Milvus at {self.spec.uri}: {text}"

    def call(self, fn: Callable, *args, **kwargs):
        """A client call whose failure becomes one StoreError line."""
        try:
            return fn(*args, **kwargs)
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(self._why(exc)) from None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()

    # -- collections ----------------------------------------------------------------------

    @property
    def exists(self) -> bool:
        return self.name in self._collections and self.files_name in self._collections

    def load(self) -> None:
        """Load both collections for searching (a no-op when a server has them loaded)."""
        if not self._loaded:
            for name in (self.files_name, self.name):
                self.call(self.client.load_collection, name)
            self._loaded = True

    def meta(self) -> dict:
        rows = self.call(self.client.get, self.files_name, ids=["meta"], output_fields=["info"])
        if not rows:
            return {}
        try:
            return json.loads(rows[0]["info"])
        except (ValueError, KeyError, TypeError):
            return {}

    def check(self, model_name: str | None = None, dim: int | None = None) -> dict:
        """The collection's meta; StoreError when it is missing or another format or model built it."""
        if not self.exists:
            raise StoreError(
                f"no ranklens collection {self.name!r} in {self.spec.uri}: build it with "
                f"`ranklens index REPO --store {self.spec.uri}`"
            )
        self.load()
        meta = self.meta()
        if meta.get("format") != STORE_FORMAT:
            raise StoreError(
                f"collection {self.name!r} in {self.spec.uri} was built by another ranklens "
                f"(store format {meta.get('format')!r}, this one reads {STORE_FORMAT}); re-index into a new collection "
                f"(RANKLENS_MILVUS_COLLECTION) or drop it"
            )
        if model_name is not None and meta.get("model") != model_name:
            raise StoreError(
                f"collection {self.name!r} in {self.spec.uri} was embedded with {meta.get('model')!r}, "
                f"not {model_name!r} (--model); query it with that model or re-index into a new collection"
            )
        if dim is not None and meta.get("dim") != dim:
            raise StoreError(f"collection {self.name!r} holds {meta.get('dim')}-d vectors, the model makes {dim}-d")
        return meta

    def create(self, model_name: str, dim: int) -> None:
        """Create the collections (when missing) for vectors of ``model_name``; the meta row
        says which format and model they hold."""
        pm = self._pm
        DataType, Function, FunctionType = pm.DataType, pm.Function, pm.FunctionType
        if self.name not in self._collections:
            schema = self._pm.MilvusClient.create_schema(auto_id=True)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("repo", DataType.VARCHAR, max_length=256)
            schema.add_field("path", DataType.VARCHAR, max_length=MAX_PATH_BYTES + 48)
            for name in ("start", "end", "pstart", "pend"):
                schema.add_field(name, DataType.INT64)
            schema.add_field("kind", DataType.VARCHAR, max_length=32)
            schema.add_field("language", DataType.VARCHAR, max_length=64)
            schema.add_field("context", DataType.VARCHAR, max_length=8192)
            schema.add_field("symbol", DataType.VARCHAR, max_length=8192)
            for name in BM25_PARAMS:
                schema.add_field(
                    name, DataType.VARCHAR, max_length=65_535, enable_analyzer=True, analyzer_params=_ANALYZER
                )
                schema.add_field(f"{name}_sparse", DataType.SPARSE_FLOAT_VECTOR)
                schema.add_function(
                    Function(
                        name=f"{name}_bm25",
                        function_type=FunctionType.BM25,
                        input_field_names=[name],
                        output_field_names=[f"{name}_sparse"],
                    )
                )
            schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dim)
            index = self.client.prepare_index_params()
            for name, (k1, b) in BM25_PARAMS.items():
                index.add_index(
                    f"{name}_sparse",
                    index_type="SPARSE_INVERTED_INDEX",
                    metric_type="BM25",
                    params={"bm25_k1": k1, "bm25_b": b},
                )
            # Exact cosine, as the local arm scans every vector; a cluster may choose HNSW
            # (docs/scale.md).
            index.add_index("dense", index_type="FLAT", metric_type="COSINE")
            self.call(self.client.create_collection, self.name, schema=schema, index_params=index)
        if self.files_name not in self._collections:
            schema = self._pm.MilvusClient.create_schema(auto_id=False)
            schema.add_field("key", DataType.VARCHAR, is_primary=True, max_length=MAX_PATH_BYTES + 320)
            schema.add_field("repo", DataType.VARCHAR, max_length=256)
            schema.add_field("kind", DataType.VARCHAR, max_length=16)
            schema.add_field("path", DataType.VARCHAR, max_length=MAX_PATH_BYTES + 48)
            schema.add_field("sha", DataType.VARCHAR, max_length=80)
            schema.add_field("size", DataType.INT64)
            schema.add_field("mtime", DataType.INT64)
            schema.add_field("info", DataType.VARCHAR, max_length=65_535)
            # Milvus wants a vector field in every collection; this one holds nothing.
            schema.add_field("v", DataType.FLOAT_VECTOR, dim=2)
            index = self.client.prepare_index_params()
            index.add_index("v", index_type="FLAT", metric_type="L2")
            self.call(self.client.create_collection, self.files_name, schema=schema, index_params=index)
            meta = {"format": STORE_FORMAT, "model": model_name, "dim": dim}
            self.call(self.client.upsert, self.files_name, [self._row("meta", "", "meta", info=json.dumps(meta))])
        self._collections = set(self.call(self.client.list_collections))
        self.load()

    @staticmethod
    def _row(key: str, repo: str, kind: str, path: str = "", sha: str = "", size: int = 0, mtime: int = 0, info=""):
        return {
            "key": key,
            "repo": repo,
            "kind": kind,
            "path": path,
            "sha": sha,
            "size": size,
            "mtime": mtime,
            "info": info,
            "v": [0.0, 0.0],
        }

    # -- repositories -----------------------------------------------------------------------

    def _rows(self, collection: str, expr: str, fields: list[str]) -> list[dict]:
        """Every row matching ``expr`` (paged: a query returns at most 16,384 rows)."""
        out: list[dict] = []
        try:
            it = self.client.query_iterator(collection, batch_size=4000, filter=expr, output_fields=fields)
        except Exception as exc:
            raise StoreError(self._why(exc)) from None
        try:
            while True:
                page = self.call(it.next)
                if not page:
                    break
                out.extend(page)
        finally:
            it.close()
        return out

    def repos(self) -> dict[str, RepoInfo]:
        rows = self._rows(self.files_name, 'kind == "repo"', ["repo", "info"])
        out = {}
        for row in rows:
            try:
                info = json.loads(row["info"])
            except ValueError:
                info = {}
            out[row["repo"]] = RepoInfo(
                row["repo"],
                info.get("root", ""),
                info.get("files", 0),
                info.get("chunks", 0),
                info.get("indexed_at", 0.0),
            )
        return out

    def common(self, repos: Sequence[str] | None) -> dict | None:
        """The ``fts5`` arm's common terms of ``repos`` (None: every repository), summed: what
        the local arm reads from its ``fts5-common.json`` (None when none are recorded)."""
        if repos is None:
            rows = self._rows(self.files_name, 'kind == "common"', ["info"])
        else:
            rows = self.call(
                self.client.get, self.files_name, ids=[f"common\x00{r}" for r in repos], output_fields=["info"]
            )
        out: dict | None = None
        for row in rows:
            try:
                part = json.loads(row["info"])
            except ValueError:
                continue
            if out is None:
                out = {"n": 0, "floor": 0, "df": {}}
            out["n"] += part["n"]
            out["floor"] += part["floor"]
            for term, df in part["df"].items():
                out["df"][term] = out["df"].get(term, 0) + df
        return out

    def files_of(self, repo: str) -> dict[str, dict]:
        rows = self._rows(
            self.files_name, f'repo == {quote(repo)} and kind == "file"', ["path", "sha", "size", "mtime"]
        )
        return {r["path"]: r for r in rows}

    # -- search ---------------------------------------------------------------------------

    def search(self, field: str, data, limit: int, expr: str) -> list[dict]:
        """The best ``limit`` chunks for ``data`` (a text for a BM25 field, a vector for
        ``dense``) among those matching ``expr``, best first: ``{"entity": …, "distance": …}``."""
        res = self.call(
            self.client.search,
            self.name,
            data=[data],
            anns_field=field,
            limit=limit,
            filter=expr,
            output_fields=HIT_FIELDS,
        )
        return list(res[0]) if res else []

    def query(self, expr: str, limit: int) -> list[dict]:
        return self.call(self.client.query, self.name, filter=expr, output_fields=HIT_FIELDS, limit=limit)

    def count(self, expr: str) -> int:
        res = self.call(self.client.query, self.name, filter=expr, output_fields=["count(*)"])
        return int(res[0]["count(*)"]) if res else 0


_open_stores: dict[tuple[str, str, str], MilvusStore] = {}
_open_lock = threading.Lock()


def open_store(spec: StoreSpec) -> MilvusStore:
    """The process's one client of the store ``spec`` names (Milvus Lite holds its folder for
    one client: every engine of a process, such as ``index a b --store x.db``, shares it)."""
    key = (spec.kind, spec.uri, spec.collection)
    with _open_lock:
        store = _open_stores.get(key)
        if store is None:
            store = _open_stores[key] = MilvusStore(spec)
        return store


def count_common(texts: Iterable[str], n: int) -> dict:
    """The common terms of one repository's ``words`` documents, as the local ``fts5`` arm
    records them (:func:`core.arms.fts5.common_terms`): every term in at least min(5 % of the
    chunks, 2,000) chunks, with its document frequency."""
    from collections import Counter

    from ..arms.fts5 import _RECORD_FRACTION, _RECORD_ROWS

    df: Counter = Counter()
    for text in texts:
        df.update(set(text.split()))
    floor = max(1, min(int(n * _RECORD_FRACTION), _RECORD_ROWS))
    return {"n": n, "floor": floor, "df": {t: c for t, c in df.items() if c >= floor}, "drift": 0}


def _common_row(repo: str, common: dict) -> dict:
    info = json.dumps(common)
    while len(info) > 60_000:  # a row's text is bounded: the rarer recorded terms go first
        df = common["df"]
        cut = sorted(df.values())[len(df) // 4]
        common = {**common, "df": {t: c for t, c in df.items() if c > cut}}
        info = json.dumps(common)
    return MilvusStore._row(f"common\x00{repo}", repo, "common", info=info)


# -- indexing ---------------------------------------------------------------------------------


@dataclass
class RepoStats:
    """What one repository's index pass did (the ``index --json`` summary)."""

    repo: str
    root: str
    store: str
    files: int = 0
    chunks: int = 0
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    embedded: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "repo": self.repo,
            "root": self.root,
            "store": self.store,
            "files": self.files,
            "chunks": self.chunks,
            "added": self.added,
            "changed": self.changed,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "embedded": self.embedded,
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
        }


def check_repo_name(name: str) -> str:
    if not name or "/" in name or name in ("all", "*") or len(name.encode()) > 200 or name.startswith("."):
        raise StoreError(f"{name!r} cannot name a repository in a store (no '/', not 'all', at most 200 bytes)")
    return name


class RepoLease:
    """One indexer per repository: a lease row in the files collection, renewed while the
    indexer runs and dropped when it ends. A second indexer waits up to ``wait`` seconds for
    it, then refuses with who holds it. (Milvus has no compare-and-set: after writing its row
    an indexer reads it back and goes on only if the row is still its own.)"""

    def __init__(self, store: MilvusStore, repo: str, wait: float = 0.0) -> None:
        self.store, self.repo, self.wait = store, repo, wait
        self.key = f"lock\x00{repo}"
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._renewed = 0.0

    def _holder(self) -> dict | None:
        rows = self.store.call(self.store.client.get, self.store.files_name, ids=[self.key], output_fields=["info"])
        if not rows:
            return None
        try:
            held = json.loads(rows[0]["info"])
        except ValueError:
            return None
        if time.time() - held.get("renewed", 0) > LEASE_SECONDS:
            return None  # its indexer died
        return held

    def _write(self) -> None:
        info = json.dumps({"owner": self.owner, "renewed": time.time()})
        self.store.call(
            self.store.client.upsert, self.store.files_name, [MilvusStore._row(self.key, self.repo, "lock", info=info)]
        )
        self._renewed = time.monotonic()

    def __enter__(self) -> RepoLease:
        deadline = time.monotonic() + self.wait
        while True:
            held = self._holder()
            if held is None or held.get("owner") == self.owner:
                self._write()
                time.sleep(0.05)
                held = self._holder()
                if held is not None and held.get("owner") == self.owner:
                    return self
            if time.monotonic() >= deadline:
                who = (held or {}).get("owner", "another indexer")
                raise StoreError(
                    f"repository {self.repo!r} is being indexed into {self.store.spec.uri} by {who}; "
                    "try again when it finishes"
                )
            time.sleep(0.5)

    def renew(self) -> None:
        if time.monotonic() - self._renewed > LEASE_SECONDS / 5:
            self._write()

    def __exit__(self, *exc) -> None:
        with contextlib.suppress(Exception):
            self.store.client.delete(self.store.files_name, ids=[self.key])


def index_repo(
    store: MilvusStore,
    root: Path,
    repo: str,
    model,
    *,
    settings=None,
    progress: Callable[[str, int, int], None] | None = None,
    wait: float = 0.0,
    named: bool = False,
) -> RepoStats:
    """Bring ``repo`` (the tree at ``root``) up to date in the store, incrementally.

    Files are listed as the local indexer lists them; a file whose size and mtime match its
    row is not read; one whose content hash matches is not re-chunked. A changed or removed
    file's row goes first, then its chunks (by path), then the new chunks are inserted and
    only then its row is written again: a pass killed midway leaves files without a row, which
    the next pass indexes again (deleting by path first), never a row without its chunks.

    A repository of that name indexed from another folder is refused unless ``named`` (the
    user named it with ``--repo``: it is the same repository, checked out elsewhere): two
    folders called ``src`` must not replace each other's files.
    """
    from ..arms.dense import document_text
    from ..chunking import chunk_file
    from ..discovery import DiscoveryOptions, discover, load_text
    from ..indexer import IndexSettings, _sha
    from ..languages import language_for

    settings = settings or IndexSettings()
    report = progress or (lambda _stage, _done, _total: None)
    stats = RepoStats(repo, str(root), store.spec.uri)
    t0 = time.perf_counter()
    store.create(model.name, model.dim)
    store.check(model.name, model.dim)
    with RepoLease(store, repo, wait) as lease:
        known = store.repos().get(repo)
        before = known.chunks if known is not None else 0
        if known is not None and known.root and known.root != str(root) and not named:
            raise StoreError(
                f"repository {repo!r} in {store.spec.uri} was indexed from {known.root}, not {root}: "
                f"name this one (ranklens index {root} --repo NAME), or pass --repo {repo} if it is the same repository"
            )
        options = settings.options
        options = replace(options, hidden=bool(options.hidden), no_ignore=bool(options.no_ignore))
        found = discover(root, options if isinstance(options, DiscoveryOptions) else None)
        stats.skipped = list(found.skipped)
        stored = store.files_of(repo)
        stats.seconds["discover"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        listed = {e.path for e in found.files}
        gone = sorted(set(stored) - listed)
        todo: list[tuple[object, str, list, bool]] = []  # (entry, sha, chunks, existed)
        restat: list[dict] = []
        for i, entry in enumerate(found.files):
            row = stored.get(entry.path)
            if row is not None and row["size"] == entry.size and row["mtime"] == entry.mtime_ns:
                stats.unchanged += 1
                continue
            loaded = load_text(root, entry, options.max_bytes)
            if loaded.text is None:
                stats.skipped.append((entry.path, loaded.reason))
                if row is not None:
                    gone.append(entry.path)
                continue
            sha = _sha(loaded.text)
            if row is not None and row["sha"] == sha:
                stats.unchanged += 1
                restat.append(
                    MilvusStore._row(
                        f"f\x00{repo}\x00{entry.path}", repo, "file", entry.path, sha, entry.size, entry.mtime_ns
                    )
                )
                continue
            chunks = chunk_file(
                entry.path,
                loaded.text,
                window=settings.window,
                overlap=settings.overlap,
                language=language_for(entry.path),
            )
            todo.append((entry, sha, chunks, row is not None))
            report("chunk", i + 1, len(found.files))
        stats.seconds["chunk"] = time.perf_counter() - t1
        stats.removed = len(gone)
        stats.changed = sum(1 for *_rest, existed in todo if existed)
        stats.added = len(todo) - stats.changed
        # Rows first, then chunks: see the docstring.
        dropped = gone + [e.path for e, _s, _c, existed in todo if existed]
        t2 = time.perf_counter()
        for batch in _batches(dropped, DELETE_BATCH):
            store.call(store.client.delete, store.files_name, ids=[f"f\x00{repo}\x00{p}" for p in batch])
        stale = dropped + [e.path for e, _s, _c, existed in todo if not existed]
        for batch in _batches(stale, DELETE_BATCH):
            expr = f"repo == {quote(repo)} and path in [{', '.join(quote(p) for p in batch)}]"
            store.call(store.client.delete, store.name, filter=expr)
        stats.seconds["delete"] = time.perf_counter() - t2
        chunks = [(c, e, sha) for e, sha, cs, _x in todo for c in cs]
        total = len(chunks)
        embed_s = insert_s = 0.0
        for start in range(0, total, INSERT_BATCH):
            part = [c for c, _e, _s in chunks[start : start + INSERT_BATCH]]
            t3 = time.perf_counter()
            vectors = model.encode([document_text(c) for c in part])
            embed_s += time.perf_counter() - t3
            rows = [
                {
                    "repo": repo,
                    "path": clip(c.path, MAX_PATH_BYTES),
                    "start": c.start_line,
                    "end": c.end_line,
                    "pstart": (c.piece_of or (0, 0))[0],
                    "pend": (c.piece_of or (0, 0))[1],
                    "kind": c.kind,
                    "language": c.language or "",
                    "context": clip(c.context, 8000),
                    "symbol": clip(c.symbol, 8000),
                    "lex": clip(lex_text(c)),
                    "words": clip(words_text(c)),
                    "names": clip(names_text(c)),
                    "dense": v.tolist(),
                }
                for c, v in zip(part, vectors)
            ]
            t4 = time.perf_counter()
            store.call(store.client.insert, store.name, rows)
            insert_s += time.perf_counter() - t4
            stats.embedded += len(part)
            report("write", min(start + INSERT_BATCH, total), total)
            lease.renew()
        stats.seconds["embed"] = embed_s
        stats.seconds["insert"] = insert_s
        t5 = time.perf_counter()
        rows = [
            MilvusStore._row(f"f\x00{repo}\x00{e.path}", repo, "file", e.path, sha, e.size, e.mtime_ns)
            for e, sha, _c, _x in todo
        ] + restat
        for batch in _batches(rows, INSERT_BATCH):
            store.call(store.client.upsert, store.files_name, batch)
        stats.files = len(stored) - len(set(dropped)) + len(todo)
        if dropped or todo or restat:
            store.call(store.client.flush, store.name)
            store.call(store.client.flush, store.files_name)
        stats.chunks = store.count(f"repo == {quote(repo)}")
        _update_common(store, repo, stats, [c for c, _e, _s in chunks], cold=not stored, before=before)
        info = {"root": str(root), "files": stats.files, "chunks": stats.chunks, "indexed_at": time.time()}
        store.call(
            store.client.upsert,
            store.files_name,
            [MilvusStore._row(f"repo\x00{repo}", repo, "repo", info=json.dumps(info))],
        )
        store.call(store.client.flush, store.files_name)
        stats.seconds["commit"] = time.perf_counter() - t5
    stats.seconds["total"] = time.perf_counter() - t0
    return stats


def _update_common(store: MilvusStore, repo: str, stats: RepoStats, added: list, *, cold: bool, before: int) -> None:
    """Keep the repository's common terms as the local ``fts5`` arm keeps its list: counted
    on a first build, again once its chunks changed by 1 % or more (from the store), and
    otherwise kept."""
    old = store.common([repo])
    if cold:
        common = count_common((words_text(c) for c in added), stats.chunks)
    else:
        removed = max(0, before + len(added) - stats.chunks)
        drift = (old or {}).get("drift", 0) + len(added) + removed
        if old is not None and drift < 0.01 * old["n"]:
            if not drift:
                return
            common = {**old, "drift": drift}
        else:
            rows = store._rows(store.name, f"repo == {quote(repo)}", ["words"])
            common = count_common((r["words"] for r in rows), stats.chunks)
    store.call(store.client.upsert, store.files_name, [_common_row(repo, common)])


def _batches(items: Sequence, size: int) -> Iterable[Sequence]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
