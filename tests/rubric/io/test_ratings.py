"""Per-answer human ratings read through a column mapping, or from a graded list (issue 56)."""

import json

import pytest

from rubric.errors import ConfigError, InputError
from rubric.io import content_id, parse_aspects, read_graded_ratings, read_ratings


def _write(tmp_path, rows, name="r.jsonl"):
    p = tmp_path / name
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return p


MAP = "question=doc,answer=summary,source=doc_id,system=model,reference=doc"


def test_aspects_name_columns():
    assert parse_aspects("coherence, fluency,factuality=consistency") == {
        "coherence": "coherence", "fluency": "fluency", "factuality": "consistency"}
    for bad in ("", " , ", "=x", "a,a"):
        with pytest.raises(ConfigError):
            parse_aspects(bad)


def test_rated_answers_keep_every_row_or_say_why(tmp_path):
    rows = [
        {"doc": "The article.", "doc_id": "d1", "model": "M0", "summary": "A summary.", "coherence": 4.5,
         "consistency": 5},
        {"doc": "The article.", "doc_id": "d1", "model": "M1", "summary": "Another one.", "coherence": "3",
         "consistency": None},                                             # a CSV-like string; one aspect unrated
        {"doc": "The article.", "doc_id": "d1", "model": "M2", "summary": "No rating.", "coherence": None},
        {"doc": "The article.", "doc_id": "d1", "model": "M3", "summary": "Bad.", "coherence": "high"},
        {"doc": "The article.", "doc_id": "d1", "model": "M4", "summary": "Bool.", "coherence": True},
        {"doc": "The article.", "doc_id": "d1", "model": "M5", "summary": "...", "coherence": 2},
        {"doc": "The article.", "doc_id": "d1", "model": "M6", "summary": "Nan.", "coherence": float("nan")},
    ]
    got = read_ratings(_write(tmp_path, rows), MAP, "coherence,factuality=consistency")
    assert got.rows_in == 7 and len(got.answers) == 2 and len(got.rejects) == 5
    a, b = got.answers
    assert a.ratings == {"coherence": 4.5, "factuality": 5.0} and b.ratings == {"coherence": 3.0}
    assert a.source == "d1" and a.system == "M0" and a.item.reference == "The article."
    assert a.item.answer_id == content_id("The article.", "A summary.", (), "The article.")
    reasons = [r.reason for r in got.rejects]
    assert "no rating on any aspect" in reasons[0] and "'high', not a number" in reasons[1]
    assert "True, not a number" in reasons[2] and "has no letters" in reasons[3] and "finite" in reasons[4]
    assert got.aspects == ("coherence", "factuality")


def test_a_mapping_that_names_no_column_or_no_answer_is_refused(tmp_path):
    p = _write(tmp_path, [{"doc": "Q", "summary": "A", "coherence": 1}])
    with pytest.raises(InputError, match="aspect fluency=fluency"):
        read_ratings(p, "question=doc,answer=summary", "fluency")
    with pytest.raises(ConfigError, match="answer"):
        read_ratings(p, "question=doc", "coherence")
    with pytest.raises(ConfigError, match="unknown mapping field"):
        read_ratings(p, "question=doc,answer=summary,answer_a=summary", "coherence")


def test_the_source_defaults_to_the_question(tmp_path):
    rows = [{"q": "Why?", "a": "Because.", "r": 1}, {"q": "Why?", "a": "No idea.", "r": 0}]
    got = read_ratings(_write(tmp_path, rows), "question=q,answer=a", "relevance=r")
    assert len({x.source for x in got.answers}) == 1 and got.answers[0].system == ""


def test_a_graded_list_rates_one_aspect(tmp_path):
    data = {"what is x": [{"passage": "X is a thing.", "label": 3}, {"passage": "Nothing.", "label": 0},
                          {"passage": "Bad grade.", "label": "high"}],
            "what is y": [{"passage": "Y is y.", "label": 1}]}
    p = tmp_path / "g.json"
    p.write_text(json.dumps(data))
    got = read_graded_ratings(p, "relevance")
    assert got.rows_in == 4 and len(got.answers) == 3 and len(got.rejects) == 1
    assert [a.ratings for a in got.answers] == [{"relevance": 3.0}, {"relevance": 0.0}, {"relevance": 1.0}]
    assert got.answers[0].source == got.answers[1].source != got.answers[2].source
    with pytest.raises(ConfigError, match="one aspect"):
        read_graded_ratings(p, "relevance,coherence")
