"""Conversions from DP guarantees to ReRo bounds (seed 002 Thm 2, Cor. 3–4; seed 000 Eq. 2).

These are the *baselines* that seed 000 improves on; they are valid upper
bounds on the reconstruction success γ, never estimates.

* (α, ε)-RDP ⇒ γ = (κ e^ε)^{(α−1)/α} (Balle, Cherubin, Hayes 2022, Thm 2);
  with an RDP curve, minimise over α and cap at 1.
* ε-DP ⇒ γ = κ e^ε (Cor. 3). (ε, δ)-DP ⇒ γ = κ e^ε + δ: the event
  "reconstruction succeeds" has P_μ ≤ e^ε P_ν + δ and P_ν ≤ κ. The
  baseline printed by ``reconrisk bound`` is this, named ``dp`` with its
  formula; dropping δ (as before) is not a bound (at σ = 3, q = 1, T = 1,
  κ = 1e-9 it gave 3.6e-9 against the exact 7.4e-9).
* ρ-zCDP ⇒ γ = exp(−(√log(1/κ) − √ρ)²) when ρ < log(1/κ), else 1 (Cor. 4).

The RDP curves themselves come from :mod:`reconrisk.accounting.rdp`.
"""

from __future__ import annotations

import math

import numpy as np

from ..accounting.rdp import DEFAULT_ORDERS, minimise_over_orders


def rero_from_rdp(kappa, orders, rdp_epsilons) -> np.ndarray:
    """min over α of (κ e^{ε(α)})^{(α−1)/α}, capped at 1 (seed 002 Thm 2)."""
    kappa = np.atleast_1d(np.asarray(kappa, dtype=float))
    a = np.asarray(orders, dtype=float)[None, :]
    e = np.asarray(rdp_epsilons, dtype=float)[None, :]
    log_g = (a - 1) / a * (np.log(kappa)[:, None] + e)
    return np.minimum(1.0, np.exp(np.min(log_g, axis=1)))


def rero_from_dp(kappa, epsilon: float, delta: float = 0.0) -> np.ndarray:
    """γ = min(1, κ e^ε + δ) for (ε, δ)-DP (seed 002 Cor. 3; δ = 0 is pure ε-DP)."""
    kappa = np.atleast_1d(np.asarray(kappa, dtype=float))
    with np.errstate(over="ignore"):
        return np.minimum(1.0, np.exp(np.log(kappa) + float(epsilon)) + float(delta))


def rero_from_zcdp(kappa, rho: float) -> np.ndarray:
    """γ = exp(−max(0, √log(1/κ) − √ρ)²) for ρ-zCDP (seed 002 Cor. 4; seed 000 Eq. 2)."""
    kappa = np.atleast_1d(np.asarray(kappa, dtype=float))
    gap = np.maximum(0.0, np.sqrt(-np.log(kappa)) - math.sqrt(float(rho)))
    return np.exp(-(gap**2))


def rdp_rero_bound(segments, kappa, orders=DEFAULT_ORDERS) -> np.ndarray:
    """The RDP baseline for a DP-SGD schedule: exact Eq. (2) when every q = 1."""
    from ..release import is_full_batch

    if is_full_batch(segments):
        rho = sum(s.steps / (2 * s.noise_multiplier**2) for s in segments)
        return rero_from_zcdp(kappa, rho)
    kappa = np.atleast_1d(np.asarray(kappa, dtype=float))

    def objective(a, e):
        return (a - 1) / a * (np.log(kappa)[:, None] + e[None, :])

    best, _ = minimise_over_orders(segments, objective, orders)
    with np.errstate(over="ignore"):
        return np.minimum(1.0, np.exp(best))
