"""Judging on an engine: the paper's pairwise judges (``judges``: ``JudgeScorer``, both orders of every
pair in one engine call) and the neighbouring protocols' pairwise judges (``protocol_judges``:
``ProtocolJudgeScorer``, each read by its own verdict tokens). Which one runs a judge is the judge's
``JudgeSpec.scorer``, built by ``models.backends.JUDGE_SCORERS``.

This is the room's public face: other rooms import from here, not from its modules.
"""

from models.judging.judges import JudgeScorer, engine_call
from models.judging.protocol_judges import ProtocolJudgeScorer

__all__ = ["JudgeScorer", "engine_call", "ProtocolJudgeScorer"]
