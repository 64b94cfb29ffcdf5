"""Bayes' capacity: the one-try reconstruction leakage of a channel (Biswas et al. 2024, §IV; spec_004 §6).

``C_Bayes(M) = Σ_y max_x M[x, y]`` for a discrete channel (Biswas et al. 2024, Eq. 13),
``∫ sup_x f(x)(y) dy`` for a continuous one (Def. 7). Its log is Sibson's
mutual information of order ∞ and bounds the multiplicative Bayes leakage for
every prior (the "miracle" theorem); by Thm 4 the reconstruction risk of
DP-SGD is the capacity of its noise step alone. Everything is returned as a
**natural log**.

Closed forms:

* VMF on S^{p−1} (Biswas et al. 2024, Thm 6): ``C = e^κ A(S^{p−1}) / C_{p,κ}``.
* Gaussian N(x, σ²I_p) with inputs in the ball of radius R (Biswas et al. 2024, Thm 5,
  **corrected**; spec_004 §6):
  ``C = R^p/(Γ(p/2+1) 2^{p/2} σ^p) + [1/(Γ(p/2) 2^{p/2} σ^p)]·Σ_{i=0}^{p−1}
  Γ((p−i)/2)(√2σ)^{p−i} C(p−1,i) R^i``. The theorem as printed has
  C(p−i, i) instead of C(p−1, i), a spurious factor 2 on the shell term and
  1/√(2πσ²) instead of (2πσ²)^{−p/2}; those forms do not match direct
  integration (p = 1: 1 + 2R/(√(2π)σ)).

:func:`log_capacity_numeric` integrates Def. 7 directly (radial quadrature,
no Bessel functions) for small p and checks both closed forms in the tests.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, special

from .. import _validate as v
from .._deprecated import renamed_kwargs
from ..errors import ReconRiskError
from ..mechanisms.vmf import log_sphere_area, vmf_log_norm

__all__ = [
    "log_bayes_capacity",
    "log_capacity_vmf",
    "log_capacity_gaussian",
    "log_capacity_numeric",
]


def log_bayes_capacity(channel) -> float:
    """log Σ_y max_x C[x, y] of a row-stochastic matrix C (rows: secrets x, columns: observations y)."""
    c = np.asarray(channel, dtype=float) if not isinstance(channel, str) else None
    if c is None or c.ndim != 2 or c.size == 0:
        raise ReconRiskError(f"channel must be a non-empty 2-d matrix; found {channel!r}"[:200])
    if not np.isfinite(c).all() or (c < 0).any():
        raise ReconRiskError("channel entries must be finite and >= 0")
    rows = c.sum(axis=1)
    if not np.allclose(rows, 1.0, rtol=0, atol=1e-9):
        bad = int(np.argmax(np.abs(rows - 1.0)))
        raise ReconRiskError(f"channel rows must sum to 1; found row {bad} summing to {rows[bad]}")
    return float(np.log(c.max(axis=0).sum()))


@renamed_kwargs(kappa="concentration")
def log_capacity_vmf(concentration, dim) -> float:
    """log C_Bayes of the VMF mechanism of concentration κ on S^{p−1} (Biswas et al. 2024, Thm 6):
    κ + log A(S^{p−1}) − log C_{p,κ}."""
    k = v.real("concentration", concentration)
    if k < 0 or math.isinf(k):
        raise ReconRiskError(f"concentration must be finite and >= 0; found {concentration}")
    p = v.integer("dim", dim, minimum=2)
    return k + log_sphere_area(p) - vmf_log_norm(p, k)


@renamed_kwargs(sigma="noise_std")
def log_capacity_gaussian(noise_std, radius, dim) -> float:
    """log C_Bayes of N(x, σ²I_p), x in the ball of radius R (Biswas et al. 2024, Thm 5 corrected; log space).

    ``noise_std`` is the standard deviation σ of the Gaussian noise itself (for DP-SGD: noise multiplier × C).
    """
    s = v.positive("noise_std", noise_std)
    r = v.positive("radius", radius)
    p = v.integer("dim", dim, minimum=1)
    log_s, log_r = math.log(s), math.log(r)
    half_log2 = 0.5 * p * math.log(2.0)
    interior = p * log_r - special.gammaln(0.5 * p + 1.0) - half_log2 - p * log_s
    i = np.arange(p, dtype=float)
    log_binom = special.gammaln(p) - special.gammaln(i + 1.0) - special.gammaln(p - i)
    shell_terms = special.gammaln(0.5 * (p - i)) + (p - i) * (0.5 * math.log(2.0) + log_s) + log_binom + i * log_r
    shell = special.logsumexp(shell_terms) - special.gammaln(0.5 * p) - half_log2 - p * log_s
    return float(np.logaddexp(interior, shell))


@renamed_kwargs(kappa="concentration", sigma="noise_std")
def log_capacity_numeric(mechanism: str, dim, *, concentration=None, noise_std=None, radius=None) -> float:
    """log C_Bayes by direct integration of Def. 7 for small p (≤ 20); an independent check of Thms 5–6.

    VMF: sup_x f(x)(y) = e^κ/C_{p,κ} everywhere, with the normaliser itself
    integrated, C_{p,κ} = A(S^{p−2}) ∫_0^π e^{κ cos θ} sin^{p−2}θ dθ.
    Gaussian: sup over the ball is the density at distance max(0, ‖y‖ − R),
    integrated radially, A(S^{p−1}) ∫_0^∞ ρ^{p−1} φ_σ(max(0, ρ − R)) dρ.
    """
    mech = v.choice("mechanism", mechanism, ("vmf", "gaussian"))
    p = v.integer("dim", dim, minimum=1, maximum=20)
    if mech == "vmf":
        k = v.positive("concentration", concentration)
        if p < 2:
            raise ReconRiskError(f"dim must be >= 2 for the VMF mechanism; found {p}")
        # e^{κ(cos θ − 1)} keeps the integrand <= 1
        val, _ = integrate.quad(lambda t: math.exp(k * (math.cos(t) - 1.0)) * math.sin(t) ** (p - 2), 0.0, math.pi,
                                epsabs=0, epsrel=1e-13, limit=400)
        log_norm_scaled = (log_sphere_area(p - 1) if p > 2 else math.log(2.0)) + math.log(val)  # log(C e^{−κ})
        return log_sphere_area(p) - log_norm_scaled
    s = v.positive("noise_std", noise_std)
    r = v.positive("radius", radius)

    def dens(rho):
        d = max(0.0, rho - r)
        return math.exp((p - 1) * math.log(rho) - d * d / (2 * s * s) - 0.5 * p * math.log(2 * math.pi * s * s)) if rho > 0 else 0.0

    inside, _ = integrate.quad(dens, 0.0, r, epsabs=0, epsrel=1e-13, limit=400)
    outside, _ = integrate.quad(dens, r, r + 60.0 * s, epsabs=0, epsrel=1e-13, limit=400)
    area = math.log(2.0) if p == 1 else log_sphere_area(p)
    return area + math.log(inside + outside)
