"""One step of a ``dp_accounting`` event, as :class:`~reconrisk._src.analysis.events.EventAnalysis` reads it.

A leaf is ``(kind, noise_multiplier or event, sampling probability, count)``
(:func:`~reconrisk._src.release.dp_event_leaves`). Here: the neighbouring relation of a set of leaves, the checks
of degenerate steps, each step's privacy-loss distribution (the exact noiseless Gaussian step, and
``dp_accounting``'s constructors converted to reconrisk's :class:`~reconrisk._src.accounting.pmf.PMF`), and the
per-step numbers the event composes below the PLD's floor and for μ-GDP: pure ε, the RDP curve and μ².
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from .. import _validate as v
from ..accounting.pmf import PMF
from ..accounting.rdp import subsampled_gaussian_rdp
from ..errors import ReconRiskError

_ADD_REMOVE = ("gaussian", "poisson", "LaplaceDpEvent", "PoissonSampledDpEvent(LaplaceDpEvent)",
               "DiscreteLaplaceDpEvent", "MixtureOfGaussiansDpEvent")
_REPLACE_ONE = ("fixed", "RandomizedResponseDpEvent")


def _relation(kinds: set[str]) -> str:
    unknown = sorted(k for k in kinds if k not in _ADD_REMOVE + _REPLACE_ONE)
    if unknown:
        raise ReconRiskError(
            f"{unknown[0]} has no privacy-loss distribution reconrisk can build (supported: Gaussian, "
            "PoissonSampled and SampledWithoutReplacement Gaussian, Laplace, PoissonSampled Laplace, discrete Laplace, "
            "randomized response, mixture of Gaussians, SelfComposed, Composed)")
    add = any(k in _ADD_REMOVE and k != "gaussian" for k in kinds)
    rep = any(k in _REPLACE_ONE for k in kinds)
    if add and rep:
        raise ReconRiskError("the event mixes add/remove events (Poisson sampling, Laplace) with replace-one events "
                             "(sampling without replacement, randomized response); one guarantee needs one relation")
    return "replace_one" if rep else "add_remove"


def _from_dp_accounting(pmf, pessimistic: bool) -> PMF:
    """A ``dp_accounting`` PLD pmf (dense or sparse) as a reconrisk :class:`PMF` on the same grid."""
    h = float(pmf._discretization)
    if hasattr(pmf, "_probs"):
        offset, probs = int(pmf._lower_loss), np.asarray(pmf._probs, dtype=float)
    else:
        items = sorted(pmf._loss_probs.items())
        if not items:
            return PMF(h, 0, np.zeros(1), float(pmf._infinity_mass), pessimistic, 0.0)
        offset = int(items[0][0])
        probs = np.zeros(int(items[-1][0]) - offset + 1)
        for k, p in items:
            probs[int(k) - offset] += p
    return PMF(h, offset, probs.copy(), float(pmf._infinity_mass), pessimistic, 0.0)


def _never_sampled(kind: str, a, q) -> bool:
    """A Poisson-sampled step with probability 0: both worlds see the same output (dp_accounting: ε = 0)."""
    if kind in ("gaussian", "poisson", "fixed"):
        return q == 0.0
    return kind == "PoissonSampledDpEvent(LaplaceDpEvent)" and a.sampling_probability == 0.0


def _check_degenerate(kind: str, a, q) -> None:
    """Noise multipliers ≥ 0 and sampling probabilities in [0, 1], named in one line; zero noise without replacement
    is refused (its replace-one pair is not analysed here)."""
    if kind in ("gaussian", "poisson", "fixed"):
        v.in_range("GaussianDpEvent.noise_multiplier", a, 0.0, math.inf, low_open=False)
        v.in_range("sampling_probability", q, 0.0, 1.0, low_open=False, high_open=False)
        if kind == "fixed" and a == 0.0:
            raise ReconRiskError("a SampledWithoutReplacementDpEvent of GaussianDpEvent(0) (no noise) is not analysed; "
                                 "give a noise multiplier > 0")
    elif kind == "PoissonSampledDpEvent(LaplaceDpEvent)":
        v.in_range("PoissonSampledDpEvent.sampling_probability", a.sampling_probability, 0.0, 1.0, low_open=False,
                   high_open=False)
        if a.sampling_probability > 0:  # never sampled: the mechanism is never run, whatever its noise (ε = 0)
            v.positive("LaplaceDpEvent.noise_multiplier", a.event.noise_multiplier)
    elif kind == "LaplaceDpEvent":
        v.positive("LaplaceDpEvent.noise_multiplier", a.noise_multiplier)
    elif kind == "DiscreteLaplaceDpEvent":
        v.positive("DiscreteLaplaceDpEvent.noise_parameter", a.noise_parameter)
        v.integer("DiscreteLaplaceDpEvent.sensitivity", a.sensitivity, minimum=1)
    elif kind == "RandomizedResponseDpEvent":
        v.in_range("RandomizedResponseDpEvent.noise_parameter", a.noise_parameter, 0.0, 1.0, low_open=False,
                   high_open=False)
        v.integer("RandomizedResponseDpEvent.num_buckets", a.num_buckets, minimum=1)
    elif kind == "MixtureOfGaussiansDpEvent":
        _check_mixture(a)


def _check_mixture(event) -> None:
    """A mixture of Gaussians dp_accounting can build: σ > 0, finite sensitivities with probabilities summing to 1,
    and every sensitivity within 1/MIN_NOISE noise units (dp_accounting fails past that, or leaks its ValueError)."""
    name = "MixtureOfGaussiansDpEvent"
    sd = v.positive(f"{name}.standard_deviation", event.standard_deviation)
    try:
        sens = np.asarray(event.sensitivities, dtype=float)
        probs = np.asarray(event.sampling_probs, dtype=float)
    except (TypeError, ValueError):
        raise ReconRiskError(f"{name}.sensitivities and .sampling_probs must be lists of numbers; found "
                             f"{event.sensitivities!r:.60} and {event.sampling_probs!r:.60}") from None
    if sens.ndim != 1 or sens.size == 0 or sens.shape != probs.shape:
        raise ReconRiskError(f"{name}.sensitivities and .sampling_probs must be non-empty lists of equal length; "
                             f"found {sens.size} and {probs.size}")
    if not np.isfinite(sens).all() or (np.abs(sens) / sd > 1.0 / v.MIN_NOISE).any():
        raise ReconRiskError(f"{name}.sensitivities must be finite and at most {1.0 / v.MIN_NOISE:g} standard "
                             f"deviations ({sd:g}) in size; found {sens.tolist()!r:.80}")
    if not np.isfinite(probs).all() or (probs < 0).any() or abs(float(probs.sum()) - 1.0) > 1e-9:
        raise ReconRiskError(f"{name}.sampling_probs must be probabilities in [0, 1] summing to 1; found "
                             f"{probs.tolist()!r:.80} (sum {float(probs.sum()):.6g})")


def _noiseless_pmf(q: float, h: float, pessimistic: bool, direction: str) -> PMF:
    """The exact PLD of one Gaussian step with noise multiplier 0, sampled with probability q ∈ (0, 1].

    Outputs are points: ν = δ₀, μ = (1 − q)δ₀ + qδ₁. Remove: loss +∞ with probability q, log(1 − q) otherwise;
    add: loss −log(1 − q) with probability 1 (+∞ at q = 1). The finite loss is rounded up to the grid when
    pessimistic and down when optimistic (δ(ε) = E_P[(1 − e^{ε−L})₊] is non-decreasing in each loss). So
    δ(ε) = 1 − (1 − q)^T for every ε ≥ 0 over T such steps: ε = ∞ below that, ReRo = q + (1 − q)κ per step.
    """
    rnd = math.ceil if pessimistic else math.floor
    if q == 1.0:
        return PMF(h, 0, np.zeros(1), 1.0, bool(pessimistic), 0.0)
    if direction == "remove":
        return PMF(h, int(rnd(math.log1p(-q) / h)), np.array([1.0 - q]), q, bool(pessimistic), 0.0)
    return PMF(h, int(rnd(-math.log1p(-q) / h)), np.ones(1), 0.0, bool(pessimistic), 0.0)


def _dpa_pld(event, h: float, pessimistic: bool, relation: str):
    """dp_accounting's PLD of one step; whatever it raises on parameters the checks let through is one line."""
    try:
        return _dpa_pld_unchecked(event, h, pessimistic, relation)
    except (ValueError, TypeError, OverflowError, ZeroDivisionError) as exc:  # dp_accounting's own refusals
        if isinstance(exc, ReconRiskError):
            raise
        raise ReconRiskError(f"{type(event).__name__}: dp_accounting cannot build its privacy-loss distribution "
                             f"({exc})") from None


def _dpa_pld_unchecked(event, h: float, pessimistic: bool, relation: str):
    from dp_accounting import dp_event as de
    from dp_accounting.pld import privacy_loss_distribution as P
    from dp_accounting.privacy_accountant import NeighboringRelation as NR

    kw = {"value_discretization_interval": h, "pessimistic_estimate": pessimistic}
    dots = {"use_connect_dots": pessimistic}
    if isinstance(event, de.LaplaceDpEvent):
        return P.from_laplace_mechanism(v.positive("LaplaceDpEvent.noise_multiplier", event.noise_multiplier), **kw, **dots)
    if isinstance(event, de.PoissonSampledDpEvent):
        q = v.sample_rate("PoissonSampledDpEvent.sampling_probability", event.sampling_probability)
        b = v.positive("LaplaceDpEvent.noise_multiplier", event.event.noise_multiplier)
        return P.from_laplace_mechanism(b, sampling_prob=q, **kw, **dots)
    if isinstance(event, de.DiscreteLaplaceDpEvent):
        return P.from_discrete_laplace_mechanism(v.positive("DiscreteLaplaceDpEvent.noise_parameter", event.noise_parameter),
                                                 sensitivity=event.sensitivity, **kw)
    if isinstance(event, de.RandomizedResponseDpEvent):
        return P.from_randomized_response(v.positive("RandomizedResponseDpEvent.noise_parameter", event.noise_parameter),
                                          event.num_buckets, **kw, neighboring_relation=NR.REPLACE_ONE)
    if isinstance(event, de.MixtureOfGaussiansDpEvent):
        return P.from_mixture_gaussian_mechanism(event.standard_deviation, event.sensitivities, event.sampling_probs,
                                                 **kw, **dots)
    raise ReconRiskError(f"{type(event).__name__} has no privacy-loss distribution reconrisk can build")  # pragma: no cover


def _leaf_pure_eps(kind: str, a, q) -> float:
    """The pure ε of one step (both directions of its relation), inf when it has none: Laplace 1/b; Poisson-sampled
    Laplace log(1 + q(e^{1/b} − 1)) (amplification by subsampling, Balle, Barthe & Gaboardi 2018); discrete Laplace
    a·Δ; randomized response log(1 + k(1 − p)/p); a Gaussian step with q = 0 is 0 (the target is never used)."""
    if kind in ("gaussian", "poisson", "fixed"):
        return 0.0 if q == 0.0 else math.inf
    if kind == "LaplaceDpEvent":
        return 1.0 / a.noise_multiplier if a.noise_multiplier > 0 else math.inf
    if kind == "PoissonSampledDpEvent(LaplaceDpEvent)":
        qq, b = a.sampling_probability, a.event.noise_multiplier
        if qq == 0:
            return 0.0
        return math.inf if b <= 0 else float(np.logaddexp(math.log1p(-qq), math.log(qq) + 1.0 / b)) if qq < 1 else 1.0 / b
    if kind == "DiscreteLaplaceDpEvent":
        return float(a.noise_parameter * a.sensitivity)
    if kind == "RandomizedResponseDpEvent":
        p, k = a.noise_parameter, a.num_buckets
        return math.inf if p == 0 else (0.0 if k == 1 else math.log1p(k * (1 - p) / p))
    return math.inf


def _leaf_rdp(kind: str, a, q, orders: np.ndarray) -> np.ndarray:
    """One step's RDP curve (both directions bounded) at ``orders`` > 1, inf where reconrisk has none.

    Gaussian, q = 1: α/(2σ²); Poisson-sampled: :func:`~reconrisk._src.accounting.rdp.subsampled_gaussian_rdp` (the remove
    direction dominates, Mironov, Talwar & Zhang 2019, Thm 5); Laplace: Mironov 2017, Prop. 6; any other pure ε-DP
    step: the randomized-response pair of that ε, (1/(α−1))·log((e^{αε} + e^{(1−α)ε})/(1 + e^ε)), which every ε-DP
    pair is a post-processing of (its trade-off curve is f_{ε,0}); sampled without replacement (replace-one, the
    event's noise multiplier in the relation's units): Wang, Balle & Kasiviswanathan 2019's bound as
    ``dp_accounting`` computes it (RDP composes adaptively, so it holds whichever orientation each step takes);
    mixture steps: inf.
    """
    orders = np.asarray(orders, dtype=float)
    if kind == "fixed":
        if q == 0.0:
            return np.zeros(orders.size)
        if a <= 0:
            return np.full(orders.size, np.inf)
        try:  # dp_accounting's implementation of the bound (a module-level helper of its RDP accountant)
            from dp_accounting.rdp.rdp_privacy_accountant import _compute_rdp_sample_wor_gaussian as wor
        except ImportError:  # pragma: no cover - a dp_accounting without it: no RDP value (never unsound)
            return np.full(orders.size, np.inf)
        return np.asarray(wor(q, a, orders), dtype=float)
    if kind in ("gaussian", "poisson"):
        if q == 0.0:
            return np.zeros(orders.size)
        if a <= 0:
            return np.full(orders.size, np.inf)
        return subsampled_gaussian_rdp(a, q, orders)
    if kind == "LaplaceDpEvent" and a.noise_multiplier > 0:
        lam, o = 1.0 / a.noise_multiplier, orders
        with np.errstate(over="ignore"):
            t = np.logaddexp(np.log(o / (2 * o - 1)) + (o - 1) * lam, np.log((o - 1) / (2 * o - 1)) - o * lam)
        return t / (o - 1)
    e = _leaf_pure_eps(kind, a, q)
    if e == 0.0:
        return np.zeros(orders.size)
    if not math.isfinite(e):
        return np.full(orders.size, np.inf)
    o = orders
    return (np.logaddexp(o * e, (1 - o) * e) - np.logaddexp(0.0, e)) / (o - 1)


def _pure_dp_mu(eps: float) -> float:
    """The smallest μ with f_{ε,0} ≥ G_μ: 2Φ⁻¹(e^ε/(1 + e^ε)) = −2Φ⁻¹(1/(1 + e^ε))."""
    return math.inf if math.isinf(eps) else float(-2.0 * special.ndtri(1.0 / (1.0 + math.exp(min(eps, 700.0)))))


def _leaf_mu(kind: str, a, count: int, q=None) -> float | None:
    """count·μ² of one leaf (see :meth:`EventAnalysis.gdp_mu`), None where no GDP bound is known here."""
    if _never_sampled(kind, a, q):
        return 0.0
    if kind in ("gaussian", "poisson", "fixed"):
        return math.inf if a == 0 else count / float(a) ** 2
    if kind in ("LaplaceDpEvent", "PoissonSampledDpEvent(LaplaceDpEvent)"):
        b = a.noise_multiplier if kind == "LaplaceDpEvent" else a.event.noise_multiplier
        return count * _pure_dp_mu(1.0 / b) ** 2
    if kind == "DiscreteLaplaceDpEvent":
        return count * _pure_dp_mu(a.noise_parameter * a.sensitivity) ** 2
    if kind == "RandomizedResponseDpEvent":
        p, k = a.noise_parameter, a.num_buckets
        return count * _pure_dp_mu(math.inf if p == 0 else math.log1p(k * (1 - p) / p)) ** 2
    return None
