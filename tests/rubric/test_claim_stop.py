"""The claim-extraction stop rule and v3's recipe, as pure functions (no model)."""

import pytest

from rubric.errors import ConfigError
from rubric.scoring import (
    FACTUALITY_V2,
    FACTUALITY_V3,
    LOOP_RULE,
    STOP_RULES,
    claim_units,
    claims_until_loop,
    extraction_prompts,
    factuality_recipe,
    factuality_template_hash,
    loop_position,
    loops,
    sentence_evidence,
    unit_key,
    verification_prompt,
)

# Completions of the shapes SmolLM2-135M writes on WebGLM answers (docs/factuality.md).
REPEAT_LINES = "1. The meat is made of pork.\n2. The meat is made of pork.\n3. The meat is made of pork.\n4. The m"
REPEAT_INLINE = ("1. To cook pork, follow these steps: 2. Preheat your oven to 425°F (220°C). "
                 "3. Season the pork with herbs. 4. Preheat your oven to 425°F (220°C). 5. Season")
COUNTING = "1. Eat foods rich in vitamin C.\n2. 3. 4. 5. 6. 7. 8. 9. 10. 11. 12."
STUTTER = "1. The oven is hot.\n2. 1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1"
ECHO = "1. The oven is hot.\n2. *Aver 50% of jobs are remote* *Aver 50% of jobs are remote* *Aver 50% of jobs are remote* *Aver"
MARKED = "1. <SOS>Preheat the grill.\n2. <EOS> 3. <SOS> 4. <SOS> 5. <SOS> 6. <SOS> 7."
DISTINCT = "1. Paris is the capital of France.\n2. Paris has about two million inhabitants."


def test_units_are_lines_and_inline_list_items_each_known_complete_once_its_separator_is_written():
    units = claim_units("1. A b. 2. C d.\n3. E f")
    assert [u for u, _ in units] == ["1. A b.", "2. C d.", "3. E f"]
    text = "1. A b. 2. C d.\n3. E f"
    # "1. A b." is known complete once "2. " is written; "2. C d." at its newline; the last is open
    assert [d for _, d in units] == [text.index("C"), text.index("3"), None]
    # a number inside a sentence is not a list item
    assert [u for u, _ in claim_units("It costs 5. Then it rests. Version 2.5 is out.")] == [
        "It costs 5. Then it rests. Version 2.5 is out."]


@pytest.mark.parametrize("unit,key", [
    ("1. The meat is made of pork.", "the meat is made of pork"),
    ("2. 3. The meat is Made of pork!", "the meat is made of pork"),
    ("* <SOS>The meat is made of pork.<EOS>", "the meat is made of pork"),
    ("1.1.1.3: The meat", "the meat"),
    ("2.", ""),
    ("1.5 million people live there.", "1 5 million people live there"),
])
def test_unit_key_ignores_list_markers_and_sentence_markers(unit, key):
    assert unit_key(unit) == key


@pytest.mark.parametrize("text,claims", [
    (REPEAT_LINES, ["The meat is made of pork."]),
    (REPEAT_INLINE, ["Preheat your oven to 425°F (220°C).", "Season the pork with herbs."]),
    (COUNTING, ["Eat foods rich in vitamin C."]),
    (STUTTER, ["The oven is hot."]),
    (ECHO, ["The oven is hot."]),
    (MARKED, ["Preheat the grill."]),
])
def test_a_looping_completion_stops_at_the_loop_and_keeps_the_claims_before_it(text, claims):
    at = loop_position(text)
    assert at is not None and loops(text)
    assert not loops(text[:at - 1])  # the rule fires at that point, not earlier
    # the claims depend only on the text up to the loop: stopped there, later, or cut by the budget
    for end in range(at, len(text) + 1):
        for cut in (False, True):
            assert claims_until_loop(text[:end], cut=cut) == claims


@pytest.mark.parametrize("text", [REPEAT_LINES, REPEAT_INLINE, COUNTING, STUTTER, ECHO, MARKED, DISTINCT])
@pytest.mark.parametrize("step", [1, 3, 70])
def test_the_engines_incremental_check_agrees_with_the_rule_on_every_prefix(text, step):
    watch = STOP_RULES[LOOP_RULE]()  # one per sequence, fed the growing text (tokens of 1-70 characters)
    for end in list(range(1, len(text), step)) + [len(text)]:
        assert watch(text[:end]) == loops(text[:end]), text[:end]


def test_distinct_claims_do_not_stop_and_a_budget_cut_last_line_is_not_read():
    assert not loops(DISTINCT) and loop_position(DISTINCT) is None
    assert claims_until_loop(DISTINCT, cut=False) == ["Paris is the capital of France.",
                                                      "Paris has about two million inhabitants."]
    assert claims_until_loop(DISTINCT, cut=True) == ["Paris is the capital of France."]
    # an open unit that is a prefix of an earlier one is no repeat yet
    assert not loops("1. The meat is made of pork, which is raised.\n2. The meat is made of pork")
    # the sentinel and chatter are read as before; a new "Question:" section ends the reading
    assert claims_until_loop("No verifiable claim.", cut=False) == []
    assert claims_until_loop("1. Rome is in Italy.\nQuestion: what else?\n2. Oslo is in Norway.", cut=False) == [
        "Rome is in Italy."]


def test_a_periodic_run_needs_48_characters_and_three_copies():
    assert not loops("x" * 47) and loops("x" * 48)
    assert not loops("ab" * 23) and loops("ab" * 24)
    block = "The sky is blue and the grass is green; "  # 40 characters
    assert not loops(block * 2 + block[:-1]) and loops(block * 3)
    long_block = "".join(chr(c) for c in range(ord("!"), ord("!") + 81))  # 81 characters, no shorter period
    assert not loops(long_block * 3)  # blocks longer than 80 characters are not looked for


def test_sentence_evidence_merges_the_claims_passages_by_rank():
    ev = [["a1", "a2", "a3"], ["b1", "a1", "b3"], ["c1"], []]
    merged = sentence_evidence(ev, [0, 0, 1, 2], k=3)
    assert merged[0] == merged[1] == ["a1", "b1", "a2"]  # each claim's best first, a passage once
    assert merged[0] is merged[1]                        # one list for the sentence
    assert merged[2] == ["c1"] and merged[3] == []
    with pytest.raises(ConfigError, match="'k'"):
        sentence_evidence(ev, [0, 0, 1, 2], k=0)
    with pytest.raises(ConfigError, match="evidence lists"):
        sentence_evidence(ev, [0], k=3)


def test_v3_recipe_templates_and_provenance():
    r2, r3 = factuality_recipe(FACTUALITY_V2), factuality_recipe(FACTUALITY_V3)
    assert (r2.stop_rule, r2.sentence_evidence, r2.extract_version, r2.verify_version) == (
        None, False, "factuality.extract.v1", "factuality.verify.v1")
    assert (r3.stop_rule, r3.sentence_evidence, r3.extract_version, r3.verify_version) == (
        LOOP_RULE, True, "factuality.extract.v2", "factuality.verify.v2")
    assert r2.no_claims_zero and r3.no_claims_zero
    with pytest.raises(ConfigError, match="unknown factuality version"):
        factuality_recipe("factuality.veriscore.v9")
    # the same extraction prompt text; v2's rule makes it another template
    assert extraction_prompts("Q?", ["A b."], version="factuality.extract.v2") == extraction_prompts("Q?", ["A b."])
    hashes = {factuality_template_hash(t, 256, v) for t in (False, True) for v in (FACTUALITY_V2, FACTUALITY_V3)}
    assert len(hashes) == 4
    assert factuality_template_hash(version=FACTUALITY_V2) == factuality_template_hash()


@pytest.mark.parametrize("ternary", [False, True])
def test_v2_verification_prompt_puts_what_a_sentences_claims_share_first(ternary):
    passages = ["The bridge was built in 1873.", "It carries trams."]
    a = verification_prompt("The bridge was built in 1873.", passages, ternary=ternary, version="factuality.verify.v2")
    b = verification_prompt("The bridge carries trams.", passages, ternary=ternary, version="factuality.verify.v2")
    shared = len(a.user) - len(a.user.split("Claim:\n", 1)[1])
    assert a.user[:shared] == b.user[:shared] and "[2] It carries trams." in a.user[:shared]
    assert a.user.index("Evidence:") < a.user.index("Claim:")
    old = verification_prompt("The bridge was built in 1873.", passages, ternary=ternary)
    assert old.user.index("Claim:") < old.user.index("Evidence:")
    assert a.prefill == old.prefill == "Answer:"
