"""The one prompt spec: its registry, hash, renderer and the one reader of score tokens (pure, no model)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from rubric.errors import ConfigError
from rubric.judging import JUDGES, JudgeSpec, verdict_probs
from rubric.scoring import PROMPTS, PromptTemplate, declare_prompt, get_template, read_tokens
from rubric.protocols import get_protocol_template

ROOT = Path(__file__).resolve().parents[3]
TOY = PromptTemplate(name="toy", version="toy.pairwise.v1", layout="pairwise", text="Q: {{ question }} 1: {{ answer_1 }}"
                     " 2: {{ answer_2 }}", prefill="[[", score_tokens=("A", "B", "C"), score_values=(1.0, 0.0, 0.5),
                     fields=("question", "answer_1", "answer_2"), verdicts=("1", "2", "tie"), verdict_format="[[{}]]")


@pytest.mark.parametrize("probs, tokens, min_mass, mass, error", [
    ({"4": 0.5, "Ġ4": 0.1, "▁5": 0.2, "4.": 0.1}, ("4", "5"), 0.01, 0.8, None),  # spellings fold; "4." is no score
    ({"Yes": 0.6, " no": 0.3}, ("yes", "no"), 0.01, 0.9, None),
    ({"The": 0.9}, ("1", "2"), 0.01, 0.0, "no score token among top-5"),
    ({"1": 0.004, "x": 0.9}, ("1", "2"), 0.01, 0.004, "(mass 0.004 < min_mass 0.01)"),
    ({"1": 1.5}, ("1", "2"), 0.01, 0.0, "invalid probability"),
])
def test_read_tokens_folds_spellings_and_says_why_there_is_no_reading(probs, tokens, min_mass, mass, error):
    r = read_tokens(probs, tokens, min_mass=min_mass, top_k=5)
    assert r.mass == pytest.approx(mass)
    assert (r.error is None) if error is None else (error in r.error)


def test_read_tokens_takes_logprobs_and_checks_min_mass():
    r = read_tokens({"1": math.log(0.25), "2": math.log(0.25)}, ("1", "2"), logprobs=True, what="rank digit",
                    label="x: ")
    assert r.mass == pytest.approx(0.5) and r.normalised() == pytest.approx({"1": 0.5, "2": 0.5})
    assert read_tokens({}, ("1",), what="rank digit", label="x: ").error == "x: no rank digit in the full distribution"
    with pytest.raises(ConfigError, match="'min_mass' must be in"):
        read_tokens({}, ("1",), min_mass=1.0)


def test_render_checks_fields_and_the_prefill():
    p = TOY.render(question="q", answer_1="a", answer_2="b")
    assert (p.user, p.prefill, p.system) == ("Q: q 1: a 2: b", "[[", None)
    assert TOY.render(prefill=False, question="q", answer_1="a", answer_2="b").prefill == ""
    with pytest.raises(ConfigError, match=r"toy.pairwise.v1 \(pairwise\) needs fields"):
        TOY.render(question="q", answer_1="a")
    with pytest.raises(ConfigError, match="got unknown"):
        TOY.render(question="q", answer_1="a", answer_2="b", reference="r")


def test_the_hash_covers_what_the_model_sees_and_how_it_is_read():
    from dataclasses import replace

    h = TOY.template_hash
    assert len(h) == 12
    for change in ({"text": TOY.text + "."}, {"prefill": "[[ "}, {"score_tokens": ("A", "B", "D")},
                   {"hash_extra": ("cot=True",)}, {"decision_extra": "p"}, {"layout": None}):
        assert replace(TOY, **change).template_hash != h, change
    # what is not shown to the model and does not change the reading leaves it
    assert replace(TOY, source="elsewhere", name="other").template_hash == h


def test_a_spec_is_checked_when_declared():
    with pytest.raises(ConfigError, match="collide after folding"):
        PromptTemplate(name="x", version="x.v1", layout="paper", text="", score_tokens=("Yes", " yes"),
                       score_values=(1.0, 0.0))
    with pytest.raises(ConfigError, match="one verdict"):
        PromptTemplate(name="x", version="x.v1", layout="pairwise", text="", score_tokens=("A", "B"),
                       score_values=(1.0, 0.0), verdicts=("1", "1"))
    with pytest.raises(ConfigError, match="needs verdicts"):
        JudgeSpec(name="x", template=get_template("coherence.geval.v1"))
    with pytest.raises(ConfigError, match="already registered"):
        declare_prompt("judge.plain.v1", layout="pairwise")


def test_every_prompt_is_in_the_one_registry():
    import rubric.protocols  # noqa: F401  (the protocols declare theirs)

    assert PROMPTS.get("coherence.geval.v1@answer_first") is get_template("coherence.geval.v1", "answer_first")
    assert PROMPTS.get("arena.pairwise.v1") is get_protocol_template("arena.pairwise.v1")
    assert JUDGES.get("judge.cot.v1").template is PROMPTS.get("judge.cot.v1")
    assert JUDGES.get("lfqa_e.reference_tie.v1").template is PROMPTS.get("lfqa_e.reference_tie.v1")
    assert {"factuality.extract.v2", "factuality.verify_ternary.v2", "lfq_filter.fewshot.v1@paper"} <= set(PROMPTS)


def test_a_judge_and_its_prompt_read_verdicts_alike():
    probs = {"A": 0.2, "B": 0.6, "C": 0.1}
    got = verdict_probs(probs, TOY)
    assert (got.verdict, got.p1, got.p2, got.ptie) == ("2", pytest.approx(2 / 9), pytest.approx(6 / 9),
                                                        pytest.approx(1 / 9))
    assert verdict_probs(probs, JudgeSpec(name="toy", template=TOY)) == got
    assert verdict_probs({"A": 0.4, "B": 0.4}, TOY).error == "toy.pairwise.v1: the top verdicts are equally likely"
    plain = JUDGES.get("judge.plain.v1")
    assert verdict_probs({"1": 0.3, " 2": 0.6}, plain).ptie is None
    with pytest.raises(ConfigError, match="not a pairwise one"):
        verdict_probs({}, get_template("coherence.geval.v1"))


def test_one_jinja_environment_for_prompts():
    # rubric/html_report builds its own, for HTML pages (autoescape, a package loader): not a prompt renderer
    hits = [p.relative_to(ROOT).as_posix() for d in ("rubric", "models", "workers")
            for p in (ROOT / d).rglob("*.py") if re.search(r"\bEnvironment\(", p.read_text(encoding="utf-8"))]
    assert sorted(hits) == ["rubric/html_report/_build.py", "rubric/scoring/prompts.py"]
