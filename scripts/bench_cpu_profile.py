"""The cpu preset's roofline: each shared component alone, then the whole profile, on the same answers (Markdown).

    python scripts/bench_cpu_profile.py --trec 320 --webglm 100

Once per MiniLM encoder (``--encoders fp32,int8``, the default: ``--minilm-encoder``'s settings side by side in one
sitting), the whole profile twice: as ``score`` runs a job, the text pool's scorers (Harper, spaCy's conciseness) in
a process of their own beside the spaCy + MiniLM scorer (``models.scorer_set.ScorerSet`` with its ``TextLane``,
started before the timing), and every scorer one after another in this process, the way it ran before. CPU seconds
of the first include the lane's process.

The scorers of ``score --preset cpu`` are built once (``models.backends.build_scorers``, model loading excluded)
and run once over the answers to warm up and to record what each component is handed: the distinct sentences
MiniLM encodes (per call, with the call's arguments), the texts the profile's spaCy pipeline parses (tagger,
senter, attribute_ruler, lemmatizer, NER; evidence with the senter alone), the answers conciseness's
pipeline tags (tagger, parser, attribute_ruler) and the answers Harper lints (once for grammar and fluency:
``models.rubric_backends.grammar.HarperPass``). Then, in the same sitting (Harper's linter fresh before each timing: it
answers a text it has linted before from memory), each component alone on exactly that work
(MiniLM in sentences/s, spaCy in words/s, Harper in answers/s) and the whole profile through
``models.scorer_set.ScorerSet`` in the job's batches (``--batch-size``, the job's default 32): the path of
``lfqa-rubric score --preset cpu``. The table says what rate each component alone allows in answers/s, which
is slowest, and how far the whole is from it (``% of roofline``) and from the sum of its parts run one after
another; the rest of the whole's time is Python around the models (formulas, wordfreq, row building).

Wall seconds and the process's CPU seconds (all threads) are both printed; the 1-minute load average
before and after each set too: on a machine shared with other jobs a high value means slower numbers,
and ratios are only meaningful within one sitting. ``--repeat`` keeps each timing's fastest run.
``--per-scorer`` adds the whole run's seconds per scorer (the previous version of this script's table).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO))

from models.backends import build_scorers  # noqa: E402
from models.scorer_set import score_items  # noqa: E402
from models.rubric_backends import harper_linter, minilm_revision  # noqa: E402
from rubric.config import MINILM_ENCODERS, ScoringConfig  # noqa: E402
from rubric.io import AnswerItem, content_id  # noqa: E402
from rubric.scoring import RUBRICS  # noqa: E402
from rubric.presets import CPU  # noqa: E402

DATA = REPO.parent / "shared" / "data"


def trec_items(path: Path, limit: int) -> list[AnswerItem]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = [AnswerItem(answer_id=content_id(q, p["passage"]), question=q, answer=p["passage"])
           for q, passages in data.items() for p in passages]
    return out[:limit]


def webglm_items(path: Path, limit: int) -> list[AnswerItem]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = [AnswerItem(answer_id=content_id(q, d["answer"]), question=q, answer=d["answer"], reference=v["ground3"])
           for q, v in data.items() for d in v["doc_list"]]
    return out[:limit]


def _load() -> float:
    return os.getloadavg()[0]


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(wall s, CPU s) of ``fn``'s fastest run of ``repeat``."""
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        best = min(best, (time.perf_counter() - w0, time.process_time() - c0))
    return best


@dataclass
class Work:
    """What each component was handed while the profile scored one set (recorded on a run of it)."""

    encode: list[tuple[list[str], dict]] = field(default_factory=list)  # (sentences, kwargs) per encode call
    parse: list[tuple[list[str], bool]] = field(default_factory=list)  # (distinct texts, senter only) per parse
    tag: list[list[str]] = field(default_factory=list)  # conciseness's answers per batch
    lint: list[str] = field(default_factory=list)  # the answers Harper lints


def record(scorers: list, items: list[AnswerItem], batch_size: int) -> Work:
    """Run the profile once over ``items`` (its warm-up too) and note what each component was handed."""
    from models.rubric_backends import ConcisenessScorer, CPUProfileScorer, HarperGrammarScorer, HarperPass

    work = Work()
    undo: list[Callable[[], None]] = []
    for sc in scorers:
        if isinstance(sc, CPUProfileScorer):
            enc, parse = sc.encoder.encode, sc._parse

            def encode(texts, _enc=enc, **kw):
                work.encode.append((list(texts), kw))
                return _enc(texts, **kw)

            def parse_(texts, read, _parse=parse, **kw):
                work.parse.append((list(dict.fromkeys(texts)), bool(kw.get("senter_only"))))
                return _parse(texts, read, **kw)

            sc.encoder.encode, sc._parse = encode, parse_
            undo.append(lambda sc=sc: (delattr(sc.encoder, "encode"), delattr(sc, "_parse")))
        elif isinstance(sc, ConcisenessScorer):
            work.tag = [[it.answer for it in items[i:i + batch_size]] for i in range(0, len(items), batch_size)]
        elif isinstance(sc, (HarperPass, HarperGrammarScorer)):
            work.lint = [it.answer for it in items]
    try:
        score_items(items, scorers, batch_size=batch_size, progress=False)
    finally:
        for u in undo:
            u()
    return work


def components(scorers: list, work: Work, n: int, repeat: int) -> list[tuple[str, str, float, float, float]]:
    """Each component alone on ``work``: (component, unit, amount, wall s, CPU s)."""
    from models.rubric_backends import HARPER_LANGUAGE, ConcisenessScorer, CPUProfileScorer, harper_linter

    rows = []
    prof = next((sc for sc in scorers if isinstance(sc, CPUProfileScorer)), None)
    if prof is not None and work.encode:
        n_sent = sum(len(t) for t, _ in work.encode)
        w, c = timed(lambda: [prof.encoder.encode(t, **kw) for t, kw in work.encode], repeat)
        rows.append(("MiniLM encode (distinct sentences)", "sentences", n_sent, w, c))
    if prof is not None and work.parse:
        def parse() -> None:
            for texts, senter in work.parse:
                if senter:
                    with prof.nlp.select_pipes(enable=["senter"]):
                        list(prof.nlp.pipe(texts, batch_size=64))
                else:
                    list(prof.nlp.pipe(texts, batch_size=64))
        words = sum(len(t.split()) for texts, _ in work.parse for t in texts)
        w, c = timed(parse, repeat)
        rows.append((f"spaCy profile parse ({', '.join(prof.nlp.pipe_names)})", "words", words, w, c))
    conc = next((sc for sc in scorers if isinstance(sc, ConcisenessScorer)), None)
    if conc is not None and work.tag:
        words = sum(len(t.split()) for b in work.tag for t in b)
        w, c = timed(lambda: [list(conc.nlp.pipe(b, batch_size=conc.batch_size)) for b in work.tag], repeat)
        rows.append((f"spaCy conciseness tags ({', '.join(conc.nlp.pipe_names)})", "words", words, w, c))
    if work.lint:
        linter = harper_linter()

        def lint() -> None:
            linter.forget()  # cold, as in a job: Harper answers a text it has linted before from memory
            [linter.lint(t, language=HARPER_LANGUAGE) for t in work.lint]
        w, c = timed(lint, repeat)
        rows.append(("Harper lint (once per answer)", "answers", len(work.lint), w, c))
    return rows


def _cpu_with_children() -> float:
    """This process's CPU seconds and its live children's (the text lane's process)."""
    import psutil

    total = time.process_time()
    for child in psutil.Process().children():
        try:
            t = child.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            continue
    return total


def timed_whole(scorers: list, items: list[AnswerItem], config: ScoringConfig, lane_versions: list[str] | None,
                repeat: int) -> tuple[float, float, dict[str, float]]:
    """(wall s, CPU s with the lane's process, seconds per scorer) of the whole profile's fastest run of ``repeat``:
    through ``ScorerSet``, with a fresh text lane per run when ``lane_versions`` (started before the clock: a job's
    has started by its first large batch; fresh, so its Harper has linted nothing yet)."""
    from models.scorer_set import ScorerSet, TextLane

    best = (float("inf"), float("inf"), {})
    for _ in range(repeat):
        lane = None
        if lane_versions:
            lane = TextLane(lane_versions, config, min_items=1)
            lane.start()
        sets = ScorerSet(scorers, config.batch_size, lane)
        harper_linter().forget()
        w0, c0 = time.perf_counter(), _cpu_with_children()
        sets.score(items)
        got = (time.perf_counter() - w0, _cpu_with_children() - c0, dict(sets.seconds))
        best = min(best, got, key=lambda t: t[0])
    return best


def bench_set(name: str, items: list[AnswerItem], encoder: str, scorers: list, args, per_scorer: list) -> None:
    """One set's rows of the table for one encoder: each component alone, the whole with its text lane and without."""
    from models.scorer_set import LANE_POOL
    from models.backends import pool_of_backend

    n = len(items)
    words = sum(len(it.answer.split()) for it in items) / n
    load0 = _load()
    work = record(scorers, items, args.batch_size)
    parts = components(scorers, work, n, args.repeat)
    config = ScoringConfig(batch_size=args.batch_size, minilm_encoder=encoder)
    text = [s.version for sc in scorers for s in sc.specs if pool_of_backend(s.backend) == LANE_POOL]
    wholes = {beside: timed_whole(scorers, items, config, text if beside else None, args.repeat)
              for beside in (True, False)}
    for label, secs in wholes[True][2].items():
        per_scorer.append((name, encoder, n, words, label, secs))
    load1 = _load()
    slowest = max(parts, key=lambda p: p[3])
    roof = n / slowest[3]
    lead = f"| {name} | {n} | {words:.0f} | {encoder} "
    for what, unit, amount, w, c in parts:
        mark = " **(slowest)**" if what == slowest[0] else ""
        print(f"{lead}| {what}{mark} | {amount} {unit} | {w:.2f} | {c:.2f} | {amount / w:.0f} {unit}/s "
              f"| {n / w:.1f} | | |")
    w_sum = sum(p[3] for p in parts)
    print(f"{lead}| the parts one after another (sum) | | {w_sum:.2f} | {sum(p[4] for p in parts):.2f} | "
          f"| {n / w_sum:.1f} | {100 * (n / w_sum) / roof:.0f}% | |")
    w, c, _ = wholes[False]
    print(f"{lead}| whole profile, every scorer in one process | {n} answers | {w:.2f} | {c:.2f} "
          f"| | {n / w:.1f} | {100 * (n / w) / roof:.0f}% | |")
    w, c, _ = wholes[True]
    print(f"{lead}| **whole profile** (ScorerSet: text pool in its own process) | {n} answers | {w:.2f} | {c:.2f} "
          f"| | **{n / w:.1f}** | **{100 * (n / w) / roof:.0f}%** | {load0:.2f} / {load1:.2f} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trec", type=int, default=320, help="TREC-DL-NF passages (file order); 0 skips")
    ap.add_argument("--webglm", type=int, default=100, help="WebGLM answers (file order); 0 skips")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--batch-size", type=int, default=ScoringConfig().batch_size)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each timing; the fastest is kept")
    ap.add_argument("--per-scorer", action="store_true", help="also the whole run's seconds per scorer")
    ap.add_argument("--encoders", default=",".join(MINILM_ENCODERS),
                    help=f"MiniLM encoders to measure side by side (of {', '.join(MINILM_ENCODERS)})")
    args = ap.parse_args(argv)

    specs = [RUBRICS.get(v) for v in CPU.rubric_versions.values()]
    encoders = args.encoders.split(",")
    t0 = time.perf_counter()
    built = {e: build_scorers(specs, ScoringConfig(batch_size=args.batch_size, minilm_encoder=e))  # imports torch
             for e in encoders}
    load_s = time.perf_counter() - t0
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    sets = {"TREC-DL-NF": trec_items(args.data / "TREC-DL-NF.json", args.trec) if args.trec else [],
            "WebGLM": webglm_items(args.data / "WEBGLM_50.json", args.webglm) if args.webglm else []}
    print(f"torch threads {torch.get_num_threads()}, OMP_WAIT_POLICY {os.environ.get('OMP_WAIT_POLICY')}, "
          f"os.cpu_count() {os.cpu_count()}, batch size {args.batch_size}, repeat {args.repeat}; "
          f"scorers built in {load_s:.1f} s: {', '.join(type(s).__name__ for s in built[encoders[0]])}; "
          f"encoders: " + "; ".join(f"{e} ({minilm_revision(e)})" for e in encoders) + "\n")
    print("| set | answers | mean words | encoder | what | work | wall s | CPU s | rate | answers/s it allows "
          "| % of roofline | load before / after |")
    print("|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---|")
    per_scorer: list = []
    for name, items in sets.items():
        if items:
            for e in encoders:
                bench_set(name, items, e, built[e], args, per_scorer)
    if args.per_scorer:
        print("\n| set | encoder | answers | mean words | scorer (rubrics), whole profile with its text lane | wall s "
              "| answers/s |")
        print("|---|---|---:|---:|---|---:|---:|")
        for name, e, n, words, label, secs in per_scorer:
            print(f"| {name} | {e} | {n} | {words:.0f} | {label} | {secs:.1f} | {n / secs:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
