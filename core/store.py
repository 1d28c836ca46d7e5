"""Where an index lives on disk and how a committed generation is opened for querying.

Layout, one folder per root under the platformdirs user cache dir::

    <cache>/<name>-<hash of the root's real path>/
        index.lock          cross-process lock held by the indexer
        index.sqlite        files, chunks (their text zlib-compressed: pack_text), the FTS5
                            table (contentless), vocab, meta (format, generation)
        seg-000012/         a segment: a run of chunks (ids ascending), their chunk table and each
                            arm's part (BM25 postings, dense vectors); immutable (core.segments)
        gen-000007/         generation 7: its segments in order (segments.json), the chunk ids
                            tombstoned among them (dead.npy), the statistics spanning segments
                            (BM25 document frequencies) and per-generation arm files
        gen-000007.deep/    the deep arm's vectors for generation 7, committed after it (a sidecar)

The indexer writes a new segment and a new ``gen-N`` folder under temporary names (each arm
its part of them, :mod:`core.arms`), hard-links the files of a folder with identical contents
(stored once, :func:`core.atomic.link_identical`: the BM25 arms' chunk ids, ``bm25.*`` and
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
from fnmatch import fnmatchcase
from pathlib import Path

import numpy as np

from ._sqlite import sqlite3
from .types import Hit, make_docid

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
#: 14: contentless FTS5, chunk text zlib-compressed (``pack_text``), a folder's identical files linked.
FORMAT_VERSION = 14

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL, language TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL, kind TEXT NOT NULL, language TEXT NOT NULL,
    context TEXT NOT NULL, symbol TEXT NOT NULL, signature TEXT NOT NULL,
    docstring TEXT NOT NULL, text BLOB NOT NULL,
    piece_start INTEGER NOT NULL DEFAULT 0, piece_end INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
-- Listed files that could not be indexed when last read (binary, a private key, credentials
-- only, ...), with their stat: read again only when it changes.
CREATE TABLE IF NOT EXISTS unread (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, reason TEXT NOT NULL,
    redacted TEXT NOT NULL DEFAULT ''
);
-- Token -> column of the lexical matrices; it only grows (core.bm25.Vocabulary). Looked up
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
#: CPU. The chunking workers compress (:func:`core.indexer._chunk_batch`: ~7 % of their CPU,
#: ~18 CPU-seconds on the kernel); reading back runs at ~190 MB/s.
TEXT_LEVEL = 1


def pack_text(text: str) -> bytes:
    """A chunk's text as stored in ``chunks.text``: UTF-8, zlib-compressed."""
    return zlib.compress(text.encode("utf-8", "surrogatepass"), TEXT_LEVEL)


def unpack_text(blob: bytes) -> str:
    """The text :func:`pack_text` stored."""
    return zlib.decompress(blob).decode("utf-8", "surrogatepass")


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


def connect(db_path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open the index database (WAL, so readers never block on the indexer)."""
    if readonly:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, check_same_thread=False)
    else:
        conn = sqlite3.connect(db_path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=10000")
    return conn


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


class Recent:
    """The last few values this process stored under a key (thread-safe, oldest dropped first):
    what it last saved or read, so the next reader of the same state need not read it again."""

    def __init__(self, size: int) -> None:
        self._items: dict[object, object] = {}
        self._lock = threading.Lock()
        self._size = size

    def get(self, key):
        with self._lock:
            return self._items.get(key) if key is not None else None

    def put(self, key, value) -> None:
        if key is None:
            return
        with self._lock:
            self._items.pop(key, None)
            self._items[key] = value
            while len(self._items) > self._size:
                del self._items[next(iter(self._items))]


def file_identity(path: Path) -> tuple | None:
    """(device, inode, size, mtime) of a file, None if it is gone: a generation folder is
    written under a temporary name and renamed, which keeps it, and a rewrite changes it."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


_recent_tables = Recent(96)  # segments' chunk tables, by file identity (a view holds them all anyway)


class ChunkTable:
    """Columnar, in-memory metadata of every chunk (no text), ordered by chunk id.

    Saved in each generation folder (``chunks.npz``), so a warm start reads a few arrays
    instead of every row of the chunks table.
    """

    FILE = "chunks.npz"

    def __init__(
        self,
        ids: np.ndarray,
        paths: list[str],
        starts: np.ndarray,
        ends: np.ndarray,
        contexts: list[str],
        languages: list[str],
        kinds: list[str],
        pieces: np.ndarray | None = None,
        symbols: list[str] | None = None,
    ) -> None:
        self.ids = np.asarray(ids, dtype=np.int64)
        # (start, end) of the definition each chunk is a piece of; (0, 0) for whole chunks.
        self.pieces = (
            np.zeros((len(self.ids), 2), dtype=np.int64)
            if pieces is None
            else np.asarray(pieces, dtype=np.int64).reshape(-1, 2)
        )
        self.paths = paths
        self.starts = np.asarray(starts, dtype=np.int64)
        self.ends = np.asarray(ends, dtype=np.int64)
        self.contexts = contexts
        self.languages = languages
        self.kinds = kinds
        # The names each chunk defines, space-separated (``Chunk.symbol``): the ranking stage's
        # definition signal reads them (core.ranking).
        self.symbols = symbols if symbols is not None else [""] * len(self.ids)
        self._masks: dict[tuple[str | None, str | None], np.ndarray] = {}
        self._definers: tuple[dict[str, list[int]], dict[str, list[int]]] | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_rows(cls, rows: list[tuple]) -> ChunkTable:
        """From ``(id, path, start, end, context, language, kind, piece_start, piece_end, symbol)``
        rows sorted by id."""
        cols = list(zip(*rows)) if rows else [[]] * 10
        return cls(
            np.array(cols[0], dtype=np.int64),
            list(cols[1]),
            np.array(cols[2], dtype=np.int64),
            np.array(cols[3], dtype=np.int64),
            list(cols[4]),
            list(cols[5]),
            list(cols[6]),
            np.array([cols[7], cols[8]], dtype=np.int64).T,
            list(cols[9]),
        )

    @classmethod
    def load(cls, conn: sqlite3.Connection) -> ChunkTable:
        return cls.from_rows(
            conn.execute(
                "SELECT id, path, start_line, end_line, context, language, kind, piece_start, piece_end, symbol"
                " FROM chunks ORDER BY id"
            ).fetchall()
        )

    @classmethod
    def of_chunks(cls, ids, chunks: list) -> ChunkTable:
        """The table of ``chunks`` under ``ids`` (ascending)."""
        return cls(
            np.asarray(ids, dtype=np.int64),
            [c.path for c in chunks],
            np.array([c.start_line for c in chunks], dtype=np.int64),
            np.array([c.end_line for c in chunks], dtype=np.int64),
            [c.context for c in chunks],
            [c.language for c in chunks],
            [c.kind for c in chunks],
            _pieces(chunks),
            [c.symbol for c in chunks],
        )

    @classmethod
    def concat(cls, tables: list[ChunkTable]) -> ChunkTable:
        """The rows of ``tables`` one after the other (ids ascending across them)."""
        if len(tables) == 1:
            return tables[0]

        def joined(name: str) -> list:
            out: list = []
            for t in tables:
                out.extend(getattr(t, name))
            return out

        def stacked(name: str) -> np.ndarray:
            return np.concatenate([getattr(t, name) for t in tables]) if tables else np.empty(0, dtype=np.int64)

        return cls(
            stacked("ids"),
            joined("paths"),
            stacked("starts"),
            stacked("ends"),
            joined("contexts"),
            joined("languages"),
            joined("kinds"),
            np.concatenate([t.pieces for t in tables]) if tables else None,
            joined("symbols"),
        )

    def kept(self, keep: np.ndarray) -> ChunkTable:
        """Only the rows where ``keep`` is true."""
        rows = np.flatnonzero(keep).tolist()

        def pick(values: list[str]) -> list[str]:
            return [values[r] for r in rows]

        return ChunkTable(
            self.ids[keep],
            pick(self.paths),
            self.starts[keep],
            self.ends[keep],
            pick(self.contexts),
            pick(self.languages),
            pick(self.kinds),
            self.pieces[keep],
            pick(self.symbols),
        )

    def save(self, directory: Path) -> None:
        # Repeated strings (paths, languages, kinds) are stored once plus an index per row.
        arrays = {"ids": self.ids, "starts": self.starts, "ends": self.ends, "pieces": self.pieces}
        texts = {}
        for name in ("paths", "languages", "kinds"):
            values = getattr(self, name)
            uniq = list(dict.fromkeys(values))
            pos = {v: i for i, v in enumerate(uniq)}
            arrays[name] = np.fromiter(map(pos.__getitem__, values), dtype=np.int32, count=len(values))
            texts[name] = uniq
        texts["contexts"] = self.contexts
        texts["symbols"] = self.symbols
        path = directory / self.FILE
        np.savez(path, **arrays, texts=np.frombuffer(json.dumps(texts).encode(), dtype=np.uint8))
        _recent_tables.put(file_identity(path), self)

    @classmethod
    def load_dir(cls, directory: Path) -> ChunkTable:
        """The table saved in ``directory``; the same instance when this process saved or
        loaded that very file last (an index update, then the engine reopening the new
        generation, would each read ~0.08 s of it at 50k chunks). Tables are never mutated."""
        path = directory / cls.FILE
        identity = file_identity(path)
        found = _recent_tables.get(identity)
        if found is not None:
            return found
        with np.load(path) as z:
            texts = json.loads(z["texts"].tobytes())
            cols = {name: [texts[name][i] for i in z[name].tolist()] for name in ("paths", "languages", "kinds")}
            table = cls(
                z["ids"],
                cols["paths"],
                z["starts"],
                z["ends"],
                texts["contexts"],
                cols["languages"],
                cols["kinds"],
                z["pieces"],
                texts["symbols"],
            )
        _recent_tables.put(identity, table)
        return table

    def __len__(self) -> int:
        return len(self.ids)

    def rows_for(self, keys: np.ndarray) -> np.ndarray:
        """Row of each chunk id, -1 where the id is unknown (e.g. newer than this view)."""
        keys = np.asarray(keys, dtype=np.int64)
        if len(self.ids) == 0:
            return np.full(len(keys), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.ids, keys), len(self.ids) - 1)
        return np.where(self.ids[pos] == keys, pos, -1)

    def hits(self, arm: str, rows, scores) -> list[Hit]:
        """One arm's ranking: chunk row ``rows[i]`` ranked ``i + 1`` with ``scores[i]``.

        Each column is read once for all rows (~1 µs a hit; reading numpy scalars row by row
        cost ~4)."""
        rows = np.asarray(rows, dtype=np.int64)
        paths, contexts, symbols = self.paths, self.contexts, self.symbols
        out = []
        for rank, (row, start, end, (piece_start, piece_end), score) in enumerate(
            zip(
                rows.tolist(),
                self.starts[rows].tolist(),
                self.ends[rows].tolist(),
                self.pieces[rows].tolist(),
                np.asarray(scores, dtype=np.float64).tolist(),
            ),
            start=1,
        ):
            path = paths[row]
            out.append(
                Hit(
                    arm,
                    make_docid(path, start, end),
                    path,
                    start,
                    end,
                    rank,
                    score,
                    contexts[row],
                    None,
                    (piece_start, piece_end) if piece_start else None,
                    symbols[row],
                )
            )
        return out

    def definers(self, name: str, *, any_case: bool = False) -> list[int]:
        """The rows of the chunks that define ``name`` (as written in a ``symbol`` field, or
        its last part after ``.``/``::`` …: :func:`core.ranking.defined_names`), in any case
        with ``any_case``.

        The name -> rows maps are built on the first call (~30 ms at 50k chunks) and kept
        with the table, which is never mutated."""
        with self._lock:
            if self._definers is None:
                from .ranking import defined_names

                exact: dict[str, list[int]] = {}
                folded: dict[str, list[int]] = {}
                for row, field in enumerate(self.symbols):
                    if field:
                        for defined in defined_names((field,)):
                            exact.setdefault(defined, []).append(row)
                            folded.setdefault(defined.lower(), []).append(row)
                self._definers = (exact, folded)
            exact, folded = self._definers
            return folded.get(name.lower(), []) if any_case else exact.get(name, [])

    def mask(self, path_glob: str | None = None, language: str | None = None) -> np.ndarray | None:
        """Boolean row mask for the filters (``None`` when there is no filter).

        ``path_glob`` is fnmatch-style against the relative path (``*`` crosses ``/``);
        ``language`` compares case-insensitively.
        """
        if not path_glob and not language:
            return None
        key = (path_glob or None, language.lower() if language else None)
        with self._lock:
            cached = self._masks.get(key)
        if cached is not None:
            return cached
        by_path: dict[str, bool] = {}
        out = np.zeros(len(self.ids), dtype=bool)
        for row, path in enumerate(self.paths):
            ok = by_path.get(path)
            if ok is None:
                ok = by_path[path] = not path_glob or fnmatchcase(path, path_glob)
            out[row] = ok and (key[1] is None or self.languages[row] == key[1])
        with self._lock:
            self._masks[key] = out
        return out


def _pieces(chunks: list) -> np.ndarray:
    return np.array([c.piece_of or (0, 0) for c in chunks], dtype=np.int64).reshape(-1, 2)


class IndexView:
    """One committed generation of an index, opened read-only for querying.

    The arms share it across threads: matrices and the vector index are read-only; SQLite
    connections are per thread. The chunk table (every segment's, concatenated) is read on
    first use: ``ranklens index`` opens the new generation without reading it.
    """

    def __init__(self, root: Path, directory: Path, generation: int, meta: dict[str, str], manifest) -> None:
        self.root = root
        self.directory = directory
        self.generation = generation
        self.meta = meta
        self.manifest = manifest  # core.segments.Manifest
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
    def chunks(self) -> ChunkTable:
        """The live chunks of every segment, in order (ids ascending): the rows every arm answers
        with."""
        return self.cached("chunks", self._load_chunks)

    def _load_chunks(self) -> ChunkTable:
        # Tombstones are dropped segment by segment: only the segments holding some are copied
        # (on the Linux sources, filtering the joined 1.1M rows took 0.24 s of a query's start).
        tables = []
        for seg, folder in zip(self.manifest.segments, self.segment_dirs):
            table = ChunkTable.load_dir(folder)
            dead = self.manifest.dead_in(seg)
            tables.append(table.kept(~np.isin(table.ids, dead)) if len(dead) else table)
        return ChunkTable.concat(tables)

    def segment_rows(self, i: int) -> np.ndarray:
        """Segment ``i``'s rows (its chunk table's) as rows of :attr:`chunks`; -1 for a
        tombstoned chunk."""
        return self.cached(f"rows:{i}", lambda: self._segment_rows()[i])

    def _segment_rows(self) -> list[np.ndarray]:
        out, start = [], 0
        for seg in self.manifest.segments:
            dead = self.manifest.dead_in(seg)
            if not len(dead):
                out.append(np.arange(start, start + seg.rows, dtype=np.int64))
                start += seg.rows
                continue
            live = ~np.isin(ChunkTable.load_dir(self.directory / seg.name).ids, dead)
            rows = np.cumsum(live) - 1 + start
            out.append(np.where(live, rows, -1))
            start += int(live.sum())
        return out

    def sidecar_dir(self, arm: str) -> Path:
        """Where ``arm``'s sidecar of this generation is, once committed (it may not be)."""
        return self.directory / sidecar_dir_name(self.generation, arm)

    @property
    def settings(self) -> dict:
        return json.loads(self.meta.get("settings", "{}"))

    def connection(self) -> sqlite3.Connection:
        """This thread's read-only connection to the index database."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = connect(self.db_path, readonly=True)
        return conn

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
                conn.close()
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
