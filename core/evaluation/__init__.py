"""Retrieval evaluation and fusion tuning over a labeled query file.

Modules, in the order a run uses them: :mod:`~core.evaluation.labels` (the labeled query
file, JSONL or a benchmark annotation file, read and validated into :class:`LabeledQuery`),
:mod:`~core.evaluation.metrics` (hit@k, file hit, MRR, nDCG: what locating a gold target
means), :mod:`~core.evaluation.runner` (every query once per arm, rankings cached),
:mod:`~core.evaluation.report` (figures per arm and kind, the confidence calibration) and
:mod:`~core.evaluation.tuning` (weights and k by coordinate ascent, cross-validated).

Each query is run once per arm through :meth:`core.engine.Engine.search` with the run's
:class:`core.query.settings.FusionSettings`; every arm is scored on its own top 10 as a
single-retriever query shows it (its pool re-ordered by the priors when the ranking stage is
on) and the fused list on the consolidated hits. Tuning re-fuses the cached rankings through
the engine's own fusion (no arm runs again), so it optimises the list a user sees.
"""

from .labels import (
    MAX_FILE_BYTES,
    EvalFileError,
    LabeledQuery,
    Notify,
    Span,
    SpanLike,
    load_queries,
    parse_annotations,
    parse_queries,
    rebase_gold,
)
from .metrics import (
    MAX_SPAN_LINES,
    METRICS,
    TOP_K,
    file_hit_at_k,
    first_hit_rank,
    hit_at_k,
    locates,
    mean,
    metric_names,
    metrics_for,
    ndcg_at_k,
    overlaps,
    percentile,
    query_metrics,
    reciprocal_rank,
)
from .report import FUSED, NO_KIND, calibration, kinds_summary, report
from .runner import EvalRun, QueryRun, run_queries
from .tuning import (
    DEFAULT_WEIGHT,
    FOLDS,
    K_GRID,
    ROUNDS,
    SEED,
    WEIGHT_GRID,
    Setting,
    coordinate_ascent,
    folds,
    tune,
)

__all__ = [
    "DEFAULT_WEIGHT",
    "FOLDS",
    "FUSED",
    "K_GRID",
    "MAX_FILE_BYTES",
    "MAX_SPAN_LINES",
    "METRICS",
    "NO_KIND",
    "ROUNDS",
    "SEED",
    "TOP_K",
    "WEIGHT_GRID",
    "EvalFileError",
    "EvalRun",
    "LabeledQuery",
    "Notify",
    "QueryRun",
    "Setting",
    "Span",
    "SpanLike",
    "calibration",
    "coordinate_ascent",
    "file_hit_at_k",
    "first_hit_rank",
    "folds",
    "hit_at_k",
    "kinds_summary",
    "load_queries",
    "locates",
    "mean",
    "metric_names",
    "metrics_for",
    "ndcg_at_k",
    "overlaps",
    "parse_annotations",
    "parse_queries",
    "percentile",
    "query_metrics",
    "rebase_gold",
    "reciprocal_rank",
    "report",
    "run_queries",
    "tune",
]
