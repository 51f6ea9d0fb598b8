"""RAG-QA Arena statistics: win rates, online Elo, Bradley-Terry, bootstrap CIs, human agreement."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rubric.protocols.arena import (
    Battle,
    battles_against,
    bradley_terry,
    human_agreement,
    online_elo,
    rating_intervals,
    win_rates,
)
from rubric.errors import ConfigError


def test_win_rates_hand_computed():
    systems = ["s1"] * 5 + ["s2"] * 3
    outcomes = ["a", "tie", "b", "a", None, "b", "b", "tie"]
    qids = ["q1", "q2", "q3", "q4", "q5", "q1", "q2", "q3"]
    s1, s2 = win_rates(systems, outcomes, qids, n_boot=200, seed=0)
    assert (s1.system, s1.n, s1.n_questions, s1.n_undecided) == ("s1", 4, 4, 1)
    assert s1.win.value == pytest.approx(0.5) and s1.win_tie.value == pytest.approx(0.75)
    assert s2.win.value == 0.0 and s2.win_tie.value == pytest.approx(1 / 3)
    lo, hi = s1.win.ci
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0
    with pytest.raises(ConfigError, match="'a', 'b', 'tie' or None"):
        win_rates(["s"], ["win"], ["q"])
    with pytest.raises(ConfigError, match="one entry per pair"):
        win_rates(["s"], ["a", "b"], ["q"])


def test_battles_against_the_reference():
    got = battles_against(["s1", "s1", "s2"], ["a", None, "tie"], ["q1", "q2", "q1"])
    assert got == [Battle("s1", "lfrqa", "model_a", "q1"), Battle("s2", "lfrqa", "tie", "q1")]
    with pytest.raises(ConfigError, match="two different systems"):
        battles_against(["lfrqa"], ["a"], ["q"])
    with pytest.raises(ConfigError, match="'winner'"):
        Battle("x", "y", "a")


def test_online_elo_hand_computed():
    # A beats B from 1000/1000: expected .5 each, A +2, B -2
    assert online_elo([Battle("A", "B", "model_a")]) == {"A": pytest.approx(1002.0), "B": pytest.approx(998.0)}
    # then a tie: ea = 1 / (1 + 10 ** (-4 / 400)), A moves by 4 * (.5 - ea)
    ea = 1 / (1 + 10 ** (-4 / 400))
    got = online_elo([Battle("A", "B", "model_a"), Battle("B", "A", "tie")])
    assert got["A"] == pytest.approx(1002.0 + 4 * (0.5 - ea))
    assert got["B"] == pytest.approx(998.0 - 4 * (0.5 - ea))
    assert got["A"] == pytest.approx(1001.97698, abs=1e-4)
    # K, scale and init as given
    got = online_elo([Battle("A", "B", "model_b")], k=32, init=1500)
    assert got == {"A": pytest.approx(1484.0), "B": pytest.approx(1516.0)}
    with pytest.raises(ConfigError, match="'base'"):
        online_elo([], base=1.0)


def test_bradley_terry_hand_computed():
    # A beats B 3 times of 4: P(A) = .75 = 1 / (1 + 10 ** (-d / 400)), d = 400 log10(3), centred on 1000
    battles = [Battle("A", "B", "model_a")] * 2 + [Battle("B", "A", "model_b"), Battle("A", "B", "model_b")]
    got = bradley_terry(battles)
    d = 400 * math.log10(3)
    assert got["A"] == pytest.approx(1000 + d / 2, abs=1e-3) and got["B"] == pytest.approx(1000 - d / 2, abs=1e-3)
    # a tie is half a win each way: W[A, B] = 2 x 1 win + 2 ties = 4 = W[B, A], so the two rate equal
    got = bradley_terry([Battle("A", "B", "model_a"), Battle("A", "B", "tie"), Battle("A", "B", "tie"),
                         Battle("A", "B", "model_b")])
    assert got["A"] == pytest.approx(1000.0, abs=1e-3) and got["B"] == pytest.approx(1000.0, abs=1e-3)


def test_symmetric_results_rate_equal():
    battles = []
    for x, y in (("A", "B"), ("B", "C"), ("A", "C")):
        battles += [Battle(x, y, "model_a"), Battle(x, y, "model_b"), Battle(y, x, "tie")]
    bt = bradley_terry(battles)
    assert all(v == pytest.approx(1000.0, abs=1e-3) for v in bt.values())
    # ties only: online Elo never moves
    assert set(online_elo([Battle("A", "B", "tie"), Battle("B", "C", "tie")]).values()) == {1000.0}
    # swapping model_a and model_b (and the winner) changes nothing in Bradley-Terry
    swapped = [Battle(b.model_b, b.model_a, {"model_a": "model_b", "model_b": "model_a"}.get(b.winner, "tie"))
               for b in battles]
    assert bradley_terry(swapped) == pytest.approx(bt)


def test_bradley_terry_refuses_unbounded_ratings():
    with pytest.raises(ConfigError, match="unbounded"):
        bradley_terry([Battle("A", "B", "model_a"), Battle("A", "B", "model_a")])
    with pytest.raises(ConfigError, match="no battles"):
        bradley_terry([])


def _tournament(strengths: dict[str, float], n_per_pair: int, seed: int, tie_share: float = 0.2) -> list[Battle]:
    """Round robin with P(i beats j | no tie) = logistic(s_i - s_j), in a random order."""
    rng = np.random.default_rng(seed)
    names = list(strengths)
    battles = []
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            p = 1 / (1 + math.exp(-(strengths[x] - strengths[y])))
            for n in range(n_per_pair):
                r = rng.random()
                winner = "tie" if r < tie_share else "model_a" if rng.random() < p else "model_b"
                a, b = (x, y) if n % 2 else (y, x)
                if a != x:
                    winner = {"model_a": "model_b", "model_b": "model_a"}.get(winner, "tie")
                battles.append(Battle(a, b, winner, f"q{n}"))
    return [battles[i] for i in rng.permutation(len(battles))]


def test_synthetic_tournament_recovers_the_strength_order():
    strengths = {"weak": 0.0, "fair": 0.6, "good": 1.2, "best": 1.8}
    battles = _tournament(strengths, n_per_pair=300, seed=3)
    order = ["best", "good", "fair", "weak"]
    bt = bradley_terry(battles)
    assert sorted(bt, key=bt.get, reverse=True) == order
    assert sum(bt.values()) / 4 == pytest.approx(1000.0, abs=1e-3)
    # ties as half wins shrink the gaps, but a 0.6 logit step is still ~50-90 Elo
    gaps = np.diff([bt[s] for s in reversed(order)])
    assert np.all(gaps > 40) and np.all(gaps < 110)
    elo = online_elo(battles)
    assert sorted(elo, key=elo.get, reverse=True) == order
    intervals, failed = rating_intervals(battles, method="bt", unit="question", n_boot=60, seed=1)
    assert failed == 0 and [r.system for r in intervals] == order
    for r in intervals:
        assert r.ci[0] <= r.rating <= r.ci[1] and r.n_battles == 900
    # separated strengths give disjoint intervals
    assert all(a.ci[0] > b.ci[1] for a, b in zip(intervals, intervals[1:]))
    online, _ = rating_intervals(battles, method="online", unit="battle", n_boot=30, seed=1)
    assert [r.system for r in online] == order


def test_rag_qa_arena_star_design_orders_like_win_rates():
    # every system meets only the reference, as in RAG-QA Arena's main table
    rng = np.random.default_rng(0)
    p_win = {"strong": 0.35, "middle": 0.2, "weak": 0.05}  # losses .45, .6, .75
    systems, outcomes, qids = [], [], []
    for s, p in p_win.items():
        for q in range(200):
            r = rng.random()
            systems.append(s)
            outcomes.append("a" if r < p else "tie" if r < p + 0.2 else "b")
            qids.append(f"q{q}")
    battles = battles_against(systems, outcomes, qids)
    bt = bradley_terry(battles)
    assert sorted(bt, key=bt.get, reverse=True) == ["lfrqa", "strong", "middle", "weak"]
    rates = win_rates(systems, outcomes, qids, n_boot=50)
    assert [w.system for w in sorted(rates, key=lambda w: -w.win.value)] == ["strong", "middle", "weak"]


def test_rating_intervals_config_errors():
    b = [Battle("A", "B", "model_a"), Battle("A", "B", "model_b")]
    with pytest.raises(ConfigError, match="'method'"):
        rating_intervals(b, method="glicko")
    with pytest.raises(ConfigError, match="'unit'"):
        rating_intervals(b, unit="pair")
    with pytest.raises(ConfigError, match="n_boot"):
        rating_intervals(b, n_boot=0)


def test_rating_intervals_count_unbounded_replicates():
    # two battles: a resample of only one of them has a system that won everything
    b = [Battle("A", "B", "model_a", "q1"), Battle("A", "B", "model_b", "q2")]
    intervals, failed = rating_intervals(b, method="bt", unit="battle", n_boot=40, seed=0)
    assert 0 < failed < 40
    assert {r.system: r.rating for r in intervals} == pytest.approx({"A": 1000.0, "B": 1000.0}, abs=1e-3)


def test_human_agreement_hand_computed():
    human = ["a", "a", "b", "tie", "b", "a", None]
    judge = ["a", "b", "b", "tie", "a", "a", "a"]
    got = human_agreement(judge, human)
    # p_o = 4/6; both raters a 3, b 2, tie 1: p_e = (9 + 4 + 1) / 36; kappa = 5/11
    assert (got.n, got.n_skipped) == (6, 1)
    assert got.accuracy == pytest.approx(4 / 6)
    assert got.kappa == pytest.approx(5 / 11)
    # coded (1, 1, -1, 0, -1, 1) and (1, -1, -1, 0, 1, 1): r = (5/6) / (29/6)
    assert got.pearson == pytest.approx(5 / 29)


def test_human_agreement_undefined_cases():
    same = human_agreement(["a", "a"], ["a", "a"])
    assert same.accuracy == 1.0 and math.isnan(same.kappa) and math.isnan(same.pearson)
    none = human_agreement([None], ["a"])
    assert none.n == 0 and none.n_skipped == 1 and math.isnan(none.kappa)
    with pytest.raises(ConfigError, match="human outcomes"):
        human_agreement(["a"], ["win"])
