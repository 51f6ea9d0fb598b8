"""What a run cost and what failed: the per-row cost table, its totals per rubric or judge, the failure budget.

A score carries its cost (``rubric.scoring.Score.cost``: prompt, cached prompt and generated tokens where
an engine counted them; ``seconds``, its share of the engine seconds of the batch it rode in, see
``models.scorer_set``), and the store keeps it with the score, so a score reused from an earlier run keeps
the cost it had when it was made and is counted as ``reused``, not as free.

- :func:`cost_table`: one row per stored id x name (``costs.parquet``), in id order.
- :func:`cost_summary`: per name, the sums of those rows, their figures per 1,000 rows (equal to the
  sums x 1000 / rows, every row counted, reused ones at their original cost), the share of the run's
  seconds, what was reused and what failed with its commonest reasons: the manifest's ``cost``.
- :func:`over_budget`: the names whose failed fraction is over ``--max-failed``, one line each.
- :func:`roofline_estimate`: seconds on a named GPU from the measured tokens (docs/ray.md's arithmetic,
  here once), always labelled as an estimate.
- :func:`cost_markdown`: the cost section of the reports (Markdown; the HTML report renders it too).

Seconds vary run to run; tokens do not, except the cached ones (they depend on what the engine's
prefix cache held from earlier calls in the process).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rubric.errors import ConfigError
from rubric.scoring import is_abstention

__all__ = ["COST_FILE", "COST_COLUMNS", "TOKEN_KEYS", "DEFAULT_MAX_FAILED", "CostRow", "cost_table",
           "cost_summary", "over_budget", "budget_lines", "GPUS", "MODEL_PARAMETERS", "roofline_estimate",
           "cost_markdown", "check_max_failed", "budget_refusal", "cost_line"]

#: The per-row cost table's file in a job's output folder.
COST_FILE = "costs.parquet"
#: Token counts a score's cost may hold (None: not an LLM, or an engine that does not count them).
TOKEN_KEYS = ("prompt_tokens", "cached_prompt_tokens", "generated_tokens")
#: The cost table's columns: the id, the rubric or judge, the tokens, the seconds, reused, failed.
COST_COLUMNS = ("id", "name", *TOKEN_KEYS, "engine_seconds", "reused", "failed")
#: ``--max-failed``'s default: a run where more than 5% of one rubric's (or judge's) rows failed exits
#: non-zero. A few failures (an answer too long for the context, an unparsable verdict) are ordinary in a
#: large run; a twentieth of a rubric is a broken prompt, model or engine, not bad luck.
DEFAULT_MAX_FAILED = 0.05
#: Commonest failure reasons kept per name.
_TOP_REASONS = 3


@dataclass(frozen=True)
class CostRow:
    """One stored id x name: its score's cost, whether it was reused from an earlier run, its error."""

    id: str
    name: str
    cost: Mapping[str, Any]
    reused: bool
    error: str | None


def check_max_failed(value: float) -> float:
    """``--max-failed``: a fraction in [0, 1] (ConfigError otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise ConfigError(f"'max_failed' must be a fraction between 0 and 1, got {value!r}")
    return float(value)


def cost_table(rows: Iterable[CostRow]):
    """The per-row cost table (``costs.parquet``): :data:`COST_COLUMNS`, rows in the order given."""
    import pyarrow as pa

    cols: dict[str, list] = {c: [] for c in COST_COLUMNS}
    for r in rows:
        cols["id"].append(r.id)
        cols["name"].append(r.name)
        for k in TOKEN_KEYS:
            v = r.cost.get(k)
            cols[k].append(None if v is None else int(v))
        s = r.cost.get("seconds")
        cols["engine_seconds"].append(None if s is None else float(s))
        cols["reused"].append(bool(r.reused))
        cols["failed"].append(r.error is not None and not is_abstention(r.error))
    types = {"id": pa.string(), "name": pa.string(), **{k: pa.int64() for k in TOKEN_KEYS},
             "engine_seconds": pa.float64(), "reused": pa.bool_(), "failed": pa.bool_()}
    return pa.table({c: pa.array(v, types[c]) for c, v in cols.items()})


#: Where a judge's error says which order of the pair failed ("order ab: ", ``rubric.judging.pair_outcome``): a
#: place, not a reason.
_ORDER = re.compile(r"^order (ab|ba): ")


def _reason(error: str, name: str) -> str:
    # the reason's kind, not its row-specific details: "ValueError: bad row 17" -> "ValueError";
    # a judge's "judge.plain.v1: order ab: no parseable vote in 3: no verdict in '...'" -> "no parseable vote in 3"
    text = error[len(name) + 2:] if error.startswith(f"{name}: ") else error
    text = _ORDER.sub("", text)
    head = text.split(":", 1)[0].strip()
    return head if head and len(head) <= 80 else text[:80]


def cost_summary(rows: Iterable[CostRow], names: Sequence[str], *, models: Mapping[str, str] | None = None) -> dict:
    """Per name, what its rows cost (the manifest's ``cost``; see the module docstring).

    Args:
        rows: every stored id x name of the job (reused ones included).
        names: the rubrics or judges, in the job's order (each gets an entry, rows or not).
        models: name -> the model id that made it (for the roofline estimate; absent: no estimate).

    Returns:
        ``{"per_name": {name: {...}}, "how": "..."}``: per name ``rows``, ``scored_now``, ``reused``,
        ``failed``, ``abstained`` (rows the rubric had nothing to judge on: missing, not failed, never over a
        budget), ``failed_fraction``, ``reasons`` (commonest first), the sums (tokens: None when no row
        counted them; ``seconds``), ``per_1000`` (the sums x 1000 / rows), ``share_of_seconds``, and
        ``estimate`` (:func:`roofline_estimate`, per 1,000 rows) where the model is known.
    """
    per: dict[str, dict] = {}
    reasons: dict[str, Counter] = {}
    for n in names:
        per[n] = {"rows": 0, "scored_now": 0, "reused": 0, "failed": 0, "abstained": 0, **{k: None for k in TOKEN_KEYS},
                  "seconds": 0.0, "reused_seconds": 0.0}
        reasons[n] = Counter()
    for r in rows:
        e = per.get(r.name)
        if e is None:
            continue
        e["rows"] += 1
        e["reused" if r.reused else "scored_now"] += 1
        if is_abstention(r.error):  # nothing to judge on the row: a missing value, not a failure
            e["abstained"] += 1
        elif r.error is not None:
            e["failed"] += 1
            reasons[r.name][_reason(r.error, r.name)] += 1
        for k in TOKEN_KEYS:
            v = r.cost.get(k)
            if v is not None:
                e[k] = (e[k] or 0) + int(v)
        s = float(r.cost.get("seconds") or 0.0)
        e["seconds"] += s
        if r.reused:
            e["reused_seconds"] += s
    total_s = sum(e["seconds"] for e in per.values())
    for n, e in per.items():
        rows_n = e["rows"]
        e["failed_fraction"] = e["failed"] / rows_n if rows_n else 0.0
        e["reasons"] = [[why, k] for why, k in reasons[n].most_common(_TOP_REASONS)]
        e["per_1000"] = {k: (None if e[k] is None else e[k] * 1000 / rows_n) if rows_n else None
                         for k in (*TOKEN_KEYS, "seconds")}
        e["share_of_seconds"] = e["seconds"] / total_s if total_s > 0 else None
        model = (models or {}).get(n)
        e["estimate"] = roofline_estimate(e["per_1000"], model) if model and rows_n else None
    return {"per_name": per,
            "how": ("tokens as the engine counted them; seconds: each batch's engine seconds shared over its rows "
                    "in proportion to the tokens computed (evenly where none were counted); reused rows keep the "
                    "cost they had when they were made; per_1000 = sums x 1000 / rows")}


def cost_line(cost: Mapping[str, Any]) -> str:
    """A run's cost per 1,000 rows in one log line (per name: rows, reused, failed, seconds, prompt tokens)."""
    return "; ".join(f"{n}: {e['rows']} rows ({e['reused']} reused, {e['failed']} failed), "
                     f"{e['per_1000']['seconds'] or 0:,.1f} s"
                     + ("" if e["per_1000"]["prompt_tokens"] is None else
                        f", {e['per_1000']['prompt_tokens']:,.0f} prompt tokens") for n, e in cost["per_name"].items())


def over_budget(summary: Mapping[str, Any], max_failed: float) -> dict[str, dict]:
    """Names whose failed fraction is over ``max_failed`` (their summary entries)."""
    return {n: e for n, e in summary["per_name"].items() if e["rows"] and e["failed_fraction"] > max_failed}


def budget_lines(over: Mapping[str, Mapping[str, Any]], max_failed: float, what: str = "rubric") -> list[str]:
    """One line per name over the failure budget: how many rows, the commonest reasons."""
    lines = []
    for n, e in over.items():
        why = "; ".join(f"{reason} ({k})" for reason, k in e["reasons"])
        lines.append(f"{what} {n}: {e['failed']} of {e['rows']} rows failed ({e['failed_fraction']:.1%}, over the "
                     f"--max-failed budget of {max_failed:.1%}); commonest: {why}")
    return lines


def budget_refusal(cost: Mapping[str, Any] | None, used: Sequence[str] | None, where: str, *,
                   features: bool = True) -> str | None:
    """Why a model must not be fitted on a table whose run had ``used`` rubrics (None: any) over its failure budget
    (one line), or None. ``cost``: the run's manifest ``cost`` (None: a run from before the budget existed);
    ``features``: the command can leave a rubric out (``fit --features``; ``transfer`` cannot)."""
    if not cost:
        return None
    over = [n for n in cost.get("over_budget", []) if used is None or n in used]
    if not over:
        return None
    per = cost.get("per_name", {})
    what = ", ".join(f"{n} ({per[n]['failed']} of {per[n]['rows']} rows failed)" if n in per else n for n in over)
    leave_out = " leave the rubric out (--features)," if features else ""
    return (f"{where}: {what} over the run's failure budget of {cost.get('max_failed', DEFAULT_MAX_FAILED):.1%}; "
            f"re-score the failed cells (score ... --retry-failed),{leave_out} or fit anyway (--allow-over-budget)")


# --- the roofline estimate (docs/ray.md, "Against the prefill roofline") ---------------------------

#: GPU -> (peak dense bf16 FLOP/s, memory bandwidth in bytes/s): the vendor's figures docs/ray.md uses.
GPUS: dict[str, tuple[float, float]] = {"H100": (790e12, 3.35e12)}
#: Model id -> parameters (dense), for the estimate; a model not named here gets no estimate.
MODEL_PARAMETERS: dict[str, float] = {
    "HuggingFaceTB/SmolLM2-135M-Instruct": 1.35e8,
    "Qwen/Qwen2.5-7B-Instruct": 7.6e9,
}
#: Sequences per decode step assumed by the decode bound (docs/ray.md's factuality estimate).
DECODE_BATCH = 128


def roofline_estimate(per_1000: Mapping[str, Any], model: str, gpu: str = "H100") -> dict | None:
    """Seconds per 1,000 rows on ``gpu`` at its roofline, from measured tokens: an estimate, not a measurement.

    Prefill runs at most ``peak / (2 x parameters)`` tokens/s (attention left out); a decode step reads the
    bf16 weights (``2 x parameters`` bytes) once for :data:`DECODE_BATCH` sequences. Computed prompt tokens
    are the prompt tokens not served from the prefix cache. Real engines reach a fraction of these bounds
    (docs/ray.md: 50% is a round guess), so the figure is a lower bound on seconds.

    Returns:
        ``{"gpu", "model", "seconds_per_1000", "label"}``, or None when the model's size or the tokens are unknown.
    """
    params = MODEL_PARAMETERS.get(model)
    if params is None or gpu not in GPUS or per_1000.get("prompt_tokens") is None:
        return None
    peak, bandwidth = GPUS[gpu]
    computed = per_1000["prompt_tokens"] - (per_1000.get("cached_prompt_tokens") or 0)
    prefill = computed / (peak / (2 * params))
    decode = (per_1000.get("generated_tokens") or 0) / (DECODE_BATCH * bandwidth / (2 * params))
    return {"gpu": gpu, "model": model, "seconds_per_1000": prefill + decode,
            "label": f"estimate: {gpu} roofline (prefill {peak:.3g} FLOP/s, decode {bandwidth:.3g} B/s), not measured"}


def _num(v: Any, fmt: str = "{:,.0f}") -> str:
    return "—" if v is None else fmt.format(v)


def cost_markdown(cost: Mapping[str, Any], *, what: str = "rubric", max_failed: float | None = None,
                  rows_noun: str = "answers") -> str:
    """The cost section of a report, from a manifest's ``cost`` (a :func:`cost_summary`)."""
    per = cost.get("per_name", {})
    lines = ["## What the run cost", "",
             f"Per {what}, as measured: seconds and tokens per 1,000 {rows_noun} (reused rows at the cost they had "
             "when they were made), the share of the run's seconds, what was reused from the store and what failed. "
             f"How: {cost.get('how', '')}.", "",
             f"| {what} | rows | reused | failed | seconds / 1k | prompt tokens / 1k | cached / 1k | generated / 1k "
             "| share of seconds | estimate: s / 1k on a GPU |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for n, e in per.items():
        p = e["per_1000"]
        mark = " **over budget**" if max_failed is not None and e["rows"] and e["failed_fraction"] > max_failed else ""
        est = e.get("estimate")
        est_s = f"{est['seconds_per_1000']:.3g} ({est['label']})" if est else "—"
        share = "—" if e["share_of_seconds"] is None else f"{e['share_of_seconds']:.1%}"
        lines.append(f"| {n}{mark} | {e['rows']:,} | {e['reused']:,} | {e['failed']:,} ({e['failed_fraction']:.1%}) | "
                     f"{_num(p['seconds'], '{:.3f}')} | {_num(p['prompt_tokens'])} | "
                     f"{_num(p['cached_prompt_tokens'])} | {_num(p['generated_tokens'])} | {share} | {est_s} |")
    return "\n".join(lines) + "\n"
