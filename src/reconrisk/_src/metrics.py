"""Reconstruction metrics and success rates with exact binomial intervals.

numpy/scipy only: these are used both by the simulation layer and by the
report, and must not pull in JAX. Importing this module loads numpy only (scipy.special is loaded by the
Clopper–Pearson interval when it is first computed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _validate as v
from .errors import ReconRiskError


def mse(a, b, axis=-1) -> np.ndarray:
    """Mean squared error along ``axis`` (per-example MSE for (N, d) arrays; shapes broadcast).

    Riess et al. 2024, Def. 3 is the same quantity, ‖x − y‖²/N over the last axis.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ReconRiskError(f"mse needs arrays of broadcastable shapes; found {a.shape} and {b.shape}") from None
    return np.mean((a - b) ** 2, axis=axis)


def psnr(a, b, *, data_range: float | None = 1.0, axis=-1) -> np.ndarray:
    """Peak signal-to-noise ratio in dB, ``10 log10(r² / MSE)`` (inf when equal; Riess et al. 2024, Def. 4).

    ``r`` is ``data_range``, or with ``None`` the per-sample range max(a) − min(a) along ``axis``.
    """
    if data_range is None:
        a_arr = np.asarray(a, dtype=np.float64)
        r = np.max(a_arr, axis=axis) - np.min(a_arr, axis=axis)
    else:
        r = v.positive("data_range", data_range)
    m = mse(a, b, axis=axis)
    with np.errstate(divide="ignore"):
        return 10.0 * (2.0 * np.log10(r) - np.log10(m))


def ncc(a, b, axis=-1) -> np.ndarray:
    """Normalised cross-correlation (Pearson, population moments) along ``axis``; nan if constant (Riess et al. 2024, Def. 5)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    ac = a - a.mean(axis=axis, keepdims=True)
    bc = b - b.mean(axis=axis, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.mean(ac * bc, axis=axis) / (a.std(axis=axis) * b.std(axis=axis))


def accuracy(predictions, labels) -> float:
    """Fraction of ``predictions`` equal to ``labels`` (classification accuracy; the one home of it)."""
    p = np.asarray(predictions).ravel()
    y = np.asarray(labels).ravel()
    if p.shape != y.shape or p.size == 0:
        raise ReconRiskError(
            f"predictions and labels must be non-empty and of equal length; found {p.size} and {y.size}"
        )
    return float(np.mean(p == y))


def clopper_pearson_interval(k, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided exact binomial interval at level 1 − alpha, vectorised in the success count ``k``."""
    # scipy loads here, not with the module: the Monte-Carlo sampler imports this module and starts its draws
    # before scipy is imported (``reconrisk report``)
    from scipy import special

    k = np.asarray(k, dtype=float)
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, special.betaincinv(k, n - k + 1, alpha / 2), 0.0)
        hi = np.where(k < n, special.betaincinv(k + 1, n - k, 1 - alpha / 2), 1.0)
    return lo, hi


def clopper_pearson(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper–Pearson) two-sided interval for a binomial proportion."""
    trials = v.integer("trials", trials, minimum=1)
    successes = v.integer("successes", successes, minimum=0, maximum=trials)
    confidence = v.probability_open("confidence", confidence)
    lo, hi = clopper_pearson_interval(successes, trials, 1.0 - confidence)
    return float(lo), float(hi)


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


def ssim(a, b, image_shape, *, data_range: float = 1.0, sigma: float = 1.5) -> np.ndarray:
    """Structural similarity (Wang et al. 2004) per image for flattened batches (N, H·W·C) → (N,).

    Gaussian-weighted local statistics (σ = 1.5, reflected borders), constants
    K₁ = 0.01, K₂ = 0.03, averaged over pixels and channels. Used for the
    reconstruction tables of Biswas et al. 2024 (Tables II, VI). 1 for identical images.
    """
    from scipy import ndimage

    h, w, c = (int(s) for s in image_shape)
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2 or a.shape[1] != h * w * c:
        raise ReconRiskError(f"ssim needs two (N, {h * w * c}) arrays; found {a.shape} and {b.shape}")
    r = v.positive("data_range", data_range)
    x = a.reshape(-1, h, w, c)
    y = b.reshape(-1, h, w, c)
    filt = lambda z: ndimage.gaussian_filter(z, sigma=(0, sigma, sigma, 0), mode="reflect")  # noqa: E731
    mx, my = filt(x), filt(y)
    vx, vy, cxy = filt(x * x) - mx * mx, filt(y * y) - my * my, filt(x * y) - mx * my
    c1, c2 = (0.01 * r) ** 2, (0.03 * r) ** 2
    s = ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return s.reshape(s.shape[0], -1).mean(axis=1)
