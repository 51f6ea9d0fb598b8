import math

import numpy as np
import pytest

from rubric.errors import ConfigError
from rubric.features import answers_table, design_matrix, pairs_table, table_rubrics
from rubric.records import PairRecord, explode
from rubric.scoring import Provenance, Score
from rubric.specs import RUBRICS

CONC = RUBRICS.get("conciseness.lexical_density.v1")
FLU = RUBRICS.get("fluency.geval.v1")


def _setup(fail_flu_for=()):
    pairs = [
        PairRecord("p1", "Q1?", "long answer here with words", "short", "a", source="s", domain="d"),
        PairRecord("p2", "Q1?", "short", "other answer", "b", source="s", domain="d"),
        PairRecord("p3", "Q2?", "x y", "x y z", "tie", source="s", domain="d"),
    ]
    items = explode(pairs)
    assert len(items) == 5  # "short" to Q1 is shared by p1 and p2: scored once
    conc = [Score.ok(0.1 * (i + 1), n_tokens=i) for i in range(len(items))]
    flu = [Score.failed("no score token") if it.answer in fail_flu_for else Score.ok(2.0, confidence=0.6)
           for it in items]
    prov = {"conciseness": Provenance("conciseness.lexical_density.v1", "spacy", "en_core_web_sm", "3.8.0"),
            "fluency": Provenance("fluency.geval.v1", "vllm", "smollm2", "r", "abc123")}
    answers = answers_table(items, [CONC, FLU], {"conciseness": conc, "fluency": flu}, prov)
    return pairs, items, answers


def test_answers_table_columns_and_rescale():
    _, items, answers = _setup(fail_flu_for=("short",))
    assert table_rubrics(answers) == ["conciseness", "fluency"]
    row = answers.to_pylist()
    assert row[0]["conciseness_raw"] == pytest.approx(0.1) and row[0]["conciseness"] == pytest.approx(1.4)
    assert row[0]["fluency"] == pytest.approx(3.0)  # 1-3 scale: 2 -> 3 on 1-5
    short = next(r for r in row if r["answer"] == "short")
    assert short["fluency"] is None and short["fluency_error"] == "no score token"
    assert row[0]["fluency_template_hash"] == "abc123" and row[0]["conciseness_n_tokens"] == 0
    assert row[0]["fluency_confidence"] == pytest.approx(0.6)


def test_pairs_table_differences_and_order():
    pairs, _, answers = _setup()
    t = pairs_table(pairs, ["train", "train", "test"], answers)
    rows = t.to_pylist()
    assert [r["pair_id"] for r in rows] == ["p1", "p2", "p3"]
    for r in rows:
        assert r["d_conciseness"] == pytest.approx(r["a_conciseness"] - r["b_conciseness"])
    with pytest.raises(ConfigError):
        pairs_table(pairs, ["train"], answers)


def test_design_matrix_drops_missing_and_ties_and_excludes_empty_rubrics():
    pairs, _, answers = _setup(fail_flu_for=("short",))
    t = pairs_table(pairs, ["train", "train", "train"], answers)
    dm = design_matrix(t, split="train", max_missing=1.0)
    # p1, p2 miss fluency ("short" failed); p3 is a tie
    assert dm.n_ties_dropped == 1 and dm.n_missing_rows == 2 and len(dm.y) == 0
    dm3 = design_matrix(t, split="train", keep_ties=True, max_missing=1.0)
    assert list(dm3.y) == ["tie"] and dm3.features == ["conciseness", "fluency"]
    # a rubric with no values at all is excluded, not zero-filled
    _, items, _ = _setup()
    answers2 = answers_table(items, [CONC, FLU],
                             {"conciseness": [Score.ok(0.5)] * 5, "fluency": [Score.failed("x")] * 5},
                             {"conciseness": Provenance("c", "spacy"), "fluency": Provenance("f", "vllm")})
    dm2 = design_matrix(pairs_table(pairs, ["train"] * 3, answers2))
    assert dm2.features == ["conciseness"] and "fluency" in dm2.excluded
    assert np.all(np.isfinite(dm2.X)) and not any(math.isnan(x) for x in dm2.X.ravel())
    with pytest.raises(ConfigError, match="not in this table"):
        design_matrix(t, features=["coherence"])


def test_mostly_missing_rubric_is_excluded_not_shrinking_the_data():
    pairs, items, _ = _setup()
    # fluency fails on the 3 answers of p1 and p2 -> missing on 2 of 3 pairs: excluded; conciseness kept
    flu = [Score.failed("no evidence")] * 3 + [Score.ok(2.0)] * 2
    answers = answers_table(items, [CONC, FLU], {"conciseness": [Score.ok(0.5)] * 5, "fluency": flu},
                            {"conciseness": Provenance("c", "spacy"), "fluency": Provenance("f", "vllm")})
    dm = design_matrix(pairs_table(pairs, ["train"] * 3, answers), keep_ties=True)
    assert dm.features == ["conciseness"] and "missing for" in dm.excluded["fluency"]
    assert len(dm.y) == 3 and dm.n_missing_rows == 0
