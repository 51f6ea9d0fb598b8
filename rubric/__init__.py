"""lfqa-rubric: interpretable rubric vectors for long-form answers and a preference model on them.

This package is the science and imports without torch, vLLM, Ray or spaCy. Its rooms, each with a
public face (its ``__init__``): ``rubric.io`` (records, readers, splits), ``rubric.scoring`` (rubric
declarations, prompts, score parsing, rescaling, the pure formulas), ``rubric.cpu_profile`` (the CPU profile's
versions, one declaration each), ``rubric.presets`` (named configurations), ``rubric.tables`` (the assemble
step, feature tables, provenance), ``rubric.preference`` (the preference model, metrics, reports),
``rubric.judging`` (pairwise LLM judges, judgments, perturbations), ``rubric.protocols`` (the
neighbouring protocols' science) and ``rubric.analysis`` (the paper's Table 4-8 analyses); ``errors``,
``config`` and ``registry`` sit below them all.
"""

__version__ = "0.1.0"
