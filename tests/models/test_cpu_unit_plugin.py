"""A new CPU rubric version is one declaration: this module alone declares a version outside the package (a
``rubric.cpu_profile.CPUVersion``: its formula, what it reads of the shared pass, its range and description) and
registers it with ``register_cpu_version``, which registers its spec and its unit together; ``lfqa-rubric score`` then
scores it beside a built-in version, through the backend checks, the runner and the store, its column and provenance
in answers.parquet. Nothing else knows it: the scorer does not branch on version names, and the backend's start-up
check asks the declarations what they need when it runs."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from rubric.cpu_profile import (
    CPU_VERSIONS, CPURow, CPUVersion, Reading, READINGS, register_cpu_version, unregister_cpu_version, versions_needing,
)
from rubric.scoring import RUBRICS, Score
from tests.workers.test_judge_job import _records, _write
from workers.cli import main

pytestmark = pytest.mark.real_model  # spaCy's pipeline, for real

VERSION = "specificity.numbered_sentences.v1"


def numbered_sentences(r: CPURow, reading: str) -> Score:
    """The share of the answer's sentences that hold a digit (a toy specificity: it reads the shared parse)."""
    sents = r.answer.sentences
    return Score.ok(sum(any(c.isdigit() for c in s) for s in sents) / len(sents), n_sentences=len(sents))


@pytest.fixture
def numbered():
    pytest.importorskip("spacy")
    spec = register_cpu_version(CPUVersion(VERSION, numbered_sentences, frozenset({"parse"}), (0.0, 1.0),
                                           model="spacy", description="share of sentences with a digit"))
    yield spec
    unregister_cpu_version(VERSION)
    assert VERSION not in RUBRICS and VERSION not in CPU_VERSIONS


def test_the_declaration_registers_its_spec_and_its_unit_together(numbered):
    assert RUBRICS.get(VERSION) == numbered and CPU_VERSIONS.get(VERSION).spec == numbered
    assert (numbered.name, numbered.backend, numbered.raw_min, numbered.raw_max) == (
        "specificity", "cpu_text", 0.0, 1.0)
    with pytest.raises(ValueError, match="already registered"):  # a name is declared once
        register_cpu_version(CPUVersion(VERSION, numbered_sentences, frozenset({"parse"}), (0.0, 1.0), description=""))
    with pytest.raises(ValueError, match="unknown reading"):
        CPUVersion("specificity.other.v1", numbered_sentences, frozenset({"parse"}), (0.0, 1.0), description="",
                   reading="no_such_reading")


def test_a_cpu_version_declared_here_runs_through_score(numbered, tmp_path):
    assert VERSION in versions_needing("parse")  # the start-up check will ask for spaCy
    records = _records()[:3]
    src = _write(tmp_path / "pairs.jsonl", records)
    out = tmp_path / "out"
    assert main(["score", str(src), "--format", "lfqa-hp", "--rubrics", f"{VERSION},use_of_examples.cues.v2",
                 "--out", str(out), "--quiet"]) == 0
    answers = pq.read_table(out / "answers.parquet").to_pylist()
    texts = {r["answer_1"] for r in records} | {r["answer_2"] for r in records}
    assert {a["answer"] for a in answers} == texts
    for a in answers:  # every answer scored by the unit declared here, beside the built-in version
        assert a["specificity_version"] == VERSION and a["specificity_error"] is None
        assert a["specificity_backend"] == "cpu_text" and a["specificity_n_sentences"] >= 1
        assert (a["specificity_raw"] > 0) == any(c.isdigit() for c in a["answer"])
        assert a["use_of_examples_version"] == "use_of_examples.cues.v2" and a["use_of_examples_error"] is None
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["rubrics"]["specificity"]["rubric_version"] == VERSION
    assert manifest["rubrics"]["specificity"]["backend"] == "cpu_text"
    from models.rubric_backends.text import pipeline_id  # the declared model: spaCy's pipeline, as the pass loads it
    from models.rubric_backends.cpu_rubrics import profile_pipeline
    from rubric.config import ScoringConfig

    name, version = pipeline_id(profile_pipeline(ScoringConfig().spacy_model))
    assert (manifest["rubrics"]["specificity"]["model_id"], manifest["rubrics"]["specificity"]["model_revision"]) == (
        name, version)


READING_VERSION = "coherence.clean_lines.v1"


def test_a_reading_declared_here_is_cut_parsed_and_embedded(monkeypatch):
    """A new reading of the answer is one line of ``rubric.cpu_profile.READINGS``: a version that reads it is handed
    the answer
    without its copies under the reading's copy rule, its sentences cut at line breaks, their embeddings and the
    sentences without the question's words, with nothing in the scorer told of it."""
    pytest.importorskip("sentence_transformers")
    from models.rubric_backends import CPUProfileScorer
    from rubric.io import AnswerItem

    seen: dict[str, object] = {}

    def lines_read(r: CPURow, reading: str) -> Score:
        parsed, X = r.read(reading)
        seen.update(sentences=parsed.sentences, shape=X.shape, cut=r.cut(reading), masked=len(r.M[reading]))
        return Score.ok(float(len(parsed.sentences)))

    monkeypatch.setitem(READINGS, "clean_lines", Reading("clean", "terms", lines=True))
    spec = register_cpu_version(CPUVersion(READING_VERSION, lines_read, frozenset({"parse", "embed", "wordfreq"}),
                                           (0.0, 10.0), reading="clean_lines", description="sentences of a reading"))
    try:
        assert READING_VERSION in versions_needing("clean_lines")
        answer = "Steps to make dough:\n1. Mix the flour and salt\n2. Add warm water\n2. Add warm water"
        got = CPUProfileScorer((spec,)).score_batch([AnswerItem("a1", "How do I make dough?", answer)])[0]
    finally:
        unregister_cpu_version(READING_VERSION)
    assert got["coherence"].raw == 3.0  # three lines; the line said again is cut by the "clean" rule
    assert [s.strip() for s in seen["sentences"]] == ["Steps to make dough:", "1. Mix the flour and salt",
                                                      "2. Add warm water"]
    assert seen["shape"] == (3, 384) and seen["masked"] == 3
    text, copies = seen["cut"]
    assert text.count("Add warm water") == 1 and len(copies) == 1
