"""The privacy of one release, analysed once: :class:`PrivacyAnalysis`.

Modelled on ``dp_accounting``'s ``PLDAccountant`` (events are composed once,
then asked many questions) and on riskcal's "build the PLD once, query it many
times". Built from a :class:`~reconrisk._src.release.Release`, the analysis

* composes the pessimistic and optimistic privacy-loss distributions (PLDs)
  of the release **lazily and once per discretisation level** — every
  question that needs the distributions at a loss grid ``h`` asks
  :meth:`PrivacyAnalysis.pmf`, which composes on the first request and serves
  the cached distribution afterwards (a finer grid is composed only when a
  question needs more precision than the cached ones give);
* uses the exact closed forms where they apply (every q = 1: Gaussian DP with
  μ = √(Σ T_i/σ_i²); T = 1: the subsampled Gaussian's exact curve);
* answers every question reconrisk asks of a release, each as a
  :class:`~reconrisk._src.results.Bound`: :meth:`epsilon` (δ) and :meth:`delta`
  (ε) with a certified two-sided range, :meth:`rero` (κ) (Hayes, Mahloujifar &
  Balle 2023, Cor. 4), the whole trade-off curve :meth:`tradeoff` (α)
  (Dong, Roth & Su 2022), every risk measure of ``reconrisk risk``
  (:meth:`risk`), and a certified Gaussian-DP μ range (:meth:`gdp_mu`).

``bound``, ``risk``, ``tradeoff``, ``calibrate``, ``report``, ``curve``, the
Opacus accountant and the sweep all ask an analysis; none of them composes a
PLD itself. :attr:`compositions` counts the compositions per
(grid, side, direction), so a test can hold the "once per level" promise.

Soundness does not depend on the cache: a pessimistic distribution composed
with a larger loss cap or a smaller round-off budget than a question needs
is still pessimistic (more atoms kept, less slack), so serving it is sound,
and an optimistic one likewise stays below the truth.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from dataclasses import replace
from typing import Any

import numpy as np
from scipy import special

from .. import _validate as v
from ..accounting import pld as _pld
from ..accounting import pld_schedule as _sched
from ..accounting.epsilon import (EPSILON_CAP, PLD_DISCRETIZATION, RDP_NEAR_FLOOR, SIGMA_GRID_RANGE,
                                  epsilon_from_pmfs, epsilon_without_grid, grid_refusal, optimistic_epsilon, pld_floor,
                                  pld_grid, rdp_applies, rdp_below_floor, rdp_delta)
from ..accounting.gaussian import gaussian_delta, release_gdp_mu
from ..accounting.pmf import REFINE_ABOVE
from ..errors import ReconRiskError
from ..measures.rero import DEFAULT_REL_TOL, METHODS as RERO_METHODS, has_closed_form
from ..measures.tradeoff import clt_mu
from ..priors import resolve_kappa
from ..release import Release, Segment, gaussian_release
from ..results import Bound
from .base import Analysis, with_details
from .privacy_rero import rero_bounds, tradeoff as release_tradeoff
from .privacy_risk import release_prior_success, release_total_variation
from .privacy_tiny import tiny_delta, tiny_epsilon

#: A composition keeps at least the losses a question about κ ≥ 1e-12 needs (log(1/κ) + 40), so that
#: questions at smaller priors than the first one asked reuse it.
MIN_LOSS_CAP = 40.0 - math.log(1e-12)
#: Below this δ ε is read from tilted compositions without composing the untilted ones first (whose floor,
#: their infinity mass and round-off allowance, is ~1e-11 or more: they could only say +∞ here).
TILT_BELOW = 1e-9
#: A two-sided tiny-δ bracket narrower than this (relative) is not held against RDP (which could gain < its width).
RDP_SKIP_WIDTH = 1e-4
#: Schedules with at most this many distinct (σ, q) are composed segment by segment, exactly; beyond it
#: the distributions are the certified grouping's (:attr:`PrivacyAnalysis.groups`).
SEGMENTWISE_MAX = 8
#: A grouped schedule's two-sided ε bracket wider than this (relative) regroups it (:meth:`PrivacyAnalysis.regroup`).
GROUPED_TARGET = 0.01


class PrivacyAnalysis(Analysis):
    """Everything reconrisk certifies about one :class:`~reconrisk._src.release.Release`, composed once.

    >>> from reconrisk import Release
    >>> a = PrivacyAnalysis(Release(1.0, 0.01, 1000))
    >>> b = a.rero(prior_size=100)
    >>> b.lower <= b.upper, a.composition_count
    (True, 2)
    >>> _ = a.risk("reconstruction", prior_size=100); a.composition_count  # the same distributions, asked again
    2
    """

    def __init__(self, release: Release, *, _symmetric: bool = False) -> None:
        #: the Poisson-subsampled Gaussian release whose remove pair is the per-step reference pair of
        #: ``source`` (:meth:`~reconrisk._src.release.Release.dominating`): itself, or σ/2 for fixed-size batches
        self.release = gaussian_release(release, "a privacy analysis")  # (refuses anything but a Gaussian Release)
        #: the release as it was run (its sampler included)
        self.source = release.as_run
        #: True for the pair view of a fixed-batch release (:attr:`pair`): its distributions are the
        #: composition of the symmetrised per-step curve C_q, not of the remove pair
        self.symmetric = bool(_symmetric)
        self._pair: PrivacyAnalysis | None = None
        self._pmfs: dict[tuple, tuple[float, float, Any]] = {}
        self._memo: dict[tuple, Any] = {}
        self._floor_scale = 1.0  # the grouped grid floor's scale, lowered by :meth:`regroup`
        self._regroups = 0  # refinements made (:meth:`regroup`)
        self._tiny_details: dict[tuple, dict] = {}  # the tilts of the tiny-δ questions (details of their bounds)
        #: compositions made, per (h, pessimistic, direction, options, round-off threshold)
        self.compositions: Counter = Counter()

    def __repr__(self) -> str:
        return f"PrivacyAnalysis({self.source!r}, compositions={self.composition_count})"

    @property
    def pair(self) -> "PrivacyAnalysis":
        """The analysis that answers questions about *pairs* of neighbouring data sets.

        Poisson and full-batch releases: the analysis itself (add/remove neighbours; each pair keeps
        one orientation for the whole run, and ε, δ take the worse of the two directions).

        Fixed-size batches (replace-one): two analyses are needed, and this is the second.

        * **One reference** — ReRo, re-identification, attribute inference and the reconstruction
          advantage (:meth:`rero`, :meth:`risk` of those measures): Hayes, Mahloujifar & Balle's
          bound compares the run with the target against *one* reference law, the run in which the
          target's slot is never sampled. Against it every step, whatever the adversary's gradients,
          has trade-off ≥ f_q = q·G_{2/σ} + (1 − q)·Id (Dong, Roth & Su 2022, Thm 4.2) — the Poisson
          remove pair at σ/2, composed T times: this analysis (``self``). A second reference is sound
          too: the target's slot kept and its clipped gradient replaced by 0 (the *zero-out*
          reference, sensitivity C, the selection revealed: :mod:`reconrisk._src.measures.rero_zeroout`);
          :meth:`rero` and the one-reference risks report the smaller of the two
          (``details["reference"]``).
        * **Pairs** — ε, δ, the trade-off curve, membership TPR, membership advantage, Bayes
          security and the Gaussian-DP μ (:meth:`epsilon`, :meth:`delta`, :meth:`tradeoff`,
          :meth:`gdp_mu`, :meth:`risk` of those measures) are statements about two neighbouring
          data sets, and a replace-one pair reaches *both* orientations of the step's pair (target
          +C, reference −C, the others +C: the target's run is the unshifted law and the
          reference's the mixture), chosen step by step from what was released so far. Each step is
          C_q-DP with C_q = min{f_q, f_q⁻¹}** symmetric (Dong, Roth & Su 2022, Thm 4.2), so the
          adaptive composition theorem (their Thm 3.2) makes the run C_q^{⊗T}-DP: this view composes
          the symmetrised PLD (:func:`reconrisk._src.accounting.pld.symmetrised`).

        Both ends of a pair bracket are certified for C_q^{⊗T}, the tightest curve that holds for
        every pair and every adaptive choice of orientation under this analysis; the upper ends bound
        every real adversary. The lower end is a lower bound on C_q^{⊗T} itself, not necessarily
        one that a single real pair attains: at T = 1 no pair reaches the straight segment of C_q
        (the convex hull), where the largest real TPR is the larger of the two orientations' curves.
        """
        if self.symmetric or self.source.sampler != "fixed":
            return self
        if self._pair is None:
            self._pair = PrivacyAnalysis(self.source, _symmetric=True)
        return self._pair

    @classmethod
    def from_dp_event(cls, event, *, value_discretization: float | None = None) -> Analysis:
        """The analysis of a ``dp_accounting`` ``DpEvent``.

        Gaussian DP-SGD events (Gaussian, Poisson-sampled or sampled-without-replacement
        Gaussian, self-composed, composed) become a :class:`~reconrisk._src.release.Release`
        and get the full analysis; other events ``dp_accounting`` can turn into a
        privacy-loss distribution (Laplace, Poisson-sampled Laplace, randomized
        response, discrete Laplace, mixtures of Gaussians) get an
        :class:`~reconrisk._src.analysis.events.EventAnalysis` (pessimistic and optimistic
        distributions, so brackets stay two-sided); anything else is refused in one
        line naming the event. The event is walked once (:func:`reconrisk._src.analysis.dispatch.analyse_dp_event`).
        """
        return Analysis.from_dp_event(event, value_discretization=value_discretization)

    @staticmethod
    def from_guarantee(source: str, **guarantee) -> Analysis:
        """What a guarantee alone certifies (no mechanism): a :class:`~reconrisk._src.analysis.guarantee.GuaranteeAnalysis`.

        ``source`` ``"dp"`` (``epsilon``, ``delta``), ``"rdp"`` (``order``, ``epsilon``: the points of a curve)
        or ``"zcdp"`` (``rho``), as ``reconrisk convert``; the same questions (``rero``, ``tradeoff``, ``risk``,
        ``delta``, ``epsilon``) are answered from the tightest trade-off curve of the guarantee, upper ends only.
        """
        return Analysis.from_guarantee(source, **guarantee)

    # -- the contract's refusals ---------------------------------------------------------------
    def _refusal(self, question: str) -> str | None:
        if question == "rero_closed_form" and not has_closed_form(self.release):
            segs = self.release.segments
            return ("method 'closed_form' needs sample_rate == 1 (full batch) or steps == 1; "
                    f"found sample_rate={[s.sample_rate for s in segs]}, steps={self.release.steps}")
        return None

    def describe(self) -> dict[str, Any]:
        """The release as it was run (its sampler included), as JSON-ready keys."""
        return self.source.to_dict()

    def prefix(self, steps: int) -> "PrivacyAnalysis":
        """The analysis of the run's first ``steps`` steps (one segment; the same σ, q and view): a garbling of
        the whole run, so every ReRo or curve bound of it is a lower end for the whole run."""
        s = self.release.segments[0]
        if self.symmetric:  # the pair view of the same fixed-batch release, shortened
            return PrivacyAnalysis(Release(2.0 * s.noise_multiplier, s.sample_rate, steps, sampler="fixed")).pair
        return PrivacyAnalysis(Release(s.noise_multiplier, s.sample_rate, steps))

    # -- the distributions -------------------------------------------------------------------
    @property
    def composition_count(self) -> int:
        """Number of PLD compositions made so far (all grids, both sides, both directions)."""
        return int(sum(self.compositions.values()))

    def pmf(self, h: float, *, pessimistic: bool, direction: str = "remove", loss_cap: float = math.inf,
            slack_budget: float = 0.0, **options):
        """The composed PLD of the release on loss grid ``h``: composed on first request, then served.

        The cache key is the grid, the side, the direction, the options and the
        round-off threshold (``slack_budget``: above it the engine recomputes the
        amplified FFT frequencies, which is exact but can cost 50× the composition
        at small σ, so each question keeps its own threshold and the numbers
        never depend on which question came first). A cached distribution serves
        a request whose loss cap is at most its own (a larger cap keeps more
        atoms: more accurate, never less sound); otherwise it is composed again
        with the larger cap (counted).
        """
        if self.symmetric:  # the pair view: one symmetric distribution stands for both directions
            direction = "symmetric"
        need = slack_budget if slack_budget > 0 else REFINE_ABOVE
        key = (float(h), bool(pessimistic), direction, tuple(sorted(options.items())), need)
        hit = self._pmfs.get(key)
        if hit is not None and hit[0] >= loss_cap:
            return hit[2]
        cap = max(loss_cap, MIN_LOSS_CAP if loss_cap < EPSILON_CAP else loss_cap)
        if hit is not None:
            cap = max(cap, hit[0])
        budget = need
        groups = self.groups
        if groups is None:
            pmf = _pld.compose_segments(self._merged_segments, h, pessimistic=pessimistic, direction=direction,
                                        loss_cap=cap, slack_budget=budget, **options)
        else:  # many distinct steps: grouped at dominating / dominated representatives, one spectral product
            pmf = _sched.compose_groups(groups, h, pessimistic=pessimistic, direction=direction, loss_cap=cap,
                                        slack_budget=budget, floor_scale=self._floor_scale, **options)
        self.compositions[key] += 1
        self._pmfs[key] = (cap, budget, pmf)
        return pmf

    @functools.cached_property
    def _distinct(self) -> tuple:
        """(σ, q, count) of the release's distinct steps (:func:`~reconrisk._src.accounting.pld_schedule.distinct_steps`),
        computed once for the merged segments, the grouping and its refinement."""
        return _sched.distinct_steps(self.release.segments)

    @property
    def _merged_segments(self) -> tuple:
        """The segments with equal (σ, q) merged wherever they occur (composition commutes: a schedule that
        alternates a few steps — Flower's varying cohorts, a cycling LambdaNoise — composes each once)."""
        if not hasattr(self, "_merged"):
            sig, q, n = self._distinct
            self._merged = (self.release.segments if sig.size == len(self.release.segments) else
                            tuple(Segment(float(a), float(b), int(c)) for a, b, c in zip(sig, q, n)))
        return self._merged

    @property
    def groups(self):
        """The certified grouping of a schedule with many distinct steps
        (:func:`~reconrisk._src.accounting.pld_schedule.group_steps`), or None where the segments are composed one
        by one (at most ``SEGMENTWISE_MAX`` distinct (σ, q), merged wherever they occur: composition commutes).
        Both sides of every bracket read the same groups: the pessimistic one composes each at its smallest σ and
        largest q (a pair every member is a post-processing of), the optimistic one at its largest σ and
        smallest q (a post-processing of every member), so each end is certified for the schedule as run."""
        if not hasattr(self, "_groups"):
            sig, q, n = self._distinct
            self._groups = None if sig.size <= SEGMENTWISE_MAX else _sched.group_steps(sig, q, n)
        return self._groups

    def regroup(self, measured: float, target: float) -> bool:
        """The refinement step of a grouped schedule: a bracket read from :attr:`groups` measured ``measured``
        (relative width), wider than ``target``: split the widest groups further
        (:func:`~reconrisk._src.accounting.pld_schedule.refine_groups`), or, where the width is mostly the
        discretisation's (:func:`~reconrisk._src.accounting.pld_schedule.grid_dominates`), lower the grouped grid's
        floor by ``GRID_STEP`` — at most ``REGROUP_ROUNDS`` times in all — and drop the
        coarser grouping's distributions and answers, so that every later answer reads the finer groups (each
        grouping is certified; the caller may intersect its brackets). False when nothing finer is possible."""
        done = self._regroups
        if self.groups is None or done >= _sched.REGROUP_ROUNDS:
            return False
        steps = self._distinct
        if _sched.grid_dominates(self._groups, *steps, measured):
            self._floor_scale *= _sched.GRID_STEP
        else:
            new = _sched.refine_groups(self._groups, *steps, measured, target)
            if new is None:
                return False
            self._groups = new
        self._regroups = done + 1
        self._pmfs.clear()
        self._memo.clear()
        return True

    def grid_floor(self, pessimistic: bool) -> float:
        """The finest grid a grouped schedule is composed on (0 where the steps are composed exactly)."""
        g = self.groups
        return (0.0 if g is None or all(x.exact for x in g)
                else _sched.grouped_min_h(g, pessimistic, self._floor_scale))

    @property
    def tilt_segments(self):
        """The segments the tilts of tiny-δ and tiny-κ questions are chosen from (grid choice only: any tilt gives
        a certified bracket): the release's, or for a grouped schedule ``TILT_GROUPS`` dominating representatives
        with the same total steps (a 300-step schedule's tilt took 40 s of moments, one per segment)."""
        if self.groups is None:
            return self.release.segments
        return Release.schedule(_sched.rdp_representatives(self.groups, _sched.TILT_GROUPS)).segments

    @property
    def _rdp_release(self) -> Release:
        """The release whose RDP curve the tiny-δ conversion reads: the release itself, or for a grouped Poisson
        schedule the groups' dominating representatives (σ_lo, q_hi), regrouped coarsely (a larger RDP curve, by
        data processing; ≤ 32 segments instead of 10⁴ distinct ones, each of which needs its own curve)."""
        if self.groups is None or self.source.sampler == "fixed":
            return self.release
        return Release.schedule(_sched.rdp_representatives(self.groups))

    # -- (ε, δ) --------------------------------------------------------------------------------
    def _p_ever(self) -> float:
        return -math.expm1(sum(s.steps * math.log1p(-s.sample_rate) if s.sample_rate < 1 else -math.inf
                               for s in self.release.segments))

    def _closed_form_gdp(self) -> float | None:
        """μ when the curve is exactly μ-GDP (every q = 1, or σ beyond the grid's range), else None."""
        sigmas = [s.noise_multiplier for s in self.release.segments]
        if max(sigmas) > SIGMA_GRID_RANGE[1] or self.release.full_batch:
            return math.sqrt(sum(s.steps * (1.0 / s.noise_multiplier) ** 2 for s in self.release.segments))
        return None

    def epsilon(self, delta: float, *, two_sided: bool = False, rel_tol: float | None = None) -> Bound:
        """The smallest ε with the release (ε, δ)-DP (add/remove adjacency, both directions; fixed-size batches:
        replace-one, the symmetrised composition of :attr:`pair`), certified.

        ``upper`` is the pessimistic PLD's ε (what ``dp_accounting``'s
        ``PLDAccountant`` reports, with reconrisk's own engine). With
        ``two_sided=True`` ``lower`` is the optimistic PLD's ε (remove
        direction; ε is the max over both, so this is a lower end) — one more
        composition on the accountant's fine grid, so it is asked for, not
        default (``lower`` is ``None`` otherwise). Every q = 1: the exact Gaussian-DP profile
        (Balle & Wang 2018), lower == upper. ``rel_tol``: the bracket's target relative width; the accountant's
        grid is fixed, so it decides ``converged`` only (whether (upper − lower) ≤ rel_tol·upper).
        """
        delta = v.probability_open("delta", delta)
        two_sided = bool(two_sided)
        rel_tol = None if rel_tol is None else v.positive("rel_tol", rel_tol)
        if self.pair is not self:  # fixed-size batches: a pair question (see :attr:`pair`)
            return self.pair.epsilon(delta, two_sided=two_sided, rel_tol=rel_tol)
        b = self._memoised(("epsilon", delta, two_sided), lambda: self._epsilon(delta, two_sided))
        return _met(b, rel_tol)

    def epsilon_on_grid(self, delta: float, h: float, *, two_sided: bool = False):
        """``(lower, upper, method, h)`` of ε(δ) with the loss grid ``h`` (coarsened where a step would need over a
        million atoms, :func:`~reconrisk._src.accounting.epsilon.pld_grid`): the closed forms where no grid is needed,
        else the distributions composed here (:meth:`pmf`, cached) read by
        :func:`~reconrisk._src.accounting.epsilon.epsilon_from_pmfs`; near or below the untilted PLD's floor (and below
        ``TILT_BELOW`` without composing the untilted ones) tilted compositions
        (:func:`~reconrisk._src.analysis.privacy_tiny.tiny_epsilon`), the RDP conversion a second opinion.
        ``lower`` is None unless ``two_sided`` (or exact). The calibrator's first guess reads a coarse grid."""
        exact = epsilon_without_grid(self.release, delta)
        if exact is not None:
            return exact[0], exact[0], exact[1], None
        h = pld_grid(self.release, h)
        try:
            if delta < TILT_BELOW and not self._untilted_cached(h):  # certainly below the floor: tilted only
                return self._tiny_epsilon(delta, h, two_sided, math.inf)
            pess = [self.pmf(h, pessimistic=True, direction=d, loss_cap=EPSILON_CAP) for d in ("remove", "add")]
            up, floor = epsilon_from_pmfs(pess, delta)
            if delta < RDP_NEAR_FLOOR * floor:  # near or below the untilted floor: tilted compositions
                return self._tiny_epsilon(delta, h, two_sided, up)
            method = "pld"
            if self.groups is not None and self.source.sampler != "fixed":  # grouped schedule: never above RDP
                rdp = _sched.grouped_rdp_epsilon(self.groups, delta)
                if rdp < up:
                    up, method = rdp, "rdp"
            if not two_sided:
                return None, up, method, h
            opt = self.pmf(h, pessimistic=False, direction="remove", loss_cap=EPSILON_CAP)
        except ReconRiskError as exc:
            raise grid_refusal(self.release, exc) from None
        return optimistic_epsilon(opt, delta, up), up, method, h

    def _tiny_epsilon(self, delta: float, h: float, two_sided: bool, untilted: float):
        """ε(δ) near or below the untilted PLD's floor: the tilted compositions' bracket
        (:func:`~reconrisk._src.analysis.privacy_tiny.tiny_epsilon`), its upper end also held against the untilted
        one and the RDP conversion (a second opinion: the smallest certified upper end is kept)."""
        try:
            lo, up, det = tiny_epsilon(self, delta, h, two_sided)
        except ReconRiskError:  # no tilted composition fits (an extreme corner): the untilted and RDP ends
            lo, up, det = (0.0 if two_sided else None), math.inf, {}
        self._tiny_details[("epsilon", delta)] = det
        up = min(up, untilted)
        if lo is not None and math.isfinite(up) and up - lo <= RDP_SKIP_WIDTH * up:
            # RDP is an upper end of the true ε ≥ lo, so it could lower ``up`` by less than the width: not asked
            return lo, up, "pld", h
        up, method = rdp_below_floor(self._rdp_release, delta, up, math.inf)
        return (None if lo is None else min(lo, up)), up, method, h

    def _untilted_cached(self, h: float) -> bool:
        return any(k[0] == float(h) and k[1] and k[3] == () for k in self._pmfs)

    def _epsilon(self, delta: float, two_sided: bool) -> Bound:
        lo, up, method, h = self.epsilon_on_grid(delta, PLD_DISCRETIZATION, two_sided=two_sided)
        # a grouped schedule's two-sided bracket wider than GROUPED_TARGET: regroup finer and ask again; both
        # brackets are certified, so their intersection is
        while (lo is not None and up > 0 and math.isfinite(up) and up - lo > GROUPED_TARGET * up
               and self.regroup((up - lo) / up, GROUPED_TARGET)):
            lo2, up2, method2, h = self.epsilon_on_grid(delta, PLD_DISCRETIZATION, two_sided=True)
            if up2 <= up:
                up, method = up2, method2
            lo = min(max(lo, lo2), up)
        formula = {"pld": "smallest eps with delta(eps) <= delta on the pessimistic (upper) and optimistic (lower) PLDs",
                   "closed_form": "Gaussian DP: delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) "
                                  "(Balle & Wang 2018)",
                   "analytic": "delta < P(target ever sampled): the loss is beyond any eps with that probability",
                   "rdp": "upper: min over orders a of eps(a) + log((a-1)/a) - (log delta + log a)/(a-1) (Canonne, Kamath & "
                          "Steinke 2020, Prop. 12), below the PLD's floor; lower: the optimistic PLD"}[method]
        det = {"delta": delta, "accountant": "pld"}
        if h is not None:
            det["discretization"] = h
        tiny = self._tiny_details.get(("epsilon", delta))
        if tiny:  # below the untilted floor: the tilted compositions' tilts and per-step tail
            det.update(tiny)
            if method == "pld":
                formula = ("smallest eps with delta(eps) <= delta on exponentially tilted pessimistic (upper) and "
                           "optimistic (lower) PLDs, untilted with their log-normaliser (round-off relative to delta)")
        return Bound("epsilon", lo, up, method=method, formula=formula, converged=True, details=det)

    def delta(self, epsilon: float, *, two_sided: bool = False, rel_tol: float | None = None) -> Bound:
        """δ(ε) = max over both directions of the hockey-stick divergence, certified from above (pessimistic PLDs);
        ``two_sided=True`` adds the lower end from the remove direction's optimistic PLD (the one an optimistic
        discretisation exists for). ``rel_tol`` decides ``converged`` only, as for :meth:`epsilon`."""
        eps = v.real("epsilon", epsilon)
        two_sided = bool(two_sided)
        rel_tol = None if rel_tol is None else v.positive("rel_tol", rel_tol)
        if self.pair is not self:  # fixed-size batches: a pair question (see :attr:`pair`)
            return self.pair.delta(eps, two_sided=two_sided, rel_tol=rel_tol)
        return _met(self._memoised(("delta", eps, two_sided), lambda: self._delta(eps, two_sided)), rel_tol)

    def _delta(self, eps: float, two_sided: bool) -> Bound:
        mu = self._closed_form_gdp()
        if mu is not None:
            d = 0.0 if mu == 0.0 else float(gaussian_delta(eps, 1.0 / mu))
            return Bound("delta", d, d, method="closed_form", converged=True,
                         formula="Gaussian DP: Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)",
                         details={"epsilon": eps, "mu": mu})
        if min(s.noise_multiplier for s in self.release.segments) < SIGMA_GRID_RANGE[0]:
            p = self._p_ever()
            return Bound("delta", p, 1.0, method="analytic", converged=False, formula="P(target ever sampled) <= delta",
                         details={"epsilon": eps})
        h = pld_grid(self.release, PLD_DISCRETIZATION)
        pess = [self.pmf(h, pessimistic=True, direction=d, loss_cap=EPSILON_CAP) for d in ("remove", "add")]
        up = max(float(p.delta([eps])[0]) for p in pess)
        method, formula = "pld", "hockey-stick divergence of the pessimistic (upper) and optimistic (lower) PLDs"
        det: dict[str, Any] = {"epsilon": eps, "discretization": h}
        lo = (float(self.pmf(h, pessimistic=False, direction="remove", loss_cap=EPSILON_CAP).delta([eps])[0])
              if two_sided else None)
        if up < RDP_NEAR_FLOOR * max(pld_floor(p) for p in pess):  # near the untilted floor: tilted compositions
            try:
                t_lo, t_up, tiny = tiny_delta(self, eps, h, two_sided)
            except ReconRiskError:  # no tilted composition fits (an extreme corner): the untilted ends and RDP
                t_lo, t_up, tiny = lo, up, {}
            if t_up < up:
                up = t_up
                det.update(tiny)
                formula = ("hockey-stick divergence of exponentially tilted pessimistic (upper) and optimistic (lower) "
                           "PLDs, untilted with their log-normaliser (round-off relative to delta)")
            lo = None if lo is None else max(lo, t_lo if t_lo is not None else 0.0)
            if rdp_applies(self.release):
                rdp = rdp_delta(self._rdp_release, eps)  # a second opinion: both are certified upper ends
                if rdp < up:
                    up, method = rdp, "rdp"
                    formula = ("upper: min over orders a of exp((a-1)(eps(a) - eps + log(1 - 1/a)) - log a) (Canonne, "
                               "Kamath & Steinke 2020, Prop. 12), below the PLD's floor; lower: the optimistic PLD")
        return Bound("delta", None if lo is None else min(lo, up), up, method=method, converged=True,
                     formula=formula, details=det)

    # -- ReRo, the trade-off curve and the risk measures ---------------------------------------
    def rero(self, kappa: float | None = None, *, prior_size: int | None = None, **options) -> Bound:
        """Certified ReRo at κ (Hayes, Mahloujifar & Balle 2023, Cor. 4); see :func:`reconrisk._src.analysis.privacy_rero.rero_bounds`.

        ``options``: ``method`` (``"pld"``, default; ``"closed_form"``, ``"rdp"``, ``"mc"``), ``rel_tol``, ``tol``,
        and for Monte Carlo ``samples``, ``seed``, ``confidence``, ``progress``.
        """
        method = options.pop("method", "pld")
        rel_tol, tol = options.pop("rel_tol", None), options.pop("tol", None)
        mc = options
        extra = sorted(set(mc) - {"samples", "seed", "confidence", "progress"})
        if extra:
            raise ReconRiskError(f"rero takes method, rel_tol, tol, samples, seed, confidence, progress; found {extra[0]}")
        if method in RERO_METHODS and method != "pld":
            self.require("rero_" + method)
        k = resolve_kappa(kappa, prior_size)
        rel_tol = DEFAULT_REL_TOL if rel_tol is None else rel_tol
        key = ("rero", k, method, rel_tol, tol, tuple(sorted(mc.items())))
        b = self._memoised(key, lambda: self.rero_many([k], method=method, rel_tol=rel_tol, tol=tol, **mc)[0])
        if prior_size is not None and b.details.get("prior_size") != prior_size:
            b = with_details(b, prior_size=prior_size)
        return b

    def rero_many(self, kappas, *, method: str = "pld", **kw) -> list[Bound]:
        """ReRo at many κ at once (one bracket computation: the refinement serves every κ together)."""
        return rero_bounds(self, kappas, method=method, **kw)

    def tradeoff(self, alphas, *, tol: float | None = None, **options):
        """Certified bracket on the trade-off curve f(α) at every α (:func:`reconrisk._src.analysis.privacy_rero.tradeoff`);
        ``options``: ``method`` (``"auto"``, ``"pld"``, ``"closed_form"``)."""
        method = options.pop("method", "auto")
        if options:
            raise ReconRiskError(f"tradeoff takes tol and method; found {sorted(options)[0]}")
        return release_tradeoff(self.pair, alphas, method=method, tol=tol)  # a pair question (see :attr:`pair`)

    def total_variation(self, tol: float) -> tuple[float, float, dict]:
        """[lower, upper, details] of TV = δ(0) (:func:`reconrisk._src.analysis.privacy_risk.release_total_variation`)."""
        return release_total_variation(self, tol)

    def prior_success(self, prior_values, counts, tol: float):
        """The best success S(π) over a finite prior, bracketed (:func:`reconrisk._src.analysis.privacy_risk.release_prior_success`)."""
        return release_prior_success(self, prior_values, counts, tol)

    def gdp_mu(self, alphas=None) -> Bound:
        """Certified range of the smallest μ such that the release is μ-Gaussian-DP (Dong, Roth & Su 2022).

        ``upper`` = √(Σ T_i/σ_i²): each subsampled step is a garbling of the
        full-batch Gaussian step (mix in the null output), and Gaussian DP
        composes exactly. Fixed-size batches (σ_i the dominating σ/2): f_q ≥ G_μ and
        f_q⁻¹ ≥ G_μ⁻¹ = G_μ, so the symmetrised C_q ≥ G_μ too (G_μ is convex), and the upper
        end holds for every pair and orientation; the lower end reads the symmetrised curve. ``lower`` = max over a grid of α of
        Φ⁻¹(1 − α) − Φ⁻¹(f_upper(α)): at such an α the certified curve lies
        below G_μ for every smaller μ (Neyman–Pearson). Every q = 1: exact. The
        central-limit μ of Bu et al. (an approximation, not a bound) is in
        ``details``.
        """
        if self.pair is not self:  # fixed-size batches: μ-GDP is a statement about pairs (see :attr:`pair`)
            return self.pair.gdp_mu(alphas)
        mu_up = release_gdp_mu(self.release)
        if self.release.full_batch:
            return Bound("gdp_mu", mu_up, mu_up, method="closed_form", converged=True,
                         formula="mu = sqrt(sum T_i / sigma_i^2) (Gaussian DP, Dong, Roth & Su 2022)")
        a = np.logspace(-12, math.log10(0.5), 97) if alphas is None else np.asarray(alphas, dtype=float)
        t = self.tradeoff(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            cand = special.ndtri(1.0 - a) - special.ndtri(np.clip(t.beta.upper, 1e-300, 1.0))
        lo = float(np.nanmax(np.where(np.isfinite(cand), cand, -np.inf)))
        return Bound("gdp_mu", max(0.0, min(lo, mu_up)), mu_up, method="tradeoff", converged=None,
                     formula="lower: max_a Phi^-1(1-a) - Phi^-1(f_upper(a)); upper: sqrt(sum T_i/sigma_i^2) (garbling)",
                     details={"clt_mu": clt_mu(self.release), "alphas": int(a.size)})


def _met(b: Bound, rel_tol: float | None) -> Bound:
    """``b`` with ``converged`` saying whether its width met ``rel_tol`` (unchanged when None or one-sided)."""
    if rel_tol is None or b.lower is None:
        return b
    return replace(b, converged=bool(b.upper - b.lower <= rel_tol * b.upper))
