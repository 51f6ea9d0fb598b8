"""An answer is deduplicated by everything its scores read: the question, the answer, and its documents and
reference when it has them. The same (question, answer) with another reference is another answer, scored with
its own, in the batch job and the service alike; an answer with neither keeps its (question, answer) id."""

from __future__ import annotations

import hashlib
import json

import pyarrow.parquet as pq

from rubric.io import PairRecord, content_id, explode
from rubric.preference import ServiceLimits, answer_item, cache_key
from rubric.scoring import Score
from tests.reliability.test_job import LengthScorer, _run


def _old_id(question: str, answer: str) -> str:
    h = hashlib.sha256()
    for p in (question, answer):
        h.update(p.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


def _pair(pid, a, b, *, reference=None, docs_a=()):
    return PairRecord(pair_id=pid, question="Why is the sky blue?", answer_a=a, answer_b=b, label="a",
                      reference=reference, docs_a=tuple(docs_a))


def test_an_answer_without_documents_or_reference_keeps_its_id():
    p = _pair("p1", "Rayleigh scattering.", "Because.")
    assert p.answer_id_a == _old_id(p.question, p.answer_a) == content_id(p.question, p.answer_a)


def test_the_same_answer_with_another_reference_or_documents_is_another_answer():
    pairs = [_pair("p1", "Rayleigh scattering.", "Because.", reference="ref one"),
             _pair("p2", "Rayleigh scattering.", "Because.", reference="ref two"),
             _pair("p3", "Rayleigh scattering.", "Because.", reference="ref two"),
             _pair("p4", "Rayleigh scattering.", "Because.", reference="ref two", docs_a=["a doc"]),
             _pair("p5", "Rayleigh scattering.", "Because.", reference="")]
    items = explode(pairs)
    got = {(it.answer, it.reference, it.docs) for it in items}
    assert len(items) == len(got) == 7  # 4 variants of answer a, 3 of b (b has no docs): p3 repeats p2
    assert len({it.answer_id for it in items}) == 7
    assert ("Rayleigh scattering.", "ref one", ()) in got and ("Rayleigh scattering.", "ref two", ("a doc",)) in got
    # an empty reference is a reference ("" is not None): its own id, not the id of no reference
    assert pairs[4].answer_id_a != content_id(pairs[4].question, pairs[4].answer_a)


def test_the_service_gives_a_row_the_batch_jobs_id():
    limits = ServiceLimits()
    p = _pair("p1", "Rayleigh scattering.", "Because.", reference="ref one", docs_a=["a doc"])
    item = answer_item({"question": p.question, "answer": p.answer_a, "reference": "ref one", "docs": ["a doc"]},
                       limits)
    (batch,) = [it for it in explode([p]) if it.answer == p.answer_a]
    assert item == batch and cache_key(item) == batch.answer_id
    other = answer_item({"question": p.question, "answer": p.answer_a, "reference": "ref two", "docs": ["a doc"]},
                        limits)
    assert cache_key(other) != cache_key(item)


class ReferenceLength(LengthScorer):
    """conciseness := the length of the reference the answer came with (a score that reads the reference)."""

    def score_batch(self, items):
        self.scored += len(items)
        return [{"conciseness": Score.ok(len(it.reference or "") / 100)} for it in items]


def test_a_score_job_scores_each_reference_of_a_repeated_answer_with_its_own(tmp_path):
    rows = [{"id": f"r{i}", "question_text": "Why is the sky blue?", "answer_1": "Rayleigh scattering.",
             "answer_2": f"Because {i}.", "human_judgment": "answer_1", "reference": ref}
            for i, ref in enumerate(["short", "a much longer reference"])]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    scorer = ReferenceLength()
    out = tmp_path / "out"
    _run(src, out, scorer)
    answers = pq.read_table(out / "answers.parquet").to_pylist()
    first = sorted((a["conciseness_raw"] if "conciseness_raw" in a else a["conciseness"]) for a in answers
                   if a["answer"] == "Rayleigh scattering.")
    assert len(first) == 2 and first[0] != first[1]  # one row per reference, each scored with its own
    assert scorer.scored == 4
