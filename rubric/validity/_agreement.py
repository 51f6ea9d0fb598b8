"""Agreement with people, aspect by aspect: does each rubric version rank answers as people rate its aspect?

The yardstick of a rubric is people's ratings of the aspect it is named for (SummEval and G-Eval's
meta-evaluation), measured beside answer length and the other rubrics, so a rubric that follows general quality or
length rather than its aspect shows it. From per-answer ratings (:mod:`rubric.io.ratings`) and each answer's scores:

- ``source`` level (SummEval's and G-Eval's "summary level"): Spearman's rho and Kendall's tau-b between a scorer
  and the ratings across the answers of one source (a document, a question), averaged over sources. As in G-Eval's
  meta-evaluation (``meta_eval_summeval.py``), a source where the ratings or the scorer's values are all equal is
  left out (a correlation is undefined there); how many sources each row rests on is ``n_groups``, so a scorer that
  is constant on most sources shows it.
- ``pooled``: the same correlations over all rated answers at once.
- ``system`` level, where the input names who wrote each answer: each system's mean score against its mean rating,
  across systems.
- ``pairs``: where people judged an aspect between the two answers of a pair (lfqa_eval's coherence and factuality
  preferences), the share of the pairs they did not tie on, and the scorer did not tie on, where the scorer's
  higher answer is the one people preferred (:func:`rubric.preference.agreement`).

Every CI is a percentile bootstrap that resamples sources (questions), the independent unit, with all their answers;
the replicates are the same for every scorer, so ``vs_length`` (a scorer's source-level rho minus length's, on the
same aspect and sources) is a paired difference. Length is whitespace words (:func:`rubric.tables.word_count`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from rubric.config import check_range
from rubric.errors import ConfigError
from rubric.preference import agreement as pair_agreement
from rubric.preference import question_bootstrap_weights
from rubric.tables import spearman

__all__ = ["LENGTH_SCORER", "LEVELS", "STATISTICS", "AgreementRow", "AgreementTable", "Rated", "agreement_table"]

#: The baseline scorer every table carries: the answer's length in words.
LENGTH_SCORER = "length (words)"
#: The levels of a row (see the module docstring), and the statistics of each.
LEVELS: tuple[str, ...] = ("source", "pooled", "system", "pairs")
STATISTICS: Mapping[str, tuple[str, ...]] = {"source": ("spearman", "kendall"), "pooled": ("spearman", "kendall"),
                                             "system": ("spearman", "kendall"), "pairs": ("agreement",)}
_NAN2 = (math.nan, math.nan)


@dataclass(frozen=True)
class Rated:
    """One rated answer as the statistics read it.

    Attributes:
        answer_id: its id (its scores are looked up by it).
        source: the group it is compared within; system: its writer ("" unknown).
        ratings: aspect -> people's rating.
        n_words: its length in whitespace words.
    """

    answer_id: str
    source: str
    system: str
    ratings: Mapping[str, float]
    n_words: int


@dataclass(frozen=True)
class AgreementRow:
    """One scorer against one aspect, at one level, by one statistic.

    Attributes:
        scorer: a rubric version, or :data:`LENGTH_SCORER`.
        rubric: the rubric's name ("" for length).
        aspect: the people's rating it is compared with.
        level / statistic: see :data:`LEVELS` and :data:`STATISTICS`.
        value: the statistic (nan when nothing could be compared); ci: its 95% CI over sources.
        n: answers (pairs at the ``pairs`` level) compared; n_groups: sources (systems at the ``system`` level).
        own: the aspect is the one the rubric is named for.
        vs_length / vs_length_ci: source-level rho minus length's on the same sources, with its paired CI (source
            level, Spearman, rubrics only); nan otherwise.
        n_missing: rated answers (pairs) the scorer has no value for (failed or abstained).
    """

    scorer: str
    rubric: str
    aspect: str
    level: str
    statistic: str
    value: float
    ci: tuple[float, float]
    n: int
    n_groups: int
    own: bool
    vs_length: float = math.nan
    vs_length_ci: tuple[float, float] = _NAN2
    n_missing: int = 0


@dataclass
class AgreementTable:
    """Every row, the scorers and aspects in order, and how the CIs were made."""

    rows: list[AgreementRow]
    scorers: list[str]
    aspects: list[str]
    n_boot: int
    seed: int
    rubric_of: dict[str, str] = field(default_factory=dict)

    def get(self, scorer: str, aspect: str, level: str, statistic: str) -> AgreementRow | None:
        return next((r for r in self.rows if (r.scorer, r.aspect, r.level, r.statistic) ==
                     (scorer, aspect, level, statistic)), None)


def _kendall(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b (ties in either corrected for); by pairs of answers below 64 of them, else scipy's."""
    if len(x) > 64:
        from scipy.stats import kendalltau

        return float(kendalltau(x, y)[0])
    i, j = np.triu_indices(len(x), 1)
    sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    d = math.sqrt(float(np.count_nonzero(sx)) * float(np.count_nonzero(sy)))
    return float((sx * sy).sum() / d) if d > 0 else math.nan


def _corr(x: np.ndarray, y: np.ndarray, statistic: str) -> float:
    """Spearman's rho or Kendall's tau-b; nan (undefined) when either side is constant or with fewer than two
    answers."""
    if len(x) < 2 or np.ptp(y) == 0 or np.ptp(x) == 0:
        return math.nan
    return spearman(x, y) if statistic == "spearman" else _kendall(x, y)


def _ci(stats: Sequence[float]) -> tuple[float, float]:
    s = np.asarray([v for v in stats if math.isfinite(v)], dtype=float)
    if len(s) < 2:
        return _NAN2
    return float(np.percentile(s, 2.5)), float(np.percentile(s, 97.5))


class _Sources:
    """The rated answers grouped by source, and the bootstrap's draws of sources (shared by every scorer)."""

    def __init__(self, answers: Sequence[Rated], n_boot: int, seed: int) -> None:
        self.names = list(dict.fromkeys(a.source for a in answers))
        at = {s: k for k, s in enumerate(self.names)}
        self.of = np.array([at[a.source] for a in answers], dtype=int)
        self.members = [np.flatnonzero(self.of == k) for k in range(len(self.names))]
        self.w = question_bootstrap_weights(len(self.names), n_boot=n_boot, seed=seed) if len(self.names) >= 2 \
            else np.zeros((0, len(self.names)), dtype=int)
        # each replicate's answer indices (a source drawn twice brings its answers twice), drawn once for every scorer
        self.replicates = [np.concatenate([np.repeat(self.members[k], c) for k, c in enumerate(counts) if c])
                           for counts in self.w]


def _per_source(x: np.ndarray, y: np.ndarray, ok: np.ndarray, src: _Sources, statistic: str) -> np.ndarray:
    """Each source's statistic over its answers with both values (nan where it has nothing to compare)."""
    out = np.full(len(src.names), math.nan)
    for k, idx in enumerate(src.members):
        idx = idx[ok[idx]]
        out[k] = _corr(x[idx], y[idx], statistic)
    return out


def _mean_over_sources(per: np.ndarray, src: _Sources) -> tuple[float, tuple[float, float], int]:
    used = np.isfinite(per)
    if not used.any():
        return math.nan, _NAN2, 0
    value = float(per[used].mean())
    if len(src.w) == 0:
        return value, _NAN2, int(used.sum())
    w = src.w[:, used]
    totals = w.sum(axis=1)
    stats = np.where(totals > 0, (w @ per[used]) / np.maximum(totals, 1), np.nan)
    return value, _ci(stats), int(used.sum())


def _system_means(x, y, ok, systems: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each system's mean score and mean rating over the answers ``idx`` that have both (``systems``: integer codes)."""
    idx = idx[ok[idx]]
    counts = np.bincount(systems[idx], minlength=systems.max() + 1).astype(float)
    seen = counts > 0
    return ((np.bincount(systems[idx], weights=x[idx], minlength=len(counts)) / np.maximum(counts, 1))[seen],
            (np.bincount(systems[idx], weights=y[idx], minlength=len(counts)) / np.maximum(counts, 1))[seen])


def agreement_table(answers: Sequence[Rated], scores: Mapping[str, Mapping[str, float | None]],
                    versions: Mapping[str, str], aspects: Sequence[str], *, n_boot: int = 1000, seed: int = 0,
                    pairs: Sequence[Mapping] = ()) -> AgreementTable:
    """The agreement of every scorer (each rubric version of ``versions``, and length) with every aspect.

    Args:
        answers: the rated answers.
        scores: answer id -> rubric name -> its raw score (None: failed or abstained).
        versions: rubric name -> the version scored, in the table's order.
        aspects: the aspects, in the table's order.
        n_boot / seed: the bootstrap over sources.
        pairs: pairwise aspect judgements, each ``{"question_id", "answer_id_a", "answer_id_b", "n_words_a",
            "n_words_b", "aspects": {aspect: "a"|"b"|"tie"|None}}`` (lfqa_eval's preferences).

    Raises:
        ConfigError: ``n_boot < 1``, or no aspect.
    """
    check_range("n_boot", n_boot, low=1)
    if not aspects:
        raise ConfigError("no aspect to compare with")
    scorers = [*versions.values(), LENGTH_SCORER]
    rubric_of = {v: r for r, v in versions.items()}
    rows: list[AgreementRow] = []
    if answers:
        rows += _rated_rows(answers, scores, versions, list(aspects), n_boot, seed)
    if pairs:
        rows += _pair_rows(pairs, scores, versions, list(aspects), n_boot, seed)
    return AgreementTable(rows, scorers, list(aspects), n_boot, seed, rubric_of)


def _rated_rows(answers, scores, versions, aspects, n_boot, seed) -> list[AgreementRow]:
    src = _Sources(answers, n_boot, seed)
    names = [a.system for a in answers]
    with_systems = len(set(names)) >= 3 and all(names)
    systems = np.unique(np.array(names, dtype=object).astype(str), return_inverse=True)[1].reshape(-1)
    columns = {version: np.array([_num(scores.get(a.answer_id, {}).get(rubric)) for a in answers])
               for rubric, version in versions.items()}
    columns[LENGTH_SCORER] = np.array([float(a.n_words) for a in answers])
    rows = []
    for aspect in aspects:
        y = np.array([_num(a.ratings.get(aspect)) for a in answers])
        rated = np.isfinite(y)
        length_per = _per_source(columns[LENGTH_SCORER], y, rated, src, "spearman")
        for scorer, x in columns.items():
            rubric = "" if scorer == LENGTH_SCORER else next(r for r, v in versions.items() if v == scorer)
            ok = rated & np.isfinite(x)
            base = dict(scorer=scorer, rubric=rubric, aspect=aspect, own=bool(rubric) and rubric == aspect,
                        n_missing=int((rated & ~np.isfinite(x)).sum()))
            for statistic in STATISTICS["source"]:
                per = _per_source(x, y, ok, src, statistic)
                value, ci, n_src = _mean_over_sources(per, src)
                extra = {}
                if statistic == "spearman" and scorer != LENGTH_SCORER:
                    diff = per - length_per
                    extra = dict(zip(("vs_length", "vs_length_ci"), _mean_over_sources(diff, src)[:2]))
                n = int(sum(ok[idx].sum() for k, idx in enumerate(src.members) if math.isfinite(per[k])))
                rows.append(AgreementRow(**base, level="source", statistic=statistic, value=value, ci=ci, n=n,
                                         n_groups=n_src, **extra))
            everyone = np.arange(len(answers))
            kept = [idx[ok[idx]] for idx in src.replicates]
            for statistic in STATISTICS["pooled"]:
                value = _corr(x[ok], y[ok], statistic)
                reps = [_corr(x[i], y[i], statistic) for i in kept]
                rows.append(AgreementRow(**base, level="pooled", statistic=statistic, value=value, ci=_ci(reps),
                                         n=int(ok.sum()), n_groups=len({a.source for a, k in zip(answers, ok) if k})))
            if not with_systems:
                continue
            means = [_system_means(x, y, ok, systems, i) for i in kept]
            mx, my = _system_means(x, y, ok, systems, everyone)
            for statistic in STATISTICS["system"]:
                reps = [_corr(a, b, statistic) for a, b in means]
                rows.append(AgreementRow(**base, level="system", statistic=statistic, value=_corr(mx, my, statistic),
                                         ci=_ci(reps), n=int(ok.sum()), n_groups=len(mx)))
    return rows


def _pair_rows(pairs, scores, versions, aspects, n_boot, seed) -> list[AgreementRow]:
    rows = []
    qids = [p["question_id"] for p in pairs]
    diffs = {LENGTH_SCORER: [float(p["n_words_a"] - p["n_words_b"]) for p in pairs]}
    for rubric, version in versions.items():
        d = []
        for p in pairs:
            a = _num(scores.get(p["answer_id_a"], {}).get(rubric))
            b = _num(scores.get(p["answer_id_b"], {}).get(rubric))
            d.append(a - b if math.isfinite(a) and math.isfinite(b) else None)
        diffs[version] = d
    for aspect in aspects:
        judged = [(p.get("aspects") or {}).get(aspect) for p in pairs]
        if not any(j is not None for j in judged):
            continue
        for scorer, d in diffs.items():
            rubric = "" if scorer == LENGTH_SCORER else next(r for r, v in versions.items() if v == scorer)
            got = pair_agreement(rubric or "length", aspect, d, judged, qids, n_boot=n_boot, seed=seed)
            rows.append(AgreementRow(scorer=scorer, rubric=rubric, aspect=aspect, level="pairs",
                                     statistic="agreement", value=got.agreement, ci=tuple(got.ci), n=got.n_pairs,
                                     n_groups=got.n_questions, own=bool(rubric) and rubric == aspect,
                                     n_missing=got.n_missing))
    return rows


def _num(x) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else math.nan
