"""``--preset NAME`` on ``score``, ``fit``, ``evaluate``, ``transfer``, ``judge``, ``analyze`` and ``validate``: the settings
come from :mod:`rubric.presets` (defined there once: ``paper`` is the LFQA-HP-1M paper's
configuration, Jahan et al.; ``cpu`` the CPU rubric profile); this module only applies them to a command's
arguments.

A setting the preset fixes takes the preset's value; given explicitly with another value, it is an
error (``--preset paper sets --mode vote``), never silently overridden. Selections stay the user's:
a subset of the preset's rubrics or judges, paths, batch sizes, seeds. A ``score`` run whose factuality
would have no evidence to check claims against (LFQA-HP records attach no documents, and no
``--factuality-corpus``) is refused before it starts: every answer with a claim would fail, and the
preset's model would silently lose a rubric.
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
        "score": {"llm_layout": preset.llm_layout, "rescale": preset.rescale,
                  "split_fractions": preset.split_fractions, "minilm_encoder": preset.minilm_encoder},
        "fit": {"split": preset.fit_split, "C": preset.C, "ties": preset.ties, "style": preset.style,
                "decorrelate": preset.decorrelate},
        "evaluate": {"split": preset.eval_split},
        "judge": {"mode": preset.judge_mode, "n_votes": preset.n_votes, "temperature": preset.temperature,
                  "tie": preset.tie, "split_fractions": preset.split_fractions},
        "analyze": {"split": preset.eval_split},
        "transfer": {"split": preset.eval_split, "C": preset.C, "ties": preset.ties, "style": preset.style},
        # the preset's rubric versions (the selection below) and prompt layout; raw scores are compared: no rescaling
        "validate": {"llm_layout": preset.llm_layout, "minilm_encoder": preset.minilm_encoder},
    }[command]


#: The commands that take ``--preset``.
FIXED: tuple[str, ...] = ("score", "fit", "evaluate", "transfer", "judge", "analyze", "validate")


class _Default:
    """Marks a parser default that was not given: ``--mode logprob`` typed out is a plain str, the
    untouched default ``logprob`` is a :class:`_DefaultStr`, so a preset can tell the two apart.
    The marked values behave as the values themselves (a bool default becomes an int 0/1)."""


    original: object


class _DefaultStr(str, _Default):
    pass


class _DefaultInt(int, _Default):
    pass


class _DefaultFloat(float, _Default):
    pass


class _DefaultTuple(tuple, _Default):
    pass


def _remembered(value):
    """``value`` marked as the untouched default (None and other types are left as they are)."""
    for kind, marked in ((bool, _DefaultInt), (str, _DefaultStr), (int, _DefaultInt), (float, _DefaultFloat),
                         (tuple, _DefaultTuple)):
        if isinstance(value, kind):
            out = marked(value)
            out.original = value
            return out
    return value


def _plain(args: argparse.Namespace) -> None:
    """Every marked default back to the parser's own value (so a handler, a store key or a manifest never
    sees a marked one)."""
    for dest, value in vars(args).items():
        if isinstance(value, _Default):
            setattr(args, dest, value.original)


#: Selections whose default the preset replaces only when the user gave none.
_SELECTIONS = {"score": "rubrics", "judge": "judges", "validate": "rubrics"}


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def apply_preset(args: argparse.Namespace, command: str) -> None:
    """Set the preset's values on ``args`` (in place), checking what the user gave explicitly.

    A value the user typed is "given" even when it equals the parser's default (``add_preset`` marks the
    defaults); a given value other than the preset's is an error.

    Raises:
        ConfigError: an explicit value contradicts the preset, or the inputs were not made with it.
    """
    preset = get_preset(args.preset)
    if command in ("judge", "analyze") and not preset.judges:
        raise ConfigError(f"--preset {preset.name} is a rubric profile with no judges: use it on score, fit, evaluate "
                          f"and transfer; {command} takes --preset "
                          + ", ".join(p.name for p in PRESETS.values() if p.judges))
    for dest, value in _fixed(preset, command).items():
        given = getattr(args, dest)
        if not isinstance(given, _Default) and given is not None and given != value:
            raise ConfigError(f"--preset {preset.name} sets {_flag(dest)} {value}; got {given}: drop one of them")
        setattr(args, dest, value)
    if command in ("score", "validate"):
        args.rubrics = preset_rubric_versions(preset, None if isinstance(args.rubrics, _Default) else args.rubrics)
        _check_evidence(preset, args)
    elif command == "judge":
        if getattr(args, "protocol", None) is not None:
            raise ConfigError(f"--preset {preset.name} is for the pairwise judges, not --protocol")
        args.judges = preset_judges(preset, None if isinstance(args.judges, _Default) else args.judges)
    elif command == "fit":
        _check_table(preset, Path(args.outdir))
    elif command == "evaluate":
        _check_model(preset, Path(args.model))
    elif command == "transfer":
        for outdir in dict.fromkeys([*args.train, *args.eval]):
            _check_table(preset, Path(outdir))
    log.info("--preset %s: %s", preset.name, preset.title)


#: Formats of LFQA-HP records: ``lfqa-hp`` files (answers may carry ``doc_1``/``doc_2``) and ``hf`` (the
#: dataset's field names; documents only through ``--map docs_a=...``).
_LFQA_HP_FORMATS = ("lfqa-hp", "hf")
#: Records of an input looked at for attached documents before a preset run starts.
_PEEK_BYTES = 1 << 20


def _check_evidence(preset: Preset, args: argparse.Namespace) -> None:
    """Refuse a preset ``score`` run of factuality on LFQA-HP records with no evidence source.

    The evidence is the documents attached to each answer or a ``--factuality-corpus``. LFQA-HP-1M
    attaches none (the paper's VeriScore searched the web); without either, factuality fails on every
    answer that has a claim and the preset's model loses the rubric. The first records of each local
    input are looked at (about 1 MB); an input that cannot be looked into here (a URI) is not refused.

    Raises:
        ConfigError: one line naming the input and the fix.
    """
    from rubric.scoring import RUBRICS

    # the claim-verifying versions only: the cpu preset's factuality.support.v1 abstains without evidence, and
    # reads no --factuality-corpus
    factuality = [v for v in args.rubrics.split(",") if v and RUBRICS.get(v).name == "factuality"
                  and RUBRICS.get(v).backend == "factuality"]
    if not factuality or getattr(args, "factuality_corpus", None) or args.format not in _LFQA_HP_FORMATS:
        return
    mapped = args.map and any(k in ("docs_a", "docs_b") for k in (kv.split("=")[0].strip()
                                                                   for kv in args.map.split(",")))
    if args.format == "hf" and not mapped:
        where = ", ".join(args.inputs)
    else:
        where = next((str(p) for p in args.inputs if _without_documents(Path(p), args)), None)
    if where:
        raise ConfigError(f"--preset {preset.name}: {factuality[0]} needs evidence, and {where} attaches no documents "
                          f"to its answers: add --factuality-corpus FILE (a JSONL/Parquet of passages for BM25), or "
                          f"leave factuality out of --rubrics")


def _without_documents(path: Path, args: argparse.Namespace) -> bool:
    """A local ``lfqa-hp`` input whose first records carry no document (a folder: its first file)."""
    from rubric.errors import InputError
    from rubric.io import plan_blocks, read_block, read_input

    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in (".jsonl", ".json", ".parquet"))
        path = files[0] if files else path
    if not path.is_file():
        return False  # a URI or a glob: not looked into here (the job reads it)
    opts = {"max_answer_chars": args.max_answer_chars, "max_question_chars": args.max_question_chars}
    try:
        blocks = plan_blocks(path, args.format, block_bytes=_PEEK_BYTES, block_rows=1000, **opts)
        read = read_block(path, args.format, blocks[0], **opts) if blocks else read_input(path, args.format, **opts)
    except (InputError, ConfigError):
        return False  # the job reports an unreadable input the usual way
    return not any(p.docs_a or p.docs_b for p in read.pairs)


def _check_table(preset: Preset, outdir: Path) -> None:
    from rubric.preference import read_pairs
    from rubric.presets import table_problems
    from rubric.tables import table_provenance

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


def _run(func, command: str, args: argparse.Namespace) -> int:
    if getattr(args, "preset", None):
        apply_preset(args, command)
    _plain(args)
    return func(args)


def add_preset(parser: argparse.ArgumentParser, command: str) -> None:
    """Give a command ``--preset``; call after its ``set_defaults(func=...)``."""
    if command not in FIXED:
        raise ConfigError(f"no preset settings for {command!r}; known: {', '.join(FIXED)}")
    parser.add_argument("--preset", choices=tuple(PRESETS), default=None,
                        help="run with a named configuration's settings (paper: LFQA-HP-1M's rubric versions and "
                             "prompts, fixed rescaling, no style covariates, vote-mode judges with 3 votes, "
                             "70/15/15 split, fit on train, report on test; docs/paper.md. cpu: the CPU rubric "
                             "profile, the nine rubrics without an LLM, style covariates on; docs/cpu-profile.md)")
    parser.set_defaults(func=partial(_run, parser.get_default("func"), command))
    dests = [*_fixed(PRESETS[next(iter(PRESETS))], command), *([_SELECTIONS[command]] if command in _SELECTIONS else [])]
    parser.set_defaults(**{d: _remembered(parser.get_default(d)) for d in dests})
