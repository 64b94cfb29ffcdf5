"""Truncated Poisson sampling (jax-privacy), ``dp_accounting``'s ``TruncatedSubsampledGaussianDpEvent``.

:class:`TruncatedPoisson` is the sampler: each of ``dataset_size`` examples joins the batch with probability q,
and a batch larger than ``truncated_batch_size`` B is cut to a uniformly random B of its examples.
:class:`TruncatedSubsampledGaussian` is the Gaussian step (noise multiplier σ) under it.
:class:`SampledWithReplacementGaussian` (end of the module) reads ``SampledWithReplacementDpEvent`` of a Gaussian.

The analysis (arXiv:2508.15089, §4.3 of ``dp_accounting``'s PLD supplement; as ``dp_accounting``'s
``from_truncated_subsampled_gaussian_mechanism`` builds it) conditions on the other n − 1 examples' draws K:

* K < B (probability 1 − τ, τ = P[Bin(n − 1, q) ≥ B]): nothing is cut, and the step is the Poisson-subsampled
  Gaussian (σ, q) under add/remove;
* K ≥ B (probability τ): the target, when drawn, displaces another example, with probability
  p = P[Bin(n, q) > B]·B/(τ·n) averaged over K; the pair is bounded by the replace-one pair of the
  Poisson-subsampled Gaussian at σ/2, P = (1 − p)N(0, s²) + pN(−1, s²) against Q = (1 − p)N(0, s²) + pN(1, s²),
  s = σ/2 (symmetric: its add and remove distributions coincide).

Revealing which case occurred can only add information, so the step is dominated by the mixture of the two
pairs' privacy-loss distributions with weights τ and 1 − τ (δ(ε) = τ·δ₂(ε) + (1 − τ)·δ₁(ε)). reconrisk builds
both on its own grid: the Poisson part by :func:`~reconrisk._src.accounting.pld.step_pmf`, the replace-one part by
connect-the-dots (pessimistic: each loss cell's P- and Q-mass split onto its end atoms) and by rounding each cell
down to its lower end with μ-mass min(P, e^{l}Q) (optimistic; O(h) rather than the Poisson part's O(h²)), the
round-off charged relative to the tail as for the Poisson pair (:func:`_replace_scale`). The
bracket is of this dominating pair (what ``dp_accounting`` certifies), not of the truncated sampler itself.

RDP: e^{(α−1)D_α} of the revealed mixture is τ·e^{(α−1)D₂} + (1 − τ)·e^{(α−1)D₁}; D₁ is the subsampled
Gaussian's curve (Mironov, Talwar & Zhang 2019), and D₂ that of the replace-one pair, by quadrature in log space
with its error estimate added, never above the joint-convexity bound (1/(α−1))·log(1 − p + p·e^{(α−1)·8α/σ²})
(the components N(−1, s²), N(1, s²) are 2/s = 4/σ apart). The PLD is the answer, the curve the floor below it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import special

from .. import _validate as v
from ..accounting.pld import step_pmf
from ..accounting.pld_step import STEP_TAIL, cell_masses, loss_range
from ..accounting.pmf import PMF, ROUNDOFF_PER_ATOM, UNIT
from ..accounting.rdp import subsampled_gaussian_rdp
from ..errors import PLDRangeError, ReconRiskError
from ..results import Support
from .base import DIRECTIONS, Mechanism, Sampler, Step, register
from .gaussian import Gaussian
from .samplers import NoAmplification

#: Largest per-step grid of the replace-one part.
MAX_ATOMS = 4_000_000
#: Largest |loss| kept on the replace-one part's grid (beyond: +∞ when pessimistic, dropped when optimistic).
MAX_LOSS = 600.0


@register
@dataclass(frozen=True)
class TruncatedPoisson(Sampler):
    """Poisson sampling at ``sampling_probability`` from ``dataset_size`` examples, batches cut to
    ``truncated_batch_size`` (add/remove relation)."""

    sampling_probability: float
    dataset_size: int
    truncated_batch_size: int

    name = "truncated_poisson"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sampling_probability", v.in_range(
            "TruncatedSubsampledGaussianDpEvent.sampling_probability", self.sampling_probability, 0.0, 1.0,
            low_open=False, high_open=False))
        object.__setattr__(self, "dataset_size", v.integer(
            "TruncatedSubsampledGaussianDpEvent.dataset_size", self.dataset_size, minimum=0, maximum=v.MAX_STEPS))
        object.__setattr__(self, "truncated_batch_size", v.integer(
            "TruncatedSubsampledGaussianDpEvent.truncated_batch_size", self.truncated_batch_size, minimum=0,
            maximum=v.MAX_STEPS))

    @property
    def relation(self) -> str:
        return "add_remove"

    @property
    def rate(self) -> float:
        return self.sampling_probability

    @property
    def never_samples(self) -> bool:
        """No example can be in a batch (q = 0, B = 0 or n = 0): the step reveals nothing (dp_accounting: ε 0)."""
        return self.sampling_probability == 0.0 or self.truncated_batch_size == 0 or self.dataset_size == 0

    def truncation(self) -> tuple[float, float]:
        """(τ, p): the probability that the others alone fill a batch, P[Bin(n − 1, q) ≥ B], and the probability
        that the target is in the cut batch given that they do, P[Bin(n, q) > B]·B/(τ·n)."""
        n, q, b = self.dataset_size, self.sampling_probability, self.truncated_batch_size
        if self.never_samples or b > n - 1:
            return 0.0, 0.0
        tau = float(special.bdtrc(b - 1, n - 1, q))
        if tau <= 0.0:
            return 0.0, 0.0
        p = float(special.bdtrc(b, n, q)) * b / tau / n
        return tau, min(max(p, 0.0), 1.0)

    def describe(self) -> str:
        return (f"truncated Poisson (q={self.sampling_probability:g}, n={self.dataset_size}, "
                f"B={self.truncated_batch_size})")


# ---------------------------------------------------------------------------------------------------------------
# The replace-one pair of the Poisson-subsampled Gaussian: P = (1 − p)N(0, s²) + pN(−1, s²), Q = (1 − p)N(0, s²)
# + pN(1, s²); loss l(x) = log(P/Q)(x), decreasing in x.

def _mass(a: np.ndarray, b: np.ndarray, loc: float, s: float) -> np.ndarray:
    """P(a < X ≤ b) for X ~ N(loc, s²), accurate in both tails."""
    za, zb = (a - loc) / s, (b - loc) / s
    return np.where(za > 0, special.ndtr(-za) - special.ndtr(-zb), special.ndtr(zb) - special.ndtr(za))


def _replace_loss(x: np.ndarray, s: float, p: float) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if p == 1.0:
        return -2.0 * x / s**2
    lp, lq = math.log(p), math.log1p(-p)
    up = np.logaddexp(lq, lp - (2 * x + 1) / (2 * s**2))
    lo = np.logaddexp(lq, lp + (2 * x - 1) / (2 * s**2))
    return up - lo


def _x_of_replace_loss(lam: np.ndarray, s: float, p: float) -> np.ndarray:
    """Inverse of :func:`_replace_loss`. With w = e^{x/s²}, c = e^{−1/(2s²)}, r = p/(1 − p), e^l·r·c·w² +
    (e^l − 1)·w − r·c = 0; its positive root in log space."""
    lam = np.asarray(lam, dtype=float)
    if p == 1.0:
        return -lam * s**2 / 2.0
    log_rc = math.log(p) - math.log1p(-p) - 1.0 / (2 * s**2)
    a = np.expm1(lam)
    with np.errstate(divide="ignore"):
        log_a = np.log(np.abs(a))
    log_k = math.log(2.0) + lam / 2.0 + log_rc  # K = 2·e^{l/2}·r·c, so (e^l − 1)² + 4e^l r²c² = A² + K²
    m = np.maximum(log_a, log_k)
    ea, ek = np.exp(log_a - m), np.exp(log_k - m)
    g = m + np.log(ea + np.sqrt(ea * ea + ek * ek))  # log(|A| + √(A² + K²))
    log_w = np.where(a >= 0, math.log(2.0) + log_rc - g, g - lam - math.log(2.0) - log_rc)
    return s**2 * log_w


def _replace_cells(bounds: np.ndarray, s: float, p: float) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q) masses of the loss cells [bounds[i], bounds[i + 1]) (x runs the other way)."""
    xb = _x_of_replace_loss(bounds, s, p)
    a, b = xb[1:], xb[:-1]
    n0 = _mass(a, b, 0.0, s)
    return (1 - p) * n0 + p * _mass(a, b, -1.0, s), (1 - p) * n0 + p * _mass(a, b, 1.0, s)


def replace_one_pmf(s: float, p: float, h: float, *, pessimistic: bool, tail_mass: float = STEP_TAIL) -> PMF:
    """The discretised PLD of the replace-one pair above (noise std ``s``, probability ``p`` ∈ (0, 1]) on the grid
    ``h``: connect-the-dots when ``pessimistic`` (tails to the end atom or +∞), cells rounded down otherwise
    (tails dropped); the round-off of the cell masses is charged to ``slack`` (per atom)."""
    z = float(-special.ndtri(tail_mass))
    x_lo, x_hi = -1.0 - s * z, 1.0 + s * z
    lam_hi = float(_replace_loss(np.array([x_lo]), s, p)[0])
    lam_lo = float(_replace_loss(np.array([x_hi]), s, p)[0])
    p_above = float((1 - p) * special.ndtr(x_lo / s) + p * special.ndtr((x_lo + 1) / s))  # P-mass, loss > lam_hi
    p_below = float((1 - p) * special.ndtr(-x_hi / s) + p * special.ndtr(-(x_hi + 1) / s))  # loss < lam_lo
    if lam_hi > MAX_LOSS:
        lam_hi = MAX_LOSS
        x = float(_x_of_replace_loss(np.array([MAX_LOSS]), s, p)[0])
        p_above = float((1 - p) * special.ndtr(x / s) + p * special.ndtr((x + 1) / s))
    if lam_lo < -MAX_LOSS:
        lam_lo = -MAX_LOSS
        x = float(_x_of_replace_loss(np.array([-MAX_LOSS]), s, p)[0])
        p_below = float((1 - p) * special.ndtr(-x / s) + p * special.ndtr(-(x + 1) / s))
    if (lam_hi - lam_lo) / h > MAX_ATOMS:
        raise PLDRangeError(f"value_discretization must be >= {(lam_hi - lam_lo) / MAX_ATOMS:.3g} for the truncated "
                             f"step's replace-one part (noise {2 * s:g}, probability {p:g}); found {h:g}")
    k0 = math.floor(lam_lo / h)
    k1 = max(math.ceil(lam_hi / h), k0 + 1)
    grid = np.arange(k0, k1 + 1) * h
    P, Q = _replace_cells(grid, s, p)
    scale, slack = _replace_scale(grid, s, p)
    if pessimistic:
        lower = np.clip((np.exp(grid[1:]) * Q - P) / math.expm1(h), 0.0, P)
        probs = np.zeros(grid.size)
        probs[:-1] += lower
        probs[1:] += P - lower
        probs[0] += p_below
        return PMF(h, k0, probs * scale, min(1.0, p_above), True, slack)
    pmf = _rounded_down(grid, P, Q, k0, h, slack)
    return PMF(h, k0, pmf.probs / scale, 0.0, False, slack)


def _replace_hockey_stick(l: np.ndarray, s: float, p: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(δ(ε), its round-off bound, μ(L > ε)) of the replace-one pair at ε = l: L > ε ⟺ x < x(ε), so
    δ(ε) = P(X < x(ε)) − e^ε·Q(X < x(ε)) = e^a·(1 − e^{ε + b − a}) with a, b the two log masses (log_ndtr)."""
    x = _x_of_replace_loss(l, s, p)
    n0 = special.log_ndtr(x / s)
    if p < 1.0:
        a = np.logaddexp(math.log1p(-p) + n0, math.log(p) + special.log_ndtr((x + 1) / s))
        b = np.logaddexp(math.log1p(-p) + n0, math.log(p) + special.log_ndtr((x - 1) / s))
    else:
        a, b = special.log_ndtr((x + 1) / s), special.log_ndtr((x - 1) / s)
    tail = np.exp(a)
    d = tail * -np.expm1(np.minimum(l + b - a, 0.0))
    return d, 1e-13 * tail + 1e-300, tail


def _replace_scale(grid: np.ndarray, s: float, p: float) -> tuple[float, float]:
    """(1 + 32u·c, absolute slack) for the replace-one part, as :func:`reconrisk._src.accounting.pld_rounding.
    pessimistic_scale` for the Poisson pair: the cell masses are ndtr differences on the tail side (relative error
    α ≤ 4u), so rounding moves δ(ε) by at most 8α·μ(L > ε) ≤ 32u·c·δ(ε), c ≥ μ(L > ε)/δ(ε) bounded on coarse
    intervals of the grid; where c is past 1e9 (or δ unresolved) the error is charged as an absolute 32u."""
    idx = np.unique(np.linspace(0, grid.size - 1, min(grid.size, 2001)).astype(np.int64))
    d, err, tail = _replace_hockey_stick(grid[idx], s, p)
    d = d - err
    if not d[0] > 0:
        return 1.0, 32 * UNIT
    bad = np.flatnonzero(d <= 0)
    end = int(bad[0]) if bad.size else d.size
    abs_slack = 32 * UNIT * float(tail[end - 1]) if end < d.size else 0.0
    c = 1.0 / d[0]
    if end > 1:
        c = max(c, float(np.max(tail[: end - 1] / d[1:end])))
    c *= 1.01
    if not c <= 1e9:
        return 1.0, 32 * UNIT
    return (1.0 + 32 * UNIT * c) * (1 + 4 * UNIT), abs_slack + 1e-300


def _rounded_down(grid: np.ndarray, P: np.ndarray, Q: np.ndarray, k0: int, h: float, slack: float) -> PMF:
    """Optimistic: each cell [l_k, l_{k+1}) merged into one atom at l_k of μ-mass min(P, e^{l_k}Q) ≤ P, whose
    δ(ε) = (min(P, e^{l_k}Q) − e^ε·Q)₊ is at most the cell's (a garbling, then less loss); tails dropped."""
    probs = np.zeros(grid.size)
    with np.errstate(over="ignore"):
        probs[:-1] = np.minimum(P, np.exp(grid[:-1]) * Q) * (1.0 - 1e-12)
    return PMF(h, k0, probs, 0.0, False, slack)


def _poisson_add_optimistic(sigma: float, q: float, h: float) -> PMF:
    """The optimistic add-direction PLD of the Poisson-subsampled Gaussian step, cells rounded down (reconrisk's
    engine builds the remove direction's)."""
    lam_lo, lam_hi, _, _ = loss_range(sigma, q, "add")
    lam_hi = min(lam_hi, MAX_LOSS)
    if (lam_hi - lam_lo) / h > MAX_ATOMS:
        raise PLDRangeError(f"value_discretization must be >= {(lam_hi - lam_lo) / MAX_ATOMS:.3g} for "
                             f"noise_multiplier={sigma:g}, sample_rate={q:g}; found {h:g}")
    k0 = math.floor(lam_lo / h)
    k1 = max(math.ceil(lam_hi / h), k0 + 1)
    grid = np.arange(k0, k1 + 1) * h
    P, Q = cell_masses(grid, sigma, q, "add")
    return _rounded_down(grid, P, Q, k0, h, ROUNDOFF_PER_ATOM * grid.size + 1e-15)


def mixture_pmf(a: PMF, b: PMF, weight_a: float) -> PMF:
    """The PLD of the pair that is ``a``'s with probability ``weight_a`` and ``b``'s otherwise, the case revealed
    (μ-masses, infinity masses and slacks mixed; same grid and side, untilted)."""
    if a.h != b.h or a.pessimistic != b.pessimistic or not (a.plain and b.plain):
        raise ReconRiskError("mixture_pmf takes two untilted PMFs on one grid and one side")
    lo = min(a.offset, b.offset)
    hi = max(a.offset + a.probs.size, b.offset + b.probs.size)
    probs = np.zeros(hi - lo)
    probs[a.offset - lo: a.offset - lo + a.probs.size] += weight_a * a.probs
    probs[b.offset - lo: b.offset - lo + b.probs.size] += (1.0 - weight_a) * b.probs
    inf = weight_a * a.infinity_mass + (1.0 - weight_a) * b.infinity_mass
    slack = (weight_a * a.slack + (1.0 - weight_a) * b.slack) * (1 + 1e-12)
    probs *= (1 + 4 * UNIT) if a.pessimistic else (1 - 4 * UNIT)  # the two products and one sum per atom
    return PMF(a.h, lo, probs, min(1.0, inf), a.pessimistic, slack)


def truncated_poisson_pld(sigma: float, sampler: TruncatedPoisson, h: float, pessimistic: bool, direction: str) -> PMF:
    """The PLD of one Gaussian step (noise multiplier σ > 0) under truncated Poisson sampling (module docstring),
    for ``direction`` ∈ ("remove", "add"), pessimistic or optimistic."""
    if direction not in DIRECTIONS:
        raise ReconRiskError(f"direction must be one of {DIRECTIONS}; found {direction!r}")
    if sampler.never_samples:
        return PMF(h, 0, np.ones(1), 0.0, bool(pessimistic), 0.0)
    sigma = v.noise_multiplier("TruncatedSubsampledGaussianDpEvent.noise_multiplier", sigma)
    q = sampler.sampling_probability
    if pessimistic or direction == "remove":
        poisson = step_pmf(sigma, q, h, pessimistic=pessimistic, direction=direction)
    else:
        poisson = _poisson_add_optimistic(sigma, q, h)
    tau, p = sampler.truncation()
    if tau == 0.0:
        return poisson
    if p == 0.0:
        cut = PMF(h, 0, np.ones(1), 0.0, bool(pessimistic), 0.0)
    else:
        cut = replace_one_pmf(sigma / 2.0, p, h, pessimistic=pessimistic)
    return mixture_pmf(cut, poisson, tau)


def truncated_poisson_rdp(sigma: float, sampler: TruncatedPoisson, orders) -> np.ndarray:
    """An RDP curve bounding both directions of the step (module docstring), +inf where unbounded."""
    orders = np.asarray(orders, dtype=float)
    if sampler.never_samples:
        return np.zeros(orders.size)
    if sigma == 0.0:
        return np.full(orders.size, np.inf)
    d1 = subsampled_gaussian_rdp(sigma, sampler.sampling_probability, orders)
    tau, p = sampler.truncation()
    if tau == 0.0:
        return d1
    if p == 0.0:
        return _mix_rdp(orders, d1, np.zeros(orders.size), tau)
    d2 = replace_one_rdp(sigma / 2.0, p, orders)
    return _mix_rdp(orders, d1, d2, tau)


def replace_one_rdp(s: float, p: float, orders) -> np.ndarray:
    """D_α of the replace-one pair (noise std ``s``, probability ``p``; both orientations coincide): the smaller
    of log ∫P^αQ^{1−α}/(α − 1) by adaptive quadrature in log space with its error estimate added (as
    :mod:`reconrisk._src.accounting.rdp` does for fractional orders) and the joint-convexity bound
    log(1 − p + p·e^{(α−1)·2α/s²})/(α − 1)."""
    from scipy import integrate

    orders = np.asarray(orders, dtype=float)
    with np.errstate(over="ignore"):
        e2 = (orders - 1) * 2.0 * orders / s**2
        convex = (np.logaddexp(math.log1p(-p), math.log(p) + e2) if p < 1 else e2) / (orders - 1)
    if p == 1.0:
        return convex
    lp, lq = math.log(p), math.log1p(-p)
    out = convex.copy()
    for i, a in enumerate(orders):
        def log_f(x, a=a):
            up = np.logaddexp(lq - x * x / (2 * s * s), lp - (x + 1) ** 2 / (2 * s * s))
            lo = np.logaddexp(lq - x * x / (2 * s * s), lp - (x - 1) ** 2 / (2 * s * s))
            return a * up + (1 - a) * lo - 0.5 * math.log(2 * math.pi * s * s)
        lo_x, hi_x = -a - 2.0 - 40.0 * s, 2.0 + 40.0 * s
        xs = np.linspace(lo_x, hi_x, 4001)
        vals = log_f(xs)
        shift = float(vals.max())
        peak = float(xs[int(np.argmax(vals))])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                val, err = integrate.quad(lambda x: math.exp(float(log_f(x)) - shift), lo_x, hi_x,
                                          points=[peak, -1.0, 0.0, 1.0], limit=500, epsabs=0.0, epsrel=1e-11)
            except OverflowError:  # a peak narrower than the sampling grid (tiny noise): the convex bound stands
                continue
        if not caught and val > 0 and math.isfinite(val):  # a warned quadrature's error may be underestimated
            out[i] = min(out[i], (shift + math.log(val + abs(err) + 1e-14 * val)) / (a - 1))
    return np.maximum(out, 0.0)


def _mix_rdp(orders, d1, d2, tau):
    with np.errstate(over="ignore", invalid="ignore"):
        t = np.logaddexp(math.log1p(-tau) + (orders - 1) * d1, math.log(tau) + (orders - 1) * d2) \
            if tau < 1 else (orders - 1) * d2
    return t / (orders - 1)


@register
@dataclass(frozen=True)
class TruncatedSubsampledGaussian(Mechanism):
    """The Gaussian step of noise multiplier σ under :class:`TruncatedPoisson` sampling.

    A class of its own rather than :class:`~.gaussian.Gaussian` under a :class:`TruncatedPoisson` sampler: one class
    per ``dp_accounting`` event class (``TruncatedSubsampledGaussianDpEvent`` names the noise and the sampler
    together, so its reader is a mechanism), and the Gaussian class — which a :class:`~reconrisk._src.release.Release`
    holds on ``import reconrisk._src.release``'s numpy-only path — stays free of this scipy-built mixture and of the
    release paths (``release_refusal``, the Gaussian-only optimistic directions) that would have to exclude it.
    """

    noise_multiplier: float

    name = "truncated_subsampled_gaussian"
    event_types = ("TruncatedSubsampledGaussianDpEvent",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier", v.in_range(
            "TruncatedSubsampledGaussianDpEvent.noise_multiplier", self.noise_multiplier, 0.0, v.MAX_NOISE,
            low_open=False, high_open=False))

    def supports(self, sampler: Sampler) -> Support:
        if not isinstance(sampler, TruncatedPoisson):
            return Support(False, f"a truncated subsampled Gaussian step needs a truncated Poisson sampler; found "
                                  f"{sampler.describe()}")
        return Support(True)

    def has_pld(self, sampler) -> bool:
        """False only where :meth:`pld` builds none: noise below the PLD engine's range (the RDP curve answers)."""
        return sampler.never_samples or self.noise_multiplier == 0.0 or self.noise_multiplier >= v.MIN_NOISE

    def pld(self, sampler, h: float, *, pessimistic: bool, direction: str):
        if sampler.never_samples:
            return PMF(h, 0, np.ones(1), 0.0, bool(pessimistic), 0.0)
        if self.noise_multiplier == 0.0:
            return PMF(h, 0, np.zeros(1), 1.0, bool(pessimistic), 0.0)  # the drawn target is revealed
        if self.noise_multiplier < v.MIN_NOISE:
            return None
        return truncated_poisson_pld(self.noise_multiplier, sampler, h, pessimistic, direction)

    def rdp(self, sampler, orders) -> np.ndarray:
        return truncated_poisson_rdp(self.noise_multiplier, sampler, orders)

    def pure_epsilon(self, sampler) -> float:
        return 0.0 if sampler.never_samples else math.inf

    def gdp_mu(self, sampler) -> float | None:
        return 0.0 if sampler.never_samples else None

    def to_dp_event(self, sampler):
        from dp_accounting import dp_event

        return dp_event.TruncatedSubsampledGaussianDpEvent(sampler.dataset_size, sampler.sampling_probability,
                                                           sampler.truncated_batch_size, self.noise_multiplier)

    @classmethod
    def from_dp_event(cls, event, read) -> list[Step]:
        sampler = TruncatedPoisson(event.sampling_probability, event.dataset_size, event.truncated_batch_size)
        return [Step(cls(event.noise_multiplier), sampler)]

    def event_label(self, sampler) -> str:
        return (f"TruncatedSubsampledGaussianDpEvent(s={self.noise_multiplier:g}, q={sampler.sampling_probability:g}, "
                f"n={sampler.dataset_size}, B={sampler.truncated_batch_size})")


#: Sampling with replacement (below): the binomial mass left out of its mixture (+∞ pessimistic, dropped optimistic).
REPLACE_TAIL = 1e-15
#: Most draw counts m summed exactly in the RDP curve (beyond: bounded by the largest m's term).
RDP_TERMS = 100_000


@register
@dataclass(frozen=True)
class SampledWithReplacementGaussian(Mechanism):
    """A Gaussian step (noise multiplier s, relative to the replace-one sensitivity) on a batch of ``sample_size`` b
    draws **with replacement** from ``dataset_size`` n examples (replace-one neighbours, b public).

    The target is drawn M ~ Binomial(b, 1/n) times; given the draws, replacing it moves the noisy sum by at most M
    sensitivity units. Revealing M (post-processing can only hide it) makes the step, between any two replace-one
    neighbours, the mixture over m of Gaussian pairs with μ = m/s, each symmetric — so the step is dominated by
    that revealed mixture in either orientation, and its PLD is Σ_m π_m·PLD(G_{m/s}) (π_m the binomial masses,
    m = 0 a loss of 0). Sound, not tight: the amplification that hiding M gives is not claimed. RDP:
    e^{(α−1)D_α} = Σ_m π_m·e^{(α−1)α m²/(2s²)} (a revealed mixture's Rényi divergence). Read under
    :class:`~.samplers.NoAmplification` (the sampling is inside the step).
    """

    noise_multiplier: float
    sample_size: int
    dataset_size: int

    name = "sampled_with_replacement_gaussian"
    event_types = ("SampledWithReplacementDpEvent",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier", v.in_range(
            "SampledWithReplacementDpEvent's GaussianDpEvent.noise_multiplier", self.noise_multiplier, 0.0,
            v.MAX_NOISE, low_open=False, high_open=False))
        object.__setattr__(self, "dataset_size", v.integer("SampledWithReplacementDpEvent.source_dataset_size",
                                                           self.dataset_size, minimum=1, maximum=v.MAX_STEPS))
        object.__setattr__(self, "sample_size", v.integer("SampledWithReplacementDpEvent.sample_size",
                                                          self.sample_size, minimum=0, maximum=v.MAX_STEPS))

    def supports(self, sampler: Sampler) -> Support:
        if isinstance(sampler, NoAmplification):
            return Support(True)
        return Support(False, f"sampling with replacement is inside the step; it is not analysed under "
                              f"{sampler.describe()}")

    def relation(self, sampler: Sampler) -> str:
        return "replace_one"

    def counts(self) -> tuple[np.ndarray, np.ndarray, float]:
        """(m, π_m, the mass beyond): draw counts 0..m_max of the target, their binomial masses, and
        P[M > m_max] ≤ :data:`REPLACE_TAIL` (m_max ≤ b)."""
        from scipy import stats

        b, p = self.sample_size, 1.0 / self.dataset_size
        if b == 0 or p == 0.0:
            return np.zeros(1, dtype=np.int64), np.ones(1), 0.0
        m_max = int(min(b, max(1, stats.binom.isf(REPLACE_TAIL, b, p))))
        while m_max < b and stats.binom.sf(m_max, b, p) > REPLACE_TAIL:
            m_max += 1
        m = np.arange(m_max + 1)
        return m, stats.binom.pmf(m, b, p), float(stats.binom.sf(m_max, b, p)) if m_max < b else 0.0

    def has_pld(self, sampler) -> bool:
        return self.sample_size == 0 or self.noise_multiplier == 0.0 or self.noise_multiplier >= v.MIN_NOISE

    def pld(self, sampler, h: float, *, pessimistic: bool, direction: str):
        if direction not in DIRECTIONS:
            raise ReconRiskError(f"direction must be one of {DIRECTIONS}; found {direction!r}")
        m, pi, tail = self.counts()
        if m.size == 1 or self.noise_multiplier == 0.0:  # never drawn; or a drawn target is revealed
            return PMF(h, 0, np.array([pi[0]]), 1.0 - pi[0] if pessimistic else 0.0, bool(pessimistic), 0.0)
        if self.noise_multiplier < v.MIN_NOISE:
            return None
        parts = [PMF(h, 0, np.ones(1), 0.0, bool(pessimistic), 0.0)]  # m = 0: the step does not move
        for k in m[1:]:  # each Gaussian pair is symmetric: one direction stands for both
            try:
                parts.append(step_pmf(self.noise_multiplier / k, 1.0, h, pessimistic=True) if pessimistic
                             else _poisson_add_optimistic(self.noise_multiplier / k, 1.0, h))  # (cells rounded down)
            except PLDRangeError:  # counts this large: their mass to +∞ (pessimistic) or dropped
                if k == 1:
                    raise
                tail += float(pi[k:].sum())
                break
        pi = pi[: len(parts)]
        lo = min(q.offset for q in parts)
        hi = max(q.offset + q.probs.size for q in parts)
        probs = np.zeros(hi - lo)
        for w, q in zip(pi, parts):
            probs[q.offset - lo: q.offset - lo + q.probs.size] += w * q.probs
        inf = float(sum(w * q.infinity_mass for w, q in zip(pi, parts))) + (tail if pessimistic else 0.0)
        slack = float(sum(w * q.slack for w, q in zip(pi, parts))) * (1 + 1e-12)
        err = (len(parts) + 3) * UNIT  # one product and len(parts) sums per atom
        probs *= (1 + err) if pessimistic else (1 - err)
        return PMF(h, lo, probs, min(1.0, inf), bool(pessimistic), slack)

    def rdp(self, sampler, orders) -> np.ndarray:
        from scipy import stats

        orders = np.asarray(orders, dtype=float)
        b, n = self.sample_size, self.dataset_size
        if b == 0 or self.noise_multiplier == 0.0:
            return np.full(orders.size, 0.0 if b == 0 else np.inf)
        m = np.arange(min(b, RDP_TERMS) + 1, dtype=float)
        logp = stats.binom.logpmf(m, b, 1.0 / n)
        if b > RDP_TERMS:  # the mass beyond, at the largest count b
            m = np.append(m, float(b))
            logp = np.append(logp, stats.binom.logsf(RDP_TERMS, b, 1.0 / n))
        s2 = self.noise_multiplier ** 2
        with np.errstate(over="ignore"):
            terms = logp[None, :] + ((orders - 1) * orders)[:, None] * (m * m)[None, :] / (2 * s2)
        return np.maximum(special.logsumexp(terms, axis=1) / (orders - 1), 0.0)

    def pure_epsilon(self, sampler) -> float:
        return 0.0 if self.sample_size == 0 else math.inf

    def to_dp_event(self, sampler):
        from dp_accounting import dp_event
        return dp_event.SampledWithReplacementDpEvent(self.dataset_size, self.sample_size,
                                                      dp_event.GaussianDpEvent(self.noise_multiplier))

    @classmethod
    def from_dp_event(cls, event, read) -> list[Step]:
        inner = read(event.event)
        if len(inner) != 1 or not isinstance(inner[0].mechanism, Gaussian) or inner[0].count != 1 \
                or not isinstance(inner[0].sampler, NoAmplification):
            raise ReconRiskError("SampledWithReplacementDpEvent is read for one GaussianDpEvent; found "
                                 f"{' + '.join(s.event_name for s in inner) or 'nothing'}")
        return [Step(cls(inner[0].mechanism.noise_multiplier, event.sample_size, event.source_dataset_size),
                     NoAmplification())]

    def event_label(self, sampler) -> str:
        return (f"SampledWithReplacementDpEvent(n={self.dataset_size}, b={self.sample_size}, "
                f"GaussianDpEvent({self.noise_multiplier:g}))")
