"""LINKAGE's generated reference lists: the prompt against the reference file, the parser on ugly generations,
the cache key. Pure, no model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rubric.errors import ConfigError
from rubric.protocols.linkage_references import (
    CREATE_REFERENCES_VERSION,
    create_references_prompt,
    generation_key,
    parse_generated_references,
)
from rubric.protocols.templates import get_protocol_template

REFERENCE = Path(__file__).resolve().parents[4] / "shared" / "reference-prompts"
GOLD = "Focus on one task and remove distractions."
Q = "how can we get concentration on something?"


def test_prompt_matches_the_reference_file():
    path = REFERENCE / "linkage.create_multi_step_answer.txt"
    if not path.exists():
        pytest.skip(f"{path} not present")
    ref = path.read_text(encoding="utf-8").strip().replace("#question", Q).replace("#ground", GOLD)
    p = create_references_prompt(Q, GOLD)
    assert p.user == ref and p.prefill == "" and p.system is None
    spec = get_protocol_template(CREATE_REFERENCES_VERSION)
    assert (spec.protocol, spec.layout, spec.fields) == ("linkage", "generate", ("question", "golden"))
    assert "create_multi_step_answer.txt" in spec.source
    with pytest.raises(ConfigError, match="golden answer is empty"):
        create_references_prompt(Q, "  ")


OK = [
    # (generation, the three answers)
    ("Answer1:It is hard.\nAnswer2:concentration = mole/volume.\nAnswer3:Osmosis is diffusion of water.",
     ("It is hard.", "concentration = mole/volume.", "Osmosis is diffusion of water.")),
    # the prompt's own "Output:" header, spaces in the label, braces as in the example, a stray closing brace
    ("Output:\nAnswer 1: {It is hard.}\nAnswer 2: {Try harder}\nAnswer 3: {Water moves.}}",
     ("It is hard.", "Try harder", "Water moves.")),
    ("Output: Answer1: one\nAnswer2: two\nAnswer3: three", ("one", "two", "three")),
    # markdown bold labels, a leading blank, a multi-line answer
    ("\n**Answer1:** first line\nsecond line\n\n**Answer2:** b\n**Answer3:** c\n",
     ("first line\nsecond line", "b", "c")),
    ("answer1) alpha\nANSWER2 - beta\n- Answer3. gamma", ("alpha", "beta", "gamma")),
    # the model goes on to write the prompt again: cut there
    ("Answer1: a\nAnswer2: b\nAnswer3: c\n\nNon-factoid Question:{why?}\nGolden Answer:{x}", ("a", "b", "c")),
    # quoted answers
    ('Answer1: "a"\nAnswer2: "b"\nAnswer3: "c"', ("a", "b", "c")),
]


@pytest.mark.parametrize(("text", "answers"), OK)
def test_parse_reads_three_answers_best_first(text, answers):
    got = parse_generated_references(text, GOLD, question=Q)
    assert got.error is None
    assert got.references == (GOLD, *answers) and got.extra == 0


def test_parse_keeps_the_first_three_and_counts_extra_answers():
    got = parse_generated_references("Answer1: a\nAnswer2: b\nAnswer3: c\nAnswer4: d\nAnswer5: e", GOLD, question=Q)
    assert got.references == (GOLD, "a", "b", "c") and got.extra == 2


BAD = [
    ("", "the generation is empty"),
    ("   \n", "the generation is empty"),
    ("Here are three answers: it is hard, try harder, water moves.", "no 'Answer1:' label"),
    ("Answer1: a\nAnswer2: b", "too short, 2 of 3 answers"),
    ("Answer1: only one, cut by the token limit", "too short, 1 of 3"),
    ("Answer2: b\nAnswer3: c\nAnswer1: a", r"labels \[2, 3, 1\] are not Answer1..Answer3 in order"),
    ("Answer1: a\nAnswer1: a again\nAnswer2: b", r"labels \[1, 1, 2\] are not"),
    ("Answer1: a\nAnswer3: c\nAnswer4: d", r"labels \[1, 3, 4\] are not"),
    ("Answer1: a\nAnswer2: b\nAnswer3: c\nAnswer3: c", r"repeat or skip after Answer3"),
    ("Answer1:\nAnswer2: b\nAnswer3: c", "Answer1 is empty"),
    ("Answer1: {}\nAnswer2: b\nAnswer3: c", "Answer1 is empty"),
    (f"Answer1: {GOLD}\nAnswer2: b\nAnswer3: c", "Answer1 repeats the golden answer"),
    ("Answer1: same\nAnswer2: b\nAnswer3: SAME ", "Answer3 repeats Answer1"),
    # the prompt repeated before any answer: nothing is read from the repeat
    ("Non-factoid Question:{x}\nGolden Answer:{y}\nAnswer1: a\nAnswer2: b\nAnswer3: c", "no 'Answer1:' label"),
]


@pytest.mark.parametrize(("text", "reason"), BAD)
def test_parse_errors_name_the_question_and_the_reason(text, reason):
    got = parse_generated_references(text, GOLD, question=Q)
    assert got.references == ()
    assert got.error is not None and got.error.startswith(f"question {Q!r}: generated reference list: ")
    assert re.search(reason, got.error), got.error


def test_parse_checks_its_arguments():
    with pytest.raises(ConfigError, match="n_answers"):
        parse_generated_references("Answer1: a", GOLD, question=Q, n_answers=0)
    with pytest.raises(ConfigError, match="golden"):
        parse_generated_references("Answer1: a", "", question=Q)
    got = parse_generated_references("Answer1: a\nAnswer2: b", GOLD, question=Q, n_answers=2)
    assert got.references == (GOLD, "a", "b")


def test_generation_key_changes_with_every_input():
    base = {"template": "t", "template_hash": "h", "model_id": "m", "model_revision": "r", "max_tokens": 512,
            "temperature": 0.0}
    k = generation_key("q1", GOLD, base)
    assert k == generation_key("q1", GOLD, dict(base)) and len(k) == 24
    others = {generation_key("q2", GOLD, base), generation_key("q1", GOLD + " ", base),
              *(generation_key("q1", GOLD, {**base, f: "x"}) for f in base)}
    assert k not in others and len(others) == 2 + len(base)


def test_v2_is_the_same_prompt_pre_filled_with_answer1_and_is_read_after_it():
    from rubric.protocols.linkage_references import CREATE_REFERENCES_VERSIONS, generated_text

    v1 = create_references_prompt(Q, GOLD)
    v2 = create_references_prompt(Q, GOLD, version="linkage.create_multi_step_answer.v2")
    assert v2.user == v1.user and (v1.prefill, v2.prefill) == ("", "Answer1:")
    assert CREATE_REFERENCES_VERSIONS == (CREATE_REFERENCES_VERSION, "linkage.create_multi_step_answer.v2")
    assert get_protocol_template(CREATE_REFERENCES_VERSIONS[1]).template_hash \
        != get_protocol_template(CREATE_REFERENCES_VERSION).template_hash
    cont = " It is hard.\nAnswer2: Try harder.\nAnswer3: Water moves."
    assert generated_text(cont, CREATE_REFERENCES_VERSION) == cont  # v1: the continuation as it is
    got = parse_generated_references(generated_text(cont, CREATE_REFERENCES_VERSIONS[1]), GOLD, question=Q)
    assert got.error is None and got.references == (GOLD, "It is hard.", "Try harder.", "Water moves.")
    with pytest.raises(ConfigError, match="unknown reference generation template 'linkage.x.v9'"):
        create_references_prompt(Q, GOLD, version="linkage.x.v9")
