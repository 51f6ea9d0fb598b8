"""Does a preference model trained on one data set hold on another? The transfer table.

For every training set (a ``score`` output), the model is fitted on its train split with
:func:`rubric.preference.evaluate.fit_model`; it is then evaluated on the test split of every evaluation set.
The same output on both sides is the in-distribution cell (held-out questions of the same data);
any other is a transfer cell. Every cell gives the model's accuracy with its question-clustered 95%
CI and, on the same pairs, the accuracy of "longer answer wins", which a model must beat to have
learned more than length.

With style covariates (the default, as in ``fit``; see :mod:`rubric.tables.style`) the model is fitted with
the answers' length and markdown differences beside the rubrics, and a second table gives the same
cells style-controlled: predicted with those differences set to zero, so a model that transfers only
through length shows it there (Chatbot Arena's style control).

Nothing is combined that was made differently: a cell whose evaluation table made the model's
features differently from its training table (``rubric.preference.evaluate.model_table_differences``) shows
"provenance differs: <first difference>" instead of a number. What a cell is comes from question
overlap (:func:`rubric.preference.sample_status`, the model's recorded training questions), not from the
sets' names: in-distribution (the model's own table, none of its training questions), transfer
(another table, none of them), or IN-SAMPLE / PARTLY IN-SAMPLE when evaluated pairs' questions were
trained on; a partly overlapping cell also gives the accuracy on the other pairs.

Pairs without a human judgement (``label`` null) are neither fitted nor evaluated; the table counts
them per set.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rubric.errors import ConfigError, ProvenanceError
from rubric.preference.evaluate import fit_model, model_inputs, model_table_differences
from rubric.tables import DEFAULT_MISSING
from rubric.preference.fitted_on import SampleStatus, sample_status
from rubric.preference.metrics import MetricRow, evaluate_predictions, longer_answer_wins
from rubric.preference.model import PreferenceModel
from rubric.preference.report import MIN_PAIRS_FOR_CI, MIN_QUESTIONS_FOR_CI

__all__ = ["TrainedModel", "TransferCell", "Transfer", "labeled_pairs", "transfer", "transfer_markdown"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainedModel:
    """The model fitted on one training set's train split, or why there is none.

    Attributes:
        name: the training set's name.
        model: the fitted model; None when the fit failed.
        n_pairs: training pairs the model was fitted on (ties dropped unless modelled).
        n_questions: distinct questions among them.
        problem: why no model was fitted (no rubric left, mixed provenance, no train pairs), else None.
        style_note: why the model has no style covariates although they were asked for (constant on
            the train split), else "".
    """

    name: str
    model: PreferenceModel | None
    n_pairs: int = 0
    n_questions: int = 0
    problem: str | None = None
    style_note: str = ""


@dataclass(frozen=True)
class TransferCell:
    """One (training set, evaluation set) cell.

    Attributes:
        train: the training set's name.
        eval: the evaluation set's name.
        in_distribution: True when the evaluation table is the model's own training table (by content).
        model: the model's metrics on the evaluation set's test split; None when ``problem``.
        style_controlled: the same model's metrics on the same pairs with its style covariates set to
            zero; None when ``problem`` or when the model has no style covariates.
        longer: "longer answer wins" on the same pairs; None when ``problem``.
        problem: why the cell has no number ("provenance differs: ...", no usable test pairs,
            no model), else None.
        shared_questions: evaluated questions that are among the model's training questions (their pairs
            are not out of sample).
        sample: how the evaluated pairs' questions stand to the model's training questions.
        outside / outside_longer: when only some of them were trained on, the model and "longer answer
            wins" on the others; else None.
    """

    train: str
    eval: str
    in_distribution: bool
    model: MetricRow | None = None
    style_controlled: MetricRow | None = None
    longer: MetricRow | None = None
    problem: str | None = None
    shared_questions: int = 0
    sample: SampleStatus | None = None
    outside: MetricRow | None = None
    outside_longer: MetricRow | None = None


@dataclass(frozen=True)
class Transfer:
    """The whole transfer table.

    Attributes:
        train: training set names, in row order.
        evals: evaluation set names, in column order.
        models: training set name -> its fitted model (or why none).
        cells: (train name, eval name) -> cell.
        n_unlabeled: set name -> pairs without a human judgement, left out of fit and evaluation.
        split: the evaluated split of every evaluation set.
        style: whether the models were asked to fit style covariates.
    """

    train: list[str]
    evals: list[str]
    models: dict[str, TrainedModel]
    cells: dict[tuple[str, str], TransferCell]
    n_unlabeled: dict[str, int] = field(default_factory=dict)
    split: str = "test"
    style: bool = True


def labeled_pairs(pairs: pa.Table) -> tuple[pa.Table, int]:
    """The rows of ``pairs`` with a human judgement, and how many rows had none.

    The schema metadata (rubrics, provenance) is kept.

    Raises:
        ConfigError: the table has no ``label`` column.
    """
    if "label" not in pairs.column_names:
        raise ConfigError("the pairs table has no 'label' column")
    kept = pairs.filter(pc.is_valid(pairs.column("label")))
    return kept, pairs.num_rows - kept.num_rows


def _fit(name: str, pairs: pa.Table, *, C: float, ties: str, style: bool, missing: str) -> TrainedModel:
    try:
        model, dm = fit_model(pairs, split="train", C=C, ties=ties, style=style, missing=missing)
    except (ConfigError, ProvenanceError) as e:
        log.warning("no model for training set %s: %s", name, e)
        return TrainedModel(name=name, model=None, problem=str(e))
    note = ""
    if style and not model.style_features_:
        # fit_model records why each style covariate was left out (constant on the split)
        reasons = model.metadata_.get("style_excluded", {})
        note = "; ".join(f"{k} {v}" for k, v in reasons.items()) or "no style covariate was kept"
    return TrainedModel(name=name, model=model, n_pairs=len(dm.y), n_questions=len(set(dm.question_id)),
                        style_note=note)


def _cell(trained: TrainedModel, eval_name: str, pairs: pa.Table, *, split: str, n_boot: int,
          seed: int) -> TransferCell:
    base = {"train": trained.name, "eval": eval_name, "in_distribution": trained.name == eval_name}
    model = trained.model
    if model is None:
        return TransferCell(**base, problem="no model: the training set could not be fitted")
    differences = model_table_differences(model, pairs)
    if differences:
        more = f" (and {len(differences) - 1} more)" if len(differences) > 1 else ""
        return TransferCell(**base, problem=f"provenance differs: {differences[0]}{more}")
    try:
        dm = model_inputs(model, pairs, split=split)
    except ConfigError as e:
        return TransferCell(**base, problem=str(e))
    if len(dm.y) == 0:
        return TransferCell(**base, problem=f"no usable {split} pairs (ties dropped: {dm.n_ties_dropped}, "
                                            f"missing rubric values: {dm.n_missing_rows})")

    sample = sample_status(model, pairs, split, question_ids=dm.question_id)
    if sample.same_table is not None:
        base["in_distribution"] = sample.same_table

    def row(system: str, predictions, keep=None) -> MetricRow:
        keep = np.ones(len(dm.y), dtype=bool) if keep is None else keep
        return evaluate_predictions(system, dm.y[keep], np.asarray(predictions, dtype=object)[keep],
                                    groups=dm.question_id[keep], n_boot=n_boot, seed=seed)

    predicted, longer = model.predict(dm.X), longer_answer_wins(dm.n_words_a, dm.n_words_b)
    controlled = (row("model, style-controlled", model.predict(dm.X, style_controlled=True))
                  if model.style_features_ else None)
    outside = outside_longer = None
    if sample.partial:
        keep = sample.outside(dm.question_id)
        outside, outside_longer = row("model", predicted, keep), row("longer answer wins", longer, keep)
    return TransferCell(**base, model=row("model", predicted), style_controlled=controlled,
                        longer=row("longer answer wins", longer), shared_questions=sample.n_overlap_questions,
                        sample=sample, outside=outside, outside_longer=outside_longer)


def transfer(train: Mapping[str, pa.Table], evals: Mapping[str, pa.Table], *, C: float = 1.0, ties: str = "drop",
             style: bool = True, split: str = "test", n_boot: int = 1000, seed: int = 0,
             missing: str = DEFAULT_MISSING) -> Transfer:
    """Fit on each training set's train split and evaluate on each evaluation set's ``split``.

    A set named on both sides is the same set: its cell is in-distribution. Give the same name
    only to the same table.

    Args:
        train: training set name -> its pairs table.
        evals: evaluation set name -> its pairs table.
        C: inverse regularisation strength of the preference model.
        ties: "drop" or "three_way" (see :class:`rubric.preference.model.PreferenceModel`).
        style: fit with the style covariates (length and markdown differences) and report the cells
            style-controlled too; a training table written without style counts then cannot be fitted.
        split: the evaluated split of every evaluation set ("test"; "dev" while choosing settings).
        n_boot: bootstrap replicates per cell.
        seed: bootstrap seed.
        missing: how each model reads a rubric missing on one answer (:mod:`rubric.tables.missing`).

    Returns:
        Every cell, with a number or the reason it has none.

    Raises:
        ConfigError: no training or no evaluation set, a table without a label column, or a
            split other than "dev" or "test" (the train split is what the model is fitted on).
    """
    if not train or not evals:
        raise ConfigError("need at least one training set and one evaluation set")
    if split not in ("dev", "test"):
        raise ConfigError(f"'split' must be 'dev' or 'test' (the model is fitted on 'train'), got {split!r}")
    tables: dict[str, pa.Table] = {}
    n_unlabeled: dict[str, int] = {}
    for name, table in [*train.items(), *evals.items()]:
        if name not in tables:
            tables[name], n_unlabeled[name] = labeled_pairs(table)
            if n_unlabeled[name]:
                log.info("%s: %d pairs without a human judgement left out", name, n_unlabeled[name])
    models = {name: _fit(name, tables[name], C=C, ties=ties, style=style, missing=missing) for name in train}
    cells = {}
    for t in train:
        for e in evals:
            cells[(t, e)] = _cell(models[t], e, tables[e], split=split, n_boot=n_boot, seed=seed)
    return Transfer(train=list(train), evals=list(evals), models=models, cells=cells, n_unlabeled=n_unlabeled,
                    split=split, style=style)


def _escape(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _ci(row: MetricRow) -> str:
    lo, hi = row.ci["accuracy"]
    return "n/a" if math.isnan(lo) or math.isnan(hi) else f"{lo:.3f}, {hi:.3f}"


def _cell_text(cell: TransferCell, *, controlled: bool = False) -> tuple[str, bool]:
    """The cell's Markdown text (the model as fitted, or style-controlled), and whether its CI rests on
    too few questions or pairs."""
    m, lw = (cell.style_controlled if controlled else cell.model), cell.longer
    if cell.problem is not None or cell.model is None or lw is None:
        return _escape(cell.problem or "no result"), False
    if m is None:
        return "no style covariates in this model", False
    small = m.n_questions < MIN_QUESTIONS_FOR_CI or m.n < MIN_PAIRS_FOR_CI
    text = (f"{m.values['accuracy']:.3f} [{_ci(m)}]{' †' if small else ''}; longer answer "
            f"{lw.values['accuracy']:.3f}; {m.n} pairs, {m.n_questions} questions")
    sample = cell.sample
    if sample is not None and sample.in_sample:
        if sample.partial:
            text += (f"; **PARTLY IN-SAMPLE: {sample.n_overlap} of {sample.n_pairs} pairs ({sample.n_overlap_questions} "
                     "questions) have a training question**")
            o, ol = cell.outside, cell.outside_longer
            if not controlled and o is not None and ol is not None:
                small |= o.n_questions < MIN_QUESTIONS_FOR_CI or o.n < MIN_PAIRS_FOR_CI
                text += (f"; on the {o.n} others ({o.n_questions} questions): {o.values['accuracy']:.3f} [{_ci(o)}], "
                         f"longer answer {ol.values['accuracy']:.3f}")
        else:
            text += "; **IN-SAMPLE: every pair's question is a training question**"
    elif cell.in_distribution:
        text += "; in-distribution"
    elif sample is not None and sample.kind == "unrecorded":
        text += "; training questions not recorded: overlap unknown"
    return text, small


def _table(result: Transfer, *, controlled: bool) -> list[str]:
    lines = ["| trained on \\ evaluated on | " + " | ".join(_escape(e) for e in result.evals) + " |",
             "|---|" + "---|" * len(result.evals)]
    any_small = False
    for t in result.train:
        cells = []
        for e in result.evals:
            text, small = _cell_text(result.cells[(t, e)], controlled=controlled)
            any_small |= small
            cells.append(text)
        lines.append(f"| {_escape(t)} | " + " | ".join(cells) + " |")
    if any_small:
        lines += ["", f"† fewer than {MIN_QUESTIONS_FOR_CI} questions or {MIN_PAIRS_FOR_CI} pairs: the "
                      "question-clustered CI is unreliable."]
    return lines


def transfer_markdown(result: Transfer, *, title: str = "Transfer of the preference model") -> str:
    """The transfer table as Markdown: rows are training sets, columns evaluation sets.

    The models as fitted come first, then (when they have style covariates) the same cells
    style-controlled; a last table gives what each model was fitted on.
    """
    lines = [f"# {title}", "",
             f"Each row's model is fitted on that set's **train** split; each column is evaluated on its "
             f"**{result.split}** split. A cell gives the model's accuracy [question-clustered 95% CI], then "
             "\"longer answer wins\" on the same pairs. Whether a cell is out of sample is decided by question "
             "overlap with the model's training questions, not by the sets' names: a cell marked IN-SAMPLE or "
             "PARTLY IN-SAMPLE holds pairs whose question was trained on (a partly overlapping cell adds the "
             "accuracy on the other pairs); otherwise the model's own table is in-distribution and any other table "
             "is transfer.", "",
             "## The models as fitted" + (" (rubrics and style covariates)" if result.style else ""), ""]
    lines += _table(result, controlled=False)
    if any(m.model is not None and m.model.style_features_ for m in result.models.values()):
        lines += ["", "## Style-controlled", "",
                  "The same models and pairs, predicted with the style covariates (length and markdown "
                  "differences) set to zero: what the rubrics predict when the answers are equally long and "
                  "equally formatted.", ""]
        lines += _table(result, controlled=True)
    elif result.style:
        lines += ["", "## Style-controlled", "", "No model kept a style covariate (see the table below): there is "
                  "no style-controlled figure."]
    lines += ["", "## The models", "",
              "| trained on | train pairs | train questions | features | style covariates | "
              "unlabeled pairs left out |",
              "|---|---:|---:|---|---|---:|"]
    for t in result.train:
        m = result.models[t]
        if m.model is None:
            lines.append(f"| {_escape(t)} | - | - | not fitted: {_escape(m.problem or '')} | - | "
                         f"{result.n_unlabeled.get(t, 0)} |")
            continue
        style = ", ".join(m.model.style_features_) or (f"none: {_escape(m.style_note)}" if m.style_note
                                                       else "none (--no-style)")
        lines.append(f"| {_escape(t)} | {m.n_pairs} | {m.n_questions} | {', '.join(m.model.features_)} | "
                     f"{style} | {result.n_unlabeled.get(t, 0)} |")
    only_eval = [e for e in result.evals if e not in result.models and result.n_unlabeled.get(e)]
    if only_eval:
        lines += ["", "Unlabeled pairs left out of evaluation sets: "
                  + ", ".join(f"{_escape(e)} {result.n_unlabeled[e]}" for e in only_eval) + "."]
    return "\n".join(lines) + "\n"
