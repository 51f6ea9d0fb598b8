"""Rescaling raw rubric values to the common 1-5 scale."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rubric.errors import ConfigError

__all__ = ["minmax_1_5", "FittedMinMax"]


def minmax_1_5(raw: float, lo: float, hi: float) -> float:
    """Map ``raw`` from the range ``[lo, hi]`` to ``[1, 5]`` (clipped).

    This is the paper's reference rescaling: 0-1 -> 1+4x, fluency 1-3 -> 1+2(x-1), binary 0/1 -> 1/5.
    """
    if not hi > lo:
        raise ConfigError(f"rescale range must have hi > lo, got [{lo}, {hi}]")
    x = 1.0 + 4.0 * (float(raw) - lo) / (hi - lo)
    return min(5.0, max(1.0, x))


@dataclass(frozen=True)
class FittedMinMax:
    """Min-max bounds learned from data (the training split), for raw scores without a fixed range.

    Saved and loaded as JSON so the same bounds are used at fit and predict time.
    """

    bounds: Mapping[str, tuple[float, float]]

    @classmethod
    def fit(cls, columns: Mapping[str, Sequence[float | None]]) -> "FittedMinMax":
        bounds = {}
        for name, values in columns.items():
            finite = [float(v) for v in values if v is not None and math.isfinite(float(v))]
            if not finite:
                raise ConfigError(f"cannot fit min-max for {name!r}: no finite values")
            lo, hi = min(finite), max(finite)
            if hi == lo:  # a constant column: any value maps to the middle of the scale
                lo, hi = lo - 0.5, hi + 0.5
            bounds[name] = (lo, hi)
        return cls(bounds=bounds)

    def transform(self, name: str, raw: float) -> float:
        lo, hi = self.bounds[name]
        return minmax_1_5(raw, lo, hi)

    def to_json_bytes(self) -> bytes:
        doc = {"kind": "fitted_minmax", "bounds": {k: list(v) for k, v in self.bounds.items()}}
        return json.dumps(doc, indent=2).encode()

    def to_json(self, path: str | Path) -> None:
        Path(path).write_bytes(self.to_json_bytes())

    @classmethod
    def from_json(cls, path: str | Path) -> "FittedMinMax":
        data = json.loads(Path(path).read_text())
        if data.get("kind") != "fitted_minmax":
            raise ConfigError(f"{path} is not a fitted min-max file")
        return cls(bounds={k: (float(v[0]), float(v[1])) for k, v in data["bounds"].items()})
