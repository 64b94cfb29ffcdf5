"""Sweeps of the certified ReRo bound over ε and q (Hayes, Mahloujifar & Balle 2023, Fig. 5) and the audit's bound curve.

Computation only (calibration with the PLD accountant and the certified PLD
bracket); :mod:`reconrisk._src.report.curves` and :mod:`reconrisk._src.report.audit`
draw the results.

For each ε the noise multiplier is calibrated with the PLD accountant
(add/remove, Poisson sampling; spec_000 §5.5); each row carries the certified
PLD bracket as ``rero = {method, lower, upper}`` — the shape ``reconrisk
bound`` prints — and the Rényi-DP bound (Hayes, Mahloujifar & Balle 2023, Eq. 2 / Balle, Cherubin & Hayes 2022, Thm 2) of
the same σ as ``baselines.rdp``.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .. import _validate as v
from ..analysis.calibrate import noise_multiplier_for_epsilon
from ..analysis.privacy import PrivacyAnalysis
from ..api import rero_bound
from ..errors import ReconRiskError
from ..release import Release


def curve_jobs(
    *,
    steps: int = 100,
    sample_rate: float = 1.0,
    epsilon_range: tuple[float, float] = (0.25, 64.0),
    points: int = 12,
    fixed_epsilon: float = 4.0,
    sample_rates: Sequence[float] = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.99),
) -> list[tuple[str, float, float]]:
    """The (panel, ε, q) points of both panels: ε log-spaced at ``sample_rate``, then each q at ``fixed_epsilon``."""
    v.integer("steps", steps, minimum=1)
    sample_rate = v.sample_rate("sample_rate", sample_rate)
    e_lo = v.epsilon("epsilon_min", epsilon_range[0])
    e_hi = v.epsilon("epsilon_max", epsilon_range[1])
    if e_hi <= e_lo:
        raise ReconRiskError(f"epsilon_max must be > epsilon_min; found {e_hi} <= {e_lo}")
    points = v.integer("points", points, minimum=2, maximum=200)
    fixed_epsilon = v.epsilon("fixed_epsilon", fixed_epsilon)
    qs = [v.sample_rate("sample_rates", q) for q in sample_rates]
    eps_grid = np.geomspace(e_lo, e_hi, points)
    return [("epsilon", float(e), sample_rate) for e in eps_grid] + [("sample_rate", fixed_epsilon, q) for q in qs]


def rero_curves(
    *,
    steps: int = 100,
    sample_rate: float = 1.0,
    prior_sizes: Sequence[int] = (2, 10, 100, 1024),
    epsilon_range: tuple[float, float] = (0.25, 64.0),
    points: int = 12,
    fixed_epsilon: float = 4.0,
    sample_rates: Sequence[float] = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.99),
    delta: float = 1e-5,
    progress: Callable[[int], None] | None = None,
) -> list[dict]:
    """Rows of both panels, one per (point, prior size); ``progress(1)`` after each calibrated point.

    Row keys: ``panel`` (``"epsilon"`` or ``"sample_rate"``), ``epsilon``,
    ``sample_rate``, ``steps``, ``noise_multiplier``, ``prior_size``,
    ``kappa`` (= 1/prior_size), ``rero`` = ``{method, lower, upper}`` and
    ``baselines`` = ``{rdp}``.
    """
    steps = v.integer("steps", steps, minimum=1)
    sizes = [v.integer("prior_size", n, minimum=2, maximum=10**300) for n in prior_sizes]
    if not sizes:
        raise ReconRiskError("prior_size must be given at least once")
    delta = v.probability_open("delta", delta)
    jobs = curve_jobs(steps=steps, sample_rate=sample_rate, epsilon_range=epsilon_range, points=points,
                      fixed_epsilon=fixed_epsilon, sample_rates=sample_rates)
    kappas = np.array([1.0 / n for n in sizes])
    rows: list[dict] = []
    for panel, eps, q in jobs:
        sigma = noise_multiplier_for_epsilon(eps, q, steps, delta)
        analysis = PrivacyAnalysis(Release(sigma, q, steps))
        pld = analysis.rero_many(kappas)
        rdp = analysis.rero_many(kappas, method="rdp")
        for n, k, b, r in zip(sizes, kappas, pld, rdp):
            rows.append(
                dict(panel=panel, epsilon=eps, sample_rate=q, steps=steps, noise_multiplier=sigma, prior_size=n,
                     kappa=float(k), rero={"method": b.method, "lower": b.lower, "upper": b.upper, "width": b.width,
                                           "converged": b.converged},
                     baselines={"rdp": r.upper})
            )
        if progress is not None:
            progress(1)
    return rows


def bound_curve(
    epsilons: Sequence[float], sample_rate: float, steps: int, prior_size: int, delta: float = 1e-5, points: int = 16
) -> tuple[np.ndarray, np.ndarray]:
    """(ε grid, certified upper bound) spanning the audited ε values (σ calibrated at each ε, PLD accountant)."""

    eps = [v.epsilon("epsilons", e) for e in epsilons]
    if not eps:
        raise ReconRiskError("epsilons must hold at least one value; found none")
    sample_rate = v.sample_rate("sample_rate", sample_rate)
    points = v.integer("points", points, minimum=2, maximum=200)
    lo, hi = min(eps), max(eps)
    grid = np.geomspace(lo / 1.5, hi * 1.5, points if sample_rate == 1.0 else max(6, points // 2))
    grid = np.unique(np.concatenate([grid, np.asarray(eps, float)]))
    ups = []
    for e in grid:
        sigma = noise_multiplier_for_epsilon(float(e), sample_rate, steps, delta)
        ups.append(rero_bound(sigma, sample_rate, steps, prior_size=prior_size).upper)
    return grid, np.asarray(ups)


__all__ = ["curve_jobs", "rero_curves", "bound_curve"]
