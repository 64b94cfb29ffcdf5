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
    below what the PLD can certify (its infinity mass and FFT round-off allowance,
    ~1e-12 after a thousand steps: ε would be +∞ there), the RDP conversion below is
    taken too and the smaller upper end kept (``RDP_NEAR_FLOOR``), so ε is finite at
    every δ down to 1e-300.
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
from ..errors import ReconRiskError
from ..release import Release, gaussian_release
from . import pld as _pld
from .gaussian import gaussian_eps
from .rdp import minimise_over_orders

ACCOUNTANTS = ("pld", "rdp", "dp_accounting")
#: Losses above this are treated as infinite by the PLD accountant, so ε beyond
#: roughly this value is reported as ``inf`` (such ε carry no privacy meaning).
EPSILON_CAP = 250.0
#: Loss discretisation of the PLD accountant (dp_accounting's default is 1e-4).
PLD_DISCRETIZATION = 1e-4


def _release(noise_multiplier, sample_rate, steps, release) -> Release:
    if release is not None:
        return gaussian_release(release, "this accountant")
    return Release(noise_multiplier, sample_rate, steps)


#: Noise multipliers outside this range are answered without a loss grid (σ² would under/overflow).
SIGMA_GRID_RANGE = (1e-100, 1e100)


def pld_grid(release: Release, h: float) -> float:
    """The accountant's loss grid: ``h``, coarsened so that each step's loss grid stays below ~1e6 atoms (small σ)."""
    for seg in release.segments:
        lo, hi, _, _ = _pld.loss_range(seg.noise_multiplier, seg.sample_rate, "remove")
        h = max(h, (min(hi, _pld.MAX_LOSS) - lo) / 1e6)
    return h


def pld_epsilon(release: Release, delta: float, compose=None, *, with_lower: bool = False, lower: bool = True,
                symmetric: bool = False):
    """The PLD accountant's ε at ``delta`` on its grid (see :func:`_pld_epsilon`), its grid limit said in the
    user's terms. ``compose``: ``PrivacyAnalysis.pmf`` when an analysis asks (it caches).
    ``symmetric``: compose the symmetrised per-step curve instead of the two directions (fixed-size batches,
    replace-one: :func:`reconrisk._src.accounting.pld.symmetrised`; ignored when ``compose`` is given)."""
    if compose is None and symmetric:
        def compose(h, **kw):
            return _pld.compose_segments(release.segments, h, **{**kw, "direction": "symmetric"})
    try:
        return _pld_epsilon(release, delta, PLD_DISCRETIZATION, compose, with_lower=with_lower, lower=lower)
    except ReconRiskError as exc:
        if "value_discretization" not in str(exc):
            raise
        sig = min(s.noise_multiplier for s in release.segments)
        raise ReconRiskError(
            f"noise_multiplier={sig:g} is too small for the PLD accountant at this sample_rate (its privacy "
            "loss range needs more than a million grid points; ε is enormous here); use accountant='rdp' "
            "or a larger noise_multiplier"
        ) from None


def _pld_epsilon(release: Release, delta: float, h: float, compose=None, *, with_lower: bool = False,
                 lower: bool = True):
    """ε(δ) of the pessimistic PLDs (max over both directions); with ``with_lower`` the tuple
    ``(lower, upper, method, h)``, ``lower`` the optimistic remove-direction ε (a certified lower end) when
    ``lower`` is true, else None. ``compose`` is the composer (``PrivacyAnalysis.pmf``, which caches; default:
    compose afresh)."""
    if compose is None:
        def compose(h, **kw):
            return _pld.compose_segments(release.segments, h, **kw)
    up, method, h = _pld_epsilon_upper(release, delta, h, compose)
    if not with_lower:
        return up
    if method not in ("pld", "rdp"):
        return up, up, method, None
    if not lower:
        return None, up, method, h
    o = compose(h, pessimistic=False, direction="remove", loss_cap=EPSILON_CAP)
    lo = o.epsilon(delta + o.slack) if delta + o.slack < 1 else 0.0
    return min(lo, up), up, method, h


def _pld_epsilon_upper(release: Release, delta: float, h: float, compose) -> tuple[float, str, float | None]:
    sigmas = [s.noise_multiplier for s in release.segments]
    if min(sigmas) < SIGMA_GRID_RANGE[0]:
        # the loss of a step that samples the target exceeds 1e199: with probability P(sampled ever)
        # the privacy loss is beyond EPSILON_CAP, so ε(δ) = inf for every δ below it
        p_ever = -math.expm1(sum(s.steps * math.log1p(-s.sample_rate) if s.sample_rate < 1 else -math.inf for s in release.segments))
        if delta < p_ever:
            return math.inf, "analytic", None
        raise ReconRiskError(
            f"noise_multiplier={min(sigmas):g} is below {SIGMA_GRID_RANGE[0]:g} and delta={delta:g} is at least the "
            f"probability {p_ever:.3g} that the target is ever sampled; epsilon is not computed in this corner"
        )
    if max(sigmas) > SIGMA_GRID_RANGE[1] or release.full_batch:
        mu = math.sqrt(sum(s.steps * (1.0 / s.noise_multiplier) ** 2 for s in release.segments))
        return (0.0 if mu == 0.0 else gaussian_eps(1.0 / mu, delta)), "closed_form", None
    h = pld_grid(release, h)
    eps, floor = 0.0, 0.0
    for direction in ("remove", "add"):
        pmf = compose(h, pessimistic=True, direction=direction, loss_cap=EPSILON_CAP)
        eps = max(eps, pmf.epsilon(delta))
        floor = max(floor, pld_floor(pmf))
    if delta < RDP_NEAR_FLOOR * floor and rdp_applies(release):
        rdp = _rdp_epsilon(release, delta)
        if rdp < eps:
            return rdp, "rdp", h
    return eps, "pld", h


#: The RDP conversion is consulted where δ is below this many times the PLD's floor (its infinity mass and
#: round-off allowance: ε is +∞ below it, and loose near it); elsewhere the PLD is within its grid of the truth.
RDP_NEAR_FLOOR = 1e3


def pld_floor(pmf) -> float:
    """The smallest δ a pessimistic PLD can certify: its infinity mass plus its round-off allowance above loss 0."""
    return float(pmf.infinity_mass + pmf.tail_error(0.0))


def rdp_applies(release: Release) -> bool:
    """Whether an RDP bound is consulted below the PLD's floor: Poisson and full-batch releases (the remove pair's
    curve bounds both directions, Mironov, Talwar & Zhang 2019, Thm 5), and fixed-size batches or their σ/2
    stand-in (replace-one sampling without replacement: Wang, Balle & Kasiviswanathan 2019, see
    :func:`_wor_rdp_accountant`)."""
    return release.as_run.sampler in ("poisson", "full", "fixed")


#: RDP orders of the without-replacement bound (integer: Wang, Balle & Kasiviswanathan 2019 state it there)
_WOR_ORDERS = tuple(range(2, 65)) + (80, 100, 128, 160, 200, 256, 320, 400, 512, 700, 1000, 1500, 2000)


def _wor_rdp_accountant(release: Release):
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


def rdp_delta(release: Release, epsilon: float) -> float:
    """δ(ε) ≤ min_α exp((α − 1)(ε(α) − ε + log(1 − 1/α)) − log α) of the release's RDP curve (Canonne, Kamath &
    Steinke 2020, Prop. 12; the conversion of ``dp_accounting``'s ``RdpAccountant``), certified from above.
    Fixed-size batches: the without-replacement RDP bound (:func:`_wor_rdp_accountant`)."""
    if release.as_run.sampler == "fixed":
        return float(min(1.0, _wor_rdp_accountant(release).get_delta(epsilon)))

    def objective(a, e):
        return ((a - 1) * (e - epsilon + np.log1p(-1 / a)) - np.log(a))[None, :]

    best, _ = minimise_over_orders(release.segments, objective)
    return float(min(1.0, math.exp(min(0.0, float(best[0])))))


def _rdp_epsilon(release: Release, delta: float) -> float:
    if release.as_run.sampler == "fixed":
        return float(_wor_rdp_accountant(release).get_epsilon(delta))

    def objective(a, e):
        return (e + np.log1p(-1 / a) - (math.log(delta) + np.log(a)) / (a - 1))[None, :]

    best, _ = minimise_over_orders(release.segments, objective)
    return float(max(0.0, best[0]))


def _dp_accounting_epsilon(release: Release, delta: float) -> float:
    import dp_accounting  # noqa: PLC0415  (slow import, only on request)
    from dp_accounting.pld import pld_privacy_accountant

    acc = pld_privacy_accountant.PLDAccountant()
    for s in release.segments:
        event = dp_accounting.PoissonSampledDpEvent(s.sample_rate, dp_accounting.GaussianDpEvent(s.noise_multiplier))
        acc.compose(event, s.steps)
    return float(acc.get_epsilon(delta))


def epsilon(
    noise_multiplier: float | None = None,
    sample_rate: float = 1.0,
    steps: int = 1,
    delta: float = 1e-5,
    accountant: str = "pld",
    *,
    release: Release | None = None,
) -> float:
    """ε of DP-SGD at ``delta`` (add/remove adjacency, Poisson sampling), as a float: the accountant's number.

    Give ``noise_multiplier, sample_rate, steps`` or a ``release`` (which may be
    a heterogeneous schedule).

    This is the one public function that answers a certified number with a plain float, by design: it is the
    drop-in for an accountant's ``get_epsilon(delta)`` (Opacus, ``dp_accounting``), whose callers compare and
    format it as a number. It is the upper end of the certified bracket: with ``accountant="pld"``,
    ``epsilon(release=r, delta=d) == PrivacyAnalysis(r).epsilon(d).upper`` to the last bit, and that
    :class:`~reconrisk._src.results.Bound` (lower end, method, formula) is the result to keep where the number is
    reported.
    """
    rel = _release(noise_multiplier, sample_rate, steps, release)
    delta = v.probability_open("delta", delta)
    accountant = v.choice("accountant", accountant, ACCOUNTANTS)
    # fixed-size batches (replace-one): ε is a statement about pairs, whose orientation may change from step
    # to step; the PLD accountant composes the symmetrised per-step curve (Dong, Roth & Su 2022, Thm 4.2).
    # The RDP accountant uses the without-replacement RDP bound (Wang, Balle & Kasiviswanathan 2019), a theorem
    # for replace-one pairs in either orientation, composed adaptively (see _wor_rdp_accountant).
    fixed = rel.as_run.sampler == "fixed"
    if accountant == "pld":
        return pld_epsilon(rel, delta, symmetric=fixed)
    if accountant == "rdp":
        return _rdp_epsilon(rel, delta)
    if fixed:
        raise ReconRiskError("accountant='dp_accounting' has no privacy-loss distribution for fixed-size batches "
                             "(sampling without replacement, replace-one); use accountant='pld' or 'rdp'")
    return _dp_accounting_epsilon(rel, delta)
