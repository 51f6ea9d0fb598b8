"""The transfer table: fit on one set's train split, evaluate on every set's test split.

Tables are built with the real table writers from hand-made scores (as tests/reliability/
test_provenance.py does); no model runs. Every set has 12 questions of 4 pairs: questions 0-7
train, 8-9 dev, 10-11 test unless a test says otherwise. The better answer has the higher
conciseness, by a clear margin and symmetrically for "a" and "b", so a model fitted on a set
classifies its held-out pairs perfectly, and a set whose labels are flipped gets them all wrong.
Answer "a" is always the longer one and labels alternate a, b, a, b in every question, so
"longer answer wins" is right on exactly half of any question's pairs.
"""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from rubric.errors import ConfigError
from rubric.tables.features import answers_table, pairs_table
from rubric.io.records import PairRecord, explode
from rubric.scoring.scorer import Provenance, Score
from rubric.scoring.specs import RUBRICS
from rubric.preference.transfer import labeled_pairs, transfer, transfer_markdown

CONC = RUBRICS.get("conciseness.lexical_density.v1")


def _split(q: int) -> str:
    return "train" if q < 8 else "dev" if q < 10 else "test"


def _set(topic: str, *, flip: bool = False, revision: str = "3.8.0", split=_split, unlabeled: int = 0,
         one_class: bool = False):
    """A pairs table of 48 labelled pairs (plus ``unlabeled`` test pairs without a label)."""
    pairs, splits, raw = [], [], {}
    for q in range(12):
        for k in range(4 + (unlabeled if split(q) == "test" and q == 11 else 0)):
            a = f"{topic} answer {k} to question {q}, written at some length"
            b = f"{topic} answer {k} to question {q}"
            a_better = k % 2 == 0 or one_class
            gap = 0.1 + 0.02 * k + 0.01 * (q % 3)
            raw[a], raw[b] = (0.5 + gap, 0.5 - gap) if a_better else (0.5 - gap, 0.5 + gap)
            label = ("b" if flip else "a") if a_better else ("a" if flip else "b")
            pairs.append(PairRecord(f"{topic}-{q}-{k}", f"{topic} question {q}?", a, b, None if k >= 4 else label))
            splits.append(split(q))
    items = explode(pairs)
    answers = answers_table(items, [CONC], {"conciseness": [Score.ok(raw[it.answer]) for it in items]},
                            {"conciseness": Provenance(CONC.version, "spacy", "en_core_web_sm", revision)})
    return pairs_table(pairs, splits, answers)


def test_in_distribution_and_transfer_cells():
    result = transfer({"A": _set("A")}, {"A": _set("A"), "B": _set("B"), "flipped": _set("C", flip=True)},
                      n_boot=200)
    a, b, flipped = (result.cells[("A", e)] for e in ("A", "B", "flipped"))
    assert a.in_distribution and not b.in_distribution and not flipped.in_distribution
    for cell in (a, b, flipped):
        assert cell.problem is None and (cell.model.n, cell.model.n_questions) == (8, 2)  # questions 10 and 11
        assert cell.longer.n == cell.model.n and cell.longer.values["accuracy"] == 0.5
        assert cell.shared_questions == 0
    assert a.model.values["accuracy"] == 1.0 and a.model.ci["accuracy"] == (1.0, 1.0)
    assert b.model.values["accuracy"] == 1.0
    assert flipped.model.values["accuracy"] == 0.0
    m = result.models["A"]
    assert (m.n_pairs, m.n_questions, m.model.features_) == (32, 8, ["conciseness"])


def test_a_cell_made_with_another_provenance_shows_the_difference_not_a_number():
    result = transfer({"A": _set("A")}, {"B": _set("B", revision="3.7.1")}, n_boot=50)
    cell = result.cells[("A", "B")]
    assert cell.model is None
    assert cell.problem == "provenance differs: conciseness: model_revision is 3.8.0 in the model, 3.7.1 in the table"
    text = transfer_markdown(result)
    assert f"| A | {cell.problem} |" in text


def test_test_questions_seen_in_training_are_flagged():
    # the same questions, but this set holds questions 0-1 out: they are in A's train split
    reused = _set("A", split=lambda q: "test" if q < 2 else "train")
    # questions 6-9 held out: 6 and 7 were trained on, 8 and 9 were not (A's dev split)
    partly = _set("A", split=lambda q: "test" if 6 <= q < 10 else "train")
    result = transfer({"A": _set("A")}, {"A": _set("A"), "reused": reused, "partly": partly}, n_boot=50)
    assert result.cells[("A", "A")].shared_questions == 0 and result.cells[("A", "A")].in_distribution
    cell = result.cells[("A", "reused")]
    assert cell.shared_questions == 2 and cell.model.n_questions == 2 and cell.sample.kind == "in-sample"
    assert not cell.in_distribution  # another table (other splits), though on the same questions
    text = transfer_markdown(result)
    assert "8 pairs, 2 questions; **IN-SAMPLE: every pair's question is a training question** |" in text
    cell = result.cells[("A", "partly")]
    assert cell.sample.kind == "partly in-sample" and (cell.outside.n, cell.outside.n_questions) == (8, 2)
    assert ("16 pairs, 4 questions; **PARTLY IN-SAMPLE: 8 of 16 pairs (2 questions) have a training question**; "
            "on the 8 others (2 questions): 1.000 [1.000, 1.000], longer answer 0.500 |") in text


def test_unlabeled_pairs_are_left_out_and_counted():
    with_unlabeled = _set("B", unlabeled=3)
    kept, n = labeled_pairs(with_unlabeled)
    assert (with_unlabeled.num_rows, kept.num_rows, n) == (51, 48, 3)
    assert kept.schema.metadata == with_unlabeled.schema.metadata  # provenance travels with the rows
    result = transfer({"A": _set("A")}, {"B": with_unlabeled}, n_boot=50)
    assert result.cells[("A", "B")].model.n == 8 and result.n_unlabeled == {"A": 0, "B": 3}
    assert "Unlabeled pairs left out of evaluation sets: B 3." in transfer_markdown(result)


def test_a_training_set_that_cannot_be_fitted_says_why_in_its_row():
    result = transfer({"one class": _set("A", one_class=True), "A": _set("A")}, {"B": _set("B")}, n_boot=50)
    assert result.models["one class"].model is None
    assert "need at least two label classes" in result.models["one class"].problem
    assert result.cells[("one class", "B")].problem == "no model: the training set could not be fitted"
    assert result.cells[("A", "B")].model.values["accuracy"] == 1.0
    text = transfer_markdown(result)
    assert "| one class | no model: the training set could not be fitted |" in text
    assert "| one class | - | - | not fitted: need at least two label classes" in text


def test_markdown_layout():
    result = transfer({"A": _set("A"), "x|y": _set("B")}, {"A": _set("A"), "x|y": _set("B")}, n_boot=100)
    text = transfer_markdown(result)
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| trained on \\ evaluated on"))
    assert lines[header] == "| trained on \\ evaluated on | A | x\\|y |"
    row_a = lines[header + 2]
    assert row_a.startswith("| A | 1.000 [1.000, 1.000] †; longer answer 0.500; 8 pairs, 2 questions; "
                            "in-distribution | 1.000 [1.000, 1.000] †; longer answer 0.500; 8 pairs, 2 questions |")
    assert lines[header + 3].startswith("| x\\|y | ")
    assert "† fewer than 30 questions or 50 pairs" in text
    assert "**test** split. A cell gives" in text and "decided by question overlap" in text


def test_bad_arguments():
    with pytest.raises(ConfigError, match="at least one training set"):
        transfer({}, {"A": _set("A")})
    with pytest.raises(ConfigError, match="'split' must be 'dev' or 'test'"):
        transfer({"A": _set("A")}, {"A": _set("A")}, split="train")


def test_cli_transfer_writes_the_table(tmp_path):
    from workers.cli import main

    for name, table in (("a", _set("A")), ("b", _set("B")), ("c", _set("C", revision="0.1"))):
        (tmp_path / name).mkdir()
        pq.write_table(table, tmp_path / name / "pairs.parquet")
    out = tmp_path / "transfer.md"
    a, b, c = (str(tmp_path / n) for n in "abc")
    assert main(["transfer", "--train", a, "--eval", a, b, c, "--out", str(out), "--n-boot", "50"]) == 0
    text = out.read_text()
    row = next(line for line in text.splitlines() if line.startswith(f"| {a} | "))
    cells = row.split(" | ")
    assert "in-distribution" in cells[1] and cells[1].startswith("1.000")
    assert cells[2].startswith("1.000") and "in-distribution" not in cells[2]
    assert cells[3].startswith("provenance differs: conciseness: model_revision is 3.8.0 in the model, 0.1")
    assert "## Style-controlled" in text  # --style is the default, as in fit
    assert main(["transfer", "--train", a, "--eval", b, "--no-style", "--out", str(out), "--n-boot", "50"]) == 0
    assert "none (--no-style)" in out.read_text() and "## Style-controlled" not in out.read_text()
    assert main(["transfer", "--train", str(tmp_path / "missing"), "--eval", a, "--out", str(out)]) == 2


def _style_set(topic: str, *, follow: str, seed: int = 0):
    """48 pairs with answers of random lengths; the label follows the longer answer or the higher conciseness."""
    rng = np.random.default_rng(seed)
    pairs, splits, raw = [], [], {}
    for q in range(12):
        for k in range(4):
            n_a, n_b = rng.choice(np.arange(5, 60), size=2, replace=False)
            a = f"{topic} {q} {k} a " + "word " * int(n_a)
            b = f"{topic} {q} {k} b " + "word " * int(n_b)
            raw[a], raw[b] = rng.uniform(0.2, 0.8, size=2)
            if follow == "conciseness":
                gap = 0.15 if k % 2 == 0 else -0.15
                raw[a], raw[b] = 0.5 + gap, 0.5 - gap
                label = "a" if gap > 0 else "b"
            else:
                label = "a" if n_a > n_b else "b"
            pairs.append(PairRecord(f"{topic}-{q}-{k}", f"{topic} question {q}?", a, b, label))
            splits.append(_split(q))
    items = explode(pairs)
    answers = answers_table(items, [CONC], {"conciseness": [Score.ok(raw[it.answer]) for it in items]},
                            {"conciseness": Provenance(CONC.version, "spacy", "en_core_web_sm", "3.8.0")})
    return pairs_table(pairs, splits, answers)


def test_style_controlled_cells_remove_what_length_explains():
    sets = {"length": _style_set("L", follow="length"), "content": _style_set("C", follow="conciseness")}
    result = transfer(sets, sets, n_boot=100)
    for name in sets:
        assert "style_length" in result.models[name].model.style_features_
    by_length = result.cells[("length", "length")]
    # the longer answer always wins here: the model learns length, and without it has only noise
    assert by_length.longer.values["accuracy"] == 1.0 and by_length.model.values["accuracy"] == 1.0
    assert by_length.style_controlled.n == by_length.model.n == 8
    assert by_length.style_controlled.values["accuracy"] < 1.0
    content = result.cells[("content", "content")]
    # conciseness decides here, lengths are random: style control changes nothing
    assert content.model.values["accuracy"] == content.style_controlled.values["accuracy"] == 1.0
    text = transfer_markdown(result)
    section = text.split("## Style-controlled")[1].split("## The models")[0]
    controlled = f"{by_length.style_controlled.values['accuracy']:.3f} ["
    assert f"| length | {controlled}" in section
    assert "| length | 48 |" not in text and "| length | 32 | 8 | conciseness | style_length" in text


def test_no_style_fits_rubrics_only():
    sets = {"length": _style_set("L", follow="length")}
    result = transfer(sets, sets, style=False, n_boot=50)
    cell = result.cells[("length", "length")]
    assert result.models["length"].model.style_features_ == () and cell.style_controlled is None
    text = transfer_markdown(result)
    assert "## Style-controlled" not in text and "none (--no-style)" in text


def test_a_table_without_style_counts_is_a_provenance_difference_for_a_style_model():
    from rubric.tables.style import STYLE_META_KEY

    old = _style_set("C", follow="conciseness")
    old = old.replace_schema_metadata({k: v for k, v in old.schema.metadata.items() if k != STYLE_META_KEY})
    result = transfer({"length": _style_set("L", follow="length")}, {"old": old}, n_boot=50)
    problem = result.cells[("length", "old")].problem
    assert problem.startswith("provenance differs: style_length: the table records no style covariates")
    # without style covariates the same model applies: its rubrics were made the same way
    result = transfer({"length": _style_set("L", follow="length")}, {"old": old}, style=False, n_boot=50)
    assert result.cells[("length", "old")].problem is None
