"""The analytic bracket of the ReRo bound (Hayes, Mahloujifar & Balle 2023, Cor. 4): closed-form ends valid for
every σ, q, T, used by :mod:`reconrisk._src.measures.rero` to clamp and, where no grid can do better, to answer.

Kept apart from the PLD bracket so that each file stays readable; :mod:`reconrisk._src.measures.rero` re-exports
:func:`analytic_bracket`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..release import Release


def analytic_bracket(release: Release, kappa: np.ndarray, *, symmetric: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A cheap certified bracket on B_κ from closed forms, valid for every σ, q, T (and schedules).

    ``symmetric=True``: the bracket on 1 − C^{⊗T}(κ) for the composition of the symmetrised per-step
    curves C = min{f_q, f_q⁻¹}** (fixed-size batches, pairs; see
    :attr:`reconrisk._src.analysis.privacy.PrivacyAnalysis.pair`). Its upper ends are the Gaussian-DP one
    (f_q ≥ G_μ and f_q⁻¹ ≥ G_μ, so C ≥ G_μ) and the no-noise one for pairs: C ≥ max(0, 1 − q − α), the
    (0, q)-DP curve, whose T-fold composition is (0, 1 − Π(1 − q_i)^{T_i})-DP (Dong, Roth & Su 2022), so
    B ≤ κ + P(the slot is ever sampled); the sampled-steps bound (one reference law) is not used. The
    lower ends are those below: C ≤ f_q, so the symmetrised composition is at least the remove pair's.

    Upper ends (the smaller is used):

    * Gaussian DP: each step's pair ((1−q)ν + qN(1,σ²), ν) is a garbling of
      (N(1,σ²), ν) (mix in ν), Blackwell order survives products, so
      B ≤ Φ(Φ⁻¹(κ) + μ) with μ² = Σ T_i/σ_i².
    * No noise: every σ is a garbling of σ = 0, where the adversary learns
      exactly whether the target was ever sampled: B ≤ 1 − Π(1−q_i)^{T_i}(1−κ).
    * Sampled steps (one segment, qT ≤ 1000): μ is the mixture over the set S of
      sampled steps of N(1_S, σ²I) with weights q^|S|(1−q)^{T−|S|}, and for any
      E with ν(E) ≤ κ each component gives μ_S(E) ≤ Φ(Φ⁻¹(κ) + √|S|/σ)
      (Neyman–Pearson), so B ≤ E_K[Φ(Φ⁻¹(κ) + √K/σ)], K ~ Binomial(T, q) —
      tight to first order in qT where the target is rarely sampled (q ≤ 1e-4,
      κ ≤ 1e-10), where the grids cannot resolve the loss (:func:`_sampled_gdp_upper`).

    Lower ends (the larger is used): any test E with ν(E) ≤ κ gives B ≥ μ(E).

    * "some step exceeds its threshold": E = ∪_t {x_t > σ_t z} with
      Φ̄(z) = 1 − (1−κ)^{1/T} (so ν(E) = κ exactly) has
      μ(E) = 1 − Π_i (1 − (1−q_i)Φ̄(z) − q_i Φ̄(z − 1/σ_i))^{T_i} — tight when
      σ is small or the risk saturates (B ≈ 1).
    * a single step's optimal test: (1−q)κ + qΦ(Φ⁻¹(κ) + 1/σ) (Hayes, Mahloujifar & Balle 2023, T = 1).

    Everything is evaluated with log1p/expm1 so that σ from 5e-324 to 1e308
    and T up to 1e7 neither overflow nor lose the answer.
    """
    kappa = np.asarray(kappa, dtype=float)
    segs = release.segments
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        inv = np.array([1.0 / s.noise_multiplier if s.noise_multiplier > 0 else np.inf for s in segs])
        mu = math.sqrt(sum(s.steps * min(float(iv), 1e154) ** 2 for s, iv in zip(segs, inv)))
        up_gdp = special.ndtr(special.ndtri(kappa) + mu)
        log_never = sum(s.steps * math.log1p(-s.sample_rate) if s.sample_rate < 1 else -math.inf for s in segs)
        up_free = (kappa - np.expm1(log_never)) if symmetric else -np.expm1(log_never + np.log1p(-kappa))
        upper = np.minimum(np.minimum(up_gdp, up_free), 1.0)
        if len(segs) == 1 and not symmetric:
            upper = np.minimum(upper, _sampled_gdp_upper(segs[0], kappa))
        t_total = release.steps
        p_tail = -np.expm1(np.log1p(-kappa) / t_total)  # Φ̄(z) = 1 − (1−κ)^{1/T}
        z = -special.ndtri(p_tail)
        log_miss = np.zeros_like(kappa)
        for s, iv in zip(segs, inv):
            hit = (1 - s.sample_rate) * p_tail + s.sample_rate * special.ndtr(-(z - iv))
            log_miss = log_miss + s.steps * np.log1p(-np.minimum(hit, 1.0))
        low_max = -np.expm1(log_miss)
        low_one = np.max(
            [(1 - s.sample_rate) * kappa + s.sample_rate * special.ndtr(special.ndtri(kappa) + iv) for s, iv in zip(segs, inv)],
            axis=0,
        )
        lower = np.maximum(np.maximum(low_max, low_one), kappa)
    lower = np.minimum(lower, upper)
    return lower, upper


#: The sampled-steps bound is summed where qT is at most this (beyond it, it is never the smaller upper end).
SAMPLED_GDP_MAX_MEAN = 1000.0


def _sampled_gdp_upper(seg, kappa: np.ndarray) -> np.ndarray:
    """E_K[Φ(Φ⁻¹(κ) + √K/σ)], K ~ Binomial(T, q), from above (see :func:`analytic_bracket`); 1 where not summed.

    The terms k ∈ [k_lo, k_hi] (40 standard deviations around qT) are summed in log space; the mass outside
    is bounded by the binomial Chernoff bound exp(−T·KL(k/T ‖ q)) and charged with Φ ≤ 1 above k_hi and
    Φ(Φ⁻¹(κ) + √k_lo/σ) below k_lo, so the result errs upward only.
    """
    t, q, sigma = seg.steps, seg.sample_rate, seg.noise_multiplier
    mean = t * q
    if not (0.0 < q < 1.0) or mean > SAMPLED_GDP_MAX_MEAN or not 0.0 < sigma < np.inf:
        return np.ones_like(kappa)
    sd = math.sqrt(mean * (1.0 - q))
    k_lo = max(0, int(math.floor(mean - 40.0 * sd - 1.0)))
    k_hi = min(t, int(math.ceil(mean + 40.0 * sd + 40.0)))
    k = np.arange(k_lo, k_hi + 1, dtype=float)
    log_pmf = (special.gammaln(t + 1.0) - special.gammaln(k + 1.0) - special.gammaln(t - k + 1.0)
               + k * math.log(q) + (t - k) * math.log1p(-q))
    a = special.ndtri(np.asarray(kappa, dtype=float))
    log_terms = log_pmf[None, :] + special.log_ndtr(a[:, None] + np.sqrt(k)[None, :] / sigma)
    top = np.max(log_terms, axis=1)
    total = np.exp(top) * np.sum(np.exp(log_terms - top[:, None]), axis=1)

    def log_tail(m: float) -> float:  # Chernoff: log P(K ≥ m) for m > mean, log P(K ≤ m) for m < mean
        x = m / t
        if x <= 0.0:
            return t * math.log1p(-q)
        if x >= 1.0:
            return t * math.log(q)
        return -t * (x * math.log(x / q) + (1.0 - x) * math.log((1.0 - x) / (1.0 - q)))

    if k_hi < t:
        total = total + math.exp(log_tail(k_hi + 1.0))
    if k_lo > 0:
        total = total + math.exp(log_tail(k_lo - 1.0)) * special.ndtr(a + math.sqrt(k_lo) / sigma)
    return np.minimum(total * (1.0 + 1e-12), 1.0)  # (relative round-off of the sum of positive terms)


def symmetric_step_power(sigma: float, q: float, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(1 − C(α), C(α)) for one step's symmetrised curve C = min{f, f⁻¹}**, f = q·G_{1/σ} + (1 − q)·Id.

    Dong, Roth & Su 2022 (§4.2, the explicit form of C_q for a symmetric base curve): with x* = Φ(−1/(2σ))
    the fixed point of G_{1/σ} (where f′ = −1) and y* = f(x*) = q·x* + (1 − q)(1 − x*),
    C = f on [0, x*], the segment x* + y* − α on [x*, y*], f⁻¹ on [y*, 1]. f⁻¹(α) (α ≥ y*) is the
    β ∈ [0, x*] with f(β) = α, found by bisection to float resolution (f is decreasing). σ is the
    dominating pair's noise multiplier (σ/2 of a fixed-batch release).
    """
    a = np.asarray(alpha, dtype=float)
    mu = 1.0 / sigma
    xs = float(special.ndtr(-mu / 2))
    ys = q * xs + (1 - q) * (1 - xs)

    def f(x):
        return (1 - q) * (1 - x) + q * special.ndtr(-special.ndtri(x) - mu)

    def f_power(x):
        return (1 - q) * x + q * special.ndtr(special.ndtri(x) + mu)

    power = np.empty_like(a)
    beta = np.empty_like(a)
    left = a <= xs
    power[left], beta[left] = f_power(a[left]), f(a[left])
    mid = (a > xs) & (a < ys)
    power[mid], beta[mid] = 1.0 - xs - ys + a[mid], xs + ys - a[mid]
    right = a >= ys
    if np.any(right):
        t = a[right]
        lo, hi = np.zeros_like(t), np.full_like(t, xs)
        for _ in range(200):  # f(lo) ≥ t ≥ f(hi)
            m = 0.5 * (lo + hi)
            big = f(m) >= t
            lo, hi = np.where(big, m, lo), np.where(big, hi, m)
        b = 0.5 * (lo + hi)
        power[right], beta[right] = 1.0 - b, b
    return np.clip(power, 0.0, 1.0), np.clip(beta, 0.0, 1.0)
