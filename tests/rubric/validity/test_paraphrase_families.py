"""The families that say it in other words, and the answer to another question on the same topic (issue 56)."""

import random

import pytest

from rubric.errors import ConfigError
from rubric.io import content_id, question_id
from rubric.validity import FAMILIES, Family, Row, minimal_pairs, paraphrase, split_sentences, topic_words


class Synonyms:
    """A synonym source from a table (``candidates(word)``, as ``models.attacks.WordNetSynonyms``)."""

    name = "table"

    def __init__(self, table):
        self.table = table

    def candidates(self, word):
        return list(self.table.get(word.lower(), []))


SYN = Synonyms({"heat": ["warmth"], "pump": ["compressor"], "house": ["home"], "winter": ["wintertime"],
                "moves": ["shifts"], "outside": ["outdoor"], "air": ["atmosphere"], "ask": ["inquire"],
                "wonder": ["marvel"], "question": ["query"], "people": ["citizenry"]})
Q = "How does a heat pump heat a house in winter?"
ANSWER = "A heat pump moves heat instead of making it. In winter it pulls heat from the outside air."


def row(question=Q, answer=ANSWER):
    return Row(question_id(question), question, answer, None, (), content_id(question, answer))


def test_paraphrase_replaces_every_word_with_a_synonym_and_keeps_the_rest():
    text, n = paraphrase("The heat pump moves heat.", SYN)
    assert text == "The warmth compressor shifts warmth." and n == 4
    assert paraphrase("Pumps heat houses.", SYN) == ("Compressors warmth homes.", 3)  # plurals through the singular
    assert paraphrase("Nothing to see here.", SYN) == ("Nothing to see here.", 0)


def test_echo_paraphrase_restates_the_question_without_its_words():
    text = FAMILIES.get("echo_paraphrase").build(row(), random.Random(0), [row()], synonyms=SYN)
    assert text and "warmth compressor" in text and "heat" not in text.lower()
    assert len(split_sentences(text).sentences) in (2, 3)
    # nothing WordNet could say otherwise: the family does not apply
    bare = Row(question_id("Why?"), "Why?", "Because.", None, (), content_id("Why?", "Because."))
    assert FAMILIES.get("echo_paraphrase").build(bare, random.Random(0), [bare], synonyms=Synonyms({})) is None


def test_restated_point_says_the_first_sentence_again_in_other_words_at_the_end():
    text = FAMILIES.get("restated_point").build(row(), random.Random(0), [row()], synonyms=SYN)
    assert text.startswith(ANSWER) and text.endswith("A warmth compressor shifts warmth instead of making it.")


def test_other_topic_answer_takes_the_answer_of_the_question_closest_in_topic():
    same_topic = row("How much does a heat pump cost to run?", "About 1,000 dollars a year.")
    off_topic = row("Why do cats purr?", "Cats purr when content.")
    rows = [row(), off_topic, same_topic]
    got = FAMILIES.get("other_topic_answer").build(row(), random.Random(0), rows)
    assert got == "About 1,000 dollars a year."
    assert FAMILIES.get("other_topic_answer").build(row(), random.Random(0), [row(), off_topic]) is None
    assert topic_words(Q) == {"heat", "pump", "house", "winter"}


def test_a_family_that_needs_synonyms_gets_them_or_is_refused():
    pairs = minimal_pairs([row()], ["echo_paraphrase", "restated_point"], 0, synonyms=SYN)
    assert {p.family for p in pairs} == {"echo_paraphrase", "restated_point"}
    again = minimal_pairs([row()], ["echo_paraphrase", "restated_point"], 0, synonyms=SYN)
    assert [p.perturbed for p in again] == [p.perturbed for p in pairs]  # seeded
    with pytest.raises(ConfigError, match=r"echo_paraphrase \(synonyms\)"):
        minimal_pairs([row()], ["echo_paraphrase"], 0)
    with pytest.raises(ConfigError, match="the tools a job gives"):
        Family("x", {"relevance": "lower"}, "d", lambda r, g, o: None, ("a thesaurus",))


def test_with_wordnet_itself_a_real_question_is_echoed_in_other_words():
    attacks = pytest.importorskip("models.attacks")
    if attacks.wordnet_dir() is None:
        pytest.skip("WordNet's files are not installed (make setup installs Debian's wordnet-base)")
    wn = attacks.WordNetSynonyms(max_senses=1)
    r = row("How can I reduce back pain when I change my posture?", "Sit straight and take breaks.")
    text = FAMILIES.get("echo_paraphrase").build(r, random.Random(0), [r], synonyms=wn)
    assert text and ("trim" in text or "cut" in text) and "reduce" not in text
