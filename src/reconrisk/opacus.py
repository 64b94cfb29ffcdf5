"""Opacus integration: certified risk where users train (optional extra ``reconrisk[opacus]``).

This module never imports ``opacus`` or ``torch`` itself — it reads an
accountant's ``history`` and calls a :class:`~opacus.PrivacyEngine`'s own
``make_private`` — and nothing in the core imports this module, so the core
install stays free of both.

* :func:`release_from_opacus` (also ``Release.from_opacus``): a
  :class:`~reconrisk.Release` from a ``PrivacyEngine`` or any Opacus
  accountant; Opacus keeps the history as ``[(noise_multiplier, sample_rate,
  num_steps), …]`` (``IAccountant.history``), exactly a
  :meth:`Release.schedule`.
* :class:`ReconRiskAccountant`: a drop-in Opacus accountant
  (``privacy_engine.accountant = ReconRiskAccountant()``) with Opacus's
  interface — ``step(noise_multiplier=, sample_rate=)``, ``get_epsilon(delta)``,
  ``history``, ``state_dict``/``load_state_dict``, ``mechanism()``,
  ``__len__``, ``get_optimizer_hook_fn`` — plus ``rero(kappa)``,
  ``tradeoff(alphas)`` and ``risk(measure, …)`` on the same history.
  ``get_epsilon`` is reconrisk's PLD accountant (add/remove, Poisson), a
  pessimistic (upper) bound like Opacus's PRV accountant's ``eps_upper``.
* :func:`make_private_with_risk`: calibrates σ so that the certified bound on
  ``measure`` after ``epochs`` epochs is ≤ ``target`` and hands it to
  ``privacy_engine.make_private``.
* :class:`OneRunAudit` (from :mod:`reconrisk.opacus_audit`): a one-run
  audit (Steinke, Nasr & Jagielski 2023; Mahloujifar, Melis & Chaudhuri
  2025) hooked into the user's ``DPOptimizer``: gradient canaries in, a lower
  bound on the replace-one ε out, beside the certified one.

Departure from Opacus: ``len(accountant)`` is the number of optimisation
steps (what Opacus's ``IAccountant.__len__`` docstring promises); Opacus's
own accountants return the number of history segments. Both are > 0 exactly
when a step was taken, which is all ``PrivacyEngine`` relies on.
"""

from __future__ import annotations

import copy
import warnings
from collections import OrderedDict
from typing import Any, Callable

from . import _validate as v
from .errors import ReconRiskError
from .release import Release, extend_history

MECHANISM = "reconrisk"


def release_from_opacus(privacy_engine_or_accountant, *, clip_norm: float = 1.0, data_loader=None) -> Release:
    """The :class:`Release` an Opacus ``PrivacyEngine`` (or accountant) has accounted so far (= ``Release.from_opacus``)."""
    return Release.from_opacus(privacy_engine_or_accountant, clip_norm=clip_norm, data_loader=data_loader)


def register_with_opacus(*, force: bool = False) -> bool:
    """Register :class:`ReconRiskAccountant` in Opacus's accountant registry as ``"reconrisk"``.

    Then ``PrivacyEngine(accountant="reconrisk")`` and
    ``opacus.accountants.create_accountant("reconrisk")`` build it. Returns False (and
    changes nothing) when the installed Opacus has no registry (before
    ``opacus.accountants.register_accountant``); True when registered (or already
    registered as this class). ``force`` replaces another class under the name.
    """
    try:
        from opacus import accountants as _acc  # noqa: PLC0415 - optional extra, imported only here
    except ImportError:
        raise ReconRiskError("register_with_opacus needs opacus (pip install 'reconrisk[opacus]')") from None
    register = getattr(_acc, "register_accountant", None)
    if register is None:
        return False
    existing = getattr(getattr(_acc, "registry", None), "_ACCOUNTANTS", {}).get(MECHANISM)
    if existing is ReconRiskAccountant:
        return True
    try:
        register(MECHANISM, ReconRiskAccountant, force=force)
    except ValueError as exc:
        raise ReconRiskError(f"Opacus already has an accountant named {MECHANISM!r} ({exc}); pass force=True") from None
    return True


class ReconRiskAccountant:
    """An Opacus-compatible privacy accountant that also reports certified risks.

    >>> acct = ReconRiskAccountant()
    >>> for _ in range(100):
    ...     acct.step(noise_multiplier=1.0, sample_rate=0.01)
    >>> acct.history, len(acct)
    ([(1.0, 0.01, 100)], 100)
    """

    def __init__(self) -> None:
        self.history: list[tuple[float, float, int]] = []
        self._analysis = None  # the PrivacyAnalysis of the history as it stood when last asked

    @property
    def analysis(self):
        """The :class:`~reconrisk.bounds.analysis.PrivacyAnalysis` of the history so far: every question
        (ε, ReRo, the trade-off curve, the risks) asked between two steps shares its distributions."""
        from .bounds.analysis import PrivacyAnalysis

        rel = self.release
        if self._analysis is None or self._analysis.release != rel:
            self._analysis = PrivacyAnalysis(rel)
        return self._analysis

    # -- Opacus accountant interface ------------------------------------------------------
    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one optimisation step (merged into the last history entry when σ and q repeat)."""
        sigma = v.positive("noise_multiplier", noise_multiplier)
        q = v.sample_rate("sample_rate", sample_rate)
        extend_history(self.history, sigma, q)

    def get_epsilon(self, delta: float, *, accountant: str = "pld", **kwargs) -> float:
        """ε spent so far at ``delta`` (reconrisk's PLD accountant by default; 0 before any step)."""
        delta = v.probability_open("delta", delta)
        if not self.history:
            return 0.0
        if accountant == "pld":
            return float(self.analysis.epsilon(delta).upper)
        from .accounting import epsilon

        return float(epsilon(release=self.release, delta=delta, accountant=accountant))

    def __len__(self) -> int:
        return int(sum(n for _, _, n in self.history))

    @classmethod
    def mechanism(cls) -> str:
        return MECHANISM

    def get_optimizer_hook_fn(self, sample_rate: float) -> Callable[[Any], None]:
        """The callback ``PrivacyEngine.make_private`` attaches to its ``DPOptimizer`` (as Opacus's accountants)."""
        q = v.sample_rate("sample_rate", sample_rate)

        def hook_fn(optim) -> None:
            self.step(noise_multiplier=optim.noise_multiplier, sample_rate=q * optim.accumulated_iterations)

        return hook_fn

    def state_dict(self, destination=None):
        if destination is None:
            destination = OrderedDict()
        destination["history"] = copy.deepcopy(self.history)
        destination["mechanism"] = self.mechanism()
        return destination

    def load_state_dict(self, state_dict) -> None:
        if not state_dict or "history" not in state_dict or "mechanism" not in state_dict:
            raise ReconRiskError("state_dict must hold 'history' and 'mechanism'; found " + repr(state_dict)[:80])
        if state_dict["mechanism"] != self.mechanism():
            raise ReconRiskError(
                f"state_dict of mechanism {state_dict['mechanism']!r} cannot be loaded into a {self.mechanism()!r} accountant"
            )
        hist = [tuple(h) for h in state_dict["history"]]
        if hist:
            Release.schedule(hist)  # validates every entry
        self.history = [(float(s), float(q), int(n)) for s, q, n in hist]

    # -- reconrisk additions -------------------------------------------------------------
    @property
    def release(self) -> Release:
        return release_from_opacus(self)

    def rero(self, kappa: float | None = None, *, prior_size: int | None = None):
        """Certified ReRo bracket of the history so far (same as ``reconrisk bound`` for that release)."""
        return self.analysis.rero(kappa, prior_size=prior_size)

    def tradeoff(self, alphas):
        """Certified trade-off curve of the history so far (:func:`reconrisk.bounds.tradeoff.tradeoff`)."""
        return self.analysis.tradeoff(alphas)

    def risk(self, measure: str = "reconstruction", **kwargs):
        """Certified bracket on one risk measure (:func:`reconrisk.bounds.risk.risk`)."""
        return self.analysis.risk(measure, **kwargs)


def make_private_with_risk(
    privacy_engine,
    module,
    optimizer,
    data_loader,
    *,
    measure: str = "reconstruction",
    target: float = 0.05,
    epochs: int,
    max_grad_norm: float,
    prior_size: int | None = None,
    kappa: float | None = None,
    baseline: float | None = None,
    prior=None,
    fpr: float | None = None,
    **make_private_kwargs,
):
    """Opacus's ``make_private`` with σ calibrated so that the certified ``measure`` after ``epochs`` ≤ ``target``.

    The sample rate is Opacus's own, 1/len(data_loader) (Poisson sampling),
    and the number of steps is ``epochs · len(data_loader)``. Returns what
    ``privacy_engine.make_private`` returns; the calibration (the one calibrator's
    :class:`~reconrisk.bounds.calibrate.Calibration` as a dict: ``noise_multiplier``,
    ``sample_rate``, ``steps``, ``bound`` …) is kept on ``privacy_engine.reconrisk_calibration``.
    """
    from .bounds.calibrate_risk import calibrate_risk

    epochs = v.integer("epochs", epochs, minimum=1)
    max_grad_norm = v.positive("max_grad_norm", max_grad_norm)
    try:
        n_batches = len(data_loader)
    except TypeError:
        raise ReconRiskError(f"data_loader must have a length; found {type(data_loader).__name__}") from None
    n_batches = v.integer("len(data_loader)", n_batches, minimum=1)
    acct = getattr(privacy_engine, "accountant", None)
    if acct is not None and len(acct) > 0:
        warnings.warn("make_private_with_risk: the accountant has already recorded steps; the calibration assumes a "
                      "fresh start, so the final risk will be higher than the target", stacklevel=2)
    kw = {k: x for k, x in dict(prior_size=prior_size, kappa=kappa, baseline=baseline, prior=prior, fpr=fpr).items()
          if x is not None}
    cal = calibrate_risk(measure, target, "noise_multiplier", sample_rate=1.0 / n_batches, steps=epochs * n_batches, **kw)
    privacy_engine.reconrisk_calibration = cal
    return privacy_engine.make_private(
        module=module, optimizer=optimizer, data_loader=data_loader, noise_multiplier=cal["noise_multiplier"],
        max_grad_norm=max_grad_norm, **make_private_kwargs,
    )


def _register_if_loaded() -> None:
    """Register in Opacus's registry at import when Opacus is already loaded (never imports it here)."""
    import sys

    if "opacus.accountants" in sys.modules:
        try:
            register_with_opacus()
        except ReconRiskError:  # another class holds the name: leave it (register_with_opacus(force=True) replaces)
            pass


_register_if_loaded()


from .opacus_audit import OneRunAudit, OneRunAuditResult  # noqa: E402  (torch is imported only in its hook)
