"""One attack over the pairs of a split, and TextAttack's accounting of it (the paper's Table 8).

Pure: the victim is passed in (``rubric.perturbation.Victim``: ``p_a`` over (question, answer a, answer b)),
and the job that reads the input and writes the copy and its change log is ``workers.jobs.perturb``.

In a graded list one answer sits in several pairs: an answer changed while attacking one pair keeps that
text in every pair and is not changed again, so the copy holds one text per answer. The victim's
decisions on the original texts say which pairs of the split it gets right (the attacked ones; the others,
ties and unlabeled pairs are left out), and its decisions on the copy say which of them flipped.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rubric.perturbation.attacks import AttackResult, SynonymSource, Victim, attack_pair, decide, p_label

__all__ = ["SplitAttack", "victim_p_a", "attack_split", "attack_accounting"]


@dataclass
class SplitAttack:
    """An attack's outcome over a split.

    Attributes:
        results: pair index -> its own search (only the split's pairs).
        final: pair index -> its (answer a, answer b) in the copy (every pair).
        changed: the pairs whose answers differ from the input's.
    """

    results: dict[int, AttackResult]
    final: dict[int, tuple[str, str]]
    changed: set[int]


def victim_p_a(victim: Victim, pairs: Sequence[Any], rows: Sequence[int], texts: Mapping[int, tuple[str, str]], *,
               chunk: int = 64) -> np.ndarray:
    """The victim's P(a) of the given pairs on ``texts`` (NaN for every other pair), ``chunk`` pairs per call."""
    out = np.full(len(pairs), np.nan)
    for k in range(0, len(rows), chunk):
        part = list(rows[k:k + chunk])
        out[part] = victim.p_a([(pairs[i].question, *texts[i]) for i in part])
    return out


def attack_split(pairs: Sequence[Any], chosen: Sequence[int], victim: Victim, *, attack: str, seed: int,
                 budget: float, synonyms: SynonymSource | None, max_candidates: int, graded: bool,
                 wrap: Callable[[Iterable[int]], Iterable[int]] = iter) -> SplitAttack:
    """Attack the chosen pairs in order (``rubric.perturbation.attack_pair``), each with its own seeded rng.

    Args:
        pairs: every pair of the input (``PairRecord``); chosen: the indices to attack.
        graded: an answer is one text shared by its pairs (its id), not its record's own.
        wrap: wraps the chosen indices (a progress bar).
    """
    store: dict[tuple, str] = {}  # answer slot -> perturbed text

    def slot(i: int, side: str) -> tuple:
        p = pairs[i]
        return ((p.answer_id_a if side == "a" else p.answer_id_b),) if graded else (p.pair_id, side)

    results: dict[int, AttackResult] = {}
    for i in wrap(chosen):
        p = pairs[i]
        a = store.get(slot(i, "a"), p.answer_a)
        b = store.get(slot(i, "b"), p.answer_b)
        editable = [s for s in "ab" if slot(i, s) not in store]
        r = attack_pair(p.question, a, b, p.label, victim, attack=attack, rng=random.Random(f"{seed}:{p.pair_id}"),
                        budget=budget, synonyms=synonyms, editable=editable, max_candidates=max_candidates)
        results[i] = r
        for side, new in (("a", r.answer_a), ("b", r.answer_b)):
            if new != (a if side == "a" else b):
                store[slot(i, side)] = new
    final = {i: (store.get(slot(i, "a"), p.answer_a), store.get(slot(i, "b"), p.answer_b))
             for i, p in enumerate(pairs)}
    changed = {i for i, p in enumerate(pairs) if final[i] != (p.answer_a, p.answer_b)}
    return SplitAttack(results, final, changed)


def _num(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def attack_accounting(pairs: Sequence[Any], splits: Sequence[str], chosen: Sequence[int], run: SplitAttack,
                      p_original: np.ndarray, p_final: np.ndarray, *, split: str, attack: str,
                      victim: str) -> tuple[list[dict], dict]:
    """TextAttack's count of an attack, and one change-log row per pair.

    Args:
        pairs, splits: every pair of the input and its split; chosen: the attacked split's pairs.
        run: :func:`attack_split`'s outcome; p_original / p_final: the victim's P(a) on the input's texts
            and on the copy's (:func:`victim_p_a`).
        split, attack, victim: names for the rows.

    Returns:
        The rows (``FILE.changes.jsonl``) and the counts: the searches' statuses and reasons, the pairs
        attacked and flipped, the attack success rate, the victim's accuracy on the split before and after.
    """
    counts = {"success": 0, "failed": 0, "skipped": 0}
    reasons: dict[str, int] = {}
    in_split = set(chosen)
    n_attacked = n_flipped = correct_before = correct_after = n_scored = 0
    words_changed: list[int] = []
    rows = []
    for i, p in enumerate(pairs):
        r = run.results.get(i)
        label = p.label
        labelled = label in ("a", "b")
        before = float(p_label(p_original[i], label)) if labelled else float("nan")
        after = float(p_label(p_final[i], label)) if labelled else float("nan")
        d_before = decide(p_original[i]) if np.isfinite(p_original[i]) else None
        d_after = decide(p_final[i]) if np.isfinite(p_final[i]) else None
        # TextAttack's count: a pair the victim got right on the original texts is attacked, and the attack
        # succeeded when the victim is wrong on the copy (in a graded list, whatever pair changed its answers)
        attacked = i in in_split and labelled and d_before == label and d_after is not None
        flipped = attacked and d_after != label
        status, reason = ("skipped", f"not in the {split} split") if r is None else (r.status, r.reason)
        if r is not None:
            counts[status] += 1
            if status != "success":
                reasons[reason] = reasons.get(reason, 0) + 1
            if status != "skipped":
                words_changed.append(len(r.changes))
        if i in in_split and labelled and d_before is not None and d_after is not None:
            n_scored += 1
            correct_before += int(d_before == label)
            correct_after += int(d_after == label)
        n_attacked += int(attacked)
        n_flipped += int(flipped)
        extra = ({k: v for k, v in r.to_dict().items() if k not in ("status", "reason", "p_before", "p_after")}
                 if r is not None else {"changes": []})
        rows.append({"pair_id": p.pair_id, "row": p.row, "split": splits[i], "label": label, "attack": attack,
                     "victim": victim, "status": status, "reason": reason, "p_label_before": _num(before),
                     "p_label_after": _num(after), "decision_before": d_before, "decision_after": d_after,
                     "flipped": bool(flipped), "answers_changed": i in run.changed,
                     # P(label) when this pair's own search started: after other pairs changed a shared answer
                     "p_label_at_start": None if r is None else _num(r.p_before), **extra})
    stats = {
        "counts": counts, "skipped_or_failed_because": reasons,
        # TextAttack's rate: of the split's pairs the victim got right on the original texts, the share it gets
        # wrong on the perturbed copy (pairs it already got wrong, ties and unlabeled pairs are left out)
        "n_attacked": n_attacked, "n_flipped": n_flipped,
        "attack_success_rate": n_flipped / n_attacked if n_attacked else None,
        "n_pairs_changed": len(run.changed),
        "mean_words_changed": float(np.mean(words_changed)) if words_changed else None,
        "victim_accuracy_before": correct_before / n_scored if n_scored else None,
        "victim_accuracy_after": correct_after / n_scored if n_scored else None,
        "n_scored": n_scored,
    }
    return rows, stats
