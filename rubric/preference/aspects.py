"""Does each rubric agree with the human judgement of its own aspect?

lfqa_eval (Xu et al., 2023) asks its experts for a coherence and a factuality preference beside the
overall one. A rubric that measures what its name says should agree with the judgement of the aspect
of the same name (the coherence rubric with ``coherence_preference``) at least as well as with the
overall judgement. This module measures both, per rubric, from the rubric differences alone: no
model is fitted, so no split is in-sample.

Agreement of a rubric with a judgement is the share of pairs where the sign of the rubric difference
``a - b`` points at the answer the human preferred (``a - b > 0`` means "a"). A pair is left out, and
counted under the first reason that applies, when:

1. there is no human judgement of that aspect for it (``n_unjudged``);
2. the human judged a tie (``n_ties``): a sign cannot agree with a tie;
3. the rubric has no value for one of its answers (``n_missing``);
4. the rubric gave both answers the same score, ``a - b == 0`` exactly (``n_zero_diff``): the rubric
   expresses no preference, and counting it for either side would invent one.

The 95% CI comes from the question-clustered bootstrap of :func:`rubric.preference.metrics.evaluate_predictions`
(questions are resampled with all their pairs), beside the number of pairs and questions it rests on.

Everything here is pure: :func:`aspect_agreement` takes the differences and the judgements as
sequences, :func:`judgements_of` reads the judgements from :class:`~rubric.io.records.PairRecord` s, and
:func:`aspect_agreement_from_table` reads both from a pairs table that carries ``aspect_<name>``
columns.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rubric.errors import ConfigError
from rubric.preference.metrics import evaluate_predictions
from rubric.io import LABELS, PairRecord
from rubric.tables import ASPECT_COLUMN_PREFIX, table_rubrics
from rubric.preference.report import MIN_QUESTIONS_FOR_CI

__all__ = ["OVERALL", "AspectAgreement", "agreement", "aspect_agreement",
           "judgements_of", "aspect_agreement_from_table", "agreement_markdown"]

log = logging.getLogger(__name__)

#: The name of the overall judgement (a pair's ``label``) among the judgements.
OVERALL = "overall"


@dataclass(frozen=True)
class AspectAgreement:
    """One rubric's agreement with one human judgement.

    Attributes:
        rubric: the rubric whose differences were compared.
        aspect: the judgement compared with: the aspect of the same name, or :data:`OVERALL`.
        agreement: share of the counted pairs where the difference's sign matches the human side;
            nan when no pair is counted.
        ci: question-clustered bootstrap 95% CI of ``agreement``; (nan, nan) with fewer than two questions.
        n_pairs: pairs counted.
        n_questions: distinct questions among them (the bootstrap's clusters).
        n_ties: pairs left out because the human judged a tie.
        n_zero_diff: pairs left out because the rubric scored both answers the same.
        n_missing: pairs left out because the rubric has no value for an answer.
        n_unjudged: pairs left out because they have no judgement of this aspect.
    """

    rubric: str
    aspect: str
    agreement: float
    ci: tuple[float, float]
    n_pairs: int
    n_questions: int
    n_ties: int
    n_zero_diff: int
    n_missing: int
    n_unjudged: int


def _missing(d: float | None) -> bool:
    return d is None or not math.isfinite(d)


def agreement(rubric: str, aspect: str, diffs: Sequence[float | None], judgements: Sequence[str | None],
              question_ids: Sequence[str], *, n_boot: int = 1000, seed: int = 0) -> AspectAgreement:
    """Agreement of one rubric's difference signs with one human judgement (see the module docstring).

    Args:
        rubric: the rubric's name (for the result).
        aspect: the judgement's name (for the result).
        diffs: per pair, the rubric difference ``a - b`` (any scale; only its sign is used), or None.
        judgements: per pair, "a", "b", "tie", or None for no judgement.
        question_ids: per pair, its question (the bootstrap's cluster).
        n_boot: bootstrap replicates.
        seed: bootstrap seed.

    Returns:
        The agreement with its CI and the counts of the pairs counted and left out.

    Raises:
        ConfigError: the three sequences differ in length, or a judgement is not "a", "b", "tie" or None.
    """
    if not len(diffs) == len(judgements) == len(question_ids):
        raise ConfigError(f"diffs, judgements and question_ids must have one entry per pair, got lengths "
                          f"{len(diffs)}, {len(judgements)} and {len(question_ids)}")
    bad = sorted({repr(j) for j in judgements if j is not None and j not in LABELS})
    if bad:
        raise ConfigError(f"judgements of {aspect!r} must be 'a', 'b', 'tie' or None, got {', '.join(bad)}")
    y_true, y_pred, groups = [], [], []
    n_unjudged = n_ties = n_missing = n_zero = 0
    for d, j, q in zip(diffs, judgements, question_ids):
        if j is None:
            n_unjudged += 1
        elif j == "tie":
            n_ties += 1
        elif _missing(d):
            n_missing += 1
        elif d == 0:
            n_zero += 1
        else:
            y_true.append(j)
            y_pred.append("a" if d > 0 else "b")
            groups.append(q)
    row = evaluate_predictions(f"{rubric} vs {aspect}", np.array(y_true, dtype=object),
                               np.array(y_pred, dtype=object), groups=np.array(groups, dtype=object),
                               n_boot=n_boot, seed=seed)
    return AspectAgreement(rubric=rubric, aspect=aspect, agreement=row.values["accuracy"],
                           ci=row.ci["accuracy"], n_pairs=row.n, n_questions=row.n_questions, n_ties=n_ties,
                           n_zero_diff=n_zero, n_missing=n_missing, n_unjudged=n_unjudged)


def aspect_agreement(diffs: Mapping[str, Sequence[float | None]], judgements: Mapping[str, Sequence[str | None]],
                     question_ids: Sequence[str], *, n_boot: int = 1000, seed: int = 0) -> list[AspectAgreement]:
    """Each rubric's agreement with the judgement of its own aspect and with the overall judgement.

    Args:
        diffs: rubric name -> per-pair differences ``a - b`` (None where missing).
        judgements: judgement name -> per-pair "a"/"b"/"tie"/None; :data:`OVERALL` is the overall
            judgement, any other key an aspect (``"coherence"``), matched to the rubric of that name.
        question_ids: per pair, its question.
        n_boot: bootstrap replicates.
        seed: bootstrap seed.

    Returns:
        Per rubric, in ``diffs`` order: its own aspect (when a judgement of that name exists), then
        overall (when given). A rubric with neither gets no row.

    Raises:
        ConfigError: as :func:`agreement`.
    """
    out = []
    unmatched = sorted(a for a in judgements if a != OVERALL and a not in diffs)
    if unmatched:
        log.info("aspects with no rubric of the same name (only comparable through overall): %s", unmatched)
    for rubric, d in diffs.items():
        names = (([rubric] if rubric != OVERALL and rubric in judgements else [])
                 + ([OVERALL] if OVERALL in judgements else []))
        for aspect in names:
            out.append(agreement(rubric, aspect, d, judgements[aspect], question_ids, n_boot=n_boot, seed=seed))
    return out


def judgements_of(pairs: Sequence[PairRecord]) -> dict[str, list[str | None]]:
    """The human judgements of ``pairs``: :data:`OVERALL` (their labels) and every aspect any pair has.

    Returns:
        judgement name -> per-pair "a"/"b"/"tie", None where that pair has no such judgement;
        aspects sorted by name after :data:`OVERALL`.

    Raises:
        ConfigError: an aspect is named :data:`OVERALL`, or a pair judges one aspect twice.
    """
    names = sorted({a for p in pairs for a, _ in p.aspects})
    if OVERALL in names:
        raise ConfigError(f"an aspect may not be called {OVERALL!r}: that name is the overall judgement")
    out: dict[str, list[str | None]] = {OVERALL: [p.label for p in pairs]}
    for name in names:
        out[name] = []
    for p in pairs:
        given = dict(p.aspects)
        if len(given) != len(p.aspects):
            raise ConfigError(f"pair {p.pair_id!r} judges an aspect twice: {p.aspects}")
        for name in names:
            out[name].append(given.get(name))
    return out


def aspect_agreement_from_table(pairs: pa.Table, *, split: str = "all", n_boot: int = 1000,
                                seed: int = 0) -> list[AspectAgreement]:
    """:func:`aspect_agreement` on a pairs table: ``d_<rubric>``, ``label`` and ``aspect_<name>`` columns.

    Args:
        pairs: a pairs table (``rubric.tables.features.pairs_table``) with one ``aspect_<name>`` string column
            per judged aspect ("a"/"b"/"tie"/null).
        split: "train", "dev", "test", or "all". No model is fitted, so every split is out of sample.
        n_boot: bootstrap replicates.
        seed: bootstrap seed.

    Raises:
        ConfigError: the table lacks a needed column, or the split has no pairs.
    """
    rubrics = table_rubrics(pairs)
    needed = ["label", "split", "question_id"] + [f"d_{r}" for r in rubrics]
    absent = [c for c in needed if c not in pairs.column_names]
    if absent:
        raise ConfigError(f"the pairs table has no column(s) {absent}")
    splits = pairs.column("split").to_pylist()
    rows = [i for i, s in enumerate(splits) if split == "all" or s == split]
    if not rows:
        raise ConfigError(f"split {split!r} has no pairs")

    def column(name: str) -> list:
        values = pairs.column(name).to_pylist()
        return [values[i] for i in rows]

    judgements = {OVERALL: column("label")}
    for name in pairs.column_names:
        if name.startswith(ASPECT_COLUMN_PREFIX) and len(name) > len(ASPECT_COLUMN_PREFIX):
            judgements[name[len(ASPECT_COLUMN_PREFIX):]] = column(name)
    diffs = {r: column(f"d_{r}") for r in rubrics}
    return aspect_agreement(diffs, judgements, column("question_id"), n_boot=n_boot, seed=seed)


def _num(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


def agreement_markdown(rows: Sequence[AspectAgreement], *, split: str = "all") -> str:
    """A Markdown table of agreements, one row per (rubric, judgement), with the pairs left out.

    A row resting on fewer than ``rubric.preference.report.MIN_QUESTIONS_FOR_CI`` questions is marked, and a
    note under the table says why.
    """
    lines = [f"Rubric agreement with human judgements, split **{split}** (no model is fitted: out of sample).", "",
             "| rubric | human judgement | agreement [95% CI] | n pairs | n questions | ties left out | "
             "zero differences left out | missing values left out | no judgement |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    few = False
    for r in rows:
        lo, hi = r.ci
        ci = "n/a" if math.isnan(lo) or math.isnan(hi) else f"{lo:.3f}, {hi:.3f}"
        mark = ""
        if r.n_questions < MIN_QUESTIONS_FOR_CI:
            mark, few = " †", True
        judged = f"{r.aspect} (own aspect)" if r.aspect == r.rubric else r.aspect
        lines.append(f"| {r.rubric} | {judged} | {_num(r.agreement)} [{ci}]{mark} | {r.n_pairs} | {r.n_questions} | "
                     f"{r.n_ties} | {r.n_zero_diff} | {r.n_missing} | {r.n_unjudged} |")
    if few:
        lines += ["", f"† fewer than {MIN_QUESTIONS_FOR_CI} questions: the question-clustered CI is unreliable."]
    return "\n".join(lines)
