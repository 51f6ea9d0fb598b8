"""A short readable view of a run: rubric vectors, the model's weights, and why a pair's winner wins.

What the tool is for, on one screen: the 1-5 rubric vector of a few answers, the preference model's
weights with their bootstrap CIs (style covariates marked, and each pair's style-controlled
probability beside the raw one), and for a few pairs the per-rubric contributions to the logit of
P(a preferred) that add up to the predicted winner. Pure formatting of tables the job already
wrote (``answers``, ``pairs``, a fitted model, ``rubric.predict.predict_pairs``' output); the
caller prints it and writes it to a file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pyarrow as pa

from rubric.tables import table_rubrics
from rubric.preference.model import PreferenceModel
from rubric.preference.report import weights_markdown

__all__ = ["answer_vectors_markdown", "explained_pairs", "pair_explanations_markdown", "readable_view",
           "people_markdown"]

#: Splits in the order their pairs are preferred for the explanations: held-out first.
_SPLIT_ORDER = {"test": 0, "dev": 1, "train": 2}


def _short(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 1].rstrip() + "…"


def _cell(x) -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.2f}"


def answer_vectors_markdown(answers: pa.Table, answer_ids: Sequence[str], *, text_chars: int = 60) -> str:
    """One row per answer: its id, the start of its text, its length and its 1-5 value on every rubric.

    Args:
        answers: an answers table written by the job.
        answer_ids: which answers, in this order (ids absent from the table are skipped).
        text_chars: how much of each answer's text to show.
    """
    rubrics = table_rubrics(answers)
    index = {a: i for i, a in enumerate(answers.column("answer_id").to_pylist())}
    cols = {r: answers.column(r).to_pylist() for r in rubrics}
    text, words = answers.column("answer").to_pylist(), answers.column("n_words").to_pylist()
    lines = ["| answer | words | " + " | ".join(rubrics) + " |", "|---|---:|" + "---:|" * len(rubrics)]
    for aid in answer_ids:
        if aid not in index:
            continue
        i = index[aid]
        lines.append(f"| `{aid}` {_short(text[i], text_chars)} | {words[i]} | "
                     + " | ".join(_cell(cols[r][i]) for r in rubrics) + " |")
    return "\n".join(lines)


def explained_pairs(predictions: pa.Table, n: int = 3) -> list[int]:
    """Rows of ``predictions`` to explain: scored pairs, held-out splits first, then table order."""
    splits = predictions.column("split").to_pylist()
    errors = predictions.column("error").to_pylist()
    rows = [i for i, e in enumerate(errors) if e is None]
    return sorted(rows, key=lambda i: (_SPLIT_ORDER.get(splits[i], 3), i))[:n]


def pair_explanations_markdown(predictions: pa.Table, pairs: pa.Table, rows: Sequence[int], *, top: int = 4) -> str:
    """For each prediction row: the question, who people preferred, the predicted winner with P(a) raw
    and style-controlled, and the ``top`` largest contributions to the logit of P(a) with the two
    answers' values.

    Args:
        predictions: :func:`rubric.predict.predict_pairs` output of a binary model.
        pairs: the pairs table the predictions were made on (for the questions and rubric values).
        rows: which prediction rows (:func:`explained_pairs`).
        top: contributions shown per pair (the rest are summed in one line).
    """
    pid_index = {p: i for i, p in enumerate(pairs.column("pair_id").to_pylist())}
    pcols = {c: pairs.column(c).to_pylist() for c in pairs.column_names
             if c.startswith(("a_", "b_")) or c in ("question", "answer_id_a", "answer_id_b")}
    pred = {c: predictions.column(c).to_pylist() for c in predictions.column_names}
    contrib_cols = [c for c in predictions.column_names if c.startswith("contrib_")]
    blocks = []
    for i in rows:
        j = pid_index[pred["pair_id"][i]]
        p_a = pred["p_a"][i]
        winner = "a" if p_a >= 0.5 else "b"
        held_out = "held out" if pred["split"][i] in ("test", "dev") else "in-sample"
        label = pred["label"][i] or "unknown"
        sc = pred.get("p_a_style_controlled", [None] * len(pred["p_a"]))[i]
        sc_text = "" if sc is None else f"; with style controlled (equal length and markdown) P(a) = {sc:.2f}"
        head = (f"**Pair `{pred['pair_id'][i]}`** ({pred['split'][i]} split, {held_out}): "
                f"{_short(pcols['question'][j], 90)}\n\n"
                f"a = `{pcols['answer_id_a'][j]}`, b = `{pcols['answer_id_b'][j]}`. People preferred **{label}**; "
                f"the model predicts **{winner}** (P(a) = {p_a:.2f}{sc_text}).\n")
        parts = sorted(((c[len("contrib_"):], pred[c][i]) for c in contrib_cols), key=lambda kv: -abs(kv[1]))
        lines = ["| column | a | b | contribution to logit P(a) |", "|---|---:|---:|---:|"]
        for name, value in parts[:top]:
            a, b = pcols.get(f"a_{name}", [None] * len(pid_index))[j], pcols.get(f"b_{name}", [None] * len(pid_index))[j]
            lines.append(f"| {name} | {_cell(a)} | {_cell(b)} | {value:+.3f} |")
        rest = sum(v for _, v in parts[top:])
        if len(parts) > top:
            lines.append(f"| {len(parts) - top} other columns | | | {rest:+.3f} |")
        lines.append(f"| intercept | | | {pred['intercept'][i]:+.3f} |")
        total = sum(v for _, v in parts) + pred["intercept"][i]
        lines.append(f"| **sum = logit P(a)** | | | **{total:+.3f}** |")
        blocks.append(head + "\n" + "\n".join(lines))
    return "\n\n".join(blocks)


def people_markdown(model: PreferenceModel) -> str:
    """What each of the model's columns means to people: its version and its measured agreement with people's
    ratings of its own aspect (``rubric.scoring.agreement_line``), so "coherence" is read as what it tracks."""
    from rubric.scoring import agreement_line

    prov = model.provenance if isinstance(model.provenance, Mapping) else {}
    lines = ["| column | version | agreement with people's ratings of its aspect |", "|---|---|---|"]
    for f in model.features_:
        version = (prov.get(f) or {}).get("rubric_version") or "unrecorded"
        lines.append(f"| {f} | `{version}` | {agreement_line(version, f) if version != 'unrecorded' else 'n/a'} |")
    return "\n".join(lines)


def _weight_cis(model: PreferenceModel) -> Mapping | None:
    from rubric.preference.evaluate import saved_weight_ci

    return saved_weight_ci(model.metadata_.get("weight_ci") if isinstance(model.metadata_, dict) else None, model)


def readable_view(answers: pa.Table, pairs: pa.Table, model: PreferenceModel, predictions: pa.Table, *,
                  n_pairs: int = 3, where: str = "") -> str:
    """The whole view as Markdown: answer vectors, weights with CIs, and ``n_pairs`` explained pairs.

    Args:
        answers, pairs: the job's tables.
        model: the fitted binary preference model the predictions come from.
        predictions: :func:`rubric.predict.predict_pairs` output on ``pairs``.
        n_pairs: pairs to explain (held-out ones first).
        where: a sentence saying where the full tables are, appended at the end.
    """
    rows = explained_pairs(predictions, n_pairs)
    pid_index = {p: i for i, p in enumerate(pairs.column("pair_id").to_pylist())}
    ids_a, ids_b = pairs.column("answer_id_a").to_pylist(), pairs.column("answer_id_b").to_pylist()
    shown: list[str] = []
    for i in rows[:2]:  # the answers of the first two explained pairs, so the vectors meet the explanations
        j = pid_index[predictions.column("pair_id")[i].as_py()]
        shown += [a for a in (ids_a[j], ids_b[j]) if a not in shown]
    meta = model.metadata_ if isinstance(model.metadata_, dict) else {}
    n_fit = meta.get("n_pairs", (meta.get("train_pairs") or {}).get("n"))
    fitted_on = f"{n_fit} {meta.get('split', 'train')} pairs" if n_fit is not None else "its training pairs"
    out = ["## Rubric vectors (1-5) of a few answers", "", answer_vectors_markdown(answers, shown), "",
           f"## What people's preferences weigh (model fitted on {fitted_on})", "",
           "Weight per standardised difference a - b; > 0 favours the answer higher on that column. "
           "Style covariates (length, markdown) absorb the preference for longer or more formatted answers, "
           "so the rubric weights are style-controlled.", "",
           weights_markdown(model.weights(), style_features=model.style_features_, weight_ci=_weight_cis(model)), "",
           "## What each column means to people", "",
           "Each rubric version's measured agreement with people's ratings of the aspect it is named for (Spearman "
           "within each source, averaged; `lfqa-rubric validate --human`, rubric/data/agreement.json): a name is "
           "what the column tracks only as far as this says.", "",
           people_markdown(model), "",
           f"## Why the predicted winner wins: {len(rows)} pairs", "",
           "Each row is the rubric's weight times its standardised difference; the contributions and the "
           "intercept add up to the logit of P(a preferred).", "",
           pair_explanations_markdown(predictions, pairs, rows)]
    if where:
        out += ["", where]
    return "\n".join(out) + "\n"
