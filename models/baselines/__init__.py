"""The baselines beside the rubric model: ``encoder`` (the trained-encoder baseline: a sentence encoder and
its preference head, saved as JSON + safetensors).

This is the room's public face: other rooms import from here, not from its modules.
"""

from models.baselines.encoder import (
    HEAD_WEIGHTS, HEAD_JSON, system_name, SentenceEncoder, PreferenceHead, EncoderVictim, load_encoder_baseline,
)

__all__ = ["HEAD_WEIGHTS", "HEAD_JSON", "system_name", "SentenceEncoder", "PreferenceHead", "EncoderVictim",
           "load_encoder_baseline"]
