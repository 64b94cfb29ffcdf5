"""Calibrate a DP-SGD release to a target on any risk measure of :mod:`reconrisk.bounds.risk`.

Solve for one of the noise multiplier (smallest σ), the number of steps
(largest T) or the sample rate (largest q) with the other two fixed, such that
the *certified* end of the measure's bracket meets the target: the upper end
≤ target for the risks, the lower end ≥ target for ``bayes-security`` (a
security level). Every exact risk is monotone in each parameter (more noise,
fewer steps or a smaller sample rate is a post-processing-dominated release),
so bisection brackets the answer; the returned value is the bisection end *at
which the predicate was evaluated and held*, so the reported bound at the
answer meets the target exactly in floating point, whatever the
discretisation error of the engine.
"""

from __future__ import annotations

import math

from .. import _validate as v
from ..errors import ReconRiskError
from ..release import Release
from .risk import MEASURES, RiskBound, risk

SOLVE = ("noise-multiplier", "steps", "sample-rate")
#: Largest number of steps searched when solving for steps.
MAX_STEPS = 10**7
#: Range of noise multipliers searched.
MIN_NOISE_MULTIPLIER = 1e-2
MAX_NOISE_MULTIPLIER = 1e6
#: Smallest sample rate searched when solving for the sample rate.
MIN_SAMPLE_RATE = 1e-7


def _smallest_sigma(ok, rel_tol: float) -> float:
    """Smallest σ with ``ok(σ)`` (monotone), searched geometrically from σ = 1 so that tiny σ —
    expensive for the PLD engine (wide loss range) — are visited only when the answer is there."""
    lo, hi = None, 1.0
    if ok(hi):
        lo = hi / 2
        while ok(lo):
            hi, lo = lo, lo / 2
            if lo < MIN_NOISE_MULTIPLIER:
                raise ReconRiskError(f"every noise_multiplier down to {MIN_NOISE_MULTIPLIER:g} meets the target")
    else:
        lo, hi = hi, hi * 2
        while not ok(hi):
            lo, hi = hi, hi * 2
            if hi > MAX_NOISE_MULTIPLIER:
                raise ReconRiskError(f"no noise_multiplier up to {MAX_NOISE_MULTIPLIER:g} meets the target")
    while hi / lo - 1 > rel_tol:
        mid = math.sqrt(lo * hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _meets(r: RiskBound, target: float) -> bool:
    return r.lower >= target if r.measure == "bayes-security" else r.upper <= target


def calibrate_risk(
    measure: str,
    target: float,
    solve: str = "noise-multiplier",
    *,
    noise_multiplier: float | None = None,
    sample_rate: float | None = None,
    steps: int | None = None,
    rel_tol: float = 1e-3,
    **baseline,
) -> dict:
    """The σ, T or q meeting ``target`` on ``measure``; the other two are given.

    ``baseline``: the measure's own arguments (``kappa``, ``prior_size``,
    ``baseline``, ``prior``, ``fpr``), as for :func:`reconrisk.bounds.risk.risk`.
    Returns a dict with the solved value under its own name
    (``noise_multiplier``, ``steps`` or ``sample_rate``), the other two, the
    target, and the measure's bracket at the answer (``lower``, ``upper``).
    """
    measure = v.choice("measure", measure, MEASURES)
    solve = v.choice("solve", solve, SOLVE)
    target = v.probability_open("target", target)
    rel_tol = v.in_range("rel_tol", rel_tol, 0.0, 1.0)
    need = {"noise-multiplier": ("sample_rate", "steps"), "steps": ("noise_multiplier", "sample_rate"),
            "sample-rate": ("noise_multiplier", "steps")}[solve]
    given = dict(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps)
    solved_name = solve.replace("-", "_")
    if given[solved_name] is not None:
        raise ReconRiskError(f"{solved_name} is what --solve {solve} computes; do not give it (found {given[solved_name]})")
    for k in need:
        if given[k] is None:
            raise ReconRiskError(f"solving for {solved_name} needs {k} (found none)")
    # validate the fixed two once, and the measure's arguments, at a harmless point
    sigma0 = noise_multiplier if noise_multiplier is not None else 1.0
    q0 = sample_rate if sample_rate is not None else 0.5
    t0 = steps if steps is not None else 1
    probe = risk(Release(sigma0, q0, t0), measure, **baseline)
    if measure == "bayes-security":
        if target >= 1.0:
            raise ReconRiskError(f"target must be < 1 for bayes-security; found {target}")
    else:
        floor = 0.0 if measure == "rad" else probe.baseline  # an advantage is 0 for a blind guess
        if target <= floor:
            raise ReconRiskError(
                f"target must exceed the measure's blind-guess value {floor:.6g} (reached only without any release); "
                f"found {target:g}"
            )
        if measure == "rad" and target >= 1.0 - probe.baseline:
            raise ReconRiskError(f"target must be < {1.0 - probe.baseline:.6g} for rad (1 − the largest prior mass); found {target:g}")
    cache: dict[tuple, RiskBound] = {}

    def at(sigma: float, q: float, t: int) -> RiskBound:
        key = (sigma, q, t)
        if key not in cache:
            cache[key] = risk(Release(sigma, q, t), measure, **baseline)
        return cache[key]

    if solve == "noise-multiplier":
        q, t = sample_rate, steps
        q = v.sample_rate("sample_rate", q)
        t = v.integer("steps", t, minimum=1)
        sigma = _smallest_sigma(lambda s: _meets(at(s, q, t), target), rel_tol)
    elif solve == "steps":
        sigma = v.positive("noise_multiplier", noise_multiplier)
        q = v.sample_rate("sample_rate", sample_rate)
        if not _meets(at(sigma, q, 1), target):
            raise ReconRiskError(f"even steps=1 exceeds target {target:g} for {measure} at noise_multiplier={sigma:g}, "
                                 f"sample_rate={q:g}; raise the noise or lower the sample rate")
        lo, hi = 1, 2
        while hi <= MAX_STEPS and _meets(at(sigma, q, hi), target):
            lo, hi = hi, hi * 2
        if hi > MAX_STEPS:
            raise ReconRiskError(f"more than {MAX_STEPS} steps meet target {target:g}; the search stops there")
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if _meets(at(sigma, q, mid), target):
                lo = mid
            else:
                hi = mid
        t = lo
    else:
        sigma = v.positive("noise_multiplier", noise_multiplier)
        t = v.integer("steps", steps, minimum=1)
        if _meets(at(sigma, 1.0, t), target):
            q = 1.0
        else:
            lo, hi = 0.25, 1.0  # geometric search down from q = 1: tiny q are visited only when needed
            while not _meets(at(sigma, lo, t), target):
                hi, lo = lo, lo / 4
                if lo < MIN_SAMPLE_RATE:
                    raise ReconRiskError(f"even sample_rate={MIN_SAMPLE_RATE:g} exceeds target {target:g} for {measure}")
            while hi / lo - 1 > rel_tol:
                mid = math.sqrt(lo * hi)
                if _meets(at(sigma, mid, t), target):
                    lo = mid
                else:
                    hi = mid
            q = lo
    r = at(sigma, q, t)
    assert _meets(r, target)
    out = {"measure": measure, "target": target, "solve": solved_name, "noise_multiplier": sigma, "sample_rate": q,
           "steps": t, "baseline": r.baseline, "lower": r.lower, "upper": r.upper, "formula": r.formula,
           "evaluations": len(cache)}
    return out
