"""Privacy-loss distributions a mechanism module builds for itself, as reconrisk's
:class:`~reconrisk._src.accounting.pmf.PMF` (pessimistic: every loss rounded up, optimistic: down — the PMF contract).

* :func:`atoms_pmf` — a finite support (randomized response, discrete Laplace, the discrete Gaussian, the
  noiseless step): each atom's loss rounded to the grid, the mass the caller truncated put at +∞ when
  pessimistic and dropped when optimistic;
* :func:`continuous_pmf` — a continuous monotone privacy loss read through ``dp_accounting``'s **public**
  privacy-loss classes (:mod:`dp_accounting.pld.privacy_loss_mechanism`: ``connect_dots_bounds``,
  ``get_delta_for_epsilon``, ``privacy_loss_tail``, ``mu_upper_cdf``, ``inverse_privacy_loss``):
  pessimistic by connect-the-dots (Doroshenko et al. 2022, Alg. 1, the fixed-gap form), optimistic by the
  privacy buckets with losses rounded down — what ``dp_accounting``'s own constructors do, without reading
  any private field of its PMFs;
* :func:`pure_dp_rdp`, :func:`pure_dp_mu` — what every pure ε-DP step implies (its curve is f_{ε,0}).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..accounting.pmf import PMF
from ..errors import ReconRiskError


def atoms_pmf(losses, probs, h: float, pessimistic: bool, infinity_mass: float = 0.0) -> PMF:
    """The PMF of finitely many atoms (loss, probability): losses rounded up (pessimistic) or down (optimistic);
    +∞ losses and ``infinity_mass`` (mass left out of the support) count at +∞ when pessimistic, are dropped
    when optimistic (δ(ε) = E_P[(1 − e^{ε−L})₊] is non-decreasing in every loss)."""
    losses, probs = np.asarray(losses, dtype=float), np.asarray(probs, dtype=float)
    inf = np.isposinf(losses)
    keep = ~inf & (probs > 0)
    extra = float(probs[inf].sum()) + float(infinity_mass)
    rnd = np.ceil if pessimistic else np.floor
    if not keep.any():
        return PMF(h, 0, np.zeros(1), extra if pessimistic else 0.0, bool(pessimistic), 0.0)
    k = rnd(losses[keep] / h).astype(np.int64)
    lo = int(k.min())
    out = np.zeros(int(k.max()) - lo + 1)
    np.add.at(out, k - lo, probs[keep])
    return PMF(h, lo, out, extra if pessimistic else 0.0, bool(pessimistic), 0.0)


def continuous_pmf(loss, h: float, pessimistic: bool) -> PMF:
    """The PMF of a continuous ``dp_accounting`` ``MonotonePrivacyLoss`` on grid ``h`` (see the module docstring)."""
    try:
        return _connect_dots(loss, h) if pessimistic else _buckets_down(loss, h)
    except (ValueError, TypeError, OverflowError, ZeroDivisionError) as exc:
        if isinstance(exc, ReconRiskError):
            raise
        raise ReconRiskError(f"dp_accounting cannot read this privacy loss ({exc})") from None


def _connect_dots(loss, h: float) -> PMF:
    b = loss.connect_dots_bounds()
    lo, hi = math.floor(b.epsilon_lower / h), math.ceil(b.epsilon_upper / h)
    deltas = np.minimum.accumulate(np.asarray(loss.get_delta_for_epsilon(np.arange(lo, hi + 1) * h), dtype=float))
    if hi == lo:
        return PMF(h, lo, np.array([1.0 - deltas[0]]), float(deltas[0]), True, 0.0)
    d = np.diff(deltas)
    p = np.zeros_like(deltas)
    p[0] = 1.0 - deltas[0] + d[0] / math.expm1(h)
    p[1:-1] = (d[1:] - d[:-1] * math.exp(h)) / math.expm1(h)
    p[-1] = d[-1] / math.expm1(-h)
    return PMF(h, lo, np.maximum(p, 0.0), float(deltas[-1]), True, 0.0)


def _buckets_down(loss, h: float) -> PMF:
    tail = loss.privacy_loss_tail()
    lower_x, upper_x = tail.lower_x_truncation, tail.upper_x_truncation
    atoms: dict[int, float] = {}
    for ell, p in tail.tail_probability_mass_function.items():
        if ell != math.inf:  # optimistic: the infinite tail is dropped
            atoms[math.floor(ell / h)] = atoms.get(math.floor(ell / h), 0.0) + p
    k = math.floor(loss.privacy_loss(lower_x) / h)
    top = loss.privacy_loss(upper_x)
    xs, ks, x = [lower_x], [], lower_x
    while x < upper_x:  # each x-interval has its loss in [k h, (k + 1) h]: the mass goes to k h
        x = upper_x if h * k <= top else loss.inverse_privacy_loss(h * k)
        xs.append(x)
        ks.append(k)
        k -= 1
    cdf = np.asarray(loss.mu_upper_cdf(xs), dtype=float)
    for kk, p in zip(ks, np.diff(cdf)):
        atoms[kk] = atoms.get(kk, 0.0) + float(p)
    keys = np.array(sorted(atoms))
    out = np.zeros(int(keys[-1] - keys[0]) + 1)
    for kk in keys:
        out[int(kk - keys[0])] += atoms[int(kk)]
    return PMF(h, int(keys[0]), np.maximum(out, 0.0), 0.0, False, 0.0)


def pure_dp_rdp(eps: float, orders: np.ndarray) -> np.ndarray:
    """The RDP curve every ε-DP pair satisfies: that of randomized response at ε,
    (1/(α−1))·log((e^{αε} + e^{(1−α)ε})/(1 + e^ε)) (every ε-DP pair is a post-processing of it)."""
    o = np.asarray(orders, dtype=float)
    if eps == 0.0:
        return np.zeros(o.size)
    if not math.isfinite(eps):
        return np.full(o.size, np.inf)
    return (np.logaddexp(o * eps, (1 - o) * eps) - np.logaddexp(0.0, eps)) / (o - 1)


def pure_dp_mu(eps: float) -> float:
    """The smallest μ with f_{ε,0} ≥ G_μ: 2Φ⁻¹(e^ε/(1 + e^ε)) = −2Φ⁻¹(1/(1 + e^ε))."""
    return math.inf if math.isinf(eps) else float(-2.0 * special.ndtri(1.0 / (1.0 + math.exp(min(eps, 700.0)))))
