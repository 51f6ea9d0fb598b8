"""A CPU version as one declaration (:class:`CPUVersion`: its formula, the reading it reads, what it needs of the shared
pass, its raw range and description), :func:`register_cpu_version`, which registers its ``RubricSpec`` (backend
``cpu_text``) and its unit together, and the unit formulas the tables (``_versions``, ``_legacy``) declare with.

A formula is ``formula(row, reading) -> Score``: it reads one item's :class:`CPURow` under its declaration's reading.
The scorer (``models.rubric_backends.CPUProfileScorer``) serves whatever :data:`CPU_VERSIONS` holds and never names a
version.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rubric.cpu_profile._coherence import adjacent_coherence, coherence_score, coherence_v2, coherence_v4
from rubric.cpu_profile._formulas import (
    claims_support, completeness_score, completeness_v2, concreteness, coverage_beyond_restating,
    relevance_beyond_restating, relevance_score, relevance_v2, restating, soft_recall, support_score, term_coverage,
)
from rubric.cpu_profile._readings import READINGS
from rubric.cpu_profile._row import CPURow
from rubric.cpu_profile._text import copied_sentences
from rubric.errors import ConfigError
from rubric.registry import Registry
from rubric.scoring import EVIDENCE_CUT, RUBRICS, RubricSpec, Score

__all__ = [
    "Formula", "NEEDS", "CPUVersion", "CPU_VERSIONS", "register_cpu_version", "unregister_cpu_version",
    "versions_needing", "EMBED", "INFORMATION",
]

#: A version's formula: one item's row, read under the declaration's reading, to its score.
Formula = Callable[[CPURow, str], Score]

#: What a version may need of the shared pass besides its reading: "parse" (the answer's spaCy parse), "embed"
#: (sentence embeddings; the question's parse too), "evidence" (the reference and the answer's documents), "reference"
#: (the question's reference alone), "wordfreq" (terms' information weights, :func:`rubric.cpu_profile.term_weight`).
NEEDS: frozenset[str] = frozenset({"parse", "embed", "evidence", "reference", "wordfreq"})

EMBED = frozenset({"parse", "embed"})
INFORMATION = EMBED | {"wordfreq"}


@dataclass(frozen=True)
class CPUVersion:
    """One CPU rubric version, declared once: its spec (backend ``cpu_text``) and its unit.

    Attributes:
        version: ``<name>.<method>.v<N>``; the rubric's name is its first part.
        formula: ``formula(row, reading) -> Score`` over a :class:`CPURow` (for a version that needs nothing, a row
            with only ``item`` set).
        needs: what it needs of the shared pass (:data:`NEEDS`), its reading aside.
        raw: the raw score's declared range ``(raw_min, raw_max)``.
        description: one line for reports (the spec's).
        reading: the reading of the answer it reads (:data:`rubric.cpu_profile.READINGS`): "given", or one without
            its copies, cut, parsed and embedded only when a served version reads it (it needs "embed").
        kind: continuous, binary or ordinal (the spec's).
        extra_signal: an opt-in feature outside the paper's nine rubrics (the spec's).
        model: what its provenance reads: "minilm" (MiniLM + spaCy), "spacy", or a regex pattern (its hash is the
            template hash).

    Raises:
        ConfigError: an unknown need or reading, "embed" without "parse", or a reading without copies but no "embed".
    """

    version: str
    formula: Formula
    needs: frozenset[str]
    raw: tuple[float, float]
    description: str
    reading: str = "given"
    kind: str = "continuous"
    extra_signal: bool = False
    model: str = "minilm"

    def __post_init__(self) -> None:
        unknown = sorted(set(self.needs) - NEEDS)
        if unknown:
            raise ConfigError(f"{self.version}: unknown needs {unknown}; known: {sorted(NEEDS)}")
        if "embed" in self.needs and "parse" not in self.needs:
            raise ConfigError(f"{self.version}: 'embed' needs 'parse' (sentences come from the parse)")
        if self.reading not in READINGS:
            raise ConfigError(f"{self.version}: unknown reading {self.reading!r}; known: {', '.join(READINGS)}")
        if self.reading != "given" and "embed" not in self.needs:
            raise ConfigError(f"{self.version}: reading {self.reading!r} is cut, parsed and embedded in the "
                              "embedding step: it needs 'embed'")

    @property
    def pass_needs(self) -> frozenset[str]:
        """Everything it needs of the shared pass: :attr:`needs` and its reading (unless "given")."""
        return self.needs | ({self.reading} if self.reading != "given" else set())

    @property
    def spec(self) -> RubricSpec:
        """Its rubric spec (``rubric.scoring.RUBRICS``)."""
        return RubricSpec(self.version.split(".", 1)[0], self.version, "cpu_text", float(self.raw[0]),
                          float(self.raw[1]), kind=self.kind, description=self.description,
                          extra_signal=self.extra_signal)

    def score(self, row: CPURow) -> Score:
        """Its formula over one item's row, under its reading."""
        return self.formula(row, self.reading)


#: Every declared CPU version (the tables' and any registered since), by version.
CPU_VERSIONS: Registry[CPUVersion] = Registry("CPU version")


def register_cpu_version(declaration: CPUVersion) -> RubricSpec:
    """Register a CPU version: its spec in ``rubric.scoring.RUBRICS`` and its unit in :data:`CPU_VERSIONS`, together.

    A plugin (or a test) declares a version this way outside the package; ``lfqa-rubric score --rubrics <version>``
    then scores it on the ``cpu_text`` backend like a built-in one.

    Returns:
        The registered spec.

    Raises:
        ConfigError: the version is registered already (in either registry), or its declaration is invalid.
    """
    spec = declaration.spec
    if declaration.version in RUBRICS or declaration.version in CPU_VERSIONS:
        raise ConfigError(f"rubric {declaration.version!r} is already registered")
    RUBRICS.register(spec.version, spec)
    CPU_VERSIONS.register(spec.version, declaration)
    return spec


def unregister_cpu_version(version: str) -> CPUVersion:
    """Take a version :func:`register_cpu_version` registered out of both registries (a plugin's, a test's).

    Raises:
        UnknownNameError: it is not a registered CPU version.
    """
    declaration = CPU_VERSIONS.remove(version)
    RUBRICS.remove(version)
    return declaration


def versions_needing(need: str) -> frozenset[str]:
    """The declared versions that need ``need`` of the shared pass ("parse", "embed", "wordfreq", a reading, ...),
    read from :data:`CPU_VERSIONS` when asked, so a version registered since (a plugin's, a test's) is checked like
    the built-in ones."""
    return frozenset(v for v in CPU_VERSIONS if need in CPU_VERSIONS.get(v).pass_needs)


# --- the unit formulas ------------------------------------------------------------------------------------------

def relevance_v1(r: CPURow, reading: str) -> Score:
    return Score.ok(relevance_score(r.q, r.S), n_sentences=len(r.answer.sentences))


def coherence_v1(r: CPURow, reading: str) -> Score:
    mean, least = coherence_score(r.q, r.S)
    return Score.ok(mean, n_sentences=len(r.answer.sentences), min_link=least)


def completeness_v1(r: CPURow, reading: str) -> Score:
    # v1 reads the reference when the data has one (two definitions under one name: kept for old tables)
    ref = r.reference if r.evidence else []
    cov = term_coverage(r.question.terms, r.answer.lemmas)
    rec = soft_recall(r.R, r.S) if ref else None
    return Score.ok(completeness_score(cov, rec), question_coverage=cov, reference_recall=rec,
                    n_question_terms=len(r.question.terms))


def factuality_v1(r: CPURow, reading: str) -> Score:
    return Score.ok(support_score(r.S, r.E), n_evidence=len(r.evidence), **{EVIDENCE_CUT: r.evidence_cut})


def concrete_share(r: CPURow, reading: str) -> Score:
    a = r.answer
    return Score.ok(concreteness(a.n_concrete, a.n_words), n_concrete=a.n_concrete, n_words=a.n_words,
                    n_entities=a.n_entities)


def cues(read: Callable[[str], list[str]]) -> Formula:
    """use_of_examples over the cues ``read`` finds in the answer's text (it needs nothing of the pass)."""
    def score(r: CPURow, reading: str) -> Score:
        found = read(r.item.answer)
        return Score.ok(1.0 if found else 0.0, n_cues=len(found), cues=", ".join(dict.fromkeys(found)))
    return score


def relevance_given(r: CPURow, reading: str) -> Score:
    keep, info = r.information(reading)
    return Score.ok(relevance_v2(info), n_sentences=len(r.answer.sentences), n_distinct=len(keep))


def completeness_given(r: CPURow, reading: str) -> Score:
    keep, info = r.information(reading)
    return Score.ok(completeness_v2(info), n_sentences=len(r.answer.sentences), n_distinct=len(keep))


def relevance_v7(r: CPURow, reading: str) -> Score:
    a, X = r.read(reading)  # the answer without its copies of earlier text: a sentence said again adds nothing
    value, again = relevance_beyond_restating(r.q, X, a.sentences)
    return Score.ok(value, n_sentences=len(a.sentences), n_restating=again, n_copies=len(r.cut(reading)[1]))


def completeness_v7(r: CPURow, reading: str) -> Score:
    a, X = r.read(reading)
    again = restating(r.q, X)
    cov = coverage_beyond_restating(r.question.terms, a.sentence_terms, again)
    if cov is None:
        return Score.abstain("the question names no content word to cover", n_question_terms=0)
    return Score.ok(cov, n_question_terms=len(r.question.terms), n_restating=int(again.sum()))


def coherence_v8(r: CPURow, reading: str) -> Score:
    got = adjacent_coherence(r.S)
    if got is None:
        return Score.abstain("one sentence: no link between sentences to judge", n_sentences=len(r.answer.sentences))
    return Score.ok(got[0], n_sentences=len(r.answer.sentences), min_link=got[1])


def coherence_given(r: CPURow, reading: str) -> Score:
    w = {t: r.weights(t) for ts in r.answer.sentence_terms for t in ts}
    got = coherence_v2(r.S, r.answer.sentences, r.answer.sentence_terms, w)
    n = len(r.answer.sentences)
    if got is None:
        return Score.abstain("one sentence: no link between sentences to judge", n_sentences=n)
    mean, least, repeats = got
    return Score.ok(mean, n_sentences=n, min_link=least, n_repeated=repeats)


def information_of(formula: Callable[[np.ndarray], float]) -> Formula:
    """relevance or completeness (``formula`` of the sentences' information) over the answer without its copies."""
    def score(r: CPURow, reading: str) -> Score:
        keep, info = r.information(reading)
        return Score.ok(formula(info), n_sentences=len(r.read(reading)[0].sentences), n_distinct=len(keep),
                        n_copies=len(r.cut(reading)[1]))
    return score


def building_coherence(r: CPURow, reading: str) -> Score:
    """coherence v4 and later: v3's links, each times the later sentence's information under ``reading``."""
    keep, info = r.information(reading)
    said = np.zeros(len(r.read(reading)[0].sentences))  # one left out of keep repeats an earlier one: says nothing
    said[keep] = np.clip(info, 0.0, 1.0)
    return _clean_coherence(r, functools.partial(coherence_v4, information=said), reading)


def coherence_links(links: Callable[..., tuple[float, float, int] | None]) -> Formula:
    """coherence v3 or later (``links``) over the answer without its copies."""
    return lambda r, reading: _clean_coherence(r, links, reading)


def _clean_coherence(r: CPURow, links: Callable[..., tuple[float, float, int] | None], reading: str) -> Score:
    """coherence v3 or later (``links``) over the answer without its copies, its terms under ``reading``."""
    a, C = r.read(reading)
    terms = r.terms(reading)
    w = {t: r.weights(t) for ts in terms for t in ts}
    text, copies = r.cut(reading)
    copied = copied_sentences(text, a.sentences, copies)
    got = links(C, texts=a.sentences, terms=terms, weights=w, question=(r.q, r.question.sentences[0]),
                copied=copied, copies=len(copies))
    if got is None:
        return Score.abstain("one sentence: no link between sentences to judge", n_sentences=len(a.sentences))
    mean, least, repeats = got
    return Score.ok(mean, n_sentences=len(a.sentences), min_link=least, n_repeated=repeats, n_copies=len(copies))


def reference_recall(r: CPURow, reading: str) -> Score:
    if not r.reference:
        return Score.abstain("no reference answer for this question", n_reference=0)
    return Score.ok(soft_recall(r.R, r.S), n_reference=len(r.reference), **{EVIDENCE_CUT: r.evidence_cut})


def factuality_v2(r: CPURow, reading: str) -> Score:
    if not r.reference:
        return Score.abstain("no evidence both answers share (the question has no reference answer)", n_evidence=0)
    return Score.ok(soft_recall(r.S, r.R), n_evidence=len(r.reference), **{EVIDENCE_CUT: r.evidence_cut})


def factuality_v3(r: CPURow, reading: str) -> Score:
    if not r.reference:
        return Score.abstain("no evidence both answers share (the question has no reference answer)", n_evidence=0)
    value, n_claims = claims_support(r.S, r.q, r.R)
    return Score.ok(value, n_claims=n_claims, n_evidence=len(r.reference), **{EVIDENCE_CUT: r.evidence_cut})
