"""LINKAGE's table: the rubric scores of a score output joined onto LINKAGE's answers, one row per answer x
system in the declared columns, and the manifest's metrics."""

from __future__ import annotations

import pytest

from rubric.io import PairRecord, explode
from rubric.protocols import (LINKAGE_TABLE_COLUMNS, LinkageCandidate, LinkageQuestion, join_rubric_scores,
                              linkage_correlations, linkage_metrics, linkage_rows, linkage_rows_table)
from rubric.scoring import RUBRICS, Provenance, Score
from rubric.tables import answers_table


def _answers():
    coh = RUBRICS.get("coherence.geval.v1")
    pairs = [PairRecord(f"p{i}", f"Question {i}?", f"first {i}", f"second {i}", "a") for i in range(2)]
    items = explode(pairs)
    raw = {"first 0": 4.0, "second 0": None, "first 1": 2.0, "second 1": 5.0}
    scores = {"coherence": [Score.failed("engine error") if raw[it.answer] is None else Score.ok(raw[it.answer])
                            for it in items]}
    return items, answers_table(items, [coh], scores, {"coherence": Provenance(coh.version, "vllm", "m", "r")})


def test_a_score_outputs_rubrics_join_onto_the_answers_asked_for():
    items, answers = _answers()
    by_text = {it.answer: it.answer_id for it in items}
    wanted = {by_text["first 0"], by_text["second 0"], by_text["second 1"]}
    got, provenance = join_rubric_scores(answers, wanted, source="OUT/score")
    assert set(got) == wanted  # "first 1" was not asked for
    assert got[by_text["first 0"]]["rubric:coherence"].raw == pytest.approx(4.0)
    failed = got[by_text["second 0"]]["rubric:coherence"]
    assert failed.raw is None and failed.error == "engine error"
    assert provenance == {"rubric:coherence": Provenance("rubric:coherence", "score output", "OUT/score", "", "")}


def test_linkage_rows_are_the_declared_columns_a_missing_score_a_row_error():
    q = LinkageQuestion(question_id="q1", question="why?", references=("r1", "r2"), candidates=(
        LinkageCandidate(answer_id="a0", text="best", label=3, key="0"),
        LinkageCandidate(answer_id="a1", text="good", label=2, key="1"),
        LinkageCandidate(answer_id="a2", text="poor", label=1, key="2")))
    scores = {"a0": {"listwise": Score.ok(-1.2, rank=1.2, mass=0.9)}, "a1": {"listwise": Score.ok(-2.0, rank=2.0)},
              "a2": {}}
    prov = {"listwise": Provenance("linkage.listwise.v1", "fake", "m", "r", "h")}
    rows = linkage_rows([q], scores, prov, ["listwise"], source="in.json")
    table = linkage_rows_table(rows)
    assert table.column_names == list(LINKAGE_TABLE_COLUMNS)
    assert [(f.name, f.type) for f in table.schema] == list(LINKAGE_TABLE_COLUMNS.items())
    assert table.column("rank").to_pylist() == [1.2, 2.0, None]
    assert table.column("error").to_pylist() == [None, None, "listwise: no score for this answer"]
    assert set(table.column("n_references").to_pylist()) == {2}


def test_the_manifests_metrics_are_each_systems_mean_correlations():
    res = linkage_correlations(["q1"] * 3 + ["q2"] * 3 + ["q3"], [3, 2, 1, 3, 2, 1, 1], [0.9, 0.5, 0.1, 0.2, 0.5, 0.1, 1],
                               system="listwise", n_boot=20)
    [(name, m)] = linkage_metrics([res]).items()
    assert name == "listwise" and m["n_defined"] == 2 and m["n_undefined"] == 1
    assert m["kendall"] == pytest.approx((1.0 + 1 / 3) / 2) and m["kendall"] == res.kendall.value
    assert (m["spearman"], m["pearson"]) == (res.spearman.value, res.pearson.value)
