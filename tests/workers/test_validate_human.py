"""``lfqa-rubric validate --human`` end to end (issue 56): rated answers through the runner and its store, the
printed table as the job computed it, report.md, the Parquet tables, a re-run that reuses every score, pairs with
aspect judgements, and the HTML section."""

import json

import pyarrow.parquet as pq
import pytest

from rubric.validity import read_agreement
from workers.cli import main

CHEAP = ["--rubrics", "conciseness,grammar", "--quiet", "--n-boot", "100"]


def _rated(tmp_path):
    """Two documents x four systems, rated on two aspects; the answers differ in lexical density."""
    rows = []
    texts = ["The council approved the new budget for schools and roads on Monday.",
             "It is what it is and that is that, so to say, as it were.",
             "The budget was approved. Schools and roads will get money.",
             "So, the thing is, they did the thing that they said they would do."]
    for d in range(2):
        for k, t in enumerate(texts):
            rows.append({"id": f"d{d}m{k}", "doc": f"Article {d}: the council met about the budget.", "doc_id": f"d{d}",
                         "model": f"M{k}", "summary": t + ("" if d == 0 else " Again."),
                         "coherence": [5, 2, 4, 1][k] + d * 0.1, "fluency": [4, 3, 4, 2][k]})
    p = tmp_path / "rated.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return p


def _human(p, out, *extra):
    return main(["validate", str(p), "--human", "--format", "jsonl", "--map",
                 "question=doc,answer=summary,source=doc_id,system=model,id=id", "--aspects",
                 "coherence,fluency", *CHEAP, "--out", str(out), *extra])


def test_validate_human_scores_compares_and_reuses(tmp_path, capsys):
    p, out = _rated(tmp_path), tmp_path / "h"
    assert _human(p, out) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("| scorer | coherence \u03c1 | coherence \u03c4 | fluency \u03c1 | fluency \u03c4 | n |")
    assert "| conciseness (`conciseness.lexical_density.v1`) |" in printed and "| length (words) |" in printed
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "validate-human" and manifest["counts"]["rated answers"] == 8
    assert manifest["agreement"]["aspects"] == ["coherence", "fluency"]
    assert manifest["job"]["answers_scored_now"] == 8
    rows = pq.read_table(out / "agreement.parquet").to_pylist()
    assert {r["level"] for r in rows} == {"source", "pooled", "system"}
    assert {r["scorer"] for r in rows} == {"conciseness.lexical_density.v1", "grammar.harper.v1", "length (words)"}
    answers = pq.read_table(out / "agreement_answers.parquet").to_pylist()
    assert [a["row_id"] for a in answers] == [f"d{d}m{k}" for d in range(2) for k in range(4)]
    assert all(a["score_conciseness"] is not None and a["rating_coherence"] for a in answers)
    report = (out / "report.md").read_text()
    assert report.startswith("# Agreement with people's ratings, aspect by aspect")
    assert printed.strip() in report and "## System level" in report
    # the printed table is the one the job computed (read back, not recomputed with other replicates)
    shown = read_agreement(out)["table"]
    assert shown.get("conciseness.lexical_density.v1", "coherence", "source", "spearman").value == pytest.approx(
        next(r["value"] for r in rows if (r["scorer"], r["aspect"], r["level"], r["statistic"]) ==
             ("conciseness.lexical_density.v1", "coherence", "source", "spearman")))
    # again: every score from the store, the same table
    assert _human(p, out) == 0
    assert json.loads((out / "manifest.json").read_text())["job"]["answers_scored_now"] == 0
    assert capsys.readouterr().out == printed
    # the HTML report has the section
    html = tmp_path / "r.html"
    assert main(["report", str(out), "--html", str(html)]) == 0
    page = html.read_text()
    assert 'data-kind="validate-human"' in page and 'data-table="agreement-source"' in page


def test_validate_human_needs_aspects_and_a_ratings_map(tmp_path, capsys):
    p = _rated(tmp_path)
    for argv, said in ((["--human", "--format", "jsonl", "--map", "question=doc,answer=summary"], "needs --aspects"),
                       (["--human", "--format", "jsonl", "--aspects", "coherence"], "needs --map"),
                       (["--format", "jsonl", "--map", "question=doc,answer_a=summary,answer_b=summary", "--aspects",
                         "coherence"], "--aspects is --human's"),
                       (["--human", "--format", "jsonl", "--map", "question=doc,answer=summary", "--aspects",
                         "coherence", "--families", "echo"], "--families names minimal-pair families")):
        assert main(["validate", str(p), *argv, *CHEAP, "--out", str(tmp_path / "x")]) == 2
        assert said in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_validate_human_reads_pairs_with_aspect_judgements(tmp_path, capsys):
    rows = []
    for q in range(6):
        rows.append({"question": f"Why does thing {q} happen?",
                     "answer_a": "Because the pressure rises and the valve opens, so the gas escapes quickly.",
                     "answer_b": "It just does, you know, it is what it is.",
                     "overall_preference": -1, "coherence_preference": -1 if q % 2 else 1,
                     "factuality_preference": 0})
    p = tmp_path / "eval.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "pe"
    code = main(["validate", str(p), "--human", "--format", "lfqa-eval", *CHEAP, "--out", str(out)])
    assert code == 0
    rows = pq.read_table(out / "agreement.parquet").to_pylist()
    got = {(r["scorer"], r["aspect"]): r for r in rows if r["level"] == "pairs"}
    assert {a for _, a in got} == {"coherence", "factuality", "overall"}
    conc = got[("conciseness.lexical_density.v1", "overall")]
    assert conc["n"] == 6 and conc["value"] == 1.0  # the denser answer is the one preferred overall
    assert got[("conciseness.lexical_density.v1", "factuality")]["n"] == 0  # every judgement a tie
    assert "## Pairwise aspect judgements" in (out / "report.md").read_text()
