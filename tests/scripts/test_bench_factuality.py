"""The factuality benchmark's comparisons (pure: no engine): which claims and verdicts two versions
share, and why a sentence's claims differ between v2's reading and v3's."""

from scripts.bench_factuality import claim_changes, classify_changes


def test_claim_changes_counts_claims_by_key_and_verdicts_by_evidence():
    base = [{"claims": [["Paris is in France.", 0, "supported", 0.9, "[1] a"],
                        ["Rome is in Italy.", 1, "unsupported", 0.2, "[1] b"],
                        ["Oslo is cold.", 2, "unsupported", 0.1, "[1] c"]]}]
    other = [{"claims": [["paris is in france", 0, "supported", 0.8, "[1] a"],  # same claim by key
                         ["Rome is in Italy.", 1, "supported", 0.6, "[1] b [2] c"],  # other evidence
                         ["Bern is in Switzerland.", 2, "unsupported", 0.1, "[1] d"]]}]
    c = claim_changes(base, other)
    assert (c["only_base"], c["only_other"], c["answers_differ"], c["shared"]) == (1, 1, 1, 2)
    assert c["verdicts_changed"] == 1 and abs(c["max_dp"] - 0.4) < 1e-9
    assert (c["shared_same_evidence"], c["verdicts_changed_same_evidence"]) == (1, 0)
    assert abs(c["max_dp_same_evidence"] - 0.1) < 1e-9


def test_classify_changes_names_why_claims_differ():
    # v2's completion: a one-line list (read as one claim by v2, as items by v3), the same claim twice
    # in a row (the loop), then a line after the loop and a line cut by the budget
    v2_text = ("1. The oven is hot. 2. The pan is oiled.\n3. The oven is hot.\n4. The oven is hot.\n"
               "5. The fish is fresh.\n6. The salt is coa")
    v3_text = "1. The oven is hot. 2. The pan is oiled.\n3. The oven is hot.\n4. The oven is hot.\n"  # stopped by the rule
    other_v2 = "1. Water boils at 100 C."
    other_v3 = "1. Water boils at 90 C."  # the engine wrote other text
    # SmolLM2 numbers its claims again inside the list: the same claim under another number
    numbered = "1. 1.1.1.1: The job is remote.\n2. 1.1.1.2: The job pays well.\n3. 1.1.1.3: The job pays well.\n"
    counts = classify_changes([("p", v2_text, True), ("q", other_v2, False),
                               ("r", numbered + "4. 1.1.1.4: The job pays well.\n", False)],
                              [("p", v3_text, False), ("q", other_v3, False), ("r", numbered, False)])
    # "The oven is hot." is in both (v2 reads it on line 3); "The pan is oiled." is an item of v3 only
    assert counts == {"split": 1, "item": 1, "cut": 1, "renumbered": 2, "loop": 1, "text": 1, "v3_text": 1}
