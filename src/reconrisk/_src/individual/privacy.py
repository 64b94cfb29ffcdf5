"""Who is at risk: the privacy of each training example from the gradient norms the run produced.

Every release-level bound of reconrisk is worst case over records: it charges each
example a clipped gradient of norm C at every step. Example i's gradient at step t
has norm s_i,t = min(C, ‖g_i,t‖) instead, and the Gaussian noise σC added to the
sum makes that step, for example i, the Poisson-subsampled Gaussian mechanism of
sensitivity s_i,t: the pair ((1−q)N(0, σ²C²) + qN(s_i,t, σ²C²), N(0, σ²C²)), i.e.
effective noise multiplier σC/s_i,t (Feldman & Zrnic 2021, §5, individual losses of
noisy gradient descent; Yu et al. 2023, individual accounting of DP-SGD, with the
same per-step pair).

**Bucketing upward is sound.** The pair at a smaller sensitivity s′ < s is a
post-processing of the pair at s (scale the output by s′/s and add independent
N(0, σ²C²(1 − (s′/s)²)) noise: both the mixture and the null distribution map onto
their counterparts at s′), so every divergence, every trade-off curve and every
composed privacy-loss distribution at s′ is dominated by the one at s. Each s/C is
therefore rounded **up** onto a grid of sensitivity levels (:func:`sensitivity_levels`:
an exact 0, then geometric levels up to 1), an unobserved norm (NaN) is taken as C,
and equal levels are grouped: example i's composition is the heterogeneous release
``Release.schedule([(σ/u_k, q, c_ik), …])`` of its level counts c_ik (the order of
steps does not change a composition). Examples with equal count vectors share one
computation, and every composition goes through the one engine,
:class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis` (its pessimistic PLDs): each
per-example number is the upper end of that schedule's composition, *as if* the
schedule had been fixed in advance — which it was not (next paragraph).

**At scale.** With random norms every example's count vector is distinct, so the cost grew
with the examples. The norms are counted chunk by chunk (an array, an ``np.memmap`` or an
iterator of blocks: :func:`~reconrisk._src.individual.levels.level_counts`), and above
``max_compositions`` distinct vectors the schedules are coarsened
(:mod:`reconrisk._src.individual.coarsen`): each example is charged a dominating schedule
(its upper-cumulative counts rounded up; never below its own number) shared with its
neighbours, and the lower end of a dominated one is reported beside it
(``ex_post_*_lower``), so the number of compositions is bounded whatever the examples.

**What the numbers mean.** Without a filter these are *ex-post* estimates of who
is exposed (the labels say so: ``ex_post_epsilon``, ``ex_post_rero``): the norms are
data-dependent, so the per-example number is not itself a differential-privacy
guarantee (Feldman & Zrnic 2021, §1; Yu et al. 2023 make the same caveat). A
per-example *certificate* needs the budget fixed before training and the example
dropped once its accumulated loss would pass it: that is
:class:`~reconrisk._src.individual.filter.IndividualFilter`. What it certifies is
the budget — the same number for every example (capped by the release's worst case),
never what an example happened to spend, which depends on the data too.
``individual_analysis(..., individual_filter=f)`` reports it as ``certified_epsilon`` /
``certified_rero`` and, beside it, what each example spent as the ex-post estimates
``ex_post_epsilon`` / ``ex_post_rero`` (from the norms it contributed).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as v
from ..accounting import pld as _pld
from ..accounting.epsilon import EPSILON_CAP, pld_grid
from ..accounting.gaussian import gaussian_eps
from ..accounting.pld_batch import compose_counts, LevelSpectra
from ..analysis.privacy import PrivacyAnalysis
from ..errors import ReconRiskError
from ..measures.rero import loss_cap
from ..release import Release
from ..results import Bound
from .coarsen import DEFAULT_MAX_COMPOSITIONS, coarsen, unique_rows
from .filter import IndividualFilter  # noqa: F401  (re-exported)
from .levels import (  # noqa: F401  (re-exported)
    DEFAULT_BUCKETS, MIN_LEVEL, bucket_index, level_counts, poisson_release, schedule_of, sensitivity_levels,
)

__all__ = ["DEFAULT_BUCKETS", "MIN_LEVEL", "sensitivity_levels", "bucket_index", "level_counts",
           "individual_analysis", "IndividualPrivacy", "IndividualFilter"]

#: Loss grid of the ex-post ε (the accountant's is 1e-4). Still a pessimistic (sound) end; measured: the worst
#: case of σ = 1, q = 0.05, T = 1000 gives ε(1e-5) = 10.98690 against 10.98668 at 1e-4 (+2e-5 relative), at a
#: tenth of the atoms.
EX_POST_EPSILON_GRID = 1e-3
#: How the per-example compositions are computed (see :class:`IndividualPrivacy`).
METHODS = ("fourier", "analysis")

COARSE_NOTE = ("more distinct schedules than max_compositions: ex_post_* are the upper ends of dominating coarsened "
               "schedules (never below each example's exact ex-post number), ex_post_*_lower the lower ends of "
               "dominated ones; the exact number lies between")
EX_POST_NOTE = ("ex-post individual accounting (Yu et al. 2023): an estimate of who is exposed, computed from the "
                "norms this run produced; data-dependent, so not itself a differential-privacy guarantee")
CERTIFIED_NOTE = ("certified_*: the individual Renyi filter's budget, fixed before training (Feldman & Zrnic 2021, "
                  "Thm 3.1), capped by the release's worst case: the same guarantee for every example, at most the "
                  "filter's target; ex_post_*: what each example spent, from the norms it contributed (Yu et al. "
                  "2023) - data-dependent estimates, not guarantees")


class IndividualPrivacy:
    """Per-example privacy of one run: ``epsilon(δ)``, ``rero(κ)`` arrays (n,), the worst case beside them.

    Built by :func:`individual_analysis`. ``certified`` is False for ex-post accounting
    (estimates, see the module docstring) and True when the run was trained under an
    :class:`~reconrisk._src.individual.filter.IndividualFilter` fixed before training:
    then :meth:`epsilon` / :meth:`rero` are the filter's budget, the same certified
    number for every example, and :meth:`ex_post_epsilon` / :meth:`ex_post_rero` what
    each example spent (estimates). Every number is at most the worst case of the same
    release (a valid bound for every example, so the smaller of the two is reported);
    an ex-post number equals it for an example at sensitivity C on every step.
    """

    def __init__(self, release: Release, counts: np.ndarray, levels: np.ndarray, *, certified: bool = False,
                 individual_filter=None, method: str = "fourier",
                 max_compositions: int | None = DEFAULT_MAX_COMPOSITIONS) -> None:
        self.release = release
        self.levels = np.asarray(levels, dtype=float)
        self.counts = np.asarray(counts)
        self.n = int(self.counts.shape[0])
        self.certified = bool(certified)
        self.individual_filter = individual_filter
        #: ``"fourier"``: all groups from the level spectra (accounting/pld_batch.py); ``"analysis"``: one
        #: PrivacyAnalysis per group (the reference; slow; never coarsened)
        self.method = v.choice("method", method, METHODS)
        #: the worst-case analysis of the release (shared with the examples at C on every step)
        self.analysis = PrivacyAnalysis(release)
        flat = self.counts.reshape(self.n, -1)
        exact, inverse = unique_rows(flat)
        #: the coarsened schedules (individual/coarsen.py) when the distinct count vectors are more than
        #: ``max_compositions`` (Poisson releases; a full-batch one is composed exactly); None: every example's own
        #: schedule is composed (the exact path)
        self.coarsening = None
        if max_compositions is not None and self.method == "fourier" and not release.full_batch:
            self.coarsening = coarsen(exact.reshape((-1,) + self.counts.shape[1:]), release, self.levels,
                                      max_compositions)
        if self.coarsening is None:  # one set under both names: the lower end is the number itself
            self._sets = {"upper": (exact, inverse)}
            self._sets["lower"] = self._sets["upper"]
        else:
            c = self.coarsening
            self._sets = {"upper": (c.upper.reshape(len(c.upper), -1), c.upper_of[inverse]),
                          "lower": (c.lower.reshape(len(c.lower), -1), c.lower_of[inverse])}
        self._exact_groups = int(len(exact))
        self._analyses: dict[tuple, Any] = {}
        self._memo: dict[tuple, np.ndarray] = {}

    def __repr__(self) -> str:
        kind = "certified" if self.certified else "ex_post"
        return f"IndividualPrivacy({self.release!r}, n={self.n}, {kind}, groups={self.groups})"

    @property
    def coarsened(self) -> bool:
        """True when the per-example numbers are upper ends of coarsened schedules (individual/coarsen.py)."""
        return self.coarsening is not None

    @property
    def groups(self) -> int:
        """Number of distinct level-count vectors (one composition each)."""
        return self._exact_groups

    @property
    def compositions(self) -> int:
        """Compositions per question: the distinct vectors composed (upper ends; as many again for the lower)."""
        return int(len(self._sets["upper"][0]))

    def example_release(self, i: int) -> Release | None:
        """The heterogeneous release example ``i`` sees (None: every step at level 0)."""
        i = v.integer("i", i, minimum=0, maximum=self.n - 1)
        return schedule_of(self.release, self.counts[i], self.levels)

    def _analysis(self, end: str, g: int):
        if (end, g) not in self._analyses:
            rel = schedule_of(self.release, self._sets[end][0][g].reshape(self.counts.shape[1:]), self.levels)
            if rel is None:
                self._analyses[end, g] = None
            elif rel == self.release:
                self._analyses[end, g] = self.analysis
            else:
                self._analyses[end, g] = PrivacyAnalysis(rel)
        return self._analyses[end, g]

    def _per_group(self, end: str, key, value_of, floor: float) -> np.ndarray:
        """One value per group through its own PrivacyAnalysis (the reference path, ``method="analysis"``)."""
        key = (self._sets[end] is self._sets["upper"] and "upper" or end,) + key
        if key not in self._memo:
            out = np.empty(len(self._sets[end][0]))
            for g in range(len(out)):
                a = self._analysis(end, g)
                out[g] = floor if a is None else value_of(a)
            self._memo[key] = out
        return self._memo[key]

    # -- the Fourier path: every group's composition from the L level spectra ----------------------
    def _kinds(self):
        """(columns of the flattened counts with a loss, their (σ_eff, q)): segment j at level k ≥ 1."""
        K1 = self.counts.shape[2]
        cols, kinds = [], []
        for j, seg in enumerate(self.release.segments):
            for k in range(1, K1):
                cols.append(j * K1 + k)
                kinds.append((seg.noise_multiplier / self.levels[k], seg.sample_rate))
        return np.array(cols), kinds

    def _gdp_mu(self, end: str) -> np.ndarray:
        """Per group μ = √(Σ c·u²/σ²): each example's schedule is μ-GDP (subsampling only garbles)."""
        cols, kinds = self._kinds()
        w = np.array([1.0 / sig**2 for sig, _ in kinds])
        return np.sqrt(self._sets[end][0][:, cols].astype(float) @ w)

    def _full(self, groups: np.ndarray) -> np.ndarray:
        """Groups whose schedule is the release's own (every step at level 1)."""
        K1 = self.counts.shape[2]
        top = np.all([groups[:, j * K1 + K1 - 1] == seg.steps for j, seg in enumerate(self.release.segments)],
                     axis=0)
        shape = (-1,) + self.counts.shape[1:]
        top[top] = [schedule_of(self.release, t, self.levels) == self.release for t in groups[top].reshape(shape)]
        return top

    def _fourier(self, end: str, key, h: float, directions, loss_cap: float, value_of, worst: float,
                 floor: float) -> np.ndarray:
        """Per-group values from :func:`reconrisk._src.accounting.pld_batch.compose_counts` (max over ``directions``);
        the group at C on every step gets the worst case's own number."""
        key = (self._sets[end] is self._sets["upper"] and "upper" or end,) + key
        if key in self._memo:
            return self._memo[key]
        groups = self._sets[end][0]
        cols, kinds = self._kinds()
        counts = groups[:, cols]
        out = np.full(len(groups), floor)
        full = self._full(groups)
        todo = np.flatnonzero(~full & (counts.sum(axis=1) > 0))
        out[full] = worst
        if todo.size:
            used = np.flatnonzero(counts[todo].sum(axis=0) > 0)
            for n_dir, d in enumerate(directions):
                pmfs = [_pld.step_pmf(kinds[c][0], kinds[c][1], h, pessimistic=True, direction=d) for c in used]
                lev = LevelSpectra(pmfs)
                for r, pmf in compose_counts(lev, counts[todo][:, used], loss_cap=loss_cap):
                    g = todo[r]
                    val = value_of(pmf)
                    out[g] = val if n_dir == 0 else max(out[g], val)
        self._memo[key] = out
        return out

    # -- ex-post (or certified) per-example numbers ---------------------------------------------
    def _epsilon(self, end: str, delta: float) -> np.ndarray:
        delta = v.probability_open("delta", delta)
        worst = self.worst_case_epsilon(delta).upper
        if self.method == "analysis" or self.release.full_batch:
            vals = self._per_group(end, ("epsilon", delta), lambda a: a.epsilon(delta).upper, 0.0)
        else:
            h = pld_grid(self.release, EX_POST_EPSILON_GRID)
            vals = self._fourier(end, ("epsilon", delta, "fourier"), h, ("remove", "add"), EPSILON_CAP,
                                 lambda pmf: pmf.epsilon(delta), worst, 0.0)
        gdp = np.array([0.0 if m == 0 else gaussian_eps(1.0 / m, delta) for m in self._gdp_mu(end)])
        return np.minimum(np.minimum(vals, gdp), worst)[self._sets[end][1]]

    def _rero(self, end: str, kappa: float) -> np.ndarray:
        from scipy import special

        kappa = v.in_range("kappa", kappa, 0.0, 1.0, low_open=True, high_open=True)
        wb = self.worst_case_rero(kappa)
        worst = wb.upper
        h = wb.details.get("discretization")
        if self.method == "analysis" or h is None:
            vals = self._per_group(end, ("rero", kappa), lambda a: a.rero(kappa).upper, kappa)
        else:
            cap = loss_cap(np.array([kappa]))
            vals = self._fourier(end, ("rero", kappa, "fourier"), float(h), ("remove",), cap,
                                 lambda pmf: float(pmf.blowup(np.array([kappa]))[0]), worst, kappa)
        gdp = special.ndtr(special.ndtri(kappa) + self._gdp_mu(end))
        return np.minimum(np.maximum(np.minimum(vals, gdp), kappa), worst)[self._sets[end][1]]

    def ex_post_epsilon(self, delta: float) -> np.ndarray:
        """Ex-post ε_i(δ) (n,): the pessimistic PLD's ε of example i's schedule (both directions), on the
        grid ``EX_POST_EPSILON_GRID``; at most the Gaussian-DP ε of the schedule and the worst case. When
        :attr:`coarsened`, of the dominating coarsened schedule: never below the exact number, which lies
        within [:meth:`ex_post_epsilon_lower`, this]."""
        return self._epsilon("upper", delta)

    def ex_post_epsilon_lower(self, delta: float) -> np.ndarray:
        """Lower ends (n,) of the ex-post ε_i(δ): of the dominated coarsened schedule (:meth:`ex_post_epsilon`
        itself when not :attr:`coarsened`). The width of [this, ex_post_epsilon] is the coarsening's error."""
        return self._epsilon("lower", delta)

    def ex_post_rero(self, kappa: float) -> np.ndarray:
        """Ex-post ReRo_i(κ) (n,): the pessimistic PLD's B_κ of example i's schedule on the grid the worst
        case's bracket ended on; at most the Gaussian-DP value of the schedule and the worst case. When
        :attr:`coarsened`, of the dominating coarsened schedule (never below the exact number)."""
        return self._rero("upper", kappa)

    def ex_post_rero_lower(self, kappa: float) -> np.ndarray:
        """Lower ends (n,) of the ex-post ReRo_i(κ) (see :meth:`ex_post_epsilon_lower`)."""
        return self._rero("lower", kappa)

    def epsilon(self, delta: float) -> np.ndarray:
        """ε_i(δ) per example (n,): when ``certified``, the filter's budget (min with the worst case), the same
        for every example; else the ex-post estimate :meth:`ex_post_epsilon`."""
        if self.certified:
            delta = v.probability_open("delta", delta)
            cert = min(self.individual_filter.budget_epsilon(delta), self.worst_case_epsilon(delta).upper)
            return np.full(self.n, cert)
        return self.ex_post_epsilon(delta)

    def rero(self, kappa: float) -> np.ndarray:
        """ReRo_i(κ) per example (n,): when ``certified``, the filter's budget (min with the worst case), the same
        for every example; else the ex-post estimate :meth:`ex_post_rero`."""
        if self.certified:
            kappa = v.probability_open("kappa", kappa)
            return np.full(self.n, min(self.individual_filter.budget_rero(kappa), self.worst_case_rero(kappa).upper))
        return self.ex_post_rero(kappa)

    # -- the worst case --------------------------------------------------------------------------
    def worst_case_epsilon(self, delta: float) -> Bound:
        """The release's own ε(δ) (every example at C on every step): ``PrivacyAnalysis(release).epsilon``."""
        return self.analysis.epsilon(delta)

    def worst_case_rero(self, kappa: float) -> Bound:
        """The release's own ReRo(κ) bracket: ``PrivacyAnalysis(release).rero``."""
        return self.analysis.rero(kappa)

    def most_exposed(self, k: int, kappa: float | None = None, *, delta: float | None = None) -> np.ndarray:
        """Indices of the ``k`` examples with the largest ex-post ReRo_i(κ) (or ε_i(δ) when only ``delta`` is
        given), largest first (ties: smaller index first). Ex post in a filtered run too: its certificate is the
        same for every example, what each spent is not."""
        k = v.integer("k", k, minimum=0, maximum=self.n)
        if kappa is None and delta is None:
            raise ReconRiskError("most_exposed needs kappa (rank by ReRo) or delta (rank by epsilon); found neither")
        vals = self.ex_post_rero(kappa) if kappa is not None else self.ex_post_epsilon(delta)
        order = np.lexsort((np.arange(self.n), -vals))
        return order[:k]

    def to_dict(self, delta: float | None = 1e-5, kappa: float | None = None) -> dict:
        """JSON-ready: the worst case and every example's numbers, under names that say what they are.

        Every run: ``ex_post_epsilon`` / ``ex_post_rero`` (estimates, ``note`` says why; for a filtered run,
        what each example spent); filtered runs also ``certified_epsilon`` / ``certified_rero`` (the filter's
        budget, the same for every example, ≤ its target).
        """
        kind = "certified" if self.certified else "ex_post"
        out: dict = {"kind": kind, "certified": self.certified,
                     "note": CERTIFIED_NOTE if self.certified else EX_POST_NOTE,
                     "release": self.release.to_dict(), "examples": self.n,
                     "sensitivity_levels": self.levels.tolist(), "compositions": self.compositions,
                     "distinct_schedules": self.groups, "coarsened": self.coarsened}
        if self.coarsened:
            out["coarsening"] = dict(self.coarsening.to_dict(), note=COARSE_NOTE)
        if delta is not None:
            out["delta"] = float(delta)
            out["worst_case_epsilon"] = self.worst_case_epsilon(delta).to_dict()
            if self.certified:
                eps = self.epsilon(delta)
                out["certified_epsilon"] = eps.tolist()
                out["certified_epsilon_every_example"] = float(eps[0])
            post = self.ex_post_epsilon(delta)
            out["ex_post_epsilon"] = post.tolist()
            out["ex_post_epsilon_summary"] = _summary(post)
            if self.coarsened:
                low = self.ex_post_epsilon_lower(delta)
                out["ex_post_epsilon_lower"] = low.tolist()
                out["ex_post_epsilon_bracket"] = _widths(low, post)
        if kappa is not None:
            out["kappa"] = float(kappa)
            out["worst_case_rero"] = self.worst_case_rero(kappa).to_dict()
            if self.certified:
                rr = self.rero(kappa)
                out["certified_rero"] = rr.tolist()
                out["certified_rero_every_example"] = float(rr[0])
            post = self.ex_post_rero(kappa)
            out["ex_post_rero"] = post.tolist()
            out["ex_post_rero_summary"] = _summary(post)
            if self.coarsened:
                low = self.ex_post_rero_lower(kappa)
                out["ex_post_rero_lower"] = low.tolist()
                out["ex_post_rero_bracket"] = _widths(low, post)
        if self.individual_filter is not None:
            out["filter"] = self.individual_filter.to_dict()
        return out


def _summary(x: np.ndarray) -> dict:
    q = np.quantile(x, [0.0, 0.1, 0.5, 0.9, 1.0])
    return {"min": float(q[0]), "decile_10": float(q[1]), "median": float(q[2]), "decile_90": float(q[3]),
            "max": float(q[4]), "mean": float(np.mean(x))}


def _widths(low: np.ndarray, up: np.ndarray) -> dict:
    """The coarsening's measured error: widths of [lower end, reported upper end], absolute and relative."""
    w = up - low
    rel = w / np.where(up > 0, up, 1.0)
    return {"max_width": float(w.max()), "median_width": float(np.median(w)), "max_relative_width": float(rel.max()),
            "median_relative_width": float(np.median(rel))}


def individual_analysis(release: Release, norms, *, buckets: Any = DEFAULT_BUCKETS, certified: bool = False,
                        individual_filter=None, method: str = "fourier", blocks: str = "examples",
                        max_compositions: int | None = DEFAULT_MAX_COMPOSITIONS) -> IndividualPrivacy:
    """Per-example privacy of a Poisson-subsampled Gaussian DP-SGD run from its clipped-gradient norms.

    ``norms`` (n, T): example i's clipped-gradient norm s_i,t = min(C, ‖g_i,t‖) at
    step t (T = ``release.steps``); NaN where not observed, taken as C. Each s/C is
    rounded up onto :func:`sensitivity_levels` (``buckets``), equal steps grouped, and
    example i's schedule composed by :class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis`
    (module docstring: why this is sound). Returns an :class:`IndividualPrivacy`.

    ``certified=False`` (default): ex-post numbers, labelled as estimates. ``certified=True``
    needs the ``individual_filter`` (:class:`~reconrisk._src.individual.filter.IndividualFilter`)
    that ran during training: :meth:`IndividualPrivacy.rero` / ``epsilon`` are then its budget
    (Feldman & Zrnic 2021), the same for every example and at most its target, and the ex-post
    numbers are computed from what each example contributed (its steps from its stop on are
    zeroed, :meth:`~reconrisk._src.individual.filter.IndividualFilter.contributed`).

    ``norms`` may be streamed: an ``np.memmap`` is read in chunks of examples, and an iterator of blocks
    (``blocks="examples"``: arrays (b, T); ``"steps"``: arrays (n, t)) is counted block by block
    (:func:`~reconrisk._src.individual.levels.level_counts`); only the level counts are kept. When the
    examples have more than ``max_compositions`` distinct count vectors, their schedules are coarsened
    (:mod:`reconrisk._src.individual.coarsen`): each reported number is the upper end of a dominating
    schedule (never below the exact one) and ``ex_post_*_lower`` the lower end; ``None`` never coarsens.
    """
    rel = poisson_release(release)
    levels = sensitivity_levels(buckets)
    stream = not isinstance(norms, (np.ndarray, list, tuple))
    counts = level_counts(norms, rel, levels, blocks=blocks)
    if certified and individual_filter is None:
        raise ReconRiskError("certified=True needs the individual_filter that ran during training: per-example "
                             "numbers from data-dependent norms are a guarantee only under a filter fixed before "
                             "training (Feldman & Zrnic 2021); without one they are ex-post estimates")
    if individual_filter is not None:
        f_rel = getattr(individual_filter, "release", None)
        if f_rel is not None and f_rel != rel:
            raise ReconRiskError(f"individual_filter was built for {f_rel!r}; the norms are of {rel!r}")
        f_n = getattr(individual_filter, "n", None)
        if f_n is not None and f_n != counts.shape[0]:
            raise ReconRiskError(f"individual_filter holds {f_n} examples; norms hold {counts.shape[0]}")
        if f_n is not None and getattr(individual_filter, "stopped_at", None) is not None:
            if stream:
                raise ReconRiskError("a filtered run's norms must be an array (n, T), not an iterator of blocks: "
                                     "the filter zeroes each stopped example's steps from its stop on")
            counts = level_counts(individual_filter.contributed(norms), rel, levels)
    return IndividualPrivacy(rel, counts, levels, certified=certified or individual_filter is not None,
                             individual_filter=individual_filter, method=method, max_compositions=max_compositions)
