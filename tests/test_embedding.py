from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from ranklens.core.text.embedding import DEFAULT_MODEL_DIR, EmbeddingModel, ModelUnavailable, load_model

REPO = Path(__file__).resolve().parent.parent

READ_FILE = '''
def read_file(path):
    """Read a text file and return its contents."""
    with open(path, encoding="utf-8") as handle:
        return handle.read()
'''
LOAD_TEXT = '''
def load_text(filename):
    """Open the file and return all of its text."""
    fh = open(filename)
    data = fh.read()
    fh.close()
    return data
'''
UNRELATED = "The orchestra played a symphony while the audience applauded the violinist."


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def _stamp(folder: Path) -> str:
    """What a model's name ends with: the weights' bytes, then the tokenizer's."""
    data = (folder / "model.safetensors").read_bytes() + (folder / "tokenizer.json").read_bytes()
    return hashlib.sha256(data).hexdigest()[:12]


# ----------------------------------------------------------------------------- bundled model


def test_bundled_model_files_are_present():
    for name in ("model.safetensors", "tokenizer.json", "config.json", "MODEL_CARD.md"):
        assert (DEFAULT_MODEL_DIR / name).is_file(), name
    config = json.loads((DEFAULT_MODEL_DIR / "config.json").read_text())
    assert config["hidden_dim"] == 256 and config["embedding_dtype"] == "float16"
    # What keeps the wheel small and the index fast: one float16 table, at most ~30 MB.
    assert (DEFAULT_MODEL_DIR / "model.safetensors").stat().st_size < 30_000_000


def test_the_bundled_model_reads_an_identifier_as_its_words():
    """``maxConnections`` and ``HTTPServer`` are embedded as the words a question uses."""
    model = load_model()
    pairs = [
        ("maxConnections", "max connections"),
        ("HTTPServerConfig", "http server config"),
        ("parse_url", "parse _ url"),
    ]
    for ident, words in pairs:
        a, b = model.encode([ident, words])
        assert _cos(a, b) == pytest.approx(1.0, abs=1e-5), ident


def test_bundled_model_loads_and_embeds_related_code_closer():
    model = load_model()
    assert isinstance(model, EmbeddingModel)
    assert model.dim == 256
    assert model.name == f"bundled:ranklens-code@{_stamp(DEFAULT_MODEL_DIR)}"
    assert load_model() is model and load_model(None) is model
    assert load_model(str(DEFAULT_MODEL_DIR)) is model

    vecs = model.encode([READ_FILE, LOAD_TEXT, UNRELATED])
    assert vecs.dtype == np.float32 and vecs.shape == (3, 256)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    related = _cos(vecs[0], vecs[1])
    unrelated = max(_cos(vecs[0], vecs[2]), _cos(vecs[1], vecs[2]))
    assert related > 0.5
    assert related > unrelated + 0.3, (related, unrelated)

    query = model.encode(["read the contents of a file"])[0]
    assert _cos(query, vecs[0]) > _cos(query, vecs[2])


def test_encode_edge_cases():
    model = load_model()
    empty = model.encode([])
    assert empty.shape == (0, 256) and empty.dtype == np.float32
    # A text with no known token has no direction: a zero row, not NaN.
    out = model.encode(["", "   ", "def f(): pass"])
    assert np.isfinite(out).all()
    assert np.linalg.norm(out[0]) == 0 and np.linalg.norm(out[2]) == pytest.approx(1.0, abs=1e-5)
    texts = [f"def function_{i}(x):\n    return x * {i}" for i in range(7)]
    np.testing.assert_allclose(model.encode(texts, batch_size=2), model.encode(texts), atol=1e-6)
    assert model.encode(iter(texts[:2])).shape == (2, 256)


def test_bundled_model_never_touches_the_network():
    """In a fresh process with every socket refused, the bundled model loads and embeds,
    and the process-wide hub offline switch is left as it was (off)."""
    code = r"""
import socket, sys, os
def refuse(*args, **kwargs):
    raise OSError("network access attempted")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.getaddrinfo = refuse
socket.create_connection = refuse
import ranklens.core.text.embedding as emb
assert "model2vec" not in sys.modules, "model2vec must be imported lazily"
model = emb.load_model()
vec = model.encode(["def main(): pass"])
assert vec.shape == (1, 256)
from huggingface_hub import constants
print(model.name, constants.HF_HUB_OFFLINE, os.environ.get("HF_HUB_OFFLINE"))
"""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    name, const, var = proc.stdout.split()
    assert name.startswith("bundled:ranklens-code@")
    assert (const, var) == ("False", "None")


# ----------------------------------------------------------------------------- failures


def test_missing_path_raises_model_unavailable(tmp_path: Path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelUnavailable) as info:
        load_model(str(missing))
    message = str(info.value)
    assert "no such directory" in message and str(missing) in message
    assert "\n" not in message
    with pytest.raises(ModelUnavailable, match="no such directory"):
        load_model(missing)  # a Path is always a local path


def test_directory_without_a_model_raises(tmp_path: Path):
    (tmp_path / "readme.txt").write_text("nothing here")
    with pytest.raises(ModelUnavailable, match="holds no model2vec model"):
        load_model(str(tmp_path))
    with pytest.raises(ModelUnavailable, match="not a directory"):
        load_model(str(tmp_path / "readme.txt"))


def test_broken_model_files_raise_a_one_line_reason(tmp_path: Path):
    model_dir = _write_tiny_model(tmp_path / "broken")
    (model_dir / "model.safetensors").write_bytes(b"\x00garbage" * 10)
    with pytest.raises(ModelUnavailable) as info:
        load_model(str(model_dir))
    assert "\n" not in str(info.value) and str(model_dir) in str(info.value)


def test_unreachable_hub_id_raises_model_unavailable(monkeypatch):
    # Hub ids need the hub (or its local cache); force offline so the test never dials out.
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailable) as info:
        load_model("ranklens-tests/no-such-model")
    message = str(info.value)
    assert message.startswith("cannot load embedding model 'ranklens-tests/no-such-model'")
    assert "\n" not in message


# ----------------------------------------------------------------------------- other local models


WORDS = ["alpha", "beta", "gamma", "delta", "file", "read", "open", "cat", "dog"]


def _write_tiny_model(folder: Path) -> Path:
    """A model2vec model from local vectors and a word-level tokenizer, saved like a real one."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    vocab = {"[UNK]": 0, "[PAD]": 1, **{w: i + 2 for i, w in enumerate(WORDS)}}
    tokenizer = Tokenizer(WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(vocab), 8)).astype(np.float32)
    vectors[vocab["read"]] = vectors[vocab["open"]] + 0.05  # two near-synonyms
    model = StaticModel(vectors=vectors, tokenizer=tokenizer, config={"normalize": True}, normalize=True)
    model.save_pretrained(folder)
    return folder


def test_local_model_directory_loads(tmp_path: Path):
    model_dir = _write_tiny_model(tmp_path / "tiny")
    model = load_model(str(model_dir))
    assert model.dim == 8
    assert model.name == f"{model_dir.resolve()}@{_stamp(model_dir)}"
    assert load_model(model_dir) is model  # same spec as a Path: same cached model

    vecs = model.encode(["read", "open", "cat", "zebra"])
    assert vecs.shape == (4, 8) and vecs.dtype == np.float32
    assert _cos(vecs[0], vecs[1]) > 0.99
    assert _cos(vecs[0], vecs[2]) < 0.9
    assert np.linalg.norm(vecs[3]) == 0  # only unknown tokens


def test_a_model_with_another_tokenizer_has_another_name(tmp_path: Path):
    """The same table read by another tokenizer gives other vectors, so an index embedded
    with one is never searched with the other."""
    first = _write_tiny_model(tmp_path / "a")
    second = tmp_path / "b"
    second.mkdir()
    for name in ("model.safetensors", "config.json"):
        (second / name).write_bytes((first / name).read_bytes())
    spec = json.loads((first / "tokenizer.json").read_text())
    spec["normalizer"] = {"type": "Lowercase"}
    (second / "tokenizer.json").write_text(json.dumps(spec))
    a, b = load_model(first), load_model(second)
    assert a.name.split("@")[1] != b.name.split("@")[1]


def test_relative_local_path_is_a_directory_spec(tmp_path: Path, monkeypatch):
    _write_tiny_model(tmp_path / "rel-model")
    monkeypatch.chdir(tmp_path)
    model = load_model("rel-model")
    assert model.name.startswith(str((tmp_path / "rel-model").resolve()) + "@")


def test_concurrent_loads_share_one_model(tmp_path: Path):
    model_dir = _write_tiny_model(tmp_path / "shared")
    results: list[EmbeddingModel] = []
    lock = threading.Lock()

    def worker():
        m = load_model(str(model_dir))
        with lock:
            results.append(m)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and all(m is results[0] for m in results)


def test_loading_a_local_model_restores_the_hub_offline_switch(tmp_path: Path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    load_model(str(_write_tiny_model(tmp_path / "restore")))
    assert constants.HF_HUB_OFFLINE is False
    assert "HF_HUB_OFFLINE" not in os.environ


def test_fast_encoding_matches_model2vec_pooling():
    """The sparse mean-pooling path gives model2vec's own vectors (after normalising)."""
    import numpy as np

    from ranklens.core.text.embedding import load_model

    model = load_model(None)
    texts = [
        "def parse_config(path):\n    return dict(line.split('=') for line in open(path))",
        "class LRUCache:\n    '''least recently used'''" * 200,  # longer than the 512-token cap
        "",
        "ünïcödé identifiers and ☃ symbols",
    ]
    from model2vec import StaticModel

    from ranklens.core.text.embedding import DEFAULT_MODEL_DIR

    reference = StaticModel.from_pretrained(str(DEFAULT_MODEL_DIR))
    assert "model2vec" not in type(model._model).__module__  # the fast loader served it
    ref = reference.encode(texts, use_multiprocessing=False, normalize=False).astype(np.float32)
    norms = np.linalg.norm(ref, axis=1, keepdims=True)
    ref = np.divide(ref, norms, out=np.zeros_like(ref), where=norms > 0)
    got = model.encode(texts)
    np.testing.assert_allclose(got, ref, atol=2e-3)
    assert not got[2].any()  # no tokens -> zero row, never NaN


def test_token_weights_and_mapping_are_honoured_by_the_fast_loader(tmp_path: Path):
    """A model2vec model saved with per-token ``weights`` and a token ``mapping`` (as
    vocabulary quantisation or a weighted tokenlearn/potion model writes them) loads without
    model2vec and pools ``embeddings[mapping[id]] * weights[id]`` exactly as model2vec does."""
    from model2vec import StaticModel
    from model2vec.persistence import save_pretrained

    plain_dir = _write_tiny_model(tmp_path / "plain")
    plain = StaticModel.from_pretrained(str(plain_dir))
    n = len(plain.tokens)
    rng = np.random.default_rng(1)
    rows = rng.normal(size=(4, 8)).astype(np.float32)  # 4 shared rows for n tokens
    mapping = (np.arange(n) % 4).astype(np.int64)
    mapping[WORDS.index("read") + 2] = 3
    mapping[WORDS.index("open") + 2] = 2
    weights = np.linspace(0.2, 3.0, n).astype(np.float32)
    folder = tmp_path / "weighted"
    save_pretrained(
        folder,
        embeddings=rows,
        tokenizer=plain.tokenizer,
        config={"normalize": False},
        weights=weights,
        mapping=mapping,
    )

    model = load_model(str(folder))
    assert "model2vec" not in type(model._model).__module__  # the fast loader served it
    texts = ["read open", "read read cat", "dog", "alpha beta gamma delta zebra", "zebra", ""]
    reference = StaticModel.from_pretrained(str(folder))
    ref = reference.encode(texts, use_multiprocessing=False, normalize=False).astype(np.float32)
    norms = np.linalg.norm(ref, axis=1, keepdims=True)
    ref = np.divide(ref, norms, out=np.zeros_like(ref), where=norms > 0)
    got = model.encode(texts)
    np.testing.assert_allclose(got, ref, atol=1e-5)
    # The weights matter: "read" and "open" have different rows *and* different weights.
    unweighted = rows[mapping[[WORDS.index("read") + 2, WORDS.index("cat") + 2]]]
    mean = unweighted[0] * 2 + unweighted[1]
    assert not np.allclose(got[1], mean / np.linalg.norm(mean), atol=1e-3)
    assert not got[4].any() and not got[5].any()  # unknown only / empty -> zero rows


def test_bundled_model_is_served_by_the_fast_loader_from_its_embeddings():
    """The bundled model keeps any token weights folded into its vectors: one ``embeddings``
    tensor, float16, one row per vocabulary token, so encoding is one sparse product."""
    from safetensors import safe_open

    with safe_open(str(DEFAULT_MODEL_DIR / "model.safetensors"), framework="numpy") as tensors:
        assert set(tensors.keys()) == {"embeddings"}
        embedding = tensors.get_tensor("embeddings")
    assert embedding.dtype == np.float16 and embedding.shape[1] == 256
    model = load_model()
    assert model._model.weights is None and model._model.token_mapping is None
    assert model._table.size == len(embedding)


def test_a_query_is_pooled_from_the_float16_rows_and_equals_the_batch_path():
    """Opening the model makes no float32 table; a query gathers its rows, bit for bit what
    the whole table (made by the first batch encode) gives."""
    model = load_model()
    table = model._table
    table.__dict__.pop("full", None)
    queries = ["parse command line arguments", "Vocabulary.read(conn)", "x"]
    few = model.encode(queries)
    assert "full" not in table.__dict__
    model.encode([f"text {i}" for i in range(20)])  # more than a few texts: the whole table
    assert "full" in table.__dict__
    np.testing.assert_array_equal(model.encode(queries), few)


def _tokenizer_vectors(model: EmbeddingModel, texts: list[str]) -> np.ndarray:
    """``model.encode`` with every text given to the tokenizer whole (the reference)."""
    words, model._words = model._words, None
    try:
        return model.encode(texts)
    finally:
        model._words = words


def test_a_text_is_tokenized_from_its_words_exactly_as_the_tokenizer_does():
    """The word cache (a plain ASCII text's tokens are its words' tokens in order) gives the
    tokenizer's own ids and vectors: on real source files, identifiers split by case, every
    ASCII punctuation mark, words over the tokenizer's 100 characters, text past the 512-token
    cap, and texts the cache must leave to the tokenizer (control characters, non-ASCII)."""
    import random
    import string

    from ranklens.core.chunking import chunk_file
    from ranklens.core.text.embedding import _tokenizer_ids

    model = load_model()
    assert model._words is not None  # the bundled tokenizer qualifies
    texts = []
    for path in sorted((REPO / "core").rglob("*.py"))[:12]:
        texts += [c.text for c in chunk_file(path.name, path.read_text(encoding="utf-8"))]
    texts += [
        "getHTTPResponse2XX maxConnections HTMLParser.parseURL(myURLs) a1B2 ABCDef",
        string.punctuation + " x" + string.punctuation.join("abc"),
        "w" * 150 + " ok",
        "tab\tnew\nline\rreturn",
        "nul\x00joins vt\x0bff\x0cdel\x7fus\x1f",
        "ünïcödé naïveCafé ☃ 中文Names",
        "class LRUCache:\n    # least recently used\n" * 200,
        "",
    ]
    rng = random.Random(7)
    alphabet = string.printable + "\x00\x0b\x7fé中"
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(60))) for _ in range(500)]
    cap = model._model.max_length * model._model.median_token_length
    capped = [t[:cap] for t in texts]
    assert model._words.ids(capped) == _tokenizer_ids(model._model.tokenizer, capped)
    np.testing.assert_array_equal(model.encode(texts), _tokenizer_vectors(model, texts))


def test_a_full_word_cache_starts_again_and_still_tokenizes_right(monkeypatch):
    from ranklens.core.text.embedding import _tokenizer_ids, _WordTokens

    model = load_model()
    words = _WordTokens.of(model._model.tokenizer)
    monkeypatch.setattr(_WordTokens, "LIMIT", 5)
    texts = ["alpha beta gamma", "delta epsilon zetaEta theta", "alpha iota kappa lambda mu"]
    for text in texts:
        assert words.ids([text]) == _tokenizer_ids(model._model.tokenizer, [text])
        assert len(words.cache) <= 5
    assert words.ids(texts) == _tokenizer_ids(model._model.tokenizer, texts)


@pytest.mark.parametrize(
    "change",
    [
        {"pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}},
        {"normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": ""}},
        {"normalizer": {"type": "Prepend", "prepend": "▁"}},
    ],
)
def test_a_tokenizer_that_could_join_or_split_across_words_is_used_whole(change):
    """Where a text's tokens might not be its words' tokens in order, there is no word cache."""
    from tokenizers import Tokenizer

    from ranklens.core.text.embedding import _WordTokens

    spec = json.loads((DEFAULT_MODEL_DIR / "tokenizer.json").read_text(encoding="utf-8"))
    assert _WordTokens.of(Tokenizer.from_str(json.dumps(spec))) is not None
    spec.update(change)
    assert _WordTokens.of(Tokenizer.from_str(json.dumps(spec))) is None


def test_token_counts_are_the_csr_matrix_scipy_makes_of_the_pairs():
    """The counts the table is multiplied by: each row's distinct tokens ascending with their
    counts, as scipy's COO -> CSR makes them, so the vectors are the same bit for bit."""
    from scipy import sparse

    from ranklens.core.text.embedding import _counts

    rng = np.random.default_rng(3)
    for n, nnz in [(9, 0), (9, 40), (300, 20_000), (50, 3)]:
        rows = np.sort(rng.integers(0, n, nnz))
        flat = rng.integers(0, 60, nnz)
        got = _counts(n, rows, flat, 60)
        want = sparse.csr_matrix((np.ones(nnz, dtype=np.float32), (rows, flat)), shape=(n, 60))
        want.sum_duplicates()
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got.indptr, want.indptr)
        np.testing.assert_array_equal(got.indices, want.indices)
        np.testing.assert_array_equal(got.data, want.data)
        table = rng.normal(size=(60, 8)).astype(np.float32)
        np.testing.assert_array_equal(got @ table, want @ table)


def test_safetensors_are_memory_mapped_or_left_to_safetensors(tmp_path: Path):
    import json
    import struct

    from safetensors.numpy import save_file

    from ranklens.core.text.embedding import _mapped_tensors

    arrays = {"embeddings": np.arange(12, dtype=np.float16).reshape(4, 3), "mapping": np.arange(4, dtype=np.int64)}
    save_file(arrays, str(tmp_path / "m.safetensors"))
    mapped = _mapped_tensors(tmp_path / "m.safetensors")
    assert isinstance(mapped["embeddings"], np.memmap)
    for name, array in arrays.items():
        np.testing.assert_array_equal(mapped[name], array)
    (tmp_path / "junk.safetensors").write_bytes(b"\xff" * 40)
    header = json.dumps({"embeddings": {"dtype": "BF16", "shape": [1, 2], "data_offsets": [0, 4]}}).encode()
    (tmp_path / "bf16.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    assert _mapped_tensors(tmp_path / "junk.safetensors") is None
    assert _mapped_tensors(tmp_path / "bf16.safetensors") is None


def test_an_index_pass_leaves_no_word_cache_behind(sample_repo):
    """The words a pass tokenized are dropped when it ends: a long-lived UI or MCP server does
    not keep a large tree's vocabulary; queries still embed as before."""
    from ranklens.core.engine import Engine

    model = load_model()
    model.encode([f"someWord{i} other_words here" for i in range(20)])
    assert model._words.cache
    engine = Engine(sample_repo)
    try:
        engine.ensure_index()
        assert model._words.cache == {}
        assert engine.search("read a file").hits
    finally:
        engine.close()
