"""Issue 35: a lone surrogate (U+D800-U+DFFF, e.g. ``"\\ud800"`` in scraped JSON: half of an emoji pair) in any
text field is a reject of its row naming the row, the field and the code point, in every reader and every
entry point that takes text; the other rows are scored. Before, ``score`` died with a UnicodeEncodeError
and wrote no table (only U+DC80-U+DCFF, undecodable bytes, were caught).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rubric.config import ScoringConfig
from rubric.io import Reject, read_input
from tests.reliability.test_job import _records

BAD = "\ud800"  # what json.loads makes of "\ud800"
CODE = "U+D800"


def _spoil(text: str) -> str:
    return text[:5] + BAD + text[5:]


def _check(reject, field: str, row: int | None) -> None:
    assert reject.field == field and reject.row == row and CODE in reject.reason, reject
    json.dumps(reject.to_dict(), ensure_ascii=False).encode()  # the rejects file can be written


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")  # \ud800 as JSON writes it
    return path


GOOD_EVAL = {"question": "Why is the sky blue?", "answer_a": "Rayleigh scattering of sunlight.",
             "answer_b": "Because it reflects the ocean.", "overall_preference": -1}


@pytest.mark.parametrize("fmt, field", [("lfqa-hp", "answer_1"), ("lfqa-hp", "question_text"),
                                        ("lfqa-eval", "answer_b"), ("lfqa-eval", "question"),
                                        ("lfqa-eval", "pair_id"), ("lfqa-eval", "domain"), ("lfqa-eval", "reference"),
                                        ("jsonl", "answer_a")])
def test_pair_readers_reject_the_row(tmp_path, fmt, field):
    if fmt == "lfqa-hp":
        rows = _records()[:3]
    else:
        rows = [{**GOOD_EVAL, "pair_id": f"p{i}"} for i in range(3)]
        if fmt == "jsonl":
            rows = [{**r, "label": "a"} for r in rows]
        rows[1].setdefault(field, "text of the field")
    rows[1][field] = _spoil(str(rows[1][field]))
    options = {"mapping": "question=question,answer_a=answer_a,answer_b=answer_b,label=label"} if fmt == "jsonl" else {}
    read = read_input(_jsonl(tmp_path / "in.jsonl", rows), fmt, **options)
    assert len(read.pairs) == 2 and len(read.rejects) == 1
    _check(read.rejects[0], field, 1)


@pytest.mark.parametrize("where", ["question", "answer"])
def test_the_graded_reader_rejects_the_answers(tmp_path, where):
    q = "Why is the sky blue?"
    answers = [{"passage": "Rayleigh scattering of sunlight.", "label": 2}, {"passage": "It reflects the sea.", "label": 0},
               {"passage": "Dust in the air, mostly.", "label": 1}]
    if where == "answer":
        answers[0]["passage"] = _spoil(answers[0]["passage"])
    else:
        q = _spoil(q)
    path = tmp_path / "g.json"
    path.write_text(json.dumps({q: answers, "Why is grass green?": [{"passage": "Chlorophyll.", "label": 2},
                                                                    {"passage": "Paint on it.", "label": 0}]}))
    read = read_input(path, "graded")
    bad = [r for r in read.rejects if CODE in r.reason]
    assert len(bad) == (3 if where == "question" else 1) and len(read.pairs) == (1 if where == "question" else 2)
    _check(bad[0], "question" if where == "question" else "passage", 0)


def test_the_arena_readers_reject_the_row(tmp_path):
    from rubric.protocols import read_arena_annotations, read_arena_answers

    ann = [{"qid": i, "question": f"What is thing {i}?", "answer": f"Thing {i} is a reference answer.",
            "domain": "science"} for i in range(3)]
    ann[1]["answer"] = _spoil(ann[1]["answer"])
    ann[2]["qid"] = "2" + BAD
    qs = read_arena_annotations(_jsonl(tmp_path / "ann.jsonl", ann))
    assert [q.qid for q in qs.questions] == ["0"]
    _check(qs.rejects[0], "answer", 1)
    _check(qs.rejects[1], "qid", 2)
    answers = read_arena_answers(_jsonl(tmp_path / "sys.jsonl", [{"qid": 0, "answer": _spoil("An answer.")},
                                                                  {"qid": 1, "answer": "Fine."}]), "sys")
    assert len(answers.answers) == 1
    _check(answers.rejects[0], "answer", 0)


@pytest.mark.parametrize("references", ["data", "generated"])
def test_the_linkage_reader_rejects_the_answer_and_a_bad_reference(tmp_path, references):
    from rubric.protocols import read_linkage

    docs = [{"answer": f"Answer number {i} about the sky.", "label": i % 3, "model": "m"} for i in range(4)]
    docs[0]["answer"] = _spoil(docs[0]["answer"])
    docs[1]["model"] = _spoil("model")  # an unusable author: unknown, the answer kept
    ok = {"doc_list": docs, **{f"ground{k}": f"Reference {k} about the sky." for k in range(4)}}
    bad_ref = {**ok, "doc_list": [dict(d) for d in docs[1:]], "ground3": _spoil("Reference three.")}
    path = tmp_path / "wg.json"
    path.write_text(json.dumps({"Why is the sky blue?": ok, "Why is grass green?": bad_ref}))
    read = read_linkage(path, references=references)
    assert [q.question for q in read.questions] == ["Why is the sky blue?"]
    assert {c.system for c in read.questions[0].candidates} <= {"m", ""}
    first = read.rejects[0]
    assert first.row == 0 and first.field == "answer" and CODE in first.reason
    ref = [r for r in read.rejects if r.row == 1]
    assert len(ref) == 3 and all("ground3" in r.reason and CODE in r.reason for r in ref)
    json.dumps([r.to_dict() for r in read.rejects], ensure_ascii=False).encode()


@pytest.mark.parametrize("item, field", [({"question": "Why?", "answer": _spoil("Because.")}, "answer"),
                                         ({"question": _spoil("Why is it?"), "answer": "Because."}, "question"),
                                         ({"question": "Why?", "answer": "Because.", "docs": ["ok", _spoil("doc")]},
                                          "docs")])
def test_the_service_answers_the_item_with_its_reason(item, field):
    from rubric.preference.service import ServiceLimits, answer_item, preference_pair

    got = answer_item(item, ServiceLimits())
    assert isinstance(got, Reject)
    _check(got, field, None)
    pair = {"question": item["question"], "answer_a": item["answer"], "answer_b": "Another answer.",
            **({"docs_a": item["docs"]} if "docs" in item else {})}
    got = preference_pair(pair, 0, ServiceLimits())
    assert isinstance(got, Reject)
    _check(got, {"answer": "answer_a", "docs": "docs_a"}.get(field, field), None)


def test_the_judge_job_judges_the_other_pairs(tmp_path):
    from tests.workers.test_judge_job import LengthJudge
    from workers.jobs.judge import JudgeSettings, run_judge_job

    rows = _records()[:4]
    rows[2]["answer_2"] = _spoil(rows[2]["answer_2"])
    settings = JudgeSettings("plain")
    m = run_judge_job(_jsonl(tmp_path / "in.jsonl", rows), "lfqa-hp", settings, tmp_path / "out",
                      config=ScoringConfig(batch_size=4), progress=False,
                      scorer=LengthJudge([s.version for s in settings.specs]))
    assert m["counts"]["pairs"] == 3 and m["counts"]["rejected"] == 1
    [reject] = [json.loads(line) for line in (tmp_path / "out" / "rejects.jsonl").read_text().splitlines()]
    assert reject["row"] == 2 and reject["field"] == "answer_2" and CODE in reject["reason"]


def test_score_rejects_the_row_and_scores_the_rest(tmp_path, capsys):
    """The issue's repro, through the command: exit 0, the row in rejects.jsonl, the other pairs scored."""
    from workers.cli import main

    rows = _records()[:3]
    rows[0]["answer_1"] = _spoil(rows[0]["answer_1"])
    src = _jsonl(tmp_path / "in.jsonl", rows)
    assert main(["score", str(src), "--format", "lfqa-hp", "--rubrics", "conciseness", "--out",
                 str(tmp_path / "out"), "--quiet"]) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["counts"]["pairs"] == 2 and manifest["counts"]["rejected"] == 1
    [reject] = [json.loads(line) for line in (tmp_path / "out" / "rejects.jsonl").read_text().splitlines()]
    assert reject["row"] == 0 and reject["field"] == "answer_1" and f"{CODE} at character 6" in reject["reason"]
