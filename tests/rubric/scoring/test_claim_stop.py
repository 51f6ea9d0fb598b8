"""The claim-extraction stop rule and v3's recipe, as pure functions (no model)."""

import pytest

from rubric.errors import ConfigError
from rubric.scoring import (
    FACTUALITY_V2,
    FACTUALITY_V3,
    LOOP_RULE,
    STOP_RULES,
    claim_key,
    claim_units,
    claims_until_loop,
    dedupe_claims,
    extraction_prompts,
    factuality_recipe,
    factuality_template_hash,
    loop_position,
    loops,
    parse_claims,
    sentence_evidence,
    unit_key,
    verification_prompt,
)

# Completions of the shapes SmolLM2-135M writes on WebGLM answers (docs/factuality.md).
REPEAT_LINES = "1. The meat is made of pork.\n2. The meat is made of pork.\n3. The meat is made of pork.\n4. The m"
REPEAT_INLINE = ("1. To cook pork, follow these steps: 2. Preheat your oven to 425°F (220°C). "
                 "3. Season the pork with herbs. 4. Preheat your oven to 425°F (220°C). "
                 "5. Season the pork with herbs. 6. Pre")
COUNTING = "1. Eat foods rich in vitamin C.\n2. 3. 4. 5. 6. 7. 8. 9. 10. 11. 12."
STUTTER = "1. The oven is hot.\n2. 1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1"
ECHO = "1. The oven is hot.\n2. *Aver 50% of jobs are remote* *Aver 50% of jobs are remote* *Aver 50% of jobs are remote* *Aver"
MARKED = "1. <SOS>Preheat the grill.\n2. <EOS> 3. <SOS> 4. <SOS> 5. <SOS> 6. <SOS> 7."
DISTINCT = "1. Paris is the capital of France.\n2. Paris has about two million inhabitants."
# The issue-47 examples: a repeat further back, two rule lines, a claim followed by 50 dots.
FAR_REPEAT = ("1. The oven is hot.\n2. The pork is seasoned.\n3. The oven is hot.\n"
              "4. The pork rests for five minutes.")
RULED = "1. The oven is hot.\n---\n---\n2. The pork is seasoned.\n...\n3. The pork rests for five minutes."
DOTTED = "1. The oven is hot" + "." * 50 + "\n2. The pork is seasoned.\n" + "." * 60 + "\n3. The pork rests."


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
    ("Claim 5: **The meat**", "the meat"),
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


@pytest.mark.parametrize("text", [REPEAT_LINES, REPEAT_INLINE, COUNTING, STUTTER, ECHO, MARKED, DISTINCT,
                                  FAR_REPEAT, RULED, DOTTED])
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


# --- v3 keeps v2's claims where nothing loops (issue 47) -----------------------------------------

def _v2(text):
    """v2's claims after the answer's dedupe: ``parse_claims`` on the whole text, first occurrences."""
    claims = parse_claims(text)
    return [claims[i] for i in dedupe_claims(claims)]


@pytest.mark.parametrize("text,v3", [
    # a duplicate further back is skipped, not an end: v2 reads four lines, one of them twice
    (FAR_REPEAT, ["The oven is hot.", "The pork is seasoned.", "The pork rests for five minutes."]),
    # rule lines and ellipses are ignored
    (RULED, ["The oven is hot.", "The pork is seasoned.", "The pork rests for five minutes."]),
    # a claim with 50 dots is a claim; a line of dots is nothing
    (DOTTED, ["The oven is hot" + "." * 50, "The pork is seasoned.", "The pork rests."]),
])
def test_the_issues_examples_give_v3_the_claims_v2_keeps(text, v3):
    assert not loops(text) and loop_position(text) is None
    assert claims_until_loop(text, cut=False) == v3 == _v2(text)
    # the engine's check does not fire on any prefix either
    watch = STOP_RULES[LOOP_RULE]()
    assert not any(watch(text[:end]) for end in range(1, len(text) + 1))


def test_the_far_repeat_written_on_one_line_is_read_as_its_items_without_the_repeat():
    inline = " ".join(FAR_REPEAT.split("\n"))
    assert claims_until_loop(inline, cut=False) == _v2(FAR_REPEAT)
    assert len(parse_claims(inline)) == 1  # v2 reads the one-line list as one claim


@pytest.mark.parametrize("units,loop_at,read", [
    # the same unit twice in a row: a loop at the second
    (["A", "A", "C"], 1, ["A"]),
    # a repeat further back is skipped; the same unit a third time is a loop
    (["A", "B", "A", "C", "A", "D"], 4, ["A", "B", "C"]),
    # a second, distinct repeat is a loop: a cycle of two loops at its second turn
    (["A", "B", "A", "B", "A"], 3, ["A", "B"]),
    (["A", "B", "C", "A", "D", "B", "E"], 5, ["A", "B", "C", "D"]),
    # a skipped repeat is the previous unit of the next one: "A B A A" loops at the last A
    (["A", "B", "A", "A"], 3, ["A", "B"]),
    # blank units are not units: "A --- A" is the same claim twice in a row
    (["A", "---", "A"], 2, ["A"]),
    (["A", "", "...", "B", "***", "C"], None, ["A", "B", "C"]),
    # three bare counts in a row, rule lines aside, are counting: a loop; two are a stutter, ignored
    (["A", "2.", "-----", "3.", "4.", "B"], 4, ["A"]),
    (["1. 3.", "A", "2. 4.", "B", "5.", "A", "C"], None, ["A", "B", "C"]),
    (["A", "2.", "A"], 2, ["A"]),
])
def test_a_loop_is_an_immediate_repeat_or_a_second_repeat(units, loop_at, read):
    names = {"A": "The oven is hot.", "B": "The pork is seasoned.", "C": "The pork rests.", "D": "Slice the pork.",
             "E": "Serve it warm."}
    lines = [names.get(u, u) for u in units]
    text = "\n".join(lines) + "\n"
    want = [names[u] for u in read]
    if loop_at is None:
        assert not loops(text)
    else:
        at = loop_position(text)
        # the rule fires once the looping unit is complete (its newline written), not earlier
        assert at == len("\n".join(lines[:loop_at + 1])) + 1
        assert not loops(text[:at - 1])
    for cut in (False, True):
        assert claims_until_loop(text, cut=cut) == want


_WORDS = ("oven pork salt pepper garlic heat minutes rest slice pan butter onion stock water bridge river city "
          "tram iron steel built carries north south old new large small red blue green fresh dry warm cold "
          "serves holds keeps lies stands runs opens closes").split()
_MARKS = ("{n}. ", "{n}) ", "- ", "* ", "• ", "", "Claim {n}: ", "**")


def _loop_free_list(rng):
    """A list of distinct claims, one per line, as a model might format it: numbered or bulleted, with
    blank lines, rule lines and lines of dots between items, some claims ending in a run of dots, and
    sometimes one claim repeated further back. Returns (text, claims in order without the repeat)."""
    claims: list[str] = []
    keys = set()
    while len(claims) < rng.randint(1, 9):
        words = rng.sample(_WORDS, rng.randint(2, 9))
        claim = " ".join(words).capitalize() + rng.choice((".", ".", "", "!", "." * rng.randint(3, 60)))
        if claim_key(claim) not in keys:
            keys.add(claim_key(claim))
            claims.append(claim)
    order = list(range(len(claims)))
    if len(claims) >= 3 and rng.random() < 0.5:  # one repeat, never of the claim just before
        at = rng.randint(2, len(claims))
        order.insert(at, rng.randrange(at - 1))
    mark = rng.choice(_MARKS)
    lines = []
    for n, i in enumerate(order, 1):
        claim = claims[i]
        lines.append(f"**{claim}**" if mark == "**" else mark.format(n=n) + claim)
        if rng.random() < 0.3:
            lines.append(rng.choice(("", "---", "...", "." * rng.randint(4, 70), "***", "- - -", "~~~")))
    return "\n".join(lines) + rng.choice(("", "\n")), claims


def test_v3_equals_v2_on_generated_loop_free_lists():
    import random

    rng = random.Random(47)
    n_repeats = 0
    for _ in range(600):
        text, claims = _loop_free_list(rng)
        n_repeats += len(parse_claims(text)) > len(claims)
        assert not loops(text), text
        assert claims_until_loop(text, cut=False) == _v2(text) == claims, text
        if len(parse_claims(text)) == len(claims):  # no repeat: exactly v2's list, before any dedupe
            assert claims_until_loop(text, cut=False) == parse_claims(text)
        # the engine never stops such a list, and reading the budget-cut text keeps every finished line
        watch = STOP_RULES[LOOP_RULE]()
        assert not any(watch(text[:end]) for end in range(1, len(text) + 1, 7))
        if text.endswith("\n"):
            assert claims_until_loop(text, cut=True) == claims
    assert n_repeats > 100  # the lists with a repeat further back were generated and checked too


def test_a_repeated_header_is_skipped_without_counting_as_a_repeat():
    # SmolLM2 on a WebGLM sentence (tests/rubric/data/claim_completions.jsonl): headers come back before each claim
    text = ("Rome fell because of barbarian invasions.\n\nClaims in the excerpt:\nThe Western Empire fell to invaders.\n\n"
            "Claims in the marked sentence:\nThe Western Empire fell to invaders.\n\nClaims in the excerpt:\n"
            "The last emperor in the West was removed in 476 AD.\n\nClaims in the marked sentence:\n"
            "The last emperor in the West was removed in 476 AD.\n\nClaims in the excerpt:\nThe last")
    assert claims_until_loop(text, cut=True) == ["Rome fell because of barbarian invasions.",
                                                 "The Western Empire fell to invaders.",
                                                 "The last emperor in the West was removed in 476 AD."]
    # the second repeated claim is the loop, seen once its newline is written
    assert loop_position(text) == text.rindex("476 AD.\n") + len("476 AD.\n")
    # a header written twice in a row is still a loop; a bare label ("Claims:") is a bare count
    assert loops("Claims in the excerpt:\nClaims in the excerpt:\n")
    assert not loops("Claims:\nClaims:\n") and loops("Claims:\nClaims:\nClaims:\n")


def test_a_long_stutter_is_keyed_without_backtracking():
    # "1." 400 times: the list-marker pattern that took markers as one repeated group backtracked
    # exponentially on it (2**400 ways to split it), so this test would not end; it ends at once
    unit = "1." * 400 + "1x"
    assert unit_key(unit) == claim_key(unit)  # no marker followed by a space: nothing taken off
    assert claims_until_loop(unit + "\n", cut=False) == []  # the periodic run: never read
