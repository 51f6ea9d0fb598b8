"""The rubric backends: the scorers behind ``rubric.scoring``'s non-LLM rubric versions, one module per
backend family (``text``: spaCy and conciseness; ``grammar``: Harper and LanguageTool; ``specificity``: the
SubjectiveQA classifier; ``signals``: length, ROUGE-L, MiniLM similarity; ``evidence``: the retrieval the
factuality rubric reads; ``factuality``: claims and their verdicts; ``cpu_rubrics``: the ``cpu`` preset's
shared pass, serving the versions ``rubric.cpu_profile`` declares),
and ``single_spec`` (what a scorer of exactly one rubric version shares). ``models.backends`` registers
their factories; the G-Eval rubrics' scorer is ``models.llm.scorer``.

This is the room's public face: other rooms import from here, not from its modules.
"""

from models.rubric_backends.single_spec import SingleSpecScorer
from models.rubric_backends.text import (
    load_spacy, pos_pipeline, senter_pipeline, pipeline_id, ConcisenessScorer, CONCISENESS_VERSION, POS_EXCLUDE,
)
from models.rubric_backends.specificity import SubjectiveQAScorer
from models.rubric_backends.signals import (
    LENGTH_VERSION, ROUGE_VERSION, QA_SIMILARITY_VERSION, REF_SIMILARITY_VERSION, MINILM_MODEL_ID, MINILM_PACKAGE,
    NO_REFERENCE, minilm_folder, minilm_problems, sentence_encoder, LengthScorer, RougeLScorer, MiniLMSimilarityScorer,
)
from models.rubric_backends.evidence import (
    EvidenceSource, tokenize, split_passages, RetrievalCache, AttachedDocs, BM25Corpus, SerperSearch, serper_snippets,
)
from models.rubric_backends.grammar import (
    HarperGrammarScorer, LanguageToolGrammarScorer, HARPER_VERSION, LANGUAGETOOL_VERSION, HARPER_LANGUAGE,
    LANGUAGETOOL_URL_ENV, harper_linter,
)
from models.rubric_backends.factuality import (
    TextGenerator, SentenceSplitter, SpacySentenceSplitter, VLLMClaimGenerator, claim_generator, FactualityScorer,
    claims_table,
)
from models.rubric_backends.fluency import HarperFluencyScorer
from models.rubric_backends.cpu_rubrics import (
    CPUProfileScorer, MAX_EVIDENCE_SENTENCES, MAX_EVIDENCE_CHARS, SPACY_EXCLUDE,
)

__all__ = [
    "SingleSpecScorer", "load_spacy", "pos_pipeline", "senter_pipeline", "pipeline_id", "ConcisenessScorer",
    "CONCISENESS_VERSION", "POS_EXCLUDE", "SubjectiveQAScorer", "LENGTH_VERSION", "ROUGE_VERSION",
    "QA_SIMILARITY_VERSION", "REF_SIMILARITY_VERSION", "MINILM_MODEL_ID", "MINILM_PACKAGE", "NO_REFERENCE",
    "minilm_folder", "minilm_problems", "sentence_encoder", "LengthScorer", "RougeLScorer", "MiniLMSimilarityScorer",
    "EvidenceSource", "tokenize", "split_passages", "RetrievalCache", "AttachedDocs", "BM25Corpus", "SerperSearch",
    "serper_snippets", "HarperGrammarScorer", "LanguageToolGrammarScorer", "HARPER_VERSION", "LANGUAGETOOL_VERSION",
    "HARPER_LANGUAGE", "LANGUAGETOOL_URL_ENV", "harper_linter", "TextGenerator", "SentenceSplitter",
    "SpacySentenceSplitter", "VLLMClaimGenerator", "claim_generator", "FactualityScorer", "claims_table",
    "CPUProfileScorer", "HarperFluencyScorer", "MAX_EVIDENCE_SENTENCES", "MAX_EVIDENCE_CHARS", "SPACY_EXCLUDE",
]
