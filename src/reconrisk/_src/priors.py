"""Priors over the target and their baseline success probability κ (Hayes, Mahloujifar & Balle 2023, §1.2, App. I, App. L).

κ_{π,ρ}(η) = sup_{z₀} P_{Z∼π}[ρ(Z, z₀) ≤ η] is the success rate of the best
blind guess; every ReRo bound is a function of it.

* :func:`kappa_uniform` — uniform over n candidates, exact match: κ = 1/n.
* :func:`kappa_from_points` — a finite point set with a metric and threshold
  η: the largest η-ball count divided by n. The supremum is over *all*
  centres z₀; with ``centers="any"`` (default) we return a certified upper
  bound: any η-ball's points lie within 2η of one of them, so the count is at
  most max_i |{j : ρ(z_i, z_j) ≤ 2η}| (exact for ``metric="exact"``). With
  ``centers="points"`` the centres are restricted to the prior's points (the
  attacker outputs a candidate), which is exact for that attacker class.
* :func:`kappa_from_samples` — Appendix L: κ̂ from N samples and an upper
  confidence bound. Prop. 6 (multiplicative Chernoff at the true maximiser:
  κ ≤ κ̂/(1 − τ) w.p. ≥ 1 − e^{−Nτ²κ/2}) is offered as ``method="chernoff"``
  with τ solved so that the failure probability is ≤ 1 − confidence; the
  default ``"binomial"`` uses the exact Clopper–Pearson upper limit of the
  count at the maximiser, which is never looser.
* :func:`log_kappa_coordinate_match` — Appendix I "very small priors", in log
  space (κ ≈ 1e-473 for MNIST would underflow).
* :func:`log_kappa_uniform_ball`, :func:`log_kappa_gaussian` — Balle, Cherubin & Hayes 2022, Prop. 6
  and Prop. 7: continuous priors with Euclidean error, in log space.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import special

from . import _validate as v
from .errors import ReconRiskError

METRICS = ("euclidean", "linf", "exact")
#: κ = 1/n must be a normal positive double; smaller priors are handled in log
#: space by :func:`log_kappa_coordinate_match`.
MAX_PRIOR_SIZE = 10**300


def kappa_uniform(n: int) -> float:
    """κ = 1/n for a uniform prior over n candidates and exact-match success."""
    n = v.integer("prior_size", n, minimum=2, maximum=MAX_PRIOR_SIZE)
    return 1.0 / n


def _as_points(name: str, points) -> np.ndarray:
    try:
        raw = np.asarray(points)
    except (TypeError, ValueError):
        raise ReconRiskError(f"{name} must be an array of numbers of shape (n, d); found {type(points).__name__}") from None
    if raw.dtype.kind not in "fiu":  # complex would lose its imaginary part, bools are not coordinates
        raise ReconRiskError(f"{name} must hold real numbers; found dtype {raw.dtype}")
    arr = raw.astype(float)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise ReconRiskError(f"{name} must have shape (n, d) with n >= 1; found shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ReconRiskError(f"{name} must be finite; found NaN or inf")
    return arr.reshape(arr.shape[0], -1)


def _ball_counts(points: np.ndarray, radius: float, metric: str | Callable, chunk: int = 1024) -> np.ndarray:
    """For each point, the number of points within ``radius`` (inclusive).

    For the built-in metrics the points are first centred and scaled by a
    power of two (distances scale exactly), so that coordinates near 1e160
    neither overflow the squared-distance expansion nor cancel in it.
    """
    n = points.shape[0]
    if not callable(metric) and metric != "exact":
        points = points - points.mean(axis=0)
        peak = float(np.abs(points).max()) if points.size else 0.0
        if peak > 0 and math.isfinite(peak):
            scale = 2.0 ** math.floor(math.log2(peak))
            points, radius = points / scale, radius / scale
    counts = np.zeros(n, dtype=np.int64)
    for start in range(0, n, chunk):
        block = points[start : start + chunk]
        if callable(metric):
            try:
                d = np.asarray(metric(block, points), dtype=float)
            except (TypeError, ValueError) as exc:
                raise ReconRiskError(f"metric must return a numeric distance matrix; it gave {exc}") from None
            if d.shape != (block.shape[0], n):
                raise ReconRiskError(f"metric must return a ({block.shape[0]}, {n}) distance matrix; found {d.shape}")
            if not (d >= 0).all():  # NaN fails this too
                raise ReconRiskError("metric must return distances >= 0; found a negative or NaN distance")
        elif metric == "euclidean":
            d2 = (block**2).sum(1)[:, None] + (points**2).sum(1)[None, :] - 2 * block @ points.T
            d = np.sqrt(np.clip(d2, 0, None))
        elif metric == "linf":
            d = np.abs(block[:, None, :] - points[None, :, :]).max(axis=2)
        else:  # exact
            d = np.where((block[:, None, :] == points[None, :, :]).all(axis=2), 0.0, 1.0)
        counts[start : start + chunk] = (d <= radius * (1 + 1e-12)).sum(axis=1)
    return counts


def _max_ball_count(points, eta, metric, centers) -> int:
    if metric == "exact":
        _, mult = np.unique(points, axis=0, return_counts=True)
        return int(mult.max())
    radius = eta if centers == "points" else 2 * eta
    return int(_ball_counts(points, radius, metric).max())


def _check_metric(metric):
    if not callable(metric):
        v.choice("metric", metric, METRICS)
    return metric


def kappa_from_points(points, eta: float = 0.0, metric: str | Callable = "euclidean", centers: str = "any") -> float:
    """κ of a uniform prior over a finite point set (largest η-ball count / n)."""
    pts = _as_points("points", points)
    eta = v.real("eta", eta)
    if eta < 0:
        raise ReconRiskError(f"eta must be >= 0; found {eta}")
    metric = _check_metric(metric)
    centers = v.choice("centers", centers, ("any", "points"))
    if pts.shape[0] < 2:
        raise ReconRiskError(f"points must hold at least 2 candidates; found {pts.shape[0]}")
    return _max_ball_count(pts, eta, metric, centers) / pts.shape[0]


@dataclass(frozen=True)
class KappaEstimate:
    """κ̂ from samples with an upper confidence bound (Hayes, Mahloujifar & Balle 2023, App. L)."""

    estimate: float
    upper: float
    confidence: float
    samples: int
    method: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def kappa_from_samples(
    samples,
    eta: float = 0.0,
    metric: str | Callable = "euclidean",
    *,
    confidence: float = 0.95,
    method: str = "binomial",
) -> KappaEstimate:
    """Upper confidence bound on κ from N i.i.d. prior samples (Appendix L).

    κ̂ is the largest η-ball count over the samples divided by N (balls of
    radius 2η around samples, an upper bound on arbitrary centres). Because κ̂·N
    is at least the count X ~ Bin(N, κ) at the true maximiser, any upper
    confidence limit for X's success probability evaluated at κ̂N is an upper
    confidence limit for κ — no union bound over centres is needed.
    """
    pts = _as_points("samples", samples)
    eta = v.real("eta", eta)
    if eta < 0:
        raise ReconRiskError(f"eta must be >= 0; found {eta}")
    metric = _check_metric(metric)
    confidence = v.probability_open("confidence", confidence)
    method = v.choice("method", method, ("binomial", "chernoff"))
    n = pts.shape[0]
    count = _max_ball_count(pts, eta, metric, "any")
    k_hat = count / n
    alpha = 1.0 - confidence
    if method == "binomial":
        upper = 1.0 if count >= n else float(special.betaincinv(count + 1, n - count, 1 - alpha))
    else:
        # Prop. 6: fails only if κ > κ̂/(1−τ) =: u, with prob ≤ exp(−N τ² κ / 2) ≤ exp(−N τ² u / 2).
        # Solve N τ² κ̂ / (2 (1 − τ)) = log(1/α) for τ ∈ (0, 1).
        c = 2 * math.log(1 / alpha) / (n * max(k_hat, 1e-300))
        tau = (-c + math.sqrt(c * c + 4 * c)) / 2
        upper = min(1.0, k_hat / (1 - tau)) if tau < 1 else 1.0
    return KappaEstimate(k_hat, upper, confidence, n, method)


def log_kappa_coordinate_match(
    dim: int, tolerance: float = 32 / 256, fraction: float = 1.0, *, paper_formula: bool = False
) -> float:
    """log κ for Appendix I's criterion under a uniform prior on [0, 1]^d.

    Success: at least a fraction ``fraction`` (ρ) of the d coordinates are within
    ``tolerance`` (δ′) of the target. Per coordinate a guess matches with
    probability at most p = min(1, 2δ′). The paper's formula (2·δ′)^{dρ}
    (with δ′ = 32/256; the paper writes 32/255 in one place and 32/256 in the
    other — the quoted numbers 9.66e-473 for MNIST and 2.96e-1850 for CIFAR-10
    use 256) ignores which coordinates match; for ρ < 1 the exact probability
    is the binomial tail P[Bin(d, p) ≥ ⌈dρ⌉], which is what we return unless
    ``paper_formula=True``. For ρ = 1 both agree.
    """
    d = v.integer("dim", dim, minimum=1)
    tol = v.in_range("tolerance", tolerance, 0.0, 0.5, high_open=False)
    rho = v.in_range("fraction", fraction, 0.0, 1.0, high_open=False)
    p = min(1.0, 2 * tol)
    if paper_formula:
        return d * rho * math.log(p)
    k = math.ceil(d * rho - 1e-12)
    # log P[Bin(d, p) >= k] = log sum_{j>=k} C(d,j) p^j (1-p)^(d-j)
    j = np.arange(k, d + 1)
    if p == 1.0:
        return 0.0
    terms = special.gammaln(d + 1) - special.gammaln(j + 1) - special.gammaln(d - j + 1) + j * math.log(p) + (d - j) * math.log1p(-p)
    return float(special.logsumexp(terms))


def log_kappa_uniform_ball(dim: int, eta: float, radius: float = 1.0) -> float:
    """log κ for the uniform prior on the d-ball of ``radius`` and success ‖Z − z₀‖₂ ≤ η (Balle, Cherubin & Hayes 2022, Prop. 6).

    κ = sup_{z₀} vol(B(z₀, η) ∩ B(0, r)) / vol(B(0, r)) ≤ (η/r)^d, attained by
    z₀ = 0 when η ≤ r (the η-ball then lies inside), so this is exact:
    log κ = d · log(η/r), and 0 for η ≥ r. The printed statement is for
    r = 1 ("κ ≤ η^d"); the radius is our generalisation by scaling.
    """
    d = v.integer("dim", dim, minimum=1)
    r = v.positive("radius", radius)
    eta = v.positive("eta", eta)
    return 0.0 if eta >= r else d * math.log(eta / r)


def _log_gammainc_lower(a: float, x: float) -> float:
    """log P(a, x), the regularised lower incomplete gamma, without underflow.

    For x < a + 1 the series P(a, x) = x^a e^{−x}/Γ(a+1) · Σ_k x^k/((a+1)…(a+k))
    (all terms positive, summed in log space); otherwise log of scipy's
    ``gammainc`` (then P ≥ ~1/2, no underflow).
    """
    if x <= 0:
        return -math.inf
    if x >= a + 1:
        return math.log(special.gammainc(a, x))
    log_term, log_sum, k = 0.0, 0.0, 0
    while True:
        k += 1
        log_term += math.log(x) - math.log(a + k)
        new = np.logaddexp(log_sum, log_term)
        if new - log_sum < 1e-17 or k > 100_000:
            log_sum = float(new)
            break
        log_sum = float(new)
    return a * math.log(x) - x - special.gammaln(a + 1) + log_sum


def log_kappa_gaussian(dim: int, sigma: float, eta: float) -> float:
    """log κ for the prior N(0, σ²I_d) and success ‖Z − z₀‖₂ ≤ η (Balle, Cherubin & Hayes 2022, Prop. 7), exact.

    The centred ball carries the most mass, so κ = P[χ²_d ≤ η²/σ²] =
    P(d/2, η²/(2σ²)) (regularised lower incomplete gamma), computed in log
    space (for d = 784 it is far below the smallest double). Compare
    :func:`log_kappa_gaussian_dg`, the paper's Dasgupta–Gupta bound.
    """
    d = v.integer("dim", dim, minimum=1)
    s = v.positive("sigma", sigma)
    eta = v.positive("eta", eta)
    return float(_log_gammainc_lower(d / 2.0, eta * eta / (2.0 * s * s)))


def log_kappa_gaussian_dg(dim: int, sigma: float, eta: float) -> float:
    """The chi-square lower-tail bound used in Balle, Cherubin & Hayes 2022, Prop. 7 (Dasgupta–Gupta Lemma 2.2).

    With β = η²/(dσ²) < 1: log κ ≤ (d/2)(1 − β + ln β); 0 (vacuous) for β ≥ 1.
    """
    d = v.integer("dim", dim, minimum=1)
    s = v.positive("sigma", sigma)
    eta = v.positive("eta", eta)
    beta = eta * eta / (d * s * s)
    return 0.0 if beta >= 1 else 0.5 * d * (1 - beta + math.log(beta))


def resolve_kappa(kappa=None, prior_size=None) -> float:
    """Exactly one of ``kappa`` (in (0, 1)) or ``prior_size`` (≥ 2) → κ."""
    if (kappa is None) == (prior_size is None):
        raise ReconRiskError(
            f"give exactly one of kappa (in (0, 1)) or prior_size (an integer >= 2); found kappa={kappa}, prior_size={prior_size}"
        )
    if prior_size is not None:
        return kappa_uniform(prior_size)
    k = v.probability_open("kappa", kappa)
    if k < 1.0 / MAX_PRIOR_SIZE:
        raise ReconRiskError(f"kappa must be in [1e-300, 1); found {k:g} (use log_kappa_coordinate_match for smaller)")
    return k
