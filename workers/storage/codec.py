"""How a score and its provenance are kept on disk and sent between processes: JSON text, exact.

A store's parts (``workers.storage.store``), the job's index (``workers.storage.index``) and the Ray actors'
rows (``workers.cluster.actors``) all hold scores in this form, so a score copied or merged is never decoded
and encoded again on the way.
"""

from __future__ import annotations

import json
from dataclasses import asdict

from rubric.scoring import Provenance, Score

__all__ = ["encode_score", "decode_score", "encode_provenance", "decode_provenance"]


def encode_score(s: Score) -> str:
    # JSON keeps a raw value, an error reason and extras of any mix of types exactly (float repr is exact);
    # the cost (tokens, seconds) travels with the score, so a reused score keeps what it cost
    d = {"raw": s.raw, "error": s.error, "extras": dict(s.extras)}
    if s.cost:
        d["cost"] = dict(s.cost)
    return json.dumps(d, ensure_ascii=False)


def decode_score(text: str) -> Score:
    d = json.loads(text)
    return Score(raw=d["raw"], error=d["error"], extras=d["extras"], cost=d.get("cost") or {})


def encode_provenance(p: Provenance) -> str:
    return json.dumps(asdict(p), sort_keys=True)


def decode_provenance(text: str) -> Provenance:
    return Provenance(**json.loads(text))
