"""Rubric declarations: versioned names, raw ranges, rescaling, and which backend computes them.

A rubric's *name* (``coherence``) is its column in feature tables; its *version*
(``coherence.geval.v1``) says exactly how it was computed and is recorded on every row.
Several versions of one rubric may exist (``grammar.harper.v1``, ``grammar.languagetool.v1``);
``DEFAULT_VERSIONS`` says which one a bare name means.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rubric.errors import ConfigError, UnknownNameError
from rubric.registry import Registry
from rubric.rescale import minmax_1_5

__all__ = ["RubricSpec", "RUBRICS", "DEFAULT_VERSIONS", "PAPER_RUBRICS", "resolve_rubrics"]

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
    """

    name: str
    version: str
    backend: str
    raw_min: float
    raw_max: float
    kind: Kind = "continuous"
    description: str = ""

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
_add(RubricSpec("coherence", "coherence.geval.v1", "llm", 1.0, 5.0,
                description="G-Eval coherence (1-5), probability-weighted score"))
_add(RubricSpec("relevance", "relevance.geval.v1", "llm", 1.0, 5.0,
                description="G-Eval relevance (1-5), probability-weighted score"))
_add(RubricSpec("fluency", "fluency.geval.v1", "llm", 1.0, 3.0,
                description="G-Eval fluency (1-3), probability-weighted score"))
_add(RubricSpec("completeness", "completeness.geval.v1", "llm", 1.0, 5.0,
                description="G-Eval-style completeness (1-5), probability-weighted score"))
_add(RubricSpec("use_of_examples", "use_of_examples.yesno.v1", "llm", 0.0, 1.0, kind="binary",
                description="P(yes) / (P(yes) + P(no)) that the answer uses a concrete example"))

_add(RubricSpec("specificity", "specificity.subjectiveqa.v1", "subjectiveqa", 0.0, 1.0, kind="ordinal",
                description="SubjECTive-QA SPECIFIC classifier: 0.5*p_neutral + p_high over 512-token windows"))
_add(RubricSpec("specificity", "specificity.geval.v1", "llm", 1.0, 5.0,
                description="G-Eval-style specificity (1-5), probability-weighted score"))
_add(RubricSpec("factuality", "factuality.veriscore.v1", "factuality", 0.0, 1.0,
                description="VeriScore-style: supported / extracted claims (precision); F1@K in extras"))

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
    "factuality": "factuality.veriscore.v1",
}

#: The paper's nine rubrics, in Table 2's order.
PAPER_RUBRICS: tuple[str, ...] = ("specificity", "grammar", "fluency", "completeness", "coherence",
                                  "relevance", "conciseness", "use_of_examples", "factuality")


def resolve_rubrics(names: str | list[str]) -> list[RubricSpec]:
    """Turn ``"conciseness,grammar.languagetool.v1"`` into specs; bare names take the default version.

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
        else:
            known = ", ".join(sorted(DEFAULT_VERSIONS)) + "; versions: " + ", ".join(RUBRICS.names())
            raise UnknownNameError(f"unknown rubric {n!r}; known: {known}")
        if any(s.name == spec.name for s in specs):
            raise ConfigError(f"rubric {spec.name!r} is given twice")
        specs.append(spec)
    return specs
