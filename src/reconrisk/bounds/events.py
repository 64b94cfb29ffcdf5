"""Certified answers for any ``dp_accounting`` ``DpEvent`` that has a privacy-loss distribution.

:class:`EventAnalysis` is what :meth:`PrivacyAnalysis.from_dp_event
<reconrisk.bounds.analysis.PrivacyAnalysis.from_dp_event>` returns for events
that are not Gaussian DP-SGD (those become a :class:`~reconrisk.release.Release`
and get the full analysis). It composes, on one loss grid ``h``, a pessimistic
and an optimistic privacy-loss distribution (PLD) of the event, both
directions, and answers ``epsilon``, ``delta``, ``rero`` and ``tradeoff`` as
two-sided :class:`~reconrisk.results.Bound` s / arrays.

Where the distributions come from:

* Gaussian steps (plain, Poisson-sampled, sampled without replacement): the
  reconrisk engine (:func:`reconrisk.accounting.pld.step_pmf`, the
  without-replacement step being the Poisson pair at the event's noise
  multiplier, see :meth:`Release.dominating <reconrisk.release.Release.dominating>`);
* Laplace, Poisson-sampled Laplace, discrete Laplace, randomized response and
  mixtures of Gaussians: ``dp_accounting``'s PLD constructors with
  ``pessimistic_estimate=True`` (connect-the-dots) and ``False`` (losses rounded
  down: every δ(ε) = E_P[(1 − e^{ε−L})₊] is non-decreasing in each loss, so
  rounding down can only lower the curve, and composition keeps the order),
  converted to reconrisk's :class:`~reconrisk.accounting.pmf.PMF` and composed
  by reconrisk (FFT round-off bounded as for the Gaussian engine).

Departures: ``dp_accounting``'s own discretisation carries no a-posteriori
round-off bound (it is float64 arithmetic on closed forms); the brackets are
as certified as those. The optimistic *add* direction exists only for the
``dp_accounting`` pieces; when Gaussian steps are composed in, ``lower`` comes
from the remove direction (as in :class:`PrivacyAnalysis`). Events that mix the
add/remove and replace-one relations are refused.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validate as v
from ..accounting import pld as _pld
from ..accounting.pmf import PMF
from ..errors import ReconRiskError
from ..results import Bound

#: Default loss grid of an event analysis.
EVENT_DISCRETIZATION = 1e-4
#: Losses kept in compositions (beyond: +∞ when pessimistic, the cap when optimistic).
EVENT_LOSS_CAP = 250.0

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


def _dpa_pld(event, h: float, pessimistic: bool, relation: str):
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


class EventAnalysis:
    """Two-sided certified (ε, δ), ReRo and trade-off values of a ``DpEvent`` (see the module docstring).

    >>> import dp_accounting as dpa
    >>> a = EventAnalysis(dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(2.0), 3))
    >>> b = a.epsilon(1e-6, two_sided=True); b.lower <= b.upper
    True
    """

    def __init__(self, event, *, value_discretization: float | None = None) -> None:
        from ..release import dp_event_leaves

        self.source = event
        self.release = None
        self.leaves = dp_event_leaves(event)
        if not self.leaves:
            raise ReconRiskError("the event holds no privacy-relevant step (only NoOpDpEvent)")
        self.relation = _relation({k for k, *_ in self.leaves})
        self.h = EVENT_DISCRETIZATION if value_discretization is None else v.positive(
            "value_discretization", value_discretization)
        self.has_gaussian = any(k in ("gaussian", "poisson", "fixed") for k, *_ in self.leaves)
        self._cache: dict[tuple[bool, str], PMF] = {}

    def __repr__(self) -> str:
        return f"EventAnalysis({self.source!r}, h={self.h:g})"

    def directions(self, pessimistic: bool) -> tuple[str, ...]:
        """Directions with a distribution on this side (optimistic *add* only without Gaussian steps)."""
        return ("remove", "add") if pessimistic or not self.has_gaussian else ("remove",)

    def pmf(self, *, pessimistic: bool, direction: str = "remove") -> PMF:
        """The composed PLD of the event (one side, one direction), composed once and cached."""
        key = (bool(pessimistic), v.choice("direction", direction, ("remove", "add")))
        if key in self._cache:
            return self._cache[key]
        if direction not in self.directions(pessimistic):
            raise ReconRiskError("the optimistic add direction is not available for Gaussian steps; use direction='remove'")
        total: PMF | None = None
        for kind, a, q, count in self.leaves:
            if kind in ("gaussian", "poisson", "fixed"):
                # without replacement: the Poisson pair at the event's noise multiplier (Release.dominating)
                step = _pld.step_pmf(a, q, self.h, pessimistic=pessimistic, direction=direction)
            else:
                d = _dpa_pld(a, self.h, pessimistic, self.relation)
                step = _from_dp_accounting(d._pmf_remove if direction == "remove" else d._pmf_add, pessimistic)
            part = step.self_compose(count, EVENT_LOSS_CAP)
            total = part if total is None else total.compose(part, EVENT_LOSS_CAP)
        assert total is not None
        self._cache[key] = total
        return total

    def _both(self, fn, pessimistic: bool) -> float:
        return max(fn(self.pmf(pessimistic=pessimistic, direction=d)) for d in self.directions(pessimistic))

    def delta(self, epsilon: float, *, two_sided: bool = True) -> Bound:
        """δ(ε), the max over both directions: ``upper`` from the pessimistic PLDs, ``lower`` from the optimistic ones."""
        eps = v.real("epsilon", epsilon)
        up = self._both(lambda p: float(p.delta([eps])[0]), True)
        lo = min(self._both(lambda p: float(p.delta([eps])[0]), False), up) if two_sided else None
        return Bound("delta", lo, up, method="pld", converged=True,
                     formula="hockey-stick divergence of the pessimistic (upper) and optimistic (lower) PLDs of the event",
                     details={"epsilon": eps, "discretization": self.h, "relation": self.relation})

    def epsilon(self, delta: float, *, two_sided: bool = True) -> Bound:
        """The smallest ε with the event (ε, δ)-DP, both directions, bracketed by the two PLDs."""
        d = v.probability_open("delta", delta)
        up = self._both(lambda p: p.epsilon(d), True)
        lo = min(self._both(lambda p: p.epsilon(d), False), up) if two_sided else None
        return Bound("epsilon", lo, up, method="pld", converged=True,
                     formula="smallest eps with delta(eps) <= delta on the pessimistic (upper) and optimistic (lower) PLDs",
                     details={"delta": d, "discretization": self.h, "relation": self.relation})

    def _blowup(self, kappa: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        up = np.max([self.pmf(pessimistic=True, direction=d).blowup(kappa) for d in ("remove", "add")], axis=0)
        lo = np.minimum(self.pmf(pessimistic=False, direction="remove").blowup(kappa), up)
        return lo, up

    def rero(self, kappa: float | None = None, *, prior_size: int | None = None) -> Bound:
        """Certified ReRo B_κ = sup{P(E) : Q(E) ≤ κ} of the remove pair (Hayes, Mahloujifar & Balle 2023, Cor. 4).

        ``upper`` is the larger of both directions' pessimistic values (sound whichever order an event's
        relation makes the worst), ``lower`` the remove direction's optimistic value.
        """
        from ..priors import resolve_kappa

        k = resolve_kappa(kappa, prior_size)
        lo, up = self._blowup(np.array([k]))
        det = {"kappa": k, "discretization": self.h, "relation": self.relation}
        if prior_size is not None:
            det["prior_size"] = prior_size
        return Bound("reconstruction", float(lo[0]), float(up[0]), method="pld", converged=True,
                     formula="B_kappa = inf_eps [e^eps kappa + delta(eps)] on the pessimistic and optimistic PLDs of the "
                             "event (Hayes, Mahloujifar & Balle 2023, Cor. 4)", details=det)

    def tradeoff(self, alphas) -> tuple[np.ndarray, np.ndarray]:
        """Bracket ``(lower, upper)`` on the trade-off curve f(α) = 1 − B_α of the remove pair (Dong, Roth & Su 2022)."""
        a, _ = v.positive_array("alphas", alphas)
        if np.any(a >= 1):
            raise ReconRiskError(f"alphas must be in (0, 1); found max {float(np.max(a)):g}")
        lo, up = self._blowup(np.atleast_1d(a))
        return 1.0 - up, 1.0 - lo
