"""Operational risks of a DP-SGD release, each certified two-sided from its trade-off curves.

One curve for a Poisson or full-batch release; for fixed-size batches the pair measures read the symmetrised
replace-one curve and the reconstruction measures the smaller of two one-reference bounds (never-sampled,
zero-out: :mod:`reconrisk._src.measures.rero_zeroout`).

Let f be the trade-off curve of :mod:`reconrisk._src.measures.tradeoff` (μ: output
with the target, ν: without) and g(t) = 1 − f(t) = B_t(μ, ν) its complement.

The same functions read the curve of any :class:`~reconrisk._src.analysis.base.Analysis` (the contract; the
functions never ask which one they hold): a release's privacy-loss distributions (two-sided), a ``dp_accounting``
event's (:class:`~reconrisk._src.analysis.events.EventAnalysis`, two-sided, both
directions' pessimistic δ for the upper ends) or a guarantee's tightest curve
(:class:`~reconrisk._src.analysis.guarantee.GuaranteeAnalysis`: upper ends only, ``lower``
None, ``method`` and ``details["conversion"]`` naming the conversion). The curve
adapters and their refinement loops are :mod:`reconrisk._src.measures.risk_curves`.

``reconstruction`` / ``reidentification`` / ``attribute``
    Any attack whose blind-guess success is b succeeds with probability at
    most g(b) = 1 − f(b) (Hayes, Mahloujifar & Balle 2023, Cor. 4; Kulynych et al., NeurIPS 2025,
    "Unifying re-identification, attribute inference, and data
    reconstruction risks in differential privacy"). b = κ for
    reconstruction, b = 1/N for re-identification among N candidates,
    b = max_v π(v) for attribute inference with a prior π over K values.
``membership_tpr``
    TPR ≤ 1 − f(α) at FPR α (the definition of f; Dong, Roth, Su 2022).
``membership_advantage``
    max_α (1 − α − f(α)) = max_α (g(α) − α) = TV(μ, ν) = δ_{μ‖ν}(0): the
    conjugate identity sup_t (g(t) − e^ε t) = δ(ε) at ε = 0, so the maximum of
    the *whole* certified curve is read off the pessimistic / optimistic PLDs'
    hockey-stick divergence at 0, which bracket it soundly.
    Closed forms: q = 1: 2Φ(μ_GDP/2) − 1; T = 1: q(2Φ(1/(2σ)) − 1).
``bayes_security``
    β* = 1 − TV(μ, ν) (Chatzikokolakis et al. 2023). Printed baseline:
    Cherubin et al. (USENIX Sec. 2024)'s closed form for membership,
    β* ≈ 1 − erf(q√T/(√2·σ)·Δ/2) with Δ = 1 for add/remove neighbours (their
    Δ = 2 is the replace-one sensitivity); it is their *leading term* — the
    paper drops an O(√(qT)/σ) remainder, so it is an approximation, exact at
    q = 1 (not a certified bound for q < 1).
``rad`` (reconstruction advantage, Guerra-Balboa et al. 2026, arXiv 2603.12142)
    **The paper's text was not available to us** (only its abstract), so its
    printed formula could not be checked. We implement the quantity its name
    and abstract describe — the best success over the blind-guess success —
    for a finite, possibly non-uniform prior π, with the bound that f-DP
    implies for it:

        success ≤ S(π) = max { Σ_z π_z g(t_z) : t_z ≥ 0, Σ_z t_z ≤ 1 },
        RAD = success − max_z π_z.

    Derivation: the guess regions E_z are disjoint, t_z = ν(E_z) sums to ≤ 1
    and μ_z(E_z) ≤ g(t_z) for every z (ν is the common reference output).
    By Jensen and concavity S(π) ≤ g(max π) = ReRo at κ = max π, with
    equality for a uniform prior — a refinement for non-uniform priors. By
    Lagrange duality with g* (sup_t g(t) − s·t = δ(log s)):

        S(π) = min_{λ>0} [ λ + Σ_z π_z δ(log λ − log π_z) ],

    so *every* λ gives a certified upper end from the pessimistic PLD's δ, and
    the allocation t_z = ν(L > log λ − log π_z) on the optimistic PLD (whose g
    lies below the true one) gives a certified lower end.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from .. import _validate as v
from .._deprecated import warn_at_caller
from ..errors import ReconRiskError
from ..priors import resolve_kappa
from ..release import Release
from ..results import Bound
from ..accounting.gaussian import release_gdp_mu
from . import rero as _rero
from .risk_curves import _Gdp, _pmf_pair, event_pair
from .rero_zeroout import ZeroOutCurve, run_segments

#: The measures, by their Python names (``risk(release, "membership_advantage")``).
MEASURES = (
    "reconstruction",
    "reidentification",
    "attribute",
    "membership_tpr",
    "membership_advantage",
    "rad",
    "bayes_security",
)
#: The CLI's spelling of each measure (``reconrisk risk --measure membership-advantage``): the one mapping.
CLI_NAMES = {m: m.replace("_", "-") for m in MEASURES}
_FROM_CLI = {c: m for m, c in CLI_NAMES.items()}
#: Default target width of the δ-based brackets (advantage, Bayes security, RAD).
DEFAULT_TOL = 1e-4


def canonical_measure(measure, *, cli: bool = False) -> str:
    """The Python name of a risk measure.

    ``cli=True``: the CLI's hyphenated spelling (``membership-advantage``) is
    the accepted one. In Python the hyphenated spelling still works for one
    release with a ``DeprecationWarning``.
    """
    if isinstance(measure, str):
        if measure in MEASURES and not cli:
            return measure
        if measure in _FROM_CLI:
            if not cli and measure not in MEASURES:
                warn_at_caller(f"measure {measure!r} is the CLI spelling; in Python use {_FROM_CLI[measure]!r} "
                               "(the hyphenated name is deprecated and will be removed)")
            return _FROM_CLI[measure]
        if cli and measure in MEASURES:
            return measure
    names = sorted(CLI_NAMES.values()) if cli else list(MEASURES)
    raise ReconRiskError(f"measure must be one of {names}; found {measure!r}")


#: Kept for one release: the risk result is the one :class:`~reconrisk._src.results.Bound`.
RiskBound = Bound


def _risk_bound(measure: str, baseline: float, lower: float, upper: float, formula: str, det: dict) -> Bound:
    """A measure's bracket as the one result shape (``det``'s ``method`` and ``converged`` become fields)."""
    det = dict(det)
    method = det.pop("method", "pld")
    converged = det.pop("converged", True)
    return Bound(measure, lower, upper, method=method, formula=formula, converged=converged,
                 details={"baseline": baseline, **det})


def _check_release(analysis) -> "Analysis":
    """``analysis`` checked to be an :class:`~reconrisk._src.analysis.base.Analysis` (``reconrisk.risk`` and
    ``reconrisk.analyse`` take a release or an event and analyse it first)."""
    if not callable(getattr(analysis, "supports", None)):
        raise ReconRiskError(f"the risk measures read an analysis (reconrisk.analyse(release_or_event)); "
                             f"found {type(analysis).__name__}")
    return analysis


def _pair_view(analysis):
    """The analysis that answers a question about pairs of neighbours (membership TPR, advantage, Bayes
    security): for a fixed-batch release the symmetrised composition
    (:attr:`~reconrisk._src.analysis.privacy.PrivacyAnalysis.pair`), for anything else the analysis itself.
    The reconstruction, re-identification, attribute and RAD bounds keep the one-reference analysis:
    they compare the run with the target against one reference for every candidate, the smaller of the
    never-sampled and the zero-out reference's bounds (:mod:`reconrisk._src.measures.rero_zeroout`)."""
    return analysis.pair


def _single_step(release: Release) -> bool:
    return len(release.segments) == 1 and release.segments[0].steps == 1


def normalize_prior(prior) -> np.ndarray:
    """A finite prior as probabilities (≥ 0, summing to 1 within 1e-6; zeros dropped, renormalised)."""
    try:
        p = np.asarray(prior, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ReconRiskError(f"prior must be a list of probabilities; found {prior!r}") from None
    if p.size < 2 or not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ReconRiskError(f"prior must hold >= 2 finite probabilities >= 0; found {p.tolist()[:10]}")
    s = float(p.sum())
    if abs(s - 1.0) > 1e-6:
        raise ReconRiskError(f"prior must sum to 1 (within 1e-6); found sum {s:.9g}")
    p = p[p > 0] / s
    if p.size < 2 or p.max() >= 1.0:
        raise ReconRiskError("prior must put mass on at least two values; found a point mass")
    return p


# -- the curve at one baseline --------------------------------------------------------------
def _curve_point(analysis, b: float, measure: str, formula: str, extra: dict) -> Bound:
    """1 − f(b): the exact closed form where one exists, else the analysis's ReRo bracket at κ = b with its
    default target — the very numbers ``reconrisk bound`` prints for κ = b (the same cached computation).
    Otherwise (an event, a guarantee, a release without a closed form): its own :meth:`rero` at κ = b (a
    guarantee's ``method`` names its conversion)."""
    if analysis.supports("rero_closed_form"):
        r = analysis.rero(b, method="closed_form")
        det = {"method": "closed_form", **extra}
        det.update({k: r.details[k] for k in _REFERENCE_KEYS if k in r.details})
        return _risk_bound(measure, b, r.lower, r.upper, formula, det)
    r = analysis.rero(b)
    det = {"method": r.method, **extra, "converged": r.converged}
    det.update({k: r.details[k] for k in ("discretization", "order", *_REFERENCE_KEYS) if k in r.details})
    if r.method != "pld":
        det["conversion"] = r.formula
    return _risk_bound(measure, b, r.lower, r.upper, formula, det)


_CITE_CURVE = "Hayes, Mahloujifar & Balle 2023, Cor. 4; Kulynych et al. 2025"
#: The details of a fixed-batch ReRo bound naming the reference that gave it (:func:`reconrisk._src.measures.rero._which`).
_REFERENCE_KEYS = ("reference", "zero_out_upper", "zero_out_lower", "never_sampled_upper")


def reconstruction_risk(release, *, kappa: float | None = None, prior_size: int | None = None) -> Bound:
    """Certified bracket on reconstruction success: 1 − f(κ) = B_κ (Hayes, Mahloujifar & Balle 2023, Cor. 4)."""
    an = _check_release(release)
    k = resolve_kappa(kappa, prior_size)
    return _curve_point(an, k, "reconstruction", f"1 - f(kappa) ({_CITE_CURVE})", {"kappa": k, "prior_size": prior_size})


def reidentification_risk(release, *, prior_size: int) -> Bound:
    """Certified bracket on re-identification among N candidates: 1 − f(1/N) (Kulynych et al. 2025)."""
    an = _check_release(release)
    n = v.integer("prior_size", prior_size, minimum=2)
    return _curve_point(an, 1.0 / n, "reidentification", "1 - f(1/N) (Kulynych et al. 2025)", {"prior_size": n})


def attribute_risk(release, *, prior=None, baseline: float | None = None) -> Bound:
    """Certified bracket on attribute inference: 1 − f(max_v π(v)) (Kulynych et al. 2025).

    Give the prior over the attribute's K values as ``prior`` or its largest
    mass as ``baseline``.
    """
    an = _check_release(release)
    if (prior is None) == (baseline is None):
        raise ReconRiskError("give exactly one of prior (probabilities over the K values) or baseline (max prior mass)")
    b = float(normalize_prior(prior).max()) if prior is not None else v.probability_open("baseline", baseline)
    return _curve_point(an, b, "attribute", "1 - f(max_v prior(v)) (Kulynych et al. 2025)", {})


def membership_tpr(release, *, fpr: float) -> Bound:
    """Certified bracket on the TPR of any membership attack at FPR α: 1 − f(α) (Dong, Roth & Su 2022)."""
    an = _pair_view(_check_release(release))
    a = v.probability_open("fpr", fpr)
    return _curve_point(an, a, "membership_tpr", "1 - f(fpr) (Dong, Roth & Su 2022)", {"fpr": a})


# -- hockey-stick based measures ----------------------------------------------------------
def total_variation(release, *, tol: float = DEFAULT_TOL) -> tuple[float, float, dict]:
    """Certified [lower, upper] on TV(μ, ν) = δ(0) = max_α (1 − α − f(α)) (a pair question: a fixed-batch
    release reads its symmetrised composition, :func:`_pair_view`)."""
    an = _pair_view(_check_release(release))
    tol = v.positive("tol", tol)
    return an._memoised(("total_variation", tol), lambda: an.total_variation(tol))


def event_total_variation(an, tol: float) -> tuple[float, float, dict]:
    """TV of an event (:meth:`EventAnalysis.total_variation <reconrisk._src.analysis.events.EventAnalysis.total_variation>`):
    δ(0) of its pessimistic and optimistic distributions."""
    zero = np.zeros(1)
    up, lo, det = event_pair(an, tol, lambda u, l: u.delta(zero)[0] - l.delta(zero)[0])
    hi = float(up.delta(zero)[0])
    return min(float(lo.delta(zero)[0]), hi), hi, det


def release_total_variation(an, tol: float) -> tuple[float, float, dict]:
    """TV of a release (:meth:`PrivacyAnalysis.total_variation <reconrisk._src.analysis.privacy.PrivacyAnalysis.total_variation>`):
    the closed forms (every q = 1, one step), the analytic bracket at extreme noise, else δ(0) of its PLDs."""
    release = an.release
    if release.full_batch:
        x = float(special.erf(release_gdp_mu(release) / (2 * math.sqrt(2))))
        return x, x, {"method": "closed_form"}
    if _single_step(release):
        s = release.segments[0]
        x = float(s.sample_rate * special.erf(1.0 / (2 * math.sqrt(2) * s.noise_multiplier)))
        return x, x, {"method": "closed_form"}
    if _extreme(release):
        return _tv_analytic(release)
    zero = np.zeros(1)
    up, lo, det = _pmf_pair(an, 50.0, tol, lambda u, l: u.delta(zero)[0] - l.delta(zero)[0])
    hi = float(up.delta(zero)[0])
    return min(float(lo.delta(zero)[0]), hi), hi, det


#: Noise multipliers outside this range skip the PLD engine (σ² would under- or overflow) and get the
#: engine's analytic bracket (:func:`reconrisk._src.measures.rero.analytic_bracket`).
_SIGMA_RANGE = (1e-100, 1e100)
_KAPPA_GRID = np.logspace(-15, -1e-3, 400)


def _extreme(release: Release) -> bool:
    return hasattr(_rero, "analytic_bracket") and any(
        not (_SIGMA_RANGE[0] <= s.noise_multiplier <= _SIGMA_RANGE[1]) for s in release.segments
    )


def _tv_analytic(release: Release) -> tuple[float, float, dict]:
    """TV = max_κ (B_κ − κ), bracketed by the analytic ReRo bracket over a κ grid (lower: any κ is a
    witness) and by the Gaussian-DP and no-noise limits (upper: TV is monotone under garbling)."""
    lo_b, up_b = _rero.analytic_bracket(release, _KAPPA_GRID)
    lower = float(np.max(lo_b - _KAPPA_GRID))
    segs = release.segments
    mu = math.sqrt(sum(s.steps * min(1.0 / s.noise_multiplier, 1e154) ** 2 for s in segs))
    log_never = sum(s.steps * math.log1p(-s.sample_rate) if s.sample_rate < 1 else -math.inf for s in segs)
    upper = min(float(special.erf(mu / (2 * math.sqrt(2)))), -math.expm1(log_never), 1.0)
    return max(0.0, min(lower, upper)), upper, {"method": "analytic (extreme noise)"}


def membership_advantage(release, *, tol: float = DEFAULT_TOL) -> Bound:
    """Certified bracket on the best membership advantage TPR − FPR = TV(μ, ν)."""
    lo, up, det = total_variation(release, tol=tol)
    return _risk_bound("membership_advantage", 0.0, lo, up,
                       "max_a (1 - a - f(a)) = TV = delta(0) (Dong, Roth & Su 2022)", det)


def cherubin_bayes_security(release: Release) -> float:
    """Cherubin et al. (2024)'s closed form (leading term) 1 − erf(√(Σ q_i² T_i/σ_i²)/(2√2)), add/remove neighbours.

    For one segment this is 1 − erf(q√T/(2√2σ)); exact when q = 1, an
    approximation (their O(√(qT)/σ) remainder dropped) otherwise.
    """
    mu = math.sqrt(sum(s.sample_rate**2 * s.steps * min(1.0 / s.noise_multiplier, 1e154) ** 2 for s in release.segments))
    return float(1.0 - special.erf(mu / (2 * math.sqrt(2))))


def bayes_security(release, *, tol: float = DEFAULT_TOL) -> Bound:
    """Certified bracket on Bayes security β* = 1 − TV(μ, ν), with Cherubin et al.'s closed form beside it."""
    an = _pair_view(_check_release(release))
    lo, up, det = total_variation(an, tol=tol)
    if an.supports("mechanism"):
        det = {**det, "baselines": {"cherubin_closed_form": cherubin_bayes_security(an.release)}}
    return _risk_bound("bayes_security", 1.0, 1.0 - up, None if lo is None else 1.0 - lo,
                       "1 - TV = 1 - max_a (1 - a - f(a)) (Chatzikokolakis et al. 2023)", det)


def _prior_groups(prior) -> tuple[np.ndarray, np.ndarray]:
    p = normalize_prior(prior)
    vals, counts = np.unique(p, return_counts=True)
    return vals, counts.astype(float)


def _dual_upper(curve, vals: np.ndarray, counts: np.ndarray) -> tuple[float, float]:
    """min over λ of λ + Σ c_k π_k δ(log λ − log π_k); every λ gives a valid upper end."""
    lp = np.log(vals)

    def dual(u: np.ndarray) -> np.ndarray:
        eps = u[:, None] - lp[None, :]
        d = curve.delta(eps.ravel()).reshape(eps.shape)
        return np.exp(u) + (d * (counts * vals)[None, :]).sum(axis=1)

    grid = np.linspace(lp.min() - 30.0, lp.max() + 60.0, 1801)
    vals_g = dual(grid)
    i = int(np.argmin(vals_g))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    best_u, best = grid[i], float(vals_g[i])
    g = (math.sqrt(5) - 1) / 2
    for _ in range(60):  # golden section on a unimodal function (convex in λ)
        c, d = b - g * (b - a), a + g * (b - a)
        fc, fd = dual(np.array([c, d]))
        if fc < fd:
            b = d
        else:
            a = c
        for u, fu in ((c, fc), (d, fd)):
            if fu < best:
                best, best_u = float(fu), u
    return min(1.0, best), best_u


def _primal_lower(curve, vals: np.ndarray, counts: np.ndarray) -> float:
    """A feasible allocation t_k = ν(L > log λ − log π_k), Σ c_k t_k ≤ 1, valued on ``curve``'s g."""
    lp = np.log(vals)

    def spent(u: float) -> float:
        return float(np.sum(counts * curve.nu_tail(u - lp)))

    lo, hi = lp.min() - 60.0, lp.max() + 700.0
    # the threshold ε = u − log π can lie far below −60 (μ-GDP with μ = 100: ε ≈ −μ²/2 ≈ −5000, where
    # a fixed window left the allocation at t = 0 and the lower end at the baseline): widen until the
    # budget is overspent at lo (spent is non-increasing in u)
    reach = 60.0
    while spent(lo) <= 1.0 and reach < 1e8:
        reach *= 4.0
        lo = lp.min() - reach
    for _ in range(200):  # smallest u with spent(u) ≤ 1
        mid = 0.5 * (lo + hi)
        if spent(mid) <= 1.0:
            hi = mid
        else:
            lo = mid
    t = curve.nu_tail(hi - lp)
    left = max(0.0, 1.0 - float(np.sum(counts * t)))
    g = curve.blowup(t)
    base = float(np.sum(counts * vals * g))
    extra = float(np.max(vals * (curve.blowup(np.minimum(t + left, 1.0)) - g)))
    # t_z = 1/n for every z is feasible too and worth g(1/n): it wins where ν's tail jumps over a large atom
    # (a single Laplace or randomized-response step), so the threshold allocation above leaves t = 0
    even = float(curve.blowup(np.array([1.0 / float(counts.sum())]))[0])
    return max(base + max(extra, 0.0), even)


def reconstruction_advantage(release, *, prior=None, prior_size: int | None = None,
                             tol: float = DEFAULT_TOL) -> Bound:
    """Certified bracket on the reconstruction advantage for a finite prior (see the module docstring).

    ``prior``: probabilities of the candidate values (non-uniform allowed);
    ``prior_size`` N: the uniform prior over N candidates (then RAD = ReRo(1/N) − 1/N).
    """
    an = _check_release(release)
    tol = v.positive("tol", tol)
    if (prior is None) == (prior_size is None):
        raise ReconRiskError("give exactly one of prior (probabilities) or prior_size (an integer >= 2)")
    if prior_size is not None:
        n = v.integer("prior_size", prior_size, minimum=2)
        vals, counts = np.array([1.0 / n]), np.array([float(n)])
    else:
        vals, counts = _prior_groups(prior)
    b = float(vals.max())
    lo, up, u, det = an.prior_success(vals, counts, tol)
    lo = None if lo is None else min(max(lo, b), up)
    det = {**det, "success_lower": lo, "success_upper": up, "lambda": None if u is None else math.exp(u), "prior_values": int(counts.sum())}
    return _risk_bound("rad", b, None if lo is None else lo - b, up - b,
                       "max_{t in simplex} sum_z prior(z) (1 - f(t_z)) - max_z prior(z) (Guerra-Balboa et al. 2026)", det)


def release_prior_success(an, vals: np.ndarray, counts: np.ndarray, tol: float):
    """(lower, upper, log λ, details) of S(π) for a release (:meth:`PrivacyAnalysis.prior_success
    <reconrisk._src.analysis.privacy.PrivacyAnalysis.prior_success>`; module docstring)."""
    release = an.release
    b = float(vals.max())
    if _extreme(release):  # the analytic ReRo bracket: S ≤ B(max π) (Jensen), S ≥ B(1/n) (t_z = 1/n for all z)
        n = float(counts.sum())
        lo_b, up_b = _rero.analytic_bracket(release, np.array([min(1.0 / n, b), b]))
        up, lo, u = float(up_b[1]), float(lo_b[0]), 0.0
        det = {"method": "analytic (extreme noise)"}
    elif release.full_batch:
        exact = _Gdp(release_gdp_mu(release))
        up, u = _dual_upper(exact, vals, counts)
        lo = _primal_lower(exact, vals, counts)
        det = {"method": "closed_form_gdp"}
    else:
        cap = float(-np.log(vals.min()) + np.log(counts.sum()) + 40.0)

        def width(pu, pl):
            return _dual_upper(pu, vals, counts)[0] - _primal_lower(pl, vals, counts)

        cu, cl, det = _pmf_pair(an, cap, tol, width)
        up, u = _dual_upper(cu, vals, counts)
        lo = _primal_lower(cl, vals, counts)
    if _rero._zero_out_applies(an):  # replace-one: the zero-out reference is sound too; the smaller wins
        segs = run_segments(release)
        z_up, z_u = _dual_upper(ZeroOutCurve(segs, pessimistic=True), vals, counts)
        z_lo = _primal_lower(ZeroOutCurve(segs, pessimistic=False), vals, counts)
        det = {**det, "reference": "zero-out" if z_up <= up else "never-sampled", "zero_out_upper": z_up,
               "never_sampled_upper": up}
        up, u, lo = (z_up, z_u, min(lo, z_lo)) if z_up <= up else (up, u, min(lo, z_lo))
    return lo, up, u, det


def guarantee_prior_success(an, vals: np.ndarray, counts: np.ndarray, tol: float):
    """(None, upper, log λ, details) of S(π) for a guarantee (upper only: S = g(1/N) for a uniform prior, else
    the dual on its curve, refined where the best λ reads it)."""
    lp = np.log(vals)
    _, _, det = an.total_variation(tol)
    det = {k: x for k, x in det.items() if k != "grid_points"}
    if vals.size == 1:
        r = an.rero(float(vals[0]))
        return None, float(r.upper), None, {**det, "converged": None}
    up0, u0 = _dual_upper(an.curve, vals, counts)
    an.curve.delta(u0 - lp, refine=True)
    ok = an.curve.converged
    up1, u1 = _dual_upper(an.curve, vals, counts)
    return None, min(up0, up1), (u1 if up1 <= up0 else u0), {**det, "converged": ok}


def event_prior_success(an, vals: np.ndarray, counts: np.ndarray, tol: float):
    """(lower, upper, log λ, details) of S(π) for an event: the dual and primal on its two distributions."""
    def width(pu, pl):
        return _dual_upper(pu, vals, counts)[0] - _primal_lower(pl, vals, counts)

    cu, cl, det = event_pair(an, tol, width)
    up, u = _dual_upper(cu, vals, counts)
    return _primal_lower(cl, vals, counts), up, u, det


def risk(release, measure: str, *, kappa: float | None = None, prior_size: int | None = None,
         baseline: float | None = None, prior=None, fpr: float | None = None, tol: float = DEFAULT_TOL) -> Bound:
    """One entry point for every measure (the ``reconrisk risk`` command).

    The baseline is given as ``kappa``, ``prior_size`` (κ = 1/N), ``baseline``
    (b) or ``prior`` (b = max prior) for the curve measures, ``fpr`` for
    ``membership_tpr``; ``prior``/``prior_size`` for ``rad``. ``release`` is an
    :class:`~reconrisk._src.analysis.base.Analysis`: a release's :class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis`
    (whose distributions are then reused), an event's :class:`~reconrisk._src.analysis.events.EventAnalysis`
    (two-sided too), or a :class:`~reconrisk._src.analysis.guarantee.GuaranteeAnalysis` (a guarantee alone: upper
    ends only, ``method`` naming the conversion). ``reconrisk.risk`` takes a release or an event as well and
    analyses it first (:func:`reconrisk.analyse`).
    """
    release = _check_release(release)
    measure = canonical_measure(measure)
    given = {k: x for k, x in dict(kappa=kappa, prior_size=prior_size, baseline=baseline, prior=prior, fpr=fpr).items()
             if x is not None}

    def only(*allowed: str) -> None:
        extra = sorted(set(given) - set(allowed))
        if extra:
            raise ReconRiskError(f"measure {measure!r} takes {', '.join(allowed) or 'no baseline'}; found {', '.join(extra)}")

    if measure in ("reconstruction", "reidentification", "attribute"):
        only("kappa", "prior_size", "baseline", "prior")
        if len(given) != 1:
            raise ReconRiskError(f"measure {measure!r} needs exactly one of kappa, prior_size, baseline, prior; found {sorted(given) or 'none'}")
        if measure == "reidentification" and prior_size is not None:
            return reidentification_risk(release, prior_size=prior_size)
        if measure == "attribute" and (prior is not None or baseline is not None):
            return attribute_risk(release, prior=prior, baseline=baseline)
        b = (resolve_kappa(kappa, prior_size) if (kappa is not None or prior_size is not None)
             else v.probability_open("baseline", baseline) if baseline is not None else float(normalize_prior(prior).max()))
        formula = {"reconstruction": f"1 - f(kappa) ({_CITE_CURVE})", "reidentification": "1 - f(1/N) (Kulynych et al. 2025)",
                   "attribute": "1 - f(max_v prior(v)) (Kulynych et al. 2025)"}
        return _curve_point(release, b, measure, formula[measure], {"prior_size": prior_size} if prior_size else {})
    if measure == "membership_tpr":
        only("fpr")
        if fpr is None:
            raise ReconRiskError("measure 'membership_tpr' needs fpr (the false-positive rate, in (0, 1))")
        return membership_tpr(release, fpr=fpr)
    if measure == "membership_advantage":
        only()
        return membership_advantage(release, tol=tol)
    if measure == "bayes_security":
        only()
        return bayes_security(release, tol=tol)
    only("prior", "prior_size")
    return reconstruction_advantage(release, prior=prior, prior_size=prior_size, tol=tol)


def all_risks(release, *, kappa: float | None = None, prior_size: int | None = None,
              baseline: float | None = None, prior=None, fpr: float | None = None,
              tol: float = DEFAULT_TOL) -> list[Bound]:
    """Every measure side by side for one release (``reconrisk risk --measure all``).

    The curve measures use the one baseline given (``prior_size``, ``kappa``,
    ``baseline`` or ``prior``); ``membership_tpr`` needs ``fpr``; ``rad`` needs
    ``prior`` or ``prior_size``. Measures whose argument is missing are left out.
    """
    release = _check_release(release)
    out: list[Bound] = []
    base = {k: x for k, x in dict(kappa=kappa, prior_size=prior_size, baseline=baseline, prior=prior).items()
            if x is not None}
    if len(base) > 1:
        raise ReconRiskError(f"give at most one of kappa, prior_size, baseline, prior; found {sorted(base)}")
    if base:
        out.append(risk(release, "reconstruction", **base))
        if prior_size is not None:
            out.append(risk(release, "reidentification", prior_size=prior_size))
        if prior is not None or baseline is not None:
            out.append(risk(release, "attribute", **base))
    if fpr is not None:
        out.append(membership_tpr(release, fpr=fpr))
    out.append(membership_advantage(release, tol=tol))
    if prior is not None or prior_size is not None:
        out.append(reconstruction_advantage(release, prior=prior, prior_size=prior_size, tol=tol))
    out.append(bayes_security(release, tol=tol))
    return out
