"""Preference accuracy of several models, each fitted on one set and evaluated in-distribution and across (Markdown).

    python scripts/preference_grid.py --sets trec=OUT1 webglm=OUT2 \
        --models "nine=specificity,grammar,fluency,completeness,coherence,relevance,conciseness,use_of_examples,factuality" \
                 "nine+qa=...,qa_similarity" --missing mean,zero,drop --out grid.md

Each model (a name and its rubric columns, taken from the score outputs as scored) is fitted on each set's train split
(``fit``'s defaults: style covariates, C = 1, ties dropped; ``--missing``: how a rubric missing on one answer is read)
and evaluated on the set's own test split (in-distribution) and on every labelled pair of each other set (no pair of
which was seen in training). Every cell: accuracy [question-clustered 95% CI] (pairs), "longer answer wins" on the same
pairs beside it; † marks fewer than 30 questions or 50 pairs. Every model of a column is scored on the same pairs unless
its missing-value rule drops some (``drop``): the pairs column says so.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO))

from rubric.preference import (MIN_PAIRS_FOR_CI, MIN_QUESTIONS_FOR_CI, evaluate_predictions,  # noqa: E402
                               fit_model, labeled_pairs, longer_answer_wins, model_inputs, read_pairs)
from rubric.tables import MISSING_MODES  # noqa: E402


def _cell(row, n_boot) -> str:
    lo, hi = row.ci["accuracy"]
    small = row.n_questions < MIN_QUESTIONS_FOR_CI or row.n < MIN_PAIRS_FOR_CI
    ci = "n/a" if math.isnan(lo) else f"{lo:.3f}, {hi:.3f}"
    return f"{row.values['accuracy']:.3f} [{ci}]{' †' if small else ''} ({row.n})"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sets", nargs="+", required=True, metavar="NAME=OUT", help="score outputs, each a name")
    p.add_argument("--models", nargs="+", required=True, metavar="NAME=RUBRIC,...", help="the models' columns")
    p.add_argument("--missing", default="mean", help=f"comma-separated, of {', '.join(MISSING_MODES)}")
    p.add_argument("--n-boot", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="also write the table here")
    args = p.parse_args(argv)
    sets = dict(s.split("=", 1) for s in args.sets)
    tables = {name: labeled_pairs(read_pairs(out))[0] for name, out in sets.items()}
    models = [(m.split("=", 1)[0], m.split("=", 1)[1].split(",")) for m in args.models]
    cells = [(t, e) for t in sets for e in sets]
    head = "| model | missing | " + " | ".join(f"{t} → {e}" + (" (test split)" if t == e else " (all pairs)")
                                             for t, e in cells) + " |"
    lines = [head, "|---|---|" + "---|" * len(cells)]
    longer = {}
    for name, features in models:
        for missing in args.missing.split(","):
            row = [name, missing]
            for t, e in cells:
                model, _ = fit_model(tables[t], split="train", features=features, missing=missing)
                dm = model_inputs(model, tables[e], split="test" if t == e else None)
                got = evaluate_predictions("model", dm.y, model.predict(dm.X), groups=dm.question_id,
                                           n_boot=args.n_boot, seed=args.seed)
                row.append(_cell(got, args.n_boot))
                if missing != "drop":  # every pair: the baseline on the same pairs
                    base = evaluate_predictions("longer", dm.y, longer_answer_wins(dm.n_words_a, dm.n_words_b),
                                                groups=dm.question_id, n_boot=args.n_boot, seed=args.seed)
                    longer[(t, e)] = _cell(base, args.n_boot)
            lines.append("| " + " | ".join(row) + " |")
    lines.append("| longer answer wins | | " + " | ".join(longer.get(c, "n/a") for c in cells) + " |")
    text = "\n".join(lines) + "\n\n† fewer than 30 questions or 50 pairs: the question-clustered CI is unreliable.\n"
    sys.stdout.write(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
