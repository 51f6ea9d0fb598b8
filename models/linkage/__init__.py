"""LINKAGE's models: ``scorer`` (``LinkageScorer``: the listwise judge and its pointwise and pairwise
baselines, per candidate answer), ``references`` (the reference lists the LLM writes from a golden answer,
cached) and ``signals`` (the ROUGE and MiniLM reference signals). Its job kind is
``workers.protocols.linkage``, its science ``rubric.protocols``.

This is the room's public face: other rooms import from here, not from its modules.
"""

from models.linkage.scorer import LinkageScorer
from models.linkage.references import ReferenceRequest, ReferenceCache, ReferenceGenerator
from models.linkage.signals import LINKAGE_SIGNALS, reference_signals, signal_provenance

__all__ = ["LinkageScorer", "ReferenceRequest", "ReferenceCache", "ReferenceGenerator", "LINKAGE_SIGNALS",
           "reference_signals", "signal_provenance"]
