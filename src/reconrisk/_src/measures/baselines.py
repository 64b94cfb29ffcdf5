"""The papers' conversions of a guarantee to a ReRo bound — the baselines (Balle, Cherubin & Hayes 2022,
Thm 2, Cor. 3–4; Hayes, Mahloujifar & Balle 2023, Eq. 2).

Valid upper bounds on the reconstruction success γ, never estimates, and not the tightest: those are
:mod:`reconrisk._src.measures.fdp` and :mod:`reconrisk._src.measures.rdp_tradeoff`. :mod:`reconrisk._src.measures.rero` and
:mod:`reconrisk._src.measures.tradeoff` print them beside the certified bracket; :mod:`reconrisk._src.measures.conversions`
re-exports them with the validated single conversions.
"""

from __future__ import annotations

import math

import numpy as np

from ..accounting.rdp import DEFAULT_ORDERS, minimise_over_orders
from ..release import is_full_batch


def rero_from_rdp(kappa, orders, rdp_epsilons) -> np.ndarray:
    """min over α of (κ e^{ε(α)})^{(α−1)/α}, capped at 1 (Balle, Cherubin & Hayes 2022, Thm 2)."""
    kappa = np.atleast_1d(np.asarray(kappa, dtype=float))
    a = np.asarray(orders, dtype=float)[None, :]
    e = np.asarray(rdp_epsilons, dtype=float)[None, :]
    log_g = (a - 1) / a * (np.log(kappa)[:, None] + e)
    return np.exp(np.minimum(0.0, np.min(log_g, axis=1)))  # min(1, e^x) = e^min(0, x): no overflow


def rero_from_dp(kappa, epsilon: float, delta: float = 0.0) -> np.ndarray:
    """γ = min(1, κ e^ε + δ) for (ε, δ)-DP (Balle, Cherubin & Hayes 2022, Cor. 3; δ = 0 is pure ε-DP)."""
    kappa = np.atleast_1d(np.asarray(kappa, dtype=float))
    return np.minimum(1.0, np.exp(np.minimum(0.0, np.log(kappa) + float(epsilon))) + float(delta))


def rero_from_zcdp(kappa, rho: float) -> np.ndarray:
    """γ = exp(−max(0, √log(1/κ) − √ρ)²) for ρ-zCDP (Balle, Cherubin & Hayes 2022, Cor. 4; Hayes, Mahloujifar & Balle 2023, Eq. 2)."""
    kappa = np.atleast_1d(np.asarray(kappa, dtype=float))
    gap = np.maximum(0.0, np.sqrt(-np.log(kappa)) - math.sqrt(float(rho)))
    return np.exp(-(gap**2))


def rdp_rero_bound(segments, kappa, orders=DEFAULT_ORDERS) -> np.ndarray:
    """The RDP baseline for a DP-SGD schedule: exact Eq. (2) when every q = 1."""
    if is_full_batch(segments):
        rho = sum(s.steps / (2 * s.noise_multiplier**2) for s in segments)
        return rero_from_zcdp(kappa, rho)
    kappa = np.atleast_1d(np.asarray(kappa, dtype=float))

    def objective(a, e):
        return (a - 1) / a * (np.log(kappa)[:, None] + e[None, :])

    best, _ = minimise_over_orders(segments, objective, orders)
    return np.exp(np.minimum(0.0, best))
