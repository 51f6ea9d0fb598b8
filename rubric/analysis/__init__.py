"""How the rubric model, LLM judges and baselines compare on the same pairs (the paper's §5, Tables 4-8).

Pure functions over decisions; reading the inputs and writing the report are at the edges:

- :mod:`rubric.analysis.systems`: the analysed pairs and the systems that decided them;
- :mod:`rubric.analysis.comparison`: Table 4, every system on the same pairs (a failure a miss, or the pair
  dropped for all: ``judge_failures``), and each on its own decided pairs;
- :mod:`rubric.analysis.transitivity`: Table 5 / §5.1, 3-cycles among triads of answers;
- :mod:`rubric.analysis.position`: Table 6, each judge in both presentation orders, flip rates;
- :mod:`rubric.analysis.verbosity`: Table 7, disagreements with people by answer length;
- :mod:`rubric.analysis.perturbation`: Table 8, the same systems on perturbed answers;
- :mod:`rubric.analysis.linkage`: a LINKAGE run's per-question correlations, beside Table 4;
- :mod:`rubric.analysis.evaluators`: the rubric model and each judge side by side (agreement, failure rate,
  cost per 1,000 pairs);
- :mod:`rubric.analysis.stats`: paired metric differences with a question-clustered bootstrap;
- :mod:`rubric.analysis.run`: read score/judge outputs and predictions files, run everything;
- :mod:`rubric.analysis.render`: Markdown and charts.

Every rate comes with a 95% CI from resampling questions.
"""

from rubric.analysis.comparison import (JUDGE_FAILURES, Comparison, Undecided, common_pairs, compare_systems,
                                        labelled_pairs, own_decided_rows, scorable, undecided_on)
from rubric.analysis.evaluators import EvaluatorRow, RunCost, evaluator_rows
from rubric.analysis.linkage import LinkageRun, LinkageScope, linkage_run, read_linkage_rows
from rubric.analysis.perturbation import Perturbation, PerturbationRow, perturbation_deltas
from rubric.analysis.position import Position, PositionRow, position_bias
from rubric.analysis.render import analysis_markdown, plot_perturbations, plot_position, plot_verbosity, write_analysis
from rubric.analysis.run import Analysis, LoadedInputs, analyze, load_inputs, parse_perturbed
from rubric.analysis.stats import CLASSES, MetricDelta, ab_metrics, metric_row, paired_metric_deltas
from rubric.analysis.systems import (ALWAYS_A, LONGER_WINS, PEOPLE, PairSet, System, baseline_systems, judge_systems,
                                     model_systems, people_system, predictions_systems)
from rubric.analysis.transitivity import Transitivity, TransitivityRow, Triad, classify_triad, find_triads, transitivity
from rubric.analysis.verbosity import Verbosity, VerbosityRow, bias_direction, verbosity_bias

from rubric.analysis.linkage import (
    LINKAGE_FILE, LINKAGE_COLUMNS,
)
from rubric.analysis.run import (
    ENCODER_PREDICTIONS_FILE,
)
from rubric.analysis.systems import (
    KINDS, UNDECIDED, ORDER_NAMES,
)
from rubric.analysis.transitivity import (
    shared_answer_wins_both, shared_answer_outcome,
)

__all__ = ["PairSet", "System", "judge_systems", "model_systems", "predictions_systems", "baseline_systems",
           "people_system", "LONGER_WINS", "ALWAYS_A", "PEOPLE",
           "Comparison", "Undecided", "labelled_pairs", "common_pairs", "compare_systems",
           "Position", "PositionRow", "position_bias",
           "Transitivity", "TransitivityRow", "Triad", "find_triads", "classify_triad", "transitivity",
           "Verbosity", "VerbosityRow", "verbosity_bias", "bias_direction",
           "Perturbation", "PerturbationRow", "perturbation_deltas",
           "LinkageRun", "LinkageScope", "linkage_run", "read_linkage_rows",
           "CLASSES", "MetricDelta", "ab_metrics", "metric_row", "paired_metric_deltas",
           "Analysis", "LoadedInputs", "load_inputs", "parse_perturbed", "analyze",
           "analysis_markdown", "plot_position", "plot_verbosity", "plot_perturbations", "write_analysis", 'LINKAGE_FILE', 'LINKAGE_COLUMNS', 'ENCODER_PREDICTIONS_FILE', 'KINDS', 'UNDECIDED', 'ORDER_NAMES', 'shared_answer_wins_both',
           'shared_answer_outcome', 'JUDGE_FAILURES', 'own_decided_rows', 'scorable', 'undecided_on',
           "EvaluatorRow", "RunCost", "evaluator_rows"]
