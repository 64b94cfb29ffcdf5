"""A per-example privacy budget fixed before training: the individual Rényi filter for DP-SGD.

**The theorem.** Feldman & Zrnic 2021 (Thm 3.1, the Rényi filter; applied per
individual in their §4, the individual privacy filter) show: if at every step t the
mechanism is chosen adaptively (from the outputs so far) and is (α, ρ_t)-RDP for
example i with ρ_t a function of the history (and of example i's own data), and the
sum Σ_t ρ_t never exceeds a budget B(α) fixed in advance, then the whole run is
(α, B(α))-RDP for example i. It holds at every order α at once when each order's sum
stays below its own budget (the stopping rule may be any rule that keeps every sum
under its budget).

**DP-SGD with Poisson sampling.** Given the history, step t's output for example i
is the subsampled Gaussian pair at sensitivity w_i,t·s_i,t, where s_i,t = min(C,
‖g_i,t‖) is the norm of example i's gradient **at θ_t, whether or not it is sampled**
(the charge must not depend on the sampling, which is the private coin) and
w_i,t ∈ {0, 1} is the filter's admission. Its RDP at order α, in both directions, is
at most ρ(α; q, σC/(w s)) — the Poisson-subsampled Gaussian's curve of
:func:`reconrisk._src.accounting.rdp.subsampled_gaussian_rdp` (Mironov, Talwar & Zhang
2019, Thm 5: the remove direction dominates), which grows with the sensitivity
(the pair at a smaller sensitivity is a post-processing of the pair at a larger one,
:mod:`reconrisk._src.individual.privacy`). So the charge is taken at the sensitivity level
of :func:`~reconrisk._src.individual.levels.sensitivity_levels` just above s_i,t (rounded
up: sound), example i is admitted at step t only if every order's running sum plus
that charge stays within its budget, and an example once refused stays out (w = 0
from then on: it contributes nothing and is charged nothing). Why Rényi and not
Gaussian DP: Koskela, Tobaben & Honkela 2023 prove a Gaussian-DP individual filter
(fully adaptive composition, Smith & Thakurta 2022), optimal for full-batch Gaussian
steps; a Poisson-subsampled step is not μ-GDP with an amplified μ, so for DP-SGD their
filter would charge the unamplified 1/σ per step, while the RDP charge keeps the
subsampling amplification.

**The budget** is a curve B(α) = c·ρ(α; q, σ) — the RDP curve of c steps at full
sensitivity C — with c the largest number of such steps whose curve meets the target
after the tightest conversion of an RDP curve reconrisk has: a ReRo target (κ, γ)
through the optimal RDP → trade-off reduction of Riess et al. 2026
(:mod:`reconrisk._src.measures.rdp_tradeoff`), an (ε, δ) target through the conversion of
``dp_accounting``'s RDP accountant (Balle et al. 2020, Thm 21).

**What is certified: the budget, for every example alike.** The theorem's conclusion
is (α, B(α))-RDP for each example — the budget fixed before training, nothing
smaller. What an example actually spent, Σ_t ρ_t, is a function of the released
outputs and of the example's own data, so a small spend is itself evidence about the
example and its conversion is no guarantee (a two-step counter-example, exact by
numerical integration, is in ``tests/test_individual_filter.py``: an example that
spent one tiny step in the branch it took converts to ReRo 0.105 at κ = 0.1, inside a
mechanism whose exact blow-up is 0.436). So :meth:`~IndividualFilter.certified_rero` /
:meth:`~IndividualFilter.certified_epsilon` give every example the budget's
conversion, capped by the release's own worst case
(:class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis` of the release: given the history
every step is the subsampled Gaussian at a sensitivity at most C, whose trade-off
curve the full-sensitivity step's dominates, and trade-off curves compose adaptively,
Dong, Roth & Su 2022, Thm 3.2). Certified numbers below the budget for examples that
spent little would need a privacy odometer (Rogers, Roth, Ullman & Vadhan 2016;
Whitehouse, Ramdas, Rogers & Wu 2023), at its price; this module has none. The
conversion of each example's spent curve is kept as an **ex-post estimate**
(:meth:`~IndividualFilter.spent_rero_estimate`,
:meth:`~IndividualFilter.spent_epsilon_estimate`), never called certified.

**Bookkeeping** is kept as integer counts per example and sensitivity level, so the
spent curve is ``counts @ charges`` — exact up to one rounding, recomputed the same way
by the tests from the recorded norms. The admission test carries a relative margin
(``MARGIN``) that covers the rounding of any summation order, so the float32 test in
the JAX trainer (:mod:`reconrisk._src.train.individual`) is sound too.
"""

from __future__ import annotations

import copy
import functools
import math

import numpy as np

from .. import _validate as v
from ..accounting.rdp import subsampled_gaussian_rdp
from ..analysis.privacy import PrivacyAnalysis
from ..errors import ReconRiskError
from ..measures.rdp_tradeoff import rdp_power
from ..release import Release
from .levels import DEFAULT_BUCKETS, bucket_index, poisson_release, sensitivity_levels

__all__ = ["IndividualFilter", "FILTER_ORDERS", "MARGIN"]

#: Rényi orders the filter tracks (a budget per order; the conversions minimise over them).
#: (30 orders: the trainer carries an (n, orders) float32 sum per example, so fewer orders are cheaper steps;
#: between neighbours the conversions lose well under 1 % here.)
FILTER_ORDERS = np.array([1.1, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, 12.0, 14.0, 16.0,
                          20.0, 24.0, 28.0, 32.0, 40.0, 48.0, 56.0, 64.0, 80.0, 96.0, 128.0, 192.0, 256.0])
#: Relative margin of the admission test: admitted only if (spent + charge)·(1 + MARGIN) ≤ budget.
MARGIN = 1e-5


def _rdp_to_epsilon(orders: np.ndarray, rdp: np.ndarray, delta: float) -> np.ndarray:
    """ε(δ) = min_α [ε_α + log((α−1)/α) − (log δ + log α)/(α−1)] per row of ``rdp``, at least 0
    (Balle et al. 2020, Thm 21; the conversion of dp_accounting's RDP accountant)."""
    a = orders[None, :]
    val = rdp + np.log1p(-1.0 / a) - (math.log(delta) + np.log(a)) / (a - 1.0)
    return np.maximum(0.0, np.min(val, axis=-1))


def _rdp_to_rero(orders: np.ndarray, rdp: np.ndarray, kappa: float) -> np.ndarray:
    """ReRo(κ) of each row's RDP curve by the optimal conversion (Riess et al. 2026).

    Rows are converted once per distinct curve (the same bytes give the same float): examples clipped at every
    step, or stopped at the same step, share one curve (33 distinct rows of 100 in the per-example CLI test).
    """
    rows = np.atleast_2d(rdp)
    out = np.empty(rows.shape[0])
    o = np.asarray(orders)
    for r in range(rows.shape[0]):
        if not np.any(rows[r] > 0):
            out[r] = kappa
        else:
            out[r] = _curve_rero(o.dtype.str, o.tobytes(), rows.dtype.str, rows[r].tobytes(), kappa)
    return out


@functools.lru_cache(maxsize=4096)
def _curve_rero(orders_dtype: str, orders: bytes, rdp_dtype: str, rdp: bytes, kappa: float) -> float:
    """rdp_power(κ, orders, rdp)[0] of one curve given as bytes (a pure function of them: safe to cache)."""

    return rdp_power(kappa, np.frombuffer(orders, orders_dtype), np.frombuffer(rdp, rdp_dtype))[0]


class IndividualFilter:
    """The individual Rényi filter (Feldman & Zrnic 2021) for Poisson-subsampled DP-SGD, budget fixed up front.

    ``IndividualFilter(release, target_rero=γ, kappa=κ)`` or ``(…, target_epsilon=ε, delta=δ)``:
    the budget is the RDP curve of the largest number c of full-sensitivity steps whose
    converted bound meets the target (module docstring); without a target, c = the
    release's steps (the worst case of the release itself, with the admission margin: no
    example is ever filtered within T steps).
    ``release`` gives σ, q, C and the planned steps T (homogeneous, Poisson or full batch).

    Each step, :meth:`admit` takes every example's clipped-gradient norm **at the
    current parameters** (all examples, sampled or not — the theorem charges the step
    regardless of sampling) and returns the per-example contribution scale: 1 (admitted,
    charged), 0 (filtered out: its accumulated loss would pass the budget; it is not
    charged and stays out). ``spent`` is the fraction of the budget used (largest over
    orders), ``filtered`` who was stopped, :meth:`certified_rero` /
    :meth:`certified_epsilon` each example's guarantee — the budget's, the same for
    every example and at most the target (module docstring: why not what it spent) —
    and :meth:`spent_rero_estimate` / :meth:`spent_epsilon_estimate` what each example
    spent, an ex-post estimate (data-dependent, not a guarantee).
    """

    def __init__(self, release: Release, *, target_rero: float | None = None, kappa: float | None = None,
                 target_epsilon: float | None = None, delta: float | None = None, buckets=DEFAULT_BUCKETS,
                 orders=None) -> None:
        rel = poisson_release(release)
        if not rel.homogeneous:
            raise ReconRiskError("IndividualFilter needs a homogeneous release (one noise multiplier and sample rate)")
        self.release = rel
        self.levels = sensitivity_levels(buckets)
        self.orders = FILTER_ORDERS.copy() if orders is None else np.unique(np.asarray(orders, dtype=float))
        if self.orders.size == 0 or np.any(self.orders <= 1.0) or not np.all(np.isfinite(self.orders)):
            raise ReconRiskError(f"orders must be finite Rényi orders > 1; found {self.orders.tolist()!r:.80}")
        sigma, q = rel.noise_multiplier, rel.sample_rate
        #: (levels, orders) RDP charge of one step at each sensitivity level (row 0: level 0, no loss)
        self.charges = np.zeros((self.levels.size, self.orders.size))
        for k in range(1, self.levels.size):
            self.charges[k] = subsampled_gaussian_rdp(sigma / self.levels[k], q, self.orders)
        if target_rero is not None and target_epsilon is not None:
            raise ReconRiskError("give target_rero (with kappa) or target_epsilon (with delta), not both")
        self.target: dict = {}
        if target_rero is not None:
            gamma = v.probability_open("target_rero", target_rero)
            if kappa is None:
                raise ReconRiskError("target_rero needs kappa, the prior's baseline success probability in (0, 1)")
            k = v.probability_open("kappa", kappa)
            if gamma <= k:
                raise ReconRiskError(f"target_rero must be > kappa={k:g} (no mechanism does better than the "
                                     f"baseline); found {gamma:g}")
            self.target = {"target_rero": gamma, "kappa": k}
            c = self._largest_steps(lambda x: _rdp_to_rero(self.orders, x, k)[0] <= gamma)
        elif target_epsilon is not None:
            eps = v.positive("target_epsilon", target_epsilon)
            if delta is None:
                raise ReconRiskError("target_epsilon needs delta in (0, 1)")
            d = v.probability_open("delta", delta)
            self.target = {"target_epsilon": eps, "delta": d}
            c = self._largest_steps(lambda x: _rdp_to_epsilon(self.orders, x[None, :], d)[0] <= eps)
        else:  # the release's own worst case (plus the admission margin: an example at C on every step fits)
            c = float(rel.steps) * (1.0 + 4 * MARGIN)
        #: the budget in full-sensitivity steps and as an RDP curve over ``orders``
        self.budget_steps = c
        self.budget = c * self.charges[-1]
        self.n: int | None = None
        self.counts: np.ndarray | None = None  # (n, levels) admitted steps per level
        self.active: np.ndarray | None = None
        #: (n,) the step at which each example was stopped (the planned steps T when never)
        self.stopped_at: np.ndarray | None = None
        self.steps_taken = 0
        #: the admission margin the JAX trainer's float32 test uses (:mod:`reconrisk._src.train.individual`)
        self.margin_jax = MARGIN

    def _largest_steps(self, meets) -> float:
        """Largest c (full-sensitivity steps, real) with ``meets(c·ρ)``; bisection on the monotone predicate."""
        w = self.charges[-1]
        if not meets(w * 1e-12):
            raise ReconRiskError("the target cannot be met even by a vanishing budget; raise target_rero or "
                                 "target_epsilon")
        lo, hi = 0.0, 1.0
        while meets(hi * w):
            lo, hi = hi, hi * 2.0
            if hi > 1e12:
                return lo
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if meets(mid * w) else (lo, mid)
            if hi - lo <= 1e-9 * hi:
                break
        return lo

    # -- the filter ---------------------------------------------------------------------------
    def _init(self, n: int) -> None:
        self.n = n
        self.counts = np.zeros((n, self.levels.size), dtype=np.int64)
        self.active = np.ones(n, dtype=bool)
        self.stopped_at = np.full(n, self.release.steps, dtype=np.int64)

    def levels_of(self, norms_t) -> np.ndarray:
        """Sensitivity-level index of each example's norm (rounded up; NaN → C)."""
        return bucket_index(norms_t, self.release.clip_norm, self.levels)

    def admit(self, norms_t) -> np.ndarray:
        """One step: per-example contribution scale in {0, 1} (float64 (n,)), and the budgets charged.

        ``norms_t`` (n,): every example's gradient norm at the current parameters
        (clipped or not: it is clipped at C here; NaN → C).
        """
        s = np.asarray(norms_t, dtype=float)
        if s.ndim != 1 or s.size < 1:
            raise ReconRiskError(f"norms_t must be a 1-d array of the n examples' norms; found shape {s.shape}")
        if self.n is None:
            self._init(s.size)
        elif s.size != self.n:
            raise ReconRiskError(f"norms_t must hold the filter's {self.n} examples; found {s.size}")
        k = self.levels_of(s)
        after = self.spent_rdp + self.charges[k]
        ok = self.active & np.all(after * (1.0 + MARGIN) <= self.budget[None, :], axis=1)
        self.stopped_at[self.active & ~ok] = self.steps_taken
        self.active &= ok
        self.counts[np.flatnonzero(ok), k[ok]] += 1
        self.steps_taken += 1
        return ok.astype(float)

    def fresh(self) -> "IndividualFilter":
        """A copy with the same budget and charges and no history (one filter per run; building one computes
        the charge table and the budget, ~1 s)."""

        out = copy.copy(self)
        out.n = out.counts = out.active = out.stopped_at = None
        out.steps_taken = 0
        return out

    def load_state(self, counts, active, steps_taken: int) -> None:
        """Set the bookkeeping from a run that kept it elsewhere (the JAX trainer's hook)."""
        counts = np.asarray(counts, dtype=np.int64)
        active = np.asarray(active, dtype=bool)
        if counts.ndim != 2 or counts.shape[1] != self.levels.size or active.shape != (counts.shape[0],):
            raise ReconRiskError(f"counts must be (n, {self.levels.size}) and active (n,); found {counts.shape} "
                                 f"and {active.shape}")
        self.n, self.counts, self.active = counts.shape[0], counts.copy(), active.copy()
        self.steps_taken = int(steps_taken)
        if self.stopped_at is None or self.stopped_at.shape != (self.n,):
            self.stopped_at = np.full(self.n, self.release.steps, dtype=np.int64)

    def contributed(self, norms) -> np.ndarray:
        """``norms`` (n, T) with each stopped example's steps from its stop on set to 0 (what it contributed)."""
        self._need()
        s = np.array(norms, dtype=float)
        if s.ndim != 2 or s.shape[0] != self.n:
            raise ReconRiskError(f"norms must be (n={self.n}, T); found shape {s.shape}")
        s[np.arange(s.shape[1])[None, :] >= self.stopped_at[:, None]] = 0.0
        return s

    # -- what it certifies ------------------------------------------------------------------------
    def _need(self) -> None:
        if self.n is None:
            raise ReconRiskError("the filter has not seen a step yet (call admit, or train with it)")

    @property
    def spent_rdp(self) -> np.ndarray:
        """(n, orders) RDP spent by each example: Σ over admitted steps of the charge at its level."""
        self._need()
        return self.counts @ self.charges

    @property
    def spent(self) -> np.ndarray:
        """(n,) fraction of the budget used: max over orders of spent(α)/B(α), in [0, 1]."""
        return np.max(self.spent_rdp / self.budget[None, :], axis=1)

    @property
    def filtered(self) -> np.ndarray:
        """(n,) True where the example was stopped by the filter."""
        self._need()
        return ~self.active

    def certified_rero(self, kappa: float) -> np.ndarray:
        """(n,) certified ReRo(κ) of each example: :meth:`certificate_rero`, the same for every example.

        Feldman & Zrnic 2021, Thm 3.1 certifies the budget fixed before training, not what an example spent
        (that depends on the outputs and on the example's data: :meth:`spent_rero_estimate`, ex post)."""
        self._need()
        return np.full(self.n, self.certificate_rero(kappa))

    def certified_epsilon(self, delta: float) -> np.ndarray:
        """(n,) certified ε(δ) of each example: :meth:`certificate_epsilon`, the same for every example."""
        self._need()
        return np.full(self.n, self.certificate_epsilon(delta))

    def certificate_rero(self, kappa: float) -> float:
        """The ReRo(κ) every example of a filtered run is certified at: min(:meth:`budget_rero`, the release's
        worst case). Fixed before training (it needs no step)."""
        k = v.probability_open("kappa", kappa)
        return min(self.budget_rero(k), self._worst_case("rero", k))

    def certificate_epsilon(self, delta: float) -> float:
        """The ε(δ) every example of a filtered run is certified at: min(:meth:`budget_epsilon`, the release's
        worst case). Fixed before training."""
        d = v.probability_open("delta", delta)
        return min(self.budget_epsilon(d), self._worst_case("epsilon", d))

    def _worst_case(self, what: str, x: float) -> float:
        """The release's own upper end (every example at C on every step), memoised per (what, x)."""
        memo = self.__dict__.setdefault("_worst_memo", {})
        if (what, x) not in memo:
            if "_worst_analysis" not in self.__dict__:
                self._worst_analysis = PrivacyAnalysis(self.release)
            a = self._worst_analysis
            memo[(what, x)] = float((a.rero(x) if what == "rero" else a.epsilon(x)).upper)
        return memo[(what, x)]

    def spent_rero_estimate(self, kappa: float) -> np.ndarray:
        """(n,) ReRo(κ) of each example's spent RDP curve (optimal conversion): an **ex-post estimate** of what
        it spent, data-dependent and not a guarantee (the guarantee is :meth:`certified_rero`)."""
        k = v.probability_open("kappa", kappa)
        return _rdp_to_rero(self.orders, self.spent_rdp, k)

    def spent_epsilon_estimate(self, delta: float) -> np.ndarray:
        """(n,) ε(δ) of each example's spent RDP curve: an **ex-post estimate**, not a guarantee
        (:meth:`certified_epsilon` is)."""
        d = v.probability_open("delta", delta)
        return _rdp_to_epsilon(self.orders, self.spent_rdp, d)

    def budget_rero(self, kappa: float) -> float:
        """ReRo(κ) of the budget curve itself (optimal RDP conversion; at most the target)."""
        return float(_rdp_to_rero(self.orders, self.budget[None, :], v.probability_open("kappa", kappa))[0])

    def budget_epsilon(self, delta: float) -> float:
        """ε(δ) of the budget curve itself (Balle et al. 2020, Thm 21; at most the target)."""
        return float(_rdp_to_epsilon(self.orders, self.budget[None, :], v.probability_open("delta", delta))[0])

    def to_dict(self) -> dict:
        out = {"method": "individual_renyi_filter", "theorem": "Feldman & Zrnic 2021, Thm 3.1 (Renyi filter), per "
               "individual (their Sec. 4); per-step charge: Poisson-subsampled Gaussian RDP at the example's own "
               "gradient norm (Mironov, Talwar & Zhang 2019)", "release": self.release.to_dict(),
               "budget_steps": self.budget_steps, **self.target, "steps_taken": self.steps_taken}
        if self.n is not None:
            out.update(examples=self.n, filtered=int(np.sum(~self.active)),
                       filtered_share=float(np.mean(~self.active)))
        return out
