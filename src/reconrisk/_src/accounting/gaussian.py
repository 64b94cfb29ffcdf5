"""The Gaussian mechanism: exact privacy profile in log space, its inverses, GDP composition.

Riess et al. 2024, Eq. 3 (Dong et al. 2022, Cor. 2.13): one release of a query with L2
sensitivity 1 plus ``N(0, σ²)`` noise — one full-batch DP-SGD step with noise
multiplier σ — is μ-GDP with ``μ = 1/σ`` and has the privacy profile

    δ(ε) = Φ(−εσ + 1/(2σ)) − e^ε Φ(−εσ − 1/(2σ)).

Numerics. With ``a = −εσ + 1/(2σ)`` and ``b = a − 1/σ`` one has
``b² − a² = 2ε`` *exactly*, so for ``a < 0`` the ratio of the two terms is

    e^ε Φ(b) / Φ(a) = erfcx(−b/√2) / erfcx(−a/√2),

with no ``e^ε`` in sight (``erfcx(z) = e^{z²} erfc(z)``). Hence
``log δ = log Φ(a) + log(1 − ratio)`` is evaluated without overflow or
cancellation of huge exponents for every ε — the single-step ε of the paper's
image experiments is ~2·10⁶ (spec_003 §12 B). For ``a ≥ 0`` the ratio is
formed with ``log_ndtr`` (no overflow is possible there).

Composition (spec_003 §2, [inferred] — the paper leaves it out of scope): T
full-batch steps (no subsampling) of μ-GDP compose to ``√T·μ``-GDP, i.e. the
profile above with ``σ → σ/√T``. Poisson-subsampled composition needs an
accountant (``reconrisk._src.accounting.pld``) and is *not* part of Riess et al. 2024.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from .. import _validate as v
from ..errors import ReconRiskError

_LN2 = math.log(2.0)
_SQRT2 = math.sqrt(2.0)

__all__ = [
    "gaussian_log_delta",
    "gaussian_delta",
    "gaussian_eps",
    "gaussian_sigma",
    "gdp_mu",
    "release_gdp_mu",
    "gdp_compose",
]


def _log1mexp(x: np.ndarray) -> np.ndarray:
    """log(1 − eˣ) for x ≤ 0, accurate everywhere (Mächler 2012)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(x > -_LN2, np.log(-np.expm1(x)), np.log1p(-np.exp(x)))


def _steps(steps) -> int:
    return v.steps("steps", steps)


def _eps_array(eps) -> np.ndarray:
    arr = np.asarray(eps, dtype=float) if not isinstance(eps, (str, bool)) else None
    if arr is None or arr.dtype.kind not in "fiu":
        raise ReconRiskError(f"eps must be a number or array of numbers >= 0; found {eps!r}")
    if np.isnan(arr).any() or (arr < 0).any():
        bad = arr[np.isnan(arr) | (arr < 0)].ravel()[0]
        raise ReconRiskError(f"eps must be >= 0; found {bad}")
    return arr


def _log_delta_raw(eps: np.ndarray, sigma: float) -> np.ndarray:
    """log δ(ε) of Eq. 3 for validated inputs (σ already composed)."""
    eps = np.asarray(eps, dtype=float)
    a = -eps * sigma + 0.5 / sigma
    b = a - 1.0 / sigma
    log_phi_a = special.log_ndtr(a)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # a < 0: both terms share the Gaussian factor exp(−a²/2); it cancels exactly.
        neg = np.log(special.erfcx(-b / _SQRT2)) - np.log(special.erfcx(-a / _SQRT2))
        pos = eps + special.log_ndtr(b) - log_phi_a
        log_ratio = np.where(a < 0, neg, pos)
    log_ratio = np.where(np.isinf(eps), -np.inf, np.minimum(log_ratio, 0.0))
    out = log_phi_a + _log1mexp(log_ratio)
    return np.where(np.isinf(eps), -np.inf, out)


def gaussian_log_delta(eps, noise_multiplier, *, steps: int = 1):
    """Natural log of the Gaussian privacy profile δ(ε) (Riess et al. 2024, Eq. 3).

    Vectorised over ``eps`` (any shape, each ≥ 0, ``inf`` allowed → −inf).
    ``steps`` > 1 composes T full-batch steps by GDP (σ → σ/√T; [inferred],
    spec_003 §2). Stays finite where δ underflows (e.g. ``log δ ≈ −1.3·10⁵``
    is returned, not −inf).
    """
    sigma = v.positive("noise_multiplier", noise_multiplier)
    t = _steps(steps)
    arr = _eps_array(eps)
    out = _log_delta_raw(arr, sigma / math.sqrt(t))
    return float(out) if out.ndim == 0 else out


def gaussian_delta(eps, noise_multiplier, *, steps: int = 1):
    """The Gaussian privacy profile δ(ε) (Riess et al. 2024, Eq. 3); ``exp`` of :func:`gaussian_log_delta`."""
    out = np.exp(gaussian_log_delta(eps, noise_multiplier, steps=steps))
    return float(out) if np.ndim(out) == 0 else out


def gaussian_eps(noise_multiplier, delta, *, steps: int = 1) -> float:
    """Smallest ε ≥ 0 with δ(ε) ≤ ``delta`` for the Gaussian mechanism (inverse of Eq. 3).

    Solved by Brent's method on ``log δ(ε) = log delta`` (δ is strictly
    decreasing in ε). Returns 0 when ``delta ≥ δ(0)`` (the total-variation
    distance). [inferred] spec_003 §2.
    """
    sigma = v.noise_multiplier("noise_multiplier", noise_multiplier) / math.sqrt(_steps(steps))
    d = v.probability_open("delta", delta)
    target = math.log(d)
    f = lambda e: float(_log_delta_raw(np.asarray(e), sigma)) - target  # noqa: E731
    if f(0.0) <= 0:
        return 0.0
    hi = max(1.0, 1.0 / sigma)
    while f(hi) > 0:
        hi *= 2.0
        if hi > 1e300:  # pragma: no cover - δ → 0 as ε → ∞, never reached
            raise ReconRiskError(f"eps could not be bracketed for delta={d}")
    from scipy import optimize  # lazy: scipy.optimize costs ~0.15 s to import, and `bound` rarely needs it

    return float(optimize.brentq(f, 0.0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500))


def gaussian_sigma(eps, delta, *, steps: int = 1) -> float:
    """Smallest noise multiplier σ whose Gaussian mechanism is (ε, δ)-DP (inverse of Eq. 3).

    δ(ε) is strictly decreasing in σ; Brent's method on ``log σ``. With
    ``steps`` = T > 1 returns the per-step σ for T composed full-batch steps
    (√T times the single-step answer, GDP).
    """
    e = v.in_range("eps", eps, 0.0, v.MAX_EPSILON, low_open=False, high_open=False)
    d = v.probability_open("delta", delta)
    t = _steps(steps)
    target = math.log(d)
    f = lambda ls: float(_log_delta_raw(np.asarray(e), math.exp(ls))) - target  # noqa: E731
    # f decreases in log σ: δ → 1 as σ → 0 and δ → 0 as σ → ∞.
    lo = hi = 0.0
    while f(lo) <= 0:
        hi, lo = lo, lo - 2.0
        if lo < -700:
            raise ReconRiskError(f"noise_multiplier could not be bracketed for eps={e}, delta={d}")
    while f(hi) >= 0:
        lo, hi = hi, hi + 2.0
        if hi > 700:
            raise ReconRiskError(f"noise_multiplier could not be bracketed for eps={e}, delta={d}")
    from scipy import optimize

    ls = optimize.brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    return float(math.exp(ls) * math.sqrt(t))


def gdp_mu(noise_multiplier, *, steps: int = 1) -> float:
    """GDP parameter μ = √T/σ of T composed full-batch Gaussian steps (Dong et al. 2022)."""
    sigma = v.positive("noise_multiplier", noise_multiplier)
    return math.sqrt(_steps(steps)) / sigma


def gdp_compose(noise_multiplier, steps: int) -> float:
    """Single-step noise multiplier equivalent to T full-batch steps: σ/√T ([inferred], spec_003 §2)."""
    sigma = v.positive("noise_multiplier", noise_multiplier)
    return sigma / math.sqrt(_steps(steps))


def release_gdp_mu(release) -> float:
    """μ of Gaussian DP for a full-batch schedule: √(Σ T_i/σ_i²) (Dong, Roth, Su 2022, Cor. 3.3)."""
    release = release.dominating() if hasattr(release, "dominating") else release  # fixed-size batches: σ/2
    return math.sqrt(sum(s.steps / s.noise_multiplier**2 for s in release.segments))
