"""LFQA-E (seed 002): three-way (A / B / tie) metrics and their breakdown by pair type.

Pure: no model here. The judge's prompt is ``lfqa_e.reference_tie.v1``, declared here: the question's reference
answer is shown with both answers, and a tie is offered (``answer_1`` / ``answer_2`` / ``answer_tie`` after the
pre-fill ``answer_``).

Metrics
    LFQA-E reports accuracy and macro-F1 over C = {A, B, tie} (its equations 1 and 2):
    ``F1_macro = (1/|C|) sum_c 2 P_c R_c / (P_c + R_c)``, the average always over the three classes,
    a class whose F1 is undefined (never predicted and never true, or P_c + R_c = 0) counting 0. A
    class that is true but never predicted thus pulls macro-F1 down by a third of what it could add,
    which is why LFQA-E's macro-F1 sits below its accuracy for judges that rarely say "tie".
    A pair the system left undecided counts as wrong by default (``undecided="wrong"``: it can never
    raise a score) or is left out (``"drop"``); either way it is counted. CIs resample questions.

Pair types
    LFQA-E breaks its results down into human vs human (``h v. h``), human vs model (``h v. m``) and
    model vs model (``m v. m``). :func:`pair_type` reads it from ``PairRecord.answer_type_a`` /
    ``answer_type_b`` (lfqa_eval's ``answer_a_type`` / ``answer_b_type``): a type that is ``human`` or
    starts with ``human`` (``human_expert``) is a person, any other non-empty type a model; a pair with
    an empty type has no pair type and is counted apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from rubric.config import check_range
from rubric.errors import ConfigError
from rubric.protocols.templates import declare_protocol_prompt
from rubric.preference import question_bootstrap_weights
from rubric.io import PairRecord
from rubric.protocols.pages import command_lines
from rubric.protocols.report import fmt_value

__all__ = [
    "CLASSES",
    "PAIR_TYPES",
    "UNDECIDED_POLICIES",
    "pair_type",
    "ThreeWayMetrics",
    "three_way_metrics",
    "PairTypeBreakdown",
    "breakdown_by_pair_type",
    "lfqa_e_tables",
    "lfqa_e_page",
]

#: LFQA-E's classes, in our spelling (A = ``a``, B = ``b``).
CLASSES: tuple[str, ...] = ("a", "b", "tie")
#: The pair types of LFQA-E's breakdown.
PAIR_TYPES: tuple[str, ...] = ("human-human", "human-model", "model-model")
UNDECIDED_POLICIES: tuple[str, ...] = ("wrong", "drop")

#: LFQA-E's reference-based three-way judge.
JUDGE_VERSION = "lfqa_e.reference_tie.v1"
declare_protocol_prompt(JUDGE_VERSION, protocol="lfqa_e", layout="pairwise",
                        source="lfqa-rubric, after LFQA-E's annotation recipe (seed 002, Table 26)", prefill="answer_",
                        tokens=("1", "2", "tie"), fields=("question", "reference", "answer_1", "answer_2"),
                        verdicts=("1", "2", "tie"), verdict_format="answer_{}")


def pair_type(answer_type_a: str, answer_type_b: str) -> str | None:
    """``human-human``, ``human-model`` or ``model-model`` from who wrote each answer; None when unknown.

    Args:
        answer_type_a: who wrote answer a: ``human`` (or ``human_...``), a model's name, or "" (unknown).
        answer_type_b: the same for answer b.
    """
    kinds = []
    for t in (answer_type_a, answer_type_b):
        t = (t or "").strip().casefold()
        if not t:
            return None
        kinds.append("human" if t.startswith("human") else "model")
    return "-".join(sorted(kinds))


@dataclass(frozen=True)
class ThreeWayMetrics:
    """A system's three-way metrics on one set of pairs.

    Attributes:
        system: the system's name.
        n: pairs scored (labelled; undecided ones included unless dropped).
        n_questions: their distinct questions (the bootstrap's clusters).
        n_undecided: pairs the system left undecided (counted wrong, or dropped and not in ``n``).
        n_unlabeled: pairs without a human label, left out.
        accuracy: share of pairs predicted right.
        macro_f1: mean F1 over ``a``, ``b`` and ``tie``.
        f1: F1 per class.
        ci: ``accuracy`` and ``macro_f1`` -> percentile 95% CI of the question bootstrap; (nan, nan)
            with fewer than 2 questions.
    """

    system: str
    n: int
    n_questions: int
    n_undecided: int
    n_unlabeled: int
    accuracy: float
    macro_f1: float
    f1: dict[str, float] = field(default_factory=dict)
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)


def _scores(conf: np.ndarray) -> dict[str, np.ndarray]:
    """Accuracy, per-class F1 and macro-F1 from confusion counts ``conf[..., true (3), pred (3 + undecided)]``."""
    k = len(CLASSES)
    tp = np.diagonal(conf[..., :, :k], axis1=-2, axis2=-1)
    true_n = conf.sum(axis=-1)
    pred_n = conf[..., :, :k].sum(axis=-2)
    total = true_n.sum(axis=-1)
    den = true_n + pred_n
    # F1 = 2PR / (P + R) = 2 tp / (true + pred); 0 where undefined (LFQA-E's average keeps all 3 classes)
    f1 = np.divide(2.0 * tp, den, out=np.zeros(np.broadcast(tp, den).shape), where=den > 0)
    acc = np.divide(tp.sum(axis=-1), total, out=np.full(np.shape(total), np.nan), where=total > 0)
    return {"accuracy": acc, "macro_f1": f1.mean(axis=-1), "f1": f1}


def three_way_metrics(y_true: Sequence[str | None], y_pred: Sequence[str | None], *, groups: Sequence[str],
                      system: str = "", undecided: str = "wrong", n_boot: int = 1000,
                      seed: int = 0) -> ThreeWayMetrics:
    """Accuracy and macro-F1 over {a, b, tie} as LFQA-E defines them, with question-bootstrap CIs.

    Args:
        y_true: the human label of each pair (``a``/``b``/``tie``; None: unlabelled, left out).
        y_pred: the system's decision (``a``/``b``/``tie``; None: undecided).
        groups: each pair's question id.
        system: the system's name for the table.
        undecided: ``wrong`` (an undecided pair counts as a wrong prediction of no class) or ``drop``.
        n_boot: bootstrap replicates.
        seed: their seed.

    Returns:
        A :class:`ThreeWayMetrics` (nan values when no pair is left).

    Raises:
        ConfigError: the sequences differ in length, a label or decision is not a/b/tie/None, an
            unknown ``undecided`` policy, or ``n_boot < 1``.
    """
    if not len(y_true) == len(y_pred) == len(groups):
        raise ConfigError(f"y_true, y_pred and groups must have one entry per pair, got lengths "
                          f"{len(y_true)}, {len(y_pred)} and {len(groups)}")
    if undecided not in UNDECIDED_POLICIES:
        raise ConfigError(f"'undecided' must be one of {list(UNDECIDED_POLICIES)}, got {undecided!r}")
    check_range("n_boot", n_boot, low=1)
    for name, seq in (("labels", y_true), ("decisions", y_pred)):
        bad = sorted({str(v) for v in seq if v is not None and v not in CLASSES})
        if bad:
            raise ConfigError(f"{name} must be 'a', 'b', 'tie' or None, got {bad}")
    n_unlabeled = sum(1 for t in y_true if t is None)
    n_undecided = sum(1 for t, p in zip(y_true, y_pred) if t is not None and p is None)
    keep = [(t, p, str(g)) for t, p, g in zip(y_true, y_pred, groups)
            if t is not None and (p is not None or undecided == "wrong")]
    k = len(CLASSES)
    nan_ci = {"accuracy": (float("nan"), float("nan")), "macro_f1": (float("nan"), float("nan"))}
    if not keep:
        return ThreeWayMetrics(system=system, n=0, n_questions=0, n_undecided=n_undecided, n_unlabeled=n_unlabeled,
                               accuracy=float("nan"), macro_f1=float("nan"), f1={c: float("nan") for c in CLASSES},
                               ci=nan_ci)
    t = np.array([CLASSES.index(x) for x, _, _ in keep])
    p = np.array([k if y is None else CLASSES.index(y) for _, y, _ in keep])  # k: the undecided column
    _, g = np.unique(np.array([q for _, _, q in keep], dtype=object).astype(str), return_inverse=True)
    n_q = int(g.max()) + 1
    per_q = np.zeros((n_q, k * (k + 1)))
    np.add.at(per_q, (g, t * (k + 1) + p), 1.0)
    point = _scores(per_q.sum(axis=0).reshape(k, k + 1))
    ci = nan_ci
    if n_q >= 2:
        w = question_bootstrap_weights(n_q, n_boot=n_boot, seed=seed)
        stats = _scores((w @ per_q).reshape(n_boot, k, k + 1))
        ci = {m: (float(np.percentile(stats[m], 2.5)), float(np.percentile(stats[m], 97.5)))
              for m in ("accuracy", "macro_f1")}
    return ThreeWayMetrics(system=system, n=len(keep), n_questions=n_q, n_undecided=n_undecided,
                           n_unlabeled=n_unlabeled, accuracy=float(point["accuracy"]),
                           macro_f1=float(point["macro_f1"]),
                           f1={c: float(v) for c, v in zip(CLASSES, point["f1"])}, ci=ci)


@dataclass(frozen=True)
class PairTypeBreakdown:
    """A system's three-way metrics overall and per pair type (LFQA-E's Figure 2).

    Attributes:
        system: the system's name.
        overall: on every labelled pair.
        by_type: pair type -> metrics on the pairs of that type (types without pairs are absent).
        n_unknown_type: labelled pairs without a pair type (an answer type is empty), in ``overall`` only.
    """

    system: str
    overall: ThreeWayMetrics
    by_type: dict[str, ThreeWayMetrics]
    n_unknown_type: int


def breakdown_by_pair_type(pairs: Sequence[PairRecord], decisions: Sequence[str | None], *, system: str = "",
                           undecided: str = "wrong", n_boot: int = 1000, seed: int = 0) -> PairTypeBreakdown:
    """Three-way metrics overall and for human-human, human-model and model-model pairs.

    Args:
        pairs: the pairs, with their human labels and answer types.
        decisions: the system's decision on each pair, same order (``a``/``b``/``tie`` or None).
        system: the system's name.
        undecided: as for :func:`three_way_metrics`.
        n_boot: bootstrap replicates.
        seed: their seed.

    Raises:
        ConfigError: ``decisions`` has another length than ``pairs``, or as :func:`three_way_metrics`.
    """
    if len(pairs) != len(decisions):
        raise ConfigError(f"decisions must have one entry per pair, got {len(decisions)} for {len(pairs)} pairs")
    types = [pair_type(p.answer_type_a, p.answer_type_b) for p in pairs]

    def metrics(idx: Sequence[int]) -> ThreeWayMetrics:
        return three_way_metrics([pairs[i].label for i in idx], [decisions[i] for i in idx],
                                 groups=[pairs[i].question_id for i in idx], system=system, undecided=undecided,
                                 n_boot=n_boot, seed=seed)

    overall = metrics(range(len(pairs)))
    by_type = {}
    for pt in PAIR_TYPES:
        idx = [i for i, t in enumerate(types) if t == pt]
        if idx:
            by_type[pt] = metrics(idx)
    unknown = sum(1 for p, t in zip(pairs, types) if t is None and p.label is not None)
    return PairTypeBreakdown(system=system, overall=overall, by_type=by_type, n_unknown_type=unknown)


def lfqa_e_tables(pairs: Sequence[PairRecord], decisions: Mapping[str, Sequence[str | None]], *,
                  n_boot: int = 1000, seed: int = 0, notes: Mapping[str, str] | None = None) -> str:
    """LFQA-E's tables: accuracy and macro-F1 over {a, b, tie} per system, overall and by pair type.

    Args:
        pairs: the pairs with their human labels and answer types.
        decisions: system -> its decision per pair (same order; None undecided, counted wrong).
        n_boot: bootstrap replicates.
        seed: their seed.
        notes: system -> a note for the table (e.g. "in-sample").
    """
    notes = dict(notes or {})
    labels = [p.label for p in pairs]
    dist = {c: sum(1 for x in labels if x == c) for c in ("a", "b", "tie")}
    out = [f"Labelled pairs: {sum(dist.values())} (a {dist['a']}, b {dist['b']}, tie {dist['tie']}); an undecided "
           "pair counts as wrong.", "",
           "| system | accuracy | macro-F1 | F1 a / b / tie | pairs | undecided | note |",
           "|---|---|---|---|---|---|---|"]
    breakdowns = {s: breakdown_by_pair_type(pairs, d, system=s, n_boot=n_boot, seed=seed) for s, d in decisions.items()}

    def cell(m, key: str) -> str:
        lo, hi = m.ci[key]
        v = getattr(m, key)
        return fmt_value(v) if math.isnan(lo) else f"{fmt_value(v)} [{fmt_value(lo)}, {fmt_value(hi)}]"

    for s, b in breakdowns.items():
        m = b.overall
        out.append(f"| {s} | {cell(m, 'accuracy')} | {cell(m, 'macro_f1')} | "
                   f"{' / '.join(fmt_value(m.f1[c]) for c in ('a', 'b', 'tie'))} | {m.n} | {m.n_undecided} | "
                   f"{notes.get(s, '')} |")
    out += ["", "By pair type (LFQA-E's breakdown; from answer_a_type / answer_b_type):", "",
            "| system | pair type | accuracy | macro-F1 | pairs |", "|---|---|---|---|---|"]
    any_type = False
    for s, b in breakdowns.items():
        for pt in PAIR_TYPES:
            if pt in b.by_type:
                any_type = True
                m = b.by_type[pt]
                out.append(f"| {s} | {pt} | {cell(m, 'accuracy')} | {cell(m, 'macro_f1')} | {m.n} |")
        if b.n_unknown_type:
            out.append(f"| {s} | unknown (an answer type is empty) | | | {b.n_unknown_type} |")
    if not any_type:
        out.append("")
        out.append("No pair has both answer types: the breakdown is empty.")
    return "\n".join(out)


def lfqa_e_page(*, version: str, model: str, inputs: Sequence[str], fmt: str, n_pairs: int, command: str,
                tables: str) -> str:
    """LFQA-E's report: the judge, the inputs, accuracy and macro-F1 tables."""
    return "\n".join([
        "# LFQA-E: reference-based three-way judging (a / b / tie)", "",
        f"Judge: {version} on {model}. Inputs: " + ", ".join(inputs) + f" ({fmt}); {n_pairs} pairs.", "",
        *command_lines(command), tables, ""])
