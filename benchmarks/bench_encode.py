"""Embedding CPU per chunk, this checkout against an older commit's ``core/embedding.py``
(``core/text/embedding.py`` since the source tree was grouped into packages).

    python benchmarks/bench_encode.py TREE [--against 2a86201] [--files 1500] [--rounds 3]

The chunks are what a cold build embeds: ``--files`` random files of TREE (seed 0; C, Python,
Go, Rust, Java, JavaScript, TypeScript sources) cut by ranklens's chunker, each chunk's
``document_text``. Both versions of ``core/embedding.py`` are loaded side by side in this
process (the older one from ``git show``) with the bundled model, and encode the chunks in
batches of 1,024 as the indexer's embedder does, in alternating rounds, each round with an
empty word cache, on one tokenizer thread (``TOKENIZERS_PARALLELISM=false``: during a cold
build the chunking workers hold the other core). Printed: each version's median CPU seconds
and microseconds a chunk, the ratio, and whether every vector is identical (it must be).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ["TOKENIZERS_PARALLELISM"] = "false"  # before tokenizers is imported

import numpy as np

from ranklens.core.arms.dense import document_text
from ranklens.core.chunking import chunk_file
from ranklens.core.text.embedding import DEFAULT_MODEL_DIR

HERE = Path(__file__).resolve().parent.parent
SUFFIXES = (".c", ".h", ".py", ".go", ".rs", ".java", ".js", ".ts")


def chunk_texts(tree: Path, files: int) -> list[str]:
    paths = sorted(p for p in tree.rglob("*") if p.suffix in SUFFIXES and p.is_file())
    random.Random(0).shuffle(paths)
    texts: list[str] = []
    for path in paths[:files]:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        texts += [document_text(c) for c in chunk_file(str(path.relative_to(tree)), text)]
    return texts


def load_version(name: str, source: str):
    folder = Path(tempfile.mkdtemp(prefix="ranklens-encode-"))
    module_path = folder / f"embedding_{name}.py"
    module_path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"ranklens.core.embedding_{name}", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load_model(str(DEFAULT_MODEL_DIR))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--against", default="2a86201", help="older commit (default: before the word cache)")
    parser.add_argument("--files", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    old = subprocess.run(
        ["git", "show", f"{args.against}:core/embedding.py"], cwd=HERE, capture_output=True, text=True, check=True
    ).stdout
    models = {"now": load_version("now", (HERE / "core" / "text" / "embedding.py").read_text(encoding="utf-8"))}
    models[args.against] = load_version("old", old)
    texts = chunk_texts(args.tree, args.files)
    print(f"{len(texts)} chunks of {args.files} files of {args.tree}, {args.rounds} rounds")
    cpu: dict[str, list[float]] = {name: [] for name in models}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for name, model in models.items():
            if getattr(model, "_words", None) is not None:
                model._words.cache = {}  # every round starts cold, as a build does
            start = time.process_time()
            out = [model.encode(texts[i : i + 1024]) for i in range(0, len(texts), 1024)]
            cpu[name].append(time.process_time() - start)
            vectors[name] = np.concatenate(out)
    for name, times in cpu.items():
        median = statistics.median(times)
        print(f"{name:>8}: {median:6.2f} s CPU, {median / len(texts) * 1e6:6.1f} us a chunk")
    now, then = (statistics.median(cpu[n]) for n in models)
    print(f"ratio now / {args.against}: x{now / then:.2f}")
    same = np.array_equal(vectors["now"], vectors[args.against])
    print(f"vectors identical: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
