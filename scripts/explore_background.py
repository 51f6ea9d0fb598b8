"""What a background of general questions would do to the cpu preset's reading of what a sentence says about its
question (issue 44's last residual: a topical non-answer that outranks a TREC-DL-NF passage graded 2-3).

    python scripts/explore_background.py ../shared/data/TREC-DL-NF.json --min-grade 2
    python scripts/explore_background.py ../shared/data/WEBGLM_50.json --min-grade 1 --families non_answer,echo,repeat

Any graded answer list (``--format graded``) is read; the families copy the answers graded at least ``--min-grade``.

The preset's relevance, completeness and coherence (relevance.minilm.v4 and after) read each sentence's information
as its cosine with the question, the sentence taken without the question's words, times its novelty
(``rubric.scoring.sentence_information``). Each variant here takes from that cosine a statistic of the same sentence's
cosines with a bank of general questions (``--bank``: 70 questions written for this script, not drawn from the shared
sets), floored at 0: ``mean`` (what every question shares: a projection), ``mean_sd`` (one deviation above it),
``q90`` (its 90th percentile), ``top5`` (the mean of its five nearest questions), ``max`` (closer to the question than
to any in the bank). ``none`` is the preset as it is.

An exploration, not a version: for the run it stands in for ``CPURow.information`` (registering nothing). The
answers are parsed and embedded once; each variant re-reads the same rows. For each variant and rubric it prints
how many copies of each family (``--families``, rubric.validity's, seed 0) outrank the answer they were made from
(by more than validate's tolerance), and the rubric's agreement with the file's grades: over every pair of one
question's answers with different grades, the share it orders as the grades do, a tie counting one half.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.rubric_backends import cpu_rubrics  # noqa: E402
from rubric.io import AnswerItem, RowError, content_id, graded_item, load_graded  # noqa: E402
from rubric.scoring import RUBRICS  # noqa: E402
from rubric.cpu_profile import CPU_VERSIONS, READINGS, CPURow, distinct_sentences, novelty  # noqa: E402
from rubric.presets import CPU  # noqa: E402
from rubric.validity import DEFAULT_TOLERANCE, minimal_pairs, pair_items  # noqa: E402

MAX_ANSWER_CHARS = 10**9  # an exploration reads every answer the file holds
VERSIONS = {name: CPU.rubric_versions[name] for name in ("relevance", "completeness", "coherence")}  # the preset's
STATS = {
    "mean": lambda b: b.mean(),
    "mean_sd": lambda b: b.mean() + b.std(),
    "q90": lambda b: float(np.quantile(b, 0.9)),
    "top5": lambda b: np.sort(b)[-5:].mean(),
    "max": lambda b: b.max(),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", help="a graded answer list (--format graded: TREC-DL-NF's, WebGLM's)")
    ap.add_argument("--min-grade", type=int, default=2, help="the answers the families copy: graded at least this")
    ap.add_argument("--families", default="non_answer,echo")
    ap.add_argument("--stats", default="none,mean,mean_sd,q90,top5,max")
    ap.add_argument("--bank", default=str(Path(__file__).with_name("data") / "background_questions.txt"))
    args = ap.parse_args()
    _, questions = load_graded(args.data, include_references=False)
    every: dict[str, tuple[AnswerItem, int]] = {}
    for gq in questions:
        for _key, value in gq.items if gq.repeats is None else ():
            try:
                text, grade_of = graded_item(value, MAX_ANSWER_CHARS)
            except RowError:
                continue
            every.setdefault(content_id(gq.question, text), (AnswerItem(content_id(gq.question, text), gq.question, text),
                                                             grade_of))
    grade = {k: g for k, (_, g) in every.items()}
    originals = [it for it, g in every.values() if g >= args.min_grade]
    families = tuple(f for f in args.families.split(",") if f)
    pairs = minimal_pairs(originals, families, seed=0)
    items = list({it.answer_id: it for it in [*(it for it, _ in every.values()), *pair_items(pairs)]}.values())

    rows: dict[str, CPURow] = {}
    mode: dict[str, str] = {"stat": "none"}
    preset = CPURow.information

    def information(self, reading: str = "given"):
        rows.setdefault(self.item.answer_id, self)
        if mode["stat"] == "none" or READINGS[reading].copies is None:  # the versions that read ``M``
            return preset(self, reading)
        answer, S = self.read(reading)
        asked, terms = self.asked(reading), self.terms(reading)
        keep = distinct_sentences(S, answer.sentences)
        w = {t: self.weights(t) for t in {t for i in keep for t in terms[i]} | asked}
        info = np.zeros(len(keep))
        for k, i in enumerate(keep):
            m = self.M[reading][i]
            if m is not None:
                info[k] = max(0.0, float(m @ self.q) - STATS[mode["stat"]](bank @ m)) * novelty(terms[i], asked, w)
        return keep, info

    CPURow.information = information
    scorer = cpu_rubrics.CPUProfileScorer(tuple(RUBRICS.get(v) for v in VERSIONS.values()))
    bank_texts = [line.strip() for line in Path(args.bank).read_text(encoding="utf-8").splitlines() if line.strip()]
    bank = scorer.encoder.encode(bank_texts, convert_to_numpy=True, normalize_embeddings=True)
    scorer.score_batch(items)  # parses and embeds once; the rows stay
    by_question: dict[str, list[str]] = {}
    for k, (it, _) in every.items():
        by_question.setdefault(it.question, []).append(k)
    print(f"{len(originals)} answers graded >= {args.min_grade} of {len({it.question for it in originals})} questions, {len(pairs)} copies; "
          f"agreement over the pairs of one question's answers with different grades; bank of {len(bank_texts)}\n")
    print("| background | rubric | " + " | ".join(f"{f} outranks" for f in families) + " | agreement |")
    print("|---|---|" + "---:|" * (len(families) + 1))
    for stat in args.stats.split(","):
        mode["stat"] = stat
        for rubric, version in VERSIONS.items():
            unit = CPU_VERSIONS.get(version)
            raw = {}
            for k, r in rows.items():
                r._info.clear()
                raw[k] = unit.score(r).raw
            cells = []
            for f in families:
                got = [(raw.get(p.original_id), raw.get(p.perturbed_id)) for p in pairs if p.family == f]
                got = [(o, c) for o, c in got if o is not None and c is not None]
                cells.append(f"{sum(c > o + DEFAULT_TOLERANCE for o, c in got)} / {len(got)}")
            agree = total = 0.0
            for keys in by_question.values():
                for a in keys:
                    for b in keys:
                        if grade[a] > grade[b] and raw.get(a) is not None and raw.get(b) is not None:
                            total += 1
                            agree += 1.0 if raw[a] > raw[b] else 0.5 if raw[a] == raw[b] else 0.0
            print(f"| {stat} | {rubric} | " + " | ".join(cells) + f" | {agree / total:.3f} |", flush=True)
    CPURow.information = preset


if __name__ == "__main__":
    main()
