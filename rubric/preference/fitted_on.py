"""What a preference model was fitted on, and whether an evaluated table's pairs are in its sample.

``fit`` records in ``model.json`` (``metadata.fitted_on``) a content hash of the pairs table it read
(:func:`pairs_table_digest`: the pairs' ids, questions, answers, labels and splits, so re-scoring the
same pairs with other rubric values keeps the hash) and the split it used. ``evaluate`` and
``analyze`` then know instead of guessing from ``--split``:

- the same table and a split that includes the training split: **in-sample**;
- the same table, another split: held out;
- another table: **transferred** (the model saw none of these pairs as this table's pairs);
- a model written before this was recorded: in-sample guessed from the split, and the report says so.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pyarrow as pa

__all__ = ["FITTED_ON_KEY", "IDENTITY_COLUMNS", "pairs_table_digest", "fitted_on_record", "SampleStatus",
           "sample_status"]

#: The key of the record in a model's metadata.
FITTED_ON_KEY = "fitted_on"

#: The columns that say which pairs a table holds (rubric values left out on purpose).
IDENTITY_COLUMNS: tuple[str, ...] = ("pair_id", "question_id", "answer_id_a", "answer_id_b", "label", "split")


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


def fitted_on_record(table: pa.Table, *, split: str, n_pairs: int) -> dict:
    """The ``fitted_on`` record ``fit`` saves: the table's digest, the split and how many pairs were used."""
    return {"pairs_sha256": pairs_table_digest(table), "split": split, "n_pairs": int(n_pairs),
            "n_rows_in_table": table.num_rows}


@dataclass(frozen=True)
class SampleStatus:
    """Whether an evaluated split holds pairs the model was fitted on.

    Attributes:
        in_sample: it does (or, for an old model, may).
        kind: "in-sample", "held-out", "transferred" or "unrecorded" (an old model: guessed from the split).
        note: one sentence for the report.
    """

    in_sample: bool
    kind: str
    note: str


def _overlaps(split: str, fitted_split: str) -> bool:
    return "all" in (split, fitted_split) or split == fitted_split


def sample_status(model, table: pa.Table, split: str) -> SampleStatus:
    """How the pairs of ``split`` of ``table`` stand to the model's training pairs.

    Args:
        model: a fitted :class:`rubric.preference.PreferenceModel` (its ``metadata_``).
        table: the evaluated pairs table.
        split: the evaluated split ("all" for every pair).
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
    if digest != rec["pairs_sha256"]:
        return SampleStatus(False, "transferred",
                            f"transferred: the model was fitted on another pairs table (sha256 {rec['pairs_sha256']}, "
                            f"its {fitted_split!r} split, {rec.get('n_pairs', '?')} pairs); this table is {digest}")
    if _overlaps(split, fitted_split):
        return SampleStatus(True, "in-sample",
                            f"IN-SAMPLE: the model was fitted on this table's {fitted_split!r} split "
                            f"({rec.get('n_pairs', '?')} pairs, sha256 {digest}) and the {split!r} split includes them")
    return SampleStatus(False, "held-out",
                        f"held out: the model was fitted on this table's {fitted_split!r} split "
                        f"({rec.get('n_pairs', '?')} pairs, sha256 {digest}), not on the {split!r} split")
