"""The demo's readable view: vectors, weights with CIs, and contributions that add up to the winner."""

from __future__ import annotations

import math
import re

import pytest

from rubric.preference import fit_model
from rubric.tables import answers_table, pairs_table
from rubric.preference import predict_pairs
from rubric.preference import answer_vectors_markdown, explained_pairs, pair_explanations_markdown, readable_view
from rubric.io import PairRecord, explode
from rubric.scoring import Provenance, Score
from rubric.scoring import RUBRICS

CONC, GRAM = RUBRICS.get("conciseness.lexical_density.v1"), RUBRICS.get("grammar.harper.v1")


@pytest.fixture(scope="module")
def run():
    """Answers, pairs (people prefer the more concise answer), a model with weight CIs, its predictions."""
    import numpy as np

    rng = np.random.default_rng(0)
    pairs, conc, gram = [], {}, {}
    for q in range(24):
        for k in range(3):
            a, b = (f"q{q} p{k}{s} " + " ".join(["word"] * int(rng.integers(5, 60))) for s in "ab")
            conc[a], conc[b] = float(rng.uniform()), float(rng.uniform())
            gram[a], gram[b] = float(rng.uniform(1, 5)), float(rng.uniform(1, 5))
            pairs.append(PairRecord(f"q{q}-{k}", f"Question {q}?", a, b, "a" if conc[a] > conc[b] else "b"))
    items = explode(pairs)
    answers = answers_table(items, [CONC, GRAM],
                            {"conciseness": [Score.ok(conc[it.answer]) for it in items],
                             "grammar": [Score.ok(gram[it.answer]) for it in items]},
                            {"conciseness": Provenance(CONC.version, "spacy", "en_core_web_sm", "3.8.0"),
                             "grammar": Provenance(GRAM.version, "harper")})
    table = pairs_table(pairs, ["train" if i < 54 else "test" for i in range(len(pairs))], answers)
    model = fit_model(table, n_boot_weights=50)[0]
    return answers, table, model, predict_pairs(model, table)


def test_explained_pairs_are_held_out_first(run):
    _, _, _, predictions = run
    rows = explained_pairs(predictions, 3)
    assert [predictions.column("split")[i].as_py() for i in rows] == ["test"] * 3
    assert rows == sorted(rows)


def test_contributions_shown_add_up_to_the_predicted_winner(run):
    _, table, _, predictions = run
    rows = explained_pairs(predictions, 3)
    text = pair_explanations_markdown(predictions, table, rows, top=1)
    blocks = text.split("**Pair ")[1:]
    assert len(blocks) == 3
    for i, block in zip(rows, blocks):
        p_a = predictions.column("p_a")[i].as_py()
        assert f"predicts **{'a' if p_a >= 0.5 else 'b'}**" in block
        # the rubric row, the rest, the intercept: their sum is the printed total, and that is logit P(a)
        values = [float(v) for v in re.findall(r"\| ([+-]\d+\.\d{3}) \|", block)]
        total = float(re.search(r"\*\*([+-]\d+\.\d{3})\*\*", block).group(1))
        assert len(values) == 3 and sum(values) == pytest.approx(total, abs=2e-3)
        assert total == pytest.approx(math.log(p_a / (1 - p_a)), abs=1e-3)
        assert "with style controlled" in block  # the model has style covariates


def test_vectors_and_weights(run):
    answers, table, model, predictions = run
    aid = answers.column("answer_id")[0].as_py()
    vec = answer_vectors_markdown(answers, [aid, "missing"])
    assert vec.count("\n") == 2 and f"| {answers.column('conciseness')[0].as_py():.2f} |" in vec
    view = readable_view(answers, table, model, predictions, where="Full tables in OUT/.")
    assert view.rstrip().endswith("Full tables in OUT/.")
    assert "| conciseness | rubric |" in view and "| style_length | style covariate |" in view
    assert "not computed" not in view  # the CIs are the model's
    assert model.weights()["conciseness"] > 0  # people prefer the more concise answer, and the view says so
    assert f"| conciseness | rubric | {model.weights()['conciseness']:+.4f} |" in view
