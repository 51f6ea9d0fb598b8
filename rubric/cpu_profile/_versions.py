"""The ``cpu`` preset's CPU versions (``rubric.presets.CPU``), one declaration each: formula, what it needs of the
shared pass, raw range, reading, description. Each registers its spec (``rubric.scoring.RUBRICS``, backend ``cpu_text``) and
its unit (:data:`rubric.cpu_profile.CPU_VERSIONS`) together. Chosen by people (issue 56): each by its agreement with
people's ratings of its aspect (``rubric/data/agreement.json``, docs/cpu-profile.md). ``information.minilm.v1`` is an
extra signal: relevance.minilm.v6's reading under its own name. Every other registered version is ``_legacy``'s.
"""

from __future__ import annotations

from rubric.cpu_profile._formulas import relevance_v2
from rubric.cpu_profile._text import EXAMPLE_CUE_V2, example_cues_v2
from rubric.cpu_profile._units import (
    EMBED, INFORMATION, CPUVersion, coherence_given, completeness_v7, concrete_share, cues, factuality_v3,
    information_of, register_cpu_version, relevance_v7,
)

__all__ = ["VERSIONS"]

#: The preset's versions and its CPU signal.
VERSIONS: tuple[CPUVersion, ...] = (
    CPUVersion("specificity.concrete.v1", concrete_share, frozenset({"parse"}), (0.0, 1.0), model="spacy", description=(
        "share of words inside a named entity, numbers or proper nouns (spaCy en_core_web_sm)")),
    CPUVersion("coherence.minilm.v2", coherence_given, INFORMATION, (0.0, 1.0), description=(
        "mean over adjacent answer sentences of their MiniLM cosine (floored at 0; no question link) times the "
        "later one's share of new information; a link into a repeated sentence counts 0; abstains with fewer than "
        "two sentences")),
    CPUVersion("factuality.support.v3", factuality_v3, EMBED | {"reference"}, (0.0, 1.0), description=(
        "factuality.support.v2 over the answer's claims: a sentence that restates the question (about it, MiniLM "
        "cosine >= 0.5, and closer to it than to any evidence sentence) asserts nothing and is no claim, and an "
        "answer with no claim scores 0 (the paper's rule), never supported; abstains without a reference")),
    CPUVersion("completeness.coverage.v7", completeness_v7, INFORMATION, (0.0, 1.0), reading="open_words", description=(
        "share of the question's content lemmas (non-stop nouns, proper nouns, verbs, adjectives, numbers) that the"
        " sentences of the answer without its copies which do not restate the question (MiniLM cosine with it below"
        " 0.8) say: completeness.coverage.v1's question coverage without the reference, one definition on every "
        "data (v1 read the reference where the data had one), an echo covering nothing; abstains on a question that"
        " names none")),
    CPUVersion("relevance.minilm.v7", relevance_v7, INFORMATION, (-1.0, 1.0), reading="open_words", description=(
        "relevance.minilm.v1 (the question's cosine with the centroid of the answer's sentences) over the distinct "
        "sentences of the answer without its copies of earlier text (one said again counts once) that do not "
        "restate the question (MiniLM cosine with it below 0.8); an answer that only restates it scores 0")),
    CPUVersion("use_of_examples.cues.v2", cues(example_cues_v2), frozenset(), (0.0, 1.0),
              kind="binary", model=EXAMPLE_CUE_V2.pattern, description=(
        "1 when an example cue introduces an example (for example, such as, imagine you, an example of, ...; no "
        "negated or first-person cue), else 0")),
    CPUVersion("information.minilm.v1", information_of(relevance_v2), INFORMATION, (0.0, 1.0),
              reading="open_words", extra_signal=True, description=(
        "mean over the answer's distinct sentences (copies of earlier text cut) of what each says besides the "
        "question: the MiniLM cosine of the question and the sentence without the question's words but its function"
        " words, times the share of the sentence's information the question lacks (relevance.minilm.v6's reading, "
        "under its own name)")),
)

for _declaration in VERSIONS:
    register_cpu_version(_declaration)
