"""The public entry points of the theory layer (re-exported by ``reconrisk``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from . import _validate as v
from ._deprecated import warn_renamed
from .analysis.accountant import epsilon, shared_analysis
from .analysis.dispatch import analyse
from .analysis.privacy import PrivacyAnalysis
from .analysis.calibrate import Calibration, calibrate, noise_multiplier_for_epsilon
from .analysis.privacy_rero import rero_bounds
from .measures.rero import DEFAULT_REL_TOL, DEFAULT_TOL, ReroBound
from .measures.risk import DEFAULT_TOL as RISK_TOL
from .measures.tradeoff import TradeOff
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
    analysis = shared_analysis(release)  # the one composition cache every door reads
    if method == "mc":
        k = resolve_kappa(kappa, prior_size)
        b = rero_bounds(analysis, k, method=method, samples=samples, seed=seed, confidence=confidence, tol=tol,
                        rel_tol=rel_tol, progress=progress)[0]
        return b if prior_size is None else replace(b, details={**b.details, "prior_size": prior_size})
    v.probability_open("confidence", confidence)  # checked whatever the method (no flag is ignored silently)
    return analysis.rero(kappa, prior_size=prior_size, method=method, rel_tol=rel_tol, tol=tol)


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
    """Deprecated: use :func:`calibrate` (``calibrate("reconstruction", target_rero, sample_rate=…, steps=…,
    kappa=…)``), whose :class:`~reconrisk._src.analysis.calibrate.Calibration` holds the certified bound as a ``Bound``.

    Smallest noise multiplier with certified ReRo ≤ ``target_rero``, and the ε it implies: the one
    calibrator's answer as the dict of earlier releases — ``noise_multiplier``, ``rero`` (the certified bound
    at that σ, as ``reconrisk bound`` prints it), ``rero_upper``, ``epsilon`` (the PLD accountant's, at
    ``delta``) and the inputs. Warns once per call (:class:`DeprecationWarning`); removed in the next release.
    """
    warn_renamed("calibrate_noise()", "calibrate('reconstruction', ...)", "reconrisk")
    k = resolve_kappa(kappa, prior_size)
    v.in_range("target_rero", target_rero, k, 1.0)
    delta = v.probability_open("delta", delta)
    cal: Calibration = calibrate("reconstruction", target_rero, sample_rate=sample_rate, steps=steps, kappa=k,
                                 rel_tol=rel_tol)
    b = cal.bound
    return {
        "noise_multiplier": cal.noise_multiplier, "target_rero": cal.target, "kappa": k,
        "sample_rate": cal.sample_rate, "steps": cal.steps, "rero_upper": b.upper,
        "rero": {"method": b.method, "lower": b.lower, "upper": b.upper, "converged": b.converged},
        "bracket": list(cal.bracket), "method": b.method, "evaluations": cal.evaluations,
        "delta": delta, "epsilon": shared_analysis(cal.release).epsilon(delta).upper,
    }


def tradeoff(source, alphas, *, method: str = "auto", tol: float | None = None) -> TradeOff:
    """Certified bracket on the trade-off curve f(α) of ``source`` at every α (Dong, Roth & Su 2022).

    ``source``: a :class:`~reconrisk._src.release.Release`, a ``dp_accounting`` ``DpEvent`` or any analysis
    (:func:`analyse`); the curve is its analysis's :meth:`~reconrisk._src.analysis.base.Analysis.tradeoff`
    (:func:`reconrisk._src.analysis.privacy_rero.tradeoff` for a release: ``method`` ``"auto"``, ``"pld"`` or
    ``"closed_form"``; ``tol`` the PLD bracket's absolute width, default 1e-3).
    """
    an = analyse(source)
    return an.tradeoff(alphas, tol=tol) if method == "auto" else an.tradeoff(alphas, tol=tol, method=method)


def risk(source, measure: str, *, kappa: float | None = None, prior_size: int | None = None,
         baseline: float | None = None, prior=None, fpr: float | None = None, tol: float = RISK_TOL):
    """Certified bracket on one risk measure of ``source`` (the ``reconrisk risk`` command).

    ``source``: a :class:`~reconrisk._src.release.Release`, a ``dp_accounting`` ``DpEvent`` or any analysis
    (:func:`analyse`); the arguments are :func:`reconrisk._src.measures.risk.risk`'s.
    """
    kw = {k: x for k, x in dict(kappa=kappa, prior_size=prior_size, baseline=baseline, prior=prior, fpr=fpr).items()
          if x is not None}
    if tol != RISK_TOL:
        kw["tol"] = tol
    return analyse(source).risk(measure, **kw)


__all__ = ["rero_bound", "calibrate_noise", "calibrate", "epsilon", "noise_multiplier_for_epsilon", "PrivacyAnalysis",
           "analyse", "tradeoff", "risk"]
