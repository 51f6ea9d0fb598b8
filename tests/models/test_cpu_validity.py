"""The cpu preset's relevance, coherence and completeness against the probes issue 44 found them failing, on the
shared data: the question echoed, a sentence repeated and a topical non-answer (rubric.validity's families) never
outrank the answer they were made from. Real spaCy and MiniLM; the shared data is CI's (the test skips without it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rubric.io import explode, read_graded
from rubric.scoring import CPU, RUBRICS
from rubric.validity import DEFAULT_TOLERANCE, minimal_pairs, pair_items

pytestmark = pytest.mark.slow

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
RUBRICS_CHECKED = ("relevance", "coherence", "completeness")
#: (file, questions taken, answers per question): every WebGLM answer of 25 questions, the first eight
#: graded passages of 12 TREC-DL questions.
SETS = {"webglm": ("WEBGLM_50.json", 25, 3), "trec": ("TREC-DL-NF.json", 12, 8)}


@pytest.fixture(scope="module")
def scorer():
    pytest.importorskip("sentence_transformers")
    from models.cpu_rubrics import CPUProfileScorer

    return CPUProfileScorer(tuple(RUBRICS.get(CPU.rubric_versions[r]) for r in RUBRICS_CHECKED))


def _items(name: str):
    file, n_questions, per_question = SETS[name]
    path = SHARED / file
    if not path.is_file():
        pytest.skip(f"{path} is CI's shared data; not here")
    items = explode(read_graded(path).pairs)
    by_question: dict[str, list] = {}
    for it in items:
        by_question.setdefault(it.question, []).append(it)
    return [it for q in list(by_question)[:n_questions] for it in by_question[q][:per_question]]


@pytest.mark.parametrize("name", list(SETS))
def test_echo_repetition_and_a_non_answer_never_outrank_the_answer(scorer, name):
    pairs = minimal_pairs(_items(name), ("echo", "repeat", "non_answer"), seed=0)
    items = pair_items(pairs)
    scores = dict(zip((it.answer_id for it in items), scorer.score_batch(items)))
    outranked, compared = [], 0
    for p in pairs:
        for rubric in RUBRICS_CHECKED:
            orig, pert = scores[p.original_id][rubric], scores[p.perturbed_id][rubric]
            if orig.raw is None or pert.raw is None:  # an abstention (a one-sentence answer's coherence)
                assert orig.abstained or pert.abstained, (orig.error, pert.error)
                continue
            compared += 1
            if pert.raw > orig.raw + DEFAULT_TOLERANCE:
                outranked.append((p.family, rubric, round(orig.raw, 4), round(pert.raw, 4), p.original[:80]))
    assert compared > 3 * len({p.original_id for p in pairs})
    assert outranked == [], f"{len(outranked)} of {compared}: {outranked[:5]}"
