"""The preference model on rubric differences, and how it is evaluated.

``model`` (the estimator), ``selection`` (GroupKFold C, ablation, calibration, weight CIs),
``metrics`` (clustered bootstrap), ``report``, ``evaluate``, ``predict``, ``transfer``,
``aspects`` (per-aspect agreement), ``readable`` (the short readable view of a run: rubric vectors,
weights, why a pair's winner wins), ``service`` (the HTTP service's limits, item checks and response
rows: rubric vectors and the model's predictions, from the same table functions as the batch job).

This is the package's public face: other packages import from here, not from its modules.
"""

from rubric.preference.metrics import (
    METRICS, MetricRow, evaluate_predictions, question_bootstrap_weights, ClusteredMean, clustered_mean,
    paired_accuracy_delta, brier_score, ReliabilityBin, reliability_bins, longer_answer_wins, always_a,
    per_question_kendall,
)
from rubric.preference.model import (
    PreferenceModel,
)
from rubric.preference.selection import (
    C_GRID, question_folds, CVResult, cross_validate_C, AblationRow, drop_one_ablation, Calibration,
    calibration, WeightCIs, bootstrap_weight_cis, MAX_DEGENERATE_SHARE,
)
from rubric.preference.report import (
    MIN_QUESTIONS_FOR_CI, MIN_PAIRS_FOR_CI, IN_SAMPLE_SPLITS, IN_SAMPLE_MARK, metrics_markdown, ci_warning,
    weight_ci_cell, weight_ci_note, CHART_WIDTH, CHART_MIN_FONT, chart_label, legend_beside,
    weights_markdown, selection_markdown, ablation_markdown, calibration_markdown, render_report,
    plot_weights, plot_reliability, column_kind,
)
from rubric.preference.aspects import (
    OVERALL, AspectAgreement, agreement, aspect_agreement, judgements_of, aspect_agreement_from_table,
    agreement_markdown,
)
from rubric.preference.evaluate import (
    read_output_table, read_pairs, fit_model, model_inputs, Evaluation, model_table_differences,
    check_model_table, evaluate_model, write_report, saved_weight_ci, pairs_fingerprint, MODEL_ROW,
    STYLE_CONTROLLED_ROW,
)
from rubric.preference.predict import (
    PREDICTIONS_META_KEY, predict_pairs, write_predictions,
)
from rubric.preference.transfer import (
    TrainedModel, TransferCell, Transfer, labeled_pairs, transfer, transfer_markdown,
)
from rubric.preference.core import (
    check_core_params, fit_core, restore_core,
)

from rubric.preference.evaluate import (
    model_row_names,
)

from rubric.preference.fitted_on import (
    FITTED_ON_KEY, IDENTITY_COLUMNS, pairs_table_digest, fitted_on_record, SampleStatus, sample_status, question_overlap,
    PARTLY_IN_SAMPLE_MARK,
)

from rubric.preference.readable import (
    answer_vectors_markdown, explained_pairs, pair_explanations_markdown, readable_view, people_markdown,
)

from rubric.preference.service import (
    ServiceLimits, check_body_size, request_items, answer_item, preference_pair, cache_key, score_rows, prefer_rows,
    SERVE_SPLIT,
)

from rubric.preference.encoder_baseline import (
    EncoderPairs, encoder_pairs, pair_differences, fit_encoder_head, encoder_test_metrics, encoder_predictions_table,
)
__all__ = [
    "ServiceLimits", "check_body_size", "request_items", "answer_item", "preference_pair", "cache_key", "score_rows", "prefer_rows", "SERVE_SPLIT",
    "answer_vectors_markdown", "explained_pairs", "pair_explanations_markdown", "readable_view", "people_markdown",
    "METRICS", "MetricRow", "evaluate_predictions", "question_bootstrap_weights", "ClusteredMean",
    "clustered_mean", "paired_accuracy_delta", "brier_score", "ReliabilityBin", "reliability_bins",
    "longer_answer_wins", "always_a", "per_question_kendall", "PreferenceModel", "C_GRID", "question_folds",
    "CVResult", "cross_validate_C", "AblationRow", "drop_one_ablation", "Calibration", "calibration",
    "WeightCIs", "bootstrap_weight_cis", "MIN_QUESTIONS_FOR_CI", "MIN_PAIRS_FOR_CI", "IN_SAMPLE_SPLITS",
    "IN_SAMPLE_MARK", "metrics_markdown", "ci_warning", "weights_markdown", "selection_markdown",
    "ablation_markdown", "calibration_markdown", "render_report", "plot_weights", "plot_reliability",
    "OVERALL", "AspectAgreement", "agreement", "aspect_agreement", "judgements_of",
    "aspect_agreement_from_table", "agreement_markdown", "read_output_table", "read_pairs", "fit_model",
    "model_inputs", "Evaluation", "model_table_differences", "check_model_table", "evaluate_model",
    "write_report", "saved_weight_ci", "pairs_fingerprint", "MODEL_ROW", "STYLE_CONTROLLED_ROW",
    "PREDICTIONS_META_KEY", "predict_pairs", "write_predictions", "TrainedModel", "TransferCell", "Transfer",
    "labeled_pairs", "transfer", "transfer_markdown", "check_core_params", "fit_core", "restore_core", 'model_row_names', 'FITTED_ON_KEY', 'IDENTITY_COLUMNS', 'pairs_table_digest', 'fitted_on_record', 'SampleStatus', 'sample_status', 'question_overlap',
    "weight_ci_cell", "weight_ci_note", "MAX_DEGENERATE_SHARE", "PARTLY_IN_SAMPLE_MARK", "CHART_WIDTH",
    "CHART_MIN_FONT", "chart_label", "legend_beside", "column_kind", "EncoderPairs", "encoder_pairs", "pair_differences",
    "fit_encoder_head", "encoder_test_metrics", "encoder_predictions_table",
]
