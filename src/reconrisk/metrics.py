"""Reconstruction metrics and success rates with exact binomial intervals.

numpy/scipy only: these are used both by the simulation layer and by the
report, and must not pull in JAX.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from . import _validate as v
from .errors import ReconRiskError


def mse(a, b, axis=-1) -> np.ndarray:
    """Mean squared error along ``axis`` (per-example MSE for (N, d) arrays)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ReconRiskError(f"mse needs arrays of equal shape; found {a.shape} and {b.shape}")
    return np.mean((a - b) ** 2, axis=axis)


def psnr(a, b, *, data_range: float = 1.0, axis=-1) -> np.ndarray:
    """Peak signal-to-noise ratio in dB, ``10 log10(range² / MSE)`` (inf when equal)."""
    data_range = v.positive("data_range", data_range)
    m = mse(a, b, axis=axis)
    with np.errstate(divide="ignore"):
        return 10.0 * np.log10(data_range**2 / m)


def clopper_pearson(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper–Pearson) two-sided interval for a binomial proportion."""
    trials = v.integer("trials", trials, minimum=1)
    successes = v.integer("successes", successes, minimum=0, maximum=trials)
    confidence = v.probability_open("confidence", confidence)
    alpha = 1.0 - confidence
    low = 0.0 if successes == 0 else float(stats.beta.ppf(alpha / 2, successes, trials - successes + 1))
    high = 1.0 if successes == trials else float(stats.beta.ppf(1 - alpha / 2, successes + 1, trials - successes))
    return low, high


@dataclass(frozen=True)
class SuccessRate:
    """``successes`` out of ``trials`` with a Clopper–Pearson interval."""

    successes: int
    trials: int
    confidence: float = 0.95

    def __post_init__(self) -> None:
        object.__setattr__(self, "trials", v.integer("trials", self.trials, minimum=1))
        object.__setattr__(
            self, "successes", v.integer("successes", self.successes, minimum=0, maximum=self.trials)
        )

    @property
    def rate(self) -> float:
        return self.successes / self.trials

    @property
    def ci(self) -> tuple[float, float]:
        return clopper_pearson(self.successes, self.trials, self.confidence)

    @classmethod
    def from_outcomes(cls, outcomes, confidence: float = 0.95) -> "SuccessRate":
        arr = np.asarray(outcomes, dtype=bool).ravel()
        return cls(int(arr.sum()), int(arr.size), confidence)

    def to_dict(self) -> dict:
        low, high = self.ci
        return {"successes": self.successes, "trials": self.trials, "rate": self.rate, "ci_low": low, "ci_high": high}
