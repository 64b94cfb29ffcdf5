"""Rényi-DP, pure-DP and zCDP routes to a ReRo bound (seed 002 Thm 2, Cor. 3–4; seed 000 Eq. 2).

These are the *baselines* that seed 000 improves on; they are valid upper
bounds on the reconstruction success γ, never estimates.

* (α, ε)-RDP ⇒ γ = (κ e^ε)^{(α−1)/α} (Balle, Cherubin, Hayes 2022, Thm 2);
  with an RDP curve, minimise over α and cap at 1.
* ε-DP ⇒ γ = κ e^ε (Cor. 3).
* ρ-zCDP ⇒ γ = exp(−(√log(1/κ) − √ρ)²) when ρ < log(1/κ), else 1 (Cor. 4).
  Full-batch DP-SGD under add/remove adjacency is T/(2σ²)-zCDP, which gives
  seed 000 Eq. (2).

The RDP curve of the Poisson-subsampled Gaussian (remove direction,
D_α(μ‖ν) with μ = (1−q)N(0,σ²) + qN(1,σ²), ν = N(0,σ²)) is evaluated exactly
at integer orders (Mironov, Talwar, Zhang 2019, Eq. for integer α):
``A_α = Σ_k C(α,k)(1−q)^{α−k} q^k exp((k²−k)/(2σ²))``. Using only integer
orders (2…1024) keeps the bound valid; it can be slightly looser than a
continuous minimisation. For q = 1 the minimisation over α is done in closed
form (Eq. 2).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

#: Integer Rényi orders used for subsampled releases.
DEFAULT_ORDERS = np.unique(np.concatenate([np.arange(2, 65), np.round(np.geomspace(64, 1024, 24))])).astype(int)


def subsampled_gaussian_rdp(noise_multiplier: float, sample_rate: float, orders=DEFAULT_ORDERS) -> np.ndarray:
    """RDP ε(α) of ONE Poisson-subsampled Gaussian step (sensitivity 1) at integer orders."""
    sigma, q = float(noise_multiplier), float(sample_rate)
    orders = np.asarray(orders)
    if q == 1.0:
        return orders / (2 * sigma**2)
    out = np.empty(orders.size)
    log_q, log_1q = math.log(q), math.log1p(-q)
    for i, a in enumerate(orders):
        k = np.arange(0, int(a) + 1)
        log_binom = special.gammaln(a + 1) - special.gammaln(k + 1) - special.gammaln(a - k + 1)
        terms = log_binom + (a - k) * log_1q + k * log_q + (k * k - k) / (2 * sigma**2)
        out[i] = special.logsumexp(terms) / (a - 1)
    return out


def release_rdp(segments, orders=DEFAULT_ORDERS) -> np.ndarray:
    """RDP curve of a whole schedule (RDP composes additively)."""
    total = np.zeros(np.asarray(orders).size)
    for s in segments:
        total += s.steps * subsampled_gaussian_rdp(s.noise_multiplier, s.sample_rate, orders)
    return total


def rero_from_rdp(kappa, orders, rdp_epsilons) -> np.ndarray:
    """min over α of (κ e^{ε(α)})^{(α−1)/α}, capped at 1 (seed 002 Thm 2)."""
    kappa = np.atleast_1d(np.asarray(kappa, dtype=float))
    a = np.asarray(orders, dtype=float)[None, :]
    e = np.asarray(rdp_epsilons, dtype=float)[None, :]
    log_g = (a - 1) / a * (np.log(kappa)[:, None] + e)
    return np.minimum(1.0, np.exp(np.min(log_g, axis=1)))


def rero_from_dp(kappa, epsilon: float) -> np.ndarray:
    """γ = min(1, κ e^ε) for ε-DP (seed 002 Cor. 3)."""
    kappa = np.atleast_1d(np.asarray(kappa, dtype=float))
    return np.minimum(1.0, np.exp(np.log(kappa) + float(epsilon)))


def rero_from_zcdp(kappa, rho: float) -> np.ndarray:
    """γ = exp(−max(0, √log(1/κ) − √ρ)²) for ρ-zCDP (seed 002 Cor. 4; seed 000 Eq. 2)."""
    kappa = np.atleast_1d(np.asarray(kappa, dtype=float))
    gap = np.maximum(0.0, np.sqrt(-np.log(kappa)) - math.sqrt(float(rho)))
    return np.exp(-(gap**2))


def rdp_rero_bound(segments, kappa, orders=DEFAULT_ORDERS) -> np.ndarray:
    """The RDP baseline for a DP-SGD schedule: exact Eq. (2) when every q = 1."""
    if all(s.sample_rate == 1.0 for s in segments):
        rho = sum(s.steps / (2 * s.noise_multiplier**2) for s in segments)
        return rero_from_zcdp(kappa, rho)
    return rero_from_rdp(kappa, orders, release_rdp(segments, orders))
