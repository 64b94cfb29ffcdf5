"""A release's own readings for the δ-based risk measures: total variation and the best success over a prior.

:class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis` answers ``total_variation`` and ``prior_success`` here
(what :mod:`reconrisk._src.analysis.risk` reads for membership advantage, Bayes security and the reconstruction
advantage): the closed forms of (σ, q, T) where they exist, the analytic bracket at extreme noise, else the
analysis's own composed distributions, refined by :func:`pmf_pair` (the loop that asks
:meth:`PrivacyAnalysis.pmf <reconrisk._src.analysis.privacy.PrivacyAnalysis.pmf>` for each grid) and read as curves
(:mod:`reconrisk._src.measures.risk_curves`) by the formulas of :mod:`reconrisk._src.measures.risk`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..accounting.gaussian import release_gdp_mu
from ..measures.rero_analytic import analytic_bracket
from ..measures.rero_grid import MAX_REFINED_ATOMS, _atoms_per_step, start_discretization
from ..measures.rero_zeroout import ZeroOutCurve, run_segments
from ..measures.risk import _dual_upper, _extreme, _primal_lower, _single_step, _tv_analytic
from ..measures.risk_curves import MAX_HALVINGS, _Gdp, _Pmf
from .privacy_rero import _zero_out_applies


def pmf_pair(analysis, cap: float, tol: float, width_fn) -> tuple[_Pmf, _Pmf, dict]:
    """Pessimistic and optimistic curves of the analysis, refined (halving from the engine's start grid) until
    ``width_fn(up, lo) ≤ tol``; the analysis composes each grid once for every δ-based measure."""
    release = analysis.release
    h = h0 = start_discretization(release)
    while True:
        up = _Pmf(analysis.pmf(h, pessimistic=True, loss_cap=cap))
        lo = _Pmf(analysis.pmf(h, pessimistic=False, loss_cap=cap))
        width = float(width_fn(up, lo))
        if width <= tol or h / 2 < h0 / 2**MAX_HALVINGS or _atoms_per_step(release, h / 2) > MAX_REFINED_ATOMS:
            break  # both ends stay certified; only the width may miss the target
        h /= 2
    det = {"method": "pld", "discretization": max(h, up.pmf.h, lo.pmf.h), "max_width": width, "target_width": tol,
           "converged": bool(width <= tol)}
    if max(up.pmf.h, lo.pmf.h) > h:  # the engine coarsened a grid whose window would not fit the memory target
        det["note"] = (f"grid h = {h:.3g} would not fit the memory target; composed on h = {det['discretization']:.3g}"
                       " (a coarser discretisation is still certified, only wider)")
    return up, lo, det


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
    up, lo, det = pmf_pair(an, 50.0, tol, lambda u, l: u.delta(zero)[0] - l.delta(zero)[0])
    hi = float(up.delta(zero)[0])
    return min(float(lo.delta(zero)[0]), hi), hi, det


def release_prior_success(an, vals: np.ndarray, counts: np.ndarray, tol: float):
    """(lower, upper, log λ, details) of S(π) for a release (:meth:`PrivacyAnalysis.prior_success
    <reconrisk._src.analysis.privacy.PrivacyAnalysis.prior_success>`; module docstring)."""
    release = an.release
    b = float(vals.max())
    if _extreme(release):  # the analytic ReRo bracket: S ≤ B(max π) (Jensen), S ≥ B(1/n) (t_z = 1/n for all z)
        n = float(counts.sum())
        lo_b, up_b = analytic_bracket(release, np.array([min(1.0 / n, b), b]))
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

        cu, cl, det = pmf_pair(an, cap, tol, width)
        up, u = _dual_upper(cu, vals, counts)
        lo = _primal_lower(cl, vals, counts)
    if _zero_out_applies(an):  # replace-one: the zero-out reference is sound too; the smaller wins
        segs = run_segments(release)
        z_up, z_u = _dual_upper(ZeroOutCurve(segs, pessimistic=True), vals, counts)
        z_lo = _primal_lower(ZeroOutCurve(segs, pessimistic=False), vals, counts)
        det = {**det, "reference": "zero-out" if z_up <= up else "never-sampled", "zero_out_upper": z_up,
               "never_sampled_upper": up}
        up, u, lo = (z_up, z_u, min(lo, z_lo)) if z_up <= up else (up, u, min(lo, z_lo))
    return lo, up, u, det


_pmf_pair = pmf_pair  # (the name it had in reconrisk._src.measures.risk_curves)
