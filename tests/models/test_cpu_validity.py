"""Relevance, coherence and completeness against the probes issue 44 found them failing, on the shared data: the
question echoed, a sentence repeated and a topical non-answer (rubric.validity's families). The versions issue 44
designed on them keep every copy below the answer it was made from (never, on the WebGLM and TREC-DL samples; on
RAG-QA Arena's, but a few); the preset's versions, chosen by people (issue 56), keep the echo and the repeat.
Real spaCy and MiniLM; the shared data is CI's (the test skips without it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rubric.io import AnswerItem, content_id, explode, read_graded
from rubric.scoring import RUBRICS
from rubric.presets import CPU
from rubric.validity import DEFAULT_TOLERANCE, minimal_pairs, pair_items

pytestmark = pytest.mark.slow

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
RUBRICS_CHECKED = ("relevance", "coherence", "completeness")
#: (file, questions taken, answers per question): every WebGLM answer of 25 questions, the first eight
#: passages graded 2-3 of 12 TREC-DL questions, the first five answers of each RAG-QA Arena domain (LFRQA's answers
#: written by people from the documents; one per question).
SETS = {"webglm": ("WEBGLM_50.json", 25, 3), "trec": ("TREC-DL-NF.json", 12, 8),
        "arena": ("rag-qa-arena/annotations_*_with_citation.jsonl", 5, 1)}


#: The versions checked: those issue 44 designed on these probes (the preset's until issue 56), and the preset's now,
#: chosen by people (issue 56), which read topicality and keep fewer of these guards (FLOORS).
VERSION_SETS = {"sixth": ("relevance.minilm.v6", "coherence.minilm.v7", "completeness.coverage.v6"),
                "preset": tuple(CPU.rubric_versions[r] for r in RUBRICS_CHECKED)}


@pytest.fixture(scope="module", params=list(VERSION_SETS))
def scorer(request):
    pytest.importorskip("sentence_transformers")
    from models.rubric_backends.cpu_rubrics import CPUProfileScorer

    return request.param, CPUProfileScorer(tuple(RUBRICS.get(v) for v in VERSION_SETS[request.param]))


def _items(name: str):
    """The set's answers: every WebGLM answer of its first questions; the TREC-DL passages graded 2 or 3 (those
    that answer the question: a passage graded 0 is often spam or navigation text, which a topical non-answer may
    rightly match); the first answers of each RAG-QA Arena domain file, in file-name order."""
    file, n_questions, per_question = SETS[name]
    if name == "arena":
        files = sorted(SHARED.glob(file))
        if not files:
            pytest.skip(f"{SHARED / file} is CI's shared data; not here")
        recs = [json.loads(line) for f in files for line in f.read_text(encoding="utf-8").splitlines()[:n_questions]]
        return [AnswerItem(content_id(r["question"], r["answer"]), r["question"], r["answer"]) for r in recs]
    path = SHARED / file
    if not path.is_file():
        pytest.skip(f"{path} is CI's shared data; not here")
    if name == "trec":
        data = json.loads(path.read_text(encoding="utf-8"))
        return [AnswerItem(content_id(q, p["passage"]), q, p["passage"]) for q in list(data)[:n_questions]
                for p in [p for p in data[q] if p["label"] >= 2][:per_question]]
    items = explode(read_graded(path).pairs)
    by_question: dict[str, list] = {}
    for it in items:
        by_question.setdefault(it.question, []).append(it)
    return [it for q in list(by_question)[:n_questions] for it in by_question[q][:per_question]]


#: The share of copies that do not outrank their answer, per set, family and rubric, at least (measured with seed 0;
#: docs/validity.md has the full tables): none does, on any of the three rubrics. Echo and repetition never did under
#: the third versions (the copies of earlier text are cut before anything is read, a restated question says nothing
#: besides the question's words). The topical non-answers that still did (2 of 75 on coherence, 1 in 20 of TREC's
#: relevance, 1 in 30 of its completeness) were of two kinds, each fixed where it was wrong: a family that took a verb
#: or half a name for the topic ("make" for "How To Make Your Own Tortillas", "vs bluetooth"), and the third
#: versions' reading of "ww1", a question word spaCy reads neither as alphabetic nor as a number, as new information.
FLOORS = {"sixth": {name: {family: {rubric: 1.0 for rubric in RUBRICS_CHECKED}
                            for family in ("echo", "repeat", "non_answer")} for name in SETS}}
#: RAG-QA Arena's answers are often one short sentence ("Mobs won't spawn closer than 24 blocks."), which the three or
#: four sentences of an echo or a non-answer, each saying a little that a MiniLM cosine reads as about the question,
#: can outrank on completeness (1 - prod(1 - information) grows with each sentence) and coherence: measured on this
#: sample with the sixth versions, 1 echo of 30 on completeness, 2 non-answers of 30 on completeness and 1 of 26 on
#: coherence (docs/validity.md has the whole sample of 1,200). The floors hold that, not "never".
FLOORS["sixth"]["arena"]["echo"]["completeness"] = 0.96
FLOORS["sixth"]["arena"]["non_answer"].update(completeness=0.93, coherence=0.96)
#: The preset's versions (issue 56) read the answer's topical fit, which is what people's relevance ratings track: a
#: topical non-answer, generic sentences on the question's topic, outranks the answer on them often (docs/validity.md
#: counts it; no floor here). What they keep: the question restated says nothing (a sentence that restates it is
#: read as saying nothing) and a sentence said twice adds nothing: relevance and completeness read the answer without
#: its copies; coherence.minilm.v2 reads it as given, and a repeat glued to a list item is a new sentence to it. The
#: floors are the shares measured with seed 0 on these samples at the commit that chose the versions (not "never": a
#: restatement the rules rephrase, "This is about ...", can sit below relevance's 0.8 to its question).
FLOORS["preset"] = PRESET_FLOORS = {
    "webglm": {"echo": {"relevance": 0.98, "coherence": 1.0, "completeness": 0.97},
               "repeat": {"relevance": 1.0, "coherence": 0.90, "completeness": 1.0}},
    "trec": {"echo": {"relevance": 0.96, "coherence": 1.0, "completeness": 0.96},
             "repeat": {"relevance": 1.0, "coherence": 1.0, "completeness": 1.0}},
    "arena": {"echo": {"relevance": 0.86, "coherence": 0.95, "completeness": 1.0},
              "repeat": {"relevance": 1.0, "coherence": 0.95, "completeness": 1.0}},
}


@pytest.mark.parametrize("name", list(SETS))
def test_echo_repetition_and_a_non_answer_do_not_outrank_the_answer(scorer, name):
    versions, scorer = scorer
    pairs = minimal_pairs(_items(name), ("echo", "repeat", "non_answer"), seed=0)
    items = pair_items(pairs)
    scores = dict(zip((it.answer_id for it in items), scorer.score_batch(items)))
    kept: dict[tuple[str, str], list[bool]] = {}
    for p in pairs:
        for rubric in RUBRICS_CHECKED:
            orig, pert = scores[p.original_id][rubric], scores[p.perturbed_id][rubric]
            if orig.raw is None or pert.raw is None:  # an abstention (a one-sentence answer's coherence)
                assert orig.abstained or pert.abstained, (orig.error, pert.error)
                continue
            kept.setdefault((p.family, rubric), []).append(pert.raw <= orig.raw + DEFAULT_TOLERANCE)
    rates = {k: sum(v) / len(v) for k, v in kept.items()}
    print(versions, name, {f"{f}/{r}": round(x, 3) for (f, r), x in sorted(rates.items())})
    for family, floors in FLOORS[versions][name].items():
        for rubric, floor in floors.items():
            assert len(kept[family, rubric]) >= 10, (family, rubric)
            assert rates[family, rubric] >= floor, (family, rubric, rates[family, rubric], rates)
