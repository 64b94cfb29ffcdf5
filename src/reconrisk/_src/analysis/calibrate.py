"""One calibrator: the σ, T or q at which a certified quantity of a release meets a target.

:func:`calibrate` ``(quantity, target, solve=…)`` is the only calibrator of
reconrisk: ``reconrisk calibrate`` (``--target-rero`` and ``--measure``),
``reconrisk analytic calibrate``'s search, :func:`reconrisk.calibrate_noise`,
``reconrisk.integrations.opacus.make_private_with_risk``, ``noise_multiplier_for_epsilon``
and the risk report all call it, so the same question through any door gets
the same answer to the last bit.

The predicate is certified and monotone: "the bound of the release at the
candidate meets the target", evaluated by the release's
:class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis` — the upper end of the
measure's bracket ≤ target for the risks and for ε (``bayes_security``, a
security level: the lower end ≥ target). More noise, fewer steps or a smaller
sample rate is a post-processing-dominated release, so the exact quantity is
monotone in each parameter and a bisection brackets the answer. The answer
returned is always a point **at which the predicate was evaluated and held**,
so the bound reported at the answer meets the target exactly in floating
point, whatever the discretisation error; and "does this release meet the
target?" is decided by the same bound at the release (:func:`meets`), never by
comparing σ values.

Search: the smallest σ (relative tolerance ``rel_tol``), the largest T
(exact), the largest q (relative ``rel_tol``).

Samplers: ``batch_size`` B and ``dataset_size`` N (instead of ``sample_rate``)
calibrate a release of fixed-size batches without replacement
(:meth:`Release.fixed_batch <reconrisk._src.release.Release.fixed_batch>`; replace-one
neighbours): every candidate is that release, analysed as it was run (the reconstruction-type
measures on its one-reference pair, the Poisson remove pair at σ/2; ε and the membership measures on
the symmetrised composition, :attr:`PrivacyAnalysis.pair`), so the same search answers it; ``solve="batch_size"``
finds the largest B (exact) where ``solve="sample_rate"`` would find q. Where a closed form gives the
answer (every q = 1 for the curve measures and ε) the search starts there and
steps up by ulps until the certified predicate holds; otherwise it starts at a
central-limit guess and widens geometrically — only the number of evaluations
depends on the guess, never the answer's validity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from scipy import special

from .. import _validate as v
from .._roots import bisect_log, strict_up
from ..accounting.epsilon import ACCOUNTANTS
from ..accounting.gaussian import gaussian_sigma
from ..errors import ReconRiskError
from ..release import Release, gaussian_release
from ..results import Bound
from .accountant import epsilon as eps_of, shared_analysis
from .privacy import PrivacyAnalysis
from ..measures.risk import MEASURES, canonical_measure
from .calibrate_search import _smallest

#: What can be calibrated: every risk measure and ε at δ.
QUANTITIES = MEASURES + ("epsilon",)
SOLVE = ("noise_multiplier", "steps", "sample_rate", "batch_size", "scale")
#: Largest number of steps searched when solving for steps.
MAX_STEPS = 10**7
#: Range of noise multipliers searched.
MIN_NOISE_MULTIPLIER = 1e-2
MAX_NOISE_MULTIPLIER = 1e6
#: Smallest sample rate searched when solving for the sample rate.
MIN_SAMPLE_RATE = 1e-9
#: Smallest κ the PLD search accepts (q < 1); q = 1 has a closed form for any κ.
MIN_KAPPA_PLD = 1e-12


@dataclass(frozen=True)
class Calibration:
    """The answer of :func:`calibrate`: the release found, and the certified bound at it.

    A schedule's scale (``solve="scale"``): ``scale`` c and ``schedule`` (the schedule as given, (σ_t, q_t, T_t)
    before scaling); ``release`` is the schedule at c·σ_t, and ``noise_multiplier`` / ``sample_rate`` read its
    smallest scaled σ and largest q (its noisiest-to-least-noisy range is the schedule's), ``steps`` its total.
    """

    quantity: str
    target: float
    solve: str
    noise_multiplier: float
    sample_rate: float
    steps: int
    bound: Bound
    bracket: tuple[float, float]
    evaluations: int
    sampler: str = "poisson"
    batch_size: int | None = None
    dataset_size: int | None = None
    scale: float | None = None
    schedule: "tuple[tuple[float, float, int], ...] | None" = field(default=None, repr=False)

    @property
    def release(self) -> Release:
        if self.schedule is not None:
            return _scaled(self.schedule, self.scale, self.sampler)
        if self.sampler == "fixed":
            return Release.fixed_batch(self.noise_multiplier, self.batch_size, self.dataset_size, self.steps)
        return Release(self.noise_multiplier, self.sample_rate, self.steps)

    @property
    def value(self) -> float:
        """The solved parameter."""
        return getattr(self, self.solve)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "quantity": self.quantity, "target": self.target, "solve": self.solve,
            "noise_multiplier": self.noise_multiplier, "sample_rate": self.sample_rate, "steps": self.steps,
            "bracket": list(self.bracket), "evaluations": self.evaluations, "bound": self.bound.to_dict(),
        }
        if self.sampler == "fixed" and self.schedule is None:
            out.update(sampler="fixed", batch_size=self.batch_size, dataset_size=self.dataset_size)
        if self.schedule is not None:
            out.update(scale=self.scale, sampler=self.sampler, segments=len(self.schedule))
        return out


def meets(bound: Bound, target: float) -> bool:
    """Whether a certified bound meets a target: upper ≤ target (a security level: lower ≥ target)."""
    if bound.quantity == "bayes_security":
        return bound.lower is not None and bound.lower >= target
    return bound.upper is not None and bound.upper <= target


def _score(bound: Bound, target: float) -> float:
    """How far a bound is from meeting the target, in log units: log(upper/target) (a security level:
    log(target/lower)); ≤ 0 where :func:`meets` holds (up to rounding). It guides the search only."""
    if bound.quantity == "bayes_security":
        v_, t_ = target, bound.lower
    else:
        v_, t_ = bound.upper, target
    if v_ is None or t_ is None or not v_ > 0 or not t_ > 0:
        return math.nan
    return math.log(v_) - math.log(t_)


def quantity_bound(analysis: PrivacyAnalysis, quantity: str, args: dict) -> Bound:
    """The certified bound of ``quantity`` that :func:`calibrate` holds against its target."""
    if quantity == "epsilon":
        return analysis.epsilon(args.get("delta", 1e-5))
    return analysis.risk(quantity, **args)


def canonical_quantity(quantity) -> str:
    if quantity == "epsilon":
        return quantity
    try:
        return canonical_measure(quantity)
    except ReconRiskError:
        raise ReconRiskError(f"quantity must be a risk measure or 'epsilon', one of {list(QUANTITIES)}; found {quantity!r}") from None


def calibrate(
    quantity: str,
    target: float,
    solve: str | None = None,
    *,
    schedule=None,
    noise_multiplier: float | None = None,
    sample_rate: float | None = None,
    steps: int | None = None,
    batch_size: int | None = None,
    dataset_size: int | None = None,
    rel_tol: float | None = None,
    **args,
) -> Calibration:
    """The σ (smallest), T (largest) or q (largest) at which ``quantity`` meets ``target``; give the other two.

    Fixed-size batches without replacement: ``dataset_size`` N with ``batch_size`` B instead of
    ``sample_rate`` (``solve="batch_size"``: the largest B, exact).

    A schedule's scale: ``schedule`` — a :class:`~reconrisk._src.release.Release` or ``[(σ_t, q_t, T_t), …]``
    (an Opacus history; a noise scheduler's decay shape) — and ``solve="scale"`` (the default when a schedule
    is given): the smallest c (relative ``rel_tol``) such that the schedule with every σ_t → c·σ_t meets the
    target, by the same search on the same certified predicate (more noise at every step is post-processing
    dominated, so the predicate is monotone in c). Its sampler is the schedule's.

    ``quantity``: a risk measure of :func:`reconrisk._src.measures.risk.risk`
    (``"reconstruction"``, ``"membership_advantage"``, …) with its own
    arguments in ``args`` (``kappa``, ``prior_size``, ``baseline``, ``prior``,
    ``fpr``), or ``"epsilon"`` with ``delta`` (default 1e-5). ``rel_tol``: the
    relative tolerance of a real-valued answer (default 1e-3; 1e-4 for ε).
    """
    quantity = canonical_quantity(quantity)
    solve = ("scale" if schedule is not None else "noise_multiplier") if solve is None else solve
    solve = v.choice("solve", solve.replace("-", "_") if isinstance(solve, str) else solve, SOLVE)
    target = v.epsilon("target", target) if quantity == "epsilon" else v.probability_open("target", target)
    rel_tol = v.in_range("rel_tol", (1e-4 if quantity == "epsilon" else 1e-3) if rel_tol is None else rel_tol, 0.0, 1.0)
    if quantity == "epsilon":
        extra = sorted(set(args) - {"delta"})
        if extra:
            raise ReconRiskError(f"quantity 'epsilon' takes delta; found {', '.join(extra)}")
        args = {"delta": v.probability_open("delta", args.get("delta", 1e-5))}
    if solve == "scale" or schedule is not None:
        given = {k: x for k, x in dict(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps,
                                       batch_size=batch_size, dataset_size=dataset_size).items() if x is not None}
        if solve != "scale" or schedule is None or given:
            raise ReconRiskError("a schedule calibrates its scale: give schedule= (a Release or [(noise_multiplier, "
                                 "sample_rate, steps), …]) with solve='scale' and none of noise_multiplier, "
                                 f"sample_rate, steps, batch_size, dataset_size; found solve={solve!r}, schedule="
                                 f"{'given' if schedule is not None else None}, {', '.join(given) or 'nothing else'}")
        return _calibrate_scale(quantity, target, schedule, rel_tol, args)
    fixed = batch_size is not None or dataset_size is not None or solve == "batch_size"
    if fixed:
        if sample_rate is not None:
            raise ReconRiskError("give sample_rate (Poisson sampling) or batch_size and dataset_size (fixed-size "
                                 f"batches), not both; found sample_rate={sample_rate}")
        if solve == "sample_rate":
            raise ReconRiskError("with fixed-size batches solve batch_size (the largest B), not sample_rate")
        n_data = v.integer("dataset_size", dataset_size) if dataset_size is not None else None
        if n_data is None:
            raise ReconRiskError("fixed-size batches need dataset_size (the number of training examples N)")
        given = dict(noise_multiplier=noise_multiplier, batch_size=batch_size, steps=steps)
    else:
        given = dict(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps)
    if given[solve] is not None:
        raise ReconRiskError(f"{solve} is what solve={solve!r} computes; do not give it (found {given[solve]})")
    for k in given:
        if k != solve and given[k] is None:
            raise ReconRiskError(f"solving for {solve} needs {k} (found none)")
    sigma = None if noise_multiplier is None else v.noise_multiplier("noise_multiplier", noise_multiplier)
    q = None if sample_rate is None else v.sample_rate("sample_rate", sample_rate)
    if fixed and batch_size is not None:
        b_size = v.integer("batch_size", batch_size, minimum=1, maximum=n_data)
        q = b_size / n_data
    t = None if steps is None else v.steps("steps", steps)
    floor = _check_target(quantity, target, args)
    sampler = "fixed" if fixed else "poisson"
    scale = 2.0 if fixed else 1.0  # a fixed-batch release is its Poisson dominating pair at sigma/2

    cache: dict[tuple, Bound] = {}

    def at(s: float, r: float, n: int) -> Bound:
        key = (s, r, n)
        if key not in cache:
            # the release's shared analysis (one composition cache for every door: a later question about the
            # calibrated release, reconrisk.epsilon included, finds what the search composed)
            cache[key] = quantity_bound(shared_analysis(Release(s, r, n, sampler=sampler)), quantity, args)
        return cache[key]

    if solve == "batch_size":
        return _largest_batch(quantity, target, sigma, n_data, t, at, cache)

    if solve == "noise_multiplier":
        if q < 1.0 and floor < MIN_KAPPA_PLD and quantity in _CURVE:
            raise ReconRiskError(
                f"the baseline must be >= {MIN_KAPPA_PLD:g} (prior_size <= 10^12) to calibrate at sample_rate < 1: "
                f"smaller baselines need PLD grids this search cannot afford; found {floor:g}")
        if q < 1.0 and quantity in _CURVE:
            top = -math.expm1(t * math.log1p(-q) + math.log1p(-floor))  # no noise: was the target ever sampled?
            if target >= top:
                raise ReconRiskError(
                    f"target must be < {top:.6g}, the success without any noise at sample_rate={q:g}, steps={t}; "
                    f"found {target:g} (every noise multiplier meets it)")
        exact = _closed_form_sigma(quantity, target, q, t, args, floor)
        # q = 1, fixed batches: the one-reference measures read the zero-out reference (sensitivity C, σ as run),
        # the pair measures the symmetrised curve (sensitivity 2C: the dominating pair at σ/2)
        one_ref = fixed and quantity in ("reconstruction", "reidentification", "attribute")
        exact = None if exact is None else (1.0 if one_ref else scale) * exact

        def ok_sigma(s: float) -> bool:
            return meets(at(s, q, t), target)

        def score_sigma(s: float) -> float:
            return _score(at(s, q, t), target)

        if exact is not None:
            sigma = strict_up(exact, ok_sigma)
            lo = hi = sigma
        else:
            lo, hi = _smallest(ok_sigma, scale * _sigma_guess(quantity, target, q, t, args, floor), rel_tol,
                               MIN_NOISE_MULTIPLIER, MAX_NOISE_MULTIPLIER, "noise_multiplier", score=score_sigma)
            sigma = hi
    elif solve == "steps":
        if not meets(at(sigma, q, 1), target):
            raise ReconRiskError(f"even steps=1 exceeds target {target:g} for {quantity} at noise_multiplier={sigma:g}, "
                                 f"sample_rate={q:g}; raise the noise or lower the sample rate")
        lo, hi = 1, 2
        while hi <= MAX_STEPS and meets(at(sigma, q, hi), target):
            lo, hi = hi, hi * 2
        if hi > MAX_STEPS:
            raise ReconRiskError(f"more than {MAX_STEPS} steps meet target {target:g}; the search stops there")
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if meets(at(sigma, q, mid), target):
                lo = mid
            else:
                hi = mid
        t = lo
        lo, hi = float(lo), float(hi)
    else:
        if meets(at(sigma, 1.0, t), target):
            q = lo = hi = 1.0
        else:
            # the largest q is the smallest 1/q: the same search on x = 1/q ∈ [1, 1/MIN_SAMPLE_RATE]
            def ok_inv(x: float) -> bool:
                return meets(at(sigma, 1.0 / x, t), target)

            def score_inv(x: float) -> float:
                return _score(at(sigma, 1.0 / x, t), target)

            xlo, xhi = _smallest(ok_inv, 4.0, rel_tol, 1.0, 1.0 / MIN_SAMPLE_RATE, "1/sample_rate",
                                 none_msg=f"even sample_rate={MIN_SAMPLE_RATE:g} exceeds target {target:g} for {quantity}",
                                 score=score_inv)
            q = 1.0 / xhi
            lo, hi = q, 1.0 / xlo
    b = at(sigma, q, t)
    if not meets(b, target):  # pragma: no cover - every answer is a point where the predicate held
        raise ReconRiskError(f"internal error: the calibrated release does not meet target {target:g}")
    if fixed:
        return Calibration(quantity, target, solve, sigma, q, t, b, (lo, hi), len(cache), "fixed", b_size, n_data)
    return Calibration(quantity, target, solve, sigma, q, t, b, (lo, hi), len(cache))


def _scaled(schedule, scale: float, sampler: str) -> Release:
    """The schedule ``[(σ_t, q_t, T_t), …]`` with every σ_t multiplied by ``scale``."""
    return Release.schedule([(scale * s, q, t) for s, q, t in schedule], sampler=sampler)


def _calibrate_scale(quantity, target, schedule, rel_tol, args) -> Calibration:
    """The smallest scale c at which the schedule at c·σ_t meets the target (see :func:`calibrate`)."""
    base = schedule if isinstance(schedule, Release) else Release.schedule(schedule, sampler="poisson")
    gaussian_release(base, "calibrating a schedule's scale (noise multipliers to scale)")  # refuses VMF noise
    segs = tuple((s.noise_multiplier, s.sample_rate, s.steps) for s in base.segments)
    floor = _check_target(quantity, target, args)
    if floor < MIN_KAPPA_PLD and quantity in _CURVE and any(q < 1.0 for _, q, _ in segs):
        raise ReconRiskError(f"the baseline must be >= {MIN_KAPPA_PLD:g} (prior_size <= 10^12) to calibrate at "
                             f"sample_rate < 1: smaller baselines need PLD grids this search cannot afford; found {floor:g}")
    fixed = base.sampler == "fixed"
    cache: dict[float, Bound] = {}

    def at(c: float) -> Bound:
        if c not in cache:
            cache[c] = quantity_bound(shared_analysis(_scaled(segs, c, base.sampler)), quantity, args)
        return cache[c]

    lo_s, hi_s = min(s for s, _, _ in segs), max(s for s, _, _ in segs)
    lo, hi = _smallest(lambda c: meets(at(c), target), _scale_guess(quantity, target, segs, args, floor, fixed),
                       rel_tol, MIN_NOISE_MULTIPLIER / lo_s, MAX_NOISE_MULTIPLIER / hi_s, "scale",
                       none_msg=f"no scale up to {MAX_NOISE_MULTIPLIER / hi_s:g} meets target {target:g} for {quantity}",
                       score=lambda c: _score(at(c), target))
    b = at(hi)
    return Calibration(quantity, target, "scale", hi * lo_s, max(q for _, q, _ in segs), base.steps, b, (lo, hi),
                       len(cache), base.sampler, scale=hi, schedule=segs)


def _scale_guess(quantity, target, segs, args, base, fixed: bool) -> float:
    """Where the scale search starts: the c whose central-limit GDP μ (Bu et al. 2020: μ² ≈ Σ_t T_t q_t²
    (e^{1/σ_t²} − 1), σ_t at c and halved for fixed batches) is the target's (Φ⁻¹(target) − Φ⁻¹(κ) for the
    curve measures; Gaussian DP's μ at (ε, δ) for ε); 1 otherwise. Only the number of evaluations depends on it."""
    if quantity == "epsilon":
        mu = 1.0 / gaussian_sigma(target, args["delta"], steps=1)
    elif quantity in _CURVE and 0 < base < target < 1:
        mu = float(special.ndtri(target) - special.ndtri(base))
    else:
        return 1.0
    if not mu > 0 or not math.isfinite(mu):
        return 1.0

    def mu_at(c: float) -> float:
        tot = 0.0
        for s, q, t in segs:
            x = min((2.0 if fixed else 1.0) / (c * s), 25.0) ** 2
            tot += t * (x if q == 1.0 else q * q * math.expm1(x))
        return math.sqrt(tot)

    lo, hi = 1e-3, 1e3
    for _ in range(60):  # bisection in log c: μ falls as c grows
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if mu_at(mid) > mu else (lo, mid)
    return math.sqrt(lo * hi)


def _largest_batch(quantity, target, sigma, n_data, t, at, cache: dict) -> Calibration:
    """The largest batch size B ≤ N (fixed-size batches) at which the bound meets the target: bisection on B
    (the release is post-processing-dominated by a larger B, so the predicate is monotone)."""
    if not meets(at(sigma, 1.0 / n_data, t), target):
        raise ReconRiskError(f"even batch_size=1 exceeds target {target:g} for {quantity} at noise_multiplier={sigma:g}, "
                             f"steps={t}, dataset_size={n_data}; raise the noise or take fewer steps")
    lo, hi = 1, n_data + 1  # meets at lo; hi: fails, or past N
    if meets(at(sigma, 1.0, t), target):
        lo = n_data
    else:
        hi = n_data
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if meets(at(sigma, mid / n_data, t), target):
                lo = mid
            else:
                hi = mid
    b = at(sigma, lo / n_data, t)
    return Calibration(quantity, target, "batch_size", sigma, lo / n_data, t, b, (float(lo), float(min(hi, n_data))),
                       len(cache), "fixed", lo, n_data)


def _check_target(quantity: str, target: float, args: dict) -> float:
    """Refuse targets no release can meet or every release meets; return the blind-guess floor."""
    if quantity == "epsilon":
        return 0.0
    probe = PrivacyAnalysis(Release(1.0, 1.0, 1)).risk(quantity, **args)  # validates the measure's arguments
    base = float(probe.details.get("baseline", 0.0))
    if quantity == "bayes_security":
        if target >= 1.0:
            raise ReconRiskError(f"target must be < 1 for bayes_security; found {target}")
        return 0.0
    floor = 0.0 if quantity in ("rad", "membership_advantage") else base
    if target <= floor:
        raise ReconRiskError(f"target must exceed the measure's blind-guess value {floor:.6g} (reached only without any "
                             f"release); found {target:g}")
    if quantity == "rad" and target >= 1.0 - base:
        raise ReconRiskError(f"target must be < {1.0 - base:.6g} for rad (1 − the largest prior mass); found {target:g}")
    return base


_CURVE = ("reconstruction", "reidentification", "attribute", "membership_tpr")


def _closed_form_sigma(quantity, target, q, t, args, base) -> float | None:
    """The exact smallest σ where one exists (every q = 1: Gaussian DP), else None."""
    if q != 1.0:
        return None
    if quantity == "epsilon":
        return gaussian_sigma(target, args["delta"], steps=t)
    if quantity in _CURVE:
        # Φ(Φ⁻¹(b) + √T/σ) = target  ⇔  σ = √T / (Φ⁻¹(target) − Φ⁻¹(b))
        gap = float(special.ndtri(target) - special.ndtri(base))
        if not gap > 0 or not math.isfinite(math.sqrt(t) / gap):
            raise ReconRiskError(f"target={target!r} is indistinguishable from the baseline {base!r} in floating point; "
                                 "no finite noise multiplier is needed to be told apart from it — raise the target")
        return math.sqrt(t) / gap
    return None


def _sigma_guess(quantity, target, q, t, args, base) -> float:
    """Where the search starts: for ε, the answer on a 10× coarser loss grid (a pessimistic ε on any grid is an
    upper bound, so that σ already meets the target and the search only walks down); for the curve measures the
    central-limit GDP approximation (Bu et al. 2020); σ = 1 otherwise. Only the number of evaluations depends on it."""
    if quantity == "epsilon":
        def coarse_ok(s: float) -> bool:
            return PrivacyAnalysis(Release(s, q, t)).epsilon_on_grid(args["delta"], 1e-3)[1] <= target

        return bisect_log(coarse_ok, 0.1, 1.0, rel_tol=5e-3, name="noise_multiplier")[1]
    if quantity in _CURVE and 0 < base < target < 1:
        mu = float(special.ndtri(target) - special.ndtri(base))
        if mu > 0 and q < 1:
            return 1.0 / math.sqrt(max(math.log1p(mu * mu / (q * q * t)), 1e-12))
        if mu > 0:
            return math.sqrt(t) / mu
    return 1.0


# -- the calibrations of earlier releases, as views of the one calibrator -----------------------------
def noise_multiplier_for_rero(target_rero: float, kappa: float, sample_rate: float, steps: int, *,
                              rel_tol: float = 1e-3) -> Calibration:
    """Smallest σ with certified ReRo ≤ ``target_rero`` at κ: ``calibrate("reconstruction", …)``."""
    kappa = v.probability_open("kappa", kappa)
    v.in_range("target_rero", target_rero, kappa, 1.0)
    return calibrate("reconstruction", target_rero, "noise_multiplier", sample_rate=sample_rate, steps=steps,
                     rel_tol=rel_tol, kappa=kappa)


def noise_multiplier_for_epsilon(epsilon: float, sample_rate: float = 1.0, steps: int = 1, delta: float = 1e-5,
                                 accountant: str = "pld", *, rel_tol: float = 1e-4) -> float:
    """Smallest noise multiplier σ with ε(σ, q, T, δ) ≤ ``epsilon``.

    ``accountant="pld"`` (default): ``calibrate("epsilon", …)`` — the one calibrator, on the certified upper end
    of :meth:`PrivacyAnalysis.epsilon` (exact Gaussian DP at q = 1). ``"rdp"`` / ``"dp_accounting"``: the same
    search on that accountant's ε.
    """
    accountant = v.choice("accountant", accountant, ACCOUNTANTS)
    epsilon = v.epsilon("epsilon", epsilon)
    if accountant == "pld":
        return calibrate("epsilon", epsilon, sample_rate=sample_rate, steps=steps, delta=delta,
                         rel_tol=rel_tol).noise_multiplier
    target = v.epsilon("epsilon", epsilon)
    q = v.sample_rate("sample_rate", sample_rate)
    t = v.steps("steps", steps)
    delta = v.probability_open("delta", delta)
    rel_tol = v.in_range("rel_tol", rel_tol, 0.0, 1.0)
    return _smallest(lambda s: eps_of(s, q, t, delta, accountant) <= target, 1.0, rel_tol, MIN_NOISE_MULTIPLIER,
                     MAX_NOISE_MULTIPLIER, "noise_multiplier")[1]
