"""Where an index lives on disk and how a committed generation is opened for querying.

Layout, one folder per root under the platformdirs user cache dir::

    <cache>/<name>-<hash of the root's real path>/
        index.lock          cross-process lock held by the indexer
        index.sqlite        files, chunks (their text zlib-compressed: pack_text), the FTS5
                            table (contentless), vocab, meta (format, generation)
        seg-000012/         a segment: a run of chunks (ids ascending), their chunk table and each
                            arm's part (BM25 postings, dense vectors); immutable (core.storage.segments)
        gen-000007/         generation 7: its segments in order (segments.json), the chunk ids
                            tombstoned among them (dead.npy), the statistics spanning segments
                            (BM25 document frequencies) and per-generation arm files
        gen-000007.deep/    the deep arm's vectors for generation 7, committed after it (a sidecar)

The indexer writes a new segment and a new ``gen-N`` folder under temporary names (each arm
its part of them, :mod:`core.arms`), hard-links the files of a folder with identical contents
(stored once, :func:`core.base.atomic.link_identical`: the BM25 arms' chunk ids, ``bm25.*`` and
``lexical+ctx.*`` when their documents agree), fsyncs their files, renames them into place,
and only then commits ``generation = N`` in SQLite. That commit is the single switch-over
point: a crash before it leaves the previous generation intact and whole. A committed
generation's folder, and a segment once written, are never written again (nor any of their
files in place: two names may share one file); a segment goes when no kept generation lists
it.

An arm whose files take minutes (``deep``) writes them after the generation commits, as a
*sidecar* ``gen-N.<arm>`` folder: written under a temporary name, fsynced, renamed into place
(that rename is its commit) while generation N is still the committed one. A reader uses the
sidecar of the generation it opened, if it exists; the indexer drops sidecars with their
generation.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..base._sqlite import sqlite3

if TYPE_CHECKING:  # numpy and the chunk table load with the first view's chunks, not with
    # this module: `ranklens why` and a nothing-changed check open the database only
    import numpy as np

    from .chunktable import ChunkRows

#: Bumped whenever the on-disk layout or the meaning of a stored artifact changes; a cache of
#: another version is rebuilt, never read. 2: path and symbol tokens in the bm25 documents.
#: 3: size-budgeted chunks, pieces of a long definition (``piece_start``/``piece_end``).
#: 4: dense vectors embed each chunk's breadcrumb before its text.
#: 5: the lexical vocabulary lives in the ``vocab`` table, not in each generation's JSON.
#: 6: BM25 matrices store term-major frequencies and statistics, no precomputed impacts.
#: 7: the dense int8 companion is a row-aligned ``.npy`` matrix on one scale (scanned by int8
#:    dot product), not a usearch index.
#: 8: the chunk table carries each chunk's defined names (the ranking stage's definition signal).
#: 9: a chunk packing definitions that share a scope keeps it in its breadcrumb.
#: 10: C#, Kotlin, Scala, Swift, PHP, Haskell, Elixir, Lua, Zig and shell files are cut along
#:    their definitions (they were windows).
#: 11: each arm writes its part of a generation (``lexical+ctx`` its matrix, built on first open
#:    before), the generation's files are fsynced before it commits, the meta names the arms.
#: 12: the deep arm's vectors live in a sidecar folder ``gen-N.deep``, not in ``gen-N``.
#: 13: segments (``seg-N``: chunk table, BM25 postings, vectors) listed by each generation
#:    with its tombstones and BM25 statistics, instead of whole arrays per generation.
#: 14: a segment's chunk table is a memory-mapped file a column (``core.storage.chunktable``);
#:    contentless FTS5, chunk text zlib-compressed (``pack_text``), a folder's identical files linked,
#:    no signature or docstring columns in the chunks table (only the matrices read them).
#: 15: a unit with no name or code of its own (a lone ``}``, ``package main``) is folded into
#:    its neighbour (``core.chunking.budget.fold_trivial``).
#: 16: each chunk says whether it only declares (``Chunk.declaration``): a ``declaration``
#:    column of the chunks table, ``chunks.decls.npy`` in each segment's chunk table.
#: 17: chunks carry the names their code spells, defines (``=``), imports (``^``) and sets
#:    (``.``), and each segment an inverted index of them (``refs.*.npy``: core.graph.uses),
#:    the navigation edges.
#: 18: a line whose first word is an import keyword used as a package (testify's
#:    ``require.NoError(...)``) is code: its names are uses, not imports (``refs.IMPORT_LINE``).
FORMAT_VERSION = 18

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL, language TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL, kind TEXT NOT NULL, language TEXT NOT NULL,
    context TEXT NOT NULL, symbol TEXT NOT NULL, text BLOB NOT NULL,
    piece_start INTEGER NOT NULL DEFAULT 0, piece_end INTEGER NOT NULL DEFAULT 0,
    declaration INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
-- Listed files that could not be indexed when last read (binary, a private key, credentials
-- only, ...), with their stat: read again only when it changes.
CREATE TABLE IF NOT EXISTS unread (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, reason TEXT NOT NULL,
    redacted TEXT NOT NULL DEFAULT ''
);
-- Token -> column of the lexical matrices; it only grows (core.storage.terms.Vocabulary). Looked up
-- by token only: one b-tree keyed by the token (a rowid table and a unique index on the token
-- took twice the room, ~250 MB for the 4.2M tokens of the Linux sources). Columns run
-- 0..n-1; n is the meta's vocab_size.
CREATE TABLE IF NOT EXISTS vocab (token TEXT PRIMARY KEY, col INTEGER NOT NULL) WITHOUT ROWID;
"""
# The arms add their own tables (core.arms.fts5: the FTS5 index over the chunks' text).
# ``chunks.text`` is the chunk's UTF-8 text compressed by pack_text (read it with unpack_text).

#: zlib level of the stored chunk text. On the Linux sources' 1.11 GB of chunk text, level 1
#: keeps 0.41 of it at ~62 MB/s, level 6 0.39 at ~52 MB/s (per chunk, as stored; 1,500 driver
#: files: 0.392 at 60 MB/s, 0.377 at 50 MB/s): the cheaper one, the cold build being short of
#: CPU. The chunking workers compress (:func:`core.index.batches._chunk_batch`: ~7 % of their CPU,
#: ~18 CPU-seconds on the kernel); reading back runs at ~190 MB/s.
TEXT_LEVEL = 1


def pack_text(text: str) -> bytes:
    """A chunk's text as stored in ``chunks.text``: UTF-8, zlib-compressed."""
    return zlib.compress(text.encode("utf-8", "surrogatepass"), TEXT_LEVEL)


def unpack_text(blob: bytes) -> str:
    """The text :func:`pack_text` stored."""
    return zlib.decompress(blob).decode("utf-8", "surrogatepass")


class Partial(NamedTuple):
    """A generation committed while the pass writing it goes on (a first build, a large change:
    :data:`core.storage.segments.FIRST_SEGMENT_CHUNKS`): it holds ``files`` of the ``total`` files that
    pass will hold, in their current version. The indexer records it in the meta with the
    generation (``partial``; empty once the pass's last generation commits), so every reader,
    in this process or another, knows an answer from it is partial."""

    files: int
    total: int

    def describe(self) -> str:
        """``from 1,200 of 4,902 files``: what an answer from this generation says."""
        return f"from {self.files:,} of {self.total:,} files"

    def to_dict(self) -> dict[str, int]:
        """The ``partial`` field of an answer (the handoff schema's)."""
        return {"files": self.files, "total": self.total}

    def to_meta(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_meta(cls, meta: dict[str, str]) -> Partial | None:
        """The meta's ``partial``, or None when the committed generation is a whole pass's."""
        try:
            data = json.loads(meta.get("partial") or "null")
            return cls(int(data["files"]), int(data["total"])) if data else None
        except (ValueError, KeyError, TypeError):
            return None


class IndexError_(Exception):
    """The index cannot be used as it is (missing, corrupt or of another format)."""


class IndexWriteError(OSError):
    """An index update could not write its files (disk full, a file-size limit, a read-only or
    vanished cache folder): nothing of it was committed, the previous generation still serves.
    One line, shown to the user."""


def cache_root() -> Path:
    """The folder holding every root's index (``RANKLENS_CACHE_DIR`` overrides it)."""
    env = os.environ.get("RANKLENS_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("ranklens", appauthor=False))


#: The root's settings in its index folder: weights, k, ``deep``, ``store`` (core.query.config).
CONFIG_FILE = "config.json"


def index_dir(root: Path, cache_dir: Path | None = None) -> Path:
    """The index folder of ``root``: readable name plus a hash of its real path."""
    real = Path(os.path.realpath(root))
    digest = hashlib.sha256(str(real).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", real.name or "root")[:40]
    return (cache_dir or cache_root()) / f"{name}-{digest}"


def gen_dir_name(generation: int) -> str:
    return f"gen-{generation:06d}"


def sidecar_dir_name(generation: int, arm: str) -> str:
    """The folder of ``arm``'s files committed on their own after ``generation`` (see above)."""
    return f"{gen_dir_name(generation)}.{arm}"


#: Held around every open and close of a connection to an index database in this process
#: (issue #19). SQLite 3.51.0-3.51.1's unix VFS takes its global mutex and a file's mutex in
#: opposite orders when one thread opens a database while another closes a WAL connection to
#: the same file: both wait forever, and no busy timeout applies. An open or a close takes
#: ~0.1 ms, so serializing them costs nothing a query sees, and no binding's luck is relied
#: on. Re-entrant: a connection collected (closed) by the garbage collector inside the
#: section, on the same thread, must not wait on itself. Queries themselves run outside it.
CONNECTION_LOCK = threading.RLock()


def connect(db_path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open the index database (WAL, so readers never block on the indexer).

    The one way to open a connection to an index: under :data:`CONNECTION_LOCK`. Close it
    with :func:`close` (same lock), never by dropping it: a connection the garbage collector
    closes does so on whatever thread happens to drop it, outside the lock.
    """
    with CONNECTION_LOCK:
        if readonly:
            conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout=10000")
        else:
            conn = sqlite3.connect(db_path, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA busy_timeout=10000")  # before WAL: another process may hold a lock
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def close(conn: sqlite3.Connection | None) -> None:
    """Close a connection :func:`connect` opened, under :data:`CONNECTION_LOCK` (the last
    connection to a WAL database checkpoints it and takes the file's exclusive lock here)."""
    if conn is not None:
        with CONNECTION_LOCK:
            conn.close()


class _ThreadConnection:
    """A view's read connection for one thread, closed (under the lock) when that thread ends
    or the view goes, whichever is first: the view's ``threading.local`` drops it then."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __del__(self) -> None:
        try:  # noqa: SIM105 (no module lookups beyond close: at exit modules are torn down)
            close(self.conn)
        except Exception:
            pass


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


class IndexView:
    """One committed generation of an index, opened read-only for querying.

    The arms share it across threads: matrices and the vector index are read-only; SQLite
    connections are per thread (:meth:`connection`), each kept for the thread's life or the
    view's and closed through :func:`close`. The chunk table (every segment's, concatenated) is read on
    first use: ``ranklens index`` opens the new generation without reading it.
    """

    def __init__(self, root: Path, directory: Path, generation: int, meta: dict[str, str], manifest) -> None:
        self.root = root
        self.directory = directory
        self.generation = generation
        self.meta = meta
        self.manifest = manifest  # core.storage.segments.Manifest
        try:  # which database file this view read: a rebuild may replace it
            self.db_inode = os.stat(self.db_path).st_ino
        except OSError:
            self.db_inode = None
        self._local = threading.local()
        self._cache: dict[str, object] = {}
        self._lock = threading.RLock()  # loads nest

    @property
    def db_path(self) -> Path:
        return self.directory / "index.sqlite"

    @property
    def gen_dir(self) -> Path:
        return self.directory / gen_dir_name(self.generation)

    @property
    def segment_dirs(self) -> list[Path]:
        """The generation's segment folders, in row order."""
        return [self.directory / s.name for s in self.manifest.segments]

    @property
    def chunks(self) -> ChunkRows:
        """The live chunks of every segment, in order (ids ascending): the rows every arm answers
        with. Each segment's table is memory-mapped, and none is copied."""
        return self.cached("chunks", self._load_chunks)

    def _load_chunks(self) -> ChunkRows:
        from .chunktable import ChunkRows, ChunkTable

        return ChunkRows(
            [ChunkTable.load_dir(folder) for folder in self.segment_dirs],
            [self.manifest.dead_in(seg) for seg in self.manifest.segments],
        )

    def segment_rows(self, i: int) -> np.ndarray:
        """Segment ``i``'s rows (its chunk table's) as rows of :attr:`chunks`; -1 for a
        tombstoned chunk."""
        return self.cached(f"rows:{i}", lambda: self.chunks.segment_rows(i))

    def sidecar_dir(self, arm: str) -> Path:
        """Where ``arm``'s sidecar of this generation is, once committed (it may not be)."""
        return self.directory / sidecar_dir_name(self.generation, arm)

    @property
    def settings(self) -> dict:
        return json.loads(self.meta.get("settings", "{}"))

    @property
    def partial(self) -> Partial | None:
        """How much of its pass this generation holds, when the pass was still going on as it
        committed (:class:`Partial`); None for a whole pass's."""
        return Partial.from_meta(self.meta)

    def connection(self) -> sqlite3.Connection:
        """This thread's read-only connection to the index database, opened on first use and
        closed under :data:`CONNECTION_LOCK` when the thread ends or the view goes."""
        held = getattr(self._local, "conn", None)
        if held is None:
            held = self._local.conn = _ThreadConnection(connect(self.db_path, readonly=True))
        return held.conn

    def cached(self, key: str, load):
        """Load an artifact once per view, even when several arm threads ask at once."""
        with self._lock:
            if key not in self._cache:
                try:
                    self._cache[key] = load()
                except FileNotFoundError as exc:
                    if not self.directory.is_dir():
                        raise IndexError_(f"the index folder {self.directory} was deleted") from None
                    raise IndexError_(f"index files are missing ({exc.filename})") from None
            return self._cache[key]

    def vocabulary(self):
        from .bm25 import StoredVocabulary

        return self.cached("vocab", lambda: StoredVocabulary(self.connection))

    def matrix(self, name: str):
        from .bm25 import BM25Matrix

        return self.cached(
            f"matrix:{name}", lambda: BM25Matrix.load(self.gen_dir, self.segment_dirs, name, self.vocabulary())
        )

    @classmethod
    def open(cls, root: Path, directory: Path) -> IndexView:
        """Open the committed generation, or raise :class:`IndexError_` saying why not."""
        from .segments import Manifest

        db = directory / "index.sqlite"
        if not directory.is_dir():
            raise IndexError_("no index yet")
        if not db.exists():
            raise IndexError_("no index yet")
        try:
            conn = connect(db, readonly=True)
            try:
                meta = read_meta(conn)
            finally:
                close(conn)
            if meta.get("format") != str(FORMAT_VERSION):
                raise IndexError_(f"index format {meta.get('format', '?')} is not {FORMAT_VERSION}")
            generation = int(meta.get("generation", "0"))
            if generation <= 0:
                raise IndexError_("index was never completed")
            gen_dir = directory / gen_dir_name(generation)
            if not gen_dir.is_dir():
                raise IndexError_(f"index generation {generation} is missing")
            manifest = Manifest.load(gen_dir)
            missing = [s.name for s in manifest.segments if not (directory / s.name).is_dir()]
            if missing:
                raise IndexError_(f"index segment {missing[0]} is missing")
        except sqlite3.DatabaseError as exc:
            raise IndexError_(f"index database is unreadable ({exc})") from None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise IndexError_(f"index files are unreadable ({exc})") from None
        return cls(root=root, directory=directory, generation=generation, meta=meta, manifest=manifest)
