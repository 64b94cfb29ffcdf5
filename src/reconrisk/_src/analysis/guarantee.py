"""What a privacy guarantee alone certifies: :class:`GuaranteeAnalysis`.

Federated frameworks, TensorFlow Privacy and published models state a guarantee, not a mechanism: an
(ε, δ) pair (or a privacy profile of several), pure ε-DP, an RDP curve (points (order, ε)) or ρ-zCDP —
the inputs of ``reconrisk convert``. The von Mises–Fisher mechanism (Biswas et al. 2024) has only its RDP
curve in reconrisk. A :class:`GuaranteeAnalysis` answers the questions a
:class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis` answers for a release — :meth:`rero`,
:meth:`tradeoff`, :meth:`risk` (every measure of ``reconrisk risk``), :meth:`delta`, :meth:`epsilon` —
from the tightest trade-off curve f the guarantee implies:

* (ε, δ) and pure ε-DP: f_{ε,δ}(α) = max(0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)), both branches (Kairouz,
  Oh & Viswanath 2015; Dong, Roth & Su 2022, Prop. 2.5; :mod:`reconrisk._src.measures.fdp`), the pointwise
  maximum for a profile;
* an RDP curve, ρ-zCDP and VMF's curve: the binary reduction of Riess et al. 2026, the optimal RDP →
  trade-off conversion (:mod:`reconrisk._src.measures.rdp_tradeoff`, :mod:`reconrisk._src.measures.vmf_rero`).

**One-sided, honestly.** A guarantee bounds a risk from above only: every result has ``lower = None``.
The upper ends of the curve measures (reconstruction, re-identification, attribute, membership TPR) are
1 − f(b), attained by the binary pair that meets the guarantee with equality, so no conversion of the same
guarantee gives a smaller one. ``method`` names the conversion (``dp_tradeoff``, ``rdp_optimal``,
``zcdp_optimal``) and ``details["conversion"]`` its formula.

**δ-based measures** (membership advantage = δ_f(0), Bayes security, the RAD dual, :meth:`delta`,
:meth:`epsilon`) read the convex conjugate δ_f(ε) = sup_t (g(t) − e^ε t) of g = 1 − f
(:class:`GuaranteeCurve`). g is nondecreasing with g(1) = 1, so on a grid t_0 < … < t_n

    sup over [t_i, t_{i+1}] of g(t) − e^ε t  ≤  g(t_{i+1}) − e^ε t_i,

[0, t_0] gives at most g(t_0) and [t_n, 1] at most 1 − e^ε t_n: a certified upper end from upper values
of g at the grid points alone (no concavity or interpolation is assumed). The grid starts at logit t ∈
{−45, −44, …, 36} and the interval that attains the maximum is halved (in logit t) until the bound is
within ``REL_TOL`` of the best grid value, so each question refines only where it reads. For a uniform
prior the RAD is read off the curve directly (S = g(1/N), Jensen's equality), not through the dual.

Two readings bypass the grid. An (ε, δ) guarantee or profile: g is piecewise linear, so :meth:`delta`,
:meth:`epsilon` and the total variation are read at its breakpoints exactly
(:func:`~reconrisk._src.measures.fdp.dp_profile_delta`, :func:`~reconrisk._src.measures.fdp.dp_profile_epsilon`): the
guarantee's ε at its own δ is ε, pure ε-DP at δ = 1e-300 is ε. An RDP-type guarantee: the grid's first
point t_0 ≈ 3e-20 makes its reading loose at tiny δ, so ε and δ are also converted at each given order by
ε(α) + log((α−1)/α) − (log δ + log α)/(α − 1) (Canonne, Kamath & Steinke 2020, Prop. 12; the conversion of
``dp_accounting``), and the smaller upper end is kept (both are certified).

Departure: a Gaussian-DP μ is not offered (``gdp_mu``): an (ε, δ) guarantee with δ > 0 implies no
μ-GDP at all (f(0) = 1 − δ < 1), and an RDP curve gives it only through its α → 0 tail.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import _validate as v
from ..errors import ReconRiskError
from ..measures.conversions import rero_from_guarantee
from ..measures.fdp import DP_FORMULA, _pairs, _power, dp_profile_delta, dp_profile_epsilon, tradeoff_dp
from ..measures.rdp_tradeoff import (RDP_FORMULA, RDP_FORMULA_ONE_SIDED, ZCDP_FORMULA, _expit, _solve, _tradeoff,
                                     tradeoff_rdp_curve, tradeoff_zcdp, validate_curve)
from ..measures.risk import _dual_upper
from ..measures.vmf_rero import rero_vmf, vmf_rdp_curve
from ..priors import resolve_kappa
from ..release import Release
from ..results import Bound
from .base import RELEASE_ONLY, Analysis, with_details

#: Sources a guarantee may come from (``reconrisk convert --from`` and ``reconrisk risk --from``), and VMF.
SOURCES = ("dp", "rdp", "zcdp")
#: The first grid of a guarantee's curve: logit t from −45 to 36 (t from 2.9e-20 to 1 − 2.3e-16).
FIRST_GRID = np.arange(-45.0, 36.5, 1.0)
#: A δ read off the curve stops refining when its upper end is within REL_TOL·value + 10·allowance of the
#: best grid value (an ε: within EPS_REL_TOL·ε), or after MAX_SPLITS halvings.
REL_TOL = 1e-8
EPS_REL_TOL = 1e-6
MAX_SPLITS = 90
#: Orders at which the curve of ρ-zCDP is read for δ-based questions (the KL, then 1 + 1e-8 … 1 + 1e6).
_ZCDP_ORDERS = np.concatenate([[1.0], 1.0 + np.logspace(-8, 6, 141)])
_U_MAX = 36.7  # expit(36.7) is the largest logit whose t still rounds below 1


def _log_t(u: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -np.asarray(u, dtype=float))


class GuaranteeCurve:
    """δ_f(ε) = sup_t (g(t) − e^ε t), certified from above by upper values of g on a grid (module docstring).

    ``g_of_logit(u)``: upper values of g = 1 − f at t = expit(u), vectorised, each within ``allowance`` of an
    upper value computed exactly. The grid is refined in place where :meth:`delta` is asked with
    ``refine=True``; every evaluation is kept, so later questions start from a finer grid.
    """

    def __init__(self, g_of_logit: Callable[[np.ndarray], np.ndarray], *, allowance: float = 1e-12,
                 grid=FIRST_GRID) -> None:
        self._g_of = g_of_logit
        self.allowance = float(allowance)
        self._floor = 10.0 * self.allowance
        self.u = np.empty(0)
        self._raw = np.empty(0)
        self.converged: bool | None = None
        self._add(np.asarray(grid, dtype=float))

    @property
    def points(self) -> int:
        return int(self.u.size)

    def _add(self, u_new: np.ndarray) -> None:
        u_new = np.setdiff1d(np.unique(u_new), self.u)
        if not u_new.size:
            return
        vals = np.clip(np.asarray(self._g_of(u_new), dtype=float), 0.0, 1.0)
        u = np.concatenate([self.u, u_new])
        raw = np.concatenate([self._raw, vals])
        order = np.argsort(u)
        self.u, self._raw = u[order], raw[order]
        t = np.exp(_log_t(self.u))
        # g ≥ t and g is nondecreasing: both only raise an upper value, so it stays an upper value
        g = np.maximum.accumulate(np.maximum(self._raw, t))
        self.t, self.g = t, g
        self._knots()

    def _knots(self) -> None:
        """Candidate points (t_c, U_c) with sup_t (g(t) − s t) ≤ max_c (U_c − s t_c) for every s > 0.

        On [t_k, t_{k+1}] (t_n = 1, g = 1 there exactly) g lies below g_{k+1} (monotone) and, by concavity,
        below the secants of the neighbouring intervals extended into it (each raised by the evaluation
        allowance times 1 + the ratio of the interval lengths); their minimum U is piecewise linear, so
        U − s t is largest at an end or a crossing of two of the lines. [0, t_0]: g(t_0).
        """
        t = np.concatenate([self.t, [1.0]])
        g = np.concatenate([self.g, [1.0]])
        n = t.size
        d = np.diff(t)  # interval lengths, n − 1 of them
        k = np.arange(n - 1)
        inf = np.full(n - 1, np.inf)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # left line: the secant of [t_{k−1}, t_k], valid for t ≥ t_k
            sl = np.where(k >= 1, (g[k] - g[k - 1]) / d[np.maximum(k - 1, 0)], np.nan)
            al = np.where(k >= 1, g[k] + self.allowance * (1 + d / d[np.maximum(k - 1, 0)]), np.nan)
            # right line: the secant of [t_{k+1}, t_{k+2}], valid for t ≤ t_{k+1}
            kr = np.minimum(k + 1, n - 2)
            sr = np.where(k <= n - 3, (g[kr + 1] - g[kr]) / d[kr], np.nan)
            ar = np.where(k <= n - 3, g[k + 1] + self.allowance * (1 + d / d[kr]), np.nan)
            h = g[k + 1]

            def line_l(x):
                return np.where(np.isfinite(sl), al + sl * (x - t[k]), inf)

            def line_r(x):
                return np.where(np.isfinite(sr), ar + sr * (x - t[k + 1]), inf)

            x_lr = (ar - al - sr * t[k + 1] + sl * t[k]) / (sl - sr)
            x_lh = t[k] + (h - al) / sl
            x_rh = t[k + 1] + (h - ar) / sr
            cand = np.stack([t[k], t[k + 1], x_lr, x_lh, x_rh], axis=1)
            cand = np.where(np.isfinite(cand), cand, t[k][:, None])
            cand = np.clip(cand, t[k][:, None], t[k + 1][:, None])
            u = np.minimum(np.minimum(line_l(cand.T).T, line_r(cand.T).T), h[:, None])
        self._kt = np.concatenate([[0.0], cand.ravel()])
        self._ku = np.minimum(np.concatenate([[g[0]], u.ravel()]), 1.0)
        self._kint = np.concatenate([[-1], np.repeat(k, 5)])  # the interval of each knot (−1: [0, t_0])

    def _bounds(self, s: np.ndarray):
        """(upper, best grid value, interval attaining the upper end: −1 = [0, t_0], k = [t_k, t_{k+1}])."""
        vals = self._ku[None, :] - s[:, None] * self._kt[None, :]
        arg = np.argmax(vals, axis=1)
        up = np.clip(vals[np.arange(s.size), arg], 0.0, 1.0)
        best = np.max(np.concatenate([self.g[None, :] - s[:, None] * self.t[None, :], 1.0 - s[:, None]], axis=1), axis=1)
        return up, np.clip(best, 0.0, 1.0), self._kint[arg]

    def _split(self, intervals) -> bool:
        """Halve (in logit t) each interval and its neighbours (whose secants bound it); extend the grid at its
        ends for the outer ones. False when nothing could be added."""
        new = []
        for i in np.unique(intervals):
            if i < 0:
                new.append(self.u[0] - 8.0)
            elif i == self.u.size - 1:  # [t_{n−1}, 1]
                if self.u[-1] < _U_MAX:
                    new.append(min(self.u[-1] + 0.5, _U_MAX))
            else:
                for j in (i - 1, i, i + 1):
                    if 0 <= j < self.u.size - 1 and self.u[j + 1] - self.u[j] > 1e-12:
                        new.append(0.5 * (self.u[j] + self.u[j + 1]))
        new = [x for x in new if x > -745.0]
        if new:
            self._add(np.array(new))
        return bool(new)

    def delta(self, eps, *, refine: bool = False) -> np.ndarray:
        """Upper ends of δ_f(ε) (vectorised); ``refine=True`` halves the grid where each one is read (module docstring)."""
        s = np.exp(np.minimum(np.asarray(eps, dtype=float).ravel(), 700.0))
        up, best, arg = self._bounds(s)
        for _ in range(MAX_SPLITS if refine else 0):
            need = up - best > REL_TOL * up + self._floor
            if not need.any() or not self._split(arg[need]):
                break
            up, best, arg = self._bounds(s)
        if refine:
            self.converged = bool(np.all(up - best <= REL_TOL * up + self._floor))
        return up

    def epsilon(self, delta: float) -> float:
        """Upper end of the smallest ε ≥ 0 with δ_f(ε) ≤ δ: sup_t log((g(t) − δ)/t), refined where it is read.

        U is linear between consecutive knots of an interval and (a + bt − δ)/t is monotone on a line, so the
        sup over the envelope is its largest value at a knot; [0, t_0] (U = g(t_0)) needs g(t_0) ≤ δ, else the
        grid is extended towards 0 (inf when it cannot be: δ is below the curve's jump at 0)."""
        for _ in range(MAX_SPLITS):
            pos = self._kt > 0
            if self._ku[~pos].max() > delta:  # the [0, t_0] knot: g(t_0) > δ
                if not self._split([-1]):
                    self.converged = True
                    return math.inf
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                vals = np.where(pos & (self._ku > delta), np.log(self._ku - delta) - np.log(self._kt), -np.inf)
                grid = np.where(self.g > delta, np.log(self.g - delta) - np.log(self.t), -np.inf)
            j = int(np.argmax(vals))
            up, best = float(vals[j]), max(float(np.max(grid)), math.log1p(-delta))
            if up - best <= EPS_REL_TOL * abs(up) + 1e-12 or not self._split([self._kint[j]]):
                break
        self.converged = bool(up - best <= EPS_REL_TOL * abs(up) + 1e-12)
        return max(up, 0.0)


class GuaranteeAnalysis(Analysis):
    """Every risk a guarantee alone certifies, from its tightest trade-off curve (see the module docstring).

    ``GuaranteeAnalysis(source, epsilon=…, delta=…, order=…, rho=…, symmetric=True)`` takes the arguments
    of :func:`reconrisk._src.measures.conversions.rero_from_guarantee` (``reconrisk convert``): ``"dp"`` with
    ``epsilon`` (and ``delta``, default 0; sequences for a profile), ``"rdp"`` with ``order`` and
    ``epsilon`` (the points of a curve; order 1 is the KL, ``inf`` pure DP), ``"zcdp"`` with ``rho``.
    ``symmetric=False``: an RDP/zCDP curve known for one direction of the pair only. VMF:
    :meth:`vmf` or :meth:`from_release`.

    >>> g = GuaranteeAnalysis("dp", epsilon=1.0)
    >>> round(g.rero(0.6).upper, 4), g.rero(0.6).lower  # both branches of the (1, 0)-DP curve
    (0.8528, None)
    >>> round(g.risk("membership_advantage").upper, 4)  # (e^eps - 1)/(e^eps + 1)
    0.4621
    """

    release = None  # no mechanism: every quantity is the guarantee's

    def __init__(self, source: str, *, epsilon=None, delta=None, order=None, rho=None, symmetric: bool = True) -> None:
        self.kind = v.choice("source", source, SOURCES)
        self.symmetric = bool(symmetric)
        # the converter validates every combination of arguments (one line naming the wrong one)
        rero_from_guarantee(self.kind, 0.5, epsilon=epsilon, order=order, rho=rho, delta=delta, symmetric=self.symmetric)
        if self.kind == "dp":
            if not self.symmetric:
                raise ReconRiskError("symmetric=False belongs to rdp and zcdp ((epsilon, delta)-DP holds in both "
                                     "directions by definition)")
            self._e, self._d = _pairs(epsilon, 0.0 if delta is None else delta)
        elif self.kind == "rdp":
            self._o, self._e = validate_curve(np.atleast_1d(order), np.atleast_1d(epsilon))
        else:
            self._rho = v.positive("rho", rho)
        self._vmf: dict | None = None
        self._memo: dict = {}
        self._curve: GuaranteeCurve | None = None

    @classmethod
    def vmf(cls, concentration, dim, sample_rate=1.0, compositions=1, *, max_order: int = 256) -> "GuaranteeAnalysis":
        """The VMF mechanism's RDP curve (Biswas et al. 2024, Prop. 1; Zhu–Wang subsampling when q < 1),
        composed ``compositions`` times, through the optimal conversion (:mod:`reconrisk._src.measures.vmf_rero`)."""
        o, e, e_of = vmf_rdp_curve(concentration, dim, sample_rate, compositions, max_order=max_order)
        self = cls.__new__(cls)
        self.kind, self.symmetric, self._o, self._e, self._memo, self._curve = "vmf", True, o, e, {}, None
        self._vmf = {"concentration": float(concentration), "dim": int(dim), "sample_rate": float(sample_rate),
                     "compositions": int(compositions), "max_order": int(max_order)}
        self._e_of = e_of
        return self

    @classmethod
    def from_release(cls, release, *, dim: int) -> "GuaranteeAnalysis":
        """The analysis of a VMF :class:`~reconrisk._src.release.Release` (one segment) in dimension ``dim``."""
        if not isinstance(release, Release) or release.noise != "vmf":
            raise ReconRiskError("from_release reads a VMF release (Release.vmf); analyse a Gaussian one with "
                                 f"PrivacyAnalysis; found {type(release).__name__}"
                                 + (f" with noise={release.noise!r}" if isinstance(release, Release) else ""))
        if not release.homogeneous:
            raise ReconRiskError(f"a VMF release of {len(release.segments)} segments is not analysed; give one segment")
        return cls.vmf(release.concentration, dim, release.sample_rate, release.steps)

    def __repr__(self) -> str:
        return f"GuaranteeAnalysis({self.describe()})"

    # -- what the guarantee is ---------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """The guarantee as JSON-ready keys (``guarantee`` names the source)."""
        if self.kind == "dp":
            one = self._e.size == 1
            return {"guarantee": "dp", "epsilon": float(self._e[0]) if one else self._e.tolist(),
                    "delta": float(self._d[0]) if one else self._d.tolist()}
        if self.kind == "rdp":
            return {"guarantee": "rdp", "order": self._o.tolist(), "epsilon": self._e.tolist(),
                    "symmetric": self.symmetric}
        if self.kind == "zcdp":
            return {"guarantee": "zcdp", "rho": self._rho, "symmetric": self.symmetric}
        return {"guarantee": "vmf", **self._vmf}

    source = property(describe)

    @property
    def method(self) -> str:
        """The conversion's name, as the results' ``method``."""
        return {"dp": "dp_tradeoff", "rdp": "rdp_optimal", "zcdp": "zcdp_optimal", "vmf": "rdp_optimal"}[self.kind]

    @property
    def formula(self) -> str:
        """The conversion's formula (``details["conversion"]`` of every result)."""
        if self.kind == "dp":
            return DP_FORMULA
        if self.kind == "zcdp":
            return ZCDP_FORMULA if self.symmetric else RDP_FORMULA_ONE_SIDED + " with eps(a) = rho*a"
        base = RDP_FORMULA if self.symmetric else RDP_FORMULA_ONE_SIDED
        return base + ("; VMF curve: Biswas et al. 2024, Prop. 1 (Zhu-Wang subsampling when q < 1)"
                       if self.kind == "vmf" else "")

    # -- the curve -------------------------------------------------------------------------------
    def _power_logit(self, u: np.ndarray) -> np.ndarray:
        """Upper values of g = 1 − f at t = expit(u) (no per-point order refinement: any order set is sound)."""
        lt = _log_t(u)
        if self.kind == "dp":
            return _power(lt, self._e, self._d)
        if self.kind == "zcdp":
            t, _ = _solve(lt, _ZCDP_ORDERS, self._rho * _ZCDP_ORDERS, self.symmetric)
        else:
            t, _ = _solve(lt, self._o, self._e, self.symmetric)
        return _expit(t)

    @property
    def curve(self) -> GuaranteeCurve:
        """The δ-reading of the curve (:class:`GuaranteeCurve`), built on first use and refined by later questions."""
        if self._curve is None:
            self._curve = GuaranteeCurve(self._power_logit, allowance=1e-15 if self.kind == "dp" else 1e-12)
        return self._curve

    def tradeoff(self, alphas, *, tol: float | None = None, **options):
        """f(α) at every α as a :class:`~reconrisk._src.measures.tradeoff.TradeOff`: ``beta_lower`` = the guarantee's curve,
        ``beta_upper`` the trivial 1 − α (a guarantee bounds f from below only). The curve is read exactly at
        every α (``tol`` is checked, and met); ``method``: ``"auto"`` only."""
        if tol is not None:
            v.positive("tol", tol)
        self._only_method(options, "tradeoff", "auto")
        if self.kind == "dp":
            return tradeoff_dp(alphas, self._e, self._d)
        if self.kind == "rdp":
            return tradeoff_rdp_curve(alphas, self._o, self._e, symmetric=self.symmetric)
        if self.kind == "zcdp":
            return tradeoff_zcdp(alphas, self._rho, symmetric=self.symmetric)
        a, _ = v.kappa_array("alphas", alphas)
        t, _ = _solve(np.log(a), self._o, self._e, True)
        return _tradeoff(a, t, "rdp_optimal", {"formula": self.formula, **self._vmf})

    # -- the questions -------------------------------------------------------------------------------
    def rero(self, kappa: float | None = None, *, prior_size: int | None = None, **options) -> Bound:
        """ReRo upper bound 1 − f(κ) at the prior's κ (``prior_size`` N: κ = 1/N; the option ``log_kappa`` where κ
        underflows), exactly what ``reconrisk convert`` prints (the binding order refined over real orders where it
        can be). ``rel_tol`` (a bracket's width) and ``method`` other than the conversion are refused with
        :meth:`supports`' reason."""
        log_kappa = options.pop("log_kappa", None)
        if options.pop("rel_tol", None) is not None:
            self.require("two_sided")
        self._only_method(options, "rero", None)
        if log_kappa is None:
            k, lk = resolve_kappa(kappa, prior_size), None
        elif kappa is not None or prior_size is not None:
            raise ReconRiskError("give one of kappa, prior_size or log_kappa")
        else:
            k, lk = None, log_kappa
        key = ("rero", k, lk)
        if key not in self._memo:
            self._memo[key] = self._rero(k, lk)
        b = self._memo[key]
        if prior_size is not None:
            b = with_details(b, prior_size=prior_size)
        return b

    def rero_many(self, kappas, **options) -> list[Bound]:
        """:meth:`rero` at many κ."""
        ks, _ = v.kappa_array("kappas", kappas)
        return [self.rero(float(k), **options) for k in np.atleast_1d(ks)]

    def _only_method(self, options: dict, what: str, default) -> None:
        """Refuse every option but ``method`` (whose values other than ``default`` read σ, q, T or distributions)."""
        method = options.pop("method", default)
        if options:
            raise ReconRiskError(f"a guarantee's {what} takes no option {sorted(options)[0]!r}")
        if method != default:
            m = v.choice("method", method, ("auto", "pld", "closed_form", "rdp", "mc"))
            self.require("distributions" if m in ("pld", "auto") else "rero_" + m)

    def _refusal(self, question: str) -> str | None:
        if question in ("two_sided", "rero_lower"):
            return "a guarantee alone bounds every risk from above only (no lower ends)"
        if question in ("gdp_mu", "gdp_mu_upper"):
            return ("a guarantee gives no Gaussian-DP mu here: (eps, delta) with delta > 0 implies none (f(0) = 1 - delta "
                    "< 1), and an RDP curve only through its alpha -> 0 tail")
        if question == "distributions":
            return "a guarantee has no privacy-loss distribution (its trade-off curve is read instead)"
        if question in RELEASE_ONLY:
            return f"{RELEASE_ONLY[question]} reads a DP-SGD release (sigma, q, T); a guarantee alone has none"
        return None

    def gdp_mu(self, alphas=None) -> Bound:
        """Refused (:meth:`supports`): see the module docstring's departure."""
        self.require("gdp_mu")

    def _rero(self, k, lk) -> Bound:
        if self.kind == "vmf":
            w = self._vmf
            b = rero_vmf(k, w["concentration"], w["dim"], w["sample_rate"], w["compositions"], log_kappa=lk,
                         max_order=w["max_order"])
        else:
            g = self.describe()
            kw = {"epsilon": g.get("epsilon"), "delta": g.get("delta"), "order": g.get("order"), "rho": g.get("rho")}
            b = rero_from_guarantee(self.kind, k, log_kappa=lk, symmetric=self.symmetric, **kw)
        return Bound("reconstruction", None, b.upper, method=b.method, formula=b.formula, details=dict(b.details))

    def delta(self, epsilon: float, *, two_sided: bool = False, rel_tol: float | None = None) -> Bound:
        """Upper end of δ(ε) = sup_t (1 − f(t) − e^ε t) of the guarantee's curve (the tightest δ it implies at ε);
        ``two_sided`` and ``rel_tol`` are refused (:meth:`supports`: upper ends only)."""
        eps = v.real("epsilon", epsilon)
        if two_sided or rel_tol is not None:
            self.require("two_sided")
        key = ("delta", eps)
        if key not in self._memo and self.kind == "dp":
            up = dp_profile_delta(eps, self._e, self._d)
            self._memo[key] = Bound("delta", None, up, method=self.method, converged=True,
                                    formula="sup_t (1 - f(t) - e^eps t) of the (eps, delta) curve f, at its breakpoints "
                                            "(exact)", details={"epsilon": eps, "conversion": self.formula})
        if key not in self._memo:
            up = float(self.curve.delta([eps], refine=True)[0])
            if self.kind != "dp":
                up = min(up, self._rdp_delta(eps))
            self._memo[key] = Bound("delta", None, up, method=self.method, converged=self.curve.converged,
                                    formula="sup_t (1 - f(t) - e^eps t) of the guarantee's trade-off curve f",
                                    details={"epsilon": eps, "conversion": self.formula, "grid_points": self.curve.points})
        return self._memo[key]

    def epsilon(self, delta: float, *, two_sided: bool = False, rel_tol: float | None = None) -> Bound:
        """Upper end of the smallest ε with δ(ε) ≤ δ on the guarantee's curve (inf when none: δ below f's jump at 0);
        ``two_sided`` and ``rel_tol`` are refused (:meth:`supports`: upper ends only)."""
        d = v.probability_open("delta", delta)
        if two_sided or rel_tol is not None:
            self.require("two_sided")
        key = ("epsilon", d)
        if key not in self._memo:
            self._memo[key] = self._epsilon(d)
        return self._memo[key]

    def _epsilon(self, d: float) -> Bound:
        if self.kind == "dp":
            up = dp_profile_epsilon(d, self._e, self._d)
            det = {"delta": d, "conversion": self.formula}
            if math.isinf(up):
                return Bound("epsilon", None, up, method=self.method, converged=True, details=det,
                             formula="no finite eps: delta is below the curve's jump at alpha = 0 (f(0) < 1 - delta)")
            return Bound("epsilon", None, up, method=self.method, converged=True, details=det,
                         formula="sup_t log((1 - f(t) - delta)/t) at the breakpoints of the (eps, delta) curve f (exact)")
        up = min(self.curve.epsilon(d), self._rdp_epsilon(d))
        det = {"delta": d, "conversion": self.formula, "grid_points": self.curve.points}
        if math.isinf(up):
            return Bound("epsilon", None, up, method=self.method, converged=True, details=det,
                         formula="no finite eps: delta is below the curve's jump at alpha = 0 (f(0) < 1 - delta)")
        return Bound("epsilon", None, up, method=self.method, converged=self.curve.converged, details=det,
                     formula="smallest eps with sup_t (1 - f(t) - e^eps t) <= delta, i.e. sup_t log((1 - f(t) - delta)/t), "
                             "on the guarantee's trade-off curve f")

    def _rdp_points(self) -> tuple[np.ndarray, np.ndarray]:
        """(orders > 1, ε) of an RDP-type guarantee, for the classical conversion (zCDP: a fine order grid)."""
        if self.kind == "zcdp":
            o = 1.0 + np.logspace(-4, 6, 2001)
            return o, self._rho * o
        o, e = np.asarray(self._o, dtype=float), np.asarray(self._e, dtype=float)
        keep = o > 1.0
        return o[keep], e[keep]

    def _rdp_epsilon(self, d: float) -> float:
        """ε ≤ ε(α) + log((α−1)/α) − (log δ + log α)/(α − 1) at the best given order (Canonne, Kamath & Steinke
        2020, Prop. 12; ``dp_accounting``'s conversion): the optimal conversion's grid reading can be looser at
        tiny δ, and both are upper ends. Orders of pure DP (∞) give ε(∞) itself."""
        o, e = self._rdp_points()
        if not o.size:
            return math.inf
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            fin = np.isfinite(o)
            c = np.where(fin, e + np.log1p(-1.0 / o) - (math.log(d) + np.log(o)) / (o - 1.0), e)
        c = c[np.isfinite(c)]
        return float(max(0.0, np.min(c) * (1 + 1e-12))) if c.size else math.inf

    def _rdp_delta(self, eps: float) -> float:
        """δ ≤ exp((α−1)(ε(α) − ε + log(1 − 1/α)) − log α) at the best given order (the same conversion)."""
        o, e = self._rdp_points()
        if not o.size:
            return 1.0
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            fin = np.isfinite(o)
            ld = np.where(fin, (o - 1.0) * (e - eps + np.log1p(-1.0 / o)) - np.log(o), np.where(e <= eps, -np.inf, 0.0))
        ld = ld[~np.isnan(ld)]
        return float(min(1.0, math.exp(min(0.0, float(np.min(ld)))) * (1 + 1e-12))) if ld.size else 1.0

    def total_variation(self, tol: float) -> tuple[None, float, dict]:
        """(None, upper end of TV = δ_f(0), details) for the δ-based measures of :mod:`reconrisk._src.measures.risk`."""
        key = ("tv",)
        if key not in self._memo and self.kind == "dp":
            self._memo[key] = (None, dp_profile_delta(0.0, self._e, self._d),
                               {"method": self.method, "conversion": self.formula, "converged": True})
        if key not in self._memo:
            up = float(self.curve.delta([0.0], refine=True)[0])
            self._memo[key] = (None, up, {"method": self.method, "conversion": self.formula,
                                          "converged": self.curve.converged, "grid_points": self.curve.points})
        return self._memo[key]

    def prior_success(self, prior_values, counts, tol: float):
        """(None, upper, log λ, details) of the best success S(π) over a finite prior (upper only: S = g(1/N) for a
        uniform prior, else the dual of :mod:`reconrisk._src.measures.risk` on this curve, refined where the best λ reads it)."""
        vals = np.asarray(prior_values, dtype=float)
        lp = np.log(vals)
        _, _, det = self.total_variation(tol)
        det = {k: x for k, x in det.items() if k != "grid_points"}
        if vals.size == 1:
            r = self.rero(float(vals[0]))
            return None, float(r.upper), None, {**det, "converged": None}
        up0, u0 = _dual_upper(self.curve, vals, counts)
        self.curve.delta(u0 - lp, refine=True)
        ok = self.curve.converged
        up1, u1 = _dual_upper(self.curve, vals, counts)
        return None, min(up0, up1), (u1 if up1 <= up0 else u0), {**det, "converged": ok}
