"""ReRo and the trade-off curve of a release, asked of its :class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis`.

The questions' bodies live here, beside the analysis that answers them: the certified PLD bracket on
B_κ (Hayes, Mahloujifar & Balle 2023, Cor. 4) refined over a ladder of loss grids (:func:`pld_bracket`), its
upper end alone (:func:`pld_upper`), every ReRo method (:func:`rero_bounds`: ``pld``, ``closed_form``, ``rdp``,
``mc``, the Monte Carlo started in the background by :func:`start_monte_carlo`) and the whole trade-off curve
(:func:`tradeoff`, Dong, Roth & Su 2022). Each loop here asks the analysis for its composed distributions
(:meth:`PrivacyAnalysis.pmf <reconrisk._src.analysis.privacy.PrivacyAnalysis.pmf>`, composed once per grid and cached)
and reads them with functions of mathematical objects: a PMF's blow-up (:meth:`reconrisk._src.accounting.pmf.PMF.blowup`),
the closed forms and the analytic bracket of (σ, q, T) (:mod:`reconrisk._src.measures.rero`,
:mod:`reconrisk._src.measures.rero_analytic`), the zero-out reference's exact mixture
(:mod:`reconrisk._src.measures.rero_zeroout`) and the grid choices (:mod:`reconrisk._src.measures.rero_grid`). Nothing in
:mod:`reconrisk._src.measures` holds an analysis or calls one back. The method descriptions are
:mod:`reconrisk._src.measures.rero`'s.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy import special

from .. import _validate as v
from ..errors import ReconRiskError
from ..results import Bound
from ..measures.baselines import rdp_rero_bound
from ..measures.montecarlo import MonteCarloRero, check_draws
from ..measures.rero import (DEFAULT_TOL, FORMULAS, METHODS, _pld_feasible, _which, closed_form, has_closed_form,
                             loss_cap)
from ..measures.rero_analytic import analytic_bracket
from ..measures.rero_grid import (DEFAULT_REL_TOL, H_FINEST_REL, MAX_REFINED_ATOMS, _atoms_per_step, _loss_spread,
                                  _loss_spread_min, _refinement_factor, _tilt_grid_factor, _tilt_groups, _tilt_tail,
                                  first_discretization, start_discretization)
from ..measures.rero_zeroout import zero_out_bracket
from ..measures.tradeoff import (CURVE_TOL, METHODS as CURVE_METHODS, TradeOff, _alphas, _formula, exact_beta,
                                 exact_power)


def _release_analysis(analysis, what: str) -> "PrivacyAnalysis":
    """``analysis`` checked to be the analysis of a DP-SGD release (σ, q, T known: its ``release``, ``pmf``)."""
    if not callable(getattr(analysis, "supports", None)):
        raise ReconRiskError(f"{what} reads the analysis of a release (reconrisk.analyse(release)); "
                             f"found {type(analysis).__name__}")
    analysis.require("mechanism")
    return analysis


def pld_bracket(
    analysis: "PrivacyAnalysis",
    kappa: np.ndarray,
    *,
    rel_tol: float = DEFAULT_REL_TOL,
    tol: float | None = DEFAULT_TOL,
    discretization: float | None = None,
    max_atoms: float | None = None,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Certified [lower, upper] on B_κ from privacy-loss distributions.

    With ``discretization`` given, that loss grid is used once; otherwise the
    grid starts at :func:`first_discretization` (a step's loss spread / 16) and
    is refined — by the factor the h² error law predicts, between 1/4 and 1/2
    (from the raw PLD width while its lower end is still below the analytic one) — until,
    for every κ, (upper − lower) ≤ ``rel_tol``·upper (or ≤ ``tol`` when an
    absolute target is given), or until a finer grid would exceed ``max_atoms``
    atoms per step (default ``MAX_REFINED_ATOMS``) or fall below
    ``H_FINEST_REL`` of a step's loss spread. Saturated runs (B near 1) are
    certified from a shorter run (:func:`_saturated_shortcut`). Both ends are
    certified whatever the grid; the details report the achieved
    ``max_width``, ``max_rel_width``, whether the target was met
    (``converged``) and the number of grids tried (``rounds``).

    The distributions come from the release's :class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis`
    ``analysis`` (``reconrisk.analyse(release)``): grids are a ladder h₀·2⁻ᵏ from
    :func:`first_discretization`, so a second question about the same release
    finds the grids the first one composed.
    """
    analysis = _release_analysis(analysis, "pld_bracket")
    release = analysis.release
    symmetric = bool(getattr(analysis, "symmetric", False))  # the pair view of a fixed-batch release
    if release.full_batch:
        exact = closed_form(release, kappa)
        return exact, exact, {
            "discretization": None, "note": "q = 1: exact Gaussian-DP closed form", "max_width": 0.0,
            "max_rel_width": 0.0, "converged": True, "target_rel_width": rel_tol, "target_width": tol,
        }
    a_lo, a_up = analytic_bracket(release, kappa, symmetric=symmetric)
    a_w = a_up - a_lo
    if discretization is None and (
        np.all(a_w <= rel_tol * a_up) or (tol is not None and np.all(a_w <= tol)) or not _pld_feasible(release)
    ):
        ok = bool(np.all(a_w <= rel_tol * a_up) or (tol is not None and np.all(a_w <= tol)))
        return a_lo, a_up, {
            "discretization": None, "note": "analytic bracket (saturated or extreme noise)",
            "max_width": float(np.max(a_w)), "max_rel_width": float(np.max(a_w / a_up)), "converged": ok,
            "target_rel_width": rel_tol, "target_width": tol,
        }
    max_atoms = MAX_REFINED_ATOMS if max_atoms is None else max_atoms
    cap = loss_cap(kappa)
    if discretization is None:
        short = _saturated_shortcut(analysis, kappa, a_lo, a_up, rel_tol, tol, cap)
        if short is not None:
            return short
    h = discretization if discretization is not None else first_discretization(release)
    h_finest = H_FINEST_REL * min(_loss_spread(s.noise_multiplier, s.sample_rate) for s in release.segments)
    if discretization is None and _atoms_per_step(release, h) > max_atoms:
        # a step's loss spread (≈ q√(e^{1/σ²} − 1): rarely sampled targets, q ≤ 1e-6 at σ ≤ 0.5) needs a grid
        # whose atoms over the step's loss range exceed the refinement's limit: no affordable grid resolves
        # one step, and a coarsened one gives nothing the analytic bracket does not (it took minutes to learn that)
        ok = bool(np.all(a_w <= rel_tol * a_up) or (tol is not None and np.all(a_w <= tol)))
        return a_lo, a_up, {
            "discretization": None, "max_width": float(np.max(a_w)), "max_rel_width": float(np.max(a_w / a_up)),
            "converged": ok, "target_rel_width": rel_tol, "target_width": tol, "rounds": 0,
            "note": (f"analytic bracket: a step's privacy loss spreads over {_loss_spread_min(release):.3g}, so its grid "
                     f"needs h <= {h:.3g}, i.e. {_atoms_per_step(release, h):.3g} atoms per step, beyond the "
                     f"{max_atoms:,} the PLD refinement allows"),
        }
    rounds = 0
    note = None
    # tilt up front the κ in the tiny-tail regime (B possibly < 1e-6: the untilted round-off allowance,
    # ~1e-11 absolute, would cost them their relative digits even where an absolute tol is met — the
    # trade-off curve's TPR at α = 1e-12); the others are tilted after the first round if their
    # allowance dominates the width
    kap = np.asarray(kappa, dtype=float)
    upfront = (a_up - a_lo > rel_tol * a_up) & (a_lo < 1e-6)
    thetas = _tilt_groups(_tilt_segments(analysis), kap, upfront, h, rel_tol)
    replanned = False
    while True:
        info: dict = {}
        try:
            lower, upper, informative = _bracket_at(analysis, kappa, h, cap, a_lo, a_up, rel_tol,
                                                    thetas=thetas, info=info)
        except ReconRiskError as exc:  # pragma: no cover - the engine coarsens instead; kept as a guard
            if discretization is not None:
                raise
            note = f"stopped: {exc}"
            if rounds == 0:
                lower, upper, h = a_lo, a_up, None
                width = float(np.max(upper - lower))
                rel_width = float(np.max((upper - lower) / upper))
                converged = rel_width <= rel_tol or (tol is not None and width <= tol)
            break
        coarsened = info.get("h", h) > h
        if coarsened:
            note = (f"the requested grid h = {h:.3g} would not fit the memory target; "
                    f"composed on the coarser grid h = {info['h']:.3g} (still certified)")
            if not info.get("memory", True):  # a grouped schedule's grid floor, not memory, set the grid
                note = (f"grouped schedule: composed on h = {info['h']:.3g}, its grid floor: a grid as fine as "
                        f"the requested h = {h:.3g} would narrow only the discretisation's share of the width, far "
                        "below the grouping's (still certified)")
            h = info["h"]
        rounds += 1
        w_k = upper - lower
        target = rel_tol * upper if tol is None else np.maximum(rel_tol * upper, tol)
        width = float(np.max(w_k))
        rel_width = float(np.max(w_k / upper))
        converged = rel_width <= rel_tol or (tol is not None and width <= tol)
        if not replanned and not converged:
            # κ whose width is mostly the round-off/tail allowance of the untilted composition: tilt
            replanned = True
            share = (info["err_upper"] + info["err_lower"]) > 0.1 * target
            need = (w_k > target) & share & (thetas == 0)
            new = _tilt_groups(_tilt_segments(analysis), np.asarray(kappa, dtype=float), need, h, rel_tol)
            if np.any(new > 0):
                thetas = np.where(new > 0, new, thetas)
                rounds -= 1
                continue
        if discretization is not None or converged or coarsened or h / 2 < h_finest:
            break  # (a coarsened grid: no finer one fits the memory target)
        allowance = info["err_upper"] + info["err_lower"]
        if replanned and np.all((w_k <= target) | (allowance > target)):
            # every κ still too wide is so by the composition's round-off/tail allowance alone, which a finer
            # grid does not shrink (more atoms, more round-off): refining would only cost time
            note = (f"stopped: the composition's round-off and tail allowance ({float(np.max(allowance)):.3g}) "
                    "exceeds the target width at this grid, and finer grids do not shrink it")
            break
        # a PLD lower end still below the analytic one predicts the next grid from its own, raw width (it
        # used to halve the grid: σ 0.5, q 1e-4, T 1e5, κ 1e-12 took three rounds where h/4 meets 1 % in two)
        h_next = h * _refinement_factor(upper, lower if informative else np.minimum(info["raw_lower"], lower),
                                        rel_tol, tol)
        h_next = max(h_next, h_finest)
        if _atoms_per_step(release, h_next) > max_atoms:
            break  # the bracket stays certified; only its width misses the target
        h = h_next
    det = {
        "discretization": h, "max_width": width, "max_rel_width": rel_width, "converged": bool(converged),
        "target_rel_width": rel_tol, "target_width": tol, "rounds": rounds,
    }
    if note:
        det["note"] = note
    if np.any(thetas > 0):
        det["tilts"] = sorted({float(t) for t in thetas})
    return lower, upper, det


def _tilt_segments(analysis):
    """The segments a tilt is chosen from (:attr:`PrivacyAnalysis.tilt_segments`; grid choice only)."""
    return getattr(analysis, "tilt_segments", analysis.release.segments)


def _bracket_at(analysis, kappa, h, cap, a_lo, a_up, rel_tol=DEFAULT_REL_TOL, *, thetas=None, info=None
                ) -> tuple[np.ndarray, np.ndarray, bool]:
    """Both ends on the grid h; κ are grouped by their tilt ``thetas`` (default: all untilted).

    Untilted groups get a round-off allowance affordable without extra work: a tenth of the target
    width at the smallest certified lower end (B ≥ a_lo ≥ κ), so it never decides convergence.
    Tilted groups (θ > 0) compose p·e^{θl} (:meth:`reconrisk._src.accounting.pmf.PMF.tilted`), whose
    round-off is relative to the tail near the threshold of their κ; their steps keep a Gaussian
    tail of at most 1e-3·rel_tol·κ/T (≥ 1e-40) outside the grid (it goes to +∞ on the upper end). ``info``
    (a dict) receives the error each end charged (``err_upper``, ``err_lower``) and the grid
    actually used (``h``: the engine coarsens a grid whose window would not fit the memory target).
    The distributions come from ``analysis`` (:meth:`PrivacyAnalysis.pmf`: composed once per grid and tilt).
    """
    segments = _tilt_segments(analysis)
    kappa = np.asarray(kappa, dtype=float)
    thetas = np.zeros(kappa.size) if thetas is None else np.asarray(thetas, dtype=float)
    upper = np.empty(kappa.size)
    raw = np.empty(kappa.size)
    e_up = np.empty(kappa.size)
    e_lo = np.empty(kappa.size)
    h_used = h
    memory = False
    floor = getattr(analysis, "grid_floor", lambda pessimistic: 0.0)
    for th in np.unique(thetas):
        idx = thetas == th
        k = kappa[idx]
        hg = h * (_tilt_grid_factor(segments, float(th)) if th > 0 else 1.0)
        if th > 0:
            kw = dict(tilt=float(th), tail_mass=_tilt_tail(segments, k, rel_tol),
                      slack_budget=1e-3 * rel_tol)
        else:
            kw = dict(slack_budget=0.1 * rel_tol * float(np.min(np.maximum(a_lo[idx], k))))
        upper_pmf = analysis.pmf(hg, pessimistic=True, loss_cap=cap, **kw)
        upper[idx], e_up[idx] = upper_pmf.blowup(k, return_error=True)
        lower_pmf = analysis.pmf(hg, pessimistic=False, loss_cap=cap, **kw)
        raw[idx], e_lo[idx] = lower_pmf.blowup(k, return_error=True)
        for pmf, pess in ((upper_pmf, True), (lower_pmf, False)):
            if pmf.h > hg:
                h_used = max(h_used, h * pmf.h / hg)
                # coarser than both the request and a grouped schedule's floor: the memory target coarsened it
                memory = memory or pmf.h > max(hg, floor(pess)) * (1 + 1e-9)
    upper = np.where(np.isfinite(upper), upper, 1.0)  # (a PMF whose allowance is unknown answers 1 and 0)
    raw = np.where(np.isfinite(raw), raw, 0.0)
    upper = np.minimum(np.maximum(upper, kappa), a_up)
    lower = np.minimum(np.maximum(raw, a_lo), upper)
    if info is not None:
        info.update(err_upper=e_up, err_lower=e_lo, h=h_used, raw_lower=np.minimum(raw, upper), memory=memory)
    return lower, upper, bool(np.all(raw >= a_lo))


def _saturated_shortcut(analysis, kappa, a_lo, a_up, rel_tol, tol, cap):
    """Where B_κ is near 1 for a much shorter run, certify the lower end there.

    B_κ is non-decreasing in T: the first T′ steps of a run are a garbling of
    the whole run (drop the later outputs), and B_κ is monotone under garbling.
    So a certified lower end for the first T′ steps is a certified lower end
    for T. When the Gaussian-DP heuristic says the risk is within the target of
    1 after T′ ≪ T steps, the bracket [lower(T′), upper] (upper from the
    analytic bracket at T) meets the relative target at a fraction of the cost:
    saturated runs (σ 0.5, q 0.5, T 1e5 took 90 s and 3.6 GiB composing the
    whole run, the mass piling at the loss cap). T′ only chooses the work;
    soundness rests on monotonicity alone. Returns None when not applicable.
    """
    segs = analysis.release.segments
    if len(segs) != 1 or float(np.min(a_up)) < 1.0 - rel_tol / 2:
        return None
    s = segs[0]
    var = _loss_spread(s.noise_multiplier, s.sample_rate) ** 2
    z = float(-special.ndtri(float(np.min(kappa)))) + float(-special.ndtri(rel_tol / 4))
    t_short = int(math.ceil(z * z / var))
    while t_short <= s.steps // 4:
        short = analysis.prefix(t_short)  # (the pair view: C^{⊗T} is monotone in T too)
        lo, up, det = pld_bracket(short, kappa, rel_tol=rel_tol / 4, tol=None)
        lower = np.minimum(np.maximum(lo, a_lo), a_up)
        w = a_up - lower
        if np.all(w <= rel_tol * a_up) or (tol is not None and np.all(w <= tol)):
            return lower, a_up, {
                "discretization": det.get("discretization"), "max_width": float(np.max(w)),
                "max_rel_width": float(np.max(w / a_up)), "converged": True, "target_rel_width": rel_tol,
                "target_width": tol, "note": f"saturated: lower end certified at the first {t_short} steps "
                "(B is non-decreasing in T), upper end analytic",
            }
        t_short *= 4
    return None


def pld_upper(analysis: "PrivacyAnalysis", kappa: np.ndarray, discretization: float | None = None) -> np.ndarray:
    """The certified upper end alone (pessimistic PLD on one grid)."""
    analysis = _release_analysis(analysis, "pld_upper")
    release = analysis.release
    symmetric = bool(getattr(analysis, "symmetric", False))
    if release.full_batch:
        return closed_form(release, kappa)
    _, a_up = analytic_bracket(release, kappa, symmetric=symmetric)
    if not _pld_feasible(release):
        return a_up
    h = discretization if discretization is not None else start_discretization(release)
    pmf = analysis.pmf(h, pessimistic=True, loss_cap=loss_cap(kappa))
    return np.minimum(np.maximum(pmf.blowup(kappa), kappa), a_up)


def rero_bounds(
    analysis: "PrivacyAnalysis",
    kappa,
    *,
    method: str = "pld",
    samples: int | None = None,
    seed=None,
    confidence: float = 0.95,
    tol: float | None = DEFAULT_TOL,
    rel_tol: float = DEFAULT_REL_TOL,
    progress: Callable[[int], None] | None = None,
) -> list[Bound]:
    """ReRo bounds of a release, read from its :class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis`
    (``reconrisk.analyse(release)``), for one or many κ (vectorised).

    Each result is a :class:`~reconrisk._src.results.Bound` with ``quantity="reconstruction"`` and
    ``details["kappa"]``.
    """
    analysis = _release_analysis(analysis, "rero_bounds")
    release = analysis.release
    method = v.choice("method", method, METHODS)
    kappas, _ = v.kappa_array("kappa", kappa)
    confidence = v.probability_open("confidence", confidence)
    tol = None if tol is None else v.positive("tol", tol)
    rel_tol = v.in_range("rel_tol", rel_tol, 0.0, 1.0)

    def bound(k, lo, up, *, converged=None, estimate=None, conf=None, **det) -> Bound:
        return Bound("reconstruction", lo, up, estimate=estimate, confidence=conf, method=method,
                     formula=FORMULAS[method], converged=converged, details={"kappa": float(k), **det})

    zero_out = _zero_out_applies(analysis) and method in ("closed_form", "pld")
    if zero_out:
        z_lo, z_up = zero_out_bracket(release, kappas)
    if method == "closed_form":
        val = closed_form(release, kappas, symmetric=bool(getattr(analysis, "symmetric", False)))
        if zero_out:
            return [bound(k, float(min(x, zl)), float(min(x, zu)), converged=True, **_which(x, zl, zu))
                    for k, x, zl, zu in zip(kappas, val, z_lo, z_up)]
        return [bound(k, float(x), float(x), converged=True) for k, x in zip(kappas, val)]
    if method == "pld":
        if zero_out and np.all(z_up <= analytic_bracket(release, kappas)[0]):
            # the never-sampled reference's analytic lower end is already above the zero-out upper end
            lo, up, det = z_lo, z_up, {"note": "zero-out reference (exact mixture; the never-sampled one is larger)"}
            old = None
        else:
            lo, up, det = pld_bracket(analysis, kappas, tol=tol, rel_tol=rel_tol)
            regroup = getattr(analysis, "regroup", None)  # a grouped schedule's refinement step
            while (regroup is not None and not det.get("converged", True)
                   and regroup(float(np.max((up - lo) / np.maximum(up, 1e-300))), rel_tol)):
                lo2, up2, det = pld_bracket(analysis, kappas, tol=tol, rel_tol=rel_tol)
                up = np.minimum(up, up2)  # both groupings' brackets are certified: their intersection is
                lo = np.minimum(np.maximum(lo, lo2), up)
                det = {**det, "regrouped": len(analysis.groups)}
            old = (lo, up)
            if zero_out:
                lo, up = np.minimum(lo, z_lo), np.minimum(up, z_up)
        out = []
        for i, (k, a, b) in enumerate(zip(kappas, lo, up)):
            ok = bool(b - a <= rel_tol * b or (tol is not None and b - a <= tol))
            extra = {x: y for x, y in det.items() if x != "converged"}
            if zero_out:
                extra.update(_which(None if old is None else old[1][i], z_lo[i], z_up[i]))
            out.append(bound(k, float(a), float(b), converged=ok, **extra))
        return out
    if method == "rdp":
        up = rdp_rero_bound(release.segments, kappas)
        note = "exact Eq. (2) (q = 1)" if release.full_batch else "real orders, minimised numerically"
        return [bound(k, None, float(b), orders=note) for k, b in zip(kappas, up)]
    return start_monte_carlo(analysis, kappas, samples=samples, seed=seed, confidence=confidence,
                             progress=progress).bounds()


def _zero_out_applies(analysis) -> bool:
    """A replace-one release's one-reference questions (not the pair view): the zero-out reference applies
    (:mod:`reconrisk._src.measures.rero_zeroout`), and the smaller of it and the never-sampled reference is reported."""
    source = getattr(analysis, "source", None)
    return (source is not None and source.sampler == "fixed" and not getattr(analysis, "symmetric", False))


class MonteCarloBounds:
    """The ``mc`` method of :func:`rero_bounds`, started: its draws run on background threads until
    :meth:`bounds` (which helps, then returns the list of :class:`~reconrisk._src.results.Bound`) or :meth:`cancel`."""

    def __init__(self, job, kappas: np.ndarray, samples: int, seed, confidence: float, zero_out=None) -> None:
        self._job, self._kappas = job, kappas
        self._samples, self._seed, self._confidence = samples, seed, confidence
        self._zero_out = zero_out  # (lower, upper) of the zero-out reference per κ, fixed batches only

    def cancel(self) -> None:
        self._job.cancel()

    def bounds(self) -> list[Bound]:
        """The interval of each κ. Fixed-size batches: the draws estimate the never-sampled reference's B (the
        pair at σ/2) and the certified bound is min(that, the zero-out reference's, exact here), so each end is
        the smaller of the two — an interval for the min whenever the draws' interval holds their B."""
        res = self._job.result()
        out = []
        for i, k in enumerate(self._kappas):
            lo, up, est = float(res["lower"][i]), float(res["upper"][i]), float(res["estimate"][i])
            det = {"kappa": float(k), "samples": self._samples, "seed": self._seed, "dkw_tau": res["dkw_tau"]}
            if self._zero_out is not None:
                z_lo, z_up = float(self._zero_out[0][i]), float(self._zero_out[1][i])
                det.update(_which(up, z_lo, z_up), never_sampled_estimate=est,
                           reference="zero-out" if z_up <= est else "never-sampled",  # (by the estimate)
                           reference_note="fixed-size batches: the draws estimate the never-sampled reference (the "
                                          "Poisson remove pair at sigma/2); the zero-out reference is exact; each end "
                                          "is the smaller of the two")
                lo, up, est = min(lo, z_lo), min(up, z_up), min(est, z_up)
            out.append(Bound("reconstruction", lo, up, estimate=est, confidence=self._confidence, method="mc",
                             formula=FORMULAS["mc"], converged=None, details=det))
        return out


def start_monte_carlo(analysis: "PrivacyAnalysis", kappa, *, samples: int | None = None, seed=None,
                      confidence: float = 0.95, progress: Callable[[int], None] | None = None,
                      sampler=None) -> MonteCarloBounds:
    """``rero_bounds(..., method="mc")`` started in the background (same arguments, same numbers):
    ``start_monte_carlo(...).bounds()`` equals it; the report overlaps the draws with its other families.

    ``sampler``: a :class:`~reconrisk._src.measures.montecarlo.LogRatioSampler` the caller started earlier with
    this seed, sample count and release (``reconrisk report`` starts it before its other imports); used if it
    is those draws, cancelled and replaced otherwise. On an invalid argument it is cancelled too."""
    try:
        return _start_monte_carlo(analysis, kappa, samples, seed, confidence, progress, sampler)
    except BaseException:
        if sampler is not None:
            sampler.cancel()
        raise


def _start_monte_carlo(analysis, kappa, samples, seed, confidence, progress, sampler) -> MonteCarloBounds:
    release = _release_analysis(analysis, "start_monte_carlo").release
    kappas, _ = v.kappa_array("kappa", kappa)
    confidence = v.probability_open("confidence", confidence)
    samples, seed = check_draws(1_000_000 if samples is None else samples, seed, release.steps)
    zero_out = zero_out_bracket(release, kappas) if _zero_out_applies(analysis) else None
    job = MonteCarloRero(release.segments, kappas, samples=samples, seed=seed, confidence=confidence,
                         progress=progress, sampler=sampler)
    return MonteCarloBounds(job, kappas, samples, seed, confidence, zero_out)
def tradeoff(analysis, alphas, *, method: str = "auto", tol: float | None = None) -> TradeOff:
    """Certified two-sided bracket on the trade-off curve f(α) of a release, all α at once, read from its
    :class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis` ``analysis`` (what
    :meth:`PrivacyAnalysis.tradeoff <reconrisk._src.analysis.privacy.PrivacyAnalysis.tradeoff>` and
    ``reconrisk.tradeoff`` answer; the latter takes a release, an event or any analysis).

    ``alphas``: one or many type-I errors in (0, 1) (e.g. ``np.logspace(-12,
    -0.3, 200)``). ``method``: ``"auto"`` (closed form where one exists, the
    PLD bracket otherwise), ``"pld"`` (always the PLD engine — what the tests
    check against the closed forms) or ``"closed_form"``. ``tol``: absolute
    width at which the PLD bracket's refinement stops (default ``CURVE_TOL``
    = 1e-3: a curve of many α is drawn fast; both ends are certified at any
    width).
    """
    # the curve is a pair question: a fixed-batch release answers it from the symmetrised composition
    # (PrivacyAnalysis.pair)
    analysis = _release_analysis(analysis, "tradeoff").pair
    release = analysis.release
    sym = bool(getattr(analysis, "symmetric", False))
    method = v.choice("method", method, CURVE_METHODS)
    a = _alphas(alphas)
    rel = release.to_dict()
    if method == "closed_form" or (method == "auto" and has_closed_form(release)):
        p = exact_power(release, a, symmetric=sym)
        b = exact_beta(release, a, symmetric=sym)
        return TradeOff(a, b, b.copy(), p, p.copy(), "closed_form", rel, {"formula": _formula(release, sym)})
    tol = CURVE_TOL if tol is None else v.positive("tol", tol)
    lo, up, det = pld_bracket(analysis, a, tol=tol)
    lo = np.asarray(lo, dtype=float)
    up = np.asarray(up, dtype=float)
    # 1 − B is rounded outward by one ulp (round-to-nearest errs by at most half of one)
    b_lo = np.clip(np.nextafter(1.0 - up, -np.inf), 0.0, 1.0)
    b_up = np.clip(np.nextafter(1.0 - lo, np.inf), 0.0, 1.0)
    return TradeOff(a, b_lo, b_up, lo, up, "pld", rel, dict(det))
