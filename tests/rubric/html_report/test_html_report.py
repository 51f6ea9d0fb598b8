"""The HTML report's pages: sections follow the folders given, its numbers are the Markdown report's,
its data cannot break out of the page, and nothing in it points outside the file.

Built from the analysis tests' synthetic outputs (a score output with a fitted model, a judge output);
the real commands and a real browser are tested in tests/workers/test_report_html.py.
"""

from __future__ import annotations

import json
import math
import re
from html.parser import HTMLParser

import numpy as np
import pyarrow.parquet as pq
import pytest

from rubric.errors import InputError
from rubric.preference.evaluate import evaluate_model, fit_model, read_pairs, write_report
from rubric.html_report import build_report, folder_kinds, render_html, spearman_matrix
from rubric.preference import PreferenceModel
from tests.rubric.analysis.test_analysis import _judge_output, _score_output

N_BOOT = 200


class Tables(HTMLParser):
    """Every <table>'s rows as lists of cell texts, keyed by the table's class; section ids and kinds."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.sections: dict[str, str] = {}
        self._table = self._row = self._cell = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.sections[a["id"]] = a.get("data-kind", "")
        elif tag == "table":
            self._table = self.tables.setdefault(a.get("class", ""), [])
        elif tag == "tr" and self._table is not None:
            self._row = []
            self._table.append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def parse(html: str) -> Tables:
    t = Tables()
    t.feed(html)
    return t


def md_rows(text: str, header_start: str) -> list[list[str]]:
    """The body rows of the Markdown table whose header line starts with ``header_start``."""
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[i + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("html")
    table = _score_output(root / "score")
    model, _ = fit_model(table, split="train", n_boot_weights=50, seed=1)
    model.to_json(root / "score" / "model.json")
    _judge_output(root / "judge")
    _score_output(root / "score_typos", perturbed=True)
    _judge_output(root / "judge_typos", perturbed=True)
    return root


@pytest.fixture(scope="module")
def full(outputs):
    rep = build_report([outputs / "score", outputs / "judge"], n_boot=N_BOOT,
                       perturbed={"typos": [outputs / "score_typos", outputs / "judge_typos"]})
    return rep, render_html(rep)


def test_every_section_of_the_folders_given_and_no_other(outputs, full):
    rep, html = full
    kinds = parse(html).sections
    assert kinds == {"score-0": "score", "model-0": "model", "pairs-0": "pairs", "analysis": "analysis"}
    assert html.count('data-chart="weights"') == 1 and html.count('data-chart="calibration"') == 1
    for name in ("accuracy", "agreement", "position", "verbosity", "perturbation"):
        assert html.count(f'data-chart="{name}"') == 1, name
    # Table 8: one row per system on the perturbed set, as analyze computed it
    perturbation = parse(html).tables["perturbation"][1:]
    assert [r[0] for r in perturbation] == [r.system for r in rep.analysis.perturbations[0].rows]
    # a score output alone: its own section and its pairs, no model, no analysis, no protocols
    alone = parse(render_html(build_report([outputs / "judge"], n_boot=N_BOOT))).sections
    assert set(alone.values()) == {"analysis"}
    (outputs / "bare").mkdir(exist_ok=True)
    pq.write_table(read_pairs(outputs / "score"), outputs / "bare" / "pairs.parquet")
    bare = parse(render_html(build_report([outputs / "bare"], n_boot=N_BOOT))).sections
    assert bare == {"score-0": "score", "pairs-0": "pairs"}


def test_metrics_cis_and_weights_equal_the_markdown_report(outputs, full, tmp_path):
    rep, html = full
    model = PreferenceModel.from_json(outputs / "score" / "model.json")
    ev = evaluate_model(model, read_pairs(outputs / "score"), split="test", n_boot=N_BOOT)
    md = write_report(ev, model, tmp_path / "report.md")
    tables = parse(html).tables
    md_metrics = {r[0]: r[3:] for r in md_rows(md, "| system | n pairs")}
    html_metrics = {r[0]: r[3:] for r in tables["metrics"][1:]}
    assert md_metrics == html_metrics and len(md_metrics) == 4  # model, style-controlled, two baselines
    assert all(re.fullmatch(r"\d\.\d{4} \[\d\.\d{3}, \d\.\d{3}\]", c) for c in md_metrics[ev.rows[0].system])
    md_weights = {r[0]: (r[2], r[3]) for r in md_rows(md, "| feature | kind")}
    html_weights = {r[0]: (r[2], r[3]) for r in tables["weights"][1:]}
    assert md_weights == html_weights and set(md_weights) == set(model.columns_)
    assert all(ci.startswith("[") and "not computed" not in ci for _, ci in md_weights.values())
    brier = md_rows(md, "| system | Brier")[0][1]
    assert tables["calibration"][1][1] == brier


def test_page_data_cannot_close_its_script_element(outputs, tmp_path):
    out = tmp_path / "score"
    out.mkdir()
    table = read_pairs(outputs / "score")
    question = table.column("question").to_pylist()
    evil = "</script><script>alert(1)</script> & <!-- x"
    import pyarrow as pa

    table = table.set_column(table.column_names.index("question"), "question",
                             pa.array([evil] + question[1:]))
    pq.write_table(table, out / "pairs.parquet")
    html = render_html(build_report([out], n_boot=N_BOOT))
    assert evil not in html and "alert(1)" in html  # there, but only escaped
    data = re.search(r'<script type="application/json" id="pairdata-0">(.*?)</script>', html, re.S).group(1)
    assert evil in json.loads(data)["questions"].values()


def test_nothing_points_outside_the_file(full):
    _, html = full
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html, re.I)
    assert not re.search(r"url\(\s*['\"]?(https?:|//)|@import|<link\b|<iframe\b|<img\b", html, re.I)
    assert "default-src 'none'" in html  # and the page forbids the browser to fetch anything


def test_long_tables_travel_as_data_and_are_paged_by_the_page(full):
    rep, html = full
    data = json.loads(re.search(r'id="pairdata-0">(.*?)</script>', html, re.S).group(1))
    n = read_pairs(rep.scores[0].folder).num_rows
    assert len(data["pairs"]) == n > 15
    # the static page holds no row per pair: the script shows them page by page
    assert html.count(data["pairs"][-1]["id"]) == 1
    with_model = [p for p in data["pairs"] if "m" in p]
    assert with_model and all(len(p["m"]["contrib"]) == len(data["contrib"]) for p in with_model)
    p = with_model[0]["m"]
    assert 1 / (1 + math.exp(-(sum(p["contrib"]) + p["icpt"]))) == pytest.approx(p["p_a"], abs=2e-3)
    judged = [p for p in data["pairs"] if "j" in p]
    assert judged and all(set(v) >= {"ab", "ba", "deb"} for p in judged for v in p["j"].values())


def test_spearman_matrix():
    m = spearman_matrix({"x": [1, 2, 3, 4], "y": [10, 20, 30, 45], "z": [4, 3, 2, 1], "c": [1, 1, 1, 1],
                         "gap": [1, None, 3, float("nan")]})
    assert m[0, 1] == pytest.approx(1.0) and m[0, 2] == pytest.approx(-1.0)
    assert np.isnan(m[0, 3]) and np.isnan(m[0, 4])  # constant; too few rows with both values


def test_a_folder_without_outputs_is_one_clear_error(tmp_path):
    with pytest.raises(InputError, match="holds no pairs.parquet"):
        folder_kinds(tmp_path)
    with pytest.raises(InputError, match="not an output folder"):
        folder_kinds(tmp_path / "nope")


def test_the_cost_section_and_the_evaluators_table_show_the_manifests_cost(outputs, tmp_path):
    import shutil

    from rubric.tables import CostRow, cost_summary, over_budget

    score, judge = tmp_path / "score", tmp_path / "judge"
    shutil.copytree(outputs / "score", score)
    shutil.copytree(outputs / "judge", judge)
    judge_name = "judge.plain.v1"
    rows = [CostRow(f"p{i}", judge_name, {"prompt_tokens": 400, "cached_prompt_tokens": 50, "generated_tokens": 2,
                                          "seconds": 0.5}, i < 10, "judge.plain.v1: no verdict: x" if i < 20 else None)
            for i in range(72)]
    judge_cost = cost_summary(rows, [judge_name])
    judge_cost.update(max_failed=0.05, over_budget=sorted(over_budget(judge_cost, 0.05)))
    score_cost = cost_summary([CostRow(f"a{i}", "conciseness", {"seconds": 0.25}, False, None) for i in range(48)],
                              ["conciseness"])
    score_cost.update(max_failed=0.05, over_budget=[])
    (judge / "manifest.json").write_text(json.dumps({"tool": "lfqa-rubric", "kind": "judge", "cost": judge_cost}))
    (score / "manifest.json").write_text(json.dumps({"tool": "lfqa-rubric", "cost": score_cost}))
    rep = build_report([score, judge], n_boot=50)
    html = render_html(rep)
    t = parse(html)
    assert t.sections["cost"] == "cost"
    cost = {r[0]: r for r in t.tables["cost"] if r[0] not in ("rubric", "judge")}  # two tables, two headers
    assert set(cost) == {"conciseness", f"{judge_name} over budget"}
    j = cost[f"{judge_name} over budget"]
    assert j[1:5] == ["72", "10", "20 (27.8%)no verdict (20)", "500.000"]
    assert j[5:8] == ["400,000", "50,000", "2,000"]
    assert cost["conciseness"][4] == "250.000" and cost["conciseness"][5] == "n/a"
    assert html.count("Over the failure budget:") == 1  # the judge's folder: its cost section (it has no score section)
    ev = {r[0]: r for r in t.tables["evaluators"][1:]}
    deb = next(k for k in ev if "debiased" in k)
    assert deb.endswith("over its run's failure budget") and ev[deb][5] == "500.000"
    model = next(r for k, r in ev.items() if r[1] == "rubric model")
    assert float(model[5]) == pytest.approx(48 * 0.25 * 1000 / 72, abs=1e-3) and model[8] == str(score)
