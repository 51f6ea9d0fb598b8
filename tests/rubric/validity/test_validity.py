"""rubric.validity: each family changes what it says and little else, seeded; minimal pairs; the table's
counting and its question-clustered CIs."""

import math
import random
import re

import numpy as np
import pytest

from rubric.errors import ConfigError, UnknownNameError
from rubric.io import AnswerItem, content_id, question_id
from rubric.preference import clustered_mean
from rubric.scoring import Score
from rubric.validity import (EXPECTATIONS, FAMILIES, Family, MinimalPair, Row, family_names, join, main_noun_phrase,
                             minimal_pairs, outcomes, pair_items, resolve_families, split_sentences, summarise,
                             summary_of, table_markdown, validity_page)

Q = "How does a heat pump heat a house in winter?"
ANSWER = ("A heat pump moves heat instead of making it. In winter it pulls heat from the outside air, even at "
          "minus 10 degrees Celsius. A refrigerant is compressed, which raises its temperature. The warm refrigerant "
          "then releases its heat inside the house.")
OTHER_Q = "Why do cats purr?"
OTHER = "Cats purr when they are content. Some also purr when they are hurt, which may help them heal."
EXAMPLE = ("Vaccines train the immune system. For example, the measles vaccine shows it a weakened virus. "
           "The body then remembers it.")


def row(question=Q, answer=ANSWER, reference=None, docs=()):
    return Row(question_id(question), question, answer, reference, tuple(docs), content_id(question, answer))


ROWS = [row(), row(OTHER_Q, OTHER)]


def build(family, r=None, seed=0, others=None):
    r = r or ROWS[0]
    return FAMILIES.get(family).build(r, random.Random(f"{seed}:{family}"), ROWS if others is None else others)


def sents(text):
    return list(split_sentences(text).sentences)


# --- the registry: the names and expectations the lead's rubric versions are checked against -------------------

CONTRACT = {
    "shuffle": {"coherence": "lower", "grammar": "same", "conciseness": "same", "specificity": "same"},
    "repeat": {"coherence": "lower", "relevance": "not_higher", "completeness": "not_higher"},
    "splice": {"coherence": "lower"},
    "echo": {"relevance": "lower", "coherence": "not_higher", "completeness": "not_higher"},
    "other_answer": {"relevance": "lower"},
    "non_answer": {"relevance": "lower", "coherence": "not_higher", "completeness": "not_higher"},
    "first_sentence": {"completeness": "lower"},
    "first_half": {"completeness": "lower"},
    "filler": {"conciseness": "lower"},
    "vague": {"specificity": "lower"},
    "drop_example": {"use_of_examples": "lower"},
    "agreement": {"grammar": "lower", "fluency": "lower"},
    "typos": {"grammar": "lower", "fluency": "lower"},
    "drop_function_words": {"grammar": "lower", "fluency": "lower"},
    "changed_fact": {"factuality": "lower"},
    "echo_paraphrase": {"relevance": "lower", "coherence": "not_higher", "completeness": "not_higher"},
    "restated_point": {"completeness": "not_higher"},
    "other_topic_answer": {"relevance": "lower", "completeness": "not_higher"},
}


def test_the_families_and_their_expectations_are_the_contract():
    assert family_names() == list(CONTRACT)
    for name, expect in CONTRACT.items():
        fam = FAMILIES.get(name)
        assert dict(fam.expect) == expect and fam.description
    with pytest.raises(ConfigError, match="expectations must be one of"):
        Family("x", {"coherence": "down"}, "d", lambda r, g, o: None)
    assert EXPECTATIONS == ("lower", "not_higher", "same")


# --- sentences --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("One. Two! Three?", ["One.", "Two!", "Three?"]),
    ("It is e.g. a dog. It costs 3.5 dollars.", ["It is e.g. a dog.", "It costs 3.5 dollars."]),
    ("Steps:\n\n1. Preheat the oven.\n2. Season it.", ["Steps:", "1. Preheat the oven.", "2. Season it."]),
    ("  one sentence  ", ["one sentence"]),
])
def test_sentences_are_slots_that_join_back(text, expected):
    s = split_sentences(text)
    assert list(s.sentences) == expected
    assert join(s) == text


def test_main_noun_phrase():
    assert main_noun_phrase(Q) == "heat pump"
    assert main_noun_phrase("How To Cook Pork Tenderloin") == "pork tenderloin"
    assert main_noun_phrase("What did Napoleon do in Egypt?") == "Napoleon"
    assert main_noun_phrase("Why?") == "this topic"
    # a verb is what the question asks to do, not its topic: after "to", a listed verb at a run's edge
    assert main_noun_phrase("How To Make Your Own Tortillas") == "tortillas"
    assert main_noun_phrase("how to find the midsegment of a trapezoid") == "midsegment"
    assert main_noun_phrase("what can contour plowing reduce") == "contour plowing"
    assert main_noun_phrase("How To Light a Pilot Light") == "pilot light"  # a determiner opens a noun phrase
    assert main_noun_phrase("How To Lactate") == "lactate"  # the verb is all there is
    # a word written with digits is one word; "vs", "and", "or" join two topics; asking words are not the topic
    assert main_noun_phrase("why did the us volunteerily enter ww1") == "ww1"
    assert main_noun_phrase("what is wifi vs bluetooth") == "wifi vs bluetooth"
    assert main_noun_phrase("definition of a sigmet") == "sigmet"


# --- each family ------------------------------------------------------------------------------------------------

def test_shuffle_keeps_the_sentences_in_another_order_and_needs_two():
    out = build("shuffle")
    assert sorted(sents(out)) == sorted(sents(ANSWER)) and sents(out) != sents(ANSWER)
    assert build("shuffle", row(answer="Only one sentence here.")) is None
    assert build("shuffle", row(answer="Same. Same.")) is None
    two = build("shuffle", row(answer="First one. Second one."))
    assert sents(two) == ["Second one.", "First one."]


def test_repeat_doubles_one_sentence_in_place():
    out = sents(build("repeat"))
    assert len(out) == len(sents(ANSWER)) + 1
    i = next(k for k in range(len(out) - 1) if out[k] == out[k + 1])
    assert out[:i + 1] + out[i + 2:] == sents(ANSWER)


def test_splice_puts_a_sentence_of_another_question_in_the_middle():
    out = sents(build("splice"))
    original = sents(ANSWER)
    middle = len(original) // 2
    assert out[:middle] + out[middle + 1:] == original
    assert out[middle] in sents(OTHER)
    assert build("splice", others=[ROWS[0]]) is None  # no other question
    assert build("splice", row(answer="One sentence.")) is None


def test_echo_restates_the_question_and_answers_nothing():
    out = build("echo")
    assert out.startswith(Q)
    assert 3 <= len(sents(out)) <= 4
    answer_words = {w.lower() for w in re.findall(r"\w+", ANSWER)} - {w.lower() for w in re.findall(r"\w+", Q)}
    assert not answer_words & {w.lower() for w in re.findall(r"\w+", out)} - {"is", "the", "this", "about", "so",
                                                                                "people", "often", "ask", "many",
                                                                                "wonder", "question"}
    assert {build("echo", seed=s) for s in range(6)} != {out}  # the seed picks the rephrasings


def test_other_answer_is_another_questions_answer():
    assert build("other_answer") == OTHER
    assert build("other_answer", others=[ROWS[0]]) is None


def test_non_answer_is_about_the_topic_and_varies_with_the_seed():
    outs = {build("non_answer", seed=s) for s in range(5)}
    assert len(outs) > 1
    for out in outs:
        assert 3 <= len(sents(out)) <= 4 and "heat pump" in out.lower()
        assert not re.search(r"refrigerant|outside air|compress", out)


def test_cuts_for_completeness():
    assert build("first_sentence") == "A heat pump moves heat instead of making it."
    assert sents(build("first_half")) == sents(ANSWER)[:2]
    assert build("first_sentence", row(answer="One only.")) is None
    assert build("first_half", row(answer="One only.")) is None


def test_filler_is_appended_and_the_answer_kept():
    out = build("filler")
    assert out.startswith(ANSWER) and 2 <= len(sents(out)) - len(sents(ANSWER)) <= 3


def test_vague_replaces_numbers_and_names_only():
    out = build("vague")
    assert "10" not in out and "Celsius" not in out
    assert out.startswith("A heat pump moves heat")  # a sentence's first word is not a name
    assert len(sents(out)) == len(sents(ANSWER))
    assert build("vague", row(answer="it is warm. it stays warm.")) is None
    listed = build("vague", row(answer="Steps:\n1. Stay calm.\n2. Call Anna at noon."))
    assert listed.startswith("Steps:\n1. Stay calm.\n2. Call") and "Anna" not in listed


def test_drop_example_removes_the_example_sentence_only():
    out = build("drop_example", row("What do vaccines do?", EXAMPLE))
    assert sents(out) == ["Vaccines train the immune system.", "The body then remembers it."]
    assert build("drop_example") is None  # no example cue
    # narrow cues: "imagine" opens other things than an example
    assert build("drop_example", row(answer="I can't imagine it. It is fine.")) is None


def test_agreement_swaps_only_the_agreement_verbs():
    r = row(answer="The pump is small and the pipes are long. It has a fan.")
    out = build("agreement", r)
    before, after = r.answer.split(), out.split()
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert len(before) == len(after) and changed
    assert all({a.strip("."), b.strip(".")} in ({"is", "are"}, {"has", "have"}) for a, b in changed)
    assert build("agreement", row(answer="Cats purr.")) is None


def test_typos_change_a_few_content_words_by_characters():
    out = build("typos")
    before, after = re.findall(r"\S+", ANSWER), re.findall(r"\S+", out)
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert len(before) == len(after) and 2 <= len(changed) <= 5
    assert all(abs(len(a) - len(b)) <= 1 for a, b in changed)


def test_drop_function_words_drops_articles_and_prepositions():
    out = build("drop_function_words")
    assert "  " not in out
    kept = out.lower().split()
    dropped = list(ANSWER.lower().split())
    for w in kept:  # every kept word in order; every dropped one a function word
        i = dropped.index(w)
        assert all(x in {"a", "an", "the", "of", "to", "in", "on", "at", "for", "with", "by", "from", "into", "about"}
                   for x in dropped[:i])
        dropped = dropped[i + 1:]
    assert len(kept) < len(ANSWER.split())


def test_changed_fact_changes_a_supported_number_or_name_and_needs_evidence():
    evidence = "Air-source heat pumps keep working down to minus 10 degrees."
    r = row(reference=evidence)
    out = build("changed_fact", r)
    assert "minus 10 degrees" not in out and out.replace(re.search(r"minus (\d+)", out).group(1), "10") == ANSWER
    assert build("changed_fact") is None  # no evidence
    assert build("changed_fact", row(docs=["Nothing that the answer says."])) is None
    doc = build("changed_fact", row(docs=["It was built in Celsius Street."]))
    assert "Celsius" not in doc


# --- minimal pairs ----------------------------------------------------------------------------------------------

ITEMS = [AnswerItem(content_id(Q, ANSWER), Q, ANSWER, (), None), AnswerItem(content_id(OTHER_Q, OTHER), OTHER_Q, OTHER),
         AnswerItem(content_id("What do vaccines do?", EXAMPLE), "What do vaccines do?", EXAMPLE, ("doc",), None)]


def test_minimal_pairs_are_seeded_and_record_what_they_are():
    a, b = minimal_pairs(ITEMS, seed=3), minimal_pairs(ITEMS, seed=3)
    assert a == b and a
    assert minimal_pairs(ITEMS, seed=4) != a
    for p in a:
        assert p.perturbed != p.original and p.seed == 3
        assert p.perturbed_id == content_id(p.question, p.perturbed, p.docs, p.reference) and p.question_id == question_id(p.question)
        assert dict(p.expect) == CONTRACT[p.family] and set(p.rubrics) == set(CONTRACT[p.family])
    assert {p.family for p in a if p.original == EXAMPLE} >= {"drop_example", "shuffle"}
    assert "drop_example" not in {p.family for p in a if p.original == ANSWER}
    # a family list: the others untouched
    only = minimal_pairs(ITEMS, families="echo,shuffle", seed=3)
    assert {p.family for p in only} == {"echo", "shuffle"}
    assert only == [p for p in a if p.family in ("echo", "shuffle")]
    items = pair_items(only)
    assert len({i.answer_id for i in items}) == len(items) == 3 + len(only)
    assert next(i for i in items if i.answer == EXAMPLE).docs == ("doc",)


def test_resolve_families():
    assert resolve_families(None) == family_names()
    assert resolve_families("typos, echo") == ["echo", "typos"]
    with pytest.raises(UnknownNameError, match="unknown validity family 'nope'"):
        resolve_families("echo,nope")
    with pytest.raises(ConfigError):
        resolve_families("")


# --- the table --------------------------------------------------------------------------------------------------

def pair(family, k, q):
    return MinimalPair(family, tuple(FAMILIES.get(family).expect.items()), f"q{q}", f"question {q}", f"o{k}",
                       f"p{k}", f"o{k}", f"p{k}", 0)


def test_summarise_counts_each_expectation_and_clusters_the_ci():
    tol = 1e-4
    # filler (conciseness: lower): pass, tie, fail, missing (a failed score), pass, pass over three questions
    diffs = [-0.5, 5e-5, 0.2, None, -0.1, -0.3]
    pairs = [pair("filler", k, k % 3) for k in range(len(diffs))]
    scores = {}
    for k, d in enumerate(diffs):
        scores[f"o{k}"] = {"conciseness": Score.ok(0.5)}
        scores[f"p{k}"] = {"conciseness": Score.failed("boom") if d is None else Score.ok(0.5 + d)}
    # shuffle (grammar: same): a tie passes, a move fails; (conciseness: same) on the same pairs
    shuffle = [pair("shuffle", 10 + k, k) for k in range(4)]
    for k, d in enumerate([0.0, 2e-5, -0.3, 0.4]):
        scores[f"o{10 + k}"] = {"grammar": 4.0, "conciseness": 0.4}
        scores[f"p{10 + k}"] = {"grammar": 4.0 + d}  # conciseness of the copy: missing
    # echo (relevance: lower, coherence: not_higher)
    echo = [pair("echo", 20 + k, k) for k in range(3)]
    for k, (dr, dc) in enumerate([(-0.2, 0.0), (0.1, -0.1), (-0.3, 0.2)]):
        scores[f"o{20 + k}"] = {"relevance": 0.5, "coherence": 0.5}
        scores[f"p{20 + k}"] = {"relevance": 0.5 + dr, "coherence": 0.5 + dc}
    versions = {"conciseness": "conciseness.x.v1", "grammar": "grammar.y.v1", "relevance": "relevance.z.v1",
                "coherence": "coherence.w.v1", "length": "length.words.v1"}
    table = summarise(pairs + shuffle + echo, scores, tol, versions=versions, n_boot=200, seed=1)
    rows = {(r.rubric, r.family): r for r in table.rows}
    f = rows["conciseness", "filler"]
    assert (f.n, f.passes, f.ties, f.fails, f.missing) == (6, 3, 1, 1, 1)
    assert f.pass_rate == pytest.approx(3 / 5) and f.version == "conciseness.x.v1" and f.expectation == "lower"
    want = clustered_mean([1, 0, 0, 1, 1], groups=["q0", "q1", "q2", "q1", "q2"], n_boot=200, seed=1)
    assert f.ci == want.ci and f.n_questions == 3
    assert [o.difference for o in f.examples] == [pytest.approx(0.2), pytest.approx(5e-5)]  # the fail, then the tie
    g = rows["grammar", "shuffle"]
    assert (g.n, g.passes, g.ties, g.fails, g.missing) == (4, 2, 2, 2, 0)
    assert [round(o.difference, 3) for o in g.examples] == [0.4, -0.3]  # worst first
    c = rows["conciseness", "shuffle"]
    assert (c.n, c.missing) == (4, 4) and math.isnan(c.pass_rate) and math.isnan(c.ci[0])
    r, co = rows["relevance", "echo"], rows["coherence", "echo"]
    assert (r.passes, r.fails, r.expectation) == (2, 1, "lower")
    assert (co.passes, co.ties, co.fails, co.expectation) == (2, 1, 1, "not_higher")
    # a rubric's row per family of the run that checks it: relevance has none under shuffle
    assert ("relevance", "shuffle") not in rows and ("grammar", "echo") not in rows
    assert table.unchecked == ["length.words.v1"]
    assert [(r.rubric, r.family) for r in table.rows][:2] == [("conciseness", "shuffle"), ("conciseness", "filler")]
    md = table_markdown(table)
    assert "| conciseness.x.v1 | filler | lower | 6 | 0.600 [" in md and "No selected family checks length.words.v1" in md
    page = validity_page(table, inputs=["in.jsonl"], seed=0, families=["shuffle", "echo", "filler"], n_boot=200)
    assert "## Failing examples" in page and "grammar.y.v1 under shuffle (same (invariance)): of 4 pairs scored, 2 fail" in page


def test_a_family_without_pairs_is_a_row_with_n_zero_and_the_tolerance_decides_ties():
    table = summary_of([], versions={"factuality": "factuality.support.v1"}, families=["changed_fact"],
                       tolerance=1e-4)
    (only,) = table.rows
    assert (only.family, only.n) == ("changed_fact", 0) and math.isnan(only.pass_rate)
    p = [pair("filler", 0, 0)]
    s = {"o0": {"conciseness": 0.5}, "p0": {"conciseness": 0.5 - 5e-4}}
    assert outcomes(p, s, 1e-4, versions={"conciseness": "c"})[0].outcome == "pass"
    assert outcomes(p, s, 1e-3, versions={"conciseness": "c"})[0].outcome == "tie"


def test_the_ci_clusters_questions():
    # one question with many passing pairs and several with one failing pair each: the CI is wide
    pairs = [pair("filler", k, 0) for k in range(20)] + [pair("filler", 100 + k, 1 + k) for k in range(4)]
    scores = {p.original_id: {"conciseness": 0.5} for p in pairs}
    scores.update({p.perturbed_id: {"conciseness": 0.4 if p.question_id == "q0" else 0.6} for p in pairs})
    (r,) = summarise(pairs, scores, 1e-4, versions={"conciseness": "c"}, n_boot=500, seed=0).rows
    assert r.pass_rate == pytest.approx(20 / 24) and r.n_questions == 5
    assert r.ci[0] < 0.5 < r.ci[1]  # a pair bootstrap would give a narrow interval around 0.83
    assert np.isfinite(r.ci).all()


def test_an_inserted_sentence_keeps_the_layout():
    text = "Intro here.\n\n1. First step.\n2. Second step."
    out = build("repeat", row(answer=text), seed=2)
    assert out.count("\n") == text.count("\n")
    assert any(out == t for t in ("Intro here. Intro here.\n\n1. First step.\n2. Second step.",
                                  "Intro here.\n\n1. First step. 1. First step.\n2. Second step.",
                                  "Intro here.\n\n1. First step.\n2. Second step. 2. Second step."))
