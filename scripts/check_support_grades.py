"""Does factuality.support.v1 track correctness? WebGLM's graded references, checked against the best one.

    python scripts/check_support_grades.py --data ../shared/data/WEBGLM_50.json

WebGLM gives every question four reference answers, ``ground0`` .. ``ground3``, graded 0-3 (``ground0``
is written to be wrong: "bury it in the backyard for a week"). Each of ``ground0`` .. ``ground2`` is
scored with ``ground3`` as its evidence (the reference), so the support it gets is measured against
an answer known to be right, on answers whose correctness is graded. Printed: mean support per grade,
the share of questions where support orders the three as their grades do (per-question Kendall tau
over three answers), and the same for the length of the answers (does support only follow length?).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO))

from models.backends import build_scorers  # noqa: E402
from rubric.config import ScoringConfig  # noqa: E402
from rubric.io import AnswerItem  # noqa: E402
from rubric.preference import per_question_kendall  # noqa: E402
from rubric.scoring import RUBRICS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "WEBGLM_50.json")
    args = ap.parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    items, grades, qids = [], [], []
    for q, v in data.items():
        for g in (0, 1, 2):
            items.append(AnswerItem(answer_id=f"{q}#{g}", question=q, answer=v[f"ground{g}"], reference=v["ground3"]))
            grades.append(g)
            qids.append(q)
    (scorer,) = build_scorers([RUBRICS.get("factuality.support.v1")], ScoringConfig())
    support = [r["factuality"].raw for r in scorer.score_batch(items)]
    words = [len(it.answer.split()) for it in items]
    print(f"{len(data)} questions, {len(items)} answers scored against their question's ground3\n")
    print("| grade | mean support | mean words |")
    print("|---:|---:|---:|")
    for g in (0, 1, 2):
        s = [x for x, gg in zip(support, grades) if gg == g]
        w = [x for x, gg in zip(words, grades) if gg == g]
        print(f"| {g} | {np.mean(s):.3f} | {np.mean(w):.1f} |")
    for name, values in (("support", support), ("words", words)):
        groups: dict[str, list[tuple[float, float]]] = {}
        for q, x, g in zip(qids, values, grades):
            groups.setdefault(q, []).append((float(g), float(x)))
        k = per_question_kendall(groups)
        print(f"\n{name}: per-question Kendall tau with the grade, {k}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
