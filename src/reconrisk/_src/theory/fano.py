"""Fano's bound on reconstruction success (Guo, Sablayrolles & Sanjabi 2022, as compared in Hayes, Mahloujifar & Balle 2023, App. H).

Theory layer: numpy/scipy only. Natural logarithms throughout.

Fano's inequality for an adversary that guesses the target Z (prior π over
|π| candidates) from the release W: with error probability P_e,
``H(π) − I(π; W) ≤ h(P_e) + P_e log(|π| − 1)``. Hayes, Mahloujifar & Balle 2023 (App. H) writes it as

    f(t) = H(π) − I(π; W) + t log t + (1 − t) log(1 − t) − t log(|π| − 1),

take the smallest t ∈ [0, 1] with f(t) ≤ 0; then ``p_success ≤ 1 − t`` and the
advantage (Hayes, Mahloujifar & Balle 2023, Eq. 4) is ``(p_success − p_π^max)/(1 − p_π^max)``.
:func:`fano_bound` solves it by bisection and returns a certified bracket on t:
f(t_lo) > 0 strictly, so the true P_e ≥ t_lo and ``success.upper = 1 − t_lo``
is an upper bound whatever the bisection's precision (its width is reported):
the result's ``success`` :class:`~reconrisk._src.results.Bound`.

Upper bounds on the mutual information I:

* :func:`gaussian_mutual_information` — Hayes, Mahloujifar & Balle 2023, App. H's closed form for the
  Gaussian mechanism, ``I ≤ −Σ_i p_i log(p_i + (1 − p_i) exp(−Δ²/(2σ²)))``
  (pairwise output distance Δ, noise std σ). It is the Kolchinsky–Tracey
  pairwise-KL bound ``−Σ_i p_i log Σ_j p_j exp(−KL(P_i‖P_j))`` with
  KL = Δ²/(2σ²) for i ≠ j. spec_000 reproduces Table 2's "Guo" row with
  Δ = √2 (orthonormal candidates), T = 1, q = 1. For T full-batch DP-SGD steps
  the KLs add (chain rule), so ``Δ²/σ² → T·Δ²/σ²``; clipped gradients are at
  most Δ = 2C apart (antipodal), the worst case used by
  :func:`release_mutual_information`.
* :func:`kl_mutual_information` — the "golden formula" ``I(Z; W) ≤ Σ_i p_i
  KL(P_i ‖ Q)`` with Q the release *without* the target: per step the
  add/remove KL of the subsampled Gaussian, ``KL((1−q)N(0,σ²) + qN(1,σ²) ‖
  N(0,σ²))`` (σ in units of C; the worst case over gradients of norm ≤ C
  because (μ, ν) is a dominating pair and KL is an f-divergence), summed over
  steps by the chain rule. It is Hayes, Mahloujifar & Balle's (2023) remark "an (α, ε)-RDP mechanism
  gives I ≤ ε" taken at α → 1 (the smallest order, hence the tightest). It
  holds for any q; at q = 1 it is ``T/(2σ²)``.

Departures from the printed paper: the paper gives the closed form for one
Gaussian step only; the T-step and subsampled forms above are ours, derived as
stated (chain rule of KL), not the paper's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import integrate, special

from .. import _validate as v
from .._deprecated import warn_renamed
from ..errors import ReconRiskError
from ..release import Release, gaussian_release
from ..results import Bound

__all__ = [
    "FanoBound",
    "fano_bound",
    "gaussian_mutual_information",
    "kl_step",
    "kl_mutual_information",
    "release_mutual_information",
]

#: Fano's inequality as Hayes, Mahloujifar & Balle 2023, App. H solve it.
FORMULA = "smallest t with H - I + t log t + (1-t) log(1-t) - t log(N-1) <= 0; success <= 1 - t"
#: Bisection steps on t: 2^-200 is far below double precision, so the bracket is as tight as floats allow.
_BISECTIONS = 200


@dataclass(frozen=True)
class FanoBound:
    """Fano's upper bound on the success of guessing one of ``prior_size`` candidates.

    ``success`` bounds P(success) from above (``success.upper = 1 − t_lo``; its ``details`` hold the bisection's
    ``error_bracket``), ``advantage`` the advantage ``(success − p_max)/(1 − p_max)`` clipped at 0. The
    scalar names of earlier releases, ``success_upper`` and ``advantage_upper``, still read (deprecated).
    """

    prior_size: int
    entropy: float  # H(π), nats
    mutual_information: float  # the upper bound on I(π; W) used, nats
    success: Bound  # upper = 1 − t_lo: certified upper bound on P(success)
    advantage: Bound  # upper = (success.upper − p_max)/(1 − p_max), clipped at 0
    error_bracket: tuple[float, float]  # (t_lo, t_hi): the smallest t with f(t) ≤ 0 lies inside
    formula: str = FORMULA

    @property
    def success_upper(self) -> float:
        warn_renamed("FanoBound.success_upper", "FanoBound.success.upper", "reconrisk")
        return self.success.upper

    @property
    def advantage_upper(self) -> float:
        warn_renamed("FanoBound.advantage_upper", "FanoBound.advantage.upper", "reconrisk")
        return self.advantage.upper

    def to_dict(self) -> dict:
        """JSON-ready, with the keys of earlier releases (``success_upper``, ``advantage_upper``: the Bounds' ends)."""
        return {"prior_size": self.prior_size, "entropy": self.entropy, "mutual_information": self.mutual_information,
                "success_upper": self.success.upper, "advantage_upper": self.advantage.upper,
                "error_bracket": list(self.error_bracket), "formula": self.formula}


def _fano_f(t: float, gap: float, log_rest: float) -> float:
    """f(t) = (H − I) − h(t) − t log(N − 1), with h the binary entropy in nats."""
    h = -(special.xlogy(t, t) + special.xlog1py(1.0 - t, -t))
    return gap - h - t * log_rest


def fano_bound(mutual_information: float, prior_size: int, *, entropy: float | None = None) -> FanoBound:
    """Hayes, Mahloujifar & Balle 2023, App. H: p_success ≤ 1 − t* with t* the smallest t where f(t) ≤ 0.

    ``entropy`` defaults to log N (uniform prior, p_max = 1/N); give H(π) for
    another prior over N candidates (then the advantage still uses 1/N as p_max
    only for the uniform case — pass the uniform case for advantages).
    """
    n = v.integer("prior_size", prior_size, minimum=2)
    info = v.real("mutual_information", mutual_information, allow_inf=True)
    if info < 0:
        raise ReconRiskError(f"mutual_information must be >= 0 (nats); found {info!r}")
    log_n = math.log(n)
    h = log_n if entropy is None else v.in_range("entropy", entropy, 0.0, log_n, low_open=False, high_open=False)
    gap = h - info
    log_rest = math.log(n - 1) if n > 2 else 0.0
    p_max = 1.0 / n
    if not gap > 0:  # I ≥ H: Fano says nothing
        t_lo = t_hi = 0.0
    else:
        # f is decreasing on [0, (N−1)/N] from H − I > 0 to H − I − log N ≤ 0: bisect keeping f(lo) > 0 ≥ f(hi)
        lo, hi = 0.0, 1.0 - p_max
        if _fano_f(hi, gap, log_rest) > 0:  # only when H > log N within rounding: no error can be excluded
            lo = hi
        for _ in range(_BISECTIONS):
            mid = 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:
                break
            if _fano_f(mid, gap, log_rest) > 0:
                lo = mid
            else:
                hi = mid
        t_lo, t_hi = lo, hi
    success = 1.0 - t_lo
    adv = max(0.0, (success - p_max) / (1.0 - p_max))
    det = {"prior_size": n, "entropy": h, "mutual_information": info, "error_bracket": (t_lo, t_hi)}
    src = "Fano's inequality (Guo, Sablayrolles & Sanjabi 2022; Hayes, Mahloujifar & Balle 2023, App. H): "
    return FanoBound(
        n, h, info,
        Bound("reconstruction", None, success, method="fano", formula=src + FORMULA, details=det),
        Bound("reconstruction_advantage", None, adv, method="fano",
              formula=src + "(success - 1/N)/(1 - 1/N), clipped at 0", details=det),
        (t_lo, t_hi))


def gaussian_mutual_information(prior_size: int, distance_over_sigma: float, *, steps: int = 1) -> float:
    """Hayes, Mahloujifar & Balle 2023, App. H: ``I ≤ −Σ_i p_i log(p_i + (1 − p_i) exp(−T·Δ²/(2σ²)))`` for a uniform prior (p_i = 1/N).

    ``distance_over_sigma`` is Δ/σ of one step (Δ: distance between any two
    candidates' outputs; σ: noise std); ``steps`` full-batch steps add their KLs.
    Computed in log space: ``log(p + (1−p)e^{−a}) = logaddexp(log p, log1p(−p) − a)``.
    """
    n = v.integer("prior_size", prior_size, minimum=2)
    r = v.positive("distance_over_sigma", distance_over_sigma, allow_inf=True)
    t = v.steps("steps", steps)
    a = t * r * r / 2.0
    p = 1.0 / n
    return float(-np.logaddexp(math.log(p), math.log1p(-p) - a))


def kl_step(noise_multiplier: float, sample_rate: float) -> tuple[float, float]:
    """KL((1−q)N(0,σ²) + qN(1,σ²) ‖ N(0,σ²)) in nats and its quadrature error bound.

    q = 1: exactly 1/(2σ²). Otherwise ``(1−q)E[L(σU)] + qE[L(σU + 1)]`` with
    U ~ N(0, 1) and the per-step privacy loss
    ``L(x) = logaddexp(log(1−q), log q + (2x − 1)/(2σ²))`` (as in
    :mod:`reconrisk._src.measures.montecarlo`), by adaptive quadrature.
    """
    s = v.noise_multiplier("noise_multiplier", noise_multiplier)
    q = v.sample_rate("sample_rate", sample_rate)
    if q == 1.0:
        return 1.0 / (2.0 * s * s), 0.0
    lq, l1q = math.log(q), math.log1p(-q)

    def loss(x):
        return np.logaddexp(l1q, lq + (2.0 * x - 1.0) / (2.0 * s * s))

    def integrand(u):
        phi = math.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi)
        return phi * ((1.0 - q) * loss(s * u) + q * loss(s * u + 1.0))

    # the loss grows linearly in u, the Gaussian weight kills it beyond |u| ~ 40
    val, err = integrate.quad(integrand, -40.0, 40.0, epsabs=1e-14, epsrel=1e-12, limit=400, points=[0.0, 1.0 / s])
    # the tails beyond ±40 carry < 1e-300 mass times a loss linear in u: negligible, but counted
    err += 1e-300
    return max(float(val), 0.0), float(err)


#: A schedule with more distinct (σ, q) than this reads each step's KL at the smallest σ of its σ bucket.
KL_BUCKETS_ABOVE = 32
#: The width (ratio) of those buckets.
KL_BUCKET = 1.01


def kl_mutual_information(release: Release) -> tuple[float, float]:
    """``I ≤ Σ_segments T_s · KL_step(σ_s, q_s)`` (golden formula + chain rule) and its quadrature error.

    A schedule of more than :data:`KL_BUCKETS_ABOVE` distinct (σ, q) (a noise scheduler's: one quadrature per
    step took minutes at 10⁴ steps) reads every step at the smallest σ of its bucket (σ within a ratio of
    :data:`KL_BUCKET`, same q): the KL falls as σ grows (the pair at a larger σ is a post-processing of the
    pair at a smaller one: add independent noise), so the sum is still an upper bound, at most ~2 % above.
    """
    release = gaussian_release(release, "the Fano bound")  # fixed-size batches: the dominating release (σ/2)
    steps: dict[tuple[float, float], int] = {}
    for seg in release.segments:
        key = (seg.noise_multiplier, seg.sample_rate)
        steps[key] = steps.get(key, 0) + seg.steps
    if len(steps) > KL_BUCKETS_ABOVE:
        buckets: dict[tuple[int, float], list] = {}
        for (s, q), n in steps.items():
            b = buckets.setdefault((math.floor(math.log(s) / math.log(KL_BUCKET)), q), [s, 0])
            b[0], b[1] = min(b[0], s), b[1] + n
        steps = {(s, q): n for (_, q), (s, n) in buckets.items()}
    total = err = 0.0
    for (s, q), n in steps.items():
        k, e = kl_step(s, q)
        total += n * k
        err += n * e
    return total, err


def release_mutual_information(release: Release, prior_size: int) -> dict:
    """The tightest certified upper bound on I(Z; W) for a uniform prior over ``prior_size`` candidates.

    The minimum of :func:`kl_mutual_information` (any q; plus its quadrature
    error, so it stays an upper bound) and, when every step is full batch,
    :func:`gaussian_mutual_information` with Δ = 2C (any two clipped gradients)
    over T steps — each is an upper bound, so their minimum is one.
    """
    release = gaussian_release(release, "the Fano bound")
    n = v.integer("prior_size", prior_size, minimum=2)
    kl, kl_err = kl_mutual_information(release)
    out = {"kl_chain_rule": kl + kl_err, "kl_quadrature_error": kl_err, "gaussian_closed_form": None}
    if release.full_batch:
        # Σ_s T_s·(2/σ_s)² = the composed (Δ/σ)²; pass it as one step of that distance
        r2 = sum(seg.steps * (2.0 / seg.noise_multiplier) ** 2 for seg in release.segments)
        out["gaussian_closed_form"] = gaussian_mutual_information(n, math.sqrt(r2))
    cands = {k: x for k, x in out.items() if k in ("kl_chain_rule", "gaussian_closed_form") and x is not None}
    best = min(cands, key=cands.get)
    out["mutual_information"] = cands[best]
    out["source"] = best
    return out
