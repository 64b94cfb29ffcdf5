"""ReRo of the von Mises–Fisher mechanism from its RDP curve (Biswas et al. 2024 accounting; optimal conversion).

VMF noise has no privacy-loss distribution in reconrisk, only an RDP curve
(:mod:`reconrisk._src.accounting.vmf`): Biswas et al. 2024, Prop. 1 per mechanism
(antipodal centres, the worst case; the KL τ₁ = 2κ A_p(κ) at order 1), Zhu–Wang's
Poisson-subsampled RDP at integer orders 2…``max_order`` with τ^s₁ = γ τ₁ (joint
convexity), composed ``compositions`` times by addition. That curve is what the
paper's approach 2 converts to (ε, δ); here it is converted to a ReRo bound at
baseline κ by the optimal RDP → trade-off conversion
(:mod:`reconrisk._src.measures.rdp_tradeoff`, Riess et al. 2026), or — ``conversion =
"balle2022"`` — by Balle, Cherubin & Hayes 2022, Thm 2 over the same orders.

Without subsampling (γ = 1) Prop. 1 holds at every real order, so the grid
reaches 1 + 1e-6 and the best order is refined over real orders. With γ < 1 only
the KL and the integer orders are used (the sound CGF interpolation between
integers never tightens the bound). The VMF divergence between antipodal
centres is symmetric, and the subsampled curve is used as the mechanism's RDP
(every ordered pair of neighbours), as approach 2's (ε, δ) conversion uses it.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validate as v
from ..accounting.vmf import _concentration, _dim, vmf_rdp, zhu_wang_rdp
from ..errors import ReconRiskError
from ..results import Bound
from .rdp_tradeoff import RDP_FORMULA, _expit, _log_kappas, _solve, balle2022_power

__all__ = ["vmf_rdp_curve", "rero_vmf", "CONVERSIONS"]

CONVERSIONS = ("optimal", "balle2022")
_FULL_ORDERS = np.unique(np.concatenate([[1.0, 1.0 + 1e-6, 1.0 + 1e-4, 1.0 + 1e-2, 1.1, 1.25, 1.5, 1.75],
                                         np.arange(2.0, 65.0), np.round(np.geomspace(64, 4096, 20))]))


def vmf_rdp_curve(concentration, dim, sample_rate, compositions, *, max_order: int = 256):
    """(orders, ε) of ``compositions`` Poisson-subsampled VMF mechanisms, and ε(a) at real a when γ = 1 (else None)."""
    c = _concentration(concentration)
    p = _dim(dim)
    g = v.sample_rate("sample_rate", sample_rate)
    n = v.steps("compositions", compositions)
    m = v.integer("max_order", max_order, minimum=2, maximum=4096)
    if g == 1.0:
        orders = _FULL_ORDERS[_FULL_ORDERS <= max(m, 2)]
        return orders, n * np.asarray(vmf_rdp(orders, c, p), dtype=float), (lambda a: n * float(vmf_rdp(a, c, p)))
    ints = np.arange(2.0, m + 1.0)
    tau = zhu_wang_rdp(np.asarray(vmf_rdp(ints, c, p), dtype=float), g)
    tau1 = g * float(vmf_rdp(1.0, c, p))
    return np.concatenate([[1.0], ints]), n * np.concatenate([[tau1], tau]), None


def rero_vmf(kappa, concentration, dim, sample_rate, compositions, *, log_kappa=None, conversion: str = "optimal",
             max_order: int = 256) -> Bound:
    """ReRo upper bound at baseline κ of a composed, subsampled VMF release (``kappa`` is the prior's κ; None with
    ``log_kappa``)."""
    conversion = v.choice("conversion", conversion, CONVERSIONS)
    lk, _ = _log_kappas(kappa, log_kappa)
    if lk.size != 1:
        raise ReconRiskError(f"kappa must be one number; found {lk.size}")
    orders, eps, eps_of = vmf_rdp_curve(concentration, dim, sample_rate, compositions, max_order=max_order)
    old = float(balle2022_power(lk, orders, eps)[0])
    details = {"kappa": float(kappa) if kappa is not None else math.exp(lk[0]), "log_kappa": float(lk[0]),
               "concentration": float(concentration), "dim": int(dim), "sample_rate": float(sample_rate),
               "compositions": int(compositions), "mechanism": "vmf",
               "rdp": "Biswas et al. 2024, Prop. 1; Zhu-Wang subsampling when sample_rate < 1"}
    if conversion == "balle2022":
        use = orders > 1
        k = int(np.argmin((orders[use] - 1) / orders[use] * (lk[0] + eps[use])))
        details["order"] = float(orders[use][k])
        return Bound("reconstruction", None, old, method="rdp_balle2022",
                     formula="min over orders a of (kappa*e^eps(a))^((a-1)/a) (Balle, Cherubin & Hayes 2022, Thm 2)",
                     details=details)
    t, a = _solve(lk, orders, eps, True, eps_of=eps_of)
    details.update(order=float(a[0]), balle2022_upper=old)
    return Bound("reconstruction", None, float(_expit(t)[0]), method="rdp_optimal", formula=RDP_FORMULA,
                 details=details)
