"""Build RAG-QA Arena "systems" whose order is known by construction, from an LFRQA annotation file.

For the first N questions, three answers files keyed by qid (JSONL: ``qid``, ``answer``):

- ``copy``: the reference answer itself (against the reference: a tie by construction);
- ``truncated``: its first half of sentences (at least one; less information, nothing wrong);
- ``perturbed``: the truncated copy with the words of each sentence shuffled (the same words, no sense).

So copy >= truncated >= perturbed against the reference, and a judge's win rates and Elo should follow
that order. Usage::

    python scripts/make_arena_systems.py ../shared/data/rag-qa-arena/annotations_science_with_citation.jsonl \\
        --max-questions 30 --out build/arena_systems

then ``lfqa-rubric judge ANNOTATIONS --protocol arena --max-questions 30 --systems copy=OUT/copy.jsonl
truncated=OUT/truncated.jsonl perturbed=OUT/perturbed.jsonl --out ...``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rubric.protocols import read_arena_annotations  # noqa: E402

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def truncated(text: str) -> str:
    sentences = [s for s in _SENTENCE.split(text.strip()) if s]
    return " ".join(sentences[:max(1, len(sentences) // 2)])


def perturbed(text: str, rng: random.Random) -> str:
    out = []
    for s in _SENTENCE.split(truncated(text)):
        words = s.split()
        rng.shuffle(words)
        out.append(" ".join(words))
    return " ".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("annotations", help="annotations_<domain>_with_citation.jsonl")
    p.add_argument("--max-questions", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="folder for copy.jsonl, truncated.jsonl, perturbed.jsonl")
    args = p.parse_args(argv)
    questions = read_arena_annotations(args.annotations).questions[:args.max_questions]
    rng = random.Random(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    systems = {"copy": lambda t: t, "truncated": truncated, "perturbed": lambda t: perturbed(t, rng)}
    for name, make in systems.items():
        lines = [json.dumps({"qid": q.qid, "answer": make(q.reference)}, ensure_ascii=False) for q in questions]
        (out / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    sys.stderr.write(f"wrote {', '.join(f'{n}.jsonl' for n in systems)} ({len(questions)} questions) to {out}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
