"""A team's shared index in Milvus: one collection of chunks for many repositories.

The chunks collection holds, per chunk, its repository, path, span and breadcrumb, the three
lexical arms' BM25 sparse vectors that ranklens weighs itself (:mod:`core.backends.sparse`:
their inner product with a query's vector is the local arm's score) with each one's document
length, and the model2vec vector ranklens embeds client-side with the model of
:mod:`core.text.embedding`:

- ``lex_sparse``: the ``bm25`` arm's document (text, path and symbol names in code-aware
  tokens, :func:`core.text.tokenize.code_tokens`);
- ``words_sparse``: the ``fts5`` arm's (the text's identifiers whole, as SQLite FTS5 indexes
  it); ``words`` keeps them space-joined, in order, for quoted passages (``like``);
- ``names_sparse``: the ``symbols`` arm's (a definition chunk's names three times,
  signature, docstring and path tokens; none for windows);
- ``dense``: the chunk's breadcrumb and text embedded as the local ``dense`` arm embeds it;
- ``refs``: the chunk's edges (:attr:`core.base.types.Chunk.refs`: the names it defines, each
  marked ``=``, its imports ``^`` and attributes set ``.``, then the names its code uses), space-separated; ``refs_sparse`` the same names
  as a sparse vector (each name's :func:`core.backends.sparse.term_index`, weight 1), so a
  name's chunks are one inner-product search (:meth:`MilvusStore.refs_search`), checked whole
  against ``refs`` (navigation: :class:`core.milvus_engine.StoreGraph`).

A second collection, ``<name>_files``, holds one row per indexed file (its content hash,
size and mtime: an update re-reads a file only when its stat changed and re-chunks it only
when its hash did), one row per repository (its root, counts), each repository's BM25
statistics per arm (:class:`core.backends.sparse.TermStats`: a header row and the document
frequencies in compressed parts), the collection's meta row (store format, embedding model
and dimension: a collection built otherwise is refused), and the indexers' lease rows (one
indexer per repository at a time).

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

from ..base.install_hint import pip_hint
from . import TOKEN_ENV, StoreError, StoreSpec
from .sparse import REWEIGHT_DRIFT, SCHEMES, TermStats, doc_counts, doc_length, doc_vector, reweighed, term_index

#: Bumped whenever the collection's fields or their meaning change; a collection of another
#: format is refused, never read.
STORE_FORMAT = 4  # 3: the chunks' edges (refs, refs_sparse); 4: every identifier, imports marked
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
#: The chunk fields a search returns (what a :class:`core.base.types.Hit` needs).
HIT_FIELDS = ["repo", "path", "start", "end", "pstart", "pend", "context", "symbol"]
#: The chunk fields a lookup of edges returns (what a :class:`core.graph.edges.ChunkPlace` needs).
REFS_FIELDS = ["path", "start", "end", "pstart", "pend", "language", "context", "refs"]
#: Milvus answers at most this many rows a request (a search's limit, a query's).
MAX_ROWS = 16_384
#: Statistics are stored in parts of at most this many characters (a VARCHAR's limit).
STATS_PART = 60_000


def _pymilvus():
    try:
        import pymilvus
    except ImportError:
        raise StoreError(f"Milvus support is not installed: {pip_hint('milvus')}") from None
    # Milvus Lite logs a traceback when its data folder is held by another process; the
    # store says so in one line instead. Its in-process gRPC server logs one for each call
    # it does not implement (AllocTimestamp, asked by pymilvus's partial upsert, which works).
    for name in ("milvus_lite", "pymilvus", "grpc._server"):
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


def refs_names(refs: str, limit: int = MAX_TEXT_BYTES) -> list[str]:
    """A chunk's edges as stored: its distinct names, the ones it defines (``=name``) first,
    then its imports (``^name``) and attributes set (``.name``), as many as fit in ``limit``
    UTF-8 bytes space-joined (a generated file's chunk may name thousands; the text and the
    sparse vector then hold the same ones)."""
    names = list(dict.fromkeys(refs.split()))
    names.sort(key=lambda n: "=^.".find(n[0]) % 4)  # stable: each kind in its own order
    out, used = [], 0
    for name in names:
        used += len(name.encode("utf-8", "surrogatepass")) + (1 if out else 0)
        if used > limit:
            break
        out.append(name)
    return out


def refs_vector(names: Sequence[str]) -> dict[int, float]:
    """The names as ``refs_sparse`` holds them (``{EMPTY: 1}`` for none: Milvus refuses an
    empty vector)."""
    from .sparse import EMPTY, term_index

    return {term_index(n): 1.0 for n in names} or {EMPTY: 1.0}


def words_text(chunk) -> str:
    """The text's identifiers in order (the ``fts5`` arm's terms), for quoted passages."""
    from ..text.tokenize import identifiers

    return " ".join(identifiers(chunk.text))


def as_stored(vectors):
    """Vectors as the local ``dense`` arm compares them: rounded to float16 (its stored
    precision) and made unit length again, so the inner product is its cosine, near-equal
    neighbours included."""
    import numpy as np

    v = np.asarray(vectors, dtype=np.float16).astype(np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", v, v))[:, None]
    return np.divide(v, norms, out=np.zeros_like(v), where=norms > 0)


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
        # Another collection of a folder this process already holds is not another process's.
        if spec.kind == "lite" and not any(k[:2] == ("lite", spec.uri) for k in _open_stores):
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
        from .sparse import SCHEMES

        DataType = self._pm.DataType
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
            schema.add_field("words", DataType.VARCHAR, max_length=65_535)
            schema.add_field("refs", DataType.VARCHAR, max_length=65_535)
            schema.add_field("refs_sparse", DataType.SPARSE_FLOAT_VECTOR)
            for scheme in SCHEMES.values():
                schema.add_field(f"{scheme.field}_sparse", DataType.SPARSE_FLOAT_VECTOR)
                schema.add_field(f"{scheme.field}_len", DataType.DOUBLE)
            schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dim)
            index = self.client.prepare_index_params()
            for scheme in SCHEMES.values():
                # Inner product of ranklens's own weights (core.backends.sparse), exact.
                index.add_index(f"{scheme.field}_sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
            # Exact, as the local arm scans every vector; a cluster may choose HNSW
            # (docs/scale.md). The vectors are unit length (core.text.embedding), so the inner
            # product is their cosine, without Milvus Lite normalising every row per search.
            index.add_index("dense", index_type="FLAT", metric_type="IP")
            # A name's chunks: the rows whose vector holds its index (weight 1 each).
            index.add_index("refs_sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
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

    def _stats_heads(self, repos: Sequence[str]) -> dict[str, dict]:
        rows = self.call(
            self.client.get, self.files_name, ids=[f"stats\x00{r}" for r in repos], output_fields=["repo", "info"]
        )
        out = {}
        for row in rows:
            try:
                out[row["repo"]] = json.loads(row["info"])
            except ValueError:
                continue
        return out

    def stats(self, repos: Sequence[str]) -> dict[str, tuple[dict, bool]]:
        """Each repository's BM25 statistics per arm (:class:`core.backends.sparse.TermStats`),
        and whether an indexer was changing its chunks when they were written (``dirty``: a
        pass killed midway; the next one counts them again). A repository with none is absent."""
        from .sparse import TermStats

        heads = self._stats_heads(repos)
        out: dict[str, tuple[dict, bool]] = {}
        for repo, head in heads.items():
            arms = head.get("arms", {})
            ids = [f"stats\x00{repo}\x00{arm}\x00{i}" for arm, h in arms.items() for i in range(h["parts"])]
            parts = {}
            for batch in _batches(ids, 100):
                for row in self.call(self.client.get, self.files_name, ids=list(batch), output_fields=["info"]):
                    parts[row["key"]] = row["info"]
            try:
                stats = {
                    arm: TermStats.from_blob(
                        h, "".join(parts[f"stats\x00{repo}\x00{arm}\x00{i}"] for i in range(h["parts"]))
                    )
                    for arm, h in arms.items()
                }
            except (KeyError, ValueError):
                stats, head = {}, {"dirty": True}
            out[repo] = (stats, bool(head.get("dirty")))
        return out

    def save_stats(self, repo: str, stats: dict, *, dirty: bool = False) -> None:
        """Write ``repo``'s statistics (parts first, then the header naming them)."""
        old = self._stats_heads([repo]).get(repo, {}).get("arms", {})
        head: dict = {"dirty": dirty, "arms": {}}
        rows, stale = [], []
        for arm, st in stats.items():
            blob = st.blob()
            parts = [blob[i : i + STATS_PART] for i in range(0, len(blob), STATS_PART)] or [""]
            head["arms"][arm] = {**st.header(), "parts": len(parts)}
            rows += [self._row(f"stats\x00{repo}\x00{arm}\x00{i}", repo, "stats", info=p) for i, p in enumerate(parts)]
            stale += [f"stats\x00{repo}\x00{arm}\x00{i}" for i in range(len(parts), old.get(arm, {}).get("parts", 0))]
        for batch in _batches(rows, 50):
            self.call(self.client.upsert, self.files_name, list(batch))
        self.call(
            self.client.upsert,
            self.files_name,
            [self._row(f"stats\x00{repo}", repo, "statshead", info=json.dumps(head))],
        )
        if stale:
            self.call(self.client.delete, self.files_name, ids=stale)

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

    def refs_search(self, expr: str, names: Sequence[str]) -> list[list[dict]]:
        """For each of ``names`` (``=name``: its definitions), the chunks among ``expr``'s
        whose ``refs`` hold it whole (:data:`REFS_FIELDS` and ``id``; at most
        :data:`MAX_ROWS` a name), in the order they were stored: one search of all the names'
        vectors, each row checked against its stored names (two names may share an index)."""
        from .sparse import term_index

        if not names:
            return []
        res = self.call(
            self.client.search,
            self.name,
            data=[{term_index(n): 1.0} for n in names],
            anns_field="refs_sparse",
            limit=MAX_ROWS,
            filter=expr,
            output_fields=REFS_FIELDS,
        )
        out = []
        for name, hits in zip(names, res or [[]] * len(names)):
            rows = [{**h["entity"], "id": h["id"]} for h in hits if float(h["distance"]) > 0]
            rows = [r for r in rows if f" {name} " in f" {r['refs']} "]
            out.append(sorted(rows, key=lambda r: r["id"]))
        return out

    def query(self, expr: str, limit: int, extra: Sequence[str] = ()) -> list[dict]:
        """The chunks matching ``expr`` (at most ``limit``), in the order they were stored."""
        rows = self.call(self.client.query, self.name, filter=expr, output_fields=[*HIT_FIELDS, *extra], limit=limit)
        return sorted(rows, key=lambda r: r["id"])

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
    #: Chunks weighed again (their repository's average length drifted, core.backends.sparse).
    reweighed: int = 0
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
            "reweighed": self.reweighed,
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
    from ..arms.protocol import IndexSettings
    from ..chunking import chunk_file
    from ..discovery import DiscoveryOptions, discover, load_text
    from ..index.batches import text_sha
    from ..text.languages import language_for

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
            sha = text_sha(loaded.text)
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
        stale = dropped + [e.path for e, _s, _c, existed in todo if not existed]
        chunks = [(c, e, sha) for e, sha, cs, _x in todo for c in cs]
        # The BM25 statistics follow the chunks: marked dirty before the first change (a pass
        # killed midway leaves them to be counted again), updated by the chunks removed (their
        # stored vectors) and added, written clean at the end.
        counts = [{arm: doc_counts(arm, c) for arm in SCHEMES} for c, _e, _s in chunks]
        held, dirty = store.stats([repo]).get(repo, ({}, False))
        changing = bool(stale or chunks or dirty or (before and set(held) != set(SCHEMES)))
        if changing:
            if dirty or (before and set(held) != set(SCHEMES)):
                held = _recount(store, repo, held)
            current = {arm: held.get(arm) or TermStats() for arm in SCHEMES}
            store.save_stats(repo, current, dirty=True)
            removed = _stored_vectors(store, repo, stale)
            new = {
                arm: current[arm].updated(
                    ((r[f"{s.field}_sparse"].keys(), r[f"{s.field}_len"]) for r in removed),
                    ((_indices(cs[arm]), doc_length(cs[arm])) for cs in counts),
                )
                for arm, s in SCHEMES.items()
            }
            drifted = []
            for arm, st in new.items():
                old_base = current[arm].base
                if not old_base or abs(st.avgdl / old_base - 1) > REWEIGHT_DRIFT:
                    st.base = st.avgdl
                    if old_base:
                        drifted.append((arm, old_base))
                else:
                    st.base = old_base
        for batch in _batches(dropped, DELETE_BATCH):
            store.call(store.client.delete, store.files_name, ids=[f"f\x00{repo}\x00{p}" for p in batch])
        for batch in _batches(stale, DELETE_BATCH):
            expr = f"repo == {quote(repo)} and path in [{', '.join(quote(p) for p in batch)}]"
            store.call(store.client.delete, store.name, filter=expr)
        stats.seconds["delete"] = time.perf_counter() - t2
        if changing and drifted:
            t6 = time.perf_counter()
            stats.reweighed = _reweigh(store, repo, drifted, new)
            stats.seconds["reweigh"] = time.perf_counter() - t6
        total = len(chunks)
        embed_s = insert_s = 0.0
        for start in range(0, total, INSERT_BATCH):
            part = [c for c, _e, _s in chunks[start : start + INSERT_BATCH]]
            t3 = time.perf_counter()
            vectors = as_stored(model.encode([document_text(c) for c in part]))
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
                    "words": clip(words_text(c)),
                    "refs": " ".join(names),
                    "refs_sparse": refs_vector(names),
                    **{
                        f"{scheme.field}_sparse": doc_vector(cs[arm], new[arm].base, scheme)
                        for arm, scheme in SCHEMES.items()
                    },
                    **{f"{scheme.field}_len": doc_length(cs[arm]) for arm, scheme in SCHEMES.items()},
                    "dense": v.tolist(),  # as_stored: the local arm's float16 values
                }
                for c, cs, v, names in zip(
                    part, counts[start : start + INSERT_BATCH], vectors, [refs_names(c.refs) for c in part]
                )
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
        if changing:
            store.save_stats(repo, new)
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


def _indices(counts) -> list[int]:
    return [term_index(t) for t in counts] if counts else []


def _stats_fields() -> list[str]:
    return [f"{s.field}_{x}" for s in SCHEMES.values() for x in ("sparse", "len")]


def _stored_vectors(store: MilvusStore, repo: str, paths: Sequence[str]) -> list[dict]:
    """The stored sparse vectors and lengths of ``repo``'s chunks of ``paths``."""
    out: list[dict] = []
    for batch in _batches(paths, DELETE_BATCH):
        expr = f"repo == {quote(repo)} and path in [{', '.join(quote(p) for p in batch)}]"
        out += store._rows(store.name, expr, _stats_fields())
    return out


def _recount(store: MilvusStore, repo: str, found: dict) -> dict:
    """``repo``'s statistics counted again from its stored chunks (their bases kept)."""
    rows = store._rows(store.name, f"repo == {quote(repo)}", _stats_fields())
    out = {}
    for arm, s in SCHEMES.items():
        st = TermStats().updated((), ((r[f"{s.field}_sparse"].keys(), r[f"{s.field}_len"]) for r in rows))
        st.base = found[arm].base if arm in found else 0.0
        out[arm] = st
    return out


def _reweigh(store: MilvusStore, repo: str, drifted: list[tuple[str, float]], new: dict) -> int:
    """Weigh ``repo``'s stored chunks again for each drifted arm (``(arm, old base)``) with
    its new base average length; returns the chunks rewritten."""
    fields = [f"{SCHEMES[arm].field}_{x}" for arm, _b in drifted for x in ("sparse", "len")]
    rows = store._rows(store.name, f"repo == {quote(repo)}", ["id", *fields])
    for batch in _batches(rows, INSERT_BATCH):
        out = []
        for r in batch:
            row = {"id": r["id"]}
            for arm, old in drifted:
                s = SCHEMES[arm]
                row[f"{s.field}_sparse"] = reweighed(r[f"{s.field}_sparse"], r[f"{s.field}_len"], old, new[arm].base, s)
            out.append(row)
        store.call(store.client.upsert, store.name, out, partial_update=True)
    return len(rows)


def _batches(items: Sequence, size: int) -> Iterable[Sequence]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
