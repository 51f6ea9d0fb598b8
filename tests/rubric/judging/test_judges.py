"""Pairwise judge specs, verdict parsing and the verdict math: pure, no model."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from rubric.errors import ConfigError, UnknownNameError
from rubric.judging.judges import JUDGE_NAMES, JUDGES, OUTPUT_TAG, VERDICT_PREFILL, get_judge, resolve_judges
from rubric.judging.verdicts import (
    ParsedVerdict, VerdictProbs, cot_verdict_prefill, debias, debiased_decision, p_a, pair_outcome, parse_verdict, to_original, verdict_probs, vote_probs,
)

REFERENCE = Path(__file__).resolve().parents[4] / "shared" / "reference-prompts"
PLAIN = get_judge("judge.plain.v1")
PLAIN_TIE = get_judge("judge.plain_tie.v1")
#: The paper's judges (importing rubric.protocols adds the protocols' pairwise judges to JUDGES).
PAPER = sorted(v for v in JUDGES.names() if v.startswith("judge."))


# --- registry and templates ----------------------------------------------------------------------

def test_registry_snapshot():
    assert PAPER == sorted(f"judge.{n}{t}.v1" for n in ("plain", "cot", "rubrics") for t in ("", "_tie"))
    assert JUDGE_NAMES == ("plain", "cot", "rubrics")
    for v in PAPER:
        spec = JUDGES.get(v)
        assert spec.version == v and spec.tie == v.endswith("_tie.v1") and spec.cot == (spec.name == "cot")
        assert spec.prefill == VERDICT_PREFILL
        assert spec.verdict_tokens == (("1", "2", "tie") if spec.tie else ("1", "2"))


def test_resolve_judges():
    assert [s.version for s in resolve_judges("plain,cot,rubrics")] == [
        "judge.plain.v1", "judge.cot.v1", "judge.rubrics.v1"]
    assert [s.version for s in resolve_judges(["rubrics", "plain"], tie=True)] == [
        "judge.rubrics_tie.v1", "judge.plain_tie.v1"]
    # a versioned name is taken as it is, whatever the tie flag says
    assert [s.version for s in resolve_judges("judge.cot_tie.v1,plain")] == ["judge.cot_tie.v1", "judge.plain.v1"]
    with pytest.raises(UnknownNameError, match="known: plain, cot, rubrics"):
        resolve_judges("plain,gpt4o")
    with pytest.raises(ConfigError, match="named twice"):
        resolve_judges("plain,judge.plain.v1")
    with pytest.raises(ConfigError, match="no judges"):
        resolve_judges(" , ")
    with pytest.raises(UnknownNameError, match="unknown judge"):
        get_judge("judge.plain.v9")


def test_template_hashes_are_distinct_and_stable():
    hashes = {v: JUDGES.get(v).template_hash for v in PAPER}
    assert len(set(hashes.values())) == len(hashes)
    assert all(len(h) == 12 and int(h, 16) >= 0 for h in hashes.values())
    assert PLAIN.template_hash == get_judge("judge.plain.v1").template_hash


@pytest.mark.parametrize("version", PAPER)
def test_render_puts_answers_in_order_and_names_the_source(version):
    spec = JUDGES.get(version)
    p = spec.render("Why is the sky blue?", "FIRST ANSWER", "SECOND ANSWER")
    assert p.prefill == VERDICT_PREFILL
    assert p.user.index("Why is the sky blue?") < p.user.index("FIRST ANSWER") < p.user.index("SECOND ANSWER")
    assert p.user.rstrip().endswith(OUTPUT_TAG)
    assert "{#" not in p.user and "lfqa-rubric" not in p.user  # the header is a comment, never shown
    assert ("answer_tie" in p.user) == spec.tie
    assert "'answer_1'" in p.user and "'answer_2'" in p.user
    assert spec.render("q", "x", "y", prefill=False).prefill == ""
    header = spec.template.text.splitlines()[0]
    assert header.startswith("{#-") and "LFQA-HP-1M reference code" in spec.template.text.split("#}")[0]
    assert spec.source.split("prompt/")[1].split(" ")[0] in spec.template.text.split("#}")[0]


def test_missing_field_is_an_error_not_a_blank():
    with pytest.raises(ConfigError, match="answer_2"):
        PLAIN.template.render(question="q", answer_1="x")


@pytest.mark.parametrize("version, ref", [
    ("judge.plain.v1", "lfqa-hp-1m.LLMPairwiseJudgement.txt"),
    ("judge.cot.v1", "lfqa-hp-1m.LLMPairwiseJudgementCoT.txt"),
    ("judge.rubrics.v1", "lfqa-hp-1m.LLMPairwiseJudgement_rubrics.txt"),
])
def test_templates_are_the_reference_prompts_verbatim(version, ref):
    path = REFERENCE / ref
    if not path.is_file():
        pytest.skip(f"reference prompt {path} not beside the checkout")
    want = path.read_text(encoding="utf-8-sig").format("QQ", "A1", "A2")
    got = get_judge(version).render("QQ", "A1", "A2").user
    assert got.rstrip("\n") == want.rstrip("\n")


# --- parsing generated text ----------------------------------------------------------------------

COT_TEXT = ("Answer 1 explains Rayleigh scattering. Answer 2 only says the sky is blue, but answer_1 has"
            " an error.\nSo which is better? Hard to say.\n### Output: answer_2")


@pytest.mark.parametrize("text, tie, cot, verdict, reason", [
    ("answer_1", False, False, "1", None),
    (" Answer 2", False, False, "2", None),
    ("**answer_2**", False, False, "2", None),
    ("I prefer answer_1.", False, False, "1", None),
    ("ANSWER-2", False, False, "2", None),
    ("Answer: 1", False, False, "1", None),
    ("2", False, False, "2", None),
    ("'1'.", False, False, "1", None),
    ("answer_1 or answer_2", False, False, None, "ambiguous"),
    ("answer_1 or answer_2", True, True, None, "ambiguous"),
    ("Both are good, tie", True, False, "tie", None),
    ("Both are good, tie", False, False, None, "offers no tie"),
    ("answer_tie", True, False, "tie", None),
    ("Tie.", True, False, "tie", None),
    ("", False, False, None, "empty output"),
    ("   \n", False, False, None, "empty output"),
    ("answer_3", False, False, None, "answer_3 is not one of the two"),
    ("answer_12", False, False, None, "answer_12 is not one of the two"),
    # ordinals and prose are not read (documented in parse_verdict)
    ("The first answer", False, False, None, "no verdict"),
    ("The second one is better.", False, False, None, "no verdict"),
    ("They tied.", True, False, None, "no verdict"),
    # CoT: reasoning mentions both answers; the text after the last Output tag decides
    (COT_TEXT, False, True, "2", None),
    ("Answer 1 is vague. Answer 2 is detailed.\nTherefore answer_2 is better.", False, True, "2", None),
    ("### Output: answer_1\nwait.\n**Output:** answer_2", False, True, "2", None),
    ("### Output:\n", False, True, None, "no verdict"),
    # a direct judge: the first sentence with a verdict decides, its later prose does not
    ("answer_1\n\nAnswer 2 lacks detail.", False, False, "1", None),
    ("Answer 1 is longer than answer 2.", False, False, None, "ambiguous"),
])
def test_parse_verdict_table(text, tie, cot, verdict, reason):
    got = parse_verdict(text, tie=tie, cot=cot)
    assert got.verdict == verdict
    if reason is None:
        assert got.error is None
    else:
        assert got.error is not None and reason in got.error


def test_reference_substring_bug_is_not_reproduced():
    # The reference code tested `'answer_1' in response` first, so an echo of the instructions read as answer_1.
    echo = "You must answer only 'answer_1' or 'answer_2'."
    assert parse_verdict(echo, tie=False).verdict is None


@pytest.mark.parametrize("reasoning, prefill", [
    ("", "### Output: answer_"),
    ("  \n", "### Output: answer_"),
    ("Answer 1 is better.\n", "Answer 1 is better.\n\n### Output: answer_"),
    ("I think so. ### Output: answer_2 and more", "I think so.\n\n### Output: answer_"),
    ("Reasoning\nOutput: answer_1", "Reasoning\n\n### Output: answer_"),
])
def test_cot_verdict_prefill(reasoning, prefill):
    assert cot_verdict_prefill(reasoning) == prefill


# --- verdict probabilities -----------------------------------------------------------------------

def test_verdict_probs_folds_spellings_and_renormalises():
    # '1': 0.6; '2' in two spellings: 0.2 + 0.05; '3' is not a verdict and is ignored
    r = verdict_probs({"1": 0.6, "2": 0.2, "Ġ2": 0.05, "3": 0.1}, PLAIN)
    assert r.error is None and r.verdict == "1"
    assert r.mass == pytest.approx(0.85)
    assert r.p1 == pytest.approx(0.6 / 0.85) and r.p2 == pytest.approx(0.25 / 0.85)
    assert r.ptie is None and r.p_first == pytest.approx(0.6 / 0.85)


def test_verdict_probs_from_logprobs_and_with_tie():
    r = verdict_probs({"1": math.log(0.3), "2": math.log(0.1), "tie": math.log(0.4)}, PLAIN_TIE, logprobs=True)
    assert (r.p1, r.p2, r.ptie) == pytest.approx((0.375, 0.125, 0.5))
    assert r.mass == pytest.approx(0.8) and r.verdict == "tie"
    assert r.p_first == pytest.approx(0.75)  # P(first | not a tie) = 0.3 / 0.4
    # a tie token for a judge that offers none is not a verdict token
    assert verdict_probs({"1": 0.3, "tie": 0.6}, PLAIN).p1 == 1.0


@pytest.mark.parametrize("probs, reason", [
    ({"1": 0.004, "2": 0.002, "The": 0.9}, "mass 0.006 < min_mass 0.01"),
    ({"The": 0.9}, "no verdict token among top-20"),
    ({}, "no verdict token among top-20"),
    ({"1": 0.4, "2": 0.4}, "equally likely"),
    ({"1": 1.7}, "invalid probability"),
])
def test_verdict_probs_errors(probs, reason):
    r = verdict_probs(probs, PLAIN, top_k=20)
    assert r.verdict is None and reason in r.error


def test_low_mass_keeps_the_probabilities_for_inspection():
    r = verdict_probs({"1": 0.004, "2": 0.001}, PLAIN)
    assert r.error and r.p1 == pytest.approx(0.8) and r.mass == pytest.approx(0.005)
    assert verdict_probs({"1": 0.004, "2": 0.001}, PLAIN, min_mass=0.0).error is None
    with pytest.raises(ConfigError, match="min_mass"):
        verdict_probs({"1": 0.5}, PLAIN, min_mass=1.0)


def _votes(s):
    return [ParsedVerdict(None, "no verdict") if v == "?" else ParsedVerdict(v) for v in s.split(",")]


@pytest.mark.parametrize("votes, tie, verdict, p1, mass, reason", [
    ("1,1,2", False, "1", 2 / 3, 1.0, None),
    ("2,2,2", False, "2", 0.0, 1.0, None),
    ("1,?,1", False, "1", 1.0, 2 / 3, None),
    ("1", False, "1", 1.0, 1.0, None),
    ("1,?,2", False, None, 0.5, 2 / 3, "vote tie (1,?,2)"),
    ("1,1,2,2", False, None, 0.5, 1.0, "vote tie"),
    ("1,1,?,?", False, None, 1.0, 0.5, "no majority (1,1,?,?); 2 unparseable"),
    ("1,1,2,tie", True, None, 0.5, 1.0, "no majority (1,1,2,tie)"),
    ("tie,tie,1", True, "tie", 1 / 3, 1.0, None),
    ("?,?,?", False, None, None, 0.0, "no parseable vote in 3"),
])
def test_vote_probs_majority(votes, tie, verdict, p1, mass, reason):
    r = vote_probs(_votes(votes), tie=tie)
    assert r.verdict == verdict and r.mass == pytest.approx(mass)
    assert (r.p1 is None) if p1 is None else r.p1 == pytest.approx(p1)
    assert (r.ptie is not None) == (tie and p1 is not None)
    if reason is None:
        assert r.error is None
    else:
        assert reason in r.error


def test_vote_probs_needs_votes():
    with pytest.raises(ConfigError, match="votes"):
        vote_probs([], tie=False)


# --- order mapping and debiasing -----------------------------------------------------------------

@pytest.mark.parametrize("verdict, order, label", [
    ("1", "ab", "a"), ("2", "ab", "b"), ("1", "ba", "b"), ("2", "ba", "a"), ("tie", "ab", "tie"), ("tie", "ba", "tie"),
])
def test_to_original(verdict, order, label):
    assert to_original(verdict, order) == label


def test_to_original_rejects_nonsense():
    with pytest.raises(ConfigError, match="order"):
        to_original("1", "ac")
    with pytest.raises(ConfigError, match="verdict"):
        to_original("3", "ab")


def test_p_a_per_order_and_debias():
    r = VerdictProbs(0.6, 0.2, 0.2, 1.0, "1")
    assert p_a(r, "ab") == pytest.approx(0.75) and p_a(r, "ba") == pytest.approx(0.25)
    assert p_a(VerdictProbs(None, None, None, 0.0, error="x"), "ab") is None
    assert debias(0.8, 0.4) == pytest.approx(0.6)
    with pytest.raises(ConfigError, match="p_a_ba"):
        debias(0.5, 1.5)


@pytest.mark.parametrize("p, tie, kw, decision, reason", [
    (0.6, False, {}, "a", None),
    (0.4, False, {}, "b", None),
    (0.5, False, {}, None, "p_a = 0.5"),
    (0.5, True, {}, "tie", None),
    (0.7, True, {"p_tie": 0.5, "p_a_any": 0.35, "p_b_any": 0.15}, "tie", None),
    (0.7, True, {"p_tie": 0.3, "p_a_any": 0.49, "p_b_any": 0.21}, "a", None),
])
def test_debiased_decision(p, tie, kw, decision, reason):
    got, why = debiased_decision(p, tie=tie, **kw)
    assert got == decision
    assert (why is None) if reason is None else reason in why


def test_pair_outcome_hand_computed():
    ab = VerdictProbs(0.8, 0.2, None, 0.9, "1")   # a shown first, judged better
    ba = VerdictProbs(0.6, 0.4, None, 0.8, "1")   # b shown first, judged better: position bias
    out = pair_outcome(ab, ba, tie=False)
    assert out.p_a_ab == pytest.approx(0.8) and out.p_a_ba == pytest.approx(0.4)
    assert out.p_a_debiased == pytest.approx(0.6) and out.decision == "a"
    assert (out.decision_ab, out.decision_ba) == ("a", "b")
    assert out.error is None and out.decision_error is None


def test_pair_outcome_with_tie():
    ab = VerdictProbs(0.3, 0.2, 0.5, 1.0, "tie")
    ba = VerdictProbs(0.25, 0.25, 0.5, 1.0, "tie")
    out = pair_outcome(ab, ba, tie=True)
    assert out.p_a_debiased == pytest.approx((0.6 + 0.5) / 2)
    assert (out.p_tie_ab, out.p_tie_ba) == (0.5, 0.5)
    assert out.decision == "tie" and (out.decision_ab, out.decision_ba) == ("tie", "tie")


def test_pair_outcome_pure_position_bias_has_no_decision():
    first = VerdictProbs(1.0, 0.0, None, 1.0, "1")
    out = pair_outcome(first, first, tie=False)
    assert out.p_a_debiased == 0.5 and out.decision is None and "position" in out.decision_error


def test_pair_outcome_failed_order_names_it():
    ok = VerdictProbs(0.7, 0.3, None, 0.9, "1")
    bad = VerdictProbs(0.9, 0.1, None, 0.004, error="mass 0.004 < min_mass 0.01")
    out = pair_outcome(ok, bad, tie=False)
    assert out.p_a_debiased is None and out.decision is None
    assert out.error == "order ba: mass 0.004 < min_mass 0.01"
    assert out.decision_ab == "a" and out.decision_ba is None and out.p_a_ba == pytest.approx(0.1)
