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

from .._deprecated import moved_names, warn_at_caller
from ..errors import ReconRiskError
from ..release import Release
from ..results import Bound
from . import rero as _rero

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


_CITE_CURVE = "Hayes, Mahloujifar & Balle 2023, Cor. 4; Kulynych et al. 2025"
#: The details of a fixed-batch ReRo bound naming the reference that gave it (:func:`reconrisk._src.measures.rero._which`).
_REFERENCE_KEYS = ("reference", "zero_out_upper", "zero_out_lower", "never_sampled_upper")


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


def cherubin_bayes_security(release: Release) -> float:
    """Cherubin et al. (2024)'s closed form (leading term) 1 − erf(√(Σ q_i² T_i/σ_i²)/(2√2)), add/remove neighbours.

    For one segment this is 1 − erf(q√T/(2√2σ)); exact when q = 1, an
    approximation (their O(√(qT)/σ) remainder dropped) otherwise.
    """
    mu = math.sqrt(sum(s.sample_rate**2 * s.steps * min(1.0 / s.noise_multiplier, 1e154) ** 2 for s in release.segments))
    return float(1.0 - special.erf(mu / (2 * math.sqrt(2))))


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


#: The measures as questions (each takes an analysis and asks it) live beside the analyses
#: (:mod:`reconrisk._src.analysis.risk`, and each analysis's own readings in :mod:`reconrisk._src.analysis.privacy_risk`,
#: :mod:`reconrisk._src.analysis.events_risk`, :mod:`reconrisk._src.analysis.guarantee`); here stay the formulas, functions
#: of a curve or of (σ, q, T). The old names still read, with a :class:`DeprecationWarning`.
_MOVED = {name: "..analysis.risk" for name in (
    "reconstruction_risk", "reidentification_risk", "attribute_risk", "membership_tpr", "total_variation",
    "membership_advantage", "bayes_security", "reconstruction_advantage", "risk", "all_risks", "_curve_point",
    "_check_release", "_pair_view")}
_MOVED.update({name: "..analysis.privacy_risk" for name in ("release_total_variation", "release_prior_success")})
_MOVED.update({name: "..analysis.events_risk" for name in ("event_total_variation", "event_prior_success")})
__getattr__ = moved_names(__name__, __package__, _MOVED)
