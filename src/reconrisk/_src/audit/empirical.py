"""Empirical lower bounds from an audit: what s successes in n reconstruction trials refute.

An audit plays the reconstruction game of Hayes, Mahloujifar & Balle 2023
(Def. 1: a target drawn from a prior whose blind-guess baseline is κ) n times
and counts s successes. The certified bound says ReRo(κ) ≤ γ for *every*
attack; the audit shows ReRo(κ) ≥ the success probability p of *its* attack.
From s ~ Binomial(n, p) the one-sided Clopper–Pearson lower end

    p_lo = I⁻¹_{α}(s, n − s + 1)    (0 when s = 0),   α = 1 − confidence,

satisfies P[p_lo > p] ≤ α, so with that confidence every mechanism whose
ReRo(κ) < p_lo is refuted (:func:`rero_lower_bound`).

**ε at each δ.** An (ε, δ)-DP mechanism is f_{ε,δ}-DP with the trade-off curve
f_{ε,δ}(α) = max(0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)) (Kairouz, Oh &
Viswanath 2015; Dong, Roth & Su 2022, Prop. 2.5), and the reconstruction
success of any attack is at most the blow-up 1 − f(κ) (Hayes et al. 2023,
Thm 2: the Neyman–Pearson argument with the prior's baseline κ):

    ReRo(κ) ≤ c_ε(κ) = min(1, κ e^ε + δ, 1 − e^{−ε}(1 − δ − κ)).

c_ε is increasing in ε, so p_lo refutes exactly the ε with c_ε(κ) < p_lo, and
the supremum of the refuted ε is the *smallest ε consistent with p_lo*:
c_ε ≥ p_lo needs *both* branches ≥ p_lo, so

    ε_lo = max(0, log((p_lo − δ)/κ), log((1 − δ − κ)/(1 − p_lo))).

(The larger of the two branch solutions, not the smaller: the min of two
increasing curves reaches p_lo when the later of them does.) For p_lo ≤ 1 − κ
the first branch decides, near 1 the second: with every one of n trials a
success, 1 − p_lo = 1 − α^{1/n} ≈ −log(α)/n, so the largest ε an audit of n
trials at κ can ever show is ≈ log((1 − κ) n / 3) at 95 % — 5.70 for n = 1,000,
κ = 0.1 (:func:`max_epsilon_lower`). One reconstruction audit at one κ cannot
prove ε = 32; it shows how close each ε gets.

**μ of Gaussian DP.** A μ-GDP mechanism has ReRo(κ) ≤ Φ(Φ⁻¹(κ) + μ) (Hayes et
al. 2023, Cor. 4 at q = 1), so p_lo refutes every μ < Φ⁻¹(p_lo) − Φ⁻¹(κ).

Everything is computed in log space from the regularised incomplete beta
function; 1 − p_lo comes from the complementary quantile (accurate when p_lo
is within 1e-16 of 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from .. import _validate as v
from .._deprecated import renamed_kwargs, warn_renamed
from ..errors import ReconRiskError
from ..results import Bound

CITE_HAYES = "Hayes, Mahloujifar & Balle 2023"
RERO_FORMULA = (f"one-sided Clopper-Pearson lower end of successes/trials: every mechanism with ReRo(kappa) "
                f"below it is refuted ({CITE_HAYES}, Def. 1)")
EPS_FORMULA = (f"smallest eps with min(kappa e^eps + delta, 1 - e^-eps (1 - delta - kappa)) >= rero_lower: "
               f"(eps, delta)-DP caps ReRo(kappa) by the blow-up 1 - f_eps,delta(kappa) ({CITE_HAYES}, Thm 2; "
               "Dong, Roth & Su 2022, Prop. 2.5)")
DELTA_GRID = (0.0, 1e-8, 1e-6, 1e-5, 1e-3)
MU_FORMULA = f"mu_lo = Phi^-1(rero_lower) - Phi^-1(kappa): mu-GDP caps ReRo(kappa) by Phi(Phi^-1(kappa) + mu) ({CITE_HAYES}, Cor. 4)"


def _check(successes, trials, confidence):
    n = v.integer("trials", trials, minimum=1)
    s = v.integer("successes", successes, minimum=0, maximum=n)
    c = v.probability_open("confidence", confidence)
    return s, n, c


def clopper_pearson_lower(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """(p_lo, 1 − p_lo): the one-sided Clopper–Pearson lower confidence bound at ``confidence``.

    P[p_lo > p] ≤ 1 − confidence for s ~ Binomial(n, p). 1 − p_lo is returned
    from the complementary beta quantile so that it keeps its digits near 1.
    """
    s, n, c = _check(successes, trials, confidence)
    alpha = 1.0 - c
    if s == 0:
        return 0.0, 1.0
    lo = float(special.betaincinv(s, n - s + 1, alpha))
    one_minus = float(special.betaincinv(n - s + 1, s, 1.0 - alpha))  # 1 − I⁻¹_α(a, b) = I⁻¹_{1−α}(b, a)
    return lo, one_minus


def dp_rero_ceiling(epsilon, kappa: float, delta: float = 0.0) -> np.ndarray:
    """c_ε(κ) = min(1, κe^ε + δ, 1 − e^{−ε}(1 − δ − κ)): the ReRo cap of (ε, δ)-DP (1 − f_{ε,δ}(κ)).

    Vectorised over ``epsilon``. Tighter than min(1, κe^ε + δ) (Balle, Cherubin &
    Hayes 2022, Cor. 3) by the second branch of the (ε, δ) trade-off curve.
    """
    e = np.asarray(epsilon, dtype=float)
    if np.any(~(e >= 0)):
        raise ReconRiskError(f"epsilon must be >= 0; found {epsilon}")
    k = v.in_range("kappa", kappa, 0.0, 1.0)
    d = v.in_range("delta", delta, 0.0, 1.0, low_open=False)
    with np.errstate(over="ignore"):
        b1 = np.exp(np.minimum(e + math.log(k), 0.0)) + d
        b2 = 1.0 - np.exp(-e) * max(1.0 - d - k, 0.0)
    out = np.minimum(1.0, np.minimum(b1, b2))
    return float(out) if out.ndim == 0 else out


def epsilon_from_rero_lower(rero_lower: float, kappa: float, delta, *, one_minus: float | None = None):
    """ε_lo(δ) = max(0, log((p_lo − δ)/κ), log((1 − δ − κ)/(1 − p_lo))), vectorised over ``delta``.

    ``one_minus`` is 1 − p_lo when known more accurately than ``1 - rero_lower``.
    Returns ``inf`` when p_lo = 1 (no finite ε is consistent with certain reconstruction when δ < 1 − κ).
    """
    p = v.in_range("rero_lower", rero_lower, 0.0, 1.0, low_open=False, high_open=False)
    k = v.in_range("kappa", kappa, 0.0, 1.0)
    d = np.asarray(delta, dtype=float)
    if np.any(~((d >= 0) & (d < 1))):
        raise ReconRiskError(f"delta must be in [0, 1); found {delta}")
    om = (1.0 - p) if one_minus is None else float(one_minus)
    with np.errstate(divide="ignore", invalid="ignore"):
        b1 = np.where(p > d, np.log(np.maximum(p - d, 1e-300)) - math.log(k), -np.inf)
        rest = 1.0 - d - k
        b2 = np.where(rest > 0, np.log(np.maximum(rest, 1e-300)) - (math.log(om) if om > 0 else -np.inf), -np.inf)
    out = np.maximum(0.0, np.maximum(b1, b2))
    return float(out) if out.ndim == 0 else out


def gdp_mu_from_rero_lower(rero_lower: float, kappa: float) -> float:
    """μ_lo = max(0, Φ⁻¹(p_lo) − Φ⁻¹(κ)): every μ-GDP mechanism with smaller μ is refuted."""
    p = v.in_range("rero_lower", rero_lower, 0.0, 1.0, low_open=False, high_open=False)
    k = v.in_range("kappa", kappa, 0.0, 1.0)
    if p <= 0.0:
        return 0.0
    return float(max(0.0, special.ndtri(p) - special.ndtri(k)))


def rero_lower_bound(successes: int, trials: int, *, kappa: float, confidence: float = 0.95) -> Bound:
    """The empirical ReRo lower bound: ``Bound(quantity="reconstruction", lower=p_lo, upper=None)``."""
    s, n, c = _check(successes, trials, confidence)
    k = v.in_range("kappa", kappa, 0.0, 1.0)
    lo, _ = clopper_pearson_lower(s, n, c)
    return Bound("reconstruction", lo, None, estimate=s / n, confidence=c, method="clopper_pearson",
                 formula=RERO_FORMULA,
                 details={"kappa": k, "successes": s, "trials": n, "one_sided": True,
                          "above_baseline": bool(lo > k)})


def epsilon_lower_bound(successes: int, trials: int, *, kappa: float, delta: float, confidence: float = 0.95,
                        certified_epsilon: float | None = None) -> Bound:
    """``Bound(quantity="epsilon", lower=ε_lo(δ), upper=None)`` from s successes in n trials at κ.

    ``details`` carries ``max_possible`` (ε_lo had every trial succeeded: the
    most n trials at this κ can show), the GDP ``gdp_mu_lower``, and, given the
    release's certified ε, the ratio ε_lo/ε.
    """
    s, n, c = _check(successes, trials, confidence)
    k = v.in_range("kappa", kappa, 0.0, 1.0)
    d = v.in_range("delta", delta, 0.0, 1.0, low_open=False)
    lo, om = clopper_pearson_lower(s, n, c)
    eps = epsilon_from_rero_lower(lo, k, d, one_minus=om)
    details = {"delta": d, "kappa": k, "rero_lower": lo, "rero_one_minus": om, "successes": s, "trials": n,
               "one_sided": True,
               "max_possible": max_epsilon_lower(n, kappa=k, delta=d, confidence=c),
               "gdp_mu_lower": gdp_mu_from_rero_lower(lo, k)}
    if certified_epsilon is not None:
        ce = v.positive("certified_epsilon", certified_epsilon, allow_inf=True)
        details["certified_epsilon"] = ce
        details["ratio_to_certified"] = eps / ce
    return Bound("epsilon", eps, None, confidence=c, method="clopper_pearson", formula=EPS_FORMULA,
                 details=details)


def max_epsilon_lower(trials: int, *, kappa: float, delta: float = 0.0, confidence: float = 0.95) -> float:
    """The largest ε lower bound n trials at κ can give: every trial a success (≈ log((1−κ)n/3) at 95 %)."""
    n = v.integer("trials", trials, minimum=1)
    lo, om = clopper_pearson_lower(n, n, confidence)
    return epsilon_from_rero_lower(lo, kappa, delta, one_minus=om)


@dataclass(frozen=True)
class EmpiricalAudit:
    """The two-sided answer of one audit setting: the empirical lower ends beside the certified upper ones.

    ``rero`` and ``epsilon`` are the audit's lower ends (Clopper–Pearson, at level ``confidence``);
    ``certified_rero`` is the release's certified ReRo :class:`~reconrisk._src.results.Bound` at the same κ (its
    ``upper`` end is what the audit is held against), None when not given. ``certified_rero_upper``, the
    scalar name of earlier releases, still reads (deprecated); :meth:`to_dict` keeps it as a key.
    """

    rero: Bound
    epsilon: Bound
    certified_rero: Bound | None = None

    @property
    def certified_rero_upper(self) -> float | None:
        warn_renamed("EmpiricalAudit.certified_rero_upper", "EmpiricalAudit.certified_rero.upper", "reconrisk")
        return self._certified_upper

    @property
    def _certified_upper(self) -> float | None:
        return None if self.certified_rero is None else self.certified_rero.upper

    @property
    def rero_ratio(self) -> float | None:
        """p_lo / certified ReRo upper bound (1 = the audit meets the certificate)."""
        u = self._certified_upper
        return None if u is None or u <= 0 else self.rero.lower / u

    @property
    def consistent(self) -> bool:
        """False when p_lo exceeds the certified upper bound: a bug in one of the two, or a 1 − confidence event."""
        u = self._certified_upper
        return u is None or self.rero.lower <= u

    def epsilon_by_delta(self, deltas=DELTA_GRID) -> dict[str, float]:
        """ε_lo at each δ of ``deltas`` (and the setting's δ): the trade-off the same successes refute."""
        ds = sorted(set(float(d) for d in deltas) | {float(self.epsilon.details["delta"])})
        eps = epsilon_from_rero_lower(self.rero.lower, self.rero.details["kappa"], np.array(ds),
                                      one_minus=self.epsilon.details.get("rero_one_minus"))
        return {f"{d:g}": float(e) for d, e in zip(ds, np.atleast_1d(eps))}

    def to_dict(self) -> dict:
        return {"rero": self.rero.to_dict(), "epsilon": self.epsilon.to_dict(),
                "epsilon_by_delta": self.epsilon_by_delta(),
                "certified_rero_upper": self._certified_upper, "rero_ratio": self.rero_ratio,
                "consistent": self.consistent}


@renamed_kwargs(certified_rero_upper="certified_rero")
def empirical_audit(successes: int, trials: int, *, kappa: float, delta: float, confidence: float = 0.95,
                    certified_rero: Bound | float | None = None,
                    certified_epsilon: float | None = None) -> EmpiricalAudit:
    """Both lower bounds of one audit (ReRo at κ, ε at δ) and their ratios to the release's certified ones.

    ``certified_rero``: the release's certified ReRo at κ, a :class:`~reconrisk._src.results.Bound` (or its upper end
    alone, a number in [0, 1]; ``certified_rero_upper=`` is the earlier, deprecated spelling)."""
    rero = rero_lower_bound(successes, trials, kappa=kappa, confidence=confidence)
    eps = epsilon_lower_bound(successes, trials, kappa=kappa, delta=delta, confidence=confidence,
                              certified_epsilon=certified_epsilon)
    cert = certified_rero
    if cert is not None and not isinstance(cert, Bound):
        u = v.in_range("certified_rero", cert, 0.0, 1.0, low_open=False, high_open=False)
        cert = Bound("reconstruction", None, u, method="certificate", details={"kappa": float(kappa)})
    elif cert is not None and cert.upper is not None:
        v.in_range("certified_rero.upper", cert.upper, 0.0, 1.0, low_open=False, high_open=False)
    return EmpiricalAudit(rero, eps, cert)
