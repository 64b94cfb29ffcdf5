"""Independent exact values of the ReRo blow-up B_κ for soundness checks (no PLD involved).

* q = 1, any T (and full-batch schedules): B = Φ(Φ⁻¹(κ) + μ), μ² = Σ T_i/σ_i²
  (Gaussian DP; Hayes, Mahloujifar & Balle 2023, Cor. 4 with Dong, Roth, Su 2022).
* T = 1, any q: the likelihood ratio of (1−q)N(0,σ²)+qN(1,σ²) to N(0,σ²) is
  monotone in x, so B = (1−q)κ + q·Φ(Φ⁻¹(κ) + 1/σ) (Hayes, Mahloujifar & Balle 2023, Sec. 4).
* T = 2, any q, and two-step schedules: the loss L = λ₁(x₁) + λ₂(x₂) is
  continuous, and B_κ = min_t [κe^t + μ(L > t) − e^t ν(L > t)] (Hayes, Mahloujifar & Balle 2023,
  Eq. 3 via the Neyman–Pearson lemma). The two tails are 1-D integrals over x₁
  of closed-form Gaussian tails in x₂, computed by adaptive quadrature
  (``scipy.integrate.quad``, relative tolerance 1e-12); t solves
  ν(L > t) = κ by Brent's method in log space, and the objective is
  stationary there, so the value is insensitive to the error in t.

These are slow (milliseconds to a second) and meant for tests and
``benchmarks/soundness_scan.py``, never for the engine itself.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, optimize, special


def exact_full_batch(mu: float, kappa: float) -> float:
    """Φ(Φ⁻¹(κ) + μ) for μ-GDP."""
    return float(special.ndtr(special.ndtri(kappa) + mu))


def exact_single_step(sigma: float, q: float, kappa: float) -> float:
    """(1−q)κ + qΦ(Φ⁻¹(κ) + 1/σ)."""
    return float((1 - q) * kappa + q * special.ndtr(special.ndtri(kappa) + 1.0 / sigma))


def _lam(x, sigma, q):
    z = (2 * x - 1) / (2 * sigma**2)
    return z if q == 1.0 else np.logaddexp(math.log1p(-q), math.log(q) + z)


def _x_of(lam, sigma, q):
    """Inverse of λ; −∞ where λ ≤ log(1 − q)."""
    if q == 1.0:
        return sigma**2 * lam + 0.5
    v = math.expm1(lam) + q
    if v <= 0:
        return -math.inf
    return sigma**2 * (math.log(v) - math.log(q)) + 0.5


def _tails(x, sigma, q):
    """(ν(X > x), μ(X > x)) for one step."""
    if x == -math.inf:
        return 1.0, 1.0
    n0 = float(special.ndtr(-x / sigma))
    n1 = float(special.ndtr(-(x - 1) / sigma))
    return n0, (1 - q) * n0 + q * n1


def exact_two_steps(s1: float, q1: float, s2: float, q2: float, kappa: float) -> float:
    """B_κ for two (possibly different) Poisson-subsampled Gaussian steps, by quadrature."""

    def dens(x, s, q):
        return (1 - q) * math.exp(-0.5 * (x / s) ** 2) / (s * math.sqrt(2 * math.pi)) + q * math.exp(
            -0.5 * ((x - 1) / s) ** 2
        ) / (s * math.sqrt(2 * math.pi))

    def nu0(x, s):
        return math.exp(-0.5 * (x / s) ** 2) / (s * math.sqrt(2 * math.pi))

    lo, hi = -40 * s1, 1 + 40 * s1
    pts = [0.0, 0.5, 1.0]

    def tails(t):
        def f_nu(x1):
            return nu0(x1, s1) * _tails(_x_of(t - float(_lam(x1, s1, q1)), s2, q2), s2, q2)[0]

        def f_mu(x1):
            return dens(x1, s1, q1) * _tails(_x_of(t - float(_lam(x1, s1, q1)), s2, q2), s2, q2)[1]

        kw = dict(epsabs=0.0, epsrel=1e-12, limit=400, points=pts)
        return integrate.quad(f_nu, lo, hi, **kw)[0], integrate.quad(f_mu, lo, hi, **kw)[0]

    t_lo = (math.log1p(-q1) if q1 < 1 else -50.0 / s1**2 - 50) + (math.log1p(-q2) if q2 < 1 else -50.0 / s2**2 - 50)
    t_hi = float(_lam(1 + 40 * s1, s1, q1) + _lam(1 + 40 * s2, s2, q2))
    g = lambda t: math.log(max(tails(t)[0], 1e-320)) - math.log(kappa)  # noqa: E731
    if g(t_lo + 1e-12) <= 0:
        t = t_lo
    else:
        t = optimize.brentq(g, t_lo + 1e-12, t_hi, xtol=1e-14, rtol=1e-14, maxiter=200)
    n, m = tails(t)
    return float(kappa * math.exp(t) + m - math.exp(t) * n)


def exact_zero_out(sigma: float, q: float, steps: int, kappa: float) -> float:
    """B_κ of the zero-out reference with the selection revealed (:mod:`reconrisk._src.measures.rero_zeroout`),
    T ≤ 2, by maximising over the allocation directly (no loss distribution, no dual): K ~ Bin(T, q),
    B = max Σ_k p_k Φ(Φ⁻¹(κ_k) + √k/σ) over κ_k ∈ [0, 1] with Σ_k p_k κ_k = κ; each value is concave in
    its κ_k, so nested bounded 1-D maximisations (``minimize_scalar``, xatol 1e-13) find the maximum."""
    if steps not in (1, 2):
        raise ValueError("exact_zero_out takes steps 1 or 2")
    p = [math.comb(steps, k) * q**k * (1 - q) ** (steps - k) for k in range(steps + 1)]
    mu = [math.sqrt(k) / sigma for k in range(steps + 1)]

    def g(k: int, x: float) -> float:
        x = min(max(x, 0.0), 1.0)
        return float(special.ndtr(special.ndtri(x) + mu[k])) if k else x

    def best(k: int, budget: float) -> float:
        """max Σ_{j ≤ k} p_j g_j(κ_j) with Σ_{j ≤ k} p_j κ_j = budget."""
        if k == 0:
            return p[0] * g(0, budget / p[0]) if p[0] > 0 else (0.0 if budget <= 1e-300 else -math.inf)
        lo = max(0.0, (budget - sum(p[:k])) / p[k])
        hi = min(1.0, budget / p[k])
        if hi <= lo:
            return p[k] * g(k, lo) + best(k - 1, budget - p[k] * lo)
        r = optimize.minimize_scalar(lambda x: -(p[k] * g(k, x) + best(k - 1, budget - p[k] * x)),
                                     bounds=(lo, hi), method="bounded", options={"xatol": 1e-13})
        ends = [p[k] * g(k, x) + best(k - 1, budget - p[k] * x) for x in (lo, hi)]
        return max(-float(r.fun), *ends)

    return best(steps, kappa)
