"""``lfqa-rubric perturb``: attack one split of an input against a trained victim, write a perturbed copy.

One straight line: read the input (``rubric.io.readers``) -> its splits, as a single-input score job
with the same seed assigns them (``rubric.tables.assemble.job_splits``) -> load the victim -> attack each
pair of the chosen split (``rubric.perturbation.attacks.attack_pair``) -> the victim's P(label) on the final texts
-> write the copy in the input's own format (``rubric.perturbation.rewrite.rewrite_input``), read it back with the
same reader and check it (same rows, ids, labels; only answers changed) -> ``FILE.changes.jsonl``.

The victim is a folder written by ``lfqa-rubric encoder`` (``head.json``: the encoder baseline) or a
rubric preference model (``model.json``, or a folder holding one) whose rubrics are re-scored for
every probe with the backends that made them; see ``rubric.perturbation.attacks`` for what that costs.

In a graded list one answer sits in several pairs. An answer changed while attacking one pair keeps
that text in every pair and is not changed again, so the copy holds one text per answer.

Accounting, as TextAttack counts: the victim's decisions on the *original* texts say which pairs of
the split it gets right (the attacked pairs; the others, ties and unlabeled pairs are left out), and
its decisions on the *copy* say which of them flipped. The attack success rate is flipped / attacked;
the victim's accuracy on the split before and after is reported beside it. For a pair format this is
each pair's own search; in a graded list a pair can also flip through an answer another pair changed.
Each line of ``FILE.changes.jsonl`` holds one pair: its own search (``status``, ``reason``, the changed
words from what to what, ``p_label_at_start``), and the victim's P(label) and decision on the original
texts (``*_before``) and on the copy (``*_after``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


from rubric.config import DEFAULT_SPLIT_FRACTIONS
from rubric.errors import ConfigError, InputError

__all__ = ["changes_path", "load_victim", "rubric_scorer", "run_perturb_job"]

log = logging.getLogger(__name__)


def changes_path(out: str | Path) -> Path:
    """Where the per-pair record of an attack goes: ``FILE.changes.jsonl`` beside the copy."""
    out = Path(out)
    return out.with_name(out.name + ".changes.jsonl")


def rubric_scorer(specs: Sequence, config) -> tuple:
    """Build the scorers of ``specs`` and merge them into one ``score_batch``.

    Returns:
        (score_batch, provenance): answers -> one ``{rubric: Score}`` per answer; rubric -> Provenance.

    Raises:
        BackendUnavailableError: a backend is missing.
    """
    from models.backends import build_scorers, check_backends
    from rubric.scoring import check_batch

    check_backends(specs, config)
    scorers = build_scorers(specs, config)
    provenance = {s.name: sc.provenance(s.name) for sc in scorers for s in sc.specs}

    def score_batch(items):
        merged: list[dict] = [{} for _ in items]
        for sc in scorers:
            results = sc.score_batch(items)
            check_batch(sc, items, results)
            for m, r in zip(merged, results):
                m.update(r)
        return merged

    return score_batch, provenance


def load_victim(path: str | Path, *, device: str | None = None, batch_size: int = 32, config=None):
    """The victim model at ``path``: an encoder head folder, or a rubric preference model.

    Args:
        path: a folder with ``head.json`` (``lfqa-rubric encoder``), a ``model.json`` file, or a
            folder holding ``model.json`` (``lfqa-rubric fit``).
        device: torch device of the encoder.
        batch_size: texts per forward pass / answers per scorer call.
        config: ``rubric.config.ScoringConfig`` for the rubric backends (default settings when None).

    Raises:
        ConfigError: ``path`` is neither.
        ProvenanceError: the victim's features would be made differently now.
    """
    from models.baselines import HEAD_JSON, EncoderVictim, load_encoder_baseline

    path = Path(path)
    if path.is_dir() and (path / HEAD_JSON).is_file():
        encoder, head = load_encoder_baseline(path, device=device, batch_size=batch_size)
        return EncoderVictim(encoder, head)
    model_json = path if path.is_file() else path / "model.json"
    if not model_json.is_file():
        raise ConfigError(f"victim {str(path)!r} is neither an encoder head folder ({HEAD_JSON}) nor a preference "
                          "model (model.json, or a folder holding one)")
    from rubric.config import ScoringConfig
    from rubric.perturbation import RubricVictim, rubric_victim_specs
    from rubric.preference import PreferenceModel

    model = PreferenceModel.from_json(model_json)
    specs, fitted = rubric_victim_specs(model)
    config = config or ScoringConfig(batch_size=batch_size)
    score_batch, provenance = rubric_scorer(specs, config)
    log.info("victim: the rubric preference model %s over %s (every probe re-scores an answer)", model_json,
             ", ".join(s.version for s in specs))
    return RubricVictim(model, specs, score_batch, provenance, fitted=fitted, batch_size=config.batch_size)


def run_perturb_job(input_path: str | Path, fmt: str, *, attack: str, victim, out: str | Path,
                    reader_options: Mapping[str, Any] | None = None, budget: float = 0.1, seed: int = 0,
                    split: str = "test", synonyms: str = "auto", max_candidates: int = 8,
                    progress: bool = True, split_fractions: Sequence[float] = DEFAULT_SPLIT_FRACTIONS) -> dict:
    """Attack the pairs of one split and write the perturbed copy and its change log.

    Args:
        input_path: the input file.
        fmt: its format (``rubric.io.readers.FORMATS``).
        attack: "deepwordbug" or "textfooler".
        victim: a victim (``load_victim``).
        out: the copy's path (same extension as the input).
        reader_options: the reader's options (as for ``score``).
        budget: the share of each answer's words an attack may change.
        seed: the split seed (as ``score --seed``) and the seed of deepwordbug's edits (per pair).
        split: the split to attack ("train", "dev", "test" or "all").
        split_fractions: the train/dev/test shares of the split (as ``score --split-fractions``).
        synonyms: textfooler's synonym source ("auto", "wordnet", "embedding"; ``models.attacks.synonyms``).
        max_candidates: synonyms tried per word.
        progress: show a progress bar.

    Returns:
        The summary (counts, attack success rate, the victim's accuracy on the split before and after).

    Raises:
        ConfigError: a bad attack, split or budget, or an output path that cannot keep the input's ids.
        InputError: the input cannot be read, or the copy does not read back as expected.
    """
    from rubric.perturbation import ATTACKS, word_budget
    from workers.storage.outdir import out_path, output_file

    if attack not in ATTACKS:
        raise ConfigError(f"unknown attack {attack!r}; known: {', '.join(ATTACKS)}")
    if split not in ("train", "dev", "test", "all"):
        raise ConfigError(f"'split' must be train, dev, test or all, got {split!r}")
    word_budget(1, budget)  # validates the budget before anything is read
    out = out_path(out)
    # the copy and its change log: each written beside its name and renamed when done, their folder held
    # (one another command is writing into is refused like score's), never over the input
    with (output_file(out, inputs=[input_path]) as copy,
          output_file(changes_path(out), inputs=[input_path]) as log_tmp):
        return _attack(input_path, fmt, attack=attack, victim=victim, out=out, copy=copy, log_tmp=log_tmp,
                       reader_options=reader_options, budget=budget, seed=seed, split=split, synonyms=synonyms,
                       max_candidates=max_candidates, progress=progress, split_fractions=split_fractions)


def _attack(input_path, fmt: str, *, attack: str, victim, out: Path, copy: Path, log_tmp: Path, reader_options,
            budget: float, seed: int, split: str, synonyms: str, max_candidates: int, progress: bool,
            split_fractions: Sequence[float]) -> dict:
    """Read, attack the split, write and check the copy, log the changes (``rubric.perturbation``'s science)."""
    from tqdm import tqdm

    from rubric.io import read_input
    from rubric.perturbation import attack_accounting, attack_split, rewrite_input, victim_p_a, words
    from rubric.tables import job_splits

    options = dict(reader_options or {})
    t0 = time.perf_counter()
    read = read_input(input_path, fmt, **options)
    if not read.pairs:
        raise InputError(f"no usable pair in {str(input_path)!r}")
    splits, split_source = job_splits(read.pairs, seed=seed, fractions=split_fractions)
    chosen = [i for i, s in enumerate(splits) if split == "all" or s == split]
    log.info("%d pairs read, %d in the %s split (%s splits, seed %d); attack %s, budget %g, victim %s",
             len(read.pairs), len(chosen), split, split_source, seed, attack, budget, victim.name)
    source = None
    if attack == "textfooler":
        from models.attacks import build_synonyms
        from models.baselines import EncoderVictim

        vocabulary = {w.text for p in read.pairs for t in (p.answer_a, p.answer_b) for w in words(t)}
        source = build_synonyms(synonyms, vocabulary=vocabulary,
                                encoder=victim.encoder if isinstance(victim, EncoderVictim) else None)
        log.info("synonym source: %s", source.name)
    original = {i: (p.answer_a, p.answer_b) for i, p in enumerate(read.pairs)}
    p_original = victim_p_a(victim, read.pairs, chosen, original)  # the decisions the attack sets out to flip
    run = attack_split(read.pairs, chosen, victim, attack=attack, seed=seed, budget=budget, synonyms=source,
                       max_candidates=max_candidates, graded=fmt == "graded",
                       wrap=lambda it: tqdm(it, desc=f"{attack} attack", disable=not progress, unit="pair"))
    t_attack = time.perf_counter()
    p_final = victim_p_a(victim, read.pairs, sorted(set(chosen) | run.changed), run.final)
    rewrite_input(input_path, copy, fmt, read.pairs, {read.pairs[i].pair_id: run.final[i] for i in run.changed},
                  mapping=options.get("mapping"))
    _check_copy(read, read_input(copy, fmt, **options), run.final, out)
    rows, stats = attack_accounting(read.pairs, splits, chosen, run, p_original, p_final, split=split, attack=attack,
                                    victim=victim.name)
    log_path = changes_path(out)
    log_tmp.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    summary = {
        "input": str(input_path), "format": fmt, "out": str(out), "changes": str(log_path), "attack": attack,
        "victim": victim.name, "budget": budget, "seed": seed, "split": split, "split_source": split_source,
        "split_fractions": list(split_fractions),
        "synonyms": None if source is None else source.name, "n_pairs": len(read.pairs), "n_in_split": len(chosen),
        **stats,
        "timings_s": {"attack": round(t_attack - t0, 3), "total": round(time.perf_counter() - t0, 3)},
    }

    def share(x) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    log.info("%s vs %s on %d %s pairs: %d attacked, %d flipped (attack success rate %s); victim accuracy %s -> %s "
             "on %d pairs; copy %s, changes %s", attack, victim.name, len(chosen), split, stats["n_attacked"],
             stats["n_flipped"], share(stats["attack_success_rate"]), share(stats["victim_accuracy_before"]),
             share(stats["victim_accuracy_after"]), stats["n_scored"], out, log_path)
    return summary


def _check_copy(read, back, final: Mapping[int, tuple[str, str]], out) -> None:
    """The copy reads back as the input did: same rows, ids and labels, answers as perturbed."""
    problems = []
    if back.rows_in != read.rows_in or len(back.pairs) != len(read.pairs):
        problems.append(f"{back.rows_in} rows and {len(back.pairs)} pairs, expected {read.rows_in} and "
                        f"{len(read.pairs)}")
    else:
        for i, (p, q) in enumerate(zip(read.pairs, back.pairs)):
            if (p.pair_id, p.label) != (q.pair_id, q.label) or (q.answer_a, q.answer_b) != final[i]:
                problems.append(f"pair {i} reads back as {q.pair_id!r} ({q.label}) with other answers than written, "
                                f"expected {p.pair_id!r} ({p.label})")
                break
    if problems:
        raise InputError(f"the perturbed copy {str(out)!r} does not read back as the input: {'; '.join(problems)}")
