"""The job's assemble step: from every input's pairs and every answer's scores to the output tables.

Both job paths (single process and Ray) score answers however they like, then call
:func:`assemble` once with the *whole job*: the reads of all input files, in order, and one
score per unique answer. Everything that depends on the job as a whole happens here and only
here, so the two paths cannot drift apart:

- pairs are concatenated in input order; a ``pair_id`` that an earlier input already used is
  rejected exactly as a reader rejects a repeated id inside one file;
- answers are deduplicated over the whole job (:func:`rubric.io.records.explode`);
- splits are assigned over the whole job (questions kept together across inputs), or taken
  from the inputs' own ``split`` field when every pair carries one;
- ``--rescale fitted`` bounds are fitted once, on the job's training answers;
- tables are built by :mod:`rubric.tables.features`, stamped with each rubric's provenance.

A job whose answers were scored under two different provenances for one rubric (two model
revisions, say) is refused: nothing made one way is combined with something made another way.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rubric.config import DEFAULT_SPLIT_FRACTIONS
from rubric.errors import BatchMismatchError, ConfigError, InputError
from rubric.io import ReadResult
from rubric.io import AnswerItem, PairRecord, Reject, explode
from rubric.scoring import FittedMinMax
from rubric.scoring import EVIDENCE_CUT, Provenance, Score
from rubric.scoring import RubricSpec
from rubric.io import SPLITS, assign_splits

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["JobInput", "Assembled", "combine_inputs", "job_splits", "fit_rescale", "assemble"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobInput:
    """One input file of a job, as its reader returned it.

    Attributes:
        name: the input's short name (its output folder in the score store).
        read: what the reader returned for the file.
        fmt: the input format it was read as (``rubric.io.readers.FORMATS``).
        sha256: content hash of the file's bytes (recorded in the manifest; resume compares it).
        group: for a block of a file (:func:`assemble_stream`), the file's name: counts are per file.
    """

    name: str
    read: ReadResult
    fmt: str
    sha256: str = ""
    group: str | None = None


@dataclass(frozen=True)
class Assembled:
    """The job's tables and accounting, ready to be written.

    Attributes:
        answers: one row per unique answer (``rubric.tables.features.answers_table``).
        pairs: one row per pair, with its split (``rubric.tables.features.pairs_table``).
        claims: factuality's claims side table, or None when factuality was not scored.
        rejects: every input row that did not become a pair, with its reason, in input order.
        fitted: the fitted rescale bounds (``rescale == "fitted"``), else None.
        split_source: "assigned" (seeded, whole questions together) or "input" (the inputs' split field).
        counts: job-level counts: rows in / ok / rejected, pairs, pairs without a human judgement
            (``unlabeled``, part of ``pairs``), unique answers, per split, errors per rubric, and the
            same per input.
    """

    answers: "pa.Table"
    pairs: "pa.Table"
    claims: "pa.Table | None"
    rejects: list[Reject]
    fitted: FittedMinMax | None
    split_source: str
    counts: dict = field(default_factory=dict)



def outcome_counts(errors: Mapping[str, int], abstained: Mapping[str, int],
                   evidence_cut: Mapping[str, int] | None = None) -> dict:
    """The manifest's counts by rubric: ``errors_by_rubric`` (failures), ``abstained_by_rubric`` (a rubric that
    had nothing to judge: ``rubric.scoring.Score.abstain``) when any, and ``evidence_cut_by_rubric`` (scores whose
    evidence was cut at a cap: ``rubric.scoring.EVIDENCE_CUT``) when any."""
    out: dict = {"errors_by_rubric": dict(errors)}
    if any(abstained.values()):
        out["abstained_by_rubric"] = dict(abstained)
    if evidence_cut and any(evidence_cut.values()):
        out["evidence_cut_by_rubric"] = {k: v for k, v in evidence_cut.items() if v}
    return out

def combine_inputs(inputs: Sequence[JobInput]) -> tuple[list[PairRecord], list[Reject], dict[str, dict]]:
    """Concatenate the inputs' pairs in order, rejecting ids an earlier input already used.

    A pair-format row whose ``pair_id`` appeared in an earlier input becomes a reject, as it would
    inside one file. Graded inputs derive pair ids from the question, so a repeated id there means
    the same question's answers are split over two files, which would pair them differently than
    one file does: that stops the job with a message naming both files.

    Returns:
        (pairs, rejects, per-input counts ``{name: {rows_in, rows_ok, rejected, pairs, unlabeled}}``).

    Raises:
        InputError: a graded question's pairs occur in two inputs.
    """
    pairs: list[PairRecord] = []
    rejects: list[Reject] = []
    per_input: dict[str, dict] = {}
    first: dict[str, tuple[str, int]] = {}
    for inp in inputs:
        read = inp.read
        extra_rejects: list[Reject] = []
        kept: list[PairRecord] = []
        for p in read.pairs:
            seen = first.get(p.pair_id)
            if seen is not None:
                if inp.fmt == "graded":
                    raise InputError(f"{read.source_file!r} and {seen[0]!r} both hold pair {p.pair_id!r}: a graded "
                                     "question's answers must sit in one input file")
                extra_rejects.append(Reject(row=p.row, field="pair_id", pair_id=p.pair_id,
                                            source_file=read.source_file,
                                            reason=f"row {p.row}: duplicate pair_id {p.pair_id!r} (first seen in "
                                                   f"{seen[0]} row {seen[1]})"))
                continue
            first[p.pair_id] = (read.source_file, p.row)
            kept.append(p)
        pairs.extend(kept)
        rejects.extend(read.rejects)
        rejects.extend(extra_rejects)
        per_input[inp.name] = {"path": read.source_file, "sha256": inp.sha256, "rows_in": read.rows_in,
                               "rows_ok": read.rows_ok - len(extra_rejects),
                               "rejected": len(read.rejects) + len(extra_rejects), "pairs": len(kept),
                               "unlabeled": sum(1 for p in kept if p.label is None)}
    return pairs, rejects, per_input


def job_splits(pairs: Sequence[PairRecord], *, seed: int,
               fractions: Sequence[float] = DEFAULT_SPLIT_FRACTIONS) -> tuple[list[str], str]:
    """The split of every pair: the inputs' own ``split`` field when every pair has one, else assigned
    (``rubric.io.assign_splits`` with ``seed`` and the train/dev/test ``fractions``).

    Returns:
        (splits, source) with source "input" or "assigned".

    Raises:
        ConfigError: some pairs carry a split and others do not (a partial published split
            cannot be completed without leaking questions between splits).
    """
    given = [p.split for p in pairs]
    n_given = sum(s is not None for s in given)
    if n_given == 0:
        return assign_splits(pairs, fractions, seed=seed), "assigned"
    if n_given != len(pairs):
        raise ConfigError(f"{n_given} of {len(pairs)} pairs carry a 'split' field and {len(pairs) - n_given} do not; "
                          "give every pair a split (train/dev/test) or none")
    bad = sorted({s for s in given if s not in SPLITS})
    if bad:
        raise ConfigError(f"split values {bad} are not one of {', '.join(SPLITS)}")
    by_q: dict[str, set[str]] = {}
    for p in pairs:
        by_q.setdefault(p.question_id, set()).add(p.split)  # type: ignore[arg-type]
    leaky = [q for q, s in by_q.items() if len(s) > 1]
    if leaky:
        log.warning("the input's split puts %d question(s) in more than one split (e.g. question id %s); "
                    "kept as given", len(leaky), leaky[0])
    return list(given), "input"  # type: ignore[arg-type]


def fit_rescale(pairs: Sequence[PairRecord], splits: Sequence[str], items: Sequence[AnswerItem],
                scores: Mapping[str, Sequence[Score]]) -> FittedMinMax:
    """Min-max bounds from the raw scores of the answers in training pairs (never dev or test).

    A rubric with no value on any training answer gets no bounds and keeps its declared range.
    """
    train_ids = {aid for p, s in zip(pairs, splits) if s == "train" for aid in (p.answer_id_a, p.answer_id_b)}
    rows = [i for i, it in enumerate(items) if it.answer_id in train_ids]
    columns = {r: [col[i].raw for i in rows] for r, col in scores.items()}
    return FittedMinMax.fit({r: v for r, v in columns.items() if any(x is not None for x in v)})


def assemble(inputs: Sequence[JobInput], scores: Mapping[str, Mapping[str, Score]],
             provenance: Mapping[str, Provenance], specs: Sequence[RubricSpec], *, rescale: str = "declared",
             seed: int = 0, fractions: Sequence[float] = DEFAULT_SPLIT_FRACTIONS) -> Assembled:
    """Build the job's tables from every input's read and one score per unique answer.

    Args:
        inputs: the job's inputs, in order (the order decides pair order and answer dedupe order).
        scores: answer_id -> rubric name -> Score, for at least every answer of every pair.
        provenance: rubric name -> how its scores were made (one per rubric for the whole job).
        specs: the rubrics, in output column order.
        rescale: "declared" or "fitted" (see :class:`rubric.config.ScoringConfig`).
        seed: split seed (used when the inputs carry no split).
        fractions: train/dev/test shares of that split.

    Raises:
        BatchMismatchError: an answer of a pair has no score (a lost row).
        ConfigError: a rubric has no provenance, or the inputs' splits are partial.
        InputError: the job has no usable pair at all.
    """
    from rubric.tables.features import answers_table, pairs_table

    if rescale not in ("declared", "fitted"):
        raise ConfigError(f"'rescale' must be 'declared' or 'fitted', got {rescale!r}")
    missing_prov = [s.name for s in specs if s.name not in provenance]
    if missing_prov:
        raise ConfigError(f"no provenance for rubric(s) {missing_prov}")
    pairs, rejects, per_input = combine_inputs(inputs)
    if not pairs:
        names = ", ".join(repr(i.read.source_file) for i in inputs)
        first = f"; first reason: {rejects[0].reason}" if rejects else ""
        raise InputError(f"no usable pair in {names}: {len(rejects)} row(s) rejected{first}")
    items = explode(pairs)
    lost = [it.answer_id for it in items if it.answer_id not in scores]
    if lost:
        raise BatchMismatchError(f"{len(lost)} of {len(items)} answers have no score (first: {lost[0]})")
    columns: dict[str, list[Score]] = {}
    for s in specs:
        try:
            columns[s.name] = [scores[it.answer_id][s.name] for it in items]
        except KeyError:
            aid = next(it.answer_id for it in items if s.name not in scores[it.answer_id])
            raise BatchMismatchError(f"answer {aid} has no {s.name!r} score") from None
    splits, split_source = job_splits(pairs, seed=seed, fractions=fractions)
    fitted = fit_rescale(pairs, splits, items, columns) if rescale == "fitted" else None
    answers = answers_table(items, specs, columns, provenance, fitted=fitted)
    pairs_t = pairs_table(pairs, splits, answers)
    claims = None
    if "factuality" in columns:
        from rubric.scoring import claims_table

        claims = claims_table([it.answer_id for it in items], columns["factuality"])
    counts: dict = {
        "rows_in": sum(c["rows_in"] for c in per_input.values()),
        "rows_ok": sum(c["rows_ok"] for c in per_input.values()),
        "rejected": len(rejects),
        "pairs": len(pairs),
        "unlabeled": sum(1 for p in pairs if p.label is None),
        "unique_answers": len(items),
        "splits": {s: splits.count(s) for s in SPLITS},
        **outcome_counts({n: sum(1 for sc in col if sc.error is not None and not sc.abstained)
                          for n, col in columns.items()},
                         {n: sum(1 for sc in col if sc.abstained) for n, col in columns.items()},
                         {n: sum(1 for sc in col if sc.extras.get(EVIDENCE_CUT) is True) for n, col in columns.items()}),
        "per_input": per_input,
    }
    if "factuality" in columns:  # answers with no verifiable claim, scored 0.0 by factuality.veriscore.v2
        from rubric.scoring import count_no_claims

        counts["factuality_no_claims"] = count_no_claims(columns["factuality"])
    if counts["rows_in"] != counts["rows_ok"] + counts["rejected"]:
        raise BatchMismatchError(f"row accounting is broken: rows_in={counts['rows_in']}, rows_ok={counts['rows_ok']}, "
                                 f"rejected={counts['rejected']}")
    return Assembled(answers=answers, pairs=pairs_t, claims=claims, rejects=rejects, fitted=fitted,
                     split_source=split_source, counts=counts)
