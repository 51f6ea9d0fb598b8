"""Throughput benchmark of the LLM rubrics: the reference code's way against ours.

(a) ``reference``: what the paper's reference code does - for every preference *pair*, each of its
    two answers is scored again, one rubric prompt per call, through transformers, no caching.
(b) ``ours``: unique answers only (``rubric.io.records.explode``), all rubric prompts of a batch in one
    vLLM call, prefix caching on; in the paper's layout and in the answer-first layout.

Reported per run: answers/s (unique answers covered per second), prompts/s (prompts sent per
second), prompt tokens/s (prefill tokens sent per second, cached ones included: the number a GPU
run sets against the hardware's limit) and the share of prompt tokens served from the prefix cache.
Entry point: ``scripts/bench_llm.py`` (benchmark code, kept out of the installed packages).
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from models.llm import LLMRubricScorer
from rubric.errors import InputError
from rubric.scoring import ChatPrompt
from rubric.io import PairRecord, explode
from rubric.scoring import RubricSpec

__all__ = ["RunResult", "load_pairs", "run_reference", "run_ours", "correlations", "format_table"]

log = logging.getLogger(__name__)


@dataclass
class RunResult:
    """One benchmark run's counts, time and scores (answer_id -> rubric -> raw or None)."""

    name: str
    seconds: float = 0.0
    unique_answers: int = 0
    answer_scorings: int = 0
    prompts: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    #: 1-minute load average at the end of the run: on a shared machine, a high value means slower numbers.
    load: float = math.nan
    scores: dict[str, dict[str, float | None]] = field(default_factory=dict)

    def rate(self, n: int) -> float:
        return n / self.seconds if self.seconds > 0 else math.nan


def load_pairs(path: str | Path, questions: int) -> list[PairRecord]:
    """All answer pairs of the first ``questions`` questions of a WebGLM-style JSON file.

    The file maps question -> ``{"doc_list": [{"answer", "model", "label"}, ...]}``; every two
    answers of a question make a pair (3 answers -> 3 pairs). Labels are not used here.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read benchmark data {path}: {e}") from e
    pairs: list[PairRecord] = []
    for row, (q, rec) in enumerate(itertools.islice(data.items(), questions)):
        answers = [d["answer"] for d in rec.get("doc_list", []) if d.get("answer", "").strip()]
        for k, (a, b) in enumerate(itertools.combinations(answers, 2)):
            pairs.append(PairRecord(pair_id=f"{row}-{k}", question=q, answer_a=a, answer_b=b, label="tie",
                                    source=str(path), row=row))
    return pairs


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover - not on every platform
        return math.nan


def _stats(engine) -> tuple[int, int]:
    s = getattr(engine, "last_stats", None) or {}
    return int(s.get("prompt_tokens", 0)), int(s.get("cached_tokens", 0))


def warm_up(engine) -> None:
    """One short call, so one-time start-up work is not timed."""
    engine.score_token_probs([ChatPrompt("Rate: good.", "- Score: ")], ("1", "2"))


def run_reference(pairs: Sequence[PairRecord], specs: Sequence[RubricSpec], engine, *,
                  layout: str = "paper") -> RunResult:
    """(a) Every pair's two answers, scored again per pair, one rubric prompt per engine call."""
    scorers = [LLMRubricScorer([s], engine, layout=layout) for s in specs]
    res = RunResult("reference")
    t0 = time.perf_counter()
    for p in pairs:
        for item in explode([p]):
            res.answer_scorings += 1
            for sc in scorers:
                out = sc.score_batch([item])[0]
                res.prompts += 1
                tok, cached = _stats(engine)
                res.prompt_tokens += tok
                res.cached_tokens += cached
                res.scores.setdefault(item.answer_id, {}).update({k: v.raw for k, v in out.items()})
    res.seconds = time.perf_counter() - t0
    res.unique_answers = len(res.scores)
    res.load = _load()
    return res


def run_ours(pairs: Sequence[PairRecord], specs: Sequence[RubricSpec], engine, *, layout: str,
             batch_size: int, name: str) -> RunResult:
    """(b) Unique answers, ``batch_size`` answers per scorer call, all their rubric prompts in one engine call."""
    scorer = LLMRubricScorer(specs, engine, layout=layout)
    items = explode(list(pairs))
    res = RunResult(name, unique_answers=len(items), answer_scorings=len(items))
    t0 = time.perf_counter()
    for start in range(0, len(items), batch_size):
        batch = items[start:start + batch_size]
        out = scorer.score_batch(batch)
        res.prompts += len(batch) * len(specs)
        tok, cached = _stats(engine)
        res.prompt_tokens += tok
        res.cached_tokens += cached
        for item, r in zip(batch, out):
            res.scores[item.answer_id] = {k: v.raw for k, v in r.items()}
    res.seconds = time.perf_counter() - t0
    res.load = _load()
    return res


def _pearson(x: Sequence[float], y: Sequence[float]) -> float:
    n = len(x)
    if n < 3:
        return math.nan
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else math.nan


def correlations(a: RunResult, b: RunResult, rubrics: Sequence[str]) -> dict[str, tuple[float, float]]:
    """Per rubric: (Pearson r, max |difference|) of two runs' raw scores over the answers both scored."""
    return {r: (pr, dmax) for r, (_, pr, dmax, _) in compare_scores(a, b, rubrics).items()}


def format_table(runs: Sequence[RunResult], baseline: RunResult) -> str:
    """A plain-text (Markdown) table of the runs, with speed-up over ``baseline`` in answers/s."""
    head = ("| run | s | unique answers | answer scorings | prompts | answers/s | prompts/s | prompt tok/s "
            "| cached tok % | x answers/s vs (a) | load avg |")
    lines = [head, "|" + "---|" * 11]
    for r in runs:
        cached = 100.0 * r.cached_tokens / r.prompt_tokens if r.prompt_tokens else 0.0
        speedup = r.rate(r.unique_answers) / baseline.rate(baseline.unique_answers)
        lines.append(f"| {r.name} | {r.seconds:.1f} | {r.unique_answers} | {r.answer_scorings} | {r.prompts} "
                     f"| {r.rate(r.unique_answers):.3f} | {r.rate(r.prompts):.2f} | {r.rate(r.prompt_tokens):.0f} "
                     f"| {cached:.0f} | {speedup:.2f} | {r.load:.1f} |")
    return "\n".join(lines)


def transformers_kwargs(*, device: str | None = None, dtype: str | None = None, batch_size: int | None = None,
                        batch_tokens: int | None = None) -> dict:
    """The transformers engine's kwargs a bench's ``--device/--dtype/--engine-batch-*`` options set (unset ones left out)."""
    given = {"device": device, "dtype": dtype, "batch_size": batch_size, "max_batch_tokens": batch_tokens}
    return {k: v for k, v in given.items() if v}


def device_line() -> str:
    """Where the run ran: torch's CUDA device name and version, or the CPU count."""
    try:
        import torch
    except ImportError:  # pragma: no cover - the bench needs torch for either engine
        return f"{os.cpu_count()} CPU cores"
    if torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}"
    return f"{os.cpu_count()} CPU cores, torch {torch.__version__}"


def save_scores(path: str | Path, run: RunResult, *, meta: dict) -> None:
    """Write a run's raw scores as JSON ``{"name", "meta", "scores": {answer_id: {rubric: raw}}}``."""
    Path(path).write_text(json.dumps({"name": run.name, "meta": meta, "scores": run.scores}, indent=1),
                          encoding="utf-8")


def load_scores(path: str | Path) -> RunResult:
    """A ``save_scores`` file as a ``RunResult`` holding only its name and scores."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        meta = data.get("meta", {})
        res = RunResult(f"{data['name']}{meta.get('where', '')}")
        res.scores = {str(k): dict(v) for k, v in data["scores"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"cannot read saved scores {path}: {e}") from e
    return res


def compare_scores(a: RunResult, b: RunResult, rubrics: Sequence[str]) -> dict[str, tuple[int, float, float, float]]:
    """Per rubric: (answers both scored, Pearson r, max |diff|, mean |diff|) of two runs' raw scores."""
    out: dict[str, tuple[int, float, float, float]] = {}
    for r in rubrics:
        diffs, xs, ys = [], [], []
        for aid, sa in a.scores.items():
            va, vb = sa.get(r), b.scores.get(aid, {}).get(r)
            if va is not None and vb is not None:
                xs.append(va)
                ys.append(vb)
                diffs.append(abs(va - vb))
        out[r] = (len(diffs), _pearson(xs, ys), max(diffs, default=math.nan),
                  sum(diffs) / len(diffs) if diffs else math.nan)
    return out
