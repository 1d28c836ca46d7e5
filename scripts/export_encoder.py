"""Export a trained in-file encoder (``scripts/train_encoder.py``) as int8 ONNX.

The transformer's ``last_hidden_state`` is exported through a wrapper that passes keyword
arguments (transformers 5 no longer takes them by position), with dynamic batch and sequence
axes, then quantized to int8 with per-channel weights (per-tensor loses cosine 0.99 -> 0.94
against the float vectors). Written to ``--out``: ``model.onnx``, ``tokenizer.json`` and
``reference.json`` (the pooled vectors of a few fixed texts, which the test suite compares
the shipped model's output against). Needs the trainer's venv (torch, transformers, onnx,
onnxruntime).

    /work/torchenv/bin/python scripts/export_encoder.py /tmp/encA/snap-4009 --out /tmp/onnx-4k
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "scripts"))

from train_encoder import CODE_TOKENS, Encoder, encoder_text  # noqa: E402

#: Texts whose vectors ``reference.json`` keeps (a question, code, and the two in one file).
REFERENCE_TEXTS = (
    "how are compressed response bodies unpacked",
    "def read_chunked(self, amt=None):\n    # Read the body one chunk at a time\n    while True:\n        line = self._fp.readline()",
    "func (c *Context) Copy() *Context {\n\tcp := Context{writermem: c.writermem}\n\treturn &cp\n}",
)


def export(model_dir: Path, out: Path) -> None:
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    enc = Encoder(model_dir)
    model = enc.model.eval()

    class Wrapper(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    sample = enc.tok(["a question", "some longer code text here"], padding=True, return_tensors="pt")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        torch.onnx.export(
            Wrapper(model),
            (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]),
            str(fp32),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                n: {0: "batch", 1: "sequence"}
                for n in ("input_ids", "attention_mask", "token_type_ids", "last_hidden_state")
            },
            opset_version=17,
            dynamo=False,
        )
        quantize_dynamic(str(fp32), str(out / "model.onnx"), weight_type=QuantType.QInt8, per_channel=True)
    enc.tok.save_pretrained(tmp_tok := Path(tempfile.mkdtemp()))
    shutil.copy(tmp_tok / "tokenizer.json", out / "tokenizer.json")
    shutil.rmtree(tmp_tok)
    float_vecs = enc.encode(list(REFERENCE_TEXTS), CODE_TOKENS)
    int8_vecs = onnx_encode(out, list(REFERENCE_TEXTS))
    cos = (float_vecs * int8_vecs).sum(axis=1)
    print(f"int8 against float: cosine {', '.join(f'{c:.4f}' for c in cos)}")
    (out / "reference.json").write_text(
        json.dumps({"texts": list(REFERENCE_TEXTS), "vectors": np.round(int8_vecs, 6).tolist()}) + "\n"
    )


def onnx_encode(model_dir: Path, texts: list[str]) -> np.ndarray:
    """The exported model's vectors, the way :class:`evals.infile_encoder.InFileEncoder` makes them."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    session = ort.InferenceSession(str(model_dir / "model.onnx"), providers=["CPUExecutionProvider"])
    rows = []
    for t in texts:
        found = tok.encode(encoder_text(t)).ids
        found = found[: CODE_TOKENS - 1] + found[-1:] if len(found) > CODE_TOKENS else found
        ids = np.array([found], dtype=np.int64)
        mask = np.ones_like(ids)
        hidden = session.run(
            ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        v = hidden[0].mean(axis=0)
        rows.append(v / np.linalg.norm(v))
    return np.stack(rows).astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    export(args.model_dir, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
