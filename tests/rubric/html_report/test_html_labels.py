"""The HTML page labels in-sample numbers as ``evaluate`` and ``analyze`` do: by question overlap with the
model's recorded training questions, not by the split's name.

The case this pins: a model fitted with ``fit --split all`` and evaluated on ``test`` was IN-SAMPLE in
``evaluate`` and ``analyze`` but not on the page, which only marked the splits called "train" and "all".
"""

from __future__ import annotations

from rubric.html_report import build_report, render_html
from rubric.preference.evaluate import evaluate_model, fit_model, read_pairs, write_report
from tests.rubric.analysis.test_analysis import _score_output
from tests.rubric.html_report.test_html_report import md_rows, parse


def test_a_model_fitted_on_all_pairs_is_in_sample_on_the_page_as_in_evaluate(tmp_path):
    table = _score_output(tmp_path / "score")
    model, _ = fit_model(table, split="all")
    model.to_json(tmp_path / "score" / "model.json")
    html = render_html(build_report([tmp_path / "score"], split="test", n_boot=50))
    ev = evaluate_model(model, read_pairs(tmp_path / "score"), split="test", n_boot=50)
    md = write_report(ev, model, tmp_path / "report.md")
    assert ev.sample.kind == "in-sample"
    md_rows_ = [r[0] for r in md_rows(md, "| system | n pairs")]
    page_rows = [r[0] for r in parse(html).tables["metrics"][1:]]
    assert page_rows == md_rows_ and all(r.endswith(" (IN-SAMPLE)") for r in page_rows)
    assert "Accuracy beside the baselines — IN-SAMPLE" in html and 'data-sample="in-sample"' in html
    # the analysis section: the model's Table 4 rows too
    table4 = parse(html).tables["comparison"][1:]
    assert [r[0] for r in table4 if r[1] == "rubric model"] == [f"{r} (IN-SAMPLE)" for r in
                                                                 (s.system for s in ev.rows[:2])]


def test_a_partly_overlapping_evaluation_shows_the_other_pairs_beside(tmp_path):
    table = _score_output(tmp_path / "score")
    model, _ = fit_model(table, split="train")
    model.to_json(tmp_path / "score" / "model.json")
    html = render_html(build_report([tmp_path / "score"], split="all", n_boot=50))
    tables = parse(html).tables
    assert all(r[0].endswith(" (PARTLY IN-SAMPLE)") for r in tables["metrics"][1:])
    outside = tables["metrics-outside"][1:]
    assert outside and {r[1] for r in outside} == {"36"} and not any("IN-SAMPLE" in r[0] for r in outside)
    assert "Metrics on the 36 pairs whose questions the model was not fitted on (held-out)" in html
    assert "Table 4 on the 36 pairs whose questions the rubric model was not fitted on" in html
