"""``--preset NAME`` on ``score``, ``fit``, ``evaluate``, ``judge`` and ``analyze``: the settings come
from :mod:`rubric.presets` (defined there once); this module only applies them to a command's arguments.

A setting the preset fixes takes the preset's value; given explicitly with another value, it is an
error (``--preset paper sets --mode vote``), never silently overridden. Selections stay the user's:
a subset of the preset's rubrics or judges, paths, batch sizes, seeds.
"""

from __future__ import annotations

import argparse
import logging
from functools import partial
from pathlib import Path

from rubric.errors import ConfigError
from rubric.presets import PRESETS, Preset, get_preset, preset_judges, preset_rubric_versions

__all__ = ["add_preset", "apply_preset", "FIXED"]

log = logging.getLogger(__name__)


def _fixed(preset: Preset, command: str) -> dict[str, object]:
    """dest -> the value the preset fixes, per command."""
    return {
        "score": {"llm_layout": preset.llm_layout, "rescale": preset.rescale},
        "fit": {"split": preset.fit_split, "C": preset.C, "ties": preset.ties, "style": preset.style,
                "decorrelate": preset.decorrelate},
        "evaluate": {"split": preset.eval_split},
        "judge": {"mode": preset.judge_mode, "n_votes": preset.n_votes, "temperature": preset.temperature,
                  "tie": preset.tie},
        "analyze": {"split": preset.eval_split},
    }[command]


#: The commands that take ``--preset``.
FIXED: tuple[str, ...] = ("score", "fit", "evaluate", "judge", "analyze")


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def apply_preset(args: argparse.Namespace, parser: argparse.ArgumentParser, command: str) -> None:
    """Set the preset's values on ``args`` (in place), checking what the user gave explicitly.

    A value equal to the parser's default counts as not given.

    Raises:
        ConfigError: an explicit value contradicts the preset, or the inputs were not made with it.
    """
    preset = get_preset(args.preset)
    for dest, value in _fixed(preset, command).items():
        given, default = getattr(args, dest), parser.get_default(dest)
        if given == value:
            continue
        if given != default:
            raise ConfigError(f"--preset {preset.name} sets {_flag(dest)} {value}; got {given}: drop one of them")
        setattr(args, dest, value)
    if command == "score":
        default = parser.get_default("rubrics")
        args.rubrics = preset_rubric_versions(preset, None if args.rubrics == default else args.rubrics)
    elif command == "judge":
        if getattr(args, "protocol", None) is not None:
            raise ConfigError(f"--preset {preset.name} is for the pairwise judges, not --protocol")
        default = parser.get_default("judges")
        args.judges = preset_judges(preset, None if args.judges == default else args.judges)
    elif command == "fit":
        _check_table(preset, Path(args.outdir))
    elif command == "evaluate":
        _check_model(preset, Path(args.model))
    log.info("--preset %s: %s", preset.name, preset.title)


def _check_table(preset: Preset, outdir: Path) -> None:
    from rubric.evaluate import read_pairs
    from rubric.presets import table_problems
    from rubric.provenance import table_provenance

    problems = table_problems(preset, table_provenance(read_pairs(outdir)))
    if problems:
        raise ConfigError(f"{outdir / 'pairs.parquet'} was not scored with --preset {preset.name}: "
                          + "; ".join(problems))


def _check_model(preset: Preset, model_path: Path) -> None:
    from rubric.preference import PreferenceModel
    from rubric.presets import model_preset

    got = model_preset(PreferenceModel.from_json(model_path))
    if got != preset.name:
        raise ConfigError(f"{model_path} was fitted {'with --preset ' + got if got else 'without a preset'}, "
                          f"not with --preset {preset.name}")


def _run(func, parser: argparse.ArgumentParser, command: str, args: argparse.Namespace) -> int:
    if getattr(args, "preset", None):
        apply_preset(args, parser, command)
    return func(args)


def add_preset(parser: argparse.ArgumentParser, command: str) -> None:
    """Give a command ``--preset``; call after its ``set_defaults(func=...)``."""
    if command not in FIXED:
        raise ConfigError(f"no preset settings for {command!r}; known: {', '.join(FIXED)}")
    parser.add_argument("--preset", choices=tuple(PRESETS), default=None,
                        help="run with a named configuration's settings (paper: LFQA-HP-1M's rubric versions and "
                             "prompts, fixed rescaling, no style covariates, vote-mode judges with 3 votes, "
                             "70/15/15 split, fit on train, report on test; docs/paper.md)")
    parser.set_defaults(func=partial(_run, parser.get_default("func"), parser, command))
