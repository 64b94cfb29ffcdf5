"""The certified trade-off curve of a DP-SGD release (f-DP; Dong, Roth, Su 2022).

For the pair of Hayes, Mahloujifar & Balle 2023, Cor. 4 — μ = output law with the target in the
training set, ν = output law without it — the trade-off function is

    f(α) = T(ν, μ)(α) = inf{ 1 − E_μ[φ] : E_ν[φ] ≤ α },

the smallest type-II error (missed membership) of any test whose type-I error
(false alarm) is at most α. Its complement is the blow-up function of Hayes, Mahloujifar & Balle 2023, Eq. 3: **1 − f(α) = B_α(μ, ν)** (Kaissis et al. 2023; Kulynych et al.
2025), so the certified ReRo bracket of :func:`reconrisk._src.analysis.privacy_rero.pld_bracket`
— vectorised over κ — is a certified bracket on the whole curve at once:

    β_lower(α) = 1 − B_upper(α),   β_upper(α) = 1 − B_lower(α).

Precision. The curve is returned in both forms: ``power = 1 − f(α)`` (the
attack's true-positive rate) is computed *directly* (never as ``1 − β``), so
it keeps relative precision when it is tiny (α down to 1e-12: the PLD
blow-up is a sum of atom masses plus ``exp(l + log rest)``) until the engine's
*absolute* tail/round-off allowance takes over: measured at σ 1/q 0.02/T 500,
the relative width of the TPR bracket is ≤ 0.1 % for α ≥ 1e-8 and ≈ 3 % at
α = 1e-10, but a factor ≈ 5 at α = 1e-12 (both ends stay certified). ``β`` is
``1 − power``, rounded outward by one ulp; it is tiny only when α is close
to 1. Where a closed form exists both are evaluated with ``ndtr`` of the right
sign so neither loses precision:

* q = 1 (Gaussian DP, μ_GDP = √(Σ T_i/σ_i²)): f(α) = Φ(Φ⁻¹(1 − α) − μ_GDP);
* T = 1: f(α) = (1 − q)(1 − α) + q·Φ(−Φ⁻¹(α) − 1/σ) (exact mixture).

Side curves for the plot (:func:`gdp_curve`, :func:`rdp_curve`): the GDP(μ)
curve — exact for q = 1, Bu et al.'s central-limit μ = q√(T(e^{1/σ²} − 1))
for q < 1 (an *approximation*, not a bound) — and the RDP-derived curve
1 − B_RDP(α) (a valid lower bound on f from the RDP → ReRo conversion of
Balle, Cherubin & Hayes 2022, Thm 2).

Departure: riskcal (Kulynych et al.) reads f from ``dp_accounting``'s
pessimistic PLD only, which is one-sided; the bracket here is two-sided and
contains the exact curve (tested against both closed forms).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from .. import _validate as v
from .._deprecated import moved_names, warn_renamed
from ..errors import ReconRiskError
from ..release import Release, gaussian_release
from ..results import Bound
from ..accounting.gaussian import release_gdp_mu
from .baselines import rdp_rero_bound
from .rero_analytic import symmetric_step_power

METHODS = ("auto", "pld", "closed_form")
#: Absolute width target of a whole curve's PLD bracket (a single point — ``reconrisk risk`` —
#: uses the ReRo engine's own default target instead).
CURVE_TOL = 1e-3


@dataclass(frozen=True, init=False)
class TradeOff:
    """Certified bracket on the trade-off curve f(α) at every α given, as two :class:`Bound` s.

    ``beta``: ``beta.lower ≤ f(α) ≤ beta.upper``; ``power``: ``power.lower ≤ 1 − f(α) ≤ power.upper``
    (the same statement, computed so that tiny values keep relative precision; 1 − f(α) is the
    largest true-positive rate of any membership test at false-positive rate α). The ends are
    arrays, one entry per α. ``method`` is ``closed_form`` (exact, lower == upper) or ``pld``.

    Built from the four arrays ``TradeOff(alpha, beta_lower, beta_upper, power_lower, power_upper,
    method, release, details)``; their scalar-style names still read, with a
    :class:`DeprecationWarning` (use ``beta.lower``, ``beta.upper``, ``power.lower``, ``power.upper``).
    """

    alpha: np.ndarray
    beta: Bound
    power: Bound
    method: str
    release: dict
    details: dict

    def __init__(self, alpha, beta_lower, beta_upper, power_lower, power_upper, method: str,
                 release: dict | None = None, details: dict | None = None) -> None:
        details = {} if details is None else details
        formula = str(details.get("formula", ""))
        set_ = object.__setattr__
        set_(self, "alpha", alpha)
        set_(self, "beta", Bound("tradeoff", beta_lower, beta_upper, method=method, formula=formula,
                                 details={"alpha": alpha}))
        set_(self, "power", Bound("membership_tpr", power_lower, power_upper, method=method, formula=formula,
                                  details={"alpha": alpha}))
        set_(self, "method", method)
        set_(self, "release", {} if release is None else release)
        set_(self, "details", details)

    @property
    def width(self) -> np.ndarray:
        return self.beta.upper - self.beta.lower

    # the scalar-style names of earlier releases, for one release
    @property
    def beta_lower(self) -> np.ndarray:
        warn_renamed("TradeOff.beta_lower", "TradeOff.beta.lower", "reconrisk")
        return self.beta.lower

    @property
    def beta_upper(self) -> np.ndarray:
        warn_renamed("TradeOff.beta_upper", "TradeOff.beta.upper", "reconrisk")
        return self.beta.upper

    @property
    def power_lower(self) -> np.ndarray:
        warn_renamed("TradeOff.power_lower", "TradeOff.power.lower", "reconrisk")
        return self.power.lower

    @property
    def power_upper(self) -> np.ndarray:
        warn_renamed("TradeOff.power_upper", "TradeOff.power.upper", "reconrisk")
        return self.power.upper

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; the keys of earlier releases (``beta_lower`` … ``power_upper``: the two Bounds' ends)."""
        return {
            "method": self.method,
            "alpha": self.alpha.tolist(),
            "beta_lower": self.beta.lower.tolist(),
            "beta_upper": self.beta.upper.tolist(),
            "power_lower": self.power.lower.tolist(),
            "power_upper": self.power.upper.tolist(),
            "max_width": float(np.max(self.width)) if self.alpha.size else 0.0,
            "release": self.release,
            "details": self.details,
        }


def exact_power(release: Release, alpha: np.ndarray, *, symmetric: bool = False) -> np.ndarray:
    """Exact 1 − f(α) where a closed form exists (all q = 1, or a single step).

    ``symmetric``: the symmetrised curve C = min{f_q, f_q⁻¹}** of a single step (fixed-size batches, pairs;
    :func:`reconrisk._src.measures.rero_analytic.symmetric_step_power`); q = 1 is Gaussian DP either way."""
    segs = release.segments
    if all(s.sample_rate == 1.0 for s in segs):
        return special.ndtr(special.ndtri(alpha) + release_gdp_mu(release))
    if len(segs) == 1 and segs[0].steps == 1:
        s = segs[0]
        if symmetric:
            return symmetric_step_power(s.noise_multiplier, s.sample_rate, alpha)[0]
        return (1 - s.sample_rate) * alpha + s.sample_rate * special.ndtr(special.ndtri(alpha) + 1.0 / s.noise_multiplier)
    raise ReconRiskError(
        "method 'closed_form' needs sample_rate == 1 (full batch) or steps == 1; "
        f"found sample_rate={[s.sample_rate for s in segs]}, steps={release.steps}"
    )


def exact_beta(release: Release, alpha: np.ndarray, *, symmetric: bool = False) -> np.ndarray:
    """Exact f(α) where a closed form exists, without cancellation (ndtr of the negated argument)."""
    segs = release.segments
    if all(s.sample_rate == 1.0 for s in segs):
        return special.ndtr(-special.ndtri(alpha) - release_gdp_mu(release))
    if len(segs) == 1 and segs[0].steps == 1:
        s = segs[0]
        if symmetric:
            return symmetric_step_power(s.noise_multiplier, s.sample_rate, alpha)[1]
        q = s.sample_rate
        return (1 - q) * (1 - alpha) + q * special.ndtr(-special.ndtri(alpha) - 1.0 / s.noise_multiplier)
    return 1.0 - exact_power(release, alpha)  # raises the error above


def _alphas(alphas) -> np.ndarray:
    arr, _ = v.kappa_array("alphas", alphas)
    return arr


def _formula(release: Release, symmetric: bool = False) -> str:
    if all(s.sample_rate == 1.0 for s in release.segments):
        return "f(a) = Phi(Phi^-1(1-a) - mu), mu = sqrt(sum T_i/sigma_i^2) (Gaussian DP)"
    if symmetric:
        return ("C(a) = min{f, f^-1}**(a), f(a) = (1-q)(1-a) + q Phi(-Phi^-1(a) - 1/sigma) (one step without "
                "replacement, replace-one; Dong, Roth & Su 2022, Thm 4.2)")
    return "f(a) = (1-q)(1-a) + q Phi(-Phi^-1(a) - 1/sigma) (one subsampled Gaussian step)"


def clt_mu(release: Release) -> float:
    """GDP μ of the release: exact for q = 1; Bu et al.'s CLT μ = √(Σ q_i² T_i (e^{1/σ_i²} − 1)) otherwise."""
    if all(s.sample_rate == 1.0 for s in release.segments):
        return release_gdp_mu(release)
    tot = 0.0
    for s in release.segments:
        tot += s.sample_rate**2 * s.steps * math.expm1(min(1.0 / s.noise_multiplier**2, 700.0))
    return math.sqrt(tot)


def gdp_curve(release: Release, alphas) -> tuple[np.ndarray, float, bool]:
    """f(α) of μ-GDP with μ = :func:`clt_mu`; returns (β, μ, exact) — exact only when every q = 1."""
    a = _alphas(alphas)
    mu = clt_mu(release)
    return special.ndtr(-special.ndtri(a) - mu), mu, all(s.sample_rate == 1.0 for s in release.segments)


def rdp_curve(release: Release, alphas) -> np.ndarray:
    """1 − B_RDP(α): the trade-off lower bound implied by the RDP baseline (Balle, Cherubin & Hayes 2022, Thm 2)."""
    a = _alphas(alphas)
    return 1.0 - rdp_rero_bound(release.segments, a)


#: The curve of a release is asked of its analysis (:func:`reconrisk._src.analysis.privacy_rero.tradeoff`); the old
#: name still reads, with a :class:`DeprecationWarning`.
__getattr__ = moved_names(__name__, __package__, {"tradeoff": "..analysis.privacy_rero"})
