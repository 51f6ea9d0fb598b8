"""Read a mix of outputs over the same pairs and run every analysis on them.

Inputs, each a folder or a file:

- a score output (``OUT/pairs.parquet``): the pairs; with a model (``--model``, or ``OUT/model.json``
  when there is one) the rubric model's decisions on them, as fitted and style-controlled;
- a judge output (``OUT/judgments.parquet``, :mod:`rubric.judging.judgments`): each judge in order ab, order ba
  and debiased;
- a predictions file (Parquet with ``pair_id``, ``predicted``, optionally ``system``, ``p_a``,
  ``error``), given as a file or found as ``OUT/encoder_predictions.parquet``: one system per
  ``system`` value (else per file);
- a LINKAGE output (``OUT/linkage.parquet``, per answer, :mod:`rubric.analysis.linkage`): its own
  table of per-question correlations with the graded labels, on all its questions and on those of
  the analysed split; it describes no pairs, so it goes beside a score or judge output.

The pairs are the union of those the score and judge outputs describe (they must agree on each
pair's question, answers, label, split and lengths); the analysed split is taken from them. A system
is in a table only if an input gave it; it is never filled in.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pyarrow as pa

from rubric.analysis.comparison import Comparison, compare_systems
from rubric.analysis.evaluators import EvaluatorRow, RunCost, evaluator_rows
from rubric.analysis.linkage import LINKAGE_FILE, LinkageRun, linkage_run, read_linkage_rows
from rubric.analysis.perturbation import Perturbation, perturbation_deltas
from rubric.analysis.position import Position, position_bias
from rubric.analysis.systems import (KINDS, PairSet, System, baseline_systems, judge_systems, model_systems,
                                     people_system, predictions_systems)
from rubric.analysis.transitivity import Transitivity, transitivity
from rubric.analysis.verbosity import Verbosity, verbosity_bias
from rubric.errors import ConfigError, InputError
from rubric.preference import SampleStatus, sample_status
from rubric.judging import JUDGMENTS_FILE, check_both_orders, read_judgments

__all__ = ["ENCODER_PREDICTIONS_FILE", "LoadedInputs", "Analysis", "load_inputs", "parse_perturbed", "analyze"]

log = logging.getLogger(__name__)

#: An encoder baseline's predictions inside its output folder.
ENCODER_PREDICTIONS_FILE = "encoder_predictions.parquet"

#: How many problems of a judgments file an error message lists.
_SHOW_PROBLEMS = 5


@dataclass(frozen=True)
class LoadedInputs:
    """What a set of inputs gave.

    Attributes:
        pairs: every pair described by a score or judge output (all splits).
        systems: the systems they gave (rubric model, judges, predictions), in input order.
        described: one line per input saying what it gave.
        model_path: the model file applied to the score output, or None.
        linkage: each LINKAGE output's file and rows.
        sample: how the analysed split's questions stand to the model's training questions, or None.
        costs: each score or judge output's recorded cost (its manifest's), by folder.
        model_run: the score output the rubric model was applied to, or None.
    """

    pairs: PairSet
    systems: list[System]
    described: list[str] = field(default_factory=list)
    model_path: Path | None = None
    linkage: list[tuple[str, list[dict]]] = field(default_factory=list)
    sample: SampleStatus | None = None
    costs: dict[str, RunCost] = field(default_factory=dict)
    model_run: str | None = None


@dataclass(frozen=True)
class Analysis:
    """Every table of the analysis.

    Attributes:
        split: the analysed split.
        pairs: its pairs.
        systems: every system of Table 4, in table order (baselines last).
        inputs: what each input gave, one line each.
        comparison: Table 4.
        position: Table 6 (judges only).
        transitivity: Table 5 (every system, and the people).
        verbosity: Table 7 (on Table 4's pairs).
        perturbations: Table 8, one per perturbed set.
        linkage: one per LINKAGE output given.
        preset: the configuration every configurable input was checked to come from (``--preset``), or None.
        sample: how the analysed pairs' questions stand to the rubric model's training questions, or None.
        outside: when only some of them were trained on, Table 4 on the labelled pairs whose questions were
            not (every system, the same pairs); else None.
        evaluators: the rubric model and each judge side by side: agreement, failure rate, cost per 1,000 pairs
            (:mod:`rubric.analysis.evaluators`).
    """

    split: str
    pairs: PairSet
    systems: list[System]
    inputs: list[str]
    comparison: Comparison
    position: Position
    transitivity: Transitivity
    verbosity: Verbosity
    perturbations: list[Perturbation]
    linkage: list[LinkageRun] = field(default_factory=list)
    preset: str | None = None
    sample: SampleStatus | None = None
    outside: Comparison | None = None
    evaluators: list[EvaluatorRow] = field(default_factory=list)

    @property
    def in_sample(self) -> bool:
        """Some system's rows are (or may be) on pairs it was fitted on."""
        return any(s.in_sample for s in self.systems)


def _check_preset(preset_name: str, inputs: Sequence[str | Path], loaded: "LoadedInputs") -> list[System]:
    """Refuse inputs the preset did not make; return the systems with judge rows named after it.

    Raises:
        ConfigError: the rubric model was fitted without the preset, or a judge output ran other settings
            (read from its ``manifest.json``) or has no manifest to tell.
    """
    from rubric.io import read_manifest
    from rubric.preference import PreferenceModel
    from rubric.judging import resolve_judges
    from rubric.presets import get_preset, judge_settings_problems, model_preset, preset_tag

    preset = get_preset(preset_name)
    problems = []
    if loaded.model_path is not None:
        got = model_preset(PreferenceModel.from_json(loaded.model_path))
        if got != preset.name:
            problems.append(f"{loaded.model_path} was fitted {'with --preset ' + got if got else 'without a preset'}")
    for given in inputs:
        path = Path(given)
        if not (path.is_dir() and (path / JUDGMENTS_FILE).is_file()):
            continue
        try:
            manifest = read_manifest(path)
        except InputError as e:
            manifest, why = {}, str(e)
        else:
            why = "there is none"
        if not manifest:
            problems.append(f"{path}: no readable manifest.json to tell how its judges ran ({why})")
            continue
        settings = manifest.get("settings", {})
        allowed = {s.version for s in resolve_judges(",".join(preset.judges), tie=preset.tie)}
        problems += [f"{path}: {p}" for p in judge_settings_problems(preset, settings, allowed)]
    if problems:
        raise ConfigError(f"--preset {preset.name}: inputs not made with it: " + "; ".join(problems))
    tag = preset_tag(preset.name)
    return [replace(s, name=s.name + tag, judge=f"{s.judge}{tag}") if s.kind == "LLM judge" else s
            for s in loaded.systems]


def _read_parquet(path: Path) -> pa.Table:
    from rubric.io import read_parquet

    return read_parquet(path)


def load_inputs(paths: Sequence[str | Path], *, model: str | Path | None = None, predictions: Sequence[str | Path] = (),
                split: str = "test", allow_provenance_mismatch: bool = False) -> LoadedInputs:
    """Read score outputs, judge outputs and predictions files over the same pairs.

    Args:
        paths: output folders or predictions files.
        model: a ``model.json`` to apply to the score output (default: the score output's own
            ``model.json``, when it has one).
        predictions: more predictions files.
        split: the split that will be analysed (decides which systems are in-sample).
        allow_provenance_mismatch: apply the model even when its features were made differently.

    Returns:
        The pairs (all splits) and systems.

    Raises:
        InputError: an input is missing, unreadable, holds none of the known tables, or a judgments
            file does not hold one row per pair x judge x order.
        ConfigError: the inputs describe a pair differently, several score outputs bring a model, or
            no input describes the pairs (predictions files alone do not).
    """
    from rubric.preference import read_pairs
    from rubric.preference import PreferenceModel

    pairs: PairSet | None = None
    systems: list[System] = []
    described: list[str] = []
    used_model: Path | None = None
    linkage: list[tuple[str, list[dict]]] = []
    status: SampleStatus | None = None
    costs: dict[str, RunCost] = {}
    model_run: str | None = None

    def add_cost(folder: Path, n_pairs: int) -> None:
        from rubric.io import read_manifest

        try:
            cost = (read_manifest(folder) or {}).get("cost") if (folder / "manifest.json").is_file() else None
        except InputError:  # an unreadable manifest: no cost to show, the tables still stand
            cost = None
        if cost:
            costs[str(folder)] = RunCost(str(folder), cost, n_pairs)
    in_sample_note = "trained on pairs not recorded here: may be in-sample" if split in ("train", "all") else ""

    def add_pairs(ps: PairSet) -> None:
        nonlocal pairs
        pairs = ps if pairs is None else pairs.merge(ps)

    for given in [*paths, *predictions]:
        path = Path(given)
        if path.is_file():
            got = predictions_systems(_read_parquet(path), name=path.stem, source=str(path), note=in_sample_note)
            systems += got
            described.append(f"{path}: predictions of {', '.join(s.name for s in got)}")
            continue
        if not path.is_dir():
            raise InputError(f"{path} not found: give a score or judge output folder, or a predictions Parquet file")
        found = False
        if (path / "pairs.parquet").is_file():
            found = True
            table = read_pairs(path)
            add_pairs(PairSet.from_table(table, source=str(path / "pairs.parquet")))
            add_cost(path, table.num_rows)
            model_path = Path(model) if model is not None else path / "model.json"
            if model is not None or model_path.is_file():
                if used_model is not None:
                    raise ConfigError("several score outputs bring a rubric model: analyse one score output at a time")
                used_model, model_run = model_path, str(path)
                m = PreferenceModel.from_json(model_path)
                status = sample = sample_status(m, table, split)
                note = "transferred: fitted on another pairs table" if sample.kind == "transferred" else ""
                got = model_systems(m, table, in_sample=sample.in_sample, source=str(model_path),
                                    allow_provenance_mismatch=allow_provenance_mismatch, note=note, mark=sample.mark,
                                    trained_questions=sample.training_questions or None)
                systems += got
                described.append(f"{path}: pairs table ({table.num_rows} pairs); rubric model {model_path} "
                                 f"({sample.note})")
            else:
                described.append(f"{path}: pairs table ({table.num_rows} pairs); no model.json, so no rubric model")
        if (path / JUDGMENTS_FILE).is_file():
            found = True
            table = read_judgments(path)
            problems = check_both_orders(table)
            if problems:
                raise InputError(f"{path / JUDGMENTS_FILE}: {len(problems)} problem(s) with the orders: "
                                 + "; ".join(problems[:_SHOW_PROBLEMS]))
            add_pairs(PairSet.from_table(table, source=str(path / JUDGMENTS_FILE)))
            add_cost(path, len(set(table.column("pair_id").to_pylist())))
            got = judge_systems(table, source=str(path / JUDGMENTS_FILE))
            systems += got
            judges = sorted({s.judge for s in got})
            described.append(f"{path}: judgments ({table.num_rows} rows) of {', '.join(judges)}")
        if (path / ENCODER_PREDICTIONS_FILE).is_file():
            found = True
            file = path / ENCODER_PREDICTIONS_FILE
            got = predictions_systems(_read_parquet(file), name=path.name, source=str(file), note=in_sample_note)
            systems += got
            described.append(f"{file}: predictions of {', '.join(s.name for s in got)}")
        if (path / LINKAGE_FILE).is_file():
            found = True
            rows = read_linkage_rows(path)
            linkage.append((str(path / LINKAGE_FILE), rows))
            described.append(f"{path}: LINKAGE per-answer table ({len(rows)} rows, "
                             f"{len({r['question_id'] for r in rows})} questions) of "
                             + ", ".join(dict.fromkeys(str(r["system"]) for r in rows)))
        if not found:
            raise InputError(f"{path} holds none of pairs.parquet, {JUDGMENTS_FILE}, {ENCODER_PREDICTIONS_FILE}, "
                             f"{LINKAGE_FILE}")
    if pairs is None:
        raise ConfigError("no input describes the pairs: give a score output (pairs.parquet) or a judge output "
                          f"({JUDGMENTS_FILE}) beside predictions files or a LINKAGE output ({LINKAGE_FILE}; "
                          "its own report.md has its table)")
    return LoadedInputs(pairs=pairs, systems=systems, described=described, model_path=used_model, linkage=linkage,
                        sample=status, costs=costs, model_run=model_run)


def parse_perturbed(values: Sequence[str]) -> dict[str, list[str]]:
    """``--perturbed`` values, ``NAME=PATH`` or ``PATH`` (named after the folder or file), grouped by name.

    Several paths under one name are one perturbed set (e.g. its score output and its judge output).
    """
    out: dict[str, list[str]] = {}
    for v in values:
        name, sep, path = v.partition("=")
        if not sep or not name or Path(v).exists():
            path, name = v, Path(v).stem
        out.setdefault(name, []).append(path)
    return out


def _table_order(systems: Sequence[System]) -> list[System]:
    """Systems by kind (rubric model, judges, predictions), keeping input order within a kind."""
    return sorted(systems, key=lambda s: KINDS.index(s.kind))


def analyze(inputs: Sequence[str | Path], *, model: str | Path | None = None, predictions: Sequence[str | Path] = (),
            perturbed: dict[str, Sequence[str | Path]] | None = None, split: str = "test", n_boot: int = 1000,
            seed: int = 0, allow_provenance_mismatch: bool = False, preset: str | None = None,
            judge_failures: str = "miss") -> Analysis:
    """Tables 4-8 for every system the inputs give, on the analysed split.

    Args:
        inputs: score outputs, judge outputs, predictions files.
        model: the rubric model to apply to the score output (see :func:`load_inputs`).
        predictions: more predictions files.
        perturbed: perturbation name -> its inputs (the same kinds, over perturbed copies of the pairs);
            the same ``model`` is applied to a perturbed score output.
        split: "train", "dev", "test" or "all".
        n_boot: bootstrap replicates for every CI.
        seed: their seed.
        allow_provenance_mismatch: apply the model even when its features were made differently.
        preset: a preset name: the model and the judge outputs must have been made with it (checked),
            and the judge rows and the report's title name it.
        judge_failures: "miss" (a system's failure on a pair is its own miss; the others keep the pair) or
            "drop" (the pair is left out for every system), in Tables 4, 7 and 8
            (:mod:`rubric.analysis.comparison`).

    Raises:
        ConfigError: the split has no pairs, an input was not made with ``preset``, or an input problem
            (see :func:`load_inputs`).
        InputError: see :func:`load_inputs`.
    """
    loaded = load_inputs(inputs, model=model, predictions=predictions, split=split,
                         allow_provenance_mismatch=allow_provenance_mismatch)
    if model is not None and loaded.model_path is None:
        raise ConfigError(f"--model {model} needs a score output (a folder with pairs.parquet) among the inputs")
    pairs = loaded.pairs.in_split(split)
    if not len(pairs):
        raise ConfigError(f"the inputs have no pairs in the {split!r} split")
    given = _check_preset(preset, inputs, loaded) if preset else loaded.systems
    systems = _table_order(given) + baseline_systems(pairs)
    comparison = compare_systems(pairs, systems, n_boot=n_boot, seed=seed, judge_failures=judge_failures)
    sample = loaded.sample
    outside = None
    if sample is not None and sample.training_questions:
        compared = pairs.subset(comparison.pair_ids)
        out_q = sample.outside(compared.question_id)
        if 0 < out_q.sum() < len(out_q):  # Table 4's pairs are partly the model's: Table 4 again on the others
            outside = compare_systems(compared.take(out_q), systems, n_boot=n_boot, seed=seed,
                                      judge_failures=judge_failures)
    judges: dict[str, dict[str, System]] = {}
    for s in systems:
        if s.kind == "LLM judge":
            judges.setdefault(s.judge, {})[s.order] = s
    position = position_bias(pairs, [(j["ab"], j["ba"]) for j in judges.values()], n_boot=n_boot, seed=seed)
    trans = transitivity(pairs, [*systems, people_system(pairs)], n_boot=n_boot, seed=seed)
    verbosity = verbosity_bias(pairs.subset(comparison.pair_ids), systems, n_boot=n_boot, seed=seed,
                               failures_as_misses=comparison.misses)
    perturbations = []
    described = list(loaded.described)
    for name, paths in (perturbed or {}).items():
        # the model of the original pairs, wherever it was found, is the one applied to the perturbed ones
        p_loaded = load_inputs(paths, model=loaded.model_path, split=split,
                               allow_provenance_mismatch=allow_provenance_mismatch)
        p_pairs = p_loaded.pairs.in_split(split)
        p_given = _check_preset(preset, paths, p_loaded) if preset else p_loaded.systems
        p_systems = _table_order(p_given) + baseline_systems(p_pairs)
        perturbations.append(perturbation_deltas(name, pairs, p_pairs, systems, p_systems, n_boot=n_boot, seed=seed,
                                                 judge_failures=judge_failures))
        described += [f"perturbed set {name!r}: {line}" for line in p_loaded.described]
    split_questions = {str(q) for q in pairs.question_id}
    linkage = [linkage_run(rows, source=source, split=split, split_questions=split_questions, n_boot=n_boot, seed=seed)
               for source, rows in loaded.linkage]
    evaluators = evaluator_rows(comparison, loaded.costs, [str(p) for p in pairs.pair_id], loaded.model_run)
    return Analysis(split=split, pairs=pairs, systems=systems, inputs=described, comparison=comparison,
                    position=position, transitivity=trans, verbosity=verbosity, perturbations=perturbations,
                    linkage=linkage, preset=preset, sample=sample, outside=outside, evaluators=evaluators)
