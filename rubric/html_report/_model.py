"""The preference model's section and the pair browser's data.

The section is :func:`rubric.preference.evaluate.evaluate_model`'s :class:`~rubric.preference.evaluate.Evaluation` (the
object ``lfqa-rubric evaluate`` renders as Markdown), with the same defaults, and the weights and
reliability charts are :mod:`rubric.preference.report`'s own plots. The pair browser joins a score output's
pairs and answers with :func:`rubric.preference.predict.predict_pairs` (P(a) and per-column contributions) and
the judges' verdicts in both orders from ``judgments.parquet``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from rubric.preference import Evaluation, evaluate_model, read_pairs, saved_weight_ci
from rubric.tables import table_rubrics
from rubric.html_report._charts import plot_accuracy, svg_of
from rubric.preference import PreferenceModel
from rubric.preference import (ci_warning, column_kind, plot_reliability, plot_weights, weight_ci_cell,
                                weight_ci_note)

__all__ = ["ModelSection", "model_section", "pair_browser_data"]


@dataclass(frozen=True)
class ModelSection:
    """A model evaluated on one score output.

    Attributes:
        model_path: the model file.
        folder: the score output it was evaluated on.
        evaluation: the result object ``evaluate`` renders.
        model: the model.
        weights: column -> weight (binary models), else None.
        weight_ci: the saved weight CIs (``{"ci": {column: (lo, hi)}, "n_boot": ..., "seed": ...}``) or None.
        in_sample: why the evaluated pairs are (partly) in-sample, or "" (decided by question overlap,
            ``Evaluation.sample``, as ``evaluate`` decides it).
        mark: what the in-sample rows carry (" (IN-SAMPLE)", " (PARTLY IN-SAMPLE)" or "").
        warning: the "CIs are unreliable" line, or None.
        weight_cells: column -> its CI as the Markdown report prints it; weight_note: the line above them.
        accuracy_svg / weights_svg / calibration_svg: the charts.
        people: rubric column -> its version's measured agreement with people's ratings of its aspect
            (``rubric.scoring.agreement_line``), shown beside its weight.
        kinds: column -> what it is (rubric, signal, missing-value indicator, style covariate).
    """

    model_path: str
    folder: str
    evaluation: Evaluation
    model: PreferenceModel
    weights: dict[str, float] | None
    weight_ci: dict | None
    in_sample: str
    warning: str | None
    weights_svg: str
    calibration_svg: str
    accuracy_svg: str = ""
    mark: str = ""
    weight_cells: dict[str, str] | None = None
    weight_note: str = ""
    people: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)


def model_section(model_path: str | Path, folder: str | Path, *, split: str = "test", n_boot: int = 1000,
                  seed: int = 0, allow_provenance_mismatch: bool = False) -> ModelSection:
    """Evaluate the model on the folder's pairs exactly as ``lfqa-rubric evaluate`` does, and draw its charts.

    Raises:
        ProvenanceError, ConfigError, InputError: as :func:`rubric.preference.evaluate.evaluate_model` and the readers.
    """
    model = PreferenceModel.from_json(model_path)
    pairs = read_pairs(folder)
    ev = evaluate_model(model, pairs, split=split, n_boot=n_boot, seed=seed,
                        allow_provenance_mismatch=allow_provenance_mismatch)
    meta = model.metadata_ if isinstance(model.metadata_, dict) else {}
    weight_ci = saved_weight_ci(meta.get("weight_ci"), model)
    weights = weights_svg = None
    if list(model.classes_) == ["a", "b"]:
        weights = model.weights()
        weights_svg = svg_of(plot_weights, weights, ci=weight_ci["ci"] if weight_ci else None,
                             style_features=model.style_features_,
                             unreliable=weight_ci.get("unreliable") or () if weight_ci else ())
    cal_svg = svg_of(plot_reliability, ev.calibration.bins) if ev.calibration is not None else ""
    sample = ev.sample
    in_sample = ""
    if sample is not None and sample.in_sample:
        in_sample = ("some pairs' questions are the model's training questions: partly in-sample" if sample.partial
                     else "the model's training pairs: in-sample")
    return ModelSection(model_path=str(model_path), folder=str(folder), evaluation=ev, model=model, weights=weights,
                        weight_ci=weight_ci, in_sample=in_sample, warning=ci_warning(ev.rows),
                        weights_svg=weights_svg or "", calibration_svg=cal_svg,
                        accuracy_svg=plot_accuracy(ev.rows, title=f"{split} split: the model beside its baselines"),
                        mark=sample.mark if sample is not None else "",
                        weight_cells={c: weight_ci_cell(c, weight_ci) for c in weights} if weights else None,
                        weight_note=weight_ci_note(weight_ci) if weight_ci else "",
                        people=_people(model), kinds={c: column_kind(c, model.style_features_) for c in model.columns_})


def _people(model: PreferenceModel) -> dict[str, str]:
    from rubric.scoring import agreement_line

    prov = model.provenance if isinstance(model.provenance, dict) else {}
    return {f: agreement_line(prov[f]["rubric_version"], f) for f in model.features_
            if isinstance(prov.get(f), dict) and prov[f].get("rubric_version")}


def _f(x) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 4)


def pair_browser_data(pairs: pa.Table, answers: pa.Table | None, *, predictions: pa.Table | None = None,
                      judgments: list[pa.Table] = ()) -> dict:
    """Everything the pair browser and the answer table show, as plain JSON-able values.

    Texts are stored once (questions and answers by id); a pair refers to them.

    Args:
        pairs: a score output's pairs table.
        answers: its answers table (the texts), or None.
        predictions: :func:`rubric.preference.predict.predict_pairs` over every pair, or None without a model.
        judgments: judge outputs' tables (``judgments.parquet``) over the same pairs.
    """
    rubrics = table_rubrics(pairs)
    cols = pairs.to_pydict()
    pred = {}
    contrib_cols: list[str] = []
    if predictions is not None:
        p = predictions.to_pydict()
        contrib_cols = [c[len("contrib_"):] for c in predictions.column_names if c.startswith("contrib_")]
        for i, pid in enumerate(p["pair_id"]):
            pred[pid] = {"p_a": _f(p["p_a"][i]), "pred": p["predicted"][i],
                         "p_sc": _f(p["p_a_style_controlled"][i]) if "p_a_style_controlled" in p else None,
                         "contrib": [_f(p[f"contrib_{c}"][i]) for c in contrib_cols],
                         "icpt": _f(p["intercept"][i]) if "intercept" in p else None, "err": p["error"][i]}
    verdicts: dict[str, dict] = {}
    judges: list[str] = []
    for t in judgments:
        d = t.select(["pair_id", "judge", "order", "decision", "p_a", "decision_debiased", "error"]).to_pydict()
        for pid, judge, order, dec, p_a, deb, err in zip(*d.values()):
            if judge not in judges:
                judges.append(judge)
            v = verdicts.setdefault(pid, {}).setdefault(judge, {})
            v[order] = [dec, _f(p_a), err]
            if order == "ab":
                v["deb"] = deb
    questions: dict[str, str] = {}
    rows = []
    for i, pid in enumerate(cols["pair_id"]):
        questions.setdefault(cols["question_id"][i], cols["question"][i])
        rows.append({"id": pid, "qid": cols["question_id"][i], "split": cols["split"][i], "label": cols["label"][i],
                     "a": cols["answer_id_a"][i], "b": cols["answer_id_b"][i],
                     "wa": cols["n_words_a"][i], "wb": cols["n_words_b"][i],
                     "ra": [_f(cols[f"a_{r}"][i]) for r in rubrics], "rb": [_f(cols[f"b_{r}"][i]) for r in rubrics],
                     **({"m": pred[pid]} if pid in pred else {}),
                     **({"j": verdicts[pid]} if pid in verdicts else {})})
    texts: dict[str, str] = {}
    answer_rows = []
    if answers is not None:
        a = answers.to_pydict()
        present = [r for r in rubrics if r in a]
        for i, aid in enumerate(a["answer_id"]):
            texts[aid] = a["answer"][i]
            answer_rows.append([aid, a["n_words"][i], *[_f(a[r][i]) for r in present]])
        answer_cols = ["answer id", "words", *present]
    else:
        answer_cols = []
    return {"rubrics": rubrics, "contrib": contrib_cols, "judges": judges, "questions": questions, "texts": texts,
            "pairs": rows, "answers": {"columns": answer_cols, "rows": answer_rows}}
