"""Each version's measured agreement with people is registry data a user reads beside the column; a preset's
signals are columns of their own (issue 56)."""

import json
import math

import numpy as np
import pytest

import rubric.scoring.agreement as agreement
from rubric.errors import ConfigError
from rubric.scoring import RUBRICS, agreement_line, measured_agreement
from rubric.cpu_profile._coherence import adjacent_coherence
from rubric.presets import CPU, Preset, preset_rubric_versions
from rubric.preference import column_kind


@pytest.fixture
def table(tmp_path, monkeypatch):
    rows = [{"version": "coherence.minilm.v1", "aspect": "coherence", "data": "SummEval dev", "statistic": "Spearman",
             "value": 0.1, "ci": [0.0, 0.18], "n": 800, "length": 0.01},
            {"version": "coherence.minilm.v1", "aspect": "coherence", "data": "Topical-Chat", "statistic": "Spearman",
             "value": 0.2, "ci": [None, None], "n": 360, "length": None}]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "agreement.json").write_text(json.dumps({"command": "x", "commit": "abc", "rows": rows}))
    monkeypatch.setattr(agreement.resources, "files", lambda pkg: tmp_path)
    agreement._table.cache_clear()
    yield rows
    agreement._table.cache_clear()


def test_a_measured_version_reads_its_numbers_and_an_unmeasured_one_says_so(table):
    got = measured_agreement("coherence.minilm.v1")
    assert [g.data for g in got] == ["SummEval dev", "Topical-Chat"] and got[0].ci == (0.0, 0.18)
    assert math.isnan(got[1].ci[0]) and math.isnan(got[1].length)
    line = agreement_line("coherence.minilm.v1")
    assert line == ("\u03c1 0.10 [0.00, 0.18] with people's coherence (SummEval dev; length 0.01); "
                    "\u03c1 0.20 with people's coherence (Topical-Chat)")
    assert agreement_line("grammar.harper.v1", "grammar") == "not measured against people's ratings of grammar"
    assert agreement.agreement_record() == {"command": "x", "commit": "abc"}


def test_the_shipped_table_names_registered_versions_only():
    agreement._table.cache_clear()
    for row in agreement._table()[1]:
        assert row.version in RUBRICS and row.aspect and row.data and -1 <= row.value <= 1 and row.n > 0


def test_column_kinds():
    assert column_kind("coherence") == "rubric" and column_kind("qa_similarity") == "signal"
    assert column_kind("missing_coherence") == "missing-value indicator"
    assert column_kind("style_length", ("style_length",)) == "style covariate"


def test_a_presets_signals_are_scored_and_named_like_its_rubrics():
    p = Preset(name="t", title="t", rubric_versions={"relevance": "relevance.minilm.v1"},
               signals={"qa_similarity": "qa_similarity.minilm.v1"}, llm_layout="paper", rescale="declared",
               split_fractions=(0.7, 0.15, 0.15), fit_split="train", eval_split="test", style=True, decorrelate=False,
               C=1.0, ties="drop", judges=(), judge_mode="logprob", n_votes=1, temperature=0.0, tie=False)
    assert dict(p.versions) == {"relevance": "relevance.minilm.v1", "qa_similarity": "qa_similarity.minilm.v1"}
    assert preset_rubric_versions(p, None) == "relevance.minilm.v1,qa_similarity.minilm.v1"
    assert preset_rubric_versions(p, "qa_similarity") == "qa_similarity.minilm.v1"
    with pytest.raises(ConfigError, match="not a version of the extra signal"):
        Preset(**{**p.__dict__, "signals": {"relevance": "relevance.minilm.v1"}})
    assert set(CPU.signals) == {"qa_similarity", "information"}


def test_adjacent_coherence_reads_no_question():
    s = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    mean, least = adjacent_coherence(s)
    assert mean == pytest.approx(0.7) and least == pytest.approx(0.6)
    assert adjacent_coherence(s[:1]) is None
