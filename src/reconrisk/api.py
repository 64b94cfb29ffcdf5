"""The public entry points of the theory layer (re-exported by ``reconrisk``)."""

from __future__ import annotations

from typing import Callable

from . import _validate as v
from .accounting import epsilon, noise_multiplier_for_epsilon
from .bounds.calibrate import Calibration, noise_multiplier_for_rero
from .bounds.rero import DEFAULT_REL_TOL, DEFAULT_TOL, ReroBound, rero_bounds
from .errors import ReconRiskError
from .priors import resolve_kappa
from .release import Release


def rero_bound(
    noise_multiplier: float | None = None,
    sample_rate: float = 1.0,
    steps: int = 1,
    *,
    kappa: float | None = None,
    prior_size: int | None = None,
    method: str = "pld",
    samples: int | None = None,
    seed=None,
    confidence: float = 0.95,
    tol: float | None = DEFAULT_TOL,
    rel_tol: float = DEFAULT_REL_TOL,
    release: Release | None = None,
    progress: Callable[[int], None] | None = None,
) -> ReroBound:
    """Bound on the probability that an informed adversary reconstructs a DP-SGD training example.

    γ = B_κ(μ_{T,σ,q}, ν_{T,σ}) of Hayes, Mahloujifar & Balle 2023, Cor. 4. Give the baseline
    success probability as ``kappa`` or as ``prior_size`` (uniform prior over
    that many candidates, κ = 1/n), and the training run as
    ``noise_multiplier, sample_rate, steps`` or as a ``release`` (e.g. a
    heterogeneous :meth:`Release.schedule`).

    ``method``: ``"pld"`` (default; certified bracket), ``"closed_form"``
    (q = 1 or T = 1), ``"mc"`` (corrected Algorithm 1 with a confidence
    interval; ``samples`` default 10⁶, ``seed``), ``"rdp"`` (RDP baseline,
    upper bound only). ``rel_tol`` is the PLD bracket's target relative width
    (upper − lower)/upper (default 1 %); ``tol`` an optional absolute one.
    Returns a frozen :class:`ReroBound` with ``lower``, ``upper``,
    ``converged`` (whether the target was met; the ends are certified either
    way), ``estimate`` for Monte Carlo, and ``to_dict()``.

    >>> b = rero_bound(1.0, 1.0, 1, prior_size=10, method="closed_form")
    >>> round(b.upper, 4)
    0.3891
    """
    if release is None:
        release = Release(noise_multiplier, sample_rate, steps)
    elif noise_multiplier is not None:
        raise ReconRiskError("give either noise_multiplier/sample_rate/steps or release, not both")
    k = resolve_kappa(kappa, prior_size)
    return rero_bounds(
        release, k, method=method, samples=samples, seed=seed, confidence=confidence, tol=tol, rel_tol=rel_tol,
        progress=progress,
    )[0]


def calibrate_noise(
    target_rero: float,
    sample_rate: float,
    steps: int,
    *,
    kappa: float | None = None,
    prior_size: int | None = None,
    delta: float = 1e-5,
    rel_tol: float = 1e-3,
) -> dict:
    """Smallest noise multiplier with certified ReRo ≤ ``target_rero``, and the ε it implies.

    Returns a dict with ``noise_multiplier``, ``rero_upper`` (the certified
    bound at that σ), ``epsilon`` (PLD accountant at ``delta``) and the inputs.
    """
    k = resolve_kappa(kappa, prior_size)
    delta = v.probability_open("delta", delta)
    cal: Calibration = noise_multiplier_for_rero(target_rero, k, sample_rate, steps, rel_tol=rel_tol)
    out = cal.to_dict()
    out["delta"] = delta
    out["epsilon"] = epsilon(cal.noise_multiplier, cal.sample_rate, cal.steps, delta)
    return out


__all__ = ["rero_bound", "calibrate_noise", "epsilon", "noise_multiplier_for_epsilon"]
