"""RAG-QA Arena's statistics: win rates against the reference, Elo / Bradley-Terry ratings, human agreement.

Pure: no model here. The judge's prompts are declared here: ``arena.pairwise.v1`` (1 / 2 / 0 = not sure, with the
paper's in-context examples and its system turn; the rating is read after the pre-fill
``<thinking></thinking>\n<rating>``) and ``arena.pairwise_reasoning.v1`` (the same prompt pre-filled with
``<thinking>`` only: the judge writes its own reasoning, then the rating is read after
:func:`arena_verdict_prefill`). The inputs come from :mod:`rubric.protocols.arena_data`.

Outcomes
    A pair's outcome is ``a`` (the system's answer is better), ``b`` (the other answer, the LFRQA
    reference, is better) or ``tie``; None when the judge gave none (counted, never guessed).

Win rates
    RAG-QA Arena's Table 3: per system, the share of its pairs it wins against the reference (W) and
    wins or ties (W+T), each with a question-clustered bootstrap 95% CI
    (:func:`rubric.preference.metrics.clustered_mean`).

Ratings, as Chatbot Arena computes them (Chiang et al. 2024, its published notebook)
    - :func:`online_elo`: battles in order, ``K=4``, scale 400, base 10, every rating starting at
      1000; a tie scores 0.5.
    - :func:`bradley_terry`: the maximum-likelihood Bradley-Terry model via an unpenalised logistic
      regression without intercept on the win matrix, in which each win counts twice and each tie
      once for both sides (i.e. a tie is half a win each way); rating = 400 * coefficient + 1000, the
      coefficients summing to zero.
    - :func:`rating_intervals`: percentile bootstrap CIs, resampling battles (Chatbot Arena) or
      questions (all battles of a drawn question; battles about one question share its answers).

Agreement with people
    :func:`human_agreement`: Cohen's kappa and Pearson's r (outcomes coded a = 1, tie = 0, b = -1)
    between the judge's and the human outcomes, on the pairs that have both (RAG-QA Arena's Table 4).
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rubric.protocols.arena_data import REFERENCE_SYSTEM
from rubric.config import check_range
from rubric.errors import ConfigError
from rubric.preference import ClusteredMean, clustered_mean, question_bootstrap_weights
from rubric.protocols.templates import declare_protocol_prompt

__all__ = [
    "ARENA_THINKING_PREFILL",
    "ARENA_REASONING_VERSION",
    "arena_verdict_prefill",
    "OUTCOMES",
    "WINNERS",
    "ELO_K",
    "ELO_SCALE",
    "ELO_BASE",
    "ELO_INIT",
    "WinRate",
    "win_rates",
    "Battle",
    "battles_against",
    "online_elo",
    "bradley_terry",
    "RatingInterval",
    "rating_intervals",
    "HumanAgreement",
    "human_agreement",
]

logger = logging.getLogger(__name__)

#: A pair's outcome: the system's answer better, the other better, or a tie.
OUTCOMES: tuple[str, ...] = ("a", "b", "tie")
#: A battle's winner, spelled as in Chatbot Arena's battle tables.
WINNERS: tuple[str, ...] = ("model_a", "model_b", "tie")
ELO_K = 4.0
ELO_SCALE = 400.0
ELO_BASE = 10.0
ELO_INIT = 1000.0

#: Where RAG-QA Arena's judge starts its reasoning (generation of the thinking, CoT mode).
ARENA_THINKING_PREFILL = "<thinking>"
_THINKING_END = "</thinking>"
_RATING = "<rating>"
#: RAG-QA Arena's judge that writes its own reasoning (pre-fill ``<thinking>``) before the rating is read.
ARENA_REASONING_VERSION = "arena.pairwise_reasoning.v1"
_SOURCE = "RAG-QA Arena (Han et al.), appendix Tables 13-15 and pairwise_lfrqa_examples.json"
_JUDGE = dict(protocol="arena", layout="pairwise", tokens=("1", "2", "0"), fields=("question", "answer_1", "answer_2"),
              verdicts=("1", "2", "tie"), verdict_format="<rating>{}</rating>", system=True, file="arena.pairwise.v1")
declare_protocol_prompt("arena.pairwise.v1", source=_SOURCE, prefill=f"{ARENA_THINKING_PREFILL}{_THINKING_END}\n{_RATING}",
                        **_JUDGE)  # type: ignore[arg-type]


def arena_verdict_prefill(reasoning: str) -> str:
    """The assistant pre-fill that reads RAG-QA Arena's rating after the judge's own reasoning.

    The reasoning (generated after :data:`ARENA_THINKING_PREFILL`) is cut at its first ``</thinking>``
    (a rating the model already wrote is replaced by the distribution read here) and closed:
    ``"<thinking>REASONING</thinking>\\n<rating>"``. With no reasoning this is the template's own pre-fill.
    """
    kept = reasoning.split(_THINKING_END, 1)[0]
    kept = kept.removeprefix(ARENA_THINKING_PREFILL).strip()
    return f"{ARENA_THINKING_PREFILL}{kept}{_THINKING_END}\n{_RATING}"


# the same prompt; the judge writes its own thinking after "<thinking>" before the rating is read
# (arena_verdict_prefill closes it): models.judging.ProtocolJudgeScorer generates it first
declare_protocol_prompt(ARENA_REASONING_VERSION, source=_SOURCE + "; the judge's own reasoning first (lfqa-rubric)",
                        prefill=ARENA_THINKING_PREFILL, close_reasoning=arena_verdict_prefill,
                        **_JUDGE)  # type: ignore[arg-type]


def _check_outcomes(outcomes: Sequence[str | None], what: str = "outcomes") -> None:
    bad = sorted({str(o) for o in outcomes if o is not None and o not in OUTCOMES})
    if bad:
        raise ConfigError(f"{what} must be 'a', 'b', 'tie' or None, got {bad}")


# --- win rates -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class WinRate:
    """One system's win and win+tie rate against the reference.

    Attributes:
        system: the system.
        win: share of its decided pairs it wins, with the question-bootstrap CI.
        win_tie: share it wins or ties, with the CI.
        n: decided pairs.
        n_questions: their distinct questions.
        n_undecided: pairs without an outcome, left out.
    """

    system: str
    win: ClusteredMean
    win_tie: ClusteredMean
    n: int
    n_questions: int
    n_undecided: int


def win_rates(systems: Sequence[str], outcomes: Sequence[str | None], question_ids: Sequence[str], *,
              n_boot: int = 1000, seed: int = 0) -> list[WinRate]:
    """Win and win+tie rates per system against the reference, with question-clustered CIs.

    Args:
        systems: each pair's system.
        outcomes: each pair's outcome: ``a`` (the system wins), ``b`` (the reference wins), ``tie``,
            or None (undecided: left out and counted).
        question_ids: each pair's question.
        n_boot: bootstrap replicates.
        seed: their seed.

    Returns:
        One :class:`WinRate` per system, in first-seen order.

    Raises:
        ConfigError: the sequences differ in length or an outcome is not a/b/tie/None.
    """
    if not len(systems) == len(outcomes) == len(question_ids):
        raise ConfigError(f"systems, outcomes and question_ids must have one entry per pair, got lengths "
                          f"{len(systems)}, {len(outcomes)} and {len(question_ids)}")
    _check_outcomes(outcomes)
    out: list[WinRate] = []
    for system in dict.fromkeys(systems):
        rows = [(o, q) for s, o, q in zip(systems, outcomes, question_ids) if s == system]
        decided = [(o, q) for o, q in rows if o is not None]
        qids = [q for _, q in decided]
        win = clustered_mean([float(o == "a") for o, _ in decided], groups=qids, n_boot=n_boot, seed=seed)
        win_tie = clustered_mean([float(o != "b") for o, _ in decided], groups=qids, n_boot=n_boot, seed=seed)
        out.append(WinRate(system=system, win=win, win_tie=win_tie, n=len(decided), n_questions=win.n_questions,
                           n_undecided=len(rows) - len(decided)))
    return out


# --- battles and ratings -------------------------------------------------------------------------

@dataclass(frozen=True)
class Battle:
    """One comparison, as a row of Chatbot Arena's battle table.

    Attributes:
        model_a: the first system.
        model_b: the second system.
        winner: ``model_a``, ``model_b`` or ``tie``.
        question_id: the question (the bootstrap's cluster).
    """

    model_a: str
    model_b: str
    winner: str
    question_id: str = ""

    def __post_init__(self) -> None:
        if self.winner not in WINNERS:
            raise ConfigError(f"'winner' must be one of {list(WINNERS)}, got {self.winner!r}")
        if self.model_a == self.model_b:
            raise ConfigError(f"a battle needs two different systems, got {self.model_a!r} twice")


def battles_against(systems: Sequence[str], outcomes: Sequence[str | None], question_ids: Sequence[str], *,
                    opponent: str = REFERENCE_SYSTEM) -> list[Battle]:
    """RAG-QA Arena's battles: each system against ``opponent`` (the reference), undecided pairs left out.

    Args:
        systems: each pair's system (``model_a``).
        outcomes: ``a`` (the system wins), ``b`` (the opponent wins), ``tie`` or None.
        question_ids: each pair's question.
        opponent: the other side of every battle (``model_b``).

    Raises:
        ConfigError: the sequences differ in length, an outcome is invalid, or a system is the opponent.
    """
    if not len(systems) == len(outcomes) == len(question_ids):
        raise ConfigError(f"systems, outcomes and question_ids must have one entry per pair, got lengths "
                          f"{len(systems)}, {len(outcomes)} and {len(question_ids)}")
    _check_outcomes(outcomes)
    winner = {"a": "model_a", "b": "model_b", "tie": "tie"}
    return [Battle(s, opponent, winner[o], str(q)) for s, o, q in zip(systems, outcomes, question_ids)
            if o is not None]


def _check_elo(k: float, scale: float, base: float) -> None:
    for name, v in (("k", k), ("scale", scale)):
        if not (math.isfinite(v) and v > 0):
            raise ConfigError(f"'{name}' must be a positive number, got {v}")
    if not (math.isfinite(base) and base > 1):
        raise ConfigError(f"'base' must be a number > 1, got {base}")


def online_elo(battles: Sequence[Battle], *, k: float = ELO_K, scale: float = ELO_SCALE, base: float = ELO_BASE,
               init: float = ELO_INIT) -> dict[str, float]:
    """Chatbot Arena's online Elo: update both ratings after each battle, in the order given.

    For a battle of ``a`` and ``b`` with ratings ``ra``, ``rb``: ``ea = 1 / (1 + base ** ((rb - ra) /
    scale))``, ``sa`` = 1 (a wins), 0 (b wins) or 0.5 (tie); ``ra += k * (sa - ea)`` and
    ``rb += k * (1 - sa - eb)``. The result depends on the battles' order (hence the bootstrap).

    Returns:
        system -> rating, in first-seen order.

    Raises:
        ConfigError: ``k``, ``scale`` or ``base`` is out of range.
    """
    _check_elo(k, scale, base)
    rating: dict[str, float] = {}
    for bt in battles:
        ra = rating.setdefault(bt.model_a, init)
        rb = rating.setdefault(bt.model_b, init)
        ea = 1.0 / (1.0 + base ** ((rb - ra) / scale))
        eb = 1.0 / (1.0 + base ** ((ra - rb) / scale))
        sa = 1.0 if bt.winner == "model_a" else 0.0 if bt.winner == "model_b" else 0.5
        rating[bt.model_a] = ra + k * (sa - ea)
        rating[bt.model_b] = rb + k * (1.0 - sa - eb)
    return rating


def _index(battles: Sequence[Battle]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Systems in first-seen order, and each battle's (index a, index b, winner code 0/1/2)."""
    systems = list(dict.fromkeys(s for bt in battles for s in (bt.model_a, bt.model_b)))
    pos = {s: i for i, s in enumerate(systems)}
    ia = np.array([pos[bt.model_a] for bt in battles], dtype=int)
    ib = np.array([pos[bt.model_b] for bt in battles], dtype=int)
    w = np.array([WINNERS.index(bt.winner) for bt in battles], dtype=int)
    return systems, ia, ib, w


def _win_matrix(p: int, ia: np.ndarray, ib: np.ndarray, w: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """``W[i, j]`` = 2 x (battles i won against j) + (ties of i and j), weighted: Chatbot Arena's ``ptbl_win``."""
    wt = np.ones(len(ia)) if weights is None else np.asarray(weights, dtype=float)
    m = np.zeros((p, p))
    np.add.at(m, (ia[w == 0], ib[w == 0]), 2.0 * wt[w == 0])
    np.add.at(m, (ib[w == 1], ia[w == 1]), 2.0 * wt[w == 1])
    np.add.at(m, (ia[w == 2], ib[w == 2]), wt[w == 2])
    np.add.at(m, (ib[w == 2], ia[w == 2]), wt[w == 2])
    return m


def _bt_fit(m: np.ndarray, scale: float, base: float, init: float) -> np.ndarray:
    """Bradley-Terry ratings from a win matrix; raises ConfigError when they are unbounded."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    p = m.shape[0]
    played = m + m.T
    rows, ys, wts = [], [], []
    for i in range(p):
        for j in range(p):
            if i == j or played[i, j] == 0:
                continue
            x = np.zeros(p)
            x[i], x[j] = math.log(base), -math.log(base)
            rows += [x, x]
            ys += [1.0, 0.0]
            wts += [m[i, j], m[j, i]]
    if not rows:
        raise ConfigError("no battles between two systems")
    won, lost = m.sum(axis=1), m.sum(axis=0)
    if np.any(won == 0) or np.any(lost == 0):
        raise ConfigError("Bradley-Terry ratings are unbounded: a system won (or lost) every battle it fought")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        try:
            # C=inf: no penalty (Chatbot Arena's penalty=None); no intercept, so the coefficients stay
            # centred (every row's entries sum to zero) and the mean rating is ``init``
            lr = LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-6, max_iter=1000)
            lr.fit(np.array(rows), np.array(ys), sample_weight=np.array(wts))
        except ConvergenceWarning as e:
            raise ConfigError(f"Bradley-Terry fit did not converge (the ratings may be unbounded): {e}") from e
    return scale * lr.coef_[0] + init


def bradley_terry(battles: Sequence[Battle], *, scale: float = ELO_SCALE, base: float = ELO_BASE,
                  init: float = ELO_INIT) -> dict[str, float]:
    """Chatbot Arena's maximum-likelihood Elo: a Bradley-Terry model fitted by logistic regression.

    Each ordered pair of systems (i, j) that met gives two rows, ``x_i = log(base)``, ``x_j = -log(base)``,
    with outcome 1 weighted ``W[i, j]`` and outcome 0 weighted ``W[j, i]``, where ``W[i, j]`` counts
    i's wins over j twice and their ties once (a tie is half a win for each); the model has no
    intercept and no penalty. Ratings are ``scale * coefficient + init``; they do not depend on the
    battles' order or on which system is ``model_a``.

    Returns:
        system -> rating, in first-seen order.

    Raises:
        ConfigError: no battles, a system that won or lost every battle it fought (its rating would be
            infinite), a fit that does not converge, or ``scale``/``base`` out of range.
    """
    _check_elo(1.0, scale, base)
    if not battles:
        raise ConfigError("no battles")
    systems, ia, ib, w = _index(battles)
    ratings = _bt_fit(_win_matrix(len(systems), ia, ib, w), scale, base, init)
    return {s: float(r) for s, r in zip(systems, ratings)}


@dataclass(frozen=True)
class RatingInterval:
    """A system's rating with its bootstrap 95% CI.

    Attributes:
        system: the system.
        rating: the rating on all battles.
        ci: (low, high), percentiles 2.5 and 97.5 of the replicates' ratings.
        n_battles: battles the system fought.
    """

    system: str
    rating: float
    ci: tuple[float, float]
    n_battles: int


def rating_intervals(battles: Sequence[Battle], *, method: str = "bt", unit: str = "question", n_boot: int = 1000,
                     seed: int = 0, k: float = ELO_K, scale: float = ELO_SCALE, base: float = ELO_BASE,
                     init: float = ELO_INIT) -> tuple[list[RatingInterval], int]:
    """Ratings with bootstrap CIs, sorted best first.

    Args:
        battles: the battles (for ``unit="question"`` each with its ``question_id``).
        method: ``bt`` (:func:`bradley_terry`) or ``online`` (:func:`online_elo`).
        unit: ``battle`` resamples battles with replacement (Chatbot Arena's bootstrap; for online Elo
            the resample's random order is the replicate's order); ``question`` resamples questions
            and takes all their battles, in a random order.
        n_boot: replicates.
        seed: their seed.
        k: online Elo's step.
        scale: rating scale.
        base: rating base.
        init: initial (online) or mean (bt) rating.

    Returns:
        (intervals best first, replicates left out). A Bradley-Terry replicate whose ratings are
        unbounded (a resample where a system won every battle) is left out and counted; a system
        absent from a replicate has no rating there and its CI uses the replicates it is in.

    Raises:
        ConfigError: an unknown method or unit, ``n_boot < 1``, or a full-data fit that fails.
    """
    if method not in ("bt", "online"):
        raise ConfigError(f"'method' must be 'bt' or 'online', got {method!r}")
    if unit not in ("battle", "question"):
        raise ConfigError(f"'unit' must be 'battle' or 'question', got {unit!r}")
    check_range("n_boot", n_boot, low=1)
    if not battles:
        raise ConfigError("no battles")
    systems, ia, ib, w = _index(battles)
    p = len(systems)

    def fit(idx: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
        if method == "bt":
            if weights is None:
                weights = np.bincount(idx, minlength=len(battles)).astype(float)
            return _bt_fit(_win_matrix(p, ia, ib, w, weights), scale, base, init)
        got = online_elo([battles[i] for i in idx], k=k, scale=scale, base=base, init=init)
        return np.array([got.get(s, np.nan) for s in systems])

    point = fit(np.arange(len(battles)), np.ones(len(battles)))
    rng = np.random.default_rng(seed)
    reps: list[np.ndarray] = []
    failed = 0
    if unit == "question":
        _, g = np.unique(np.array([bt.question_id for bt in battles], dtype=object).astype(str), return_inverse=True)
        members = [np.flatnonzero(g == q) for q in range(int(g.max()) + 1)]
        counts = question_bootstrap_weights(len(members), n_boot=n_boot, seed=seed)
    for r in range(n_boot):
        if unit == "battle":
            idx = rng.integers(0, len(battles), size=len(battles))
        else:
            idx = np.concatenate([np.repeat(members[q], c) for q, c in enumerate(counts[r]) if c])
            idx = rng.permutation(idx)
        present = np.zeros(p, dtype=bool)
        present[ia[idx]] = present[ib[idx]] = True
        if method == "bt" and not present.all():
            # a system absent from the resample: fit the others only
            keep = np.flatnonzero(present)
            remap = -np.ones(p, dtype=int)
            remap[keep] = np.arange(len(keep))
            m = _win_matrix(len(keep), remap[ia[idx]], remap[ib[idx]], w[idx])
            try:
                sub = _bt_fit(m, scale, base, init)
            except ConfigError:
                failed += 1
                continue
            full = np.full(p, np.nan)
            full[keep] = sub
            reps.append(full)
            continue
        try:
            reps.append(fit(idx, None))
        except ConfigError:
            failed += 1
    if failed:
        logger.warning("%d of %d bootstrap replicates had unbounded ratings and were left out", failed, n_boot)
    arr = np.array(reps) if reps else np.full((1, p), np.nan)
    fought = np.bincount(np.concatenate([ia, ib]), minlength=p)
    out = []
    for i, s in enumerate(systems):
        col = arr[:, i][np.isfinite(arr[:, i])]
        ci = (float(np.percentile(col, 2.5)), float(np.percentile(col, 97.5))) if len(col) else (math.nan, math.nan)
        out.append(RatingInterval(system=s, rating=float(point[i]), ci=ci, n_battles=int(fought[i])))
    out.sort(key=lambda x: -x.rating)
    return out, failed


# --- agreement with people -----------------------------------------------------------------------

@dataclass(frozen=True)
class HumanAgreement:
    """How a judge's outcomes agree with people's on the same pairs.

    Attributes:
        n: pairs with both a judge and a human outcome.
        n_skipped: pairs left out because one of the two is missing.
        accuracy: the share of those pairs where they agree.
        kappa: Cohen's kappa over a/b/tie (nan when undefined: fewer than 2 pairs, or both raters
            constant and equal).
        pearson: Pearson's r of the coded outcomes (a = 1, tie = 0, b = -1); nan when either is constant.
    """

    n: int
    n_skipped: int
    accuracy: float
    kappa: float
    pearson: float


_CODE = {"a": 1.0, "tie": 0.0, "b": -1.0}


def human_agreement(judge: Sequence[str | None], human: Sequence[str | None]) -> HumanAgreement:
    """Cohen's kappa and Pearson's r between a judge's and people's outcomes (RAG-QA Arena Table 4).

    Raises:
        ConfigError: the sequences differ in length or hold a value that is not a/b/tie/None.
    """
    from sklearn.metrics import cohen_kappa_score

    if len(judge) != len(human):
        raise ConfigError(f"judge and human must have one entry per pair, got lengths {len(judge)} and {len(human)}")
    _check_outcomes(judge, "judge outcomes")
    _check_outcomes(human, "human outcomes")
    both = [(j, h) for j, h in zip(judge, human) if j is not None and h is not None]
    n = len(both)
    if n == 0:
        return HumanAgreement(0, len(judge), math.nan, math.nan, math.nan)
    js = [j for j, _ in both]
    hs = [h for _, h in both]
    acc = sum(j == h for j, h in both) / n
    kappa = math.nan
    if n >= 2 and not (len(set(js)) == 1 and js == hs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            kappa = float(cohen_kappa_score(hs, js, labels=list(OUTCOMES)))
    x = np.array([_CODE[j] for j in js])
    y = np.array([_CODE[h] for h in hs])
    pearson = math.nan
    if n >= 2 and x.std() > 0 and y.std() > 0:
        pearson = float(np.corrcoef(x, y)[0, 1])
    return HumanAgreement(n=n, n_skipped=len(judge) - n, accuracy=acc, kappa=kappa, pearson=pearson)
