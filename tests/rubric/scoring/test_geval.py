"""G-Eval templates and score parsing: pure, no model."""

from __future__ import annotations

import math

import pytest

from rubric.errors import ConfigError, UnknownNameError
from rubric.scoring import (
    DEFAULT_MIN_MASS,
    LAYOUTS,
    LFQ_FILTER_VERSION,
    TEMPLATE_VERSIONS,
    ChatPrompt,
    PromptTemplate,
    fold_token_probs,
    get_template,
    lfq_filter_template,
    normalize_token,
    parse_lfq,
    parse_score,
)
from rubric.scoring.specs import RUBRICS

COH = get_template("coherence.geval.v1")
FLU = get_template("fluency.geval.v1")
EX = get_template("use_of_examples.yesno.v1")


@pytest.mark.parametrize("token, canon", [
    ("4", "4"), (" 4", "4"), ("Ġ4", "4"), ("▁4", "4"), ("  4", "4"),
    ("Yes", "yes"), (" yes", "yes"), ("ĠYES", "yes"), ("▁No", "no"),
    ("4 ", "4 "), ("4.", "4."), ("5/5", "5/5"), ("10", "10"), ("Ċ4", "ċ4"),
])
def test_normalize_token(token, canon):
    assert normalize_token(token) == canon


@pytest.mark.parametrize("probs, value, mass", [
    ({"4": 1.0}, 4.0, 1.0),
    ({"Ġ4": 0.5, "5": 0.5}, 4.5, 1.0),
    ({"4": 0.2, " 4": 0.2, "2": 0.4}, (4 * 0.4 + 2 * 0.4) / 0.8, 0.8),  # mass split across spellings
    ({"▁1": 0.1, "▁5": 0.1, "hello": 0.7}, 3.0, 0.2),  # other tokens ignored
    ({"1": 0.25, "2": 0.25, "3": 0.25, "4": 0.25}, 2.5, 1.0),
])
def test_parse_score_table(probs, value, mass):
    p = parse_score(probs, COH)
    assert p.error is None
    assert p.value == pytest.approx(value)
    assert p.mass == pytest.approx(mass)


@pytest.mark.parametrize("probs", [
    {},                                     # nothing at all
    {"Score": 0.9, ":": 0.1},               # no digit
    {"5/5": 0.8, "10": 0.1, "4.": 0.05},    # look like scores, are not score tokens
    {"6": 0.9, "0": 0.1},                   # digits outside the scale
])
def test_no_score_token_is_an_error_not_a_crash(probs):
    p = parse_score(probs, COH, top_k=20)
    assert p.value is None and p.mass == 0.0
    assert "coherence" in p.error and "top-20" in p.error


def test_mass_below_threshold_names_rubric_mass_and_k():
    p = parse_score({"3": 0.004, "Ġthe": 0.9}, COH, min_mass=0.01, top_k=5)
    assert p.value is None and p.mass == pytest.approx(0.004)
    assert "top-5" in p.error and "min_mass" in p.error
    assert parse_score({"3": 0.004}, COH, min_mass=0.001).value == pytest.approx(3.0)


def test_full_distribution_message():
    assert "full distribution" in parse_score({}, COH, top_k=None).error


def test_fluency_reads_only_1_to_3():
    p = parse_score({"3": 0.5, "5": 0.5}, FLU)
    assert p.value == pytest.approx(3.0) and p.mass == pytest.approx(0.5)


@pytest.mark.parametrize("probs, value", [
    ({"Ġyes": 0.3, "ĠYes": 0.3, "Ġno": 0.2}, 0.75),
    ({"No": 0.5, "no": 0.25}, 0.0),
    ({"YES": 0.1}, 1.0),
])
def test_yes_no_is_p_yes_over_p_yes_plus_p_no(probs, value):
    assert parse_score(probs, EX).value == pytest.approx(value)


@pytest.mark.parametrize("probs, value, p_yes", [
    ({"Ġyes": 0.3, "ĠYes": 0.3, "Ġno": 0.2}, 1.0, 0.75),
    ({"Ġyes": 0.2, "Ġno": 0.3}, 0.0, 0.4),
    ({"yes": 0.25, "no": 0.25}, 0.0, 0.5),  # a tie is not "yes": the paper's rule is P(yes) > P(no)
    ({"YES": 0.1}, 1.0, 1.0),
])
def test_use_of_examples_v2_decides_and_keeps_the_soft_p_yes(probs, value, p_yes):
    v2 = get_template("use_of_examples.yesno.v2")
    parsed = parse_score(probs, v2)
    assert parsed.value == value and parsed.expected == pytest.approx(p_yes)
    assert v2.decision_extra == "p_yes" and EX.decision_extra is None
    assert parse_score(probs, EX).value == parse_score(probs, EX).expected == pytest.approx(p_yes)


def test_use_of_examples_v2_is_the_reference_prompt_verbatim():
    from pathlib import Path

    ref = Path(__file__).resolve().parents[3] / "../shared/reference-prompts/lfqa-hp-1m.zero_shot_example_detection.txt"
    if not ref.is_file():
        pytest.skip("../shared/reference-prompts not here")
    text = ref.read_text(encoding="utf-8-sig").replace("Question: {}", "Question: Q?").replace("Answer: {}", "Answer: A.")
    user = get_template("use_of_examples.yesno.v2").render(question="Q?", answer="A.").user
    assert text.rstrip() == user.rstrip() and user.startswith("### Instruction:")


def test_logprobs_input():
    p = parse_score({"4": math.log(0.3), "Ġ2": math.log(0.3)}, COH, logprobs=True)
    assert p.value == pytest.approx(3.0) and p.mass == pytest.approx(0.6)


@pytest.mark.parametrize("bad", [float("nan"), -0.1, 1.5])
def test_invalid_probability_is_a_row_error(bad):
    p = parse_score({"4": bad}, COH)
    assert p.value is None and "invalid" in p.error


def test_bad_min_mass_raises():
    with pytest.raises(ConfigError, match="min_mass"):
        parse_score({"4": 1.0}, COH, min_mass=1.0)


def test_fold_keeps_absent_tokens_at_zero():
    assert fold_token_probs({"Ġ2": 0.5}, ("1", "2")) == {"1": 0.0, "2": 0.5}
    assert 0.0 < DEFAULT_MIN_MASS < 0.1


# --- templates ------------------------------------------------------------------------------------

def test_every_llm_rubric_has_templates_in_both_layouts():
    for name in RUBRICS.names():
        spec = RUBRICS.get(name)
        if spec.backend == "llm":
            for layout in LAYOUTS:
                t = get_template(spec.version, layout)
                assert t.name == spec.name and t.version == spec.version
                assert len(t.score_tokens) == (3 if spec.name == "fluency" else 2 if spec.kind == "binary" else 5)


@pytest.mark.parametrize("version", [v for v in TEMPLATE_VERSIONS if v != LFQ_FILTER_VERSION])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_render_fills_fields_and_prefills(version, layout):
    t = get_template(version, layout)
    p = t.render(question="QQQ why?", answer="AAA because.")
    assert "AAA because." in p.user
    assert ("QQQ why?" in p.user) or (version.startswith("fluency") and layout == "paper")
    assert "{{" not in p.user and p.prefill == t.prefill
    assert p.messages()[-1] == {"role": "assistant", "content": t.prefill}


def test_paper_prompts_end_with_the_papers_form_line():
    assert get_template("coherence.geval.v1").render(question="q", answer="a").user.endswith(
        "Evaluation Form (scores ONLY):\n- Coherence:")
    assert get_template("completeness.geval.v1").render(question="q", answer="a").user.endswith(
        "Completeness Evaluation Form (return numeric scores ONLY):")
    assert COH.prefill == "- Coherence: " and FLU.prefill == "- Fluency (1-3): "


def test_missing_field_is_an_error_not_a_blank():
    with pytest.raises(ConfigError, match="answer"):
        COH.render(question="q")


def test_answer_first_prompts_share_the_question_answer_prefix():
    users = [get_template(v, "answer_first").render(question="Why?", answer="Because.").user
             for v in TEMPLATE_VERSIONS if v != LFQ_FILTER_VERSION]
    head = users[0][: users[0].index("Because.") + len("Because.")]
    assert all(u.startswith(head) for u in users)


def test_template_hash_tracks_text_and_prefill():
    other_prefill = PromptTemplate(COH.name, COH.version, COH.layout, COH.text, "- Coherence:",
                                   COH.score_tokens, COH.score_values)
    assert COH.template_hash != other_prefill.template_hash
    assert COH.template_hash != get_template("coherence.geval.v1", "answer_first").template_hash
    assert COH.template_hash == get_template("coherence.geval.v1").template_hash
    assert len(COH.template_hash) == 12


def test_unknown_template_and_layout():
    with pytest.raises(UnknownNameError, match="coherence.geval.v1"):
        get_template("coherence.geval.v9")
    with pytest.raises(ConfigError, match="layout"):
        get_template("coherence.geval.v1", "sideways")
    with pytest.raises(ConfigError, match="layout"):
        get_template(LFQ_FILTER_VERSION, "answer_first")


def test_colliding_score_tokens_rejected():
    with pytest.raises(ConfigError, match="collide"):
        PromptTemplate("x", "x.v1", "paper", "{{ answer }}", "", ("yes", "Yes"), (1.0, 0.0))


def test_chat_prompt_messages():
    assert ChatPrompt("u").messages() == [{"role": "user", "content": "u"}]
    assert ChatPrompt("u", "p", system="s").messages()[0] == {"role": "system", "content": "s"}


# --- LFQ filter ----------------------------------------------------------------------------------

def test_lfq_template_is_the_papers_a4_prompt():
    p = lfq_filter_template().render(question="How do tides work?")
    assert p.user.startswith("Instruction: Decide whether the user's question qualifies as a Long-Form")
    assert p.user.endswith("Input: Question: How do tides work?\n\nOutput:")
    assert p.prefill == "Answer:"


@pytest.mark.parametrize("probs, is_lfq, confident", [
    ({"Ġyes": 0.9999}, True, True),           # log_score ~ 0: kept by the paper's rule
    ({"Ġyes": 0.7, "Ġno": 0.3}, True, False),
    ({"ĠNo": 0.9995, "Ġyes": 0.0001}, False, True),
    ({"Ġno": 0.2, "Ġyes": 0.1, "ĠThe": 0.7}, False, False),
])
def test_lfq_log_score_rule(probs, is_lfq, confident):
    d = parse_lfq(probs)
    assert d.error is None and d.is_lfq is is_lfq and d.confident is confident
    assert d.log_score <= 0.0


def test_lfq_without_yes_or_no():
    d = parse_lfq({"ĠThe": 0.9}, top_k=20)
    assert d.is_lfq is None and not d.confident and "top-20" in d.error
