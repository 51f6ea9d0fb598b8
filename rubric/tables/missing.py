"""How the preference model reads a rubric that has no value for one answer of a pair.

A rubric may have nothing to judge on an answer (``coherence`` of a one-sentence answer, ``factuality`` without
a reference: it abstains) or its score may have failed for that answer. Dropping such pairs makes the
evaluation choose its own pairs: a model with a rubric that abstains on one-sentence answers would be measured
only on pairs of longer answers, and predict nothing for the rest. Instead the model reads the gap (after
scikit-learn's ``SimpleImputer(add_indicator=True)``, made antisymmetric for a pair):

- the missing side takes a fill value, so the rubric's difference is still defined: ``"mean"``, the mean 1-5 value
  of the rubric over the training split's answers (an answer about which the rubric says nothing is read as an
  average one), or ``"zero"``, a difference of 0 (read as equal to the other answer);
- a column ``missing_<rubric>`` is +1 when only answer a lacks the value, -1 when only b does, 0 otherwise, fitted
  like any feature: what people prefer when one answer is one the rubric could not read (a one-sentence answer
  against a longer one) is learned, weighted and shown in the contributions;
- both sides missing: a difference of 0 and an indicator of 0 (nothing to compare on that rubric);
- ``"drop"``: the pair leaves the model's rows (the rule before missing values were modelled; kept to measure it
  against, docs/preference.md).

The rule is fitted with the model (its fill values from the training split, its indicator columns for the rubrics
that had a one-sided gap there) and saved in ``model.json``, so a prediction anywhere reads the gap the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from rubric.errors import ConfigError

__all__ = ["MISSING_MODES", "DEFAULT_MISSING", "MissingRule", "indicator_column", "is_indicator_column",
           "fit_missing_rule", "missing_sides"]

#: The ways a missing side can be read (see the module docstring).
MISSING_MODES: tuple[str, ...] = ("mean", "zero", "drop")
#: The default: measured against the others on the shared preference sets (docs/preference.md).
DEFAULT_MISSING = "mean"

_INDICATOR_PREFIX = "missing_"


def indicator_column(rubric: str) -> str:
    """The name of a rubric's missing-side indicator column (``missing_coherence``)."""
    return _INDICATOR_PREFIX + rubric


def is_indicator_column(name: str) -> bool:
    """Whether a model column is a missing-side indicator (no rubric or style covariate is named so)."""
    return name.startswith(_INDICATOR_PREFIX)


def _bad(x) -> bool:
    return x is None or not math.isfinite(x)


@dataclass(frozen=True)
class MissingRule:
    """A fitted rule for missing values (see the module docstring).

    Attributes:
        mode: one of :data:`MISSING_MODES`.
        fill: rubric -> the 1-5 value a missing side takes ("mean" only; empty otherwise).
        indicators: the rubrics with a ``missing_<rubric>`` column, in column order.
    """

    mode: str = DEFAULT_MISSING
    fill: Mapping[str, float] = field(default_factory=dict)
    indicators: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in MISSING_MODES:
            raise ConfigError(f"'missing' must be one of {', '.join(MISSING_MODES)}, got {self.mode!r}")
        bad = {k: v for k, v in self.fill.items()
               if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)}
        if bad:
            raise ConfigError(f"missing-value fill must map rubrics to finite numbers, got {bad}")
        if self.mode != "mean" and self.fill:
            raise ConfigError(f"missing-value mode {self.mode!r} takes no fill values, got {dict(self.fill)}")
        if self.mode == "drop" and self.indicators:
            raise ConfigError("missing-value mode 'drop' has no indicator columns")
        if len(set(self.indicators)) != len(self.indicators):
            raise ConfigError(f"missing-value indicators must be distinct, got {list(self.indicators)}")
        object.__setattr__(self, "fill", dict(self.fill))
        object.__setattr__(self, "indicators", tuple(self.indicators))

    @property
    def columns(self) -> list[str]:
        """The indicator columns' names, in order."""
        return [indicator_column(r) for r in self.indicators]

    def difference(self, rubric: str, a, b, d) -> tuple[float | None, int]:
        """A pair's difference on ``rubric`` under this rule and its indicator value.

        Args:
            rubric: the rubric.
            a, b: the answers' 1-5 values (None or nan: missing).
            d: the table's difference (0 where both answers abstained, None where a side is missing).

        Returns:
            ``(difference, indicator)``; the difference is None when the pair cannot be read (mode "drop").
        """
        miss_a, miss_b = _bad(a), _bad(b)
        if not (miss_a or miss_b):
            return (None if _bad(d) else float(d)), 0
        if miss_a and miss_b:
            return (0.0 if self.mode != "drop" else (None if _bad(d) else float(d))), 0
        if self.mode == "drop":
            return None, 0
        indicator = 1 if miss_a else -1
        if self.mode == "zero" or rubric not in self.fill:
            return 0.0, indicator
        x = self.fill[rubric] if miss_a else float(a)
        y = self.fill[rubric] if miss_b else float(b)
        return x - y, indicator

    def to_dict(self) -> dict:
        return {"mode": self.mode, "fill": {k: float(v) for k, v in self.fill.items()},
                "indicators": list(self.indicators)}

    @classmethod
    def from_dict(cls, doc) -> "MissingRule":
        """The rule saved by :meth:`to_dict`.

        Raises:
            ConfigError: the document is not such a rule.
        """
        if not isinstance(doc, Mapping) or set(doc) != {"mode", "fill", "indicators"}:
            raise ConfigError(f"a missing-value rule is an object with mode, fill and indicators, got {doc!r}")
        if not isinstance(doc["fill"], Mapping) or not isinstance(doc["indicators"], list) or not all(
                isinstance(r, str) for r in doc["indicators"]):
            raise ConfigError(f"a missing-value rule's fill must be an object and its indicators a list of names, "
                              f"got {doc!r}")
        return cls(mode=doc["mode"], fill=dict(doc["fill"]), indicators=tuple(doc["indicators"]))


def missing_sides(pairs: pa.Table, rubric: str, rows: Sequence[int]) -> tuple[int, int]:
    """How many of ``rows`` lack ``rubric``'s value on exactly one answer, and on both."""
    a = pairs.column(f"a_{rubric}").to_pylist()
    b = pairs.column(f"b_{rubric}").to_pylist()
    one = sum(1 for i in rows if _bad(a[i]) != _bad(b[i]))
    both = sum(1 for i in rows if _bad(a[i]) and _bad(b[i]))
    return one, both


def fit_missing_rule(pairs: pa.Table, features: Sequence[str], rows: Sequence[int], mode: str = DEFAULT_MISSING, *,
                     indicators: bool = True) -> MissingRule:
    """The rule fitted on the training pairs ``rows``: each feature's mean 1-5 value over their distinct answers
    (mode "mean"), and an indicator column for each feature with a one-sided gap among them.

    Args:
        pairs: a pairs table (:func:`rubric.tables.pairs_table`).
        features: the rubrics the model uses.
        rows: the training split's table rows.
        mode: one of :data:`MISSING_MODES`.
        indicators: add the indicator columns (False: the fill alone, measured against it in docs/preference.md).

    Raises:
        ConfigError: an unknown mode, or a feature not in the table.
    """
    if mode not in MISSING_MODES:
        raise ConfigError(f"'missing' must be one of {', '.join(MISSING_MODES)}, got {mode!r}")
    if mode == "drop":
        return MissingRule(mode="drop")
    ids = {side: pairs.column(f"answer_id_{side}").to_pylist() for side in "ab"}
    fill: dict[str, float] = {}
    gaps: list[str] = []
    for r in features:
        if f"a_{r}" not in pairs.column_names:
            raise ConfigError(f"feature {r!r} is not in this table")
        if mode == "mean":
            seen: dict[str, float] = {}
            for side in "ab":
                values = pairs.column(f"{side}_{r}").to_pylist()
                for i in rows:
                    if not _bad(values[i]):
                        seen.setdefault(ids[side][i], float(values[i]))
            if seen:
                fill[r] = sum(seen.values()) / len(seen)
        if indicators and missing_sides(pairs, r, rows)[0]:
            gaps.append(r)
    return MissingRule(mode=mode, fill=fill, indicators=tuple(gaps))
