"""Rényi-DP curves of the (Poisson-subsampled) Gaussian mechanism and of schedules.

The RDP curve of the Poisson-subsampled Gaussian (remove direction,
D_α(μ‖ν) with μ = (1−q)N(0,σ²) + qN(1,σ²), ν = N(0,σ²)) is evaluated exactly
at integer orders (Mironov, Talwar, Zhang 2019, Eq. for integer α):
``A_α = Σ_k C(α,k)(1−q)^{α−k} q^k exp((k²−k)/(2σ²))``. For q = 1 the curve is
α/(2σ²). ReRo conversions of these curves live in
:mod:`reconrisk.bounds.conversions`.
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
