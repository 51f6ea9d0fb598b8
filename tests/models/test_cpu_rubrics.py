"""The CPU profile's scorers on real spaCy, MiniLM and Harper (one module-scoped build, a handful of answers).

Slow-marked, so ``make test-fast`` leaves it out (tests/conftest.py marks slow tests ``real_model``).
"""

from __future__ import annotations

import pytest

from rubric.config import ScoringConfig
from rubric.io import AnswerItem
from rubric.scoring import CPU, FACTUALITY_NO_EVIDENCE, RUBRICS, check_batch

pytestmark = pytest.mark.slow

Q = "what is the difference between wifi and bluetooth"
REF = ("WiFi connects devices to a network and the internet over tens of metres. "
       "Bluetooth links two nearby devices directly and uses little power.")
ITEMS = [
    AnswerItem("good", Q, "WiFi connects computers to a network over about 30 metres. Bluetooth pairs two "
                          "devices, such as a phone and headphones, over a few metres. It uses less power.",
               reference=REF),
    AnswerItem("off", Q, "My grandmother baked bread every Sunday. The kitchen smelled wonderful.", reference=REF),
    AnswerItem("punct", Q, "?!", reference=REF),
    AnswerItem("noref", "how long do you roast pork tenderloin",
               "Roast the tenderloin at 220 C for 20 minutes. Then let it rest for 5 minutes."),
    AnswerItem("docs", "how long do you roast pork tenderloin", "Roast it for 20 minutes at 220 C.",
               docs=("Pork tenderloin roasts in about 20 minutes in a hot oven at 220 C.",)),
]


@pytest.fixture(scope="module")
def cpu_scorers():
    pytest.importorskip("spacy")
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("harper")
    from models.backends import build_scorers, check_backends

    specs = [RUBRICS.get(v) for v in CPU.rubric_versions.values()]
    config = ScoringConfig()
    check_backends(specs, config)
    return build_scorers(specs, config)


@pytest.fixture(scope="module")
def scores(cpu_scorers):
    out = {it.answer_id: {} for it in ITEMS}
    for scorer in cpu_scorers:
        results = scorer.score_batch(ITEMS)
        check_batch(scorer, ITEMS, results)  # one result per item, every rubric the scorer serves
        for it, r in zip(ITEMS, results):
            out[it.answer_id].update(r)
    return out


def test_all_nine_rubrics_in_their_declared_ranges(scores):
    assert set(scores["good"]) == set(CPU.rubric_versions)
    for aid in ("good", "off", "noref", "docs"):
        for name, score in scores[aid].items():
            spec = RUBRICS.get(CPU.rubric_versions[name])
            assert score.error is None, (aid, name, score.error)
            assert spec.raw_min <= score.raw <= spec.raw_max, (aid, name, score.raw)


def test_an_answer_with_nothing_to_read_is_a_row_error_of_the_new_versions(scores):
    new = {n for n, v in CPU.rubric_versions.items() if v not in ("grammar.harper.v1", "conciseness.lexical_density.v1")}
    for name in new:
        assert "no letter or digit" in scores["punct"][name].error


def test_the_on_topic_answer_beats_the_off_topic_one(scores):
    good, off = scores["good"], scores["off"]
    for name in ("relevance", "coherence", "completeness", "factuality", "specificity", "use_of_examples"):
        assert good[name].raw > off[name].raw, name
    assert good["use_of_examples"].extras["cues"] == "such as"
    # the question's terms: difference, wifi, bluetooth; the answer never says "difference"
    assert good["completeness"].extras["question_coverage"] == pytest.approx(2 / 3)
    assert off["completeness"].extras["question_coverage"] == 0.0


def test_evidence_decides_whether_factuality_abstains(scores):
    assert scores["noref"]["factuality"].raw == FACTUALITY_NO_EVIDENCE
    assert scores["noref"]["factuality"].extras["n_evidence"] == 0
    assert scores["noref"]["completeness"].extras["reference_recall"] is None
    assert scores["docs"]["factuality"].extras["n_evidence"] == 1
    assert scores["docs"]["factuality"].raw > 0.6  # the document says the same thing
    assert scores["good"]["factuality"].extras["n_evidence"] == 2  # the reference's two sentences


def test_scores_do_not_depend_on_the_batch(cpu_scorers, scores):
    for scorer in cpu_scorers:
        for it in ITEMS[::2]:
            (alone,) = scorer.score_batch([it])
            for name, s in alone.items():
                want = scores[it.answer_id][name]
                assert s.error == want.error
                if s.raw is not None:
                    assert s.raw == pytest.approx(want.raw, abs=1e-5), (it.answer_id, name)


def test_provenance_names_the_models(cpu_scorers):
    prov = {s.name: sc.provenance(s.name) for sc in cpu_scorers for s in sc.specs}
    assert {n: p.rubric_version for n, p in prov.items()} == dict(CPU.rubric_versions)
    assert "all-MiniLM-L6-v2" in prov["relevance"].model_id and "3.8.0" in prov["relevance"].model_revision
    assert prov["specificity"].model_revision == "3.8.0"
    assert prov["use_of_examples"].template_hash and prov["fluency"].template_hash
