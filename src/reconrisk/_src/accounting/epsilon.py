"""(ε, δ) accounting of DP-SGD and its inverses.

Accountants (``accountant=``):

``"pld"`` (default)
    reconrisk's privacy-loss-distribution accountant (:mod:`reconrisk._src.accounting.pld`):
    pessimistic connect-the-dots discretisation of the Poisson-subsampled
    Gaussian under add/remove adjacency, ε(δ) = max over the add and remove
    directions — the same algorithm as ``dp_accounting``'s ``PLDAccountant``
    (cross-checked in the tests) but without its import cost. For q = 1 the
    exact Gaussian-DP curve δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) is used
    (:mod:`reconrisk._src.accounting.gaussian`, evaluated in log space). Where δ is near or
    below what the untilted PLD can certify (its infinity mass and FFT round-off allowance,
    ~1e-11 after a thousand steps: ε would be +∞ there; ``RDP_NEAR_FLOOR``), the analysis reads
    exponentially tilted compositions of the same PLDs instead
    (:mod:`reconrisk._src.accounting.epsilon_tilt`: a two-sided bracket down to δ 1e-15 and
    beyond), and the RDP conversion below is a second opinion (the smaller upper end kept), so ε
    is finite at every δ down to 1e-300.
``"rdp"``
    Rényi DP over a fine fractional grid of orders (1.01 … 1024, the orders of
    dp_accounting and Opacus included; :mod:`reconrisk._src.accounting.rdp`) with the conversion
    ε = min_α [ε_α + log((α−1)/α) − (log δ + log α)/(α−1)] used by
    ``dp_accounting``'s ``RdpAccountant``.
``"dp_accounting"``
    Google's ``dp_accounting.pld.PLDAccountant`` itself (imported lazily;
    slower to import).

The accountant must match the ReRo bound's adjacency (add/remove, Poisson
sampling; spec_000 §5.5).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validate as v
from .._deprecated import moved_function
from ..errors import PLDRangeError, ReconRiskError
from .. import release as _rel  # (the module: release imports mechanisms, which import this package)
from . import pld as _pld
from .gaussian import gaussian_eps
from .rdp import minimise_over_orders

ACCOUNTANTS = ("pld", "rdp", "dp_accounting")
#: Losses above this are treated as infinite by the PLD accountant, so ε beyond
#: roughly this value is reported as ``inf`` (such ε carry no privacy meaning).
EPSILON_CAP = 250.0
#: Loss discretisation of the PLD accountant (dp_accounting's default is 1e-4).
PLD_DISCRETIZATION = 1e-4


def _release(noise_multiplier, sample_rate, steps, release) -> "_rel.Release":
    if release is not None:
        return _rel.gaussian_release(release, "this accountant")
    return _rel.Release(noise_multiplier, sample_rate, steps)


#: Noise multipliers outside this range are answered without a loss grid (σ² would under/overflow).
SIGMA_GRID_RANGE = (1e-100, 1e100)


def pld_grid(release: "_rel.Release", h: float) -> float:
    """The accountant's loss grid: ``h``, coarsened so that each step's loss grid stays below ~1e6 atoms (small σ)."""
    for seg in release.segments:
        lo, hi, _, _ = _pld.loss_range(seg.noise_multiplier, seg.sample_rate, "remove")
        h = max(h, (min(hi, _pld.MAX_LOSS) - lo) / 1e6)
    return h


def grid_refusal(release: "_rel.Release", exc: ReconRiskError) -> ReconRiskError:
    """The engine's grid limit (a :class:`~reconrisk.errors.PLDRangeError`, typed by the engine) said in the user's
    terms; any other error as it is."""
    if not isinstance(exc, (PLDRangeError, _pld.WindowTooLarge)):
        return exc
    sig = min(s.noise_multiplier for s in release.segments)
    return PLDRangeError(
        f"noise_multiplier={sig:g} is too small for the PLD accountant at this sample_rate (its privacy "
        "loss range needs more than a million grid points; ε is enormous here); use accountant='rdp' "
        "or a larger noise_multiplier"
    )


def epsilon_without_grid(release: "_rel.Release", delta: float) -> tuple[float, str] | None:
    """(ε, method) where no loss grid is needed — a noise multiplier beyond the grid's range, or every q = 1 (the
    exact Gaussian-DP profile, Balle & Wang 2018) — else None (the PLD reads it: :func:`epsilon_from_pmfs`)."""
    sigmas = [s.noise_multiplier for s in release.segments]
    if min(sigmas) < SIGMA_GRID_RANGE[0]:
        # the loss of a step that samples the target exceeds 1e199: with probability P(sampled ever)
        # the privacy loss is beyond EPSILON_CAP, so ε(δ) = inf for every δ below it
        p_ever = -math.expm1(sum(s.steps * math.log1p(-s.sample_rate) if s.sample_rate < 1 else -math.inf for s in release.segments))
        if delta < p_ever:
            return math.inf, "analytic"
        raise ReconRiskError(
            f"noise_multiplier={min(sigmas):g} is below {SIGMA_GRID_RANGE[0]:g} and delta={delta:g} is at least the "
            f"probability {p_ever:.3g} that the target is ever sampled; epsilon is not computed in this corner"
        )
    if max(sigmas) > SIGMA_GRID_RANGE[1] or release.full_batch:
        mu = math.sqrt(sum(s.steps * (1.0 / s.noise_multiplier) ** 2 for s in release.segments))
        return (0.0 if mu == 0.0 else gaussian_eps(1.0 / mu, delta)), "closed_form"
    return None


def epsilon_from_pmfs(pessimistic, delta: float) -> tuple[float, float]:
    """ε(δ) read off composed pessimistic privacy-loss distributions: ``(upper, floor)``.

    ``upper``: the largest ε of the ``pessimistic`` distributions (one per direction; the symmetrised one alone
    for replace-one pairs), a certified upper end; ``floor``: the smallest δ they can certify (:func:`pld_floor`,
    the largest of them). A function of the distributions only: the caller composes them (``PrivacyAnalysis.pmf``,
    which caches), and nothing here calls back to compose."""
    eps, floor = 0.0, 0.0
    for pmf in pessimistic:
        eps = max(eps, pmf.epsilon(delta))
        floor = max(floor, pld_floor(pmf))
    return eps, floor


def optimistic_epsilon(optimistic, delta: float, upper: float) -> float:
    """A certified lower end of ε(δ): the ``optimistic`` distribution's ε at δ plus its slack, never above ``upper``."""
    o = optimistic
    lo = o.epsilon(delta + o.slack) if delta + o.slack < 1 else 0.0
    return min(lo, upper)


def rdp_below_floor(release: "_rel.Release", delta: float, eps: float, floor: float) -> tuple[float, str]:
    """(ε, method): the PLD's ``eps``, or the RDP conversion's where δ is near or below the PLD's ``floor``
    (``RDP_NEAR_FLOOR``) and it is smaller (both certified upper ends)."""
    if delta < RDP_NEAR_FLOOR * floor and rdp_applies(release):
        rdp = _rdp_epsilon(release, delta)
        if rdp < eps:
            return rdp, "rdp"
    return eps, "pld"


#: The RDP conversion is consulted where δ is below this many times the PLD's floor (its infinity mass and
#: round-off allowance: ε is +∞ below it, and loose near it); elsewhere the PLD is within its grid of the truth.
RDP_NEAR_FLOOR = 1e3


def pld_floor(pmf) -> float:
    """The smallest δ a pessimistic PLD can certify: its infinity mass plus its round-off allowance above loss 0."""
    return float(pmf.infinity_mass + pmf.tail_error(0.0))


def rdp_applies(release: "_rel.Release") -> bool:
    """Whether an RDP bound is consulted below the PLD's floor: Poisson and full-batch releases (the remove pair's
    curve bounds both directions, Mironov, Talwar & Zhang 2019, Thm 5), and fixed-size batches or their σ/2
    stand-in (replace-one sampling without replacement: Wang, Balle & Kasiviswanathan 2019, see
    :func:`_wor_rdp_accountant`)."""
    return release.as_run.sampler in ("poisson", "full", "fixed")


#: RDP orders of the without-replacement bound (integer: Wang, Balle & Kasiviswanathan 2019 state it there)
_WOR_ORDERS = tuple(range(2, 65)) + (80, 100, 128, 160, 200, 256, 320, 400, 512, 700, 1000, 1500, 2000)


def _wor_rdp_accountant(release: "_rel.Release"):
    """``dp_accounting``'s RDP accountant (replace-one) over a fixed-size-batch release's events.

    Sampling without replacement under replace-one has its own RDP bound (Wang, Balle & Kasiviswanathan
    2019, Thm 9, as implemented by ``dp_accounting``); RDP composes adaptively, so it holds for every pair and
    every choice of orientation step by step. It is looser than the PLD where the PLD has room, and is used
    only below the PLD's floor (tiny δ), where the PLD says +∞."""
    import dp_accounting as dpa  # noqa: PLC0415  (slow import, only at tiny δ)
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_acc  # noqa: PLC0415

    acc = rdp_acc.RdpAccountant(list(_WOR_ORDERS), dpa.NeighboringRelation.REPLACE_ONE)
    acc.compose(release.as_run.to_dp_event())
    return acc


def rdp_delta(release: "_rel.Release", epsilon: float) -> float:
    """δ(ε) ≤ min_α exp((α − 1)(ε(α) − ε + log(1 − 1/α)) − log α) of the release's RDP curve (Canonne, Kamath &
    Steinke 2020, Prop. 12; the conversion of ``dp_accounting``'s ``RdpAccountant``), certified from above.
    Fixed-size batches: the without-replacement RDP bound (:func:`_wor_rdp_accountant`)."""
    if release.as_run.sampler == "fixed":
        return float(min(1.0, _wor_rdp_accountant(release).get_delta(epsilon)))

    def objective(a, e):
        return ((a - 1) * (e - epsilon + np.log1p(-1 / a)) - np.log(a))[None, :]

    best, _ = minimise_over_orders(release.segments, objective)
    return float(min(1.0, math.exp(min(0.0, float(best[0])))))


def _rdp_epsilon(release: "_rel.Release", delta: float) -> float:
    if release.as_run.sampler == "fixed":
        return float(_wor_rdp_accountant(release).get_epsilon(delta))

    def objective(a, e):
        return (e + np.log1p(-1 / a) - (math.log(delta) + np.log(a)) / (a - 1))[None, :]

    best, _ = minimise_over_orders(release.segments, objective)
    return float(max(0.0, best[0]))


def _dp_accounting_epsilon(release: "_rel.Release", delta: float) -> float:
    import dp_accounting  # noqa: PLC0415  (slow import, only on request)
    from dp_accounting.pld import pld_privacy_accountant

    acc = pld_privacy_accountant.PLDAccountant()
    for s in release.segments:
        event = dp_accounting.PoissonSampledDpEvent(s.sample_rate, dp_accounting.GaussianDpEvent(s.noise_multiplier))
        acc.compose(event, s.steps)
    return float(acc.get_epsilon(delta))


#: The accountant's door moved up to the analysis room, so that it reads the one composition cache
#: (:func:`reconrisk._src.analysis.accountant.epsilon`; ``reconrisk.epsilon``); this path forwards, with a warning.
epsilon = moved_function("reconrisk._src.accounting.epsilon", "..analysis.accountant", __package__, "epsilon")
