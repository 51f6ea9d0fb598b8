import json
import math

import pytest

from rubric.scoring.claims import (
    EXTRACTION_STOP,
    NO_CLAIMS_REASON,
    CheckedClaim,
    claim_key,
    claims_table,
    claims_to_json,
    dedupe_claims,
    extraction_prompts,
    extraction_template,
    factuality_scores,
    factuality_template_hash,
    format_evidence,
    parse_claims,
    parse_verdict_text,
    read_verdict,
    sentence_context,
    verification_prompt,
    verification_template,
)
from rubric.errors import ConfigError
from rubric.scoring.scorer import Score

S = ["A was first.", "B came next.", "C followed.", "D is the marked one.", "E is after.", "F is far."]


def test_sentence_context_window():
    ctx = sentence_context(S, 3)
    assert ctx == {"previous": "A was first. B came next. C followed.", "sentence": "D is the marked one.",
                   "following": "E is after."}
    assert sentence_context(S, 5)["previous"] == "C followed. D is the marked one. E is after."
    assert sentence_context(S, 5)["following"] == ""
    assert sentence_context(S, 0)["previous"] == ""
    with pytest.raises(ConfigError, match="out of range"):
        sentence_context(S, 6)


def test_extraction_prompt_marks_the_sentence():
    prompts = extraction_prompts("Why?", S)
    assert len(prompts) == len(S)
    p = prompts[4].user
    assert "B came next. C followed. D is the marked one. <SOS>E is after.<EOS> F is far." in p
    assert "A was first." not in p  # only three previous sentences
    assert "Question:\nWhy?" in p
    assert "<SOS>A was first.<EOS> B came next." in prompts[0].user  # no leading blank
    assert "No verifiable claim." in p


@pytest.mark.parametrize("raw,want", [
    ("The sky is blue.\nWater boils at 100 C.", ["The sky is blue.", "Water boils at 100 C."]),
    ("- The sky is blue.\n* Grass is green.\n• Snow is white.", ["The sky is blue.", "Grass is green.", "Snow is white."]),
    ("1. Paris is in France.\n2) Rome is in Italy.\n(3) Bern is in Switzerland.\n[4] Oslo is in Norway.",
     ["Paris is in France.", "Rome is in Italy.", "Bern is in Switzerland.", "Oslo is in Norway."]),
    ('"Paris is the capital of France."\n“Light travels fast.”', ["Paris is the capital of France.", "Light travels fast."]),
    ("**The Moon orbits Earth.**", ["The Moon orbits Earth."]),
    ("Claim 1: Mars is red.\nFact: Venus is hot.", ["Mars is red.", "Venus is hot."]),
    ("Claims:\nThe sky is blue.", ["The sky is blue."]),
    ("Sure, here are the claims:\n- The sky is blue.", ["The sky is blue."]),
    ("Here are the verifiable claims\n- The sky is blue.", ["The sky is blue."]),
    ("No verifiable claim.", []),
    ("no verifiable claims", []),
    ("There are no verifiable claims in this sentence.", []),
    ("- No verifiable claim", []),
    ("None", []), ("N/A", []), ("", []), ("\n\n  \n", []),
    ("...\n---\n```\nOK\n42", []),                                   # junk: no two words
    ("Water boils at 100 C.\n\n\nIce melts at 0 C.", ["Water boils at 100 C.", "Ice melts at 0 C."]),
    ("<SOS>The sky is blue.<EOS>", ["The sky is blue."]),
    ("The sky is blue.\nQuestion: why is grass green?\nGrass has chlorophyll.", ["The sky is blue."]),  # echo: stop
    ("Note: this sentence is vague.\nThe sky is blue.", ["The sky is blue."]),
    ("3.5 million people live in Berlin.", ["3.5 million people live in Berlin."]),  # a number is not a bullet
    ("Facts are checked by editors.", ["Facts are checked by editors."]),            # 'Facts' is not a label here
    ("J. K. Rowling wrote Harry Potter.", ["J. K. Rowling wrote Harry Potter."]),
    (None, []),
])
def test_parse_claims(raw, want):
    assert parse_claims(raw) == want


@pytest.mark.parametrize("head", [
    "The sky is blue.\n- Grass is green.",
    "1. Paris is in France.\n2. Rome is in Italy.\n",
    "No verifiable claim.",
    "",
    "Claims:\n**The Moon orbits Earth.**\n\n",
])
@pytest.mark.parametrize("stop", EXTRACTION_STOP)
def test_extraction_stop_strings_never_change_the_claims(head, stop):
    # What a generator with stop strings returns: the text before the earliest stop string.
    full = head + stop + " why is grass green?\nGrass has chlorophyll.\nAnswer: it is."
    cut = full[:min(full.index(s) for s in EXTRACTION_STOP if s in full)]
    assert parse_claims(cut) == parse_claims(full)
    assert stop.startswith("\n") and stop.endswith(":")


def test_dedupe_claims_normalises_case_space_punct():
    claims = ["The sky is blue.", "the  sky is BLUE", "The sky, is blue!", "Pi is 3.14.", "Pi is 314."]
    assert dedupe_claims(claims) == [0, 3, 4]
    assert claim_key("  The SKY, is blue! ") == "the sky is blue"
    assert dedupe_claims(["...", ""]) == []


@pytest.mark.parametrize("n_sup,n,k,p,r,f1", [
    (3, 4, 10, 0.75, 0.3, 2 * 0.75 * 0.3 / 1.05),
    (10, 10, 10, 1.0, 1.0, 1.0),
    (12, 12, 10, 1.0, 1.0, 1.0),    # recall is capped at 1
    (0, 5, 10, 0.0, 0.0, 0.0),      # nothing supported: F1 is 0, not 0/0
    (1, 1, 1, 1.0, 1.0, 1.0),
])
def test_factuality_scores(n_sup, n, k, p, r, f1):
    s = factuality_scores(n_sup, n, k)
    assert s.error is None
    assert (s.precision, s.recall_at_k, s.f1_at_k) == pytest.approx((p, r, f1))


def test_zero_claims_is_a_reason_not_a_division():
    s = factuality_scores(0, 0, 10)
    assert (s.precision, s.recall_at_k, s.f1_at_k) == (None, None, None)
    assert s.error == NO_CLAIMS_REASON


@pytest.mark.parametrize("args", [(2, 1, 10), (-1, 3, 10), (1, 3, 0)])
def test_factuality_scores_bad_args(args):
    with pytest.raises(ConfigError):
        factuality_scores(*args)


def test_verification_prompt_and_templates():
    p = verification_prompt("The sky is blue.", ["Rayleigh scattering " * 200, "Short."], max_chars=60)
    assert p.prefill == "Answer:"
    assert "Claim:\nThe sky is blue." in p.user
    assert "[1] Rayleigh scattering" in p.user and " ...\n\n[2] Short." in p.user
    assert "Answer yes or no." in p.user
    t = verification_prompt("x y", ["e"], ternary=True).user
    assert "unknown" in t
    assert verification_template(False).template_hash != verification_template(True).template_hash
    assert factuality_template_hash(False) != factuality_template_hash(True)
    assert len(extraction_template().template_hash) == 12
    with pytest.raises(ConfigError):
        format_evidence(["x"], 0)
    with pytest.raises(ConfigError, match="needs fields"):
        extraction_template().render(question="q")


@pytest.mark.parametrize("probs,ternary,verdict,p_sup", [
    ({"Ġyes": 0.6, "Ġno": 0.2}, False, "supported", 0.75),
    ({" Yes": 0.1, "no": 0.3}, False, "unsupported", 0.25),
    ({"yes": 0.3, "no": 0.3}, False, "unsupported", 0.5),           # a tie is not support
    ({"Ġno": 0.5, "Ġyes": 0.1, "Ġunknown": 0.2}, True, "contradicted", 0.125),
    ({"Ġno": 0.1, "Ġyes": 0.1, "Ġunknown": 0.6}, True, "unsupported", 0.125),
    ({"Ġyes": 0.4, "Ġunknown": 0.2}, True, "supported", 4 / 6),
])
def test_read_verdict(probs, ternary, verdict, p_sup):
    v = read_verdict(probs, ternary=ternary)
    assert v.verdict == verdict and v.error is None
    assert v.p_supported == pytest.approx(p_sup)


@pytest.mark.parametrize("probs", [{}, {"Ġmaybe": 0.9}, {"yes": 0.001, "no": 0.002}])
def test_read_verdict_unverified(probs):
    v = read_verdict(probs)
    assert v.verdict == "unverified" and v.p_supported is None and v.error


@pytest.mark.parametrize("text,ternary,verdict", [
    ("Yes", False, "supported"), (" yes.", False, "supported"), ("**Supported**", False, "supported"),
    ("No", False, "unsupported"), ("Unsupported.", False, "unsupported"),
    ("The claim is not supported by the evidence.", False, "unsupported"),
    ("The evidence does not support the claim.", False, "unsupported"),
    ("True", False, "supported"), ("False", False, "unsupported"),
    ("no", True, "contradicted"), ("Contradicted.", True, "contradicted"), ("contradicted", False, "unsupported"),
    ("unknown", True, "unsupported"), ("Not enough information.", True, "unsupported"),
])
def test_parse_verdict_text(text, ternary, verdict):
    assert parse_verdict_text(text, ternary=ternary).verdict == verdict


@pytest.mark.parametrize("text", ["", "I cannot say.", None])
def test_parse_verdict_text_none(text):
    v = parse_verdict_text(text)
    assert v.verdict == "unverified" and v.error


def test_claims_table_from_scores():
    c = [CheckedClaim("The sky is blue.", 0, "[1] Rayleigh...", "supported", 0.9),
         CheckedClaim("Grass is red.", 1, "", "unverified", None, "no evidence")]
    scores = [Score.ok(0.5, claims=claims_to_json(c)), Score.failed(NO_CLAIMS_REASON, n_claims=0, claims="[]"),
              Score.failed("answer is int, not str")]
    t = claims_table(["a1", "a2", "a3"], scores)
    assert t.num_rows == 2
    assert t.column("answer_id").to_pylist() == ["a1", "a1"]
    assert t.column("verdict").to_pylist() == ["supported", "unverified"]
    assert t.column("claim_index").to_pylist() == [0, 1]
    assert math.isclose(t.column("p_supported").to_pylist()[0], 0.9)
    assert claims_table([], []).schema.names[:4] == ["answer_id", "claim_index", "sentence_index", "claim"]
    assert json.loads(claims_to_json([])) == []
