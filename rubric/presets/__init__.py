"""Presets: named configurations of every step, defined once (``--preset paper``, ``--preset cpu``;
``workers/cli/presets.py`` applies them to a command). A room above ``rubric.scoring`` and ``rubric.cpu_profile``:
a preset names rubric versions, and building one checks each against the registry, so every room that declares
versions sits below it.

This is the room's public face: other rooms import from here, not from its modules.
"""

from rubric.presets._presets import (
    Preset, PAPER, CPU, PRESETS, get_preset, preset_rubric_versions, preset_judges, preset_tag, preset_title,
    model_preset, table_problems, judge_settings_problems, PRESET_META_KEY, model_preset_problems, model_preset_tag,
)

__all__ = [
    "Preset", "PAPER", "CPU", "PRESETS", "get_preset", "preset_rubric_versions", "preset_judges", "preset_tag",
    "preset_title", "model_preset", "table_problems", "judge_settings_problems", "PRESET_META_KEY",
    "model_preset_problems", "model_preset_tag",
]
