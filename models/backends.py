"""The backend registry: a backend name -> a factory that builds a ``Scorer`` for some rubric specs.

Rubric specs (``rubric.specs``) name their backend; the runner groups the requested specs by
backend and calls each factory once, so one engine serves all the rubrics that share it.
Factories import their heavy modules lazily so ``import models.backends`` stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rubric.config import ScoringConfig
from rubric.registry import Registry
from rubric.scoring import Scorer
from rubric.specs import RubricSpec

__all__ = ["BACKENDS", "BackendFactory", "register_backend", "build_scorers"]

BackendFactory = Callable[[tuple[RubricSpec, ...], ScoringConfig], Scorer]

BACKENDS: Registry[BackendFactory] = Registry("backend")


def register_backend(name: str) -> Callable[[BackendFactory], BackendFactory]:
    def deco(fn: BackendFactory) -> BackendFactory:
        BACKENDS.register(name, fn)
        return fn

    return deco


def build_scorers(specs: Sequence[RubricSpec], config: ScoringConfig) -> list[Scorer]:
    """One scorer per backend, in the order the backends first appear in ``specs``."""
    groups: dict[str, list[RubricSpec]] = {}
    for s in specs:
        groups.setdefault(s.backend, []).append(s)
    return [BACKENDS.get(name)(tuple(group), config) for name, group in groups.items()]


@register_backend("spacy")
def _spacy(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> Scorer:
    from models.text import ConcisenessScorer

    return ConcisenessScorer(specs, spacy_model=config.spacy_model)


@register_backend("harper")
def _harper(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> Scorer:
    from models.grammar import HarperGrammarScorer

    return HarperGrammarScorer(specs)


@register_backend("languagetool")
def _languagetool(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> Scorer:
    from models.grammar import LanguageToolGrammarScorer

    return LanguageToolGrammarScorer(specs, url=config.languagetool_url, threads=config.languagetool_threads)


@register_backend("llm")
def _llm(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> Scorer:
    from models.llm.scorer import LLMRubricScorer

    return LLMRubricScorer.from_config(specs, config)


@register_backend("subjectiveqa")
def _subjectiveqa(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> Scorer:
    from models.specificity import SubjectiveQAScorer

    return SubjectiveQAScorer(specs, model=config.specificity_model, batch_size=config.batch_size)


@register_backend("factuality")
def _factuality(specs: tuple[RubricSpec, ...], config: ScoringConfig) -> Scorer:
    from models.evidence import AttachedDocs, BM25Corpus
    from models.factuality import FactualityScorer, SpacySentenceSplitter
    from models.llm.scorer import build_engine

    evidence = (BM25Corpus.from_file(config.factuality_corpus, text_field=config.factuality_text_field,
                                     id_field=config.factuality_id_field, cache_dir=config.evidence_cache_dir)
                if config.factuality_corpus else AttachedDocs())
    # same logprobs_k as the LLM rubrics, so both get the one shared engine
    engine = build_engine(config, logprobs_k=config.llm_logprobs_k)
    return FactualityScorer(specs, engine, SpacySentenceSplitter(config.spacy_model), evidence,
                            k=config.factuality_k, f1_k=config.factuality_f1_k, ternary=config.factuality_ternary)
