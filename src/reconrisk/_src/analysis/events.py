"""Certified answers for any ``dp_accounting`` ``DpEvent`` that has a privacy-loss distribution.

:class:`EventAnalysis` is what :meth:`PrivacyAnalysis.from_dp_event
<reconrisk._src.analysis.privacy.PrivacyAnalysis.from_dp_event>` returns for events
that are not Gaussian DP-SGD (those become a :class:`~reconrisk._src.release.Release`
and get the full analysis). It composes, on a loss grid ``h``, a pessimistic
and an optimistic privacy-loss distribution (PLD) of the event, both
directions, and answers what :class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis`
answers for a release — ``epsilon``, ``delta``, ``rero``, ``tradeoff`` (a
:class:`~reconrisk._src.measures.tradeoff.TradeOff`), ``risk`` (every measure of
``reconrisk risk``, through :mod:`reconrisk._src.measures.risk`) and ``gdp_mu`` — as
two-sided :class:`~reconrisk._src.results.Bound` s.

**Refinement.** The first grid is ``value_discretization`` (default
``EVENT_DISCRETIZATION``); a question whose bracket is wider than its target
(``rel_tol`` for ε, δ and ReRo, an absolute ``tol`` for the curve and the δ-based
risks) halves the grid, at most ``MAX_EVENT_HALVINGS`` times and while the
composed distribution stays under ``MAX_EVENT_ATOMS`` atoms; each grid is composed
once and kept, and ``converged`` says whether the target was met (both ends are
certified either way).

Where the distributions come from:

* Gaussian steps (plain, Poisson-sampled, sampled without replacement): the
  reconrisk engine (:func:`reconrisk._src.accounting.pld.step_pmf`, the
  without-replacement step being the Poisson pair at the event's noise
  multiplier, see :meth:`Release.dominating <reconrisk._src.release.Release.dominating>`);
* every other mechanism: its own module's ``pld`` (:mod:`reconrisk._src.mechanisms`): finite supports
  (discrete Laplace, randomized response) exactly, losses rounded up or down; Laplace,
  Poisson-sampled Laplace and mixtures of Gaussians from ``dp_accounting``'s public privacy-loss
  classes, connect-the-dots when pessimistic and losses rounded down when optimistic (every
  δ(ε) = E_P[(1 − e^{ε−L})₊] is non-decreasing in each loss, so rounding down can only lower the
  curve, and composition keeps the order); composed by reconrisk (FFT round-off bounded as for the
  Gaussian engine). A step with no PLD is not analysed here: the dispatch answers from the RDP curve.

Departures: ``dp_accounting``'s own discretisation carries no a-posteriori
round-off bound (it is float64 arithmetic on closed forms); the brackets are
as certified as those. The optimistic *add* direction exists only for the
``dp_accounting`` pieces; when Gaussian steps are composed in, ``lower`` comes
from the remove direction (as in :class:`PrivacyAnalysis`). Events that mix the
add/remove and replace-one relations are refused. ``dp_accounting`` builds the
distribution of a mixture of Gaussians slowly (about a minute per side at
h = 1e-4 on a 2-core machine), and every refinement of such an event doubles it.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from .. import _validate as v
from ..accounting.epsilon import pld_floor
from ..accounting.pmf import PMF
from ..accounting.rdp import DEFAULT_ORDERS
from ..errors import ReconRiskError
from ..measures.rero import DEFAULT_REL_TOL
from ..measures.tradeoff import CURVE_TOL, TradeOff
from ..priors import resolve_kappa
from ..mechanisms.base import Step
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.samplers import FixedBatch
from ..mechanisms.traverse import steps as event_steps
from ..results import Bound
from .base import RELEASE_ONLY, Analysis
from .events_risk import event_prior_success, event_total_variation

#: First loss grid of an event analysis.
EVENT_DISCRETIZATION = 1e-4
#: A question halves the grid at most this many times, and not past this many atoms per distribution.
MAX_EVENT_HALVINGS = 5
MAX_EVENT_ATOMS = 400_000
#: Default relative width targets of ε / δ and of ReRo (the latter the release engine's own default).
EPSILON_REL_TOL = 1e-2
#: Losses kept in compositions (beyond: +∞ when pessimistic, the cap when optimistic).
EVENT_LOSS_CAP = 250.0

def relation_of(steps) -> str:
    """The one neighbouring relation of ``steps`` (a step without amplification joins either; none: add/remove)."""
    rel = {s.relation for s in steps} - {None}
    if len(rel) > 1:
        raise ReconRiskError("the event mixes add/remove events (Poisson sampling, Laplace) with replace-one events "
                             "(sampling without replacement, randomized response); one guarantee needs one relation")
    return rel.pop() if rel else "add_remove"


class EventAnalysis(Analysis):
    """Two-sided certified (ε, δ), ReRo, trade-off and risk values of a ``DpEvent`` (see the module docstring).

    ``steps``: the event already read by :func:`reconrisk._src.mechanisms.traverse.steps` (what
    :func:`reconrisk._src.analysis.dispatch.analyse` passes, so the event is walked once); read here otherwise.
    ``event`` may be None when ``steps`` are given (a run described by steps alone).

    >>> import dp_accounting as dpa
    >>> a = EventAnalysis(dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(2.0), 3))
    >>> b = a.epsilon(1e-6, two_sided=True); b.lower <= b.upper
    True
    >>> r = a.risk("membership_advantage"); r.lower <= r.upper
    True
    """

    release = None  # not a DP-SGD release: quantities that need σ, q, T are refused by name (:meth:`supports`)

    def __init__(self, event, *, value_discretization: float | None = None, steps=None,
                 _symmetric: bool = False) -> None:
        self.source = event
        self.steps: tuple[Step, ...] = event_steps(event) if steps is None else tuple(steps)
        if not self.steps:
            raise ReconRiskError("the event holds no privacy-relevant step (only NoOpDpEvent)")
        for s in self.steps:
            if not isinstance(s, Step):
                raise ReconRiskError(f"steps must be reconrisk Steps; found {type(s).__name__}")
            if not s.never_sampled and not s.mechanism.has_pld(s.sampler):
                raise ReconRiskError(f"{s.event_name} has no privacy-loss distribution (analyse it through its RDP "
                                     "curve: reconrisk._src.analysis.dispatch.analyse)")
        self.relation = relation_of(self.steps)
        self.h = EVENT_DISCRETIZATION if value_discretization is None else v.positive(
            "value_discretization", value_discretization)
        self.has_gaussian = any(isinstance(s.mechanism, Gaussian) for s in self.steps)
        self._cache: dict[tuple[float, bool, str], PMF] = {}
        self._memo: dict = {}
        #: True for the pair view (:attr:`pair`): steps sampled without replacement compose the symmetrised curve
        self.symmetric = bool(_symmetric)
        self._pair: EventAnalysis | None = None

    @property
    def pair(self) -> "EventAnalysis":
        """The analysis that answers questions about *pairs* of neighbouring data sets (ε, δ, the trade-off
        curve, membership measures, μ-GDP).

        Without steps sampled without replacement: the analysis itself. With them (replace-one): a view in which
        each such step contributes the PLD of the symmetrised curve C_q = min{f_q, f_q⁻¹}** (Dong, Roth & Su
        2022, Thm 4.2; :func:`reconrisk._src.accounting.pld.symmetrised`), because a replace-one pair reaches both
        orientations of the step's pair and may switch between them adaptively; the event's other replace-one
        steps (plain Gaussian, randomized response) have symmetric curves already, so their remove PLD stands
        for both. ReRo keeps the one-reference argument of :meth:`rero` (the run in which the target's slot is
        never sampled), as :attr:`reconrisk._src.analysis.privacy.PrivacyAnalysis.pair` does for releases.
        """
        if self.symmetric or not any(isinstance(s.sampler, FixedBatch) for s in self.steps):
            return self
        if self._pair is None:
            self._pair = EventAnalysis(self.source, value_discretization=self.h, steps=self.steps, _symmetric=True)
        return self._pair

    def __repr__(self) -> str:
        return f"EventAnalysis({self.source if self.source is not None else self.label!r}, h={self.h:g})"

    def describe(self) -> dict:
        """The event as JSON-ready keys (its ``dp_accounting`` repr and the neighbouring relation)."""
        src = repr(self.source) if self.source is not None else self.label
        return {"dp_event": src, "relation": self.relation}

    def _refusal(self, question: str) -> str | None:
        if question in RELEASE_ONLY:
            return f"{RELEASE_ONLY[question]} reads a DP-SGD release (sigma, q, T); not defined for the event {self.name}"
        if question == "gdp_mu_upper":
            for s in self.steps:
                if s.gdp_mu_squared() is None:
                    return f"no Gaussian-DP upper bound is known for {s.event_name} (the lower end of gdp_mu stands)"
        return None

    @property
    def name(self) -> str:
        """The first step that is not a Gaussian step (what a refusal names), else the event's class name."""
        for s in self.steps:
            if not isinstance(s.mechanism, Gaussian):
                return s.event_name
        return type(self.source).__name__ if self.source is not None else "steps"

    @property
    def label(self) -> str:
        """The event in a few words for a table title: ``5×LaplaceDpEvent(b=10) + 20×PoissonSampled Gaussian(s=1, q=0.1)``."""
        return " + ".join(f"{s.count}×{s.mechanism.event_label(s.sampler)}" for s in self.steps)

    @property
    def composition_count(self) -> int:
        """Composed distributions made so far (all grids, both sides, both directions)."""
        return len(self._cache)

    def directions(self, pessimistic: bool) -> tuple[str, ...]:
        """Directions with a distribution on this side (optimistic *add* only without Gaussian steps)."""
        if self.symmetric:  # the pair view: one symmetric distribution stands for both directions
            return ("remove",)
        return ("remove", "add") if pessimistic or not self.has_gaussian else ("remove",)

    def pmf(self, h: float | None = None, *, pessimistic: bool, direction: str = "remove") -> PMF:
        """The composed PLD of the event on grid ``h`` (default the first grid), one side, one direction; cached."""
        h = self.h if h is None else float(h)
        key = (h, bool(pessimistic), v.choice("direction", direction, ("remove", "add")))
        if key in self._cache:
            return self._cache[key]
        if direction not in self.directions(pessimistic):
            raise ReconRiskError("the optimistic add direction is not available for Gaussian steps; use direction='remove'")
        total: PMF | None = None
        for s in self.steps:
            if s.never_sampled:
                continue  # the target is never used: the pair is identical, the step changes nothing
            # in the pair view a step sampled without replacement reads its symmetrised curve (see :attr:`pair`);
            pair = self.symmetric and isinstance(s.sampler, FixedBatch)
            step = s.pld(h, pessimistic=pessimistic, direction="symmetric" if pair else direction)
            count = s.count
            part = step.self_compose(count, EVENT_LOSS_CAP)
            total = part if total is None else total.compose(part, EVENT_LOSS_CAP)
        if total is None:  # every step is never sampled: loss 0 with probability 1 (ε = 0, δ = 0, ReRo = κ)
            total = PMF(h, 0, np.ones(1), 0.0, bool(pessimistic), 0.0)
        self._cache[key] = total
        return total

    def can_refine(self, h: float) -> bool:
        """Whether a question may halve grid ``h``: within ``MAX_EVENT_HALVINGS`` of the first grid and with the
        distributions composed at ``h`` under half of ``MAX_EVENT_ATOMS``."""
        sizes = [p.probs.size for (hh, *_), p in self._cache.items() if hh == h]
        return h / 2 >= self.h / 2**MAX_EVENT_HALVINGS * (1 - 1e-9) and 2 * max(sizes, default=0) <= MAX_EVENT_ATOMS

    def _refined(self, compute, target: float):
        """``compute(h) → (lower, upper, width)`` on the first grid, halved until ``width ≤ target`` or no further."""
        h = self.h
        while True:
            out = compute(h)
            if out[-1] <= target or not self.can_refine(h):
                return h, out, bool(out[-1] <= target)
            h /= 2

    def _both(self, fn, pessimistic: bool, h: float) -> float:
        return max(fn(self.pmf(h, pessimistic=pessimistic, direction=d)) for d in self.directions(pessimistic))

    # -- (ε, δ) ------------------------------------------------------------------------------------
    def delta(self, epsilon: float, *, two_sided: bool = False, rel_tol: float | None = None) -> Bound:
        """δ(ε), the max over both directions: ``upper`` from the pessimistic PLDs, ``lower`` from the optimistic ones
        (with ``two_sided``). The grid is refined until (upper − lower) ≤ rel_tol·upper (default
        ``EPSILON_REL_TOL``) either way, so both readings give the same ``upper``."""
        eps = v.real("epsilon", epsilon)
        rel_tol = v.positive("rel_tol", EPSILON_REL_TOL if rel_tol is None else rel_tol)
        two_sided = bool(two_sided)
        if self.pair is not self:  # steps without replacement: a pair question (see :attr:`pair`)
            return self.pair.delta(eps, two_sided=two_sided, rel_tol=rel_tol)

        def at(h):
            up = min(self._both(lambda p: float(p.delta([eps])[0]), True, h), self._alt_delta(eps))
            lo = min(self._both(lambda p: float(p.delta([eps])[0]), False, h), up)
            return lo, up, up - lo

        h, (lo, up, w), ok = self._memoised(("delta", eps, rel_tol),
                                            lambda: self._refined(at, rel_tol * at(self.h)[1]))
        lo = lo if two_sided else None
        return Bound("delta", lo, up, method="pld", converged=ok if two_sided else None,
                     formula="hockey-stick divergence of the pessimistic (upper) and optimistic (lower) PLDs of the event"
                             + _ALT_NOTE,
                     details={"epsilon": eps, "discretization": h, "relation": self.relation})

    def epsilon(self, delta: float, *, two_sided: bool = False, rel_tol: float | None = None) -> Bound:
        """The smallest ε with the event (ε, δ)-DP, both directions, bracketed by the two PLDs (refined as :meth:`delta`;
        ``lower`` with ``two_sided``)."""
        d = v.probability_open("delta", delta)
        rel_tol = v.positive("rel_tol", EPSILON_REL_TOL if rel_tol is None else rel_tol)
        two_sided = bool(two_sided)
        if self.pair is not self:  # steps without replacement: a pair question (see :attr:`pair`)
            return self.pair.epsilon(d, two_sided=two_sided, rel_tol=rel_tol)

        def at(h):
            up = min(self._both(lambda p: p.epsilon(d), True, h), self._alt_epsilon(d))
            lo = min(self._both(lambda p: p.epsilon(d), False, h), up)
            return lo, up, up - lo

        h, (lo, up, w), ok = self._memoised(("epsilon", d, rel_tol),
                                            lambda: self._refined(at, rel_tol * max(at(self.h)[1], 1e-12)))
        lo = lo if two_sided else None
        return Bound("epsilon", lo, up, method="pld", converged=ok if two_sided else None,
                     formula="smallest eps with delta(eps) <= delta on the pessimistic (upper) and optimistic (lower) PLDs"
                             + _ALT_NOTE, details={"delta": d, "discretization": h, "relation": self.relation})

    # -- below the PLD's floor: pure DP and RDP ----------------------------------------------------
    def _floor(self, h: float) -> float:
        """The smallest δ the pessimistic PLDs on grid h can certify (infinity mass + round-off allowance)."""
        return self._both(pld_floor, True, h)

    def _pure_epsilon(self) -> float:
        """Σ count·ε_step when every step is pure ε-DP (basic composition), else inf (each mechanism's pure_epsilon)."""
        return float(sum(s.pure_epsilon() for s in self.steps))

    def _rdp_curve(self) -> np.ndarray:
        """The event's RDP curve on ``DEFAULT_ORDERS`` (sum over steps, each mechanism's rdp; inf where unknown)."""
        if "rdp" not in self._memo:
            self._memo["rdp"] = sum(s.rdp(DEFAULT_ORDERS) for s in self.steps)
        return self._memo["rdp"]

    def _alt_epsilon(self, d: float) -> float:
        """min(pure-DP composition, RDP conversion) at δ = d: both certified, used below the PLD's floor."""
        o, e = DEFAULT_ORDERS, self._rdp_curve()
        with np.errstate(invalid="ignore", over="ignore"):
            c = e + np.log1p(-1.0 / o) - (math.log(d) + np.log(o)) / (o - 1.0)
        rdp = float(np.nanmin(c)) if np.isfinite(c).any() else math.inf
        return max(0.0, min(self._pure_epsilon(), rdp))

    def _alt_delta(self, eps: float) -> float:
        """0 at ε ≥ the pure-DP composition, else the RDP conversion's δ (1 where no curve is known)."""
        if eps >= self._pure_epsilon():
            return 0.0
        o, e = DEFAULT_ORDERS, self._rdp_curve()
        with np.errstate(invalid="ignore", over="ignore"):
            ld = (o - 1.0) * (e - eps + np.log1p(-1.0 / o)) - np.log(o)
        return float(min(1.0, math.exp(min(0.0, float(np.nanmin(ld)))))) if np.isfinite(ld).any() else 1.0

    # -- ReRo, the curve, the risks ----------------------------------------------------------------
    def _blowup(self, kappa: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
        up = np.max([self.pmf(h, pessimistic=True, direction=d).blowup(kappa) for d in self.directions(True)], axis=0)
        lo = np.minimum(self.pmf(h, pessimistic=False, direction="remove").blowup(kappa), up)
        return lo, up

    def rero(self, kappa: float | None = None, *, prior_size: int | None = None, **options) -> Bound:
        """Certified ReRo B_κ = sup{P(E) : Q(E) ≤ κ} of the remove pair (Hayes, Mahloujifar & Balle 2023, Cor. 4).

        ``upper`` is the larger of both directions' pessimistic values (sound whichever order an event's
        relation makes the worst), ``lower`` the remove direction's optimistic value; refined until
        (upper − lower) ≤ ``rel_tol``·upper (an option; default: the release engine's 1 %). ``method``: ``"pld"``
        only (the others read σ, q, T: refused with :meth:`supports`' reason).
        """
        method, rel_tol = options.pop("method", "pld"), options.pop("rel_tol", None)
        if options:
            raise ReconRiskError(f"an event's rero takes method and rel_tol; found {sorted(options)[0]}")
        if method != "pld":
            self.require("rero_" + v.choice("method", method, ("pld", "closed_form", "rdp", "mc")))
        k = resolve_kappa(kappa, prior_size)
        rel_tol = v.positive("rel_tol", DEFAULT_REL_TOL if rel_tol is None else rel_tol)

        def at(h):
            lo, up = self._blowup(np.array([k]), h)
            return float(lo[0]), float(up[0]), float(up[0] - lo[0]) / max(float(up[0]), 1e-300)

        h, (lo, up, _), ok = self._memoised(("rero", k, rel_tol), lambda: self._refined(at, rel_tol))
        det = {"kappa": k, "discretization": h, "relation": self.relation}
        if prior_size is not None:
            det["prior_size"] = prior_size
        return Bound("reconstruction", lo, up, method="pld", converged=ok,
                     formula="B_kappa = inf_eps [e^eps kappa + delta(eps)] on the pessimistic and optimistic PLDs of the "
                             "event (Hayes, Mahloujifar & Balle 2023, Cor. 4)", details=det)

    def rero_many(self, kappas, **kw) -> list[Bound]:
        """:meth:`rero` at many κ (each refines on the grids the others composed)."""
        ks, _ = v.kappa_array("kappas", kappas)
        return [self.rero(float(k), **kw) for k in np.atleast_1d(ks)]

    def tradeoff(self, alphas, *, tol: float | None = None, **options):
        """Bracket on the trade-off curve f(α) = 1 − B_α of the remove pair (Dong, Roth & Su 2022), as a
        :class:`~reconrisk._src.measures.tradeoff.TradeOff`; refined until its width is ≤ ``tol`` (default ``CURVE_TOL``).
        ``method``: ``"auto"`` or ``"pld"`` (the closed forms read σ, q, T: refused)."""
        method = options.pop("method", "auto")
        if options:
            raise ReconRiskError(f"an event's tradeoff takes tol and method; found {sorted(options)[0]}")
        if v.choice("method", method, ("auto", "pld", "closed_form")) == "closed_form":
            self.require("rero_closed_form")
        a, _ = v.kappa_array("alphas", alphas)
        tol = CURVE_TOL if tol is None else v.positive("tol", tol)
        if self.pair is not self:  # steps without replacement: a pair question (see :attr:`pair`)
            return self.pair.tradeoff(a, tol=tol)

        def at(h):
            lo, up = self._blowup(a, h)
            return lo, up, float(np.max(up - lo))

        h, (lo, up, w), ok = self._refined(at, tol)
        b_lo = np.clip(np.nextafter(1.0 - up, -np.inf), 0.0, 1.0)  # 1 − B rounded outward
        b_up = np.clip(np.nextafter(1.0 - lo, np.inf), 0.0, 1.0)
        return TradeOff(a, b_lo, b_up, lo, up, "pld", self.describe(),
                        {"discretization": h, "max_width": w, "target_width": tol, "converged": ok})

    def total_variation(self, tol: float) -> tuple[float, float, dict]:
        """[lower, upper, details] of TV = δ(0) (:func:`reconrisk._src.analysis.events_risk.event_total_variation`)."""
        return event_total_variation(self, tol)

    def prior_success(self, prior_values, counts, tol: float):
        """The best success S(π) over a finite prior, bracketed (:func:`reconrisk._src.analysis.events_risk.event_prior_success`)."""
        return event_prior_success(self, prior_values, counts, tol)

    def gdp_mu(self, alphas=None) -> Bound:
        """Certified range of the smallest μ with the event μ-Gaussian-DP (Dong, Roth & Su 2022).

        ``lower`` = max over a grid of α of Φ⁻¹(1 − α) − Φ⁻¹(f_upper(α)), as for a release. ``upper`` =
        √(Σ count·μ_leaf²) (Gaussian DP composes exactly): a Gaussian step of noise multiplier s (Poisson-
        sampled or not, or without replacement in ``dp_accounting``'s units) is 1/s-GDP (subsampling is a
        garbling); a pure ε-DP step (Laplace 1/b, Poisson-sampled Laplace, discrete Laplace a·Δ, randomized
        response log(1 + k(1 − p)/p)) is μ_ε-GDP with μ_ε = 2Φ⁻¹(e^ε/(1 + e^ε)) (f_{ε,0} meets G_μ at its
        kink and lies above it elsewhere by convexity). A mixture of Gaussians has no such bound here:
        ``upper`` is None then.
        """
        a = np.logspace(-12, math.log10(0.5), 97) if alphas is None else np.asarray(alphas, dtype=float)
        t = self.pair.tradeoff(a)  # a pair question (see :attr:`pair`); the upper end below holds for both
        with np.errstate(divide="ignore", invalid="ignore"):
            cand = special.ndtri(1.0 - t.alpha) - special.ndtri(np.clip(t.beta.upper, 1e-300, 1.0))
        lo = max(0.0, float(np.nanmax(np.where(np.isfinite(cand), cand, -np.inf))))
        mus = [s.gdp_mu_squared() for s in self.steps]
        up = None if any(m is None for m in mus) else math.sqrt(sum(mus))
        return Bound("gdp_mu", lo if up is None else min(lo, up), up, method="tradeoff", converged=None,
                     formula="lower: max_a Phi^-1(1-a) - Phi^-1(f_upper(a)); upper: sqrt(sum count * mu_leaf^2) "
                             "(Gaussian DP composes; pure eps-DP is 2 Phi^-1(e^eps/(1+e^eps))-GDP)",
                     details={"alphas": int(t.alpha.size), "discretization": t.details["discretization"]})


_ALT_NOTE = ("; the upper end is also the basic composition of pure-DP steps and the RDP conversion (the only "
             "answer near the PLDs' floor: infinity mass, round-off) min_a eps(a) + log((a-1)/a) - (log delta + log a)/(a-1) "
             "(Canonne, Kamath & Steinke 2020, Prop. 12), the smallest kept")
