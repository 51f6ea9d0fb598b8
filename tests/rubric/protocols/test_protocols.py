"""The neighbouring protocols' templates and verdict reading: pure, no model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rubric.errors import ConfigError, UnknownNameError
from rubric.judging.verdicts import pair_outcome, vote_probs
from rubric.protocols import (
    arena_verdict_prefill,
    get_protocol_template,
    pairwise_verdict_probs,
    parse_pairwise_verdict,
    protocol_versions,
)

SHARED = Path(__file__).resolve().parents[4] / "shared"
REFERENCE = SHARED / "reference-prompts"
ARENA_EXAMPLES = SHARED / "data" / "rag-qa-arena" / "pairwise_lfrqa_examples.json"

LINKAGE_PAIR = get_protocol_template("linkage.pairwise.v1")
ARENA = get_protocol_template("arena.pairwise.v1")
LFQA_E = get_protocol_template("lfqa_e.reference_tie.v1")

EXPECTED = {
    "linkage.listwise.v1": ("linkage", "listwise", "[[", ("1", "2", "3", "4", "5")),
    "linkage.listwise_n.v1": ("linkage", "listwise", "[[", tuple("123456789")),
    "linkage.point_no_ref.v1": ("linkage", "pointwise", "[[", tuple(str(i) for i in range(11))),
    "linkage.point_with_ref.v1": ("linkage", "pointwise", "[[", tuple(str(i) for i in range(11))),
    "linkage.create_multi_step_answer.v1": ("linkage", "generate", "", ("Answer1", "Answer2", "Answer3")),
    "linkage.create_multi_step_answer.v2": ("linkage", "generate", "Answer1:", ("Answer1", "Answer2", "Answer3")),
    "linkage.pairwise.v1": ("linkage", "pairwise", "[[", ("A", "B", "C")),
    "linkage.pairwise_reference.v1": ("linkage", "pairwise", "[[", ("A", "B", "C")),
    "arena.pairwise.v1": ("arena", "pairwise", "<thinking></thinking>\n<rating>", ("1", "2", "0")),
    "arena.pairwise_reasoning.v1": ("arena", "pairwise", "<thinking>", ("1", "2", "0")),
    "lfqa_e.reference_tie.v1": ("lfqa_e", "pairwise", "answer_", ("1", "2", "tie")),
}


def test_registry_snapshot():
    # an entry that vanishes or changes its pre-fill / tokens fails here
    assert protocol_versions() == sorted(EXPECTED)
    hashes = set()
    for v, (protocol, kind, prefill, tokens) in EXPECTED.items():
        spec = get_protocol_template(v)
        assert (spec.protocol, spec.layout, spec.prefill, spec.score_tokens) == (protocol, kind, prefill, tokens)
        assert len(spec.template_hash) == 12
        hashes.add(spec.template_hash)
    assert len(hashes) == len(EXPECTED)
    with pytest.raises(UnknownNameError, match="known: arena.pairwise.v1"):
        get_protocol_template("arena.pairwise.v9")


def test_render_rejects_missing_and_unknown_fields():
    with pytest.raises(ConfigError, match="needs fields"):
        LFQA_E.render(question="q", answer_1="a", answer_2="b")  # no reference
    with pytest.raises(ConfigError, match="unknown"):
        ARENA.render(question="q", answer_1="a", answer_2="b", reference="r")
    p = LFQA_E.render(question="Why?", reference="REF", answer_1="ONE", answer_2="TWO", prefill=False)
    assert p.prefill == "" and p.system is None
    assert p.user.index("REF") < p.user.index("ONE") < p.user.index("TWO")
    assert p.user.rstrip().endswith("### Output:")


def _reference(name: str) -> str:
    path = REFERENCE / name
    if not path.exists():
        pytest.skip(f"{path} not present")
    # how LINKAGE's code reads a prompt file
    return path.read_text(encoding="utf-8").strip()


def test_linkage_templates_match_the_reference_files():
    q, ground, cand = "how do I X?", "Answer 1:first\nAnswer 2:second\nAnswer 3:third\nAnswer 4:fourth\n", "my answer"
    ref = _reference("linkage.LINKAGE.txt").replace("#ground", ground).replace("#candidate", cand) \
        .replace("#question", q)
    got = get_protocol_template("linkage.listwise.v1").render(question=q, references=ground, candidate=cand)
    assert got.user == ref and got.prefill == "[["
    ref = _reference("linkage.with_ref_point_score.txt").replace("#ground", ground).replace("#candidate", cand) \
        .replace("#question", q)
    assert get_protocol_template("linkage.point_with_ref.v1").render(
        question=q, references=ground, candidate=cand).user == ref
    # the no-reference baseline drops the reference-list line and only that
    ref = _reference("linkage.no_ref_point_score.txt").replace("\nReference answer list:{#ground}", "") \
        .replace("#candidate", cand).replace("#question", q)
    assert get_protocol_template("linkage.point_no_ref.v1").render(question=q, candidate=cand).user == ref
    ref = _reference("linkage.pairwise_comparison.txt").replace("#answer_a", "AAA").replace("#answer_b", "BBB") \
        .replace("#question", q)
    assert LINKAGE_PAIR.render(question=q, answer_1="AAA", answer_2="BBB").user == ref


def test_listwise_n_differs_from_v1_only_in_the_list_length():
    v1 = get_protocol_template("linkage.listwise.v1").render(question="q", references="R", candidate="c").user
    n4 = get_protocol_template("linkage.listwise_n.v1").render(question="q", references="R", candidate="c",
                                                              n_references=4).user
    assert n4 == v1.replace("all four references", "all 4 references")
    n2 = get_protocol_template("linkage.listwise_n.v1").render(question="q", references="R", candidate="c",
                                                              n_references=2).user
    assert "inferior to all 2 references, output [[3]]" in n2


def test_arena_template_has_the_papers_instruction_and_examples():
    p = ARENA.render(question="QUERY?", answer_1="FIRST", answer_2="SECOND")
    assert p.system.startswith("We will show you a query and a pair of answers to the query.")
    assert "Here is how you judge (in the order of importance)," in p.system
    assert p.system.rstrip().endswith("</rubric>")
    # the pair to rate comes last, in Table 14's tags
    tail = p.user[p.user.index("Now compare:"):]
    assert "<query>\nQUERY?\n</query>" in tail and "<answer 1>\nFIRST\n</answer 1>" in tail
    assert "<answer 2>\nSECOND\n</answer 2>" in tail
    assert p.user.count("Review the rubric in <rubric> tags,") == 4  # three examples + the pair
    assert p.prefill == arena_verdict_prefill("")
    if not ARENA_EXAMPLES.exists():
        pytest.skip(f"{ARENA_EXAMPLES} not present")
    examples = json.loads(ARENA_EXAMPLES.read_text(encoding="utf-8"))
    assert len(examples) == 3
    for e in examples:
        for key in ("query", "response_1", "response_2"):
            assert e[key] in p.user
        assert f"<thinking>{e['thinking']}</thinking>\n<rating>{e['label']}</rating>" in p.user


@pytest.mark.parametrize("reasoning, expected", [
    ("", "<thinking></thinking>\n<rating>"),
    ("Answer 1 cites more.", "<thinking>Answer 1 cites more.</thinking>\n<rating>"),
    ("<thinking> both fine </thinking>\n<rating>1</rating>", "<thinking>both fine</thinking>\n<rating>"),
])
def test_arena_verdict_prefill(reasoning, expected):
    assert arena_verdict_prefill(reasoning) == expected


def test_pairwise_verdict_probs_maps_each_protocols_tokens():
    arena = pairwise_verdict_probs({"1": 0.2, "Ġ2": 0.5, "0": 0.3}, ARENA)
    assert (arena.p1, arena.p2, arena.ptie, arena.verdict, arena.error) == (
        pytest.approx(0.2), pytest.approx(0.5), pytest.approx(0.3), "2", None)
    link = pairwise_verdict_probs({"A": 0.45, "B": 0.27, "C": 0.18, "The": 0.1}, LINKAGE_PAIR)
    assert link.mass == pytest.approx(0.9)
    assert (link.p1, link.p2, link.ptie) == (pytest.approx(0.5), pytest.approx(0.3), pytest.approx(0.2))
    assert link.verdict == "1"
    tie = pairwise_verdict_probs({"▁tie": 0.7, "1": 0.2, "2": 0.1}, LFQA_E)
    assert tie.verdict == "tie" and tie.ptie == pytest.approx(0.7)


def test_pairwise_verdicts_debias_with_the_judges_math():
    # order ab: A (= a) 0.6 of 0.9; order ba: B (= a) 0.6 of 0.9 -> a, p_a 2/3 in both orders
    ab = pairwise_verdict_probs({"A": 0.6, "B": 0.3, "C": 0.1}, LINKAGE_PAIR)
    ba = pairwise_verdict_probs({"A": 0.3, "B": 0.6, "C": 0.1}, LINKAGE_PAIR)
    out = pair_outcome(ab, ba, tie=True)
    assert out.p_a_debiased == pytest.approx(2 / 3) and out.decision == "a"
    assert (out.decision_ab, out.decision_ba) == ("a", "a")


@pytest.mark.parametrize("probs, error", [
    ({"The": 0.995, "A": 0.005}, "mass 0.005 < min_mass 0.01"),
    ({"The": 1.0}, "no verdict token in the full distribution"),
    ({"A": 0.4, "B": 0.4, "C": 0.2}, "equally likely"),
    ({"A": 1.7}, "invalid probability"),
])
def test_pairwise_verdict_probs_errors(probs, error):
    got = pairwise_verdict_probs(probs, LINKAGE_PAIR)
    assert got.verdict is None and error in got.error


def test_pairwise_verdict_probs_refuses_other_kinds():
    with pytest.raises(ConfigError, match="not a pairwise one"):
        pairwise_verdict_probs({"1": 1.0}, get_protocol_template("linkage.listwise.v1"))
    with pytest.raises(ConfigError, match="min_mass"):
        pairwise_verdict_probs({"A": 1.0}, LINKAGE_PAIR, min_mass=1.0)


@pytest.mark.parametrize("spec, text, verdict, error", [
    (LINKAGE_PAIR, "Assistant A is more complete. [[A]]", "1", None),
    (LINKAGE_PAIR, "Both are equal.\n\n[[C]]", "tie", None),
    (LINKAGE_PAIR, "[[ b ]]", "2", None),
    (LINKAGE_PAIR, "[[A]] ... on reflection [[A]]", "1", None),
    (LINKAGE_PAIR, "[[A]] or maybe [[B]]", None, "ambiguous verdict"),
    (LINKAGE_PAIR, "[[D]]", None, "[[D]] is not a verdict"),
    (LINKAGE_PAIR, "Assistant A is better.", None, "no verdict ([[A]]/[[B]]/[[C]])"),
    (LINKAGE_PAIR, "   ", None, "empty output"),
    (ARENA, "<thinking>Both truthful.</thinking>\n<rating>0</rating>", "tie", None),
    (ARENA, "<thinking>x</thinking> <rating> 2 </rating>", "2", None),
    (ARENA, "<rating>1", "1", None),
    (ARENA, "<rating>3</rating>", None, "<rating>3</rating> is not a verdict"),
    (ARENA, "I prefer answer 1", None, "no verdict"),
    (LFQA_E, "answer_tie", "tie", None),
    (LFQA_E, "answer_2", "2", None),
])
def test_parse_pairwise_verdict(spec, text, verdict, error):
    got = parse_pairwise_verdict(text, spec)
    assert got.verdict == verdict
    if error is None:
        assert got.error is None
    else:
        assert error in got.error


def test_parsed_votes_use_the_judges_majority():
    votes = [parse_pairwise_verdict(t, ARENA) for t in ("<rating>1</rating>", "<rating>0</rating>",
                                                        "<rating>1</rating>")]
    got = vote_probs(votes, tie=True)
    assert got.verdict == "1" and got.ptie == pytest.approx(1 / 3)


def test_arena_reasoning_template_is_the_same_prompt_with_an_open_thinking():
    reasoning = get_protocol_template("arena.pairwise_reasoning.v1")
    a, b = (t.render(question="q?", answer_1="one", answer_2="two") for t in (ARENA, reasoning))
    assert (a.user, a.system) == (b.user, b.system) and b.prefill == "<thinking>"
    assert reasoning.template_hash != ARENA.template_hash
