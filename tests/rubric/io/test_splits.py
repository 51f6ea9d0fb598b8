from collections import Counter, defaultdict

import pytest

from rubric.errors import ConfigError
from rubric.io.records import PairRecord
from rubric.io.splits import assign_splits


def _pairs():
    out = []
    for q in range(120):
        src = ["shp", "arena", "lfqa_eval"][q % 3]
        for k in range(1 + q % 3):  # 1-3 pairs per question
            out.append(PairRecord(f"{q}-{k}", f"question {q}?", f"a{k}", f"b{k}", "a", source=src,
                                  domain=f"d{q % 4}", expert=(q % 2 == 0)))
    return out


def test_questions_stay_whole_and_shares_are_close():
    pairs = _pairs()
    splits = assign_splits(pairs, seed=1)
    by_q = defaultdict(set)
    for p, s in zip(pairs, splits):
        by_q[p.question].add(s)
    assert all(len(s) == 1 for s in by_q.values())
    share = {k: v / len(pairs) for k, v in Counter(splits).items()}
    assert share["train"] == pytest.approx(0.70, abs=0.03)
    assert share["dev"] == pytest.approx(0.15, abs=0.03)
    assert share["test"] == pytest.approx(0.15, abs=0.03)
    # every source appears in the test split (stratification)
    assert {p.source for p, s in zip(pairs, splits) if s == "test"} == {"shp", "arena", "lfqa_eval"}


def test_seeded_and_order_independent_of_call():
    pairs = _pairs()
    assert assign_splits(pairs, seed=3) == assign_splits(pairs, seed=3)
    assert assign_splits(pairs, seed=3) != assign_splits(pairs, seed=4)


def test_bad_fractions():
    with pytest.raises(ConfigError, match="summing to 1"):
        assign_splits(_pairs(), fractions=(0.5, 0.2, 0.2))
