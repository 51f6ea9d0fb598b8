"""What each rubric of a score output carries, fitted on one set and evaluated on the others (Markdown).

    python scripts/cpu_profile_table.py --sets trec=OUT1 webglm=OUT2 arena=OUT3 --train trec webglm \
        --n-boot 1000 --out cpu-profile-tables.md

For every training set (a ``score`` output; the model is fitted on its train split with the style
covariates, C = 1, ties dropped: ``fit``'s defaults and the cpu preset's) and every evaluation set:

- the pairs evaluated: the test split when the evaluation set is the training set (in-distribution),
  else every labeled pair of it (no pair of another set was seen in training);
- "longer answer wins", the model of every rubric as fitted and style-controlled, on the same pairs;
- per rubric: the rubric alone (a one-rubric model, no style covariates), the rubric with the style
  covariates predicted style-controlled (what it says when the answers are equally long), and the
  drop-one ablation of the full model (refitted without it; Δ accuracy, paired question bootstrap);
- per set, "is it length?": Spearman ρ of each rubric's 1-5 score with the answer's word count;
- per set and rubric, with no fitting at all: how often the answer the rubric scores higher is the
  preferred one (all pairs where it differs, and the pairs of near-equal length).

Every accuracy carries its question-clustered 95% bootstrap CI; † marks cells with fewer than 30
questions or 50 pairs. A rubric constant on a training split (an abstaining factuality, a fluency no
answer loses points on) is left out of that set's model and says so.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO))

from rubric.errors import ConfigError  # noqa: E402
from rubric.html_report import spearman_matrix  # noqa: E402
from rubric.preference import (MIN_PAIRS_FOR_CI, MIN_QUESTIONS_FOR_CI, drop_one_ablation,  # noqa: E402
                               evaluate_predictions, fit_model, labeled_pairs, longer_answer_wins, model_inputs,
                               read_output_table, read_pairs)
from rubric.tables import table_rubrics  # noqa: E402


#: Pairs of "near-equal length": the length difference under this share of the two lengths' sum.
NEAR_EQUAL = 0.1


def acc(row) -> str:
    lo, hi = row.ci["accuracy"]
    ci = "n/a" if math.isnan(lo) else f"{lo:.3f}, {hi:.3f}"
    small = row.n_questions < MIN_QUESTIONS_FOR_CI or row.n < MIN_PAIRS_FOR_CI
    return f"{row.values['accuracy']:.3f} [{ci}]{' †' if small else ''}"


def length_rho(outdir: Path) -> dict[str, float]:
    """Spearman ρ of each rubric's 1-5 score with the answer's word count, over the set's answers."""
    answers = read_output_table(outdir, "answers")
    rubrics = table_rubrics(read_pairs(outdir))
    cols = {r: answers.column(r).to_pylist() for r in rubrics}
    cols["n_words"] = answers.column("n_words").to_pylist()
    m = spearman_matrix(cols)
    return {r: float(m[i, -1]) for i, r in enumerate(rubrics)}


def sign_rows(name: str, pairs, *, n_boot: int, seed: int) -> list[str]:
    """Per rubric, no fitting: how often the answer it scores higher is the preferred one, over the pairs
    where it differs, on the whole set and on the pairs of near-equal length."""
    cols = {c: pairs.column(c).to_pylist() for c in ("label", "question_id", "n_words_a", "n_words_b")}
    lines = []
    for r in table_rubrics(pairs):
        d = pairs.column(f"d_{r}").to_pylist()
        cells = []
        for near in (False, True):
            keep = [i for i, (lab, x) in enumerate(zip(cols["label"], d)) if lab in ("a", "b") and x
                    and (not near or abs(cols["n_words_a"][i] - cols["n_words_b"][i])
                         < NEAR_EQUAL * (cols["n_words_a"][i] + cols["n_words_b"][i]))]
            if len({cols["question_id"][i] for i in keep}) < 2:
                cells.append("n/a")
                continue
            y = np.array([cols["label"][i] for i in keep], dtype=object)
            pred = np.array(["a" if d[i] > 0 else "b" for i in keep], dtype=object)
            row = evaluate_predictions(r, y, pred, groups=[cols["question_id"][i] for i in keep], n_boot=n_boot,
                                       seed=seed)
            cells.append(f"{acc(row)} ({row.n})")
        lines.append(f"| {name} | {r} | {cells[0]} | {cells[1]} |")
    return lines


def cell(train: str, pairs_t, ev: str, pairs_e, *, n_boot: int, seed: int) -> list[str]:
    split = "test" if ev == train else None
    model, _ = fit_model(pairs_t, split="train", C=1.0, style=True)
    dm_t = model_inputs(model, pairs_t, split="train")
    dm = model_inputs(model, pairs_e, split=split)
    where = f"{ev}'s test split (in-distribution)" if split else f"all of {ev} (transfer)"
    if len(dm.y) == 0:
        return [f"### Trained on {train}, evaluated on {where}", "", "no usable pairs", ""]

    def row(name, pred, y=dm.y, groups=dm.question_id):
        return evaluate_predictions(name, y, pred, groups=groups, n_boot=n_boot, seed=seed)

    longer = row("longer", longer_answer_wins(dm.n_words_a, dm.n_words_b))
    full = row("model", model.predict(dm.X))
    controlled = row("controlled", model.predict(dm.X, style_controlled=True)) if model.style_features_ else None
    lines = [f"### Trained on {train}, evaluated on {where}", "",
             f"{full.n} pairs, {full.n_questions} questions. Longer answer wins: {acc(longer)}. "
             f"All rubrics + style covariates: **{acc(full)}**; style-controlled: **"
             f"{acc(controlled) if controlled else 'no style covariate kept'}**. "
             f"Features: {', '.join(model.features_)}; style: {', '.join(model.style_features_) or 'none'}.", "",
             "| rubric | alone | alone, style-controlled | drop-one Δ accuracy [95% CI] |",
             "|---|---|---|---|"]
    ablation = {a.feature: a for a in drop_one_ablation(model, dm_t.X, dm_t.y, dm.X, dm.y, dm.question_id,
                                                        n_boot=n_boot, seed=seed)}
    for r in table_rubrics(pairs_t):
        if r not in model.features_:
            lines.append(f"| {r} | left out of {train}'s model: {model.metadata_['excluded'].get(r, '?')} | | |")
            continue
        cells = []
        for style in (False, True):
            try:
                m1, _ = fit_model(pairs_t, split="train", C=1.0, features=[r], style=style)
            except ConfigError as e:
                cells.append(f"not fitted: {e}")
                continue
            d1 = model_inputs(m1, pairs_e, split=split)
            pred = m1.predict(d1.X, style_controlled=style and bool(m1.style_features_))
            cells.append(acc(row(r, pred, y=d1.y, groups=d1.question_id)))
        a = ablation[r]
        lo, hi = a.delta.ci
        delta = f"{a.delta.value:+.3f} [{lo:+.3f}, {hi:+.3f}]" if not math.isnan(lo) else f"{a.delta.value:+.3f} [n/a]"
        lines.append(f"| {r} | {cells[0]} | {cells[1]} | {delta} |")
    return lines + [""]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="+", required=True, metavar="NAME=OUT", help="score outputs, named")
    ap.add_argument("--train", nargs="+", required=True, metavar="NAME", help="the sets to fit on")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="also write the Markdown here")
    args = ap.parse_args(argv)
    sets = dict(s.split("=", 1) for s in args.sets)
    tables = {name: labeled_pairs(read_pairs(path))[0] for name, path in sets.items()}
    lines = ["## Is it length? Spearman ρ of each rubric's 1-5 score with answer length (words), per answer", "",
             "| rubric | " + " | ".join(sets) + " |", "|---|" + "---:|" * len(sets)]
    rhos = {name: length_rho(Path(path)) for name, path in sets.items()}
    for r in dict.fromkeys(r for rho in rhos.values() for r in rho):
        lines.append(f"| {r} | " + " | ".join("n/a" if math.isnan(rhos[s].get(r, math.nan))
                                                else f"{rhos[s][r]:+.2f}" for s in sets) + " |")
    lines += ["", "## Each rubric's own direction, no fitting", "",
              "The share of pairs, among those where the rubric's scores differ, in which the answer it scores "
              "higher was preferred [question-clustered 95% CI] (pairs): on the whole set, and on the pairs whose "
              f"lengths differ by less than {NEAR_EQUAL:.0%} of their sum (where length cannot decide).", "",
              "| set | rubric | all pairs | near-equal length |", "|---|---|---|---|"]
    for name, table in tables.items():
        lines += sign_rows(name, table, n_boot=args.n_boot, seed=args.seed)
    lines += ["", "## Accuracy, fitted on one set and evaluated on each", "",
              "Accuracy [question-clustered 95% CI]; † fewer than 30 questions or 50 pairs.", ""]
    for t in args.train:
        for e in sets:
            lines += cell(t, tables[t], e, tables[e], n_boot=args.n_boot, seed=args.seed)
    text = "\n".join(lines)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
