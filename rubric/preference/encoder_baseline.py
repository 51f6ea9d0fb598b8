"""The trained-encoder baseline's science: a score output's pairs as the baseline reads them, each pair's
answer-embedding difference, the head fitted on a split (its C chosen by cross-validation over questions),
its test metrics with a question-clustered CI, and its predictions table.

Pure: the encoder and the head's estimator are ``models.baselines``' (passed in); the job that reads and
writes is ``workers.jobs.encoder``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from rubric.errors import ConfigError, InputError

__all__ = ["EncoderPairs", "encoder_pairs", "pair_differences", "fit_encoder_head", "encoder_test_metrics",
           "encoder_predictions_table"]


@dataclass
class EncoderPairs:
    """A score output's pairs, as the encoder baseline reads them.

    Attributes:
        pair_ids, question_ids, answer_ids_a, answer_ids_b: per pair; labels ("" for none) and splits as
        arrays; text: answer id -> (question, answer) for every answer a pair uses.
    """

    pair_ids: list[str]
    question_ids: np.ndarray
    answer_ids_a: list[str]
    answer_ids_b: list[str]
    labels: np.ndarray
    splits: np.ndarray
    text: dict[str, tuple[str, str]]

    def answer_ids(self) -> list[str]:
        """Every answer a pair uses, each once, in order of first use."""
        return list(dict.fromkeys([*self.answer_ids_a, *self.answer_ids_b]))


def encoder_pairs(answers: pa.Table, pairs: pa.Table, *, where: str) -> EncoderPairs:
    """Join a score output's pairs to its answers' texts.

    Args:
        answers, pairs: its ``answers.parquet`` and ``pairs.parquet``; where: the folder, for messages.

    Raises:
        InputError: ``answers`` lacks the answer texts, or a pair's answer is not in it.
    """
    missing = [c for c in ("answer_id", "question", "answer") if c not in answers.column_names]
    if missing:
        raise InputError(f"{where}/answers.parquet has no {', '.join(missing)} column: re-run score")
    text = dict(zip(answers.column("answer_id").to_pylist(),
                    zip(answers.column("question").to_pylist(), answers.column("answer").to_pylist())))
    cols = {c: pairs.column(c).to_pylist() for c in ("pair_id", "question_id", "answer_id_a", "answer_id_b",
                                                      "label", "split")}
    used = [aid for side in ("answer_id_a", "answer_id_b") for aid in cols[side]]
    lost = sorted({aid for aid in used if aid not in text})
    if lost:
        raise InputError(f"{len(lost)} answers of {where}/pairs.parquet are not in answers.parquet (first: {lost[0]})")
    return EncoderPairs(pair_ids=cols["pair_id"], question_ids=np.array(cols["question_id"], dtype=object),
                        answer_ids_a=cols["answer_id_a"], answer_ids_b=cols["answer_id_b"],
                        labels=np.array([x if x is not None else "" for x in cols["label"]], dtype=object),
                        splits=np.array(cols["split"], dtype=object),
                        text={a: text[a] for a in dict.fromkeys(used)})


def pair_differences(pairs: EncoderPairs, embeddings: Mapping[str, np.ndarray]) -> np.ndarray:
    """Each pair's embedding of answer a minus answer b (the head's features), one row per pair."""
    return np.stack([embeddings[a] - embeddings[b]
                     for a, b in zip(pairs.answer_ids_a, pairs.answer_ids_b)]).astype(float)


def fit_encoder_head(head: Any, X: np.ndarray, pairs: EncoderPairs, *, split: str, C: float | str,
                     trained_on: str) -> dict:
    """Fit ``head`` (a scikit-learn estimator with ``C``; ties are its to drop) on the split's labelled pairs.

    Args:
        head: the head to fit (``models.baselines.PreferenceHead``).
        X: :func:`pair_differences` of ``pairs``.
        split: the split to train on ("all": every pair).
        C: the head's regularisation, or "cv" to choose it by cross-validation over questions on the a/b
            pairs (``rubric.preference.cross_validate_C``).
        trained_on: the score output, recorded.

    Returns:
        What the head's JSON records of its training (split, pairs, their questions and fingerprint, C).

    Raises:
        ConfigError: ``C`` is neither a number nor "cv", or the split has no pair labelled a or b.
    """
    from rubric.preference.evaluate import pairs_fingerprint
    from rubric.preference.selection import cross_validate_C

    if isinstance(C, str) and C != "cv":
        raise ConfigError(f"'C' must be a number > 0 or 'cv', got {C!r}")
    in_split = (pairs.splits == split) if split != "all" else np.ones(len(pairs.splits), bool)
    train = np.isin(pairs.labels, ["a", "b", "tie"]) & in_split
    train_ab = train & np.isin(pairs.labels, ["a", "b"])
    if not train_ab.any():
        raise ConfigError(f"split {split!r} of {trained_on} has no pairs labelled 'a' or 'b' to train on")
    head.set_params(C=1.0 if C == "cv" else float(C))
    selection = None
    if C == "cv":
        selection = cross_validate_C(head, X[train_ab], pairs.labels[train_ab], pairs.question_ids[train_ab]).to_dict()
        head.set_params(C=selection["best_C"])
    head.fit(X[train], pairs.labels[train])
    return {"trained_on": trained_on, "split": split, "n_pairs": int(train_ab.sum()),
            "question_hashes": sorted({str(q) for q in pairs.question_ids[train]}),
            "n_ties_dropped": head.n_ties_dropped_, "n_unlabeled": int(in_split.sum() - train.sum()),
            "train_pairs": {"n": int(train_ab.sum()),
                            "fingerprint": pairs_fingerprint(np.array(pairs.pair_ids, dtype=object)[train_ab])},
            "C": float(head.C), "C_selection": selection or {"best_C": float(head.C), "criterion": "given"}}


def encoder_test_metrics(system: str, p_a: np.ndarray, pairs: EncoderPairs, trained: Sequence[str] | None, *,
                         n_boot: int, seed: int) -> tuple[np.ndarray, dict | None]:
    """Each pair's decision (a when P(a) >= 0.5) and the test split's metrics with question-clustered CIs.

    Args:
        trained: the head's training questions (its sample status on the test questions).

    Returns:
        The decisions, and the metrics (None when the test split has no pair labelled a or b).
    """
    from rubric.preference.fitted_on import question_overlap
    from rubric.preference.metrics import evaluate_predictions

    predicted = np.where(p_a >= 0.5, "a", "b")
    test = (pairs.splits == "test") & np.isin(pairs.labels, ["a", "b"])
    if not test.any():
        return predicted, None
    qids = pairs.question_ids
    row = evaluate_predictions(system, pairs.labels[test], predicted[test], groups=qids[test], n_boot=n_boot, seed=seed)
    metrics = {"split": "test", "n": row.n, "n_questions": row.n_questions, "values": row.values,
               "ci": {k: list(v) for k, v in row.ci.items()}, "sample": question_overlap(trained, list(qids[test]))}
    metrics["in_sample"] = metrics["sample"]["in_sample"]
    return predicted, metrics


def encoder_predictions_table(pairs: EncoderPairs, system: str, p_a: np.ndarray, predicted: np.ndarray,
                              trained: Sequence[str] | None) -> pa.Table:
    """``encoder_predictions.parquet``: ``pair_id``, ``system``, ``p_a``, ``predicted``, ``split``, with the
    head's training questions in its metadata (``analyze`` marks the in-sample rows by them)."""
    from rubric.preference.fitted_on import FITTED_ON_KEY
    from rubric.preference.predict import PREDICTIONS_META_KEY

    table = pa.table({"pair_id": pa.array(pairs.pair_ids, pa.string()),
                      "system": pa.array([system] * len(p_a), pa.string()),
                      "p_a": pa.array(p_a.astype(float), pa.float64()),
                      "predicted": pa.array(predicted.tolist(), pa.string()),
                      "split": pa.array(pairs.splits.tolist(), pa.string())})
    return table.replace_schema_metadata({PREDICTIONS_META_KEY: json.dumps(
        {FITTED_ON_KEY: None if trained is None else {"question_hashes": list(trained)}}).encode()})
