"""The optimal conversion of a Rényi-DP curve (or ρ-zCDP) into a trade-off curve and a ReRo bound.

**Binary reduction** (Riess et al. 2026, arXiv 2602.04562, who prove it optimal; riskcal implements it
for one order). Let M be (a, ε(a))-RDP for every order a of a set A, and E any event of its output —
here "the reconstruction succeeds", with P = M(D⁻∪{z}) and Q = M(D⁻∪{z′}). Post-processing gives
D_a(Bern(P(E)) ‖ Bern(Q(E))) ≤ ε(a), and, the neighbouring relation being symmetric (RDP holds for
every *ordered* pair of neighbours), D_a(Bern(Q(E)) ‖ Bern(P(E))) ≤ ε(a). A reconstruction whose
baseline is Q(E) ≤ κ therefore succeeds with probability at most

    p*(κ) = max{ p ∈ [κ, 1] : D_a(Bern(p)‖Bern(κ)) ≤ ε(a) and D_a(Bern(κ)‖Bern(p)) ≤ ε(a), all a ∈ A },

and f(α) = 1 − p*(α) is the trade-off curve (type-I error α, the convention of
:mod:`reconrisk._src.measures.tradeoff`). f is the maximum of convex trade-off functions, so 1 − f is concave and
the average over a prior is bounded at its mean baseline: ReRo(κ) ≤ p*(κ). Both divergences increase in
p ≥ κ, so each order allows an interval [κ, p_a] and p* = min_a p_a (p_a by bisection on logit p). The
pair (Bern(p*), Bern(κ)) meets every constraint, so no conversion of the same curve is tighter.

Balle, Cherubin & Hayes 2022, Thm 2 drops the second term of the forward divergence and the reverse one:
γ ≤ (κ e^{ε(a)})^{(a−1)/a}, which is ≥ p_a at every order (method ``rdp_balle2022``, kept as the
baseline the papers' tables reproduce with). The reverse constraint is what pure DP's second branch is
(a = ∞: p ≤ 1 − (1 − κ) e^{−ε}, :mod:`reconrisk._src.measures.fdp`).

**Orders.** a = 1 is the KL divergence (the curve's limit at a → 1; the minimum can sit there, e.g. at
q = 1, σ = 5, T = 100, κ = 0.1), a = ∞ pure DP. For a user's curve only the orders given are used. For the
curves reconrisk computes — a DP-SGD release (:func:`release_rdp_power`, the subsampled Gaussian of
:mod:`reconrisk._src.accounting.rdp`, whose curve bounds both directions by Mironov, Talwar & Zhang 2019,
Thm 5) and ρ-zCDP (ε(a) = ρa) — the grid reaches a = 1 + 1e-6 and the KL, and the best order is refined
over real a (bounded Brent on log(a − 1)); any order gives a valid bound, so refinement only tightens.

**One-sided curves.** ``symmetric=False`` imposes the forward constraint D_a(Bern(p)‖Bern(κ)) only (a
curve known for one direction of the pair); it is what the numbers 0.7018 (σ 1, q 0.01, T 1000, κ 0.5)
and 0.9511 (q 1, σ 5, T 100, κ 0.1) are; the symmetric default gives 0.6964 and 0.9238 there.

**Numerics.** Everything is in log space: p = expit(t) and 1 − p = expit(−t) are never formed by
subtraction; D_a = log(w₁e^{(a−1)l₁} + w₂e^{(a−1)l₂})/(a−1) is evaluated as log1p(Σ w·expm1((a−1)l))/(a−1)
when (a−1)|l| ≤ 1 (no cancellation as a → 1) and by logaddexp otherwise. The bisection returns the
infeasible end of its bracket (62 halvings of at most 1,490 in logit), so the bound errs upward.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validate as v
from ..accounting.rdp import release_rdp
from ..release import gaussian_release
from ..errors import ReconRiskError
from ..results import Bound
from .fdp import _log_alphas
from .tradeoff import TradeOff

__all__ = [
    "RDP_FORMULA", "ZCDP_FORMULA", "renyi_bernoulli", "rdp_power", "rero_rdp_curve", "tradeoff_rdp_curve",
    "zcdp_power", "rero_zcdp", "tradeoff_zcdp", "release_rdp_power", "rero_release_rdp", "tradeoff_release_rdp",
    "balle2022_power", "validate_curve",
]

RDP_FORMULA = ("largest p with D_a(Bern(p)||Bern(kappa)) <= eps(a) and D_a(Bern(kappa)||Bern(p)) <= eps(a) "
               "for every order a (optimal RDP -> trade-off conversion, Riess et al. 2026)")
RDP_FORMULA_ONE_SIDED = ("largest p with D_a(Bern(p)||Bern(kappa)) <= eps(a) for every order a (optimal conversion "
                         "of a one-sided RDP curve, Riess et al. 2026)")
ZCDP_FORMULA = ("largest p with D_a(Bern(p)||Bern(kappa)) <= rho*a and D_a(Bern(kappa)||Bern(p)) <= rho*a for every "
                "a >= 1 (rho-zCDP through the optimal RDP -> trade-off conversion, Riess et al. 2026)")
_T_MAX = 745.0  # logit bound: 1 − p = e^{−745} is the smallest positive double's neighbourhood
_ITERS = 62
#: Orders at which a DP-SGD release's curve is evaluated (the KL, near 1, the integers, a tail).
RELEASE_ORDERS = np.unique(np.concatenate([
    [1.0, 1.0 + 1e-6, 1.0 + 1e-4, 1.0 + 1e-2, 1.1, 1.25, 1.5, 1.75], np.arange(2.0, 65.0),
    np.round(np.geomspace(64, 4096, 20)),
]))
#: Extra fractional orders for many baselines at once (no per-κ refinement then).
_CURVE_EXTRA = np.round(np.arange(1.05, 3.0, 0.05), 10)


def renyi_bernoulli(order, lw1, lw2, l1, l2):
    """(1/(a−1)) log(w₁ e^{(a−1)l₁} + w₂ e^{(a−1)l₂}), w = e^{lw}: D_a(Bern(w₁)‖·) with l the log-ratios.

    For D_a(Bern(p)‖Bern(k)): lw = (log p, log(1−p)), l = (log p − log k, log(1−p) − log(1−k)). a = 1
    gives the KL divergence Σ w·l, a = ∞ gives max l (D_∞). Broadcasts.
    """
    a = np.asarray(order, dtype=float)
    u = a - 1.0
    with np.errstate(all="ignore"):
        w1, w2 = np.exp(lw1), np.exp(lw2)
        small = np.log1p(w1 * np.expm1(u * l1) + w2 * np.expm1(u * l2)) / u
        large = np.logaddexp(lw1 + u * l1, lw2 + u * l2) / u
        big = u * np.maximum(np.abs(l1), np.abs(l2)) > 1.0
        out = np.where(big, large, small)
        out = np.where(a == 1.0, w1 * l1 + w2 * l2, out)
        return np.where(np.isinf(a), np.maximum(l1, l2), out)


def _feasible(t, lk, l1k, a, e, symmetric):
    lp, l1p = -np.logaddexp(0.0, -t), -np.logaddexp(0.0, t)
    ok = renyi_bernoulli(a, lp, l1p, lp - lk, l1p - l1k) <= e
    if symmetric:
        ok &= renyi_bernoulli(a, lk, l1k, lk - lp, l1k - l1p) <= e
    return ok


def _max_logit(lk, l1k, a, e, symmetric: bool) -> np.ndarray:
    """logit of p_a, the largest p allowed by order a alone (+inf: p = 1); broadcasts (κ rows × orders)."""
    lk, l1k, a, e = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (lk, l1k, a, e)))
    lo = lk - l1k  # logit κ: p = κ is always allowed (every divergence is 0)
    hi = np.full(lo.shape, _T_MAX)
    top = np.isinf(e) | _feasible(hi, lk, l1k, a, e, symmetric)
    for _ in range(_ITERS):
        mid = 0.5 * (lo + hi)
        ok = _feasible(mid, lk, l1k, a, e, symmetric)
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid)
    return np.where(top, np.inf, hi)


def _refine(lk, l1k, t_best, a_best, grid, eps_of, symmetric):
    """Bounded Brent over real orders between the grid neighbours of the best order (only ever tightens)."""
    from scipy import optimize  # noqa: PLC0415

    if not np.isfinite(t_best) or not np.isfinite(a_best):
        return t_best, a_best
    fin = np.sort(grid[np.isfinite(grid)])
    j = int(np.searchsorted(fin, a_best))
    a_lo = fin[j - 1] if j > 0 else 1.0
    a_hi = fin[j + 1] if j + 1 < fin.size else 4.0 * a_best
    s_lo, s_hi = math.log(max(a_lo - 1.0, 1e-9)), math.log(a_hi - 1.0)

    def f(s):
        a = 1.0 + math.exp(s)
        return float(_max_logit(lk, l1k, a, eps_of(a), symmetric))

    res = optimize.minimize_scalar(f, bounds=(s_lo, s_hi), method="bounded", options={"xatol": 1e-3, "maxiter": 40})
    if np.isfinite(res.fun) and res.fun < t_best:
        return float(res.fun), 1.0 + math.exp(res.x)
    return t_best, a_best


def _solve(log_k: np.ndarray, orders: np.ndarray, eps: np.ndarray, symmetric: bool, eps_of=None):
    """(logit p*, binding order) per baseline; refined over real orders when ``eps_of`` is given (≤ 16 rows)."""
    lk = log_k[:, None]
    l1k = np.log1p(-np.exp(lk))
    t = _max_logit(lk, l1k, orders[None, :], eps[None, :], symmetric)
    j = np.argmin(t, axis=1)
    rows = np.arange(t.shape[0])
    best, order = t[rows, j].copy(), orders[j].copy()
    if eps_of is not None and log_k.size <= 16:
        for r in rows:
            best[r], order[r] = _refine(lk[r, 0], l1k[r, 0], best[r], order[r], orders, eps_of, symmetric)
    return best, order


def _expit(t):
    with np.errstate(over="ignore"):
        return np.where(np.isinf(t), np.where(t > 0, 1.0, 0.0), 1.0 / (1.0 + np.exp(-np.asarray(t, dtype=float))))


def validate_curve(orders, epsilons) -> tuple[np.ndarray, np.ndarray]:
    """An RDP curve as two equal-length arrays: orders ≥ 1 (1 = KL, inf = pure DP) and ε ≥ 0 (inf allowed)."""
    o, _ = v.positive_array("order", orders, allow_inf=True)
    e, _ = v.positive_array("epsilon", epsilons, allow_zero=True, allow_inf=True)
    o, e = np.atleast_1d(o).ravel(), np.atleast_1d(e).ravel()
    if o.size != e.size:
        raise ReconRiskError(f"an RDP curve needs one order per epsilon; found {o.size} orders and {e.size} epsilons")
    if (o < 1).any():
        raise ReconRiskError(f"order must be >= 1 (1 is the KL divergence, inf pure DP); found {o[o < 1][0]}")
    return o, e


def _log_kappas(kappa, log_kappa) -> tuple[np.ndarray, bool]:
    return _log_alphas("kappa", kappa, log_kappa)


def balle2022_power(log_k: np.ndarray, orders, eps) -> np.ndarray:
    """min over the orders a ∈ (1, ∞) of min(1, (κ e^{ε(a)})^{(a−1)/a}) (Balle, Cherubin & Hayes 2022, Thm 2)."""
    o, e = np.asarray(orders, dtype=float), np.asarray(eps, dtype=float)
    use = (o > 1) & np.isfinite(o)
    if not use.any():
        return np.ones(np.asarray(log_k).size)
    with np.errstate(invalid="ignore"):
        x = (o[use] - 1) / o[use] * (np.asarray(log_k, dtype=float)[:, None] + e[use][None, :])
    return np.exp(np.minimum(0.0, np.min(x, axis=1)))


def rdp_power(kappa, orders, epsilons, *, log_kappa=None, symmetric: bool = True):
    """p*(κ) (the ReRo bound) of an RDP curve given as points (order, ε); vectorised in κ. Returns (p*, order)."""
    o, e = validate_curve(orders, epsilons)
    lk, scalar = _log_kappas(kappa, log_kappa)
    t, a = _solve(lk, o, e, bool(symmetric))
    p = _expit(t)
    return (float(p[0]), float(a[0])) if scalar else (p, a)


def _log_expit(t: float) -> float:
    return 0.0 if t == np.inf else float(-np.logaddexp(0.0, -t))


def _bound(method, formula, lk, t, a, kappa, extra) -> Bound:
    """The Bound of p* = expit(t); ``log_upper`` keeps log p* where p* underflows (κ of continuous priors)."""
    d = {"kappa": float(kappa) if kappa is not None else math.exp(lk), "log_kappa": float(lk), "order": float(a),
         "log_upper": _log_expit(float(t))}
    d.update(extra)
    return Bound("reconstruction", None, float(_expit(t)), method=method, formula=formula, details=d)


def rero_rdp_curve(kappa, orders, epsilons, *, log_kappa=None, symmetric: bool = True) -> Bound:
    """ReRo upper bound of an RDP curve (points (order, ε)) by the optimal conversion; ``order`` is the binding one."""
    o, e = validate_curve(orders, epsilons)
    lk, _ = _log_kappas(kappa, log_kappa)
    if lk.size != 1:
        raise ReconRiskError(f"kappa must be one number; found {lk.size}")
    t, a = _solve(lk, o, e, bool(symmetric))
    extra = {"points": int(o.size), "symmetric": bool(symmetric),
             "balle2022_upper": float(balle2022_power(lk, o, e)[0])}
    return _bound("rdp_optimal", RDP_FORMULA if symmetric else RDP_FORMULA_ONE_SIDED, lk[0], t[0], a[0], kappa, extra)


def _tradeoff(a: np.ndarray, t: np.ndarray, method: str, details: dict) -> TradeOff:
    power = _expit(t)
    beta = _expit(-t)  # 1 − p* without cancellation
    return TradeOff(a, beta, np.maximum(1.0 - a, beta), a.copy(), np.maximum(power, a), method, {}, details)


def tradeoff_rdp_curve(alphas, orders, epsilons, *, symmetric: bool = True) -> TradeOff:
    """f(α) = 1 − p*(α) of an RDP curve at every α; a lower bound on f (``beta_upper`` is the trivial 1 − α)."""
    o, e = validate_curve(orders, epsilons)
    a, _ = v.kappa_array("alphas", alphas)
    t, _ = _solve(np.log(a), o, e, bool(symmetric))
    return _tradeoff(a, t, "rdp_optimal", {"formula": RDP_FORMULA if symmetric else RDP_FORMULA_ONE_SIDED,
                                           "points": int(o.size)})


# ------------------------------------------------------------------------------------------- zCDP
def _zcdp_grid(rho: float, log_k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    orders = [1.0], 1.0 + np.logspace(-8, 6, 281)
    grid = np.concatenate(orders)
    stars = np.sqrt(-log_k / rho)  # Balle, Cherubin & Hayes 2022, Cor. 4's order: p* never exceeds Cor. 4
    grid = np.unique(np.concatenate([grid, stars[stars > 1]]))
    return grid, rho * grid


def _rho(rho) -> float:
    return v.positive("rho", rho)


def zcdp_power(kappa, rho, *, log_kappa=None, symmetric: bool = True):
    """p*(κ) of ρ-zCDP (ε(a) = ρa for every a ≥ 1); vectorised in κ (refined per κ up to 16 of them)."""
    r = _rho(rho)
    lk, scalar = _log_kappas(kappa, log_kappa)
    grid, eps = _zcdp_grid(r, lk)
    t, a = _solve(lk, grid, eps, bool(symmetric), eps_of=lambda x: r * x)
    p = _expit(t)
    return (float(p[0]), float(a[0])) if scalar else (p, a)


def rero_zcdp(kappa, rho, *, log_kappa=None, symmetric: bool = True) -> Bound:
    """ReRo upper bound of ρ-zCDP by the optimal conversion over every order a ≥ 1."""
    r = _rho(rho)
    lk, _ = _log_kappas(kappa, log_kappa)
    if lk.size != 1:
        raise ReconRiskError(f"kappa must be one number; found {lk.size}")
    grid, eps = _zcdp_grid(r, lk)
    t, a = _solve(lk, grid, eps, bool(symmetric), eps_of=lambda x: r * x)
    gap = max(0.0, math.sqrt(-lk[0]) - math.sqrt(r))
    extra = {"rho": r, "symmetric": bool(symmetric), "balle2022_upper": math.exp(-gap * gap)}
    return _bound("zcdp_optimal", ZCDP_FORMULA, lk[0], t[0], a[0], kappa, extra)


def tradeoff_zcdp(alphas, rho, *, symmetric: bool = True) -> TradeOff:
    """f(α) of ρ-zCDP by the optimal conversion (a lower bound on the true f)."""
    r = _rho(rho)
    a, _ = v.kappa_array("alphas", alphas)
    grid, eps = _zcdp_grid(r, np.log(a[:1]))
    t, _ = _solve(np.log(a), grid, eps, bool(symmetric), eps_of=lambda x: r * x)
    return _tradeoff(a, t, "zcdp_optimal", {"formula": ZCDP_FORMULA, "rho": r})


# ---------------------------------------------------------------------------- a DP-SGD release
def _segments(release_or_segments):
    if hasattr(release_or_segments, "segments"):  # the dominating release: σ/2 for fixed-size batches
        return tuple(gaussian_release(release_or_segments, "the RDP -> trade-off conversion").segments)
    return tuple(release_or_segments)


def release_rdp_power(release, kappa, *, log_kappa=None, symmetric: bool = True):
    """p*(κ) of a DP-SGD release's own RDP curve (the KL and orders from 1 + 1e-6 up); returns (p*, order).

    Full batch (every q = 1) is ρ-zCDP with ρ = Σ T/(2σ²): the zCDP route. Otherwise the subsampled
    Gaussian's curve of :func:`reconrisk._src.accounting.rdp.release_rdp` at ``RELEASE_ORDERS`` (plus fractional
    orders in (1, 3) when more than 16 baselines are asked at once), refined over real orders per κ.
    """
    segs = _segments(release)
    lk, scalar = _log_kappas(kappa, log_kappa)
    if all(s.sample_rate == 1.0 for s in segs):
        rho = sum(s.steps / (2.0 * s.noise_multiplier**2) for s in segs)
        grid, eps = _zcdp_grid(rho, lk)
        t, a = _solve(lk, grid, eps, bool(symmetric), eps_of=lambda x: rho * x)
    else:
        grid = RELEASE_ORDERS if lk.size <= 16 else np.unique(np.concatenate([RELEASE_ORDERS, _CURVE_EXTRA]))
        eps = release_rdp(segs, grid)
        t, a = _solve(lk, grid, eps, bool(symmetric),
                      eps_of=lambda x: float(release_rdp(segs, np.array([x]))[0]))
    p = _expit(t)
    return (float(p[0]), float(a[0])) if scalar else (p, a)


def rero_release_rdp(release, kappa, *, symmetric: bool = True) -> list[Bound]:
    """ReRo upper bounds of a DP-SGD release from its RDP curve by the optimal conversion, one per κ."""
    ks, _ = v.kappa_array("kappa", kappa)
    p, a = release_rdp_power(release, ks, symmetric=symmetric)
    rel = release.to_dict() if hasattr(release, "to_dict") else {}
    return [Bound("reconstruction", None, float(x), method="rdp_optimal", formula=RDP_FORMULA,
                  details={"kappa": float(k), "order": float(o), "symmetric": bool(symmetric), "release": rel})
            for k, x, o in zip(ks, p, a)]


def tradeoff_release_rdp(release, alphas, *, symmetric: bool = True) -> TradeOff:
    """f(α) of a DP-SGD release from its RDP curve by the optimal conversion (a lower bound on the true f)."""
    a, _ = v.kappa_array("alphas", alphas)
    segs = _segments(release)
    if all(s.sample_rate == 1.0 for s in segs):
        rho = sum(s.steps / (2.0 * s.noise_multiplier**2) for s in segs)
        grid, eps = _zcdp_grid(rho, np.log(a[:1]))
    else:
        grid = np.unique(np.concatenate([RELEASE_ORDERS, _CURVE_EXTRA]))
        eps = release_rdp(segs, grid)
    t, _ = _solve(np.log(a), grid, eps, bool(symmetric))
    return _tradeoff(a, t, "rdp_optimal", {"formula": RDP_FORMULA})
