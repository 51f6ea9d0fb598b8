"""The CPU rubric profile (``--preset cpu``): its pure science, and one declaration per version.

- ``_versions``: the ``cpu`` preset's versions, one :class:`CPUVersion` each (formula, reading, what it needs of the
  shared pass, raw range, description, extra-signal flag); ``_legacy``: every other registered CPU version, declared
  the same way. Importing this room registers each one's spec (``rubric.scoring.RUBRICS``, backend ``cpu_text``) and
  its unit (:data:`CPU_VERSIONS`) together; :func:`register_cpu_version` does the same for a version declared outside
  the package. ``models.rubric_backends.CPUProfileScorer`` runs the shared pass (spaCy, MiniLM) and serves whatever
  :data:`CPU_VERSIONS` holds.
- ``_units``: the declaration, the registry and the unit formulas; ``_row``: :class:`CPURow`, what the shared pass
  hands a version; ``_readings``: :class:`Parsed` and the readings of an answer (:data:`READINGS`, :data:`COPY_RULES`);
  ``_formulas``, ``_coherence``, ``_text``: the formulas (what each version means and why: ``_formulas``' docstring,
  docs/cpu-profile.md).

A room above ``rubric.scoring`` (it registers into its registry) and below ``rubric.presets`` (the ``cpu`` preset names
its versions). This is the room's public face: other rooms import from here, not from its modules.
"""

from rubric.cpu_profile._readings import QUESTION_TERM_POS, CONCRETE_POS, Reading, COPY_RULES, READINGS, Parsed
from rubric.cpu_profile._row import CPURow
from rubric.cpu_profile._units import (
    Formula, NEEDS, CPUVersion, CPU_VERSIONS, register_cpu_version, unregister_cpu_version, versions_needing,
)
from rubric.cpu_profile._formulas import distinct_sentences, novelty, sentence_information, term_weight
from rubric.cpu_profile._text import (
    EXAMPLE_CUE, FLUENCY_HARPER_KINDS, UNKNOWN_WORD_ZIPF, count_fluency_lints, count_fluency_lints_v2, fluency_score,
    list_marker, plain_case, without_question_words,
)
from rubric.cpu_profile import _versions, _legacy  # noqa: F401  the tables: importing them registers each version

__all__ = [
    # declaring a version
    "CPUVersion", "Formula", "NEEDS", "CPU_VERSIONS", "register_cpu_version", "unregister_cpu_version",
    "versions_needing", "CPURow", "Parsed", "Reading", "READINGS", "COPY_RULES",
    # what the shared pass (models.rubric_backends) reads with
    "QUESTION_TERM_POS", "CONCRETE_POS", "list_marker", "plain_case", "without_question_words",
    "distinct_sentences", "novelty", "sentence_information", "term_weight",
    # Harper's fluency versions (backend harper_fluency)
    "FLUENCY_HARPER_KINDS", "UNKNOWN_WORD_ZIPF", "count_fluency_lints", "count_fluency_lints_v2", "fluency_score",
    # the validity room's perturbations
    "EXAMPLE_CUE",
]
