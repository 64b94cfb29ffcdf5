"""The one contract every analysis keeps: :class:`Analysis`, and :class:`Support`.

Modelled on ``dp_accounting``'s ``PrivacyAccountant`` (an abstract base whose ``supports(event)`` says
what it can account for) and on optax (one shape for every transform). Three analyses implement it:

* :class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis` — a DP-SGD :class:`~reconrisk._src.release.Release`
  (σ, q, T and the sampler known: every question, two-sided);
* :class:`~reconrisk._src.analysis.events.EventAnalysis` — a ``dp_accounting`` ``DpEvent`` with a privacy-loss
  distribution (two-sided, no σ, q, T);
* :class:`~reconrisk._src.analysis.guarantee.GuaranteeAnalysis` — a guarantee alone ((ε, δ), RDP, zCDP, VMF's
  curve): upper ends only.

Each answers the same six questions with the same signatures — :meth:`Analysis.epsilon`,
:meth:`Analysis.delta`, :meth:`Analysis.rero`, :meth:`Analysis.tradeoff`, :meth:`Analysis.risk`,
:meth:`Analysis.gdp_mu` — and :meth:`Analysis.supports` says, in one line, where a question is not
defined for it; the methods refuse such a question with that line (:class:`~reconrisk.errors.ReconRiskError`).
The mathematics (:mod:`reconrisk._src.measures`) reads an analysis through this contract and never asks
which of the three it holds. :func:`reconrisk._src.analysis.dispatch.analyse` turns a release, an event or an
analysis into its analysis.
"""

from __future__ import annotations

import abc
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from ..errors import ReconRiskError
from ..measures.risk import canonical_measure
from ..results import Bound, Support  # noqa: F401  (Support re-exported: the contract's answer)
from .risk import risk as _risk

#: The questions :meth:`Analysis.supports` answers, and what each asks.
QUESTIONS = {
    "epsilon": "the smallest eps with the source (eps, delta)-DP (Analysis.epsilon)",
    "delta": "delta(eps), the hockey-stick divergence (Analysis.delta)",
    "rero": "the reconstruction robustness bound at a prior kappa (Analysis.rero)",
    "tradeoff": "the trade-off curve f(alpha) (Analysis.tradeoff)",
    "risk": "the risk measures of `reconrisk risk` (Analysis.risk)",
    "gdp_mu": "a certified range of the smallest Gaussian-DP mu (Analysis.gdp_mu)",
    "gdp_mu_upper": "a finite upper end of that mu",
    "two_sided": "certified lower ends beside the upper ones (two_sided=True, rel_tol, lower of every result)",
    "rero_lower": "a certified lower end of ReRo",
    "rero_closed_form": "ReRo in closed form (rero(method='closed_form'): every q = 1, or one step)",
    "rero_rdp": "the RDP baseline of ReRo (rero(method='rdp'): Hayes, Mahloujifar & Balle 2023, Eq. 2)",
    "rero_mc": "the Monte-Carlo estimate of ReRo (rero(method='mc'))",
    "mechanism": "the mechanism's sigma, q and T (attacks, RDP and Fano baselines, Cherubin et al.'s closed form)",
    "calibrate": "calibrating the noise multiplier sigma to a target (reconrisk.calibrate)",
    "distributions": "privacy-loss distributions (Analysis.pmf)",
}


#: The questions that read a DP-SGD release's σ, q and T, and how a refusal names each.
RELEASE_ONLY = {"mechanism": "the question", "calibrate": "calibrating the noise multiplier",
                "rero_closed_form": "the closed-form ReRo (method 'closed_form')",
                "rero_rdp": "the RDP baseline of ReRo (method 'rdp')",
                "rero_mc": "the Monte-Carlo ReRo estimate (method 'mc')"}


def hashable(x):
    """``x`` as a memo key: sequences and arrays as tuples of floats, anything else as it is."""
    if isinstance(x, (list, tuple, np.ndarray)):
        return tuple(np.asarray(x, dtype=float).ravel().tolist())
    return x


def with_details(b: Bound, **extra) -> Bound:
    """``b`` with ``extra`` added to its details (a new frozen result)."""
    return replace(b, details={**b.details, **extra})


class Analysis(abc.ABC):
    """What reconrisk certifies about one source, asked many times (see the module docstring).

    Subclasses implement the six questions and :meth:`_refusal` (the one-line reason a question of
    :data:`QUESTIONS` is not defined for them, ``None`` where it is). They hold ``source`` (what was
    analysed) and ``release`` (the DP-SGD release whose σ, q, T are known, ``None`` where none is).
    """

    release = None
    _memo: dict

    # -- the contract ------------------------------------------------------------------------------
    @abc.abstractmethod
    def epsilon(self, delta: float, *, two_sided: bool = False, rel_tol: float | None = None) -> Bound:
        """The smallest ε with the source (ε, δ)-DP: ``upper`` certified, ``lower`` too with ``two_sided``."""

    @abc.abstractmethod
    def delta(self, epsilon: float, *, two_sided: bool = False, rel_tol: float | None = None) -> Bound:
        """δ(ε), the hockey-stick divergence: ``upper`` certified, ``lower`` too with ``two_sided``."""

    @abc.abstractmethod
    def rero(self, kappa: float | None = None, *, prior_size: int | None = None, **options) -> Bound:
        """Certified ReRo at κ (or the uniform prior over ``prior_size`` candidates; Hayes, Mahloujifar &
        Balle 2023, Cor. 4)."""

    @abc.abstractmethod
    def tradeoff(self, alphas, *, tol: float | None = None, **options):
        """The trade-off curve f(α) at every α, as a :class:`~reconrisk._src.measures.tradeoff.TradeOff`."""

    @abc.abstractmethod
    def gdp_mu(self, alphas=None) -> Bound:
        """Certified range of the smallest μ with the source μ-Gaussian-DP (Dong, Roth & Su 2022)."""

    @abc.abstractmethod
    def _refusal(self, question: str) -> str | None:
        """The one-line reason ``question`` is not defined here, or None where it is."""

    def risk(self, measure: str, **kwargs) -> Bound:
        """Certified bracket on one risk measure of ``reconrisk risk`` (:func:`reconrisk._src.analysis.risk.risk`)."""
        m = canonical_measure(measure)
        key = ("risk", m, tuple(sorted((k, hashable(x)) for k, x in kwargs.items())))
        return self._memoised(key, lambda: _risk(self, m, **kwargs))

    @property
    def pair(self) -> "Analysis":
        """The analysis that answers questions about pairs of neighbouring data sets (ε, δ, the curve, the
        membership measures, μ-GDP): the analysis itself unless a subclass composes a symmetrised view."""
        return self

    @abc.abstractmethod
    def total_variation(self, tol: float) -> tuple[float | None, float, dict]:
        """(lower, upper, details) of TV = δ(0) = max_α (1 − α − f(α)), the δ-based measures' reading."""

    @abc.abstractmethod
    def prior_success(self, prior_values, counts, tol: float) -> tuple[float | None, float, float | None, dict]:
        """(lower, upper, log λ, details) of the best success S(π) over a finite prior (the RAD's reading,
        :func:`reconrisk._src.analysis.risk.reconstruction_advantage`): distinct prior values and their counts."""

    def supports(self, question: str) -> Support:
        """Whether ``question`` (a key of :data:`QUESTIONS`) is defined for this analysis, with a one-line reason
        where it is not.

        The vocabulary: ``epsilon``, ``delta``, ``rero``, ``tradeoff``, ``risk``, ``gdp_mu`` (the six
        questions); ``gdp_mu_upper`` (a finite upper end of μ); ``two_sided`` and ``rero_lower`` (certified lower
        ends: not for a guarantee alone); ``rero_closed_form``, ``rero_rdp``, ``rero_mc`` (ReRo's other methods:
        a release's σ, q, T); ``mechanism`` and ``calibrate`` (σ, q, T known: releases only);
        ``distributions`` (privacy-loss distributions: releases and events).

        >>> from reconrisk import GuaranteeAnalysis
        >>> s = GuaranteeAnalysis("dp", epsilon=1.0).supports("rero_lower")
        >>> bool(s), s.reason
        (False, 'a guarantee alone bounds every risk from above only (no lower ends)')
        """
        if question not in QUESTIONS:
            raise ReconRiskError(f"question must be one of {sorted(QUESTIONS)}; found {question!r}")
        reason = self._refusal(question)
        return Support(True, "") if reason is None else Support(False, reason)

    def require(self, question: str) -> None:
        """Refuse ``question`` with :meth:`supports`' reason (a :class:`~reconrisk.errors.ReconRiskError`)."""
        s = self.supports(question)
        if not s:
            raise ReconRiskError(s.reason)

    # -- shared machinery ----------------------------------------------------------------------------
    @classmethod
    def from_dp_event(cls, event, *, value_discretization: float | None = None) -> "Analysis":
        """The analysis of a ``dp_accounting`` ``DpEvent`` (:func:`reconrisk._src.analysis.dispatch.analyse_dp_event`)."""
        return _ENTRY_POINTS["dp_event"](event, value_discretization=value_discretization)

    @staticmethod
    def from_guarantee(source: str, **guarantee) -> "Analysis":
        """What a guarantee alone certifies (:class:`~reconrisk._src.analysis.guarantee.GuaranteeAnalysis`)."""
        return _ENTRY_POINTS["guarantee"](source, **guarantee)

    def _memoised(self, key: tuple, compute: Callable[[], Any]):
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def describe(self) -> dict[str, Any]:
        """What was analysed, as JSON-ready keys."""
        src = self.source
        return src.to_dict() if hasattr(src, "to_dict") else {"source": repr(src)}

    def to_dict(self) -> dict[str, Any]:
        """The analysis as JSON-ready keys: its kind and :meth:`describe`."""
        return {"analysis": type(self).__name__, **self.describe()}


#: The dispatch's entry points, registered by :mod:`reconrisk._src.analysis.dispatch` (which imports the three
#: analyses; this module stays below them).
_ENTRY_POINTS: dict[str, Callable[..., Analysis]] = {}


def register_entry_points(**entries: Callable[..., Analysis]) -> None:
    """Register the dispatch (``dp_event``, ``guarantee``) that :meth:`Analysis.from_dp_event` and
    :meth:`Analysis.from_guarantee` delegate to."""
    _ENTRY_POINTS.update(entries)
