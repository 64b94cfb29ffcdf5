"""(ε, δ)-DP and pure ε-DP through their whole trade-off curves (f-DP), as ReRo bounds and as curves.

An (ε, δ)-DP mechanism is exactly f_{ε,δ}-DP with (Kairouz, Oh & Viswanath
2015; Dong, Roth & Su 2022, Prop. 2.5)

    f_{ε,δ}(α) = max(0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)),

the trade-off curve of the binary pair that meets (ε, δ) with equality; no
other conversion of the pair (ε, δ) alone is tighter. ReRo at baseline κ is
1 − f(κ) (Hayes, Mahloujifar & Balle 2023, blow-up form of Cor. 4):

    γ ≤ min(1, κ e^ε + δ, 1 − e^{−ε}(1 − δ − κ)).

Balle, Cherubin & Hayes 2022, Cor. 3 keeps the first branch only
(``rero_from_dp`` of :mod:`reconrisk._src.measures.conversions`, the method
``dp_balle2022``); the second branch is the reverse direction of the
guarantee (the events of the other world) and binds when κ is large: ε = 1,
κ = 0.6 gives 0.853 instead of 1. Several (ε, δ) pairs (a privacy profile)
hold at once, so f is their pointwise maximum.

Numerics: 1 − f is computed directly, never as 1 − f: the first branch as
δ + e^{log κ + ε} (``log_kappa`` keeps priors whose κ underflows), the second
as −expm1(−ε) + e^{−ε}(δ + κ).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validate as v
from ..errors import ReconRiskError
from ..results import Bound
from .tradeoff import TradeOff

__all__ = ["dp_tradeoff", "dp_power", "rero_dp", "tradeoff_dp", "DP_FORMULA"]

DP_FORMULA = ("1 - f(kappa) = min(1, kappa*e^eps + delta, 1 - e^-eps*(1 - delta - kappa)), f the (eps, delta)-DP "
              "trade-off curve (Kairouz, Oh & Viswanath 2015; Dong, Roth & Su 2022, Prop. 2.5)")


def _pairs(epsilon, delta) -> tuple[np.ndarray, np.ndarray]:
    """(ε, δ) pairs as two equal-length arrays; one δ is shared by every ε."""
    eps = np.atleast_1d(np.asarray(epsilon if not isinstance(epsilon, (str, bytes)) else [epsilon], dtype=object))
    dl = np.atleast_1d(np.asarray(delta if not isinstance(delta, (str, bytes)) else [delta], dtype=object))
    if eps.size == 0:
        raise ReconRiskError("epsilon must hold at least one value")
    if dl.size == 1 and eps.size > 1:
        dl = np.repeat(dl, eps.size)
    if dl.size != eps.size:
        raise ReconRiskError(f"give one delta, or one per epsilon; found {eps.size} epsilons and {dl.size} deltas")
    e = np.array([v.real("epsilon", x, allow_inf=True) for x in eps])
    if (e < 0).any():
        raise ReconRiskError(f"epsilon must be >= 0; found {e[e < 0][0]}")
    d = np.array([v.in_range("delta", x, 0.0, 1.0, low_open=False, high_open=False) for x in dl])
    return e, d


def _log_alphas(name: str, alpha, log_alpha) -> tuple[np.ndarray, bool]:
    """log of ``alpha`` ∈ (0, 1), or ``log_alpha`` < 0 itself (exactly one of them)."""
    if (alpha is None) == (log_alpha is None):
        raise ReconRiskError(f"give exactly one of {name} (in (0, 1)) or log_{name} (< 0); found {name}={alpha}, "
                             f"log_{name}={log_alpha}")
    if alpha is not None:
        a, scalar = v.kappa_array(name, alpha)
        return np.log(a), scalar
    la = np.asarray(log_alpha, dtype=float) if not isinstance(log_alpha, (str, bytes, bool)) else np.array(np.nan)
    flat = np.atleast_1d(la).ravel()
    bad = ~((flat < 0) & np.isfinite(flat))
    if flat.size == 0 or bad.any():
        raise ReconRiskError(f"log_{name} must be < 0 and finite; found {log_alpha}")
    return flat, la.ndim == 0


def _power(log_a: np.ndarray, e: np.ndarray, d: np.ndarray) -> np.ndarray:
    """1 − f(α) = min over pairs of min(1, δ + α e^ε, 1 − e^{−ε}(1 − δ − α)) (no overflow, no cancellation)."""
    la = log_a[:, None]
    a = np.exp(la)
    with np.errstate(over="ignore", invalid="ignore"):
        first = d[None, :] + np.exp(np.minimum(0.0, la + e[None, :]))
        second = np.where(np.isinf(e)[None, :], 1.0, -np.expm1(-e[None, :]) + np.exp(-e[None, :]) * (d[None, :] + a))
    return np.clip(np.min(np.minimum(first, second), axis=1), 0.0, 1.0)


def _beta(log_a: np.ndarray, e: np.ndarray, d: np.ndarray) -> np.ndarray:
    """f(α) = max over pairs of max(0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α))."""
    la = log_a[:, None]
    a = np.exp(la)
    with np.errstate(over="ignore", invalid="ignore"):
        first = (1.0 - d[None, :]) - np.exp(np.minimum(la + e[None, :], 700.0))
        second = np.exp(-e[None, :]) * (1.0 - d[None, :] - a)
    return np.clip(np.max(np.maximum(first, second), axis=1), 0.0, 1.0)


def dp_tradeoff(alpha, epsilon, delta=0.0, *, log_alpha=None):
    """f(α) of (ε, δ)-DP (max over the pairs when ``epsilon``/``delta`` are sequences); vectorised in α (``alpha=None`` with ``log_alpha``)."""
    la, scalar = _log_alphas("alpha", alpha, log_alpha)
    b = _beta(la, *_pairs(epsilon, delta))
    return float(b[0]) if scalar else b


def dp_power(alpha, epsilon, delta=0.0, *, log_alpha=None):
    """1 − f(α) of (ε, δ)-DP, computed directly (keeps relative precision when tiny); vectorised in α."""
    la, scalar = _log_alphas("alpha", alpha, log_alpha)
    p = _power(la, *_pairs(epsilon, delta))
    return float(p[0]) if scalar else p


def rero_dp(kappa, epsilon, delta=0.0, *, log_kappa=None) -> Bound:
    """ReRo upper bound 1 − f_{ε,δ}(κ) of an (ε, δ)-DP guarantee (both branches; δ = 0 is pure ε-DP).

    ``kappa=None`` with ``log_kappa`` for priors whose κ underflows; ``log_upper`` (a detail) keeps the
    bound's logarithm where the bound itself underflows.
    """
    lk, _ = _log_alphas("kappa", kappa, log_kappa)
    if lk.size != 1:
        raise ReconRiskError(f"kappa must be one number; found {lk.size}")
    e, d = _pairs(epsilon, delta)
    up = float(_power(lk, e, d)[0])
    with np.errstate(divide="ignore"):
        first = np.logaddexp(np.log(d), lk[0] + e)
        second = np.where(np.isinf(e), 0.0, np.log(-np.expm1(-np.minimum(e, 745.0)) + np.exp(-e) * (d + math.exp(lk[0]))))
    log_up = float(min(0.0, np.min(np.minimum(first, second))))
    cor3 = float(min(1.0, np.min(d + np.exp(np.minimum(0.0, lk[0] + e)))))
    details = {"kappa": float(kappa) if kappa is not None else math.exp(lk[0]), "log_kappa": float(lk[0]),
               "epsilon": e.tolist() if e.size > 1 else float(e[0]), "delta": d.tolist() if d.size > 1 else float(d[0]),
               "conversion": "full (epsilon, delta) trade-off curve", "balle2022_upper": cor3, "log_upper": log_up}
    return Bound("reconstruction", None, up, method="dp_tradeoff", formula=DP_FORMULA, details=details)


def tradeoff_dp(alphas, epsilon, delta=0.0) -> TradeOff:
    """The trade-off curve of (ε, δ)-DP as a :class:`TradeOff`: ``beta_lower = f_{ε,δ}``.

    A guarantee bounds f from below only: ``beta_upper`` is the trivial 1 − α
    (``power_lower`` = α).
    """
    a, _ = v.kappa_array("alphas", alphas)
    e, d = _pairs(epsilon, delta)
    la = np.log(a)
    b, p = _beta(la, e, d), _power(la, e, d)
    return TradeOff(a, b, np.maximum(1.0 - a, b), a.copy(), np.maximum(p, a), "dp_tradeoff", {},
                    {"formula": DP_FORMULA, "epsilon": e.tolist(), "delta": d.tolist()})


# -- the privacy profile of an (ε, δ) guarantee, exactly ---------------------------------------------
#: Relative move of a computed breakpoint of the curve, towards the side that raises the answer (covers
#: the rounding of the intersection of two lines: far above it unless two ε of a profile differ by < 1e-7).
_BREAK_NUDGE = 1e-9


def _profile_pieces(e: np.ndarray, d: np.ndarray):
    """The concave piecewise-linear g = 1 − f of a profile on (0, 1], as its pieces from left to right.

    Lines: δ_i + e^{ε_i} t and 1 − e^{−ε_i}(1 − δ_i) + e^{−ε_i} t per finite pair, and 1. Returns
    (a, log_s, tau): piece k is a[k] + e^{log_s[k]} t on [tau[k], tau[k+1]] (tau[0] = 0, the last piece
    ends at 1); log slopes are the exact ε (a pair with ε = ∞ only sets g(0) and drops out for t > 0).
    """
    fin = np.isfinite(e)
    ef, df = e[fin], d[fin]
    a = np.concatenate([df, -np.expm1(-ef) + np.exp(-ef) * df, [1.0]])
    ls = np.concatenate([ef, -ef, [-np.inf]])
    s = np.exp(ls)
    # breakpoints: where two lines cross inside (0, 1)
    cut = [0.0, 1.0]
    for i in range(a.size):
        for j in range(i + 1, a.size):
            if s[i] != s[j]:
                t = (a[j] - a[i]) / (s[i] - s[j])
                if 0.0 < t < 1.0:
                    cut.append(float(t))
    cut = np.unique(cut)
    mid = 0.5 * (cut[:-1] + cut[1:])
    # ties in value: the smaller slope (the line that stays lowest to the right)
    vals = a[None, :] + s[None, :] * mid[:, None]
    which = [int(np.lexsort((ls, row))[0]) for row in vals]
    pa, pl, pt = [], [], []
    for k, w in enumerate(which):
        if pl and pl[-1] == ls[w] and pa[-1] == a[w]:
            continue
        pa.append(float(a[w]))
        pl.append(float(ls[w]))
        pt.append(float(cut[k]))
    return np.array(pa), np.array(pl), np.array(pt)


def _log1p_slack(c: float, arg: float) -> float:
    """A bound on the rounding of c = λ + log1p(arg) computed in floats: a few ulps of c, plus the condition
    |arg|/(1 + arg) of log1p times the relative error (≤ 8u) of arg."""
    return 1e-15 * (1.0 + abs(c)) + 2e-15 * abs(arg) / (1.0 + arg)


def dp_profile_delta(epsilon: float, eps, delta) -> float:
    """δ(ε) = sup_t (1 − f(t) − e^ε t) of the (ε_i, δ_i) profile's curve f = max_i f_{ε_i,δ_i}, exactly.

    g = 1 − f is concave and piecewise linear, so the supremum sits at the left end τ_k of the first
    piece whose slope is ≤ e^ε (slopes compared through their exact logarithms): δ(ε) = g(τ_k) − e^ε τ_k,
    and τ_k = 0 gives g(0) = min δ_i with no rounding at all — so an (ε, δ) guarantee's δ at its own ε is
    δ. For one pair this is δ + (1 − δ)(e^{ε_1} − e^ε)₊/(1 + e^{ε_1}) (ε ≥ 0). Elsewhere τ_k is moved by
    ``_BREAK_NUDGE`` (relative) to the side that raises the value and 1e-15 (relative) is added.
    """
    e, d = _pairs(eps, delta)
    if np.all(np.isinf(e)):
        return 1.0
    fin = np.isfinite(e)
    if np.count_nonzero(fin) == 1 and epsilon >= -float(e[fin][0]):
        e1, d1 = float(e[fin][0]), float(min(d[fin][0], d.min()))
        if epsilon >= e1:
            return d1
        rest = (1.0 - d1) * -math.expm1(epsilon - e1) / (1.0 + math.exp(-e1))  # the one-pair closed form
        return float(min(1.0, d1 + rest * (1 + 1e-15)))
    a, ls, tau = _profile_pieces(e, d)
    k = int(np.argmax(ls <= epsilon))  # the constant piece (log slope −∞) always qualifies
    if tau[k] == 0.0:
        return float(min(1.0, a[k]))
    # on the piece before k (slope > e^ε) the value rises towards τ_k: evaluate that line at τ_k nudged right
    t = tau[k] * (1.0 + _BREAK_NUDGE)
    diff = math.exp(ls[k - 1]) - math.exp(epsilon)
    val = a[k - 1] + diff * t
    return float(min(1.0, max(0.0, val + 1e-15 * (abs(a[k - 1]) + abs(diff) * t))))


def dp_profile_epsilon(delta: float, eps, deltas) -> float:
    """The smallest ε ≥ 0 with :func:`dp_profile_delta` ≤ ``delta``: sup_t log((g(t) − δ)/t), exactly.

    On a piece a + s t, (g − δ)/t = s + (a − δ)/t is monotone, so the supremum is at a breakpoint τ_k
    (value λ_{k−1} + log1p((a_{k−1} − δ)/(s_{k−1} τ_k)), λ the piece's log slope) or at t → 0⁺: ∞ when
    δ < g(0⁺) = min δ_i (over finite ε_i), and the first slope's ε itself when δ = g(0⁺). When
    a_{k−1} = δ the value is λ_{k−1} exactly, so an (ε, δ) guarantee's ε at its own δ is ε. Otherwise τ_k
    is moved by ``_BREAK_NUDGE`` (relative) to the side that raises the value and 1e-15·(1 + value) is
    added. One pair, δ' ≥ δ: log max(1, e^ε − (δ' − δ)(1 + e^ε)/(1 − δ)).
    """
    e, d = _pairs(eps, deltas)
    if np.all(np.isinf(e)):
        return math.inf
    fin = np.isfinite(e)
    if np.count_nonzero(fin) == 1 and d[fin][0] <= d.min():
        e1, d1 = float(e[fin][0]), float(d[fin][0])
        if delta < d1:
            return math.inf
        if delta == d1:
            return e1
        arg = -(delta - d1) * (1.0 + math.exp(-e1)) / (1.0 - d1)  # the one-pair closed form, in log space
        if arg <= -1.0:
            return 0.0
        c = e1 + math.log1p(arg)
        return float(max(0.0, min(e1, c + _log1p_slack(c, arg))))
    a, ls, tau = _profile_pieces(e, d)
    if delta < a[0]:
        return math.inf
    best = 0.0
    if delta == a[0]:
        best = max(best, float(ls[0]))
    for k in range(1, a.size):
        ak, lk = a[k - 1], ls[k - 1]
        if ak == delta or a[k] == delta:  # a line through (0, δ): the value at τ_k is its slope, exactly
            best = max(best, float(lk if ak == delta else ls[k]))
            continue
        t = tau[k] * (1.0 - _BREAK_NUDGE if ak > delta else 1.0 + _BREAK_NUDGE)
        arg = (ak - delta) / (math.exp(lk) * t)
        if arg <= -1.0:
            continue
        c = lk + math.log1p(arg)
        c = c + _log1p_slack(c, arg)
        best = max(best, min(lk, c) if arg <= 0 else c)  # arg ≤ 0: the value is at most the slope's ε
    return float(best)
