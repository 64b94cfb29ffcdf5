"""(ε, δ) accounting of DP-SGD and its inverses.

Accountants (``accountant=``):

``"pld"`` (default)
    reconrisk's privacy-loss-distribution accountant (:mod:`reconrisk.accounting.pld`):
    pessimistic connect-the-dots discretisation of the Poisson-subsampled
    Gaussian under add/remove adjacency, ε(δ) = max over the add and remove
    directions — the same algorithm as ``dp_accounting``'s ``PLDAccountant``
    (cross-checked in the tests) but without its import cost. For q = 1 the
    exact Gaussian-DP curve δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) is used
    (:mod:`reconrisk.accounting.gaussian`, evaluated in log space).
``"rdp"``
    Rényi DP over a fine fractional grid of orders (1.01 … 1024, the orders of
    dp_accounting and Opacus included; :mod:`reconrisk.accounting.rdp`) with the conversion
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
from .._roots import bisect_log
from . import pld as _pld
from .rdp import minimise_over_orders
from ..errors import ReconRiskError
from ..release import Release, gaussian_release

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


def _pld_epsilon(release: Release, delta: float, h: float) -> float:
    sigmas = [s.noise_multiplier for s in release.segments]
    if min(sigmas) < SIGMA_GRID_RANGE[0]:
        # the loss of a step that samples the target exceeds 1e199: with probability P(sampled ever)
        # the privacy loss is beyond EPSILON_CAP, so ε(δ) = inf for every δ below it
        p_ever = -math.expm1(sum(s.steps * math.log1p(-s.sample_rate) if s.sample_rate < 1 else -math.inf for s in release.segments))
        if delta < p_ever:
            return math.inf
        raise ReconRiskError(
            f"noise_multiplier={min(sigmas):g} is below {SIGMA_GRID_RANGE[0]:g} and delta={delta:g} is at least the "
            f"probability {p_ever:.3g} that the target is ever sampled; epsilon is not computed in this corner"
        )
    if max(sigmas) > SIGMA_GRID_RANGE[1] or release.full_batch:
        from .gaussian import gaussian_eps  # exact GDP profile, in log space

        mu = math.sqrt(sum(s.steps * (1.0 / s.noise_multiplier) ** 2 for s in release.segments))
        return 0.0 if mu == 0.0 else gaussian_eps(1.0 / mu, delta)
    # keep each step's loss grid below ~1e6 atoms for very small σ
    for seg in release.segments:
        lo, hi, _, _ = _pld._loss_range(seg.noise_multiplier, seg.sample_rate, "remove")
        h = max(h, (min(hi, _pld.MAX_LOSS) - lo) / 1e6)
    eps = 0.0
    for direction in ("remove", "add"):
        pmf = _pld.compose_segments(release.segments, h, pessimistic=True, direction=direction, loss_cap=EPSILON_CAP)
        eps = max(eps, pmf.epsilon(delta))
    return eps


def _rdp_epsilon(release: Release, delta: float) -> float:
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
    """ε of DP-SGD at ``delta`` (add/remove adjacency, Poisson sampling).

    Give ``noise_multiplier, sample_rate, steps`` or a ``release`` (which may be
    a heterogeneous schedule).
    """
    rel = _release(noise_multiplier, sample_rate, steps, release)
    delta = v.probability_open("delta", delta)
    accountant = v.choice("accountant", accountant, ACCOUNTANTS)
    if accountant == "pld":
        try:
            return _pld_epsilon(rel, delta, PLD_DISCRETIZATION)
        except ReconRiskError as exc:  # the engine's grid limit, said in the user's terms (issue 10)
            if "value_discretization" not in str(exc):
                raise
            sig = min(s.noise_multiplier for s in rel.segments)
            raise ReconRiskError(
                f"noise_multiplier={sig:g} is too small for the PLD accountant at this sample_rate (its privacy "
                "loss range needs more than a million grid points; ε is enormous here); use accountant='rdp' "
                "or a larger noise_multiplier"
            ) from None
    if accountant == "rdp":
        return _rdp_epsilon(rel, delta)
    return _dp_accounting_epsilon(rel, delta)


def _epsilon_of(sigma: float, q: float, t: int, delta: float, accountant: str, h: float | None = None) -> float:
    if h is not None:
        return _pld_epsilon(Release(sigma, q, t), delta, h)
    return epsilon(sigma, q, t, delta, accountant)


def noise_multiplier_for_epsilon(
    epsilon: float,
    sample_rate: float = 1.0,
    steps: int = 1,
    delta: float = 1e-5,
    accountant: str = "pld",
    *,
    rel_tol: float = 1e-4,
) -> float:
    """Smallest noise multiplier σ with ε(σ, q, T, δ) ≤ ``epsilon``.

    Monotone bisection on log σ; the returned σ satisfies the target (it is the
    upper end of a bracket of relative width ≤ ``rel_tol``).
    """
    target = v.epsilon("epsilon", epsilon)
    q = v.sample_rate("sample_rate", sample_rate)
    t = v.steps("steps", steps)
    delta = v.probability_open("delta", delta)
    accountant = v.choice("accountant", accountant, ACCOUNTANTS)
    rel_tol = v.in_range("rel_tol", rel_tol, 0.0, 1.0)
    if q == 1.0 and accountant == "pld":
        from .gaussian import gaussian_sigma  # exact: ε depends on μ = √T/σ only

        return gaussian_sigma(target, delta, steps=t)
    # coarse grid first (cheap), then the accountant's own grid inside a narrow bracket
    if accountant == "pld":
        lo_c, hi_c = bisect_log(
            lambda s: _epsilon_of(s, q, t, delta, accountant, 1e-3) <= target, 0.1, 1.0, rel_tol=5e-3,
            name="noise_multiplier",
        )
        lo0, hi0 = lo_c / 1.02, hi_c * 1.02
    else:
        lo0, hi0 = 0.1, 1.0
    _, hi = bisect_log(
        lambda s: _epsilon_of(s, q, t, delta, accountant) <= target, lo0, hi0, rel_tol=rel_tol,
        name="noise_multiplier",
    )
    return hi
