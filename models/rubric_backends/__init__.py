"""The rubric backends: the scorers behind ``rubric.scoring``'s non-LLM rubric versions, one module per
backend family (``text``: spaCy and conciseness; ``grammar``: Harper and LanguageTool; ``specificity``: the
SubjectiveQA classifier; ``signals``: length, ROUGE-L, MiniLM similarity; ``evidence``: the retrieval the
factuality rubric reads; ``factuality``: claims and their verdicts; ``cpu_rubrics``: the ``cpu`` preset's
shared pass, serving the versions ``rubric.cpu_profile`` declares),
and ``single_spec`` (what a scorer of exactly one rubric version shares). ``models.backends`` registers
their factories; the G-Eval rubrics' scorer is ``models.llm.scorer``.

This is the room's public face: other rooms import from here, not from its modules.
"""

from models.rubric_backends.text import load_spacy, spacy_candidates, spacy_install_hint, ConcisenessScorer
from models.rubric_backends.specificity import SubjectiveQAScorer
from models.rubric_backends.signals import (
    MINILM_PACKAGE, minilm_folder, minilm_problems, sentence_encoder, minilm_encoder, minilm_revision, LengthScorer,
    RougeLScorer, MiniLMSimilarityScorer,
)
from models.rubric_backends.minilm_onnx import onnx_encoder
from models.rubric_backends.language import english_check
from models.rubric_backends.evidence import EvidenceSource, AttachedDocs, BM25Corpus, SerperSearch
from models.rubric_backends.grammar import (
    HarperGrammarScorer, LanguageToolGrammarScorer, HARPER_LANGUAGE, LANGUAGETOOL_URL_ENV, harper_linter, HarperPass,
    harper_pass, local_languagetool_version,
)
from models.rubric_backends.factuality import SpacySentenceSplitter, claim_generator, FactualityScorer
from models.rubric_backends.fluency import HarperFluencyScorer
from models.rubric_backends.cpu_rubrics import (
    CPUProfileScorer, MAX_EVIDENCE_SENTENCES, MAX_EVIDENCE_CHARS, SPACY_EXCLUDE,
)

__all__ = [
    "load_spacy", "spacy_candidates", "spacy_install_hint", "ConcisenessScorer", "SubjectiveQAScorer", "MINILM_PACKAGE",
    "minilm_folder", "minilm_problems", "sentence_encoder", "minilm_encoder", "minilm_revision", "onnx_encoder",
    "english_check", "LengthScorer", "RougeLScorer", "MiniLMSimilarityScorer", "EvidenceSource", "AttachedDocs",
    "BM25Corpus", "SerperSearch", "HarperGrammarScorer", "LanguageToolGrammarScorer", "HARPER_LANGUAGE",
    "LANGUAGETOOL_URL_ENV", "harper_linter", "HarperPass", "harper_pass", "local_languagetool_version",
    "SpacySentenceSplitter", "claim_generator", "FactualityScorer",
    "CPUProfileScorer", "HarperFluencyScorer",
    "MAX_EVIDENCE_SENTENCES", "MAX_EVIDENCE_CHARS", "SPACY_EXCLUDE",
]
