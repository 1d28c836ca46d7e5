"""Static text embeddings for the dense arm.

The default model is bundled in ``core/models/ranklens-code``: ranklens's own code-search
model, a static (model2vec) token table, 256-d, float16, distilled from all-MiniLM-L6-v2 and
trained on (description, code) pairs from public repositories, with a tokenizer that reads
an identifier as its words (see its MODEL_CARD.md and ``scripts/build_model.py``), so the
engine embeds text with no torch and no network. ``load_model(spec)`` also accepts a directory
holding another model2vec model, or a Hugging Face hub id (which only works where the hub, or a
populated local hub cache, is reachable).

model2vec is imported lazily inside :func:`load_model`: importing this module is cheap.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import re
import struct
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from model2vec import StaticModel

__all__ = ["DEFAULT_MODEL_DIR", "EmbeddingModel", "ModelUnavailable", "load_model"]

DEFAULT_MODEL_DIR: Path = Path(__file__).resolve().parents[1] / "models" / "ranklens-code"
_BUNDLED_LABEL = "bundled:ranklens-code"

#: A Hugging Face repo id: ``name`` or ``owner/name`` made of word characters, ``.`` and ``-``.
_HUB_ID = re.compile(r"^[A-Za-z0-9_][\w.-]*(/[\w.-]+)?$")
#: Weight files of the layouts model2vec can load, in the order it tries them.
_WEIGHT_FILES = ("model.safetensors", "0_StaticEmbedding/model.safetensors")


class ModelUnavailable(Exception):
    """One-line reason a model could not load."""


class EmbeddingModel:
    """A loaded static embedding model.

    ``name`` identifies the exact weights, for stamping caches: ``bundled:ranklens-code@<sha>``
    for the bundled model, ``<resolved dir>@<sha>`` for a local directory and ``hub:<id>@<sha>``
    for a hub id, where ``<sha>`` is the first 12 hex digits of the SHA-256 of the weight file
    followed by its ``tokenizer.json``.
    """

    def __init__(self, model: StaticModel, name: str, path: Path | None = None) -> None:
        self._model = model
        self.name: str = name
        self.path: Path | None = path
        self.dim: int = int(model.dim)
        # Mean pooling as one sparse product (token counts x float32 table) instead of
        # model2vec's per-length float16 gathers: same vectors, ~2x faster encoding. Models
        # loaded from disk by _PlainStatic bring their table with any per-token weights and
        # token mapping already applied; anything else uses model2vec's own path.
        self._table: _Table | None = getattr(model, "table", None)
        if (
            self._table is None
            and getattr(model, "token_mapping", None) is None
            and getattr(model, "weights", None) is None
        ):
            self._table = _Table(model.embedding)
        self._words: _WordTokens | None = _WordTokens.of(model.tokenizer) if self._table is not None else None

    def __repr__(self) -> str:
        return f"EmbeddingModel(name={self.name!r}, dim={self.dim})"

    def encode(self, texts: Sequence[str], batch_size: int = 1024) -> np.ndarray:
        """float32, L2-normalised rows, shape (n, dim); empty input -> (0, dim).

        A text with no known token (e.g. empty) yields an all-zero row.
        """
        if isinstance(texts, str):
            texts = [texts]
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._table is not None:
            return self._encode_sparse(texts)
        out = self._model.encode(
            texts,
            batch_size=max(1, int(batch_size)),
            show_progress_bar=False,
            use_multiprocessing=False,
            normalize=False,
        )
        # float16 numpy arithmetic is very slow: normalise in float32.
        vecs = np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        np.divide(vecs, norms, out=vecs, where=norms > 0)
        return vecs

    def forget_words(self) -> None:
        """Drop the word cache (an index pass's vocabulary; a query's words come back as
        needed), so a long-lived process does not keep a large tree's words after indexing it."""
        if self._words is not None:
            self._words.cache = {}

    def _encode_sparse(self, texts: list[str]) -> np.ndarray:
        model = self._model
        max_length = model.max_length
        # model2vec's own character cap before tokenizing; it is at least max_length (no token
        # is shorter than a character), so short texts such as queries never need it computed.
        if max_length is not None and any(len(t) > max_length for t in texts):
            cap = max_length * model.median_token_length
            texts = [t[:cap] for t in texts]
        ids = self._words.ids(texts) if self._words is not None else _tokenizer_ids(model.tokenizer, texts)
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        # chain.from_iterable keeps the flattening in C: a generator expression here would hold
        # the GIL for every token and stall the indexer's other thread.
        flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum()))
        rows = np.repeat(np.arange(len(ids)), lengths)
        if model.unk_token_id is not None:  # model2vec drops unknown tokens before pooling
            keep = flat != model.unk_token_id
            rows, flat = rows[keep], flat[keep]
        if len(ids) <= _FEW:
            vecs = self._pool_few(len(ids), rows, flat)
        else:
            vecs = np.asarray(_counts(len(ids), rows, flat, self._table.size) @ self._table.full, dtype=np.float32)
        # The mean's divisor cancels in the L2 normalisation that follows.
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        np.divide(vecs, norms, out=vecs, where=norms > 0)
        return vecs

    def _pool_few(self, n: int, rows: np.ndarray, flat: np.ndarray) -> np.ndarray:
        """The sparse product for a handful of texts (a query), with numpy alone.

        The same sums in the same order as scipy's ``counts @ table`` (each distinct token
        once, ascending, times its count, added row after row), so the same vectors, without
        importing scipy (~0.3 s) into a process that only queries.
        """
        table = self._table
        assert table is not None
        out = np.zeros((n, self.dim), dtype=np.float32)
        for i in range(n):
            tokens, counts = np.unique(flat[rows == i], return_counts=True)
            if tokens.size:
                np.sum(counts.astype(np.float32)[:, None] * table.rows(tokens), axis=0, out=out[i])
        return out


def _counts(n: int, rows: np.ndarray, flat: np.ndarray, size: int):
    """Texts x tokens counts: the CSR matrix scipy makes of ``(rows, flat)`` pairs (each row's
    distinct tokens ascending, each with its count), so the product with the table adds the
    same terms in the same order; one sort of ``row * size + token`` keys, ~3x faster."""
    from scipy import sparse

    key = rows * size + flat
    key.sort()
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else key
    distinct = key[starts]
    row = distinct // size
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=n), out=indptr[1:])
    data = np.diff(np.r_[starts, key.size]).astype(np.float32)
    return sparse.csr_matrix((data, distinct - row * size, indptr), shape=(n, size))


def _tokenizer_ids(tokenizer, texts: list[str]) -> list[list[int]]:
    return [e.ids for e in tokenizer.encode_batch_fast(texts, add_special_tokens=False)]


class _WordTokens:
    """A text's token ids from its words' cached ids: the same ids as the tokenizer, ~4x faster.

    With the tokenizers this applies to (BERT's pre-tokeniser, and normalisers that change a
    character alone or split an identifier where its case changes), a text of printable ASCII
    is tokenized as its words are, one after the other: a run of letters and digits, or one
    punctuation mark, and nothing joins across whitespace or punctuation. Code repeats its
    words, so each is tokenized once (by the tokenizer itself) and a text's ids are its words'
    ids chained in C, cut at the tokenizer's truncation length. Any other text (a control
    character, anything beyond ASCII) goes to the tokenizer whole. Embedding is most of a
    cold build's time, and the tokenizer most of embedding's: with :func:`_counts`, 470 -> 156
    us a kernel chunk on one thread (``benchmarks/bench_encode.py``).
    """

    #: Normalisers that map each ASCII character on its own (no joins, no reordering).
    _PER_CHARACTER = frozenset({"BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "StripAccents"})
    #: The one Replace normaliser allowed: ``train_pairs.CAMEL_SPLIT``'s identifier split, whose
    #: matches lie inside a run of letters and digits.
    _CAMEL = r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])"
    #: Tokenized whole, never from words: anything but printable ASCII, tab, newline and CR.
    _NOT_PLAIN = re.compile(r"[^\x20-\x7e\t\n\r]")
    _WORD = re.compile(r"[A-Za-z0-9]+|[!-/:-@\[-`{-~]")
    #: Words kept at most (~110 MB at the limit); a full cache starts again empty.
    LIMIT = 1 << 19

    def __init__(self, tokenizer, limit: int | None) -> None:
        self.tokenizer = tokenizer
        self.limit = limit
        self.cache: dict[str, tuple[int, ...]] = {}

    @classmethod
    def of(cls, tokenizer) -> _WordTokens | None:
        """The word path for ``tokenizer``, or None where its output could differ."""
        try:  # the two parts' own JSON: the whole tokenizer's (its vocabulary) costs ~12 ms
            parts = [tokenizer.normalizer, tokenizer.pre_tokenizer]
            norm, pre = (None if part is None else json.loads(part.__getstate__()) for part in parts)
        except (AttributeError, TypeError, ValueError):
            return None
        pre = pre or {}
        steps = [] if norm is None else norm.get("normalizers", []) if norm.get("type") == "Sequence" else [norm]
        for step in steps:
            if step.get("type") == "Replace":
                if step.get("pattern") != {"Regex": cls._CAMEL} or step.get("content") != " ":
                    return None
            elif step.get("type") not in cls._PER_CHARACTER:
                return None
        padding, truncation = tokenizer.padding, tokenizer.truncation
        if pre.get("type") != "BertPreTokenizer" or (padding is not None and padding.get("length") != 0):
            return None
        if truncation is not None and (truncation.get("direction") != "right" or truncation.get("stride")):
            return None
        return cls(tokenizer, None if truncation is None else int(truncation["max_length"]))

    def ids(self, texts: list[str]) -> list[list[int]]:
        out: list = [None] * len(texts)
        words: list = [None] * len(texts)
        whole = []
        plain, split = self._NOT_PLAIN.search, self._WORD.findall
        for i, text in enumerate(texts):
            if plain(text) is None:
                words[i] = split(text)
            else:
                whole.append(i)
        cache = self.cache  # a local: another thread may start a new cache meanwhile
        seen = set(itertools.chain.from_iterable(w for w in words if w is not None))
        new = seen.difference(cache)
        if len(cache) + len(new) > self.LIMIT:
            cache = self.cache = {}
            new = seen
        if new:
            new = list(new)
            cache.update(zip(new, map(tuple, _tokenizer_ids(self.tokenizer, new))))
        get, chain, limit = cache.__getitem__, itertools.chain.from_iterable, self.limit
        for i, w in enumerate(words):
            if w is not None:
                out[i] = list(itertools.islice(chain(map(get, w)), limit))
        if whole:
            for i, ids in zip(whole, _tokenizer_ids(self.tokenizer, [texts[i] for i in whole])):
                out[i] = ids
        return out


class _Table:
    """Token id -> float32 row, the model's token mapping and per-token weights applied.

    The whole matrix (30 MB for the bundled model, ~30 ms to make) is made on the first batch
    encode; a query's few rows are made from the float16 embedding directly, with the same
    float32 operations, so opening the dense arm does not pay for it.
    """

    def __init__(
        self, embedding: np.ndarray, mapping: np.ndarray | None = None, weights: np.ndarray | None = None
    ) -> None:
        self.embedding, self.mapping, self.weights = embedding, mapping, weights
        self.size = len(mapping) if mapping is not None else len(embedding)

    @functools.cached_property
    def full(self) -> np.ndarray:
        return np.ascontiguousarray(self._make(slice(None)))

    def rows(self, ids: np.ndarray) -> np.ndarray:
        if "full" in self.__dict__:
            return self.full[ids]
        return self._make(ids)

    def _make(self, ids) -> np.ndarray:
        source = self.embedding[ids] if self.mapping is None else self.embedding[self.mapping[ids]]
        table = np.asarray(source, dtype=np.float32)
        if self.weights is not None:
            table = table * np.asarray(self.weights[ids], dtype=np.float32)[:, None]
        return table


#: Up to this many texts are pooled without scipy (see ``EmbeddingModel._pool_few``).
_FEW = 8


# ----------------------------------------------------------------------------- loading

_cache: dict[str, EmbeddingModel] = {}
_cache_lock = threading.Lock()
_key_locks: dict[str, threading.Lock] = {}
#: Serialises the save/patch/restore of the process-wide offline switch in ``_offline``.
_offline_lock = threading.Lock()


def load_model(spec: str | os.PathLike[str] | None = None) -> EmbeddingModel:
    """Load (once per spec; thread-safe) an embedding model.

    ``None`` (or ``""``) -> the bundled model. A directory path -> the model2vec model there.
    Anything else -> a hub id, loaded with model2vec's ``from_pretrained`` (the local hub
    cache first, then the hub). Any failure raises :class:`ModelUnavailable` with a one-line
    reason. Failures are not cached, so a later call tries again.
    """
    try:
        kind, key, target = _classify(spec)
    except (OSError, ValueError) as exc:  # e.g. an embedded NUL byte
        raise ModelUnavailable(f"cannot load embedding model {spec!r}: invalid path: {_one_line(exc)}") from None
    with _cache_lock:
        model = _cache.get(key)
        if model is not None:
            return model
        key_lock = _key_locks.setdefault(key, threading.Lock())
    with key_lock:  # one load per spec; other specs load concurrently
        with _cache_lock:
            model = _cache.get(key)
        if model is None:
            model = _load(kind, target, spec)
            with _cache_lock:
                _cache[key] = model
    return model


def _classify(spec: str | os.PathLike[str] | None) -> tuple[str, str, str]:
    """(kind, cache key, target) for a spec: kind is "bundled", "dir" or "hub"."""
    if spec is None or (isinstance(spec, str) and not spec.strip()):
        return "bundled", "bundled", str(DEFAULT_MODEL_DIR)
    text = os.fspath(spec)
    path = Path(text).expanduser()
    try:
        exists = path.exists()
    except (OSError, ValueError):  # e.g. an embedded NUL byte, a name too long
        exists = False
    if isinstance(spec, os.PathLike) or exists or not _HUB_ID.match(text):
        # An existing path, a Path object, or something no hub id can look like
        # ("/abs", "./rel", "~/x", "a/b/c", "C:\\x"): a local path.
        resolved = path.resolve()
        if resolved == DEFAULT_MODEL_DIR:
            return "bundled", "bundled", str(DEFAULT_MODEL_DIR)
        return "dir", f"dir:{resolved}", str(resolved)
    return "hub", f"hub:{text}", text


def _load(kind: str, target: str, spec: object) -> EmbeddingModel:
    shown = "the bundled model" if kind == "bundled" else repr(os.fspath(spec))  # type: ignore[arg-type]
    if kind in ("bundled", "dir"):
        path = Path(target)
        if not path.exists():
            raise ModelUnavailable(f"cannot load embedding model {shown}: no such directory: {path}")
        if not path.is_dir():
            raise ModelUnavailable(f"cannot load embedding model {shown}: not a directory: {path}")
        weights = _weight_file(path)
        if weights is None:
            raise ModelUnavailable(
                f"cannot load embedding model {shown}: {path} holds no model2vec model "
                "(expected model.safetensors, tokenizer.json and config.json)"
            )
    try:
        static = None
        if kind != "hub" and weights.name == "model.safetensors" and weights.parent == path:
            static = _PlainStatic.load(path)
        if static is not None:
            pass
        elif kind == "hub":
            StaticModel = _import_static_model()
            static = StaticModel.from_pretrained(target, force_download=False)
        else:
            StaticModel = _import_static_model()
            with _offline_lock, _offline():
                static = StaticModel.from_pretrained(target)
    except ModelUnavailable:
        raise
    except Exception as exc:  # any failure becomes a one-line reason
        raise ModelUnavailable(f"cannot load embedding model {shown}: {_one_line(exc)}") from None

    if kind == "bundled":
        return EmbeddingModel(static, f"{_BUNDLED_LABEL}@{_sha12(weights)}", Path(target))
    if kind == "dir":
        return EmbeddingModel(static, f"{target}@{_sha12(weights)}", Path(target))
    return EmbeddingModel(static, f"hub:{target}@{_hub_digest(target, static)}", None)


class _PlainStatic:
    """The part of model2vec's ``StaticModel`` that encoding needs, loaded straight from disk.

    Importing model2vec pulls in huggingface_hub and an HTTP stack (~0.5 s); a local model in
    model2vec's layout (``model.safetensors``, ``tokenizer.json``, ``config.json``) needs none
    of it. The attributes mirror model2vec's so pooling is the same: padding off, truncation at
    ``max_length`` tokens, the character cap from the median token length, the unknown token
    dropped. ``model.safetensors`` holds ``embeddings`` and optionally ``weights`` (one factor
    per token) and ``mapping`` (token id -> embedding row, from vocabulary quantisation); a
    token's vector is then ``embeddings[mapping[id]] * weights[id]``, as in model2vec, and
    :attr:`table` holds those vectors, one row per token id, in float32. The config's
    ``normalize`` flag needs no handling: :meth:`EmbeddingModel.encode` always L2-normalises.
    Anything else (other tensors, a vocabulary the table does not cover, a tokenizer model
    without an unknown token) goes through model2vec itself (:meth:`load` returns None).
    """

    token_mapping = None
    weights = None
    table: _Table | None = None

    @functools.cached_property
    def median_token_length(self) -> int:
        return int(np.median([len(t) for t in self.tokenizer.get_vocab()]))

    @classmethod
    def load(cls, folder: Path) -> _PlainStatic | None:
        from tokenizers import Tokenizer

        tensors = _mapped_tensors(folder / "model.safetensors")
        if tensors is None:
            from safetensors import safe_open

            with safe_open(str(folder / "model.safetensors"), framework="numpy") as opened:
                tensors = {name: opened.get_tensor(name) for name in opened.keys()}  # noqa: SIM118  (not a dict: keys() is its API)
        names = set(tensors)
        if "embeddings" not in names or not names <= {"embeddings", "weights", "mapping"}:
            return None
        embedding, weights, mapping = tensors["embeddings"], tensors.get("weights"), tensors.get("mapping")
        if embedding.ndim != 2:
            return None
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self = cls()
        self.embedding = embedding
        self.weights = weights
        self.token_mapping = mapping
        self.dim = int(embedding.shape[1])
        self.max_length = config.get("max_length", 512)
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        padding = tokenizer.padding
        if padding is not None:
            tokenizer.enable_padding(
                pad_id=padding["pad_id"], pad_token=padding["pad_token"], pad_type_id=padding["pad_type_id"], length=0
            )
        if self.max_length is None:
            tokenizer.no_truncation()
        else:
            tokenizer.enable_truncation(self.max_length)
        self.tokenizer = tokenizer
        size = tokenizer.get_vocab_size()  # not get_vocab(): building that dict costs 30 ms
        if mapping is None:
            if size != len(embedding):
                return None
        else:
            mapping = mapping.astype(np.int64, copy=False)
            if mapping.shape != (size,) or (mapping.size and (mapping.min() < 0 or mapping.max() >= len(embedding))):
                return None
        if weights is not None and weights.shape != (size,):
            return None
        self.table = _Table(embedding, mapping, weights)
        if not hasattr(tokenizer.model, "unk_token"):
            return None  # e.g. Unigram: model2vec reads its unk id from the JSON
        unk = tokenizer.model.unk_token
        self.unk_token_id = tokenizer.token_to_id(unk) if unk is not None else None
        return self


#: safetensors dtype names -> little-endian numpy dtypes (the ones a static model holds).
_SAFETENSORS_DTYPES = {"F16": "<f2", "F32": "<f4", "F64": "<f8", "I32": "<i4", "I64": "<i8"}


def _mapped_tensors(path: Path) -> dict[str, np.ndarray] | None:
    """The tensors of a safetensors file as read-only memory maps (safetensors' own reader
    copies them: ~16 ms for the bundled model at every open), or None for a file this does
    not read (another dtype, a malformed header): the caller then uses safetensors."""
    try:
        with open(path, "rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            if size > os.fstat(fh.fileno()).st_size:
                return None
            header = json.loads(fh.read(size))
        out = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            dtype = np.dtype(_SAFETENSORS_DTYPES[info["dtype"]])
            start, end = info["data_offsets"]
            shape = tuple(info["shape"])
            if end - start != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
                return None
            out[name] = (
                np.memmap(path, dtype=dtype, mode="r", offset=8 + size + start, shape=shape)
                if end > start
                else np.zeros(shape, dtype)
            )
        return out
    except (OSError, ValueError, KeyError, TypeError, OverflowError, MemoryError, struct.error):
        return None


def _import_static_model():  # the heavy import, deferred until a model is needed
    try:
        from model2vec import StaticModel
    except Exception as exc:  # pragma: no cover - model2vec is a hard dependency
        raise ModelUnavailable(f"model2vec is not importable: {_one_line(exc)}") from None
    return StaticModel


@contextmanager
def _offline() -> Iterator[None]:
    """Forbid hub access while loading a local model, then restore the previous setting.

    huggingface_hub reads ``HF_HUB_OFFLINE`` at import time into ``constants``, so both the
    environment variable and the constant are set; a hub id loaded later is not affected.
    """
    # Import (and so initialise) the constants *before* touching the environment, or they
    # would be frozen offline for the rest of the process.
    try:
        from huggingface_hub import constants
    except Exception:  # pragma: no cover - huggingface_hub comes with model2vec
        constants = None
    saved_const = getattr(constants, "HF_HUB_OFFLINE", None)
    saved_env = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    if constants is not None:
        constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        if saved_env is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = saved_env
        if constants is not None:
            constants.HF_HUB_OFFLINE = saved_const


def _weight_file(folder: Path) -> Path | None:
    for rel in _WEIGHT_FILES:
        candidate = folder / rel
        if candidate.is_file() and (candidate.parent / "tokenizer.json").is_file():
            return candidate
    return None


def _sha12(weights: Path) -> str:
    """The model's stamp: the weight file's bytes, then its tokenizer's (a tokenizer that
    reads identifiers otherwise gives other vectors from the same table)."""
    h = hashlib.sha256()
    for path in (weights, weights.parent / "tokenizer.json"):
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:12]


def _hub_digest(repo_id: str, static: StaticModel) -> str:
    """Hash of the cached weight file of a hub model, else of the loaded embedding matrix."""
    try:
        from model2vec.persistence.hf import maybe_get_cached_model_path

        folder = maybe_get_cached_model_path(repo_id)
        weights = _weight_file(folder) if folder is not None else None
        if weights is not None:
            return _sha12(weights)
    except Exception:
        pass
    return hashlib.sha256(np.ascontiguousarray(static.embedding).tobytes()).hexdigest()[:12]


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text
