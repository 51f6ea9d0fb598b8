"""The pairs under analysis and the systems that decided them.

A :class:`PairSet` is the pairs of one split, one entry per pair id, with what the analyses need of
each: its question (the bootstrap's cluster), its two answers (transitivity), the human label and
the answers' lengths (verbosity). A :class:`System` is anything that picked a side on some of those
pairs: an LLM judge in one presentation order, the rubric model, a predictions file, a baseline, or
the people who labelled the pairs. It records a decision for the pairs it decided and, for those it
was given but could not decide, why (an error, no decision); a pair it was never given has neither.

Two kinds of "no decision" are kept apart. A *failure* (an error, a pair never given) is missing
data: Tables 4, 7 and 8 leave such a pair out for every system, so no system is scored on easier
pairs. An *undecided* verdict is an outcome: the system judged the pair and did not pick a side (a
judge whose order-debiased P(a) is exactly 0.5, i.e. whose verdict only followed the position).
Dropping those would keep only the pairs every judge is order-consistent on, an easier subset, so
an undecided verdict stays in the compared pairs and counts as a miss, like a "tie".
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from rubric.errors import ConfigError
from rubric.judging import DECISIONS, PAIR_COLUMNS
from rubric.preference import FITTED_ON_KEY, PREDICTIONS_META_KEY, always_a, longer_answer_wins

__all__ = ["PairSet", "System", "KINDS", "UNDECIDED", "ORDER_NAMES", "judge_systems", "model_systems", "predictions_systems", "predictions_training_questions",
           "baseline_systems", "people_system", "LONGER_WINS", "ALWAYS_A", "PEOPLE"]

log = logging.getLogger(__name__)

#: What a system is, in the order the tables list them.
KINDS: tuple[str, ...] = ("rubric model", "LLM judge", "predictions", "baseline", "people")

#: A judge's three systems: each presentation order and their mean.
ORDER_NAMES: dict[str, str] = {"ab": "order ab (as given)", "ba": "order ba (swapped)",
                               "debiased": "debiased (mean of both orders)"}

#: The value :meth:`System.verdicts` gives an undecided pair: scored like "tie", a miss.
UNDECIDED = "tie"

LONGER_WINS = "baseline: longer answer wins"
ALWAYS_A = "baseline: always a"
PEOPLE = "people (the labels)"


@dataclass(frozen=True)
class PairSet:
    """Pairs, one per pair id, in a fixed order.

    Attributes:
        pair_id / question_id / answer_id_a / answer_id_b / split: per pair (str).
        label: "a", "b", "tie", or None (unlabeled).
        n_words_a / n_words_b: the answers' lengths in whitespace tokens.
        source: where the pairs were read from (for messages).
    """

    pair_id: np.ndarray
    question_id: np.ndarray
    answer_id_a: np.ndarray
    answer_id_b: np.ndarray
    label: np.ndarray
    split: np.ndarray
    n_words_a: np.ndarray
    n_words_b: np.ndarray
    source: str = ""

    @classmethod
    def from_table(cls, table: pa.Table, *, source: str = "") -> "PairSet":
        """The pairs of a pairs table or a judgments table (whose pairs repeat once per judge and order).

        Args:
            table: a table with ``pair_id`` and :data:`rubric.judging.judgments.PAIR_COLUMNS`.
            source: where it was read from, for messages.

        Raises:
            ConfigError: a column is missing, or two rows of one pair id describe different pairs.
        """
        need = ("pair_id", *PAIR_COLUMNS)
        missing = [c for c in need if c not in table.column_names]
        if missing:
            raise ConfigError(f"{source or 'table'}: missing column(s) {', '.join(missing)}")
        cols = {c: table.column(c).to_pylist() for c in need}
        first: dict[str, int] = {}
        for i, pid in enumerate(cols["pair_id"]):
            j = first.setdefault(pid, i)
            if j != i:
                for c in PAIR_COLUMNS:
                    if cols[c][i] != cols[c][j]:
                        raise ConfigError(f"{source or 'table'}: pair {pid!r} has two values of {c}: "
                                          f"{cols[c][j]!r} and {cols[c][i]!r}")
        keep = list(first.values())
        return cls(**{c: np.array([cols[c][i] for i in keep], dtype=object) for c in need}, source=source)

    def __len__(self) -> int:
        return len(self.pair_id)

    def index(self) -> dict[str, int]:
        """pair id -> position."""
        return {p: i for i, p in enumerate(self.pair_id)}

    def take(self, positions) -> "PairSet":
        """The pairs at ``positions`` (indices or a boolean mask), in that order."""
        pos = np.asarray(positions)
        if pos.dtype == bool:
            pos = np.flatnonzero(pos)
        return PairSet(**{c: getattr(self, c)[pos] for c in ("pair_id", *PAIR_COLUMNS)}, source=self.source)

    def in_split(self, split: str) -> "PairSet":
        """The pairs of one split ("all" for every pair)."""
        return self if split == "all" else self.take(self.split == split)

    def subset(self, pair_ids: Iterable[str]) -> "PairSet":
        """The pairs with these ids, in this set's order."""
        wanted = set(pair_ids)
        return self.take(np.array([p in wanted for p in self.pair_id], dtype=bool))

    def merge(self, other: "PairSet") -> "PairSet":
        """This set plus the pairs of ``other`` it lacks.

        Raises:
            ConfigError: a pair id in both describes different pairs (another question, answer, label,
                split or length); the message names both sources.
        """
        idx = self.index()
        extra = []
        for j, pid in enumerate(other.pair_id):
            i = idx.get(pid)
            if i is None:
                extra.append(j)
                continue
            for c in PAIR_COLUMNS:
                mine, theirs = getattr(self, c)[i], getattr(other, c)[j]
                if mine != theirs:
                    raise ConfigError(f"pair {pid!r} differs between {self.source or 'one input'} and "
                                      f"{other.source or 'another'}: {c} is {mine!r} in one and {theirs!r} in the "
                                      "other (the inputs must describe the same pairs)")
        if not extra:
            return self
        add = other.take(np.array(extra, dtype=int))
        sources = self.source if other.source in self.source.split(" + ") else f"{self.source} + {other.source}"
        return PairSet(**{c: np.concatenate([getattr(self, c), getattr(add, c)]) for c in ("pair_id", *PAIR_COLUMNS)},
                       source=sources)


@dataclass(frozen=True)
class System:
    """One system's decisions on pairs.

    Attributes:
        name: the name the tables show (unique within an analysis).
        kind: one of :data:`KINDS`.
        decisions: pair id -> "a", "b" or "tie", in the input's labelling, for the pairs it decided.
        failures: pair id -> why there is no decision, for pairs it was given but failed on (an error);
            the tables leave these pairs out for every system.
        undecided: pair id -> why, for pairs it judged without picking a side (e.g. a debiased
            P(a) of exactly 0.5); the tables keep these pairs and count them as a miss.
        judge: for an LLM judge, its versioned name; else None.
        mode: for an LLM judge, "logprob" or "vote"; else None.
        order: for an LLM judge, "ab", "ba" or "debiased"; else None.
        in_sample: the system was fitted on pairs that may include the analysed ones (its rows are
            labelled in the tables).
        mark: what its rows carry for that; None: " (IN-SAMPLE)" when ``in_sample``.
        trained_questions: the question ids it was fitted on, when recorded (the rubric model's
            ``question_hashes``): each table then marks its rows by the overlap of *its* pairs with them
            (:meth:`label_on`), not by the split's.
        note: anything the tables should say beside its name (e.g. "training pairs unknown").
        source: the file it came from ("" for computed baselines).
    """

    name: str
    kind: str
    decisions: Mapping[str, str]
    failures: Mapping[str, str] = field(default_factory=dict)
    undecided: Mapping[str, str] = field(default_factory=dict)
    judge: str | None = None
    mode: str | None = None
    order: str | None = None
    in_sample: bool = False
    note: str = ""
    source: str = ""
    mark: str | None = None
    trained_questions: frozenset | None = field(default=None, repr=False)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ConfigError(f"'kind' must be one of {', '.join(KINDS)}, got {self.kind!r}")
        bad = sorted({d for d in self.decisions.values() if d not in DECISIONS}, key=str)
        if bad:
            raise ConfigError(f"system {self.name!r}: decisions must be one of {', '.join(DECISIONS)}, got {bad[:5]}")

    def decided(self, pair_ids: Iterable[str]) -> np.ndarray:
        """The decision for each pair id (None where it has none), as an object array."""
        return np.array([self.decisions.get(p) for p in pair_ids], dtype=object)

    def verdicts(self, pair_ids: Iterable[str], *, failures_as_misses: bool = False) -> np.ndarray:
        """The decision for each pair id, :data:`UNDECIDED` where it judged the pair without a decision
        (and, with ``failures_as_misses``, where it failed on it), None where it failed or was never
        given the pair (an object array)."""
        def one(p):
            if p in self.decisions:
                return self.decisions[p]
            return UNDECIDED if p in self.undecided or (failures_as_misses and p in self.failures) else None

        return np.array([one(p) for p in pair_ids], dtype=object)

    def given(self, pair_id: str) -> bool:
        """It was given the pair: it decided it, left it undecided, or failed on it (an error)."""
        return pair_id in self.decisions or pair_id in self.undecided or pair_id in self.failures

    def why_not(self, pair_id: str) -> str | None:
        """Why this system has no verdict for a pair (an error, never given); None when it has a decision
        or judged the pair undecided (a miss, see :attr:`undecided`)."""
        if pair_id in self.decisions or pair_id in self.undecided:
            return None
        return self.failures.get(pair_id, "not in its input" + (f" ({self.source})" if self.source else ""))

    @property
    def label(self) -> str:
        """The name as a table shows it, with the in-sample mark and the note."""
        mark = self.mark if self.mark is not None else " (IN-SAMPLE)" if self.in_sample else ""
        note = f" ({self.note})" if self.note else ""
        return f"{self.name}{mark}{note}"

    def label_on(self, question_ids: Sequence[str]) -> str:
        """The name as a table of these pairs (one question id per pair) shows it: marked IN-SAMPLE when
        every pair's question is one it was fitted on, PARTLY IN-SAMPLE (with the count) when some are,
        unmarked when none is; :attr:`label` when its training questions are not recorded."""
        if self.trained_questions is None:
            return self.label
        hit = sum(str(q) in self.trained_questions for q in question_ids)
        n = len(question_ids)
        mark = "" if hit == 0 else " (IN-SAMPLE)" if hit == n else f" (PARTLY IN-SAMPLE: {hit} of {n} pairs)"
        return f"{self.name}{mark} ({self.note})" if self.note else f"{self.name}{mark}"

    @property
    def plain_label(self) -> str:
        """The name and note without the in-sample mark (for rows on pairs outside its training questions)."""
        return f"{self.name} ({self.note})" if self.note else self.name


def _decisions(pair_ids: Sequence[str], decisions: Sequence, errors: Sequence | None, none_reason: str, *,
               none_is_undecided: bool = False) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Split rows into decisions, failures and undecided verdicts: an error wins over a decision; no
    decision without an error is undecided (``none_is_undecided``) or else a failure."""
    got, failed, undecided = {}, {}, {}
    for i, (pid, d) in enumerate(zip(pair_ids, decisions)):
        err = errors[i] if errors is not None else None
        if err is not None:
            failed[pid] = f"error: {err}"
        elif d is None:
            (undecided if none_is_undecided else failed)[pid] = none_reason
        else:
            got[pid] = d
    return got, failed, undecided


def judge_systems(judgments: pa.Table, *, source: str = "") -> list[System]:
    """Three systems per judge of a judgments table: order ab, order ba, and debiased.

    The debiased decision (``decision_debiased``) needs both orders: when either row of a pair has an
    error, the pair is a failure of the debiased system, with that error. A pair judged in both orders
    without a debiased decision (P(a) = 0.5 without a tie option: the verdict followed the position)
    is undecided, a miss; so is an order's row with neither a decision nor an error.

    Args:
        judgments: a validated judgments table (:func:`rubric.judging.judgments.validate_judgments`).
        source: where it was read from.

    Returns:
        For each judge in order of first appearance: its ab, ba and debiased systems.
    """
    cols = {c: judgments.column(c).to_pylist() for c in ("pair_id", "judge", "mode", "order", "decision",
                                                          "decision_debiased", "error")}
    judges: dict[str, list[int]] = {}
    for i, j in enumerate(cols["judge"]):
        judges.setdefault(j, []).append(i)
    out = []
    for judge, rows in judges.items():
        modes = sorted({cols["mode"][i] for i in rows})
        mode = "/".join(modes)
        per_order: dict[str, tuple[dict, dict, dict]] = {}
        for order in ("ab", "ba"):
            idx = [i for i in rows if cols["order"][i] == order]
            per_order[order] = _decisions([cols["pair_id"][i] for i in idx], [cols["decision"][i] for i in idx],
                                          [cols["error"][i] for i in idx], "no decision", none_is_undecided=True)
        deb, deb_failed = {}, {}
        for i in rows:
            pid = cols["pair_id"][i]
            if cols["error"][i] is not None:
                deb_failed[pid] = f"error in order {cols['order'][i]}: {cols['error'][i]}"
            elif pid not in deb_failed and cols["decision_debiased"][i] is not None:
                deb[pid] = cols["decision_debiased"][i]
        for pid in deb_failed:
            deb.pop(pid, None)
        deb_undecided = {}
        for i in rows:
            pid = cols["pair_id"][i]
            if pid not in deb and pid not in deb_failed:
                deb_undecided[pid] = "no debiased decision (P(a) = 0.5 over both orders)"
        per_order["debiased"] = (deb, deb_failed, deb_undecided)
        for order, (got, failed, undecided) in per_order.items():
            out.append(System(name=f"{judge} ({mode}), {ORDER_NAMES[order]}", kind="LLM judge", decisions=got,
                              failures=failed, undecided=undecided, judge=judge, mode=mode, order=order,
                              source=source))
    return out


def model_systems(model, pairs: pa.Table, *, in_sample: bool, source: str = "",
                  allow_provenance_mismatch: bool = False, note: str = "", mark: str | None = None,
                  trained_questions: frozenset | None = None) -> list[System]:
    """The rubric model's decisions on every pair of a pairs table: as fitted and, when the model has
    style covariates, style-controlled.

    The decisions are the model's predicted labels (for the binary model, a when P(a) >= 0.5, else b),
    the same as ``evaluate`` scores. A pair whose rubric values are missing is a failure with the reason
    :func:`rubric.preference.predict.predict_pairs` gives.

    Args:
        model: a fitted :class:`rubric.preference.model.PreferenceModel`.
        pairs: the score output's pairs table.
        in_sample: the model was fitted on pairs that may include the analysed ones.
        source: where the table and model were read from.
        note: what the tables say beside the rows' names (e.g. that the model is transferred).
        mark: the rows' in-sample mark (see :attr:`System.mark`).
        trained_questions: the model's training question ids, when recorded (see :attr:`System.trained_questions`).
        allow_provenance_mismatch: as in ``evaluate``.

    Raises:
        ProvenanceError: the model's features were made differently from the table's (not allowed).
    """
    from rubric.preference import model_inputs, model_row_names
    from rubric.preference import predict_pairs

    pred = predict_pairs(model, pairs, allow_provenance_mismatch=allow_provenance_mismatch)
    pids = pred.column("pair_id").to_pylist()
    got, failed, _ = _decisions(pids, pred.column("predicted").to_pylist(), pred.column("error").to_pylist(),
                                "no prediction")
    name, style_name = model_row_names(model)
    out = [System(name=name, kind="rubric model", decisions=got, failures=failed, in_sample=in_sample,
                  source=source, note=note, mark=mark, trained_questions=trained_questions)]
    if model.style_features_:
        dm = model_inputs(model, pairs, keep_unlabeled=True, keep_ties=True)
        sc = model.predict(dm.X, style_controlled=True) if len(dm.y) else []
        sc_got = {str(p): str(d) for p, d in zip(dm.pair_id, sc)}
        out.append(System(name=style_name, kind="rubric model", decisions=sc_got,
                          failures={p: r for p, r in failed.items() if p not in sc_got}, in_sample=in_sample,
                          source=source, note=note, mark=mark, trained_questions=trained_questions))
    return out


def predictions_systems(table: pa.Table, *, name: str, source: str = "", note: str = "") -> list[System]:
    """Systems from a predictions file: ``pair_id`` and ``predicted`` ("a"/"b"/"tie", null for none),
    optionally ``system`` (one system per value; else the whole file is one system called ``name``)
    and ``error``.

    Raises:
        ConfigError: ``pair_id`` or ``predicted`` is missing, a pair id occurs twice for one system,
            or a prediction is not "a"/"b"/"tie".
    """
    missing = [c for c in ("pair_id", "predicted") if c not in table.column_names]
    if missing:
        raise ConfigError(f"{source or name}: a predictions file needs the column(s) {', '.join(missing)}")
    trained = predictions_training_questions(table)
    if trained is not None:  # `predict` recorded its model's training questions: marked by overlap, not guessed
        note = ""
    pids = [None if p is None else str(p) for p in table.column("pair_id").to_pylist()]
    predicted = table.column("predicted").to_pylist()
    errors = table.column("error").to_pylist() if "error" in table.column_names else None
    names = (table.column("system").to_pylist() if "system" in table.column_names else [name] * len(pids))
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(names):
        groups.setdefault(str(s) if s is not None else name, []).append(i)
    out = []
    for sys_name, rows in groups.items():
        seen = Counter(pids[i] for i in rows)
        twice = [p for p, n in seen.items() if n > 1]
        if twice:
            raise ConfigError(f"{source or name}: system {sys_name!r} has {len(twice)} pair id(s) more than once, "
                              f"e.g. {twice[0]!r}")
        bad = sorted({str(predicted[i]) for i in rows if predicted[i] is not None and predicted[i] not in DECISIONS})
        if bad:
            raise ConfigError(f"{source or name}: system {sys_name!r}: 'predicted' must be a, b or tie, got {bad[:5]}")
        got, failed, _ = _decisions([pids[i] for i in rows], [predicted[i] for i in rows],
                                    None if errors is None else [errors[i] for i in rows], "no prediction")
        out.append(System(name=sys_name, kind="predictions", decisions=got, failures=failed, note=note, source=source,
                          in_sample=bool(trained), trained_questions=trained))
    return out


def predictions_training_questions(table: pa.Table) -> frozenset | None:
    """The training question ids of the model a predictions table came from, when ``predict`` recorded them
    (its schema metadata, ``rubric.preference.PREDICTIONS_META_KEY``); None for any other predictions file."""
    raw = (table.schema.metadata or {}).get(PREDICTIONS_META_KEY)
    if raw is None:
        return None
    try:
        fitted = json.loads(raw).get(FITTED_ON_KEY)
    except (ValueError, AttributeError):
        return None
    hashes = fitted.get("question_hashes") if isinstance(fitted, dict) else None
    return frozenset(str(h) for h in hashes) if isinstance(hashes, list) else None


def baseline_systems(pairs: PairSet) -> list[System]:
    """"Longer answer wins" (a on equal length) and "always a" on every pair of ``pairs``."""
    pids = [str(p) for p in pairs.pair_id]
    longer = longer_answer_wins(pairs.n_words_a.astype(float), pairs.n_words_b.astype(float))
    return [System(name=LONGER_WINS, kind="baseline", decisions=dict(zip(pids, longer))),
            System(name=ALWAYS_A, kind="baseline", decisions=dict(zip(pids, always_a(len(pids)))))]


def people_system(pairs: PairSet) -> System:
    """The human labels as a system (for transitivity: do people's own judgements cycle?)."""
    got = {str(p): lab for p, lab in zip(pairs.pair_id, pairs.label) if lab is not None}
    failed = {str(p): "unlabeled" for p, lab in zip(pairs.pair_id, pairs.label) if lab is None}
    return System(name=PEOPLE, kind="people", decisions=got, failures=failed)
