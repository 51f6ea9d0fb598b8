"""The score files of scripts/bench_llm.py: saved, read back and compared (no engine needed)."""

from __future__ import annotations

import math

import pytest

from scripts._bench_common import RunResult, compare_scores, correlations, load_scores, save_scores, transformers_kwargs
from rubric.errors import InputError


def _run(name, scores):
    r = RunResult(name)
    r.scores = scores
    return r


def test_saved_scores_read_back_and_compare(tmp_path):
    a = _run("cuda", {"x": {"coherence": 3.0, "fluency": 2.0}, "y": {"coherence": 4.0, "fluency": None},
                      "z": {"coherence": 1.0, "fluency": 1.5}, "only-a": {"coherence": 5.0}})
    save_scores(tmp_path / "a.json", a, meta={"where": " device=cuda"})
    back = load_scores(tmp_path / "a.json")
    assert back.name == "cuda device=cuda" and back.scores == a.scores
    b = _run("cpu", {"x": {"coherence": 3.5, "fluency": 2.0}, "y": {"coherence": 4.0, "fluency": 2.5},
                     "z": {"coherence": 1.0, "fluency": 1.0}})
    out = compare_scores(back, b, ["coherence", "fluency", "relevance"])
    n, r, dmax, dmean = out["coherence"]
    assert n == 3 and dmax == pytest.approx(0.5) and dmean == pytest.approx(0.5 / 3) and 0.9 < r < 1.0
    n, r, dmax, dmean = out["fluency"]  # y has no fluency in a: compared on x and z only
    assert n == 2 and math.isnan(r) and dmax == pytest.approx(0.5)  # r needs 3 answers
    assert out["relevance"][0] == 0 and math.isnan(out["relevance"][2])
    assert correlations(back, b, ["coherence"]) == {"coherence": out["coherence"][1:3]}


def test_transformers_kwargs_leave_unset_options_to_the_engine():
    assert transformers_kwargs() == {}
    assert transformers_kwargs(device="cuda", batch_tokens=4096) == {"device": "cuda", "max_batch_tokens": 4096}


@pytest.mark.parametrize("text", ["not json", '{"name": "x"}', '{"name": "x", "scores": [1, 2]}'])
def test_a_broken_score_file_is_an_input_error(tmp_path, text):
    p = tmp_path / "s.json"
    p.write_text(text)
    with pytest.raises(InputError, match="cannot read saved scores"):
        load_scores(p)
    with pytest.raises(InputError):
        load_scores(tmp_path / "missing.json")
