"""Every other CPU version, one declaration each, still registered: superseded versions (so stored scores and old
tables read again and ``lfqa-rubric score`` can make them) and the opt-in variants the ``cpu`` preset does not use
(``completeness.reference.v1``, which reads the reference; ``coherence.minilm.v8``). What each answered and why it was
replaced is in ``rubric.cpu_profile._formulas``' docstring and docs/cpu-profile.md. A change to a formula is a new
version in ``_versions``, never an edit here.
"""

from __future__ import annotations

from rubric.cpu_profile._coherence import coherence_v3
from rubric.cpu_profile._formulas import completeness_v2, relevance_v2
from rubric.cpu_profile._text import EXAMPLE_CUE, example_cues
from rubric.cpu_profile._units import (
    EMBED, INFORMATION, CPUVersion, building_coherence, coherence_links, coherence_v1, coherence_v8, completeness_given,
    completeness_v1, cues, factuality_v1, factuality_v2, information_of, reference_recall, register_cpu_version,
    relevance_given, relevance_v1,
)

__all__ = ["LEGACY"]

#: The versions the preset no longer uses, in the order they were made.
LEGACY: tuple[CPUVersion, ...] = (
    CPUVersion("relevance.minilm.v1", relevance_v1, EMBED, (-1.0, 1.0), description=(
        "cosine of the question's and the answer's embedding (normalised mean of its sentences'), all-MiniLM-L6-v2")),
    CPUVersion("coherence.minilm.v1", coherence_v1, EMBED, (-1.0, 1.0), description=(
        "mean cosine of adjacent units (question, sentence 1, ..., sentence n), all-MiniLM-L6-v2; the least link in"
        " extras")),
    CPUVersion("completeness.coverage.v1", completeness_v1, EMBED | {"evidence", "reference"}, (0.0, 1.0), description=(
        "share of the question's content lemmas in the answer, averaged with the reference's sentence recall "
        "(MiniLM) where the question has a reference")),
    CPUVersion("factuality.support.v1", factuality_v1, EMBED | {"evidence"}, (0.0, 1.0), description=(
        "mean best MiniLM cosine of each answer sentence with the evidence's sentences (reference answer, attached "
        "documents); 0.5 (abstains) without evidence, n_evidence = 0 in extras")),
    CPUVersion("use_of_examples.cues.v1", cues(example_cues), frozenset(), (0.0, 1.0),
              kind="binary", model=EXAMPLE_CUE.pattern, description=(
        "1 when an explicit example cue (for example, such as, e.g., imagine, ...) is in the answer, else 0; the "
        "cues in extras")),
    CPUVersion("relevance.minilm.v2", relevance_given, INFORMATION, (0.0, 1.0), description=(
        "mean over the answer's distinct sentences of cosine with the question (MiniLM, floored at 0) times the "
        "share of the sentence's content lemmas the question lacks: restating the question is not answering it")),
    CPUVersion("completeness.coverage.v2", completeness_given, INFORMATION, (0.0, 1.0), description=(
        "reference-free: 1 - prod(1 - information) over the answer's distinct sentences, a sentence's information "
        "being relevance.minilm.v2's")),
    CPUVersion("completeness.reference.v1", reference_recall, EMBED | {"reference"}, (0.0, 1.0), description=(
        "opt-in, reads the reference: mean over the reference's sentences of their best MiniLM cosine with an "
        "answer sentence (floored at 0); abstains without a reference")),
    CPUVersion("factuality.support.v2", factuality_v2, EMBED | {"reference"}, (0.0, 1.0), description=(
        "mean best MiniLM cosine of each answer sentence with the question's reference answer's sentences (evidence"
        " both answers share); abstains without a reference")),
    CPUVersion("coherence.minilm.v8", coherence_v8, EMBED, (-1.0, 1.0), description=(
        "mean cosine of adjacent answer sentences (MiniLM), coherence.minilm.v1's links without its link to the "
        "question; the least link in extras; abstains on one sentence")),
    CPUVersion("relevance.minilm.v3", information_of(relevance_v2), INFORMATION, (0.0, 1.0),
              reading="clean", description=(
        "mean over the distinct sentences of the answer without its word-for-word copies of the MiniLM cosine of "
        "the question and the sentence with the question's words taken out (floored at 0) times the share of the "
        "sentence's information the question lacks: what it says besides the question")),
    CPUVersion("coherence.minilm.v3", coherence_links(coherence_v3), INFORMATION, (0.0, 1.0),
              reading="clean", description=(
        "coherence.minilm.v2's links over the answer without its word-for-word copies; a link into a sentence a "
        "copy was cut from or that restates the question counts 0, and each copy is one more link of 0; abstains "
        "without any link")),
    CPUVersion("completeness.coverage.v3", information_of(completeness_v2), INFORMATION, (0.0, 1.0),
              reading="clean", description=(
        "reference-free: 1 - prod(1 - information) over the distinct sentences, a sentence's information being "
        "relevance.minilm.v3's")),
    CPUVersion("coherence.minilm.v4", building_coherence, INFORMATION, (0.0, 1.0), reading="clean", description=(
        "coherence.minilm.v3's links, each times the later sentence's information about the question "
        "(relevance.minilm.v3's: what it says besides the question's words): a step counts as it builds information"
        " about the question; abstains without any link")),
    CPUVersion("relevance.minilm.v4", information_of(relevance_v2), INFORMATION, (0.0, 1.0),
              reading="words", description=(
        "relevance.minilm.v3, with the question's words read whole (its nouns, verbs, adjectives and numbers, stop "
        'list or not, and words written with letters and digits such as "ww1"), and words with digits among each '
        'sentence\'s terms; a copy said right after itself is cut from two words even with no break between ("- glue'
        ' - glue")')),
    CPUVersion("completeness.coverage.v4", information_of(completeness_v2), INFORMATION, (0.0, 1.0),
              reading="words", description=(
        "reference-free: 1 - prod(1 - information) over the distinct sentences, a sentence's information being "
        "relevance.minilm.v4's")),
    CPUVersion("coherence.minilm.v5", building_coherence, INFORMATION, (0.0, 1.0), reading="lines", description=(
        "coherence.minilm.v4 over the answer's sentences cut at line breaks too (a list's items are sentences), "
        "with relevance.minilm.v4's reading of what each says (the question's words read whole); abstains without "
        "any link")),
    CPUVersion("relevance.minilm.v5", information_of(relevance_v2), INFORMATION, (0.0, 1.0),
              reading="aligned_words", description=(
        "relevance.minilm.v4 over the answer without its copies cut in phase with its sentences (a copy that starts"
        " inside a sentence ends with it)")),
    CPUVersion("completeness.coverage.v5", information_of(completeness_v2), INFORMATION, (0.0, 1.0),
              reading="aligned_words", description=(
        "reference-free: 1 - prod(1 - information) over the distinct sentences, a sentence's information being "
        "relevance.minilm.v5's")),
    CPUVersion("coherence.minilm.v6", building_coherence, INFORMATION, (0.0, 1.0),
              reading="aligned_lines", description=(
        "coherence.minilm.v5 over the answer without its copies cut in phase with its sentences "
        "(relevance.minilm.v5's reading); abstains without any link")),
    CPUVersion("relevance.minilm.v6", information_of(relevance_v2), INFORMATION, (0.0, 1.0),
              reading="open_words", description=(
        "relevance.minilm.v5 read without every word of the question but its function words (stop list, "
        'punctuation), whatever its tag, as written, as its lemma and as the pieces punctuation joins ("mint.com": '
        '"mint", "com")')),
    CPUVersion("completeness.coverage.v6", information_of(completeness_v2), INFORMATION, (0.0, 1.0),
              reading="open_words", description=(
        "reference-free: 1 - prod(1 - information) over the distinct sentences, a sentence's information being "
        "relevance.minilm.v6's")),
    CPUVersion("coherence.minilm.v7", building_coherence, INFORMATION, (0.0, 1.0), reading="open_lines", description=(
        "coherence.minilm.v6 with relevance.minilm.v6's reading of what each sentence says (the question's words "
        "but its function words left out); abstains without any link")),
)

for _declaration in LEGACY:
    register_cpu_version(_declaration)
