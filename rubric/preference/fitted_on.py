"""What a preference model was fitted on, and whether an evaluated set of pairs is in its sample.

``fit`` records in ``model.json`` (``metadata.fitted_on``) a content hash of the pairs table it read
(:func:`pairs_table_digest`: the pairs' ids, questions, answers, labels and splits, so re-scoring the
same pairs with other rubric values keeps the hash), the split it used, and the hash of every
training question (``question_hashes``: :func:`rubric.io.question_id`, sha256 of the question's
whitespace-normalised text, which is each row's ``question_id``). ``evaluate``, ``analyze``,
``transfer`` and the HTML report then decide from **question overlap**, never from split names or
table names:

- every evaluated pair's question is a training question: **in-sample**;
- some are: **partly in-sample** (the reports give the metrics on the other pairs beside all of them);
- none is, and the table is the one the model was fitted on: held out;
- none is, and the table is another one: transferred;
- a model fitted before questions were recorded: decided from the table digest and the splits, as
  before, and the note says so; a model that records nothing: guessed from the splits, and said so.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

__all__ = ["FITTED_ON_KEY", "IDENTITY_COLUMNS", "pairs_table_digest", "fitted_on_record", "SampleStatus",
           "sample_status", "IN_SAMPLE_MARK", "PARTLY_IN_SAMPLE_MARK", "question_overlap"]

#: The key of the record in a model's metadata.
FITTED_ON_KEY = "fitted_on"

#: The columns that say which pairs a table holds (rubric values left out on purpose).
IDENTITY_COLUMNS: tuple[str, ...] = ("pair_id", "question_id", "answer_id_a", "answer_id_b", "label", "split")

#: Appended to every system's name in a table of in-sample numbers, so a copied table keeps the label.
IN_SAMPLE_MARK = " (IN-SAMPLE)"
#: The same for numbers of which only some pairs' questions were trained on.
PARTLY_IN_SAMPLE_MARK = " (PARTLY IN-SAMPLE)"


def pairs_table_digest(table: pa.Table) -> str:
    """sha256 (16 hex) of a pairs table's pairs: :data:`IDENTITY_COLUMNS` of every row, in pair-id order.

    A column the table lacks is hashed as absent, so tables with and without it differ.
    """
    cols = {c: (table.column(c).to_pylist() if c in table.column_names else None) for c in IDENTITY_COLUMNS}
    n = table.num_rows
    order = sorted(range(n), key=lambda i: str(cols["pair_id"][i]) if cols["pair_id"] is not None else i)
    h = hashlib.sha256()
    h.update("\x1f".join(c for c in IDENTITY_COLUMNS if cols[c] is not None).encode())
    for i in order:
        for c in IDENTITY_COLUMNS:
            if cols[c] is not None:
                h.update(b"\x00" if cols[c][i] is None else str(cols[c][i]).encode("utf-8", "surrogatepass"))
                h.update(b"\x1f")
        h.update(b"\x1e")
    return h.hexdigest()[:16]


def fitted_on_record(table: pa.Table, *, split: str, n_pairs: int, question_ids: Iterable[str] = ()) -> dict:
    """The ``fitted_on`` record ``fit`` saves: the table's digest, the split, how many pairs were used and
    the hash of every training question (``question_ids``: the fitted pairs' ``question_id`` values)."""
    hashes = sorted({str(q) for q in question_ids})
    return {"pairs_sha256": pairs_table_digest(table), "split": split, "n_pairs": int(n_pairs),
            "n_rows_in_table": table.num_rows, "n_questions": len(hashes), "question_hashes": hashes}


@dataclass(frozen=True)
class SampleStatus:
    """Whether the evaluated pairs' questions are among the model's training questions.

    Attributes:
        in_sample: some are (or, for a model that records no fit, may be).
        kind: "in-sample", "partly in-sample", "held-out", "transferred" or "unrecorded".
        note: one sentence for the reports.
        n_pairs: evaluated pairs the status was decided on.
        n_overlap: of those, pairs whose question the model was fitted on.
        n_questions / n_overlap_questions: the same in questions.
        training_questions: the model's training question hashes (empty when not recorded).
        same_table: the evaluated table is the one the model was fitted on (None: not recorded).
    """

    in_sample: bool
    kind: str
    note: str
    n_pairs: int = 0
    n_overlap: int = 0
    n_questions: int = 0
    n_overlap_questions: int = 0
    training_questions: frozenset = field(default_factory=frozenset, repr=False)
    same_table: bool | None = None

    @property
    def partial(self) -> bool:
        """Some, not all, evaluated pairs overlap: the reports add the metrics on the others."""
        return self.kind == "partly in-sample"

    @property
    def mark(self) -> str:
        """What every row of these numbers carries: :data:`IN_SAMPLE_MARK`, :data:`PARTLY_IN_SAMPLE_MARK` or ""."""
        if self.partial:
            return PARTLY_IN_SAMPLE_MARK
        return IN_SAMPLE_MARK if self.in_sample else ""

    def outside(self, question_ids: Sequence[str]) -> np.ndarray:
        """For each pair (by its question id), True when its question is not a training question."""
        return np.array([str(q) not in self.training_questions for q in question_ids], dtype=bool)

    @property
    def outside_kind(self) -> str:
        """What the pairs outside the training questions are: "held-out" or "transferred"."""
        return "transferred" if self.same_table is False else "held-out"


def _overlaps(split: str, fitted_split: str) -> bool:
    return "all" in (split, fitted_split) or split == fitted_split


def _split_question_ids(table: pa.Table, split: str) -> list[str]:
    qids = table.column("question_id").to_pylist()
    if split == "all" or "split" not in table.column_names:
        return qids
    return [q for q, s in zip(qids, table.column("split").to_pylist()) if s == split]


def sample_status(model, table: pa.Table, split: str, *, question_ids: Sequence[str] | None = None) -> SampleStatus:
    """How the evaluated pairs stand to the model's training questions.

    Args:
        model: a fitted :class:`rubric.preference.PreferenceModel` (its ``metadata_``).
        table: the evaluated pairs table.
        split: the evaluated split ("all" for every pair).
        question_ids: the question id of each evaluated pair (e.g. a design matrix's, after ties and
            missing values are left out); default: every row of ``split`` in ``table``.
    """
    meta = model.metadata_ if isinstance(model.metadata_, dict) else {}
    rec = meta.get(FITTED_ON_KEY)
    recorded_split = meta.get("split")
    fitted_split = recorded_split if isinstance(recorded_split, str) else "train"
    if not isinstance(rec, dict) or not isinstance(rec.get("pairs_sha256"), str):
        guess = _overlaps(split, fitted_split)
        return SampleStatus(guess, "unrecorded",
                            f"the model records no fitted-on table (fitted before it was recorded), so whether these "
                            f"pairs are in its sample is guessed from the splits: fitted on {fitted_split!r}, "
                            f"evaluated on {split!r}" + (" (in-sample)" if guess else ""))
    fitted_split = str(rec.get("split", fitted_split))
    digest = pairs_table_digest(table)
    same = digest == rec["pairs_sha256"]
    fit_text = (f"this table's {fitted_split!r} split" if same else
                f"another pairs table (sha256 {rec['pairs_sha256']}, its {fitted_split!r} split)")
    n_fit = rec.get("n_pairs", "?")
    hashes = rec.get("question_hashes")
    if not isinstance(hashes, list):  # fitted before question hashes were recorded
        if not same:
            return SampleStatus(False, "unrecorded", same_table=False, note=
                                f"fitted on {fit_text}, {n_fit} pairs; this table is {digest}. The model records no "
                                "training questions (fitted before they were recorded), so whether these pairs' "
                                "questions overlap them is unknown: re-fit it to know")
        if _overlaps(split, fitted_split):
            return SampleStatus(True, "in-sample", same_table=True, note=
                                f"IN-SAMPLE: the model was fitted on {fit_text} ({n_fit} pairs, sha256 {digest}) and "
                                f"the {split!r} split includes them (decided from the splits: the model records no "
                                "training questions)")
        return SampleStatus(False, "held-out", same_table=True, note=
                            f"held out: the model was fitted on {fit_text} ({n_fit} pairs, sha256 {digest}), not on "
                            f"the {split!r} split (decided from the splits: the model records no training questions)")
    train_q = frozenset(str(h) for h in hashes)
    qids = [str(q) for q in (question_ids if question_ids is not None else _split_question_ids(table, split))]
    n = len(qids)
    hit = [q in train_q for q in qids]
    k = sum(hit)
    questions = set(qids)
    k_q = len(questions & train_q)
    where = f"this table's {fitted_split!r} split" if same else f"another pairs table's {fitted_split!r} split"
    fit = (f"the model was fitted on {where} ({n_fit} pairs of {len(train_q)} questions, table sha256 "
           f"{rec['pairs_sha256']})")
    base = {"n_pairs": n, "n_overlap": k, "n_questions": len(questions), "n_overlap_questions": k_q,
            "training_questions": train_q, "same_table": same}
    if k == 0:
        if same:
            return SampleStatus(False, "held-out",
                                f"held out: {fit}; none of the {n} evaluated pairs' {len(questions)} questions in "
                                f"the {split!r} split is one of its training questions", **base)
        return SampleStatus(False, "transferred",
                            f"transferred: {fit}; this table is {digest}, and none of the {n} evaluated pairs' "
                            f"{len(questions)} questions is one of its training questions", **base)
    if k == n:
        return SampleStatus(True, "in-sample",
                            f"IN-SAMPLE: {fit}, and every one of the {n} evaluated pairs ({len(questions)} questions "
                            f"of the {split!r} split) has one of its training questions", **base)
    other = "another table" if not same else "this table"
    return SampleStatus(True, "partly in-sample",
                        f"PARTLY IN-SAMPLE: {fit}; {k} of the {n} evaluated pairs ({k_q} of {len(questions)} "
                        f"questions of {other}'s {split!r} split) have one of its training questions, so the metrics "
                        f"are also given on the other {n - k} pairs", **base)


def question_overlap(training: Iterable[str] | None, evaluated: Sequence[str]) -> dict:
    """How evaluated pairs (one question id each) stand to a model's training questions, for a model that is not
    a :class:`rubric.preference.PreferenceModel` (the encoder baseline's head).

    Returns:
        ``{"kind", "in_sample", "n_pairs", "n_overlap"}``: kind "in-sample" (every pair's question was trained on),
        "partly in-sample", "held-out", or "unrecorded" (``training`` is None: nothing to decide on, and
        ``in_sample`` is None).
    """
    n = len(evaluated)
    if training is None:
        return {"kind": "unrecorded", "in_sample": None, "n_pairs": n, "n_overlap": None}
    train = {str(q) for q in training}
    k = sum(str(q) in train for q in evaluated)
    kind = "held-out" if k == 0 else "in-sample" if k == n else "partly in-sample"
    return {"kind": kind, "in_sample": k > 0, "n_pairs": n, "n_overlap": k}
