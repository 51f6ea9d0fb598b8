"""LINKAGE's reader (reference lists, candidates, rejects, caps) and read_graded's max_questions."""

import json

import pytest

from rubric.errors import ConfigError
from rubric.protocols.linkage_data import read_linkage
from rubric.io import read_graded


def _write(tmp_path, data):
    p = tmp_path / "g.json"
    p.write_text(json.dumps(data))
    return p


TREC = {
    "q one?": [{"docid": "a", "passage": "alpha text", "label": 2}, {"docid": "b", "passage": "beta text", "label": 0},
               {"docid": "c", "passage": "gamma text", "label": 2}, {"docid": "d", "passage": "delta text", "label": 1},
               {"docid": "e", "passage": "alpha  text", "label": 0}],
    "q two?": [{"docid": "a", "passage": "one grade", "label": 1}, {"docid": "b", "passage": "same grade", "label": 1}],
    "q three?": [{"docid": "a", "passage": "x text", "label": 3}, {"docid": "b", "passage": "y text", "label": 0},
                 {"docid": "c", "passage": "z text", "label": 0}],
}


def test_graded_reference_lists_and_rejects(tmp_path):
    r = read_linkage(_write(tmp_path, TREC))
    q1, q3 = r.questions
    assert q1.references == ("alpha text", "delta text", "beta text")  # one per grade, best first
    assert [c.key for c in q1.candidates] == ["2"]  # 'c'; 'e' repeats 'a' up to whitespace
    assert [c.key for c in q3.candidates] == ["2"]
    reasons = [x.reason for x in r.rejects]
    assert sum("same text as answer 0" in x for x in reasons) == 1
    assert sum("two distinct grades" in x for x in reasons) == 2
    assert r.rows_in == 10 and r.n_references == 5 and r.n_candidates == 2


def test_caps_are_seeded_and_counted(tmp_path):
    data = {"q?": [{"docid": str(i), "passage": f"text {i}", "label": i % 3} for i in range(12)]}
    a = read_linkage(_write(tmp_path, data), max_answers_per_question=4, seed=1)
    b = read_linkage(_write(tmp_path, data), max_answers_per_question=4, seed=1)
    assert [c.key for c in a.questions[0].candidates] == [c.key for c in b.questions[0].candidates]
    assert len(a.questions[0].candidates) == 4 and a.n_capped == 12 - 3 - 4
    assert len(read_linkage(_write(tmp_path, TREC), max_questions=1).questions) == 1
    with pytest.raises(ConfigError, match="max_questions"):
        read_linkage(_write(tmp_path, TREC), max_questions=0)


def test_webglm_references_are_ground3_to_ground0(tmp_path):
    data = {"q?": {"doc_list": [{"answer": "x one", "model": "gpt", "label": 3},
                                {"answer": "y two", "model": "llama", "label": 1}],
                   "ground0": "g0 text", "ground1": "g1 text", "ground2": "g2 text", "ground3": "g3 text"},
            "bad?": {"doc_list": [{"answer": "z three", "label": 2}], "ground3": "only one"}}
    r = read_linkage(_write(tmp_path, data))
    [q] = r.questions
    assert q.references == ("g3 text", "g2 text", "g1 text", "g0 text")
    assert [(c.label, c.system) for c in q.candidates] == [(3, "gpt"), (1, "llama")]
    assert len(r.rejects) == 1 and "ground2" in r.rejects[0].reason


def test_read_graded_max_questions(tmp_path):
    p = _write(tmp_path, TREC)
    assert {x.question for x in read_graded(p, max_questions=1).pairs} == {"q one?"}
    with pytest.raises(ConfigError, match="max_questions"):
        read_graded(p, max_questions=0)


def test_generated_mode_reads_a_golden_answer_and_no_list(tmp_path):
    data = {"q a?": {"doc_list": [{"answer": "x one", "label": 3}, {"answer": "x two", "label": 1}],
                     "ground3": "GOLD a", "ground2": "g2", "ground1": "g1", "ground0": "g0"},
            "q b?": {"doc_list": [{"answer": "y one", "label": 2}], "ground2": "g2"}}  # no ground3
    r = read_linkage(_write(tmp_path, data), references="generated")
    (q,) = r.questions
    assert q.golden == "GOLD a" and q.references == () and len(q.candidates) == 2
    assert len(r.rejects) == 1 and "no golden answer" in r.rejects[0].reason and r.n_references == 0
    # the data path rejects q b too (no list) and reads q a's four groundK
    d = read_linkage(_write(tmp_path, data))
    assert d.questions[0].references == ("GOLD a", "g2", "g1", "g0") and d.questions[0].golden == ""
    with pytest.raises(ConfigError, match="'references' must be one of"):
        read_linkage(_write(tmp_path, data), references="llm")
