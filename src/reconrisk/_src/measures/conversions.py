"""Conversions from DP guarantees to ReRo bounds (Balle, Cherubin & Hayes 2022, Thm 2, Cor. 3–4; Hayes et al. 2023, Eq. 2).

The functions of this module's first half are the papers' conversions — the
*baselines* that Hayes, Mahloujifar & Balle 2023 improve on, and what the
papers' tables reproduce with; they are valid upper bounds on the
reconstruction success γ, never estimates. The tightest conversions of a
guarantee alone live in :mod:`reconrisk._src.measures.fdp` ((ε, δ): both branches of
the trade-off curve) and :mod:`reconrisk._src.measures.rdp_tradeoff` (RDP and zCDP:
the optimal binary reduction); :func:`rero_from_guarantee` uses them by default
and the papers' ones with ``conversion="balle2022"``.

* (α, ε)-RDP ⇒ γ = (κ e^ε)^{(α−1)/α} (Balle, Cherubin, Hayes 2022, Thm 2);
  with an RDP curve, minimise over α and cap at 1.
* ε-DP ⇒ γ = κ e^ε (Cor. 3). (ε, δ)-DP ⇒ γ = κ e^ε + δ: the event
  "reconstruction succeeds" has P_μ ≤ e^ε P_ν + δ and P_ν ≤ κ. The
  baseline printed by ``reconrisk bound`` is this, named ``dp`` with its
  formula; dropping δ (as before) is not a bound (at σ = 3, q = 1, T = 1,
  κ = 1e-9 it gave 3.6e-9 against the exact 7.4e-9).
* ρ-zCDP ⇒ γ = exp(−(√log(1/κ) − √ρ)²) when ρ < log(1/κ), else 1 (Cor. 4).

The RDP curves themselves come from :mod:`reconrisk._src.accounting.rdp`.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validate as v
from .._deprecated import renamed_kwargs
from ..errors import ReconRiskError
from ..results import Bound
from .baselines import rdp_rero_bound, rero_from_dp, rero_from_rdp, rero_from_zcdp  # noqa: F401  (re-exported)
from .fdp import rero_dp
from .rdp_tradeoff import rero_rdp_curve, rero_zcdp


# ----------------------------------------------------------------------------------------
# validated single conversions (Balle, Cherubin & Hayes 2022, §VII; spec_002 §5.4–5.7) and the ReRo → DP converse
# ----------------------------------------------------------------------------------------
#: Sources accepted by :func:`rero_from_guarantee` (and ``reconrisk convert --from``).
SOURCES = ("rdp", "dp", "zcdp")


def _kappa(kappa) -> float:
    return v.probability_open("kappa", kappa)


def _log_kappa(kappa, log_kappa) -> float:
    """log κ from exactly one of κ ∈ (0, 1) or log κ < 0 (continuous priors underflow: e^{-543} for MNIST)."""
    if (kappa is None) == (log_kappa is None):
        raise ReconRiskError(f"give exactly one of kappa (in (0, 1)) or log_kappa (< 0); found kappa={kappa}, log_kappa={log_kappa}")
    if kappa is not None:
        return math.log(_kappa(kappa))
    lk = v.real("log_kappa", log_kappa)
    if not lk < 0 or math.isinf(lk):
        _raise_range("log_kappa", log_kappa, "< 0 and finite")
    return lk


def rero_from_rdp_order(kappa: float | None, epsilon: float, order: float, *, log_kappa: float | None = None) -> float:
    """γ = min(1, (κ e^ε)^{(α−1)/α}) for one (α, ε)-RDP guarantee (Balle, Cherubin & Hayes 2022, Thm 2).

    Evaluated as ``exp((α−1)/α · (log κ + ε))``: no overflow for large ε or tiny κ
    (pass ``log_kappa`` instead of ``kappa`` when κ underflows).
    """
    lk = _log_kappa(kappa, log_kappa)
    e = v.real("epsilon", epsilon)
    if e < 0 or math.isinf(e):
        _raise_range("epsilon", epsilon, ">= 0 and finite")
    a = v.real("order", order)
    if not a > 1 or math.isinf(a):
        _raise_range("order", order, "> 1 and finite")
    return math.exp(min(0.0, (a - 1) / a * (lk + e)))  # min(1, e^x) = e^min(0, x): no overflow at large ε


def zcdp_optimal_order(kappa: float, rho: float) -> float:
    """α* = √(log(1/κ)/ρ), the order minimising Thm 2 along the zCDP curve ε(α) = ρα (Balle, Cherubin & Hayes 2022, Cor. 4).

    Cor. 4 applies when α* > 1, i.e. ρ < log(1/κ); otherwise the bound is vacuous (γ = 1).
    """
    k = _kappa(kappa)
    r = v.positive("rho", rho)
    return math.sqrt(-math.log(k) / r)


@renamed_kwargs(gamma="rero")
def dp_from_two_point_rero(kappa: float, rero: float) -> tuple[float, float]:
    """(ε, δ)-DP implied by (η, γ)-ReRo (``rero`` = γ) against every two-point prior of weight κ (Balle, Cherubin & Hayes 2022, Thm 5).

    The prior puts κ ∈ [1/2, 1) on z and 1 − κ on z′ (with ℓ(z, z′) > η). The
    attack "output z′ if θ ∈ E, else z" succeeds with probability
    ``κ P[M(D⁻∪z) ∉ E] + (1−κ) P[M(D⁻∪z′) ∈ E] ≤ γ``, which rearranges to
    ``P[M(D⁻∪z′) ∈ E] ≤ (κ/(1−κ)) P[M(D⁻∪z) ∈ E] + (γ−κ)/(1−κ)``:

        ε = log(κ/(1−κ)),     δ = (γ − κ)/(1 − κ).

    γ must lie in [κ, 1] (κ is always achievable by guessing z). The
    parametrisation of the prior is spec_002's reconstruction [inferred];
    the printed statement lost its formulas.
    """
    k = v.in_range("kappa", kappa, 0.5, 1.0, low_open=False)
    g = v.in_range("rero", rero, 0.0, 1.0, high_open=False)
    if g < k:
        _raise_range("rero", rero, f"in [kappa, 1] = [{k:g}, 1] (the blind guess already succeeds with probability kappa)")
    return math.log(k) - math.log1p(-k), (g - k) / (1 - k)


def _raise_range(name: str, value, expected: str):
    raise ReconRiskError(f"{name} must be {expected}; found {value}")


#: How a guarantee is converted: the tightest known (default) or the papers' (their tables reproduce with it).
CONVERSIONS = ("optimal", "balle2022")

_BALLE = {
    "rdp": "min(1, (kappa * e^epsilon)^((order - 1)/order)), min over the given orders (Balle, Cherubin & Hayes 2022, Thm 2)",
    "dp": "min(1, kappa * e^epsilon + delta) (Balle, Cherubin & Hayes 2022, Cor. 3; + delta for (epsilon, delta))",
    "zcdp": "exp(-(sqrt(log(1/kappa)) - sqrt(rho))^2) if rho < log(1/kappa) else 1 (Balle, Cherubin & Hayes 2022, Cor. 4)",
}


def _curve_args(epsilon, order) -> tuple[list, list]:
    eps_list = list(np.atleast_1d(epsilon)) if not isinstance(epsilon, str) else [epsilon]
    if order is None:
        raise ReconRiskError("rdp needs order (the Renyi order alpha >= 1 at which epsilon holds; 1 is the KL)")
    ord_list = list(np.atleast_1d(order)) if not isinstance(order, str) else [order]
    if len(eps_list) != len(ord_list):
        raise ReconRiskError(f"rdp needs one order per epsilon; found {len(ord_list)} orders and {len(eps_list)} epsilons")
    return eps_list, ord_list


def rero_from_guarantee(source: str, kappa: float | None = None, *, log_kappa: float | None = None, epsilon=None, order=None,
                        rho=None, delta=None, conversion: str = "optimal", symmetric: bool = True) -> Bound:
    """One DP guarantee → the ReRo upper bound γ as a :class:`~reconrisk._src.results.Bound` (``method`` says which conversion).

    ``conversion="optimal"`` (default) is the tightest conversion of the guarantee alone:

    * ``"dp"``: ``epsilon`` (and ``delta``, default 0; sequences of equal length
      give a privacy profile): 1 − f_{ε,δ}(κ), both branches of the (ε, δ)
      trade-off curve (:func:`reconrisk._src.measures.fdp.rero_dp`, method ``dp_tradeoff``);
    * ``"rdp"``: ``epsilon`` and ``order`` (numbers, or equal-length sequences
      of points of a curve; order 1 is the KL, ``inf`` pure DP): the binary
      reduction of Riess et al. 2026 (:func:`reconrisk._src.measures.rdp_tradeoff.rero_rdp_curve`,
      method ``rdp_optimal``); ``symmetric=False`` for a curve known for one direction only;
    * ``"zcdp"``: ``rho``: the same over every order a ≥ 1 with ε(a) = ρa (``zcdp_optimal``).

    ``conversion="balle2022"`` gives Balle, Cherubin & Hayes 2022's Thm 2, Cor. 3 (+ δ) and Cor. 4
    (methods ``rdp_balle2022``, ``dp_balle2022``, ``zcdp_balle2022``; never tighter). The detail
    ``order`` is the order used (the binding one; Cor. 4's α*, None when α* ≤ 1).

    Give κ as ``kappa`` or, for continuous priors whose κ underflows, ``log_kappa``.
    """

    source = v.choice("source", source, SOURCES)
    conversion = v.choice("conversion", conversion, CONVERSIONS)
    lk = _log_kappa(kappa, log_kappa)
    base = {"source": source, "kappa": _kappa(kappa) if kappa is not None else math.exp(lk), "log_kappa": lk}
    if source == "zcdp":
        if rho is None or epsilon is not None or order is not None or delta is not None:
            raise ReconRiskError("zcdp takes rho only (not epsilon, order or delta)")
        r = v.positive("rho", rho)
        if conversion == "optimal":
            b = rero_zcdp(None, r, log_kappa=lk, symmetric=symmetric)
            return Bound(b.quantity, None, b.upper, method=b.method, formula=b.formula, details={**b.details, **base})
        a_star = math.sqrt(-lk / r)
        gap = max(0.0, math.sqrt(-lk) - math.sqrt(r))
        return Bound("reconstruction", None, math.exp(-gap * gap), method="zcdp_balle2022", formula=_BALLE["zcdp"],
                     details={**base, "rho": r, "order": a_star if a_star > 1 else None})
    if rho is not None:
        raise ReconRiskError(f"{source} takes epsilon, not rho")
    if epsilon is None:
        raise ReconRiskError(f"{source} needs epsilon (>= 0)")
    if source == "dp":
        if order is not None:
            raise ReconRiskError("dp takes epsilon (and delta); order belongs to rdp")
        d = 0.0 if delta is None else delta
        if conversion == "optimal":
            b = rero_dp(None, epsilon, d, log_kappa=lk)
            return Bound(b.quantity, None, b.upper, method=b.method, formula=b.formula, details={**b.details, **base})
        eps_l = np.atleast_1d(epsilon)
        del_l = np.atleast_1d(d)
        if del_l.size == 1:
            del_l = np.repeat(del_l, eps_l.size)
        if del_l.size != eps_l.size:
            raise ReconRiskError(f"give one delta, or one per epsilon; found {eps_l.size} epsilons and {del_l.size} deltas")
        vals = []
        for e_, d_ in zip(eps_l, del_l):
            e = v.real("epsilon", e_)
            if e < 0:
                _raise_range("epsilon", e_, ">= 0 and finite")
            dd = v.in_range("delta", d_, 0.0, 1.0, low_open=False, high_open=False)
            vals.append(min(1.0, math.exp(min(0.0, lk + e)) + dd))
        return Bound("reconstruction", None, min(vals), method="dp_balle2022", formula=_BALLE["dp"],
                     details={**base, "epsilon": float(eps_l[0]) if eps_l.size == 1 else [float(x) for x in eps_l],
                              "delta": float(del_l[0]) if del_l.size == 1 else [float(x) for x in del_l]})
    if delta is not None:
        raise ReconRiskError("delta belongs to dp (an RDP curve has no delta)")
    eps_list, ord_list = _curve_args(epsilon, order)
    if conversion == "optimal":
        b = rero_rdp_curve(None, ord_list, eps_list, log_kappa=lk, symmetric=symmetric)
        return Bound(b.quantity, None, b.upper, method=b.method, formula=b.formula, details={**b.details, **base})
    gammas = [rero_from_rdp_order(None, e, a, log_kappa=lk) for e, a in zip(eps_list, ord_list)]
    best = int(np.argmin(gammas))
    det = {**base, "epsilon": float(eps_list[best]), "order": float(ord_list[best])}
    if len(gammas) > 1:
        det["points"] = len(gammas)
    return Bound("reconstruction", None, gammas[best], method="rdp_balle2022", formula=_BALLE["rdp"], details=det)
