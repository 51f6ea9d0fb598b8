"""The analyses of §5 (Tables 4-8) on small hand-made judgements, and ``lfqa-rubric analyze`` end to end.

Every expected count below is worked out by hand in the comment beside it.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rubric.analysis import (ALWAYS_A, LONGER_WINS, PairSet, System, baseline_systems, bias_direction,
                             classify_triad, compare_systems, find_triads, judge_systems, metric_row,
                             paired_metric_deltas, parse_perturbed, people_system, perturbation_deltas, position_bias,
                             predictions_systems, transitivity, verbosity_bias)
from rubric.errors import ConfigError, InputError
from rubric.judging.judgments import judgments_table, write_judgments
from rubric.preference.metrics import ClusteredMean, evaluate_predictions

JUDGE = "judge.plain.v1"
P_A = {"a": 0.8, "b": 0.2, "tie": 0.5}


def pairs_of(specs, split="test") -> PairSet:
    """A PairSet from (pair_id, question_id, answer_a, answer_b, label, n_words_a, n_words_b)."""
    cols = ("pair_id", "question_id", "answer_id_a", "answer_id_b", "label", "n_words_a", "n_words_b")
    table = pa.table({c: [s[i] for s in specs] for i, c in enumerate(cols)} | {"split": [split] * len(specs)})
    return PairSet.from_table(table, source="test")


def judgment_rows(specs, decisions, *, judge=JUDGE, errors=None, split="test"):
    """Rows of the judgments table for ``decisions``: pair id -> (decision ab, decision ba); ``errors``:
    (pair id, order) -> message. The debiased judgement is the mean of the two orders' P(a)."""
    errors = errors or {}
    rows = []
    for pid, q, a, b, label, na, nb in specs:
        if pid not in decisions:
            continue
        ab, ba = decisions[pid]
        failed = any((pid, o) in errors for o in ("ab", "ba"))
        mean = None if failed else (P_A[ab] + P_A[ba]) / 2
        deb = None if mean is None else "a" if mean > 0.5 else "b" if mean < 0.5 else "tie"
        for order, d in (("ab", ab), ("ba", ba)):
            err = errors.get((pid, order))
            rows.append({"pair_id": pid, "question_id": q, "answer_id_a": a, "answer_id_b": b, "label": label,
                         "split": split, "n_words_a": na, "n_words_b": nb, "judge": judge, "mode": "logprob",
                         "order": order, "p_a": None if err else P_A[d], "p_tie": None,
                         "decision": None if err else d, "p_a_debiased": mean, "decision_debiased": deb,
                         "error": err, "model": "m", "model_revision": None, "template_hash": "h",
                         "backend": "transformers"})
    return rows


def by_order(systems):
    return {s.order: s for s in systems}


# ---------------------------------------------------------------- position (Table 6)

POSITION_PAIRS = [
    ("p1", "q1", "x1", "y1", "a", 10, 10),
    ("p2", "q1", "x2", "y2", "a", 10, 10),
    ("p3", "q2", "x3", "y3", "b", 10, 10),
    ("p4", "q2", "x4", "y4", "a", 10, 10),
    ("p5", "q3", "x5", "y5", "b", 10, 10),
    ("p6", "q3", "x6", "y6", "a", 10, 10),
    ("p7", "q3", "x7", "y7", None, 10, 10),
]
POSITION_DECISIONS = {
    "p1": ("a", "a"),    # consistent
    "p2": ("a", "b"),    # flip: the first-shown answer wins both times
    "p3": ("b", "a"),    # flip: the second-shown answer wins both times
    "p4": ("b", "b"),    # consistent
    "p5": ("tie", "a"),  # flip from a tie
    "p6": ("a", "a"),    # order ba fails below: not decided in both orders
    "p7": ("a", "b"),    # unlabeled flip towards the first-shown answer
}


def test_position_flip_counts_first_position_shares_and_deltas():
    pairs = pairs_of(POSITION_PAIRS)
    table = judgments_table(judgment_rows(POSITION_PAIRS, POSITION_DECISIONS, errors={("p6", "ba"): "timeout"}))
    s = by_order(judge_systems(table))
    result = position_bias(pairs, [(s["ab"], s["ba"])], n_boot=200)
    (r,) = result.rows
    assert r.judge == f"{JUDGE} (logprob)"
    # decided in both orders: p1-p5 and p7; flips: p2, p3, p5, p7
    assert (r.n_both, r.n_questions_both, r.n_flips) == (6, 3, 4)
    assert r.flip_rate.value == pytest.approx(4 / 6)
    assert (r.flips_to_first, r.flips_to_second, r.flips_with_tie) == (2, 1, 1)  # p2 and p7; p3; p5
    # per-question flip shares are 1/2 (q1), 1/2 (q2), 2/2 (q3): no resample can leave [0.5, 1]
    assert 0.5 <= r.flip_rate.ci[0] <= r.flip_rate.value <= r.flip_rate.ci[1] <= 1.0
    # ab decides a on p1, p2, p7 (3 of 6); ba decides b on p2, p4, p7 (3 of 6)
    assert r.first_wins_ab.value == pytest.approx(0.5) and r.first_wins_ba.value == pytest.approx(0.5)
    # labelled and decided in both orders: p1-p5. Right in ab: p1, p2, p3 (3/5); in ba: p1 only (1/5)
    assert (r.n, r.n_questions) == (5, 3)
    acc = r.deltas["accuracy"]
    assert (acc.base, acc.other, acc.delta) == pytest.approx((0.6, 0.2, -0.4))
    assert acc.relative == pytest.approx(-0.4 / 0.6)
    # reference: people chose a in 4 (p1, p2, p4, p6) of the 6 labelled pairs
    assert result.people_a.value == pytest.approx(4 / 6) and result.people_a.n == 6


def test_position_refuses_a_pair_of_systems_that_is_not_one_judge_in_both_orders():
    table = judgments_table(judgment_rows(POSITION_PAIRS, POSITION_DECISIONS))
    s = by_order(judge_systems(table))
    with pytest.raises(ConfigError, match="needs \\(order ab, order ba\\) of one judge"):
        position_bias(pairs_of(POSITION_PAIRS), [(s["ab"], s["debiased"])])


# ---------------------------------------------------------------- transitivity (Table 5)

# Lengths belong to answers (A=10 ... O=150, all different) so "longer answer wins" ranks answers.
_LEN = {name: 10 * (i + 1) for i, name in enumerate("ABCDEFGHIJKLMNOPQ")}


def _pair(pid, q, a, b, label="a"):
    return (pid, q, a, b, label, _LEN[a], _LEN[b])


TRIAD_PAIRS = [
    _pair("ab", "qa", "A", "B"), _pair("bc", "qa", "B", "C"), _pair("ca", "qa", "C", "A"),    # a 3-cycle below
    _pair("de", "qb", "D", "E"), _pair("ef", "qb", "E", "F"), _pair("df", "qb", "D", "F"),    # transitive
    _pair("gh", "qc", "G", "H"), _pair("hi", "qc", "H", "I"), _pair("gi", "qc", "G", "I"),    # a tie in it
    _pair("jk", "qd", "J", "K"), _pair("kl", "qd", "K", "L"), _pair("jl", "qd", "J", "L"),    # an error in it
    _pair("mn", "qe", "M", "N"), _pair("no", "qe", "N", "O"),                                 # 3 answers, 2 pairs
    _pair("pq", "qf", "P", "Q"),                                                              # 2 answers
]
TRIAD_DECISIONS = {
    "ab": ("a", "a"), "bc": ("a", "a"), "ca": ("a", "a"),     # A > B, B > C, C > A
    "de": ("a", "a"), "ef": ("a", "a"), "df": ("a", "a"),     # D > E, E > F, D > F
    "gh": ("tie", "tie"), "hi": ("a", "a"), "gi": ("b", "b"),
    "jk": ("a", "a"), "kl": ("a", "a"), "jl": ("a", "a"),
    "mn": ("a", "a"), "no": ("a", "a"), "pq": ("a", "a"),
}


def test_find_triads_needs_all_three_pairs():
    triads, counts = find_triads(pairs_of(TRIAD_PAIRS))
    assert [(t.question_id, t.answers) for t in triads] == [("qa", ("A", "B", "C")), ("qb", ("D", "E", "F")),
                                                            ("qc", ("G", "H", "I")), ("qd", ("J", "K", "L"))]
    assert counts == {"n_questions": 6, "n_questions_3plus": 5, "n_duplicate_pairs": 0}


@pytest.mark.parametrize("winners, kind", [
    (("A", "B", "C"), "cycle"), (("A", "B", "A"), "transitive"), (("A", None, "A"), "missing"),
    (("A", "tie", "C"), "tie"), ((None, "tie", "A"), "missing"),
])
def test_classify_triad(winners, kind):
    assert classify_triad(winners) == kind


def test_transitivity_counts_a_cycle_a_transitive_and_untestable_triads():
    pairs = pairs_of(TRIAD_PAIRS)
    table = judgments_table(judgment_rows(TRIAD_PAIRS, TRIAD_DECISIONS, errors={("kl", "ba"): "timeout"}))
    s = by_order(judge_systems(table))
    longer, always = baseline_systems(pairs)
    result = transitivity(pairs, [s["ab"], s["ba"], s["debiased"], longer, always], n_boot=100)
    assert (result.n_triads, result.n_questions_with_triads, result.n_questions_3plus) == (4, 4, 5)
    rows = {r.system: r for r in result.rows}
    counts = {name: (r.n_transitive, r.n_cycles, r.n_untestable_missing, r.n_untestable_tie)
              for name, r in rows.items()}
    # order ab decided every pair: qa cycles, qb and qd are transitive, qc has a tie
    assert counts[s["ab"].name] == (2, 1, 0, 1)
    # order ba failed on kl: qd is not testable; the debiased judgement needs both orders
    assert counts[s["ba"].name] == (1, 1, 1, 1)
    assert counts[s["debiased"].name] == (1, 1, 1, 1)
    assert rows[s["ab"].name].violation.value == pytest.approx(1 / 3)
    assert rows[s["ba"].name].violation.value == pytest.approx(1 / 2)
    # a pointwise scorer (answer length, all different) cannot cycle: computed, not assumed
    assert counts[LONGER_WINS] == (4, 0, 0, 0) and rows[LONGER_WINS].violation.value == 0.0
    assert rows[LONGER_WINS].violation.ci == (0.0, 0.0)
    # "always a" depends on the pairs' orientation: C-A after A-B and B-C closes a cycle in qa
    assert counts[ALWAYS_A] == (3, 1, 0, 0)


def test_transitivity_of_people_and_of_a_system_with_a_position_offset():
    # equal lengths: "longer answer wins" gives a to all three pairs of qa and so cycles, like a
    # pointwise score plus a first-position bonus (the rubric model's intercept)
    specs = [("ab", "qa", "A", "B", "a", 5, 5), ("bc", "qa", "B", "C", "b", 5, 5), ("ca", "qa", "C", "A", None, 5, 5)]
    pairs = pairs_of(specs)
    longer, _ = baseline_systems(pairs)
    result = transitivity(pairs, [longer, people_system(pairs)], n_boot=10)
    longer_row, people_row = result.rows
    assert (longer_row.n_cycles, longer_row.n_transitive) == (1, 0)
    assert (people_row.n_untestable_missing, people_row.n_testable) == (1, 0)  # ca is unlabeled
    assert math.isnan(people_row.violation.value)


def test_the_papers_rate_drops_triads_whose_shared_answer_won_both_listed_comparisons():
    # one question per triad, listed as the paper's Table 5 lists them: A B, B C, C A
    specs = [(f"{q}{x}{y}", q, f"{q}{x}", f"{q}{y}", None, 5, 5) for q in ("q1", "q2", "q3", "q4")
             for x, y in (("A", "B"), ("B", "C"), ("C", "A"))]
    pairs = pairs_of(specs)
    verdicts = {"q1": ("a", "a", "a"),   # A, B, C: every answer wins once, a 3-cycle
                "q2": ("a", "a", "b"),   # A, B, A: transitive, A beats both
                "q3": ("b", "a", "a"),   # B, B, C: B, shared by A-B and B-C, wins both: not testable (paper)
                "q4": ("b", "a", None)}  # C-A undecided: not testable in both counts
    decisions = {f"{q}{x}{y}": d for q, ds in verdicts.items() for (x, y), d in zip((("A", "B"), ("B", "C"), ("C", "A")),
                                                                                    ds) if d is not None}
    system = System(name="J", kind="LLM judge", decisions=decisions)
    (row,) = transitivity(pairs, [system], n_boot=20).rows
    assert (row.n_testable, row.n_cycles, row.n_shared_wins_both, row.n_testable_paper) == (3, 1, 1, 2)
    assert row.violation.value == pytest.approx(1 / 3) and row.violation_paper.value == pytest.approx(1 / 2)
    assert row.violation_paper.n == 2


def test_duplicate_pairs_of_the_same_two_answers_count_once():
    specs = [_pair("ab", "qa", "A", "B"), _pair("ba", "qa", "B", "A"), _pair("bc", "qa", "B", "C"),
             _pair("ac", "qa", "A", "C")]
    triads, counts = find_triads(pairs_of(specs))
    assert len(triads) == 1 and counts["n_duplicate_pairs"] == 1
    assert triads[0].pairs == (0, 2, 3)


# ---------------------------------------------------------------- verbosity (Table 7)

VERBOSITY_PAIRS = [
    ("v1", "q1", "a1", "b1", "a", 10, 20),   # people: the shorter; system b: the longer -> short -> long
    ("v2", "q1", "a2", "b2", "a", 30, 20),   # people: the longer; system b: the shorter -> long -> short
    ("v3", "q2", "a3", "b3", "b", 30, 20),   # people: the shorter (b); system a: the longer -> short -> long
    ("v4", "q2", "a4", "b4", "b", 15, 15),   # equal lengths
    ("v5", "q3", "a5", "b5", "a", 10, 40),   # the system says tie
    ("v6", "q3", "a6", "b6", "a", 10, 40),   # agreement
    ("v7", "q3", "a7", "b7", "b", 5, 50),    # people: the longer (b); system a: the shorter -> long -> short
    ("v8", "q4", "a8", "b8", "a", 20, 10),   # the system did not decide it
]


def test_verbosity_counts_disagreements_by_length():
    pairs = pairs_of(VERBOSITY_PAIRS)
    system = System(name="judge", kind="LLM judge", decisions={"v1": "b", "v2": "b", "v3": "a", "v4": "a",
                                                               "v5": "tie", "v6": "a", "v7": "a"})
    result = verbosity_bias(pairs, [system], n_boot=100)
    (r,) = result.rows
    assert (r.n, r.n_disagreements, r.short_to_long, r.long_to_short, r.equal_length, r.system_tie) == \
        (7, 6, 2, 2, 1, 1)
    assert r.share_short_to_long.value == pytest.approx(0.5) and r.share_short_to_long.n == 4
    assert r.direction == "no clear direction"
    # people chose the longer answer in v2, v7, v8 of the 7 pairs of unequal length
    assert result.people_longer.value == pytest.approx(3 / 7) and result.people_longer.n == 7


def test_longer_answer_wins_disagrees_only_towards_the_longer_answer():
    pairs = pairs_of(VERBOSITY_PAIRS)
    longer, always = baseline_systems(pairs)
    rows = {r.system: r for r in verbosity_bias(pairs, [longer, always], n_boot=100).rows}
    # longer wins picks b, a, a, a (equal lengths), b, b, b, a: wrong on v1, v3, v5, v6 (the longer one, where
    # people chose the shorter) and on v4 (equal lengths)
    assert (rows[LONGER_WINS].short_to_long, rows[LONGER_WINS].long_to_short, rows[LONGER_WINS].equal_length) == \
        (4, 0, 1)
    assert rows[LONGER_WINS].direction == "long-biased"
    # always a is wrong on v3, v4, v7: v3 took the longer a, v7 the shorter a, v4 equal
    assert (rows[ALWAYS_A].short_to_long, rows[ALWAYS_A].long_to_short, rows[ALWAYS_A].equal_length) == (1, 1, 1)


@pytest.mark.parametrize("ci, direction", [((0.55, 0.9), "long-biased"), ((0.1, 0.45), "short-biased"),
                                           ((0.4, 0.6), "no clear direction"), ((math.nan, math.nan), "n/a")])
def test_bias_direction_reads_the_ci(ci, direction):
    assert bias_direction(ClusteredMean(0.5, ci, 10, 5)) == direction


# ---------------------------------------------------------------- Table 4: the same pairs for every system

TABLE4_PAIRS = [
    ("t1", "q1", "a1", "b1", "a", 10, 5),
    ("t2", "q1", "a2", "b2", "b", 10, 5),
    ("t3", "q2", "a3", "b3", "a", 5, 10),
    ("t4", "q2", "a4", "b4", "b", 5, 10),
    ("t5", "q3", "a5", "b5", "a", 10, 5),
    ("t6", "q3", "a6", "b6", "tie", 10, 5),
    ("t7", "q3", "a7", "b7", None, 10, 5),
]


def test_a_judge_error_drops_the_pair_for_every_system_and_is_reported():
    pairs = pairs_of(TABLE4_PAIRS)
    decisions = {"t1": ("a", "a"), "t2": ("a", "b"), "t3": ("a", "a"), "t4": ("b", "b"), "t5": ("b", "a"),
                 "t6": ("a", "a"), "t7": ("a", "a")}
    table = judgments_table(judgment_rows(TABLE4_PAIRS, decisions, errors={("t2", "ab"): "timeout"}))
    judges = judge_systems(table, source="J")
    preds = predictions_systems(pa.table({"pair_id": ["t1", "t2", "t4", "t5"], "predicted": ["a", "b", "b", "b"],
                                          "system": ["enc"] * 4}), name="file", source="preds.parquet")
    systems = [*judges, *preds, *baseline_systems(pairs)]
    c = compare_systems(pairs, systems, n_boot=100, judge_failures="drop")
    # labelled a/b: t1-t5 (t6 is a tie, t7 unlabeled); t2 failed in order ab, t3 is not in the predictions
    assert (c.n_pairs_split, c.n_labelled, c.n_tie_labels, c.n_unlabeled) == (7, 5, 1, 1)
    assert c.pair_ids == ("t1", "t4", "t5") and c.n_dropped == 2 and c.n_questions == 3
    assert all(r.n == 3 and r.n_questions == 3 for r in c.rows)
    undecided = {u.system: u.reasons for u in c.undecided}
    ab, ba, deb = (s.name for s in judges)
    assert undecided[ab] == {"error: timeout": 1}
    assert undecided[ba] == {}
    assert undecided[deb] == {"error in order ab: timeout": 1}
    assert undecided["enc"] == {"not in its input (preds.parquet)": 1}
    assert undecided[LONGER_WINS] == {} and undecided[ALWAYS_A] == {}
    acc = {s.name: r.values["accuracy"] for s, r in zip(c.systems, c.rows)}
    # on t1 (a), t4 (b), t5 (a): ab says a, b, b; ba says a, b, a; debiased a, b, tie; enc a, b, b
    assert acc[ab] == pytest.approx(2 / 3) and acc[ba] == 1.0 and acc[deb] == pytest.approx(2 / 3)
    assert acc["enc"] == pytest.approx(2 / 3)
    # longer wins: a, b, a; always a: a, a, a
    assert acc[LONGER_WINS] == 1.0 and acc[ALWAYS_A] == pytest.approx(2 / 3)


def test_two_systems_with_one_name_are_refused():
    pairs = pairs_of(TABLE4_PAIRS)
    with pytest.raises(ConfigError, match="more than one system is called 'baseline: longer answer wins', "
                                          "'baseline: always a': "):
        compare_systems(pairs, baseline_systems(pairs) * 2, n_boot=10)


def test_predictions_files_are_checked():
    with pytest.raises(ConfigError, match="needs the column\\(s\\) predicted"):
        predictions_systems(pa.table({"pair_id": ["t1"]}), name="f")
    with pytest.raises(ConfigError, match="'predicted' must be a, b or tie, got \\['A'\\]"):
        predictions_systems(pa.table({"pair_id": ["t1"], "predicted": ["A"]}), name="f")
    with pytest.raises(ConfigError, match="system 'f' has 1 pair id\\(s\\) more than once"):
        predictions_systems(pa.table({"pair_id": ["t1", "t1"], "predicted": ["a", "b"]}), name="f")
    (one,) = predictions_systems(pa.table({"pair_id": ["t1", "t2", "t3"], "predicted": ["a", None, "b"],
                                           "error": [None, None, "too long"]}), name="f")
    assert one.decisions == {"t1": "a"} and one.failures == {"t2": "no prediction", "t3": "error: too long"}


# ---------------------------------------------------------------- paired deltas and perturbations (Table 8)

def test_without_ties_the_metrics_are_evaluate_predictions_ones():
    y = ["a", "b", "a", "b", "a", "b", "a"]
    base = ["a", "b", "b", "b", "a", "a", "a"]
    other = ["a", "a", "a", "a", "b", "b", "b"]
    groups = ["q1", "q1", "q2", "q2", "q3", "q3", "q4"]
    deltas = paired_metric_deltas(y, base, other, groups=groups, n_boot=100)
    for pred, side in ((base, "base"), (other, "other")):
        ours = metric_row("s", y, pred, groups=groups, n_boot=200, seed=3)
        theirs = evaluate_predictions("s", y, pred, groups=groups, n_boot=200, seed=3)
        assert ours.values == pytest.approx(theirs.values)
        assert all(ours.ci[m] == pytest.approx(theirs.ci[m]) for m in theirs.ci)
        assert all(getattr(d, side) == pytest.approx(theirs.values[m]) for m, d in deltas.items())
    same = paired_metric_deltas(y, base, base, groups=groups, n_boot=100)
    assert all(d.delta == 0 and d.ci == (0.0, 0.0) for d in same.values())


def test_a_tie_is_a_miss_not_a_class():
    # a: 1 right of 2 predicted, 1 of 2 true -> P 1/2, R 1/2, F1 1/2
    # b: 1 right of 1 predicted, 1 of 2 true -> P 1,   R 1/2, F1 2/3
    row = metric_row("judge", ["a", "a", "b", "b"], ["a", "tie", "b", "a"], groups=["q1", "q1", "q2", "q2"],
                     n_boot=50)
    assert row.values == pytest.approx({"accuracy": 0.5, "precision": 0.75, "recall": 0.5, "f1": (0.5 + 2 / 3) / 2})
    with pytest.raises(ConfigError, match="labels must be a or b"):
        metric_row("judge", ["tie"], ["a"], groups=["q1"])
    with pytest.raises(ConfigError, match="decisions must be one of a, b, tie, got 'A'"):
        metric_row("judge", ["a"], ["A"], groups=["q1"])


def test_perturbation_deltas_match_pairs_by_id():
    specs = [("r1", "q1", "a1", "b1", "a", 10, 5), ("r2", "q1", "a2", "b2", "b", 10, 5),
             ("r3", "q2", "a3", "b3", "a", 10, 5), ("r4", "q2", "a4", "b4", "b", 10, 5),
             ("r5", "q3", "a5", "b5", "a", 10, 5)]
    # the perturbed copy: r5 is missing, the answers are longer and have new ids
    perturbed_specs = [(p, q, a + "'", b + "'", lab, na + 3, nb + 9) for p, q, a, b, lab, na, nb in specs[:4]]
    original, perturbed = pairs_of(specs), pairs_of(perturbed_specs)
    judge = System(name="J", kind="LLM judge", decisions={"r1": "a", "r2": "b", "r3": "a", "r4": "a", "r5": "a"})
    judge_p = System(name="J", kind="LLM judge", decisions={"r1": "b", "r2": "b", "r3": "b", "r4": "a"})
    encoder = System(name="enc", kind="predictions", decisions={"r1": "a"})
    result = perturbation_deltas("typos", original, perturbed, [judge, encoder, *baseline_systems(original)],
                                 [judge_p, *baseline_systems(perturbed)], n_boot=100)
    assert (result.n, result.n_questions, result.n_labelled, result.n_in_perturbed) == (4, 2, 5, 4)
    assert result.only_original == ["enc"] and result.only_perturbed == []
    rows = {r.system: r for r in result.rows}
    # J: right on r1, r2, r3 of r1-r4 (3/4), then on r2 only (1/4); decisions changed on r1 and r3
    acc = rows["J"].deltas["accuracy"]
    assert (acc.base, acc.other, acc.delta, acc.relative) == pytest.approx((0.75, 0.25, -0.5, -2 / 3))
    assert rows["J"].n_changed == 2
    # longer answer wins: a on every original pair (a longer), b on every perturbed one (b gains 9 words)
    assert rows[LONGER_WINS].n_changed == 4
    assert rows[LONGER_WINS].deltas["accuracy"].delta == 0.0
    assert rows[ALWAYS_A].deltas["accuracy"].delta == 0.0 and rows[ALWAYS_A].n_changed == 0


def test_a_perturbed_set_must_keep_the_labels():
    original = pairs_of([("r1", "q1", "a1", "b1", "a", 10, 5)])
    perturbed = pairs_of([("r1", "q1", "a1", "b1", "b", 10, 5)])
    with pytest.raises(ConfigError, match="must keep each pair's id, question and label"):
        perturbation_deltas("typos", original, perturbed, [], [], n_boot=10)


def test_parse_perturbed_groups_by_name(tmp_path):
    (tmp_path / "typos_judge").mkdir()
    assert parse_perturbed(["typos=a/out", "typos=b/out", str(tmp_path / "typos_judge")]) == {
        "typos": ["a/out", "b/out"], "typos_judge": [str(tmp_path / "typos_judge")]}


# ---------------------------------------------------------------- lfqa-rubric analyze, end to end

N_Q, N_ANS = 12, 4
FILLER = [6, 2, 9, 4]  # words added to answer k: lengths are not in quality order


def _split(q: int) -> str:
    return "train" if q < 6 else "dev" if q < 8 else "test"


def _records(perturbed: bool = False):
    """Every pair of 4 answers to each of 12 questions; answer k is better than answer j < k."""
    from rubric.io.records import PairRecord

    recs, splits, raw = [], [], {}
    for q in range(N_Q):
        texts = [f"answer {k} to question {q}" + " filler" * FILLER[k] + (" typo" if perturbed else "")
                 for k in range(N_ANS)]
        for k, t in enumerate(texts):
            raw[t] = 0.2 + 0.15 * k + 0.01 * (q % 3)
        for i in range(N_ANS):
            for j in range(i + 1, N_ANS):
                first, second = (i, j) if (i + j + q) % 2 == 0 else (j, i)
                label = "a" if first > second else "b"
                recs.append((q, first, second, PairRecord(f"q{q}-{i}{j}", f"question {q}?", texts[first],
                                                          texts[second], label)))
                splits.append(_split(q))
    return recs, splits, raw


def _score_output(out, perturbed: bool = False):
    from rubric.tables.features import answers_table, pairs_table
    from rubric.io.records import explode
    from rubric.scoring.scorer import Provenance, Score
    from rubric.scoring.specs import RUBRICS

    conc = RUBRICS.get("conciseness.lexical_density.v1")
    recs, splits, raw = _records(perturbed)
    pairs = [r[3] for r in recs]
    items = explode(pairs)
    answers = answers_table(items, [conc], {"conciseness": [Score.ok(raw[it.answer]) for it in items]},
                            {"conciseness": Provenance(conc.version, "spacy", "en_core_web_sm", "3.8.0")})
    table = pairs_table(pairs, splits, answers)
    out.mkdir(parents=True)
    pq.write_table(table, out / "pairs.parquet")
    return table


def _judge_winner(q: int, i: int, j: int, first: int, order: str, perturbed: bool) -> int:
    """The answer the judge prefers (see the test's comments for what each rule does to the tables)."""
    if perturbed and q == 11:
        return min(i, j)  # perturbed answers of question 11 fool the judge on all 6 pairs
    if q == 9 and {i, j} <= {0, 1, 2}:
        return {(0, 1): 0, (1, 2): 1, (0, 2): 2}[(i, j)]  # a 3-cycle among answers 0, 1, 2
    if q == 8 and order == "ab":
        return first  # position bias: in order ab the first-shown answer always wins
    return max(i, j)


def _judge_output(out, perturbed: bool = False):
    recs, splits, _ = _records(perturbed)
    rows = []
    for (q, first, second, p), split in zip(recs, splits):
        i, j = sorted((first, second))
        error = "timeout" if (q, i, j) == (10, 0, 1) and not perturbed else None
        dec = {}
        for order in ("ab", "ba"):
            w = _judge_winner(q, i, j, first, order, perturbed)
            dec[order] = "a" if w == first else "b"
        spec = [(p.pair_id, p.question_id, p.answer_id_a, p.answer_id_b, p.label, len(p.answer_a.split()),
                 len(p.answer_b.split()))]
        rows += judgment_rows(spec, {p.pair_id: (dec["ab"], dec["ba"])}, split=split,
                              errors={(p.pair_id, "ba"): error} if error else None)
    write_judgments(judgments_table(rows), out)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    from rubric.preference.evaluate import fit_model

    root = tmp_path_factory.mktemp("analyze")
    table = _score_output(root / "score")
    model, _ = fit_model(table, split="train")
    model.to_json(root / "model.json")
    _judge_output(root / "judge")
    recs, splits, _ = _records()
    test = [(q, first, second, p) for (q, first, second, p), s in zip(recs, splits) if s == "test"]
    # the encoder is right everywhere but question 11, where it always says a
    pq.write_table(pa.table({"pair_id": [p.pair_id for *_, p in test],
                             "predicted": ["a" if q == 11 else p.label for q, _, _, p in test],
                             "p_a": [0.5] * len(test), "system": ["encoder.modernbert.v1"] * len(test)}),
                   root / "encoder.parquet")
    _score_output(root / "score_typos", perturbed=True)
    _judge_output(root / "judge_typos", perturbed=True)
    return root


def _line(text: str, start: str) -> str:
    hits = [line for line in text.splitlines() if line.startswith(start)]
    assert len(hits) == 1, (start, hits)
    return hits[0]


def test_analyze_cli_end_to_end(outputs, capsys):
    from workers.cli import main

    root = outputs
    md = root / "report" / "analysis.md"
    rc = main(["analyze", str(root / "score"), str(root / "judge"), "--model", str(root / "model.json"),
               "--predictions", str(root / "encoder.parquet"),
               "--perturbed", f"typos={root / 'score_typos'}", f"typos={root / 'judge_typos'}",
               "--n-boot", "50", "--judge-failures", "drop", "--out", str(md)])
    assert rc == 0, capsys.readouterr().err
    text = md.read_text()
    assert text.strip() == capsys.readouterr().out.strip()
    for png in ("analysis_position.png", "analysis_verbosity.png", "analysis_perturbation.png"):
        assert (md.parent / png).stat().st_size > 1000
    command = _line(text, "Command: `lfqa-rubric analyze ")
    assert f"--perturbed typos={root / 'score_typos'} typos={root / 'judge_typos'}" in command
    ab, ba, deb = (f"| {JUDGE} (logprob), {o}" for o in ("order ab (as given)", "order ba (swapped)",
                                                          "debiased (mean of both orders)"))

    # Table 4: 4 test questions x 6 pairs; the judge failed on q10-01 in order ba, so 23 pairs for everyone.
    assert ("— 23 pairs from 4 questions (labelled a or b in the test split, failed by no system; every row on these "
            "same pairs).") in text
    assert "> **Warning: CIs from 4 questions are unreliable**" in text
    assert f"{ba} | 1 | 0 | 1 | error: timeout (1) | 0 | - |" in text
    assert f"{deb} | 1 | 0 | 1 | error in order ba: timeout (1) | 0 | - |" in text
    # order ab is wrong on q8's two pairs whose first-shown answer is worse and on two pairs of q9's cycle
    table4 = text[:text.index("### Each system on its own decided pairs")]
    assert _line(table4, ab + " | LLM judge | ").split(" | ")[2:5] == ["23", "0", "0"]
    assert _line(table4, ab + " | LLM judge | ").split(" | ")[5].startswith(f"{19 / 23:.4f} [")
    assert _line(table4, ba + " | LLM judge | ").split(" | ")[5].startswith(f"{21 / 23:.4f} [")
    # the encoder says a on all of q11, whose labels are b, a, b, b, a, b
    assert _line(table4, "| encoder.modernbert.v1 | predictions | ").split(" | ")[5].startswith(f"{19 / 23:.4f} [")
    assert _line(table4, "| preference model (LR on rubric differences + length covariate) | rubric model | ")
    assert _line(table4, "| baseline: longer answer wins | baseline | ")
    assert "(IN-SAMPLE)" not in text

    # Table 5: 4 questions x 4 triads. ab: q8 (first shown always wins) cycles twice, q9 once.
    table5 = text[text.index("## Table 5"):text.index("## Table 6")]
    assert _line(table5, ab + " | 16 |").startswith(f"{ab} | 16 | 13 | 3 | 0 | 0 | 0.188 [")
    assert _line(table5, ba + " | 16 |").startswith(f"{ba} | 16 | 13 | 1 | 2 | 0 | 0.071 [")
    # debiased: the orders disagree on two q8 pairs -> ties, which leave all 4 q8 triads untestable
    assert _line(table5, deb + " | 16 |").startswith(f"{deb} | 16 | 9 | 1 | 2 | 4 | 0.100 [")
    people = _line(table5, "| people (the labels) | 16 |")
    assert people.startswith("| people (the labels) | 16 | 16 | 0 | 0 | 0 | 0.000 [")
    assert people.split(" | ")[7] == "16"  # each rate with its denominator
    model_row = _line(table5, "| preference model (LR on rubric differences + length covariate) | 16 |").split(" | ")
    assert sum(int(x) for x in model_row[2:6]) == 16

    # Table 6: the two orders disagree on q8's 2 pairs, both times for the first-shown answer
    assert _line(text, f"| {JUDGE} (logprob) | 23 | 4 | 2 | ").startswith(
        f"| {JUDGE} (logprob) | 23 | 4 | 2 | {2 / 23:.3f} [")
    assert f"| {JUDGE} (logprob) | 23 | 4 | {19 / 23:.4f} | {21 / 23:.4f} | +0.0870 [" in text

    # Table 7: order ab disagrees on 4 pairs
    table7 = text[text.index("## Table 7"):text.index("## Table 8")]
    assert _line(table7, ab + " | 23 |").split(" | ")[2] == "4"

    # Table 8: the judge and the rubric model were run on the perturbed copy, the encoder was not
    assert "Not evaluated on the perturbed set (left out): encoder.modernbert.v1." in text
    # q11: the judge now picks the worse answer on all 6 pairs in both orders
    assert _line(text, ab + " | 23 | 0 / 0 | 0 / 0 | 6 | ").split(" | ")[5] == f"{19 / 23:.4f} → {13 / 23:.4f}"
    table8 = text[text.index("### Perturbation: typos"):]
    assert "| preference model (LR on rubric differences + length covariate) | " in table8
    assert "encoder.modernbert.v1 |" not in table8


def test_analyze_labels_in_sample_rows(outputs, capsys):
    from workers.cli import main

    root = outputs
    md = root / "all.md"
    # the score output's own model.json is used when --model is not given
    (root / "score" / "model.json").write_bytes((root / "model.json").read_bytes())
    try:
        rc = main(["analyze", str(root / "score"), str(root / "encoder.parquet"), "--split", "all", "--n-boot", "20",
                   "--out", str(md)])
    finally:
        (root / "score" / "model.json").unlink()
    assert rc == 0, capsys.readouterr().err
    text = md.read_text()
    # 'all' holds the 36 training pairs (6 questions) and 36 others: partly in-sample, Table 4 on the others too
    model = "| preference model (LR on rubric differences + length covariate)"
    table4 = text[:text.index("### Each system on its own decided pairs")]
    assert "Split analysed: **all** (some rows are on pairs their system was" in text
    assert "36 of the 72 evaluated pairs (6 of 12 questions of this table's 'all' split)" in text  # the inputs list
    # Table 4 is on the 24 test pairs the encoder predicted: none of them is the model's, so no mark (the encoder
    # records no training pairs: its note says so)
    assert _line(table4, f"{model} | rubric model | 24 |")
    assert "### Table 4 on the pairs whose questions" not in text
    assert "| encoder.modernbert.v1 (trained on pairs not recorded here: may be in-sample) | predictions |" in text
    # without the encoder, Table 4 is on all 72 pairs: partly the model's, and again on the 36 others
    rc = main(["analyze", str(root / "score"), "--model", str(root / "model.json"), "--split", "all", "--n-boot",
               "20", "--out", str(md)])
    assert rc == 0, capsys.readouterr().err
    text = md.read_text()
    table4 = text[:text.index("### Each system on its own decided pairs")]
    assert _line(table4, f"{model} (PARTLY IN-SAMPLE: 36 of 72 pairs) | rubric model | 72 |")
    outside = text[text.index("### Table 4 on the pairs whose questions the rubric model was not fitted on"):
                   text.index("## Table 5")]
    assert "— 36 pairs from 6 questions (the pairs above whose question is not one of the model's 6 training" in outside
    assert _line(outside, f"{model} | rubric model | 36 |")
    table5 = text[text.index("## Table 5"):text.index("## Table 6")]
    assert f"{model} (PARTLY IN-SAMPLE: 72 of 144 pairs) | 48 |" in table5  # 12 questions x 4 triads x 3 pairs
    # no judge output: no judge row anywhere, and Table 6 says why
    assert JUDGE not in text
    assert "No judge output among the inputs: nothing to compare." in text
    assert not (root / "all_position.png").exists()


@pytest.mark.parametrize("args, message", [
    (["{root}/nowhere"], "nowhere not found: give a score or judge output folder"),
    (["{root}/encoder.parquet"], "no input describes the pairs"),
    (["{root}/judge", "--model", "{root}/model.json"], "needs a score output"),
])
def test_analyze_cli_errors(outputs, capsys, args, message):
    from workers.cli import main

    rc = main(["analyze", *[a.format(root=outputs) for a in args], "--out", str(outputs / "x.md")])
    assert rc == 2
    assert message in capsys.readouterr().err


def test_analyze_refuses_a_judgments_file_missing_an_order(tmp_path):
    from rubric.analysis import analyze

    specs = [("p1", "q1", "x", "y", "a", 3, 4)]
    rows = judgment_rows(specs, {"p1": ("a", "a")})[:1]
    write_judgments(judgments_table(rows), tmp_path / "judge")
    with pytest.raises(InputError, match="1 problem\\(s\\) with the orders: pair 'p1', judge 'judge.plain.v1': "
                                         "1 'ab' row\\(s\\) and 0 'ba' row\\(s\\)"):
        analyze([tmp_path / "judge"], n_boot=10)


def test_inputs_that_describe_a_pair_differently_are_refused(outputs, tmp_path):
    from rubric.analysis import analyze

    specs = [("q8-01", "someone else's question", "x", "y", "a", 3, 4)]
    write_judgments(judgments_table(judgment_rows(specs, {"q8-01": ("a", "a")})), tmp_path / "judge")
    with pytest.raises(ConfigError, match="pair 'q8-01' differs between .*pairs.parquet and .*judgments.parquet: "
                                          "question_id is"):
        analyze([outputs / "score", tmp_path / "judge"], n_boot=10)


def _linkage_output(out):
    """A LINKAGE run over the same 12 questions: answer k has label k (4 answers, no ties in the labels).

    ``listwise`` ranks as the labels do everywhere; ``flipped`` ranks them backwards on the 8 train/dev
    questions and right on the 4 test questions; ``flat`` gives every answer the same score.
    """
    from rubric.io.records import content_id, question_id

    rows = []
    for q in range(N_Q):
        for k in range(N_ANS):
            text = f"answer {k} to question {q}" + " filler" * FILLER[k]
            for system, score in (("listwise", -3.0 + k), ("flipped", float(k if _split(q) == "test" else -k)),
                                  ("flat", 5.0)):
                rows.append({"question_id": question_id(f"question {q}?"),
                             "answer_id": content_id(f"question {q}?", text), "label": k, "system": system,
                             "score": score, "error": None})
    out.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), out / "linkage.parquet")


def test_analyze_puts_a_linkage_run_beside_the_pairwise_tables(outputs, tmp_path):
    from rubric.analysis import analysis_markdown, analyze

    _linkage_output(tmp_path / "linkage")
    a = analyze([outputs / "score", outputs / "judge", tmp_path / "linkage"], model=outputs / "model.json",
                n_boot=20)
    assert len(a.linkage) == 1 and [s.n_questions for s in a.linkage[0].scopes] == [12, 4]
    every, test = ({r.system: r for r in s.results} for s in a.linkage[0].scopes)
    assert every["listwise"].kendall.value == pytest.approx(1.0) and every["listwise"].kendall.n == 12
    assert every["flipped"].kendall.value == pytest.approx((4 - 8) / 12)  # mean over questions
    assert test["flipped"].kendall.value == pytest.approx(1.0) and test["flipped"].spearman.value == pytest.approx(1)
    assert every["flat"].kendall.n == 0 and every["flat"].n_undefined == 12
    text = analysis_markdown(a, command="lfqa-rubric analyze ...")
    section = text[text.index("## LINKAGE: per-question correlation"):text.index("## Table 5")]
    assert "### questions of the test split (those of the pairs above): 4 questions, 16 answers" in section
    every_md, test_md = section.split("### questions of the test split")
    assert _line(every_md, "| flipped | ").startswith("| flipped | -0.333") and "12 / 12 | 0 |" in every_md
    assert _line(test_md, "| flipped | ").startswith("| flipped | 1.000 [1.000, 1.000]")
    assert "| flipped | -0.333" in section and "| flat | n/a | n/a | n/a | 0 / 12 | 12 |" in section
    assert any("LINKAGE per-answer table (144 rows, 12 questions) of listwise, flipped, flat" in line
               for line in a.inputs)
    # a LINKAGE output alone describes no pairs
    with pytest.raises(ConfigError, match="LINKAGE output"):
        analyze([tmp_path / "linkage"], n_boot=10)



def test_a_half_published_linkage_output_is_refused(tmp_path):
    from rubric.analysis import read_linkage_rows
    from rubric.io import PUBLISHING

    _linkage_output(tmp_path / "linkage")
    assert len(read_linkage_rows(tmp_path / "linkage")) == N_Q * N_ANS * 3
    (tmp_path / "linkage" / PUBLISHING).write_text("{}")
    with pytest.raises(InputError, match="being written, or a job was killed"):
        read_linkage_rows(tmp_path / "linkage")


# ---------------------------------------------------------------- a position-only judge in vote mode (Tables 4, 7, 8)

def _position_only_judge(out, specs):
    """A vote-mode judge whose 3 votes always go to the first-shown answer: P(a) is 1 in order ab and 0
    in order ba, so the debiased P(a) is 0.5 on every pair and the debiased verdict is undecided."""
    rows = []
    for pid, q, a, b, label, na, nb in specs:
        for order, p_a, dec in (("ab", 1.0, "a"), ("ba", 0.0, "b")):
            rows.append({"pair_id": pid, "question_id": q, "answer_id_a": a, "answer_id_b": b, "label": label,
                         "split": "test", "n_words_a": na, "n_words_b": nb, "judge": JUDGE, "mode": "vote",
                         "order": order, "p_a": p_a, "p_tie": None, "decision": dec, "p_a_debiased": 0.5,
                         "decision_debiased": None, "error": None, "model": "m", "model_revision": None,
                         "template_hash": "h", "backend": "transformers"})
    write_judgments(judgments_table(rows), out)


def test_a_position_only_judge_leaves_every_system_on_the_same_pairs(tmp_path):
    """The bug this pins: undecided debiased verdicts used to drop their pairs for every system, so the
    order-ab row of an always-"a" judge read 1.0 on an easy subset instead of 0.5 on all 10 pairs."""
    from rubric.analysis import analyze, analysis_markdown

    # 10 pairs of 5 questions, half labelled a, half b; answer a is longer on p0-p6
    specs = [(f"p{i}", f"q{i // 2}", f"x{i}", f"y{i}", "a" if i % 2 == 0 else "b", 12 if i < 7 else 5, 8)
             for i in range(10)]
    _position_only_judge(tmp_path / "judge", specs)
    _position_only_judge(tmp_path / "judge_typos", [(p, q, a + "'", b + "'", lab, na + 1, nb)
                                                    for p, q, a, b, lab, na, nb in specs])
    a = analyze([tmp_path / "judge"], perturbed={"typos": [tmp_path / "judge_typos"]}, split="test", n_boot=50)
    c = a.comparison
    assert len(c.pair_ids) == 10 and c.n_dropped == 0
    rows = {s.name: r for s, r in zip(c.systems, c.rows)}
    assert {r.n for r in rows.values()} == {10}
    ab, ba, deb = (f"{JUDGE} (vote), {o}" for o in ("order ab (as given)", "order ba (swapped)",
                                                     "debiased (mean of both orders)"))
    assert rows[ab].values["accuracy"] == 0.5 and rows[ba].values["accuracy"] == 0.5
    assert rows[deb].values["accuracy"] == 0.0  # every pair undecided: 10 misses
    assert rows[ALWAYS_A].values["accuracy"] == 0.5
    undecided = {u.system: (u.n, u.n_undecided) for u in c.undecided}
    assert undecided[deb] == (0, 10) and undecided[ab] == (0, 0) and undecided[ALWAYS_A] == (0, 0)
    # Table 7 on the same 10 pairs; the debiased judge's 10 undecided pairs are disagreements with no side
    verb = {r.system: r for r in a.verbosity.rows}
    assert {r.n for r in verb.values()} == {10}
    assert (verb[deb].n_disagreements, verb[deb].undecided, verb[deb].system_tie) == (10, 10, 0)
    # order ab says a everywhere: wrong on the 5 b pairs; a is longer on p1, p3, p5 (people chose the shorter b)
    assert (verb[ab].n_disagreements, verb[ab].short_to_long, verb[ab].long_to_short) == (5, 3, 2)
    # Table 8 on the same 10 pairs, each side's undecided counted
    (p,) = a.perturbations
    assert p.n == 10
    prow = {r.system: r for r in p.rows}
    assert prow[ab].deltas["accuracy"].base == 0.5 and prow[ab].deltas["accuracy"].other == 0.5
    assert (prow[deb].n_undecided_original, prow[deb].n_undecided_perturbed) == (10, 10)
    text = analysis_markdown(a, command="analyze judge")
    assert f"| {deb} | LLM judge | 10 | 10 |" in text
    assert "10 pairs from 5 questions (labelled a or b in the test split and given to every system" in text


def test_evaluators_put_each_judge_and_the_rubric_model_side_by_side_with_their_run_costs(outputs, tmp_path):
    """Agreement (Table 4's accuracy and CI), failure rate on the split, and cost per 1,000 pairs from the manifests."""
    import json
    import shutil

    from rubric.analysis import analyze
    from rubric.tables import CostRow, cost_summary

    score, judge = tmp_path / "score", tmp_path / "judge"
    shutil.copytree(outputs / "score", score)
    shutil.copytree(outputs / "judge", judge)
    n_pairs = pq.read_table(score / "pairs.parquet").num_rows  # 72: 12 questions x 6 pairs
    n_answers = 48
    rubric_cost = cost_summary([CostRow(f"a{i}", "conciseness", {"seconds": 0.5}, False, None)
                                for i in range(n_answers)], ["conciseness"])
    judge_cost = cost_summary([CostRow(f"p{i}", JUDGE, {"prompt_tokens": 300, "cached_prompt_tokens": 100,
                                                        "generated_tokens": 2, "seconds": 0.25}, False, None)
                               for i in range(n_pairs)], [JUDGE])
    (score / "manifest.json").write_text(json.dumps({"tool": "lfqa-rubric", "cost": rubric_cost}))
    (judge / "manifest.json").write_text(json.dumps({"tool": "lfqa-rubric", "cost": judge_cost}))
    a = analyze([score, judge], model=outputs / "model.json", n_boot=50)
    rows = {e.kind + ":" + e.system: e for e in a.evaluators}
    deb = rows[f"LLM judge:{JUDGE} (logprob), debiased (mean of both orders)"]
    c = a.comparison
    table4 = {s.name: r for s, r in zip(c.systems, c.rows)}
    assert (deb.accuracy, deb.ci) == (table4[deb.system].values["accuracy"], tuple(table4[deb.system].ci["accuracy"]))
    # the judge failed on one test pair (q10-01, order ba) of the 24 test pairs it was given
    assert (deb.n_failed, deb.n_given) == (1, 24)
    assert deb.seconds_per_1000 == pytest.approx(250.0) and deb.prompt_tokens_per_1000 == pytest.approx(300_000)
    assert deb.generated_tokens_per_1000 == pytest.approx(2000) and deb.cost_from == str(judge)
    model = next(e for e in a.evaluators if e.kind == "rubric model")
    # every rubric of the score run (48 answers x 0.5 s) per 1,000 of its 72 pairs; no tokens counted
    assert model.seconds_per_1000 == pytest.approx(n_answers * 0.5 * 1000 / n_pairs)
    assert model.prompt_tokens_per_1000 is None and model.cost_from == str(score)
    assert {e.kind for e in a.evaluators} == {"rubric model", "LLM judge"}  # baselines and single orders: not here
    assert not any("order ab" in e.system or "order ba" in e.system for e in a.evaluators)
    from rubric.analysis import analysis_markdown

    text = analysis_markdown(a, command="lfqa-rubric analyze ...")
    section = text[text.index("## Evaluators side by side"):]
    line = _line(section, f"| {JUDGE} (logprob), debiased (mean of both orders) | LLM judge | 24 | ")
    assert line.endswith("| 1 of 24 (4.2%) | 300,000 | 2,000 |")
