"""The in-file encoder candidate (issue #35): what it reads, and its int8 ONNX runner.

:func:`encoder_text` is what the encoder reads of a question or a chunk: identifiers split
into words. A WordPiece vocabulary cuts ``parseHeaderValue`` or ``parse_header_value`` into
pieces that say little; split into ``parse header value`` they are the words a question
uses. Runs of white space (indentation) are one space: the tokenizer drops them anyway.
Shared by the trainer (``scripts/train_encoder.py``, which loads this file by its path: its
venv has none of ranklens's dependencies), the exporter and the probes, so all read the same
text.

:class:`InFileEncoder` runs a model ``scripts/export_encoder.py`` wrote (``model.onnx``,
``tokenizer.json``): a chunk up to :data:`CODE_TOKENS` tokens, a question up to
:data:`QUERY_TOKENS`, ``last_hidden_state`` mean-pooled over the attention mask, then
L2-normalised (the trainer's pooling). It is measured, not shipped: no candidate reached the
issue's in-file target (docs/appendix/in-file-encoder.md), so nothing in ``core/`` uses it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from pathlib import Path

import numpy as np

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SNAKE = re.compile(r"(?<=[A-Za-z0-9])_+(?=[A-Za-z0-9])")
_SPACE = re.compile(r"\s+")


def encoder_text(text: str) -> str:
    """``text`` with its identifiers split into words and its white space runs made one."""
    return _SPACE.sub(" ", _CAMEL.sub(" ", _SNAKE.sub(" ", text))).strip()


DIM = 384
#: A chunk's tokens read: a chunk's median is ~320 once its identifiers are split; 128 read
#: little more than the breadcrumb and the signature.
CODE_TOKENS = 256
QUERY_TOKENS = 64
#: Characters tokenized per text: well past CODE_TOKENS even for sparse, indented code.
MAX_CHARS = 6000
#: Texts per ONNX run, sorted by length so a batch pads little.
BATCH = 8


def unavailable(model_dir: Path) -> str | None:
    """Why the encoder cannot run here (one line), or None. Cheap: imports nothing heavy."""
    for module in ("onnxruntime", "tokenizers"):
        try:
            found = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            found = None
        if found is None:
            return f"{module} cannot be imported (the deep extra brings it)"
    for name in ("model.onnx", "tokenizer.json"):
        if not (model_dir / name).is_file():
            return f"no {name} in {model_dir}"
    return None


def model_id(model_dir: Path) -> str:
    """Names the exact weights, tokenizer and reading, for keying cached vectors."""
    digest = hashlib.sha256()
    for name in ("model.onnx", "tokenizer.json"):
        digest.update(hashlib.sha256((model_dir / name).read_bytes()).digest())
    return f"infile@{digest.hexdigest()[:16]}/{CODE_TOKENS}"


class InFileEncoder:
    """texts -> float32 unit vectors of 384 dimensions. ``run`` on an onnxruntime session is
    thread-safe, so one encoder serves every query of a process."""

    def __init__(self, model_dir: Path, threads: int | None = None) -> None:
        reason = unavailable(model_dir)
        if reason:
            raise RuntimeError(reason)
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()  # cut below, keeping the closing [SEP] as training did
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or max(1, min(os.cpu_count() or 1, 4))
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self.session.get_inputs()}
        self.name = model_id(model_dir)

    def encode(self, texts: list[str], max_len: int = CODE_TOKENS, batch_size: int = BATCH) -> np.ndarray:
        """float32 L2-normalised rows, shape (n, 384), in the order of ``texts``."""
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch([encoder_text(t[:MAX_CHARS]) for t in texts])
        ids = [e.ids[: max_len - 1] + e.ids[-1:] if len(e.ids) > max_len else e.ids for e in encodings]
        order = np.argsort([len(x) for x in ids], kind="stable")
        for start in range(0, len(order), max(1, batch_size)):
            rows = order[start : start + batch_size]
            out[rows] = self._run([ids[r] for r in rows])
        return out

    def _run(self, ids: list[list[int]]) -> np.ndarray:
        from ranklens.core.arms.deep.model import mean_pooled  # the deep arm's pooling, the trainer's

        return mean_pooled(self.session, self._inputs, ids)
