"""The CPU profile's formulas on hand-written inputs (the rubric/cpu_profile/ room) and the cpu preset."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from rubric.errors import ConfigError
from rubric.scoring import (
    HARPER_COUNTED_KINDS, HARPER_KIND_TO_LT_ISSUE_TYPE, PAPER_RUBRICS, RUBRICS, grammar_score, ABSTAIN_PREFIX, Score,
    is_abstention,
)
from rubric.cpu_profile._coherence import coherence_score, coherence_v2, coherence_v3, coherence_v4
from rubric.cpu_profile._text import (
    FLUENCY_HARPER_KINDS, count_fluency_lints, example_cues, fluency_score, example_cues_v2, without_repeats,
    plain_case, copied_sentences, without_question_words,
)
from rubric.cpu_profile._formulas import (
    FACTUALITY_NO_EVIDENCE, centroid, completeness_score, concreteness, relevance_score, soft_recall, support_score,
    term_coverage, REPEAT_COS, distinct_sentences, novelty, sentence_information, relevance_v2, completeness_v2,
    term_weight, ZIPF_TOP, MIN_TERM_WEIGHT,
)
from rubric.presets import CPU, PAPER, PRESETS

R2 = 1 / math.sqrt(2)


def test_centroid_is_the_unit_mean():
    assert centroid(np.array([[1.0, 0.0], [0.0, 1.0]])) == pytest.approx([R2, R2])
    assert centroid(np.array([[3.0, 4.0]])) == pytest.approx([0.6, 0.8])  # one sentence: its own direction


@pytest.mark.parametrize("bad", [np.zeros((0, 2)), np.array([1.0, 0.0]), np.array([[1.0, 0.0], [-1.0, 0.0]])])
def test_centroid_refuses_no_sentence_or_no_direction(bad):
    with pytest.raises(ConfigError):
        centroid(bad)


def test_relevance_is_the_cosine_with_the_centroid():
    q = np.array([1.0, 0.0])
    assert relevance_score(q, np.array([[1.0, 0.0], [1.0, 0.0]])) == pytest.approx(1.0)
    assert relevance_score(q, np.array([[1.0, 0.0], [0.0, 1.0]])) == pytest.approx(R2)  # half on topic
    assert relevance_score(q, np.array([[0.0, 1.0]])) == pytest.approx(0.0)
    assert relevance_score(np.array([2.0, 0.0]), np.array([[-5.0, 0.0]])) == pytest.approx(-1.0)  # norms divided out


def test_coherence_links_the_question_then_each_sentence_to_the_next():
    q = np.array([1.0, 0.0, 0.0])
    s = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    mean, least = coherence_score(q, s)  # links: q-s1 = 1, s1-s2 = 0, s2-s3 = 1
    assert (mean, least) == pytest.approx((2 / 3, 0.0))
    one = coherence_score(q, np.array([[R2, R2, 0.0]]))  # one sentence: its one link is to the question
    assert one == pytest.approx((R2, R2))


def test_soft_recall_floors_each_best_match_at_zero():
    targets = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    candidates = np.array([[1.0, 0.0]])
    # best matches: 1, 0, -1 -> floored to 1, 0, 0
    assert soft_recall(targets, candidates) == pytest.approx(1 / 3)
    assert soft_recall(candidates, targets) == pytest.approx(1.0)  # the other direction: precision


def test_support_abstains_without_evidence():
    s = np.array([[1.0, 0.0]])
    assert support_score(s, None) == FACTUALITY_NO_EVIDENCE == 0.5
    assert support_score(s, np.zeros((0, 2))) == FACTUALITY_NO_EVIDENCE
    assert support_score(s, np.array([[0.0, 1.0], [1.0, 0.0]])) == pytest.approx(1.0)
    assert support_score(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0, 0.0]])) == pytest.approx(0.5)


@pytest.mark.parametrize("q,a,want", [
    ({"wifi", "bluetooth"}, {"wifi", "is", "fast"}, 0.5),
    ({"wifi"}, {"wifi"}, 1.0),
    ({"wifi"}, set(), 0.0),
    (set(), {"anything"}, None),  # nothing to cover: no coverage figure
])
def test_term_coverage(q, a, want):
    assert term_coverage(q, a) == want


@pytest.mark.parametrize("cov,rec,want", [(0.5, None, 0.5), (None, 0.8, 0.8), (0.5, 0.8, 0.65), (None, None, 1.0)])
def test_completeness_averages_the_coverages_there_are(cov, rec, want):
    assert completeness_score(cov, rec) == pytest.approx(want)


@pytest.mark.parametrize("n_concrete,n_words,want", [(0, 0, 0.0), (0, 10, 0.0), (3, 12, 0.25), (5, 5, 1.0)])
def test_concreteness(n_concrete, n_words, want):
    assert concreteness(n_concrete, n_words) == want


@pytest.mark.parametrize("n_concrete,n_words", [(-1, 3), (4, 3), (0, -1)])
def test_concreteness_refuses_impossible_counts(n_concrete, n_words):
    with pytest.raises(ConfigError):
        concreteness(n_concrete, n_words)


@pytest.mark.parametrize("text,cues", [
    ("For example, a cat.", ["for example"]),
    ("Fruits such as apples; e.g. pears, for instance plums.", ["such as", "e.g.", "for instance"]),
    ("E.G. this. Imagine a box. Suppose it rains. Let's say ten. Say you have two.",
     ["e.g.", "imagine", "suppose", "let's say", "say you"]),
    ("An example of this is rain. Examples include snow.", ["example", "examples"]),
    ("To illustrate: a dog.", ["to illustrate"]),
    ("It feels like rain; consider using an umbrella.", []),  # "like", "consider": mostly not examples
    ("The counterexample fails; exemplary work; imagined.", []),  # inside other words
    ("", []),
])
def test_example_cues(text, cues):
    assert example_cues(text) == cues


def test_fluency_counts_only_its_kinds_which_grammar_does_not():
    assert FLUENCY_HARPER_KINDS <= set(HARPER_KIND_TO_LT_ISSUE_TYPE)  # every kind is one Harper emits
    assert not FLUENCY_HARPER_KINDS & HARPER_COUNTED_KINDS
    assert {"Spelling", "Formatting", "Style"}.isdisjoint(FLUENCY_HARPER_KINDS)
    assert count_fluency_lints(["Typo", "Spelling", "Agreement", "Repetition", "Formatting", "Readability"]) == 3
    text = "word " * 100
    assert fluency_score(0, text) == 5.0
    assert fluency_score(5, text) == grammar_score(5, text) == 1.0
    assert fluency_score(1, text) == pytest.approx(4.2)


def test_cpu_preset_names_the_papers_nine_rubrics_with_registered_versions():
    assert PRESETS["cpu"] is CPU
    assert set(CPU.rubric_versions) == set(PAPER_RUBRICS)
    for name, version in CPU.rubric_versions.items():
        assert RUBRICS.get(version).name == name
        assert RUBRICS.get(version).backend not in ("llm", "factuality", "subjectiveqa")  # no LLM, no GPU model
    assert CPU.style and not CPU.judges


def test_cpu_versions_stand_beside_the_papers():
    """The paper preset still names the paper's versions; every CPU version is a separate registration."""
    assert dict(PAPER.rubric_versions) == {
        "specificity": "specificity.subjectiveqa.v1", "grammar": "grammar.languagetool.v1",
        "fluency": "fluency.geval.v1", "completeness": "completeness.geval.v1", "coherence": "coherence.geval.v1",
        "relevance": "relevance.geval.v1", "conciseness": "conciseness.lexical_density.v1",
        "use_of_examples": "use_of_examples.yesno.v2", "factuality": "factuality.veriscore.v2"}
    new = {v for v in CPU.rubric_versions.values()} - {"grammar.harper.v1", "conciseness.lexical_density.v1"}
    assert len(new) == 7 and not new & set(PAPER.rubric_versions.values())
    for v in new:
        spec = RUBRICS.get(v)
        assert spec.description and not spec.extra_signal


# --- the second versions (issue 44) -----------------------------------------------------------------


def _unit_rows(*angles_deg: float) -> np.ndarray:
    a = np.radians(angles_deg)
    return np.stack([np.cos(a), np.sin(a)], axis=1)


def test_distinct_sentences_drop_what_repeats_an_earlier_one():
    # 0 and 10 degrees apart: cosine 0.985 >= REPEAT_COS, a repeat; 60 degrees: 0.5, a new sentence
    assert distinct_sentences(_unit_rows(0, 60, 10, 61)) == [0, 1]
    assert distinct_sentences(_unit_rows(0, 90)) == [0, 1]
    assert math.cos(math.radians(10)) >= REPEAT_COS > math.cos(math.radians(60))


@pytest.mark.parametrize("sentence, question, want", [
    ({"heat", "pump", "house"}, {"heat", "pump", "house", "winter"}, 0.0),  # an echo adds nothing
    ({"refrigerant", "absorb", "heat"}, {"heat", "pump"}, 2 / 3),
    (set(), {"heat"}, 0.0),
])
def test_novelty_is_the_share_of_terms_the_question_lacks(sentence, question, want):
    assert novelty(sentence, question) == pytest.approx(want)


def test_novelty_weighs_each_term_by_its_information():
    w = {"people": term_weight(6.25), "wonder": term_weight(4.93), "sigmet": term_weight(0.0)}
    assert w["sigmet"] == ZIPF_TOP and w["people"] == pytest.approx(1.75)
    assert term_weight(9.0) == MIN_TERM_WEIGHT
    # "sigmet is something people wonder about": the question's rare word outweighs two common new ones
    got = novelty({"sigmet", "people", "wonder"}, {"sigmet", "definition"}, w)
    assert got == pytest.approx((1.75 + 3.07) / (8.0 + 1.75 + 3.07))
    assert got < novelty({"sigmet", "people", "wonder"}, {"sigmet", "definition"})


def test_information_is_cosine_times_novelty_and_refuses_bad_novelties():
    q = np.array([1.0, 0.0])
    info = sentence_information(q, _unit_rows(0, 60, 180), [0.0, 1.0, 1.0])
    assert info == pytest.approx([0.0, 0.5, 0.0])  # an echo, a related new sentence, an opposite one (floored)
    with pytest.raises(ConfigError):
        sentence_information(q, _unit_rows(0, 60), [0.5])
    with pytest.raises(ConfigError):
        sentence_information(q, _unit_rows(0), [1.5])


def test_relevance_v2_is_the_mean_and_completeness_v2_grows_with_each_informative_sentence():
    assert relevance_v2(np.array([0.2, 0.4])) == pytest.approx(0.3)
    assert completeness_v2(np.array([0.5, 0.5])) == pytest.approx(0.75)
    assert completeness_v2(np.array([0.5])) < completeness_v2(np.array([0.5, 0.1]))  # cutting loses
    assert completeness_v2(np.array([0.5, 0.0])) == completeness_v2(np.array([0.5]))  # nothing said, nothing added
    assert completeness_v2(np.array([])) == 0.0
    with pytest.raises(ConfigError):
        relevance_v2(np.array([]))


def test_coherence_v2_links_sentences_only_and_a_repeat_breaks_its_link():
    assert coherence_v2(_unit_rows(0)) is None  # one sentence: no link, the rubric abstains
    mean, least, repeats = coherence_v2(_unit_rows(0, 60, 120))
    assert (mean, least, repeats) == (pytest.approx(0.5), pytest.approx(0.5), 0)
    mean_r, least_r, repeats_r = coherence_v2(_unit_rows(0, 60, 60, 120))  # the second sentence said twice
    assert repeats_r == 1 and least_r == 0.0 and mean_r < mean
    mean_e, _, repeats_e = coherence_v2(_unit_rows(0, 2, 4, 6))  # one thing restated four ways
    assert repeats_e == 3 and mean_e == 0.0


def test_an_abstention_is_a_missing_value_that_says_it_is_no_failure():
    s = Score.abstain("no reference answer")
    assert s.raw is None and s.abstained and s.error == ABSTAIN_PREFIX + "no reference answer"
    assert not Score.failed("engine died").abstained
    assert not is_abstention(None) and not is_abstention("abstain")


EXAMPLE_SAMPLE = Path(__file__).parent / "data" / "example_cues.jsonl"


def _precision_recall(read) -> tuple[float, float]:
    rows = [json.loads(line) for line in EXAMPLE_SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    said = [bool(read(r["text"])) for r in rows]
    tp = sum(s and r["example"] for s, r in zip(said, rows))
    return tp / max(1, sum(said)), tp / sum(r["example"] for r in rows)


def test_example_cues_v2_on_the_hand_labelled_sample():
    """50 sentences written and labelled by hand (does the sentence introduce an example?); the figures are
    docs/validity.md's. The sample was written with the cues in mind: in-sample, a floor, not an estimate."""
    p1, r1 = _precision_recall(example_cues)
    p2, r2 = _precision_recall(example_cues_v2)
    assert (round(p1, 3), round(r1, 3)) == (0.553, 0.84)
    assert (round(p2, 3), round(r2, 3)) == (0.957, 0.88)


@pytest.mark.parametrize("text", ["I can't imagine life without it.", "I suppose so.", "There is no example of it.",
                                  "This is not an example of good design.", "Some say you should wait."])
def test_example_cues_v2_is_not_fooled_by_what_fooled_v1(text):
    assert example_cues(text) and not example_cues_v2(text)


def test_novelty_of_a_sentence_with_only_new_terms_is_exactly_one():
    # the weighted sums of the same terms taken in two orders can differ in the last bit
    w = {f"t{i}": 0.1 * (i + 1) + 1e-9 * i for i in range(40)}
    assert novelty(set(w), {"q"}, w) == 1.0
    assert 0.0 <= novelty(set(w), {"t3"}, w) <= 1.0


def test_a_repeat_the_splitter_cut_differently_is_still_a_repeat():
    # "3. Heat the pan." glued to the sentence before it, then said again alone: far apart as embeddings, but its
    # words are a run of the earlier sentence's
    texts = ["Season it. 3. Heat the pan over medium heat.", "3. Heat the pan over medium heat.", "Serve it hot."]
    emb = _unit_rows(0, 60, 120)
    assert distinct_sentences(emb, texts) == [0, 2] and distinct_sentences(emb) == [0, 1, 2]
    assert coherence_v2(emb, texts)[2] == 1
    with pytest.raises(ConfigError):
        distinct_sentences(emb, texts[:2])


# --- the third versions: a repeat is read once, however it is cut ------------------------------------------------

RECIPE = ("Ingredients:\n- 1 pork tenderloin\n- 1/4 teaspoon cayenne pepper (optional)\n\nInstructions:\n"
          "1. Preheat oven to 400F.\n2. Rub the mixture all over the pork.\n3. Bake for 20 minutes.")


@pytest.mark.parametrize("said_again", [
    # a list item glued to its own line (no break between): the splitter makes one sentence of the two
    ("- 1/4 teaspoon cayenne pepper (optional)\n", "- 1/4 teaspoon cayenne pepper (optional) "
                                                  "- 1/4 teaspoon cayenne pepper (optional)\n"),
    # a step said again after itself, its number and heading included
    ("2. Rub the mixture all over the pork.\n", "2. Rub the mixture all over the pork. "
                                                "2. Rub the mixture all over the pork.\n"),
    # on a line of its own
    ("3. Bake for 20 minutes.", "3. Bake for 20 minutes.\n3. Bake for 20 minutes."),
    # a one-word line right after itself
    ("Instructions:\n", "Instructions: Instructions:\n"),
])
def test_without_repeats_gives_back_the_text_a_copy_was_added_to(said_again):
    once, twice = said_again
    text = RECIPE.replace(once, twice)
    assert text != RECIPE
    clean, cuts = without_repeats(text)
    assert clean == RECIPE and len(cuts) == 1
    last_word = re.findall(r"\w+", once)[-1]
    assert clean[:cuts[0]].endswith(last_word) and cuts[0] <= RECIPE.index(once) + len(once)  # after the first saying
    assert without_repeats(RECIPE) == (RECIPE, [])


@pytest.mark.parametrize("text", [
    "Place the sweet potatoes on the grill grates. Then turn the sweet potatoes on the grill grates often.",
    "Step 1: Mix. Step 2: Bake. Step 3: Serve.",  # list numbers and headings repeat one word at a time
    "1. Mix it. 2. Bake it.\nSecond recipe:\n3. Mix it well.",
    "No, no, no.",  # inside a sentence, a word said again is phrasing
    "The U.S entered WW1 for several reasons. The U.S entered for two main reasons.",  # "U.S" is no sentence end
])
def test_without_repeats_leaves_phrasing_alone(text):
    assert without_repeats(text) == (text, [])
    assert without_repeats(text, glued=True) == (text, [])


@pytest.mark.parametrize("text,once", [
    # a hyphen is no break: to the third versions the copy starts inside a sentence, where it needs five words
    ("Ingredients:\n- Clear school glue - Clear school glue\n- Water", "Ingredients:\n- Clear school glue\n- Water"),
    ("We talk. Skip to main content Skip to main content", "We talk. Skip to main content"),
])
def test_without_repeats_glued_cuts_a_short_copy_said_right_after_itself(text, once):
    assert without_repeats(text) == (text, [])  # the third versions' definition stays
    clean, cuts = without_repeats(text, glued=True)
    assert clean == once and len(cuts) == 1
    assert without_repeats("New York New York is a song.", glued=True) == ("New York New York is a song.", [])


def test_without_repeats_cuts_a_long_run_said_again_inside_a_sentence():
    text = "Mix the flour and the sugar well. Then mix the flour and the sugar well."
    assert without_repeats(text) == ("Mix the flour and the sugar well. Then.", [len("Mix the flour and the sugar well. Then")])


def test_copied_sentences_are_those_a_copy_was_cut_from():
    text = ("Mix the flour and the sugar. - 1/4 cup sugar (fine) - 1/4 cup sugar (fine)\nBake it. "
            "Many ask how to mix the flour and the sugar.")
    clean, cuts = without_repeats(text)
    assert clean == "Mix the flour and the sugar. - 1/4 cup sugar (fine)\nBake it. Many ask how to." and len(cuts) == 2
    sentences = ["Mix the flour and the sugar.", "- 1/4 cup sugar (fine)", "Bake it.", "Many ask how to."]
    assert copied_sentences(clean, sentences, cuts) == [False, True, False, True]
    with pytest.raises(ConfigError, match="not in the text"):
        copied_sentences(clean, ["Bake it.", "Mix the flour and the sugar."], cuts)


def test_plain_case_lowers_a_headings_capitals_only():
    assert plain_case("How To Eat Sardines") == "how to eat sardines"
    assert plain_case("How Do I Cook Rice In A Pot?") == "how do I cook rice in a pot?"
    assert plain_case("how does a heat pump work in Norway?") == "how does a heat pump work in Norway?"
    assert plain_case("Why Me") == "Why Me"  # two words: not enough to call it a heading


def test_coherence_v3_breaks_the_link_into_a_copy_or_a_restated_question():
    rows = _unit_rows(0, 60, 120)
    assert coherence_v3(rows) == coherence_v2(rows)  # nothing copied, no question: v2's links
    assert coherence_v3(_unit_rows(0)) is None  # one sentence, nothing cut: no link, it abstains
    assert coherence_v3(_unit_rows(0), copies=1) == (0.0, 0.0, 1)  # one sentence said twice: a link of 0
    mean, least, repeats = coherence_v3(rows, copied=[False, False, True], copies=1)
    assert (mean, least, repeats) == (pytest.approx(0.5 / 3), 0.0, 2)
    q = _unit_rows(120)[0]  # the third sentence says the question again
    assert coherence_v3(rows, question=(q, "what is it?")) == (pytest.approx(0.25), 0.0, 1)
    # the first sentence restating the question has no link into it: nothing changes
    assert coherence_v3(rows, question=(_unit_rows(0)[0], "what is it?")) == coherence_v3(rows)
    # by its words: a sentence whose words are a run of the question's
    texts = ["A pump moves heat.", "It runs on power.", "how does a heat pump work"]
    got = coherence_v3(rows, texts, question=(_unit_rows(300)[0], "How does a heat pump work in winter?"))
    assert got[1] == 0.0 and got[2] == 1
    with pytest.raises(ConfigError):
        coherence_v3(rows, copied=[True])
    with pytest.raises(ConfigError):
        coherence_v3(rows, copies=-1)


def test_coherence_v4_counts_a_link_as_far_as_the_later_sentence_informs():
    rows = _unit_rows(0, 60, 120)  # two links of cosine 0.5
    assert coherence_v4(rows, [1.0, 1.0, 1.0]) == coherence_v3(rows)  # every sentence fully informative: v3's links
    assert coherence_v4(rows, [0.0, 1.0, 1.0]) == coherence_v3(rows)  # the first sentence has no link into it
    assert coherence_v4(rows, [0.3, 0.0, 0.5]) == (pytest.approx(0.125), 0.0, 0)  # steps 0.5 * 0 and 0.5 * 0.5
    # closely linked sentences that say nothing about the question (a topical non-answer) build nothing
    assert coherence_v4(_unit_rows(0, 40, 80, 120), [0.0] * 4)[0] == 0.0 < coherence_v3(_unit_rows(0, 40, 80, 120))[0]
    assert coherence_v4(_unit_rows(0), [1.0]) is None
    assert coherence_v4(_unit_rows(0), [1.0], copies=1) == (0.0, 0.0, 1)
    q = _unit_rows(120)[0]  # the third sentence says the question again: its link is 0 whatever it informs
    assert coherence_v4(rows, [1.0, 1.0, 1.0], question=(q, "what is it?")) == (pytest.approx(0.25), 0.0, 1)
    for bad in ([1.0, 1.0], [1.0, 1.2, 1.0], [1.0, -0.1, 1.0]):
        with pytest.raises(ConfigError):
            coherence_v4(rows, bad)


def test_without_question_words_keeps_what_a_sentence_says_besides_the_question():
    words = [("Heat ", "heat", "heat"), ("pumps ", "pump", "pumps"), ("are ", "be", "are"), ("a ", "a", "a"),
             ("topic", "topic", "topic"), (".", ".", ".")]
    assert without_question_words(words, {"heat", "pump"}) == "are a topic."
    assert without_question_words(words, {"heat", "pumps"}) == "are a topic."  # the form as written counts too
    assert without_question_words(words[:2] + words[-1:], {"heat", "pump"}) == ""  # only the question's words
    assert without_question_words(words, set()) == "Heat pumps are a topic."


@pytest.mark.parametrize("piece, marker", [("1.", True), ("-", True), ("**", True), ("2)", True), ("\u2022 ", True),
                                           ("a", True), ("Go.", False), ("1. Mix", False), ("ww1", False)])
def test_list_marker(piece, marker):
    """A piece with no word of two letters is a list marker or markup (both sentence splitters join it to the
    next piece); one with a word is a sentence."""
    from rubric.cpu_profile._text import list_marker

    assert list_marker(piece) is marker


#: A sentence said again right after itself whose last words ("back pain") also end the text before it.
OUT_OF_PHASE = ("Use it for back pain:\n\n1. Locate the points: There are points that ease back pain. "
                "1. Locate the points: There are points that ease back pain. Some points for back pain are here.")


def test_without_repeats_aligned_cuts_a_copy_in_phase_with_its_sentence():
    """The fourth versions' rule cuts as many words as the copy added but out of phase: "back pain. 1. Locate the
    points" (a run inside a sentence that crosses its end) and the rest, taking "back pain" from the sentence that
    stays; aligned, a run that starts inside a sentence ends with it, and the copy is the whole sentence."""
    once = OUT_OF_PHASE.replace("back pain. 1. Locate the points: There are points that ease back pain. ", "back pain. ", 1)
    assert without_repeats(OUT_OF_PHASE, glued=True)[0] == OUT_OF_PHASE.replace(
        " back pain. 1. Locate the points: There are points that ease back pain.", ".", 1)  # the fourth's, kept
    clean, cuts = without_repeats(OUT_OF_PHASE, glued=True, aligned=True)
    assert clean == once and cuts == [once.index(". Some")]  # right after the word the copy followed
    # a list item glued after itself copies from a break on: in phase, cut whole as by the fourth versions' rule
    glued = "Pack these:\n3. First aid kit with bandages 3. First aid kit with bandages\n4. A knife"
    assert without_repeats(glued, glued=True, aligned=True) == without_repeats(glued, glued=True)
    assert without_repeats(glued, glued=True, aligned=True)[0] == "Pack these:\n3. First aid kit with bandages\n4. A knife"
    # a copy that starts inside a sentence is still cut up to that sentence's end
    text = "We saw that the cat sat on the mat. Later the cat sat on the mat. It slept."
    assert without_repeats(text, glued=True, aligned=True)[0] == "We saw that the cat sat on the mat. Later. It slept."
