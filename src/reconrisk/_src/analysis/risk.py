"""The risk measures of ``reconrisk risk``, asked of any :class:`~reconrisk._src.analysis.base.Analysis`.

:meth:`Analysis.risk <reconrisk._src.analysis.base.Analysis.risk>` answers here. Each measure reads the analysis
through its contract — its ReRo bracket at the measure's baseline (:meth:`~reconrisk._src.analysis.base.Analysis.rero`),
its total variation and its best success over a finite prior (``total_variation``, ``prior_success``, computed
beside each analysis: :mod:`reconrisk._src.analysis.privacy_risk`, :mod:`reconrisk._src.analysis.events_risk`,
:class:`~reconrisk._src.analysis.guarantee.GuaranteeAnalysis`), and its pair view for the pair measures — and never
asks which analysis it holds. The formulas (the measures' names, the curve's dual and primal readings, the closed
forms, the module docstring's derivations) are :mod:`reconrisk._src.measures.risk`'s: functions of a curve or of
(σ, q, T), never of an analysis. Their old names there still read, deprecated.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validate as v
from ..errors import ReconRiskError
from ..measures.risk import (_CITE_CURVE, _REFERENCE_KEYS, DEFAULT_TOL, _prior_groups, _risk_bound, canonical_measure,
                             cherubin_bayes_security, normalize_prior)
from ..priors import resolve_kappa
from ..results import Bound


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


def reconstruction_risk(analysis, *, kappa: float | None = None, prior_size: int | None = None) -> Bound:
    """Certified bracket on reconstruction success: 1 − f(κ) = B_κ (Hayes, Mahloujifar & Balle 2023, Cor. 4)."""
    an = _check_release(analysis)
    k = resolve_kappa(kappa, prior_size)
    return _curve_point(an, k, "reconstruction", f"1 - f(kappa) ({_CITE_CURVE})", {"kappa": k, "prior_size": prior_size})


def reidentification_risk(analysis, *, prior_size: int) -> Bound:
    """Certified bracket on re-identification among N candidates: 1 − f(1/N) (Kulynych et al. 2025)."""
    an = _check_release(analysis)
    n = v.integer("prior_size", prior_size, minimum=2)
    return _curve_point(an, 1.0 / n, "reidentification", "1 - f(1/N) (Kulynych et al. 2025)", {"prior_size": n})


def attribute_risk(analysis, *, prior=None, baseline: float | None = None) -> Bound:
    """Certified bracket on attribute inference: 1 − f(max_v π(v)) (Kulynych et al. 2025).

    Give the prior over the attribute's K values as ``prior`` or its largest
    mass as ``baseline``.
    """
    an = _check_release(analysis)
    if (prior is None) == (baseline is None):
        raise ReconRiskError("give exactly one of prior (probabilities over the K values) or baseline (max prior mass)")
    b = float(normalize_prior(prior).max()) if prior is not None else v.probability_open("baseline", baseline)
    return _curve_point(an, b, "attribute", "1 - f(max_v prior(v)) (Kulynych et al. 2025)", {})


def membership_tpr(analysis, *, fpr: float) -> Bound:
    """Certified bracket on the TPR of any membership attack at FPR α: 1 − f(α) (Dong, Roth & Su 2022)."""
    an = _pair_view(_check_release(analysis))
    a = v.probability_open("fpr", fpr)
    return _curve_point(an, a, "membership_tpr", "1 - f(fpr) (Dong, Roth & Su 2022)", {"fpr": a})


# -- hockey-stick based measures ----------------------------------------------------------
def total_variation(analysis, *, tol: float = DEFAULT_TOL) -> tuple[float, float, dict]:
    """Certified [lower, upper] on TV(μ, ν) = δ(0) = max_α (1 − α − f(α)) (a pair question: a fixed-batch
    release reads its symmetrised composition, :func:`_pair_view`)."""
    an = _pair_view(_check_release(analysis))
    tol = v.positive("tol", tol)
    return an._memoised(("total_variation", tol), lambda: an.total_variation(tol))


def membership_advantage(analysis, *, tol: float = DEFAULT_TOL) -> Bound:
    """Certified bracket on the best membership advantage TPR − FPR = TV(μ, ν)."""
    lo, up, det = total_variation(analysis, tol=tol)
    return _risk_bound("membership_advantage", 0.0, lo, up,
                       "max_a (1 - a - f(a)) = TV = delta(0) (Dong, Roth & Su 2022)", det)


def bayes_security(analysis, *, tol: float = DEFAULT_TOL) -> Bound:
    """Certified bracket on Bayes security β* = 1 − TV(μ, ν), with Cherubin et al.'s closed form beside it."""
    an = _pair_view(_check_release(analysis))
    lo, up, det = total_variation(an, tol=tol)
    if an.supports("mechanism"):
        det = {**det, "baselines": {"cherubin_closed_form": cherubin_bayes_security(an.release)}}
    return _risk_bound("bayes_security", 1.0, 1.0 - up, None if lo is None else 1.0 - lo,
                       "1 - TV = 1 - max_a (1 - a - f(a)) (Chatzikokolakis et al. 2023)", det)


def reconstruction_advantage(analysis, *, prior=None, prior_size: int | None = None,
                             tol: float = DEFAULT_TOL) -> Bound:
    """Certified bracket on the reconstruction advantage for a finite prior (see the module docstring).

    ``prior``: probabilities of the candidate values (non-uniform allowed);
    ``prior_size`` N: the uniform prior over N candidates (then RAD = ReRo(1/N) − 1/N).
    """
    an = _check_release(analysis)
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


def risk(analysis, measure: str, *, kappa: float | None = None, prior_size: int | None = None,
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
    release = _check_release(analysis)
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


def all_risks(analysis, *, kappa: float | None = None, prior_size: int | None = None,
              baseline: float | None = None, prior=None, fpr: float | None = None,
              tol: float = DEFAULT_TOL) -> list[Bound]:
    """Every measure side by side for one release (``reconrisk risk --measure all``).

    The curve measures use the one baseline given (``prior_size``, ``kappa``,
    ``baseline`` or ``prior``); ``membership_tpr`` needs ``fpr``; ``rad`` needs
    ``prior`` or ``prior_size``. Measures whose argument is missing are left out.
    """
    release = _check_release(analysis)
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
