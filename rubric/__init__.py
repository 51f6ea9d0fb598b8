"""lfqa-rubric: interpretable rubric vectors for long-form answers and a preference model on them.

This package is the science (rubric declarations, prompts, score parsing, rescaling, feature
tables, readers, the preference model, metrics) and imports without torch, vLLM, Ray or spaCy.
"""

__version__ = "0.1.0"
