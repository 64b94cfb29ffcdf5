"""The loss geometry of one Poisson-subsampled Gaussian step (the ground floor of :mod:`reconrisk._src.accounting.pld`).

Per step the pair is μ = (1−q)·N(0, σ²) + q·N(1, σ²) against ν = N(0, σ²) (Hayes, Mahloujifar & Balle 2023,
Cor. 4), and the remove-direction privacy loss is λ(x) = log((1−q) + q·exp((2x−1)/(2σ²))). This module holds
what every discretisation reads off that pair: the inverse loss x(λ), the masses of loss cells, the truncated
loss range of a step and its exact hockey-stick curve δ(ε) with a round-off bound. Numpy and
``scipy.special`` only.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

#: Per-step tail mass left out of the discretised support (put in the
#: infinity atom when pessimistic, dropped when optimistic).
STEP_TAIL = 1e-18

#: Largest loss represented on the grid; beyond that mass is "infinite".
MAX_LOSS = 600.0



def _norm_mass(a: np.ndarray, b: np.ndarray, loc: float, sigma: float) -> np.ndarray:
    """P(a ≤ X < b) for X ~ N(loc, σ²), accurate in both tails."""
    za = (a - loc) / sigma
    zb = (b - loc) / sigma
    upper = za > 0
    return np.where(upper, special.ndtr(-za) - special.ndtr(-zb), special.ndtr(zb) - special.ndtr(za))


def x_of_remove_loss(lam: np.ndarray, sigma: float, q: float) -> np.ndarray:
    """Inverse of the remove-direction loss λ(x) (increasing in x); −∞ below log(1−q)."""
    lam = np.asarray(lam, dtype=float)
    if q == 1.0:
        return sigma**2 * lam + 0.5
    with np.errstate(over="ignore"):
        v = np.expm1(lam) + q  # e^λ − (1 − q)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = sigma**2 * (np.log(np.where(v > 0, v, 1.0)) - math.log(q)) + 0.5
    return np.where(v > 0, x, -np.inf)


def _remove_loss_of_x(x: float, sigma: float, q: float) -> float:
    z = (2 * x - 1) / (2 * sigma**2)
    if q == 1.0:
        return z
    return float(np.logaddexp(math.log1p(-q), math.log(q) + z))


def remove_loss_vec(x: np.ndarray, sigma: float, q: float) -> np.ndarray:
    z = (2.0 * x - 1.0) / (2.0 * sigma**2)
    if q == 1.0:
        return z
    return np.logaddexp(math.log1p(-q), math.log(q) + z)


def cell_masses(bounds: np.ndarray, sigma: float, q: float, direction: str) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q) masses of the loss cells [bounds[i], bounds[i+1]) of one step.

    ``direction='remove'``: P = μ (mixture), Q = ν = N(0, σ²), loss λ(x).
    ``direction='add'``: P = ν, Q = μ, loss −λ(x) (decreasing in x).
    """
    if direction == "remove":
        xb = x_of_remove_loss(bounds, sigma, q)
        a, b = xb[:-1], xb[1:]
    else:
        xb = x_of_remove_loss(-bounds, sigma, q)
        a, b = xb[1:], xb[:-1]
    m0 = _norm_mass(a, b, 0.0, sigma)
    m1 = _norm_mass(a, b, 1.0, sigma)
    mix = (1.0 - q) * m0 + q * m1
    return (mix, m0) if direction == "remove" else (m0, mix)


def loss_range(sigma: float, q: float, direction: str, tail: float = STEP_TAIL) -> tuple[float, float, float, float]:
    """Truncated loss range [lo, hi] of one step and the P-mass below lo and above hi."""
    z = float(-special.ndtri(tail))  # one-sided Gaussian quantile of the tail
    x_lo, x_hi = -sigma * z, 1.0 + sigma * z
    lam_lo = _remove_loss_of_x(x_lo, sigma, q)
    lam_hi = _remove_loss_of_x(x_hi, sigma, q)
    # P-mass beyond each truncation point
    below = (1 - q) * special.ndtr(x_lo / sigma) + q * special.ndtr((x_lo - 1) / sigma)
    above = (1 - q) * special.ndtr(-x_hi / sigma) + q * special.ndtr(-(x_hi - 1) / sigma)
    # The remove loss is bounded below by log(1 − q) but its bulk can sit far above that (large σ):
    # truncate at λ(x_lo) like the top, the P-mass below going to the first atom (pessimistic) or
    # being dropped (optimistic). Very negative losses (q = 1, tiny σ) are clamped at −MAX_LOSS.
    if lam_lo < -MAX_LOSS:
        lam_lo = -MAX_LOSS
        x_l = float(x_of_remove_loss(np.array([lam_lo]), sigma, q)[0])
        below = (1 - q) * special.ndtr(x_l / sigma) + q * special.ndtr((x_l - 1) / sigma)
    if direction == "remove":
        return lam_lo, lam_hi, below, above
    # add: loss −λ(x) under P = N(0, σ²); x large -> very negative loss
    p_above_xhi = float(special.ndtr(-x_hi / sigma))  # P-mass with loss < −λ(x_hi)
    p_below_xlo = float(special.ndtr(x_lo / sigma))  # P-mass with loss > −λ(x_lo): to +inf (pessimistic)
    return max(-lam_hi, -MAX_LOSS), -lam_lo, p_above_xhi, p_below_xlo


def _log_tail_masses(x: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """log P(X > x) for X ~ N(0, σ²) and X ~ N(1, σ²)."""
    with np.errstate(divide="ignore"):
        return special.log_ndtr(-x / sigma), special.log_ndtr(-(x - 1.0) / sigma)


def hockey_stick_remove(l: np.ndarray, sigma: float, q: float, with_error: bool = False):
    """Exact δ(ε) of one step, remove direction, at ε = l (vectorised, relative precision).

    δ(ε) = μ(L > ε) − e^ε ν(L > ε) = q·Φ̄((x−1)/σ) − (e^ε − 1 + q)·Φ̄(x/σ), x = x(ε).
    With ``with_error`` also returns a bound on the absolute round-off of each
    value: the result is a·(1 − b/a) with a = q·Φ̄((x−1)/σ) ≥ δ; each factor
    carries a relative error of a few hundred ulps at most (``log_ndtr`` of
    arguments down to 1e-300, one ``exp``, one ``expm1``), so 1e-13·a + 1e-300
    bounds it with a wide margin.
    """
    x = x_of_remove_loss(l, sigma, q)
    log_n0, log_n1 = _log_tail_masses(x, sigma)
    coef = np.expm1(l) + q  # e^ε − (1 − q) > 0 wherever x is finite
    with np.errstate(divide="ignore", invalid="ignore"):
        log_a = math.log(q) + log_n1
        log_b = np.log(np.where(coef > 0, coef, 1.0)) + log_n0
        a = np.exp(log_a)
        d = a * -np.expm1(np.minimum(log_b - log_a, 0.0))
    out = np.where(np.isfinite(x), d, -np.expm1(l))  # below log(1−q): δ = 1 − e^ε exactly
    if not with_error:
        return out
    err = np.where(np.isfinite(x), 1e-13 * a, 1e-16 * np.abs(out)) + 1e-300
    return out, err


def hockey_stick_add(l: np.ndarray, sigma: float, q: float, with_error: bool = False):
    """Exact δ(ε) of one step, add direction (ν = N(0, σ²) against μ, loss −λ(x)), at ε = l (vectorised).

    L > ε ⟺ x < x* = x(−ε) (the remove loss's inverse), so δ(ε) = Φ(x*/σ) − e^ε·[(1−q)Φ(x*/σ) + qΦ((x*−1)/σ)];
    with 1 − (1−q)e^ε = q·e^{ε+z}, z = (2x*−1)/(2σ²) = log(e^{−ε} − 1 + q) − log q, this is
    δ(ε) = a·(1 − b/a), a = e^ε·(e^{−ε} − 1 + q)·Φ(x*/σ), b = q·e^ε·Φ((x*−1)/σ) (b < a: the Gaussian ratio),
    read in log space like :func:`hockey_stick_remove`. δ = 0 for ε ≥ −log(1 − q) (no x has that loss) and
    1 − e^ε where x* overflows (every x has a larger loss). ``with_error``: 1e-12·a + 1e-300 bounds the
    round-off (ten times the remove direction's allowance: ``log_ndtr`` and two logs, ≤ ~800 ulp relative).
    """
    l = np.asarray(l, dtype=float)
    x = x_of_remove_loss(-l, sigma, q)
    with np.errstate(over="ignore"):
        v = np.expm1(-l) + q  # e^{−ε} − (1 − q)
    fin = np.isfinite(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_a = l + np.log(np.where(v > 0, v, 1.0)) + special.log_ndtr(np.where(fin, x, 0.0) / sigma)
        log_b = math.log(q) + l + special.log_ndtr((np.where(fin, x, 0.0) - 1.0) / sigma)
        a = np.where(fin, np.exp(log_a), 0.0)
        d = a * -np.expm1(np.minimum(log_b - log_a, 0.0))
    out = np.where(fin, d, np.where(x > 0, -np.expm1(l), 0.0))
    if not with_error:
        return out
    err = np.where(fin, 1e-12 * a, 1e-16 * np.abs(out)) + 1e-300
    return out, err
