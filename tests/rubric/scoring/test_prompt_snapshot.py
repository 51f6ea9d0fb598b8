"""Every registered prompt version keeps its template hash and its rendering, byte for byte.

The hashes are in store keys and provenance columns (a changed hash invalidates users' stores), so
``prompt_snapshot.json`` records, for every prompt version, its ``template_hash`` and the sha256 of
the chat messages it renders for one fixed input, as the code made them before the prompt classes
were unified (4b5d404). Regenerate only for a deliberate new version:
``PYTHONPATH=. python tests/rubric/scoring/test_prompt_snapshot.py --write``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from rubric.judging import JUDGES
from rubric.scoring import (
    FACTUALITY_VERSIONS, LAYOUTS, TEMPLATE_VERSIONS, EXTRACT_V2, EXTRACT_VERSION, VERIFY_V2, VERIFY_VERSION,
    extraction_template, factuality_template_hash, get_template, lfq_filter_template, verification_template,
)
from rubric.protocols import get_protocol_template, protocol_judge, protocol_judge_versions, protocol_versions

SNAPSHOT = Path(__file__).resolve().parents[1] / "prompt_snapshot.json"
_VALUES = {"question": "Why is the sky blue?", "answer": "Rayleigh scattering.", "answer_1": "Because of air.",
           "answer_2": "Scattering of light.", "reference": "Sunlight scatters.", "references": "Answer 1:x\n",
           "candidate": "It is blue.", "n_references": 3, "golden": "Light scatters.", "previous": "P.",
           "sentence": "<SOS> S. <EOS>", "following": "F.", "claim": "The sky is blue.", "evidence": "[1] blue"}


def _digest(prompt) -> str:
    return hashlib.sha256(json.dumps(prompt.messages(), ensure_ascii=False).encode()).hexdigest()


def _pick(fields) -> dict:
    return {f: _VALUES[f] for f in fields}


def current() -> dict[str, dict[str, str]]:
    """What the code makes now: version -> {hash, render (sha256 of the messages)}."""
    out: dict[str, dict[str, str]] = {}
    for v in TEMPLATE_VERSIONS:
        for layout in LAYOUTS:
            try:
                t = get_template(v, layout)
            except ValueError:
                continue  # a layout not offered for this version
            out[f"{v}@{layout}"] = {"hash": t.template_hash, "render": _digest(t.render(**_pick(t.fields)))}
    t = lfq_filter_template()
    out["lfq_filter"] = {"hash": t.template_hash, "render": _digest(t.render(question=_VALUES["question"]))}
    for v in (EXTRACT_VERSION, EXTRACT_V2):
        t = extraction_template(v)
        out[v] = {"hash": t.template_hash, "render": _digest(t.render(**_pick(t.fields)))}
    for v in (VERIFY_VERSION, VERIFY_V2):
        for ternary in (False, True):
            t = verification_template(ternary, v)
            out[f"{v}@ternary={ternary}"] = {"hash": t.template_hash,
                                             "render": _digest(t.render(**_pick(t.fields)))}
    for v in FACTUALITY_VERSIONS:
        for ternary in (False, True):
            out[f"{v}@ternary={ternary}"] = {"hash": factuality_template_hash(ternary, version=v)}
    for v in [v for v in JUDGES.names() if v.startswith("judge.")]:  # the paper's; the protocols' below
        s = JUDGES.get(v)
        q, a1, a2 = _VALUES["question"], _VALUES["answer_1"], _VALUES["answer_2"]
        out[v] = {"hash": s.template_hash, "render": _digest(s.render(q, a1, a2)),
                  "render_no_prefill": _digest(s.render(q, a1, a2, prefill=False)),
                  "tokens": "/".join(s.verdict_tokens), "tie": str(s.tie), "cot": str(s.cot)}
    for v in protocol_versions():
        t = get_protocol_template(v)
        out[f"protocol:{v}"] = {"hash": t.template_hash, "render": _digest(t.render(**_pick(t.fields))),
                                "render_no_prefill": _digest(t.render(prefill=False, **_pick(t.fields)))}
    for v in protocol_judge_versions():
        s = protocol_judge(v)
        q, a1, a2 = _VALUES["question"], _VALUES["answer_1"], _VALUES["answer_2"]
        out[f"protocol_judge:{v}"] = {
            "hash": s.template_hash, "render": _digest(s.render(q, a1, a2, reference=_VALUES["reference"])),
            "tokens": "/".join(s.verdict_tokens), "prefill": s.prefill, "name": s.name,
            "needs_reference": str(s.needs_reference), "reasons": str(s.reasons)}
    return out


def test_every_prompt_keeps_its_hash_and_rendering() -> None:
    want = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    got = current()
    assert sorted(got) == sorted(want), "a prompt version appeared or vanished"
    changed = {k: (want[k], got[k]) for k in want if want[k] != got[k]}
    assert not changed, f"prompt hashes or renderings changed: {changed}"


if __name__ == "__main__" and "--write" in sys.argv:
    SNAPSHOT.write_text(json.dumps(current(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
