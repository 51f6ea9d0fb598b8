"""A new CPU rubric version is one unit and one registry line: this module alone declares a version (its spec, its
:class:`CPUUnit`: what it reads of the shared pass and its formula) and ``lfqa-rubric score`` scores it beside a
built-in version, through the backend checks, the runner and the store. Nothing else knows it: the scorer does not
branch on version names, and the backend's start-up check asks the units what they need when it runs."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from models.rubric_backends.cpu_rubrics import CPU_UNITS, CPURow, CPUUnit, versions_needing
from rubric.scoring import RUBRICS, RubricSpec, Score
from tests.workers.test_judge_job import _records, _write
from workers.cli import main

pytestmark = pytest.mark.real_model  # spaCy's pipeline, for real

VERSION = "specificity.numbered_sentences.v1"


def numbered_sentences(r: CPURow) -> Score:
    """The share of the answer's sentences that hold a digit (a toy specificity: it reads the shared parse)."""
    sents = r.answer.sentences
    return Score.ok(sum(any(c.isdigit() for c in s) for s in sents) / len(sents), n_sentences=len(sents))


@pytest.fixture
def numbered(monkeypatch):
    pytest.importorskip("spacy")
    spec = RubricSpec("specificity", VERSION, "cpu_text", 0.0, 1.0, description="share of sentences with a digit")
    RUBRICS.register(VERSION, spec)  # the registry line
    monkeypatch.setitem(CPU_UNITS, VERSION, CPUUnit(VERSION, frozenset({"parse"}), "spacy", numbered_sentences))
    yield spec
    RUBRICS.remove(VERSION)


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


READING_VERSION = "coherence.clean_lines.v1"


def test_a_reading_declared_here_is_cut_parsed_and_embedded(monkeypatch):
    """A new reading of the answer is one line of ``cpu_parse.READINGS``: a unit that needs it is handed the answer
    without its copies under the reading's copy rule, its sentences cut at line breaks, their embeddings and the
    sentences without the question's words, with nothing in the scorer told of it."""
    pytest.importorskip("sentence_transformers")
    from models.rubric_backends.cpu_parse import READINGS, Reading
    from models.rubric_backends.cpu_rubrics import CPUProfileScorer
    from rubric.io import AnswerItem

    seen: dict[str, object] = {}

    def lines_read(r: CPURow) -> Score:
        parsed, X = r.read("clean_lines")
        seen.update(sentences=parsed.sentences, shape=X.shape, cut=r.cut("clean_lines"), masked=len(r.M["clean_lines"]))
        return Score.ok(float(len(parsed.sentences)))

    monkeypatch.setitem(READINGS, "clean_lines", Reading("clean", "terms", lines=True))
    spec = RubricSpec("coherence", READING_VERSION, "cpu_text", 0.0, 10.0, description="sentences of a reading")
    RUBRICS.register(READING_VERSION, spec)
    try:
        monkeypatch.setitem(CPU_UNITS, READING_VERSION, CPUUnit(
            READING_VERSION, frozenset({"parse", "embed", "wordfreq", "clean_lines"}), "minilm", lines_read))
        answer = "Steps to make dough:\n1. Mix the flour and salt\n2. Add warm water\n2. Add warm water"
        got = CPUProfileScorer((spec,)).score_batch([AnswerItem("a1", "How do I make dough?", answer)])[0]
    finally:
        RUBRICS.remove(READING_VERSION)
    assert got["coherence"].raw == 3.0  # three lines; the line said again is cut by the "clean" rule
    assert [s.strip() for s in seen["sentences"]] == ["Steps to make dough:", "1. Mix the flour and salt",
                                                      "2. Add warm water"]
    assert seen["shape"] == (3, 384) and seen["masked"] == 3
    text, copies = seen["cut"]
    assert text.count("Add warm water") == 1 and len(copies) == 1
