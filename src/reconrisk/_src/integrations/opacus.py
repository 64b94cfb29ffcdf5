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
  Its numbers are tied to the sampler it was told about (``batch_sampling``):
  ``make_private`` tells it the loader it prepared, and a non-Poisson one
  (``poisson_sampling=False``: shuffled or sequential batches) makes every
  number the sound stand-in ``Release.shuffled(σ, K)``'s, with a warning, K
  the passes that loader can give one example over the iterations the run
  took (:class:`~reconrisk._src.adapters.opacus_loaders.LoaderPlan`, kept in
  ``loader``; the iterations are watched: ``loader_run``).
* :func:`make_private_with_risk`: calibrates σ so that the certified bound on
  ``measure`` after ``epochs`` epochs is ≤ ``target`` for the sampler actually
  used (Poisson, or the stand-in for ``poisson_sampling=False``) and hands it to
  ``privacy_engine.make_private``.
* :class:`OneRunAudit` (from :mod:`reconrisk._src.integrations.opacus_audit`): a one-run
  audit (Steinke, Nasr & Jagielski 2023; Mahloujifar, Melis & Chaudhuri
  2025) hooked into the user's ``DPOptimizer``: gradient canaries in, a lower
  bound on the replace-one ε out, beside the certified one.

Departures from Opacus: ``len(accountant)`` is the number of optimisation
steps (what Opacus's ``IAccountant.__len__`` docstring promises); Opacus's
own accountants return the number of history segments. Both are > 0 exactly
when a step was taken, which is all ``PrivacyEngine`` relies on. How the
accountant learns the sampler: Opacus's ``make_private`` prepares the data
loader and then calls ``accountant.get_optimizer_hook_fn(sample_rate=1/len(loader))``
— the same rate for Poisson and non-Poisson loaders, so ``step`` alone cannot
tell them apart; ``get_optimizer_hook_fn`` reads the prepared loader from its
caller's frame (``make_private``'s local ``data_loader``), and
``use_data_loader(loader)`` tells it explicitly.
"""

from __future__ import annotations

import copy
import math
import sys
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Callable

from .. import _validate as v
from ..analysis.calibrate import Calibration, calibrate
from ..analysis.accountant import epsilon
from ..analysis.privacy import PrivacyAnalysis
from ..errors import ReconRiskError
from ..measures.risk import canonical_measure
from ..priors import resolve_kappa
from ..release import Release, opacus_history_release
from ..results import Bound
from ..adapters.opacus_history import KINDS, extend_history
from ..adapters.opacus_loaders import LoaderPlan, LoaderRun, loader_plan
from .opacus_watch import LoaderWatch

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

    ``batch_sampling`` is how the batches are drawn — ``"poisson"`` (Opacus's assumption, the default),
    ``"shuffled"``, ``"sequential"`` or ``"with_replacement"`` — as ``make_private`` (or :meth:`use_data_loader`)
    told it, with the loader's :class:`~reconrisk._src.adapters.opacus_loaders.LoaderPlan` in ``loader``; every
    number it reports is for that sampler: the history as it is for Poisson, the sound stand-in
    ``Release.shuffled(σ, K)`` otherwise, K the passes the loader can give one example over the steps
    recorded (:func:`reconrisk._src.adapters.opacus_history.read_history`). A loader whose passes cannot be
    proved (``batch_sampling == "unknown"``) trains, and nothing is certified.

    A non-Poisson loader it is told is watched (:mod:`reconrisk._src.integrations.opacus_watch`): each
    ``iter(loader)`` starts a fresh pass of the sampler, and each step is matched to the batches delivered
    since the previous one, so K counts the iterations the loop actually took (a ``break`` out of the loader,
    ``next(iter(loader))`` every step), not the loader's order; ``loader_run`` holds them
    (:class:`~reconrisk._src.adapters.opacus_loaders.LoaderRun`), and ``state_dict`` saves them. A step that drew
    no new batch from the loader makes the run unmatched: a one-line warning, and every number refused.

    It accepts every step Opacus's accountants accept: a step without noise (noise multiplier 0) at
    sample rate q > 0 makes ε = ∞ and every risk vacuous (upper end 1; Bayes security's lower end 0),
    and a step at sample rate 0 costs nothing (Opacus's RDP accountant answers the same).

    >>> acct = ReconRiskAccountant()
    >>> for _ in range(100):
    ...     acct.step(noise_multiplier=1.0, sample_rate=0.01)
    >>> acct.history, len(acct)
    ([(1.0, 0.01, 100)], 100)
    """

    def __init__(self) -> None:
        self.history: list[tuple[float, float, int]] = []
        self.batch_sampling = "poisson"  # what Opacus's accountants assume until a loader says otherwise
        self.loader: LoaderPlan | None = None  # what a non-Poisson loader can do with one example (its passes)
        self._told = False  # whether a data loader set batch_sampling
        self._refusal: str | None = None  # why nothing is certified ("unknown" batch sampling)
        self._watch: LoaderWatch | None = None  # the told non-Poisson loader's iterations, as they happen
        self._iterations: list[int] | None = None  # iterations observed before (a loaded state, an earlier
        # loader); None: never observed, the steps are counted in the loader's order
        self._assumed_steps = 0  # steps recorded before the iterations were observed (loader's order)
        self._unmatched: str | None = None  # why the steps cannot be matched to the loader's batches
        self._analysis = None  # the PrivacyAnalysis of the history as it stood when last asked

    def use_data_loader(self, data_loader) -> str:
        """Tell the accountant which loader draws the batches; returns its kind (``"poisson"``, …).

        ``PrivacyEngine.make_private`` does this itself (through :meth:`get_optimizer_hook_fn`). A
        non-Poisson loader warns once, in one line, that the numbers are the stand-in's; a loader whose
        sampler reconrisk has no analysis for is refused in one line (:func:`~reconrisk._src.adapters.opacus_loaders.loader_plan`).
        The loader's :class:`~reconrisk._src.adapters.opacus_loaders.LoaderPlan` (kept in ``loader``) counts the passes
        it gives one example: ``RandomSampler(num_samples=…)``'s repeated permutations, ``DistributedSampler``'s
        padding, draws with replacement — never one pass per loader epoch by assumption. A non-Poisson loader is
        watched from here on (its iterations and the batches each delivers: ``loader_run``); steps recorded
        before (a loaded state that observed none) are counted in the loader's order, and the note says so.
        """
        plan = loader_plan(data_loader)
        kind = "poisson" if plan is None else plan.kind
        # steps already recorded (or loaded: a saved state, Opacus's own assuming Poisson) were drawn by the sampler
        # the accountant holds; the new loader's count must not be applied to them
        if (kind, plan) != (self.batch_sampling, self.loader) and any(q > 0 for _, q, _ in self.history):
            raise ReconRiskError(f"this accountant has recorded {self.batch_sampling} batches"
                                 f"{f' ({self.loader.describe()})' if self.loader else ''}; the new data loader "
                                 f"draws {kind} ones{f' ({plan.describe()})' if plan else ''} (use a new accountant "
                                 "per sampler)")
        if plan is not None and (plan != self.loader or not self._told):
            warnings.warn(f"ReconRiskAccountant: the data loader draws {kind} batches ({plan.describe()}), not "
                          "Poisson ones; every number this accountant reports (get_epsilon, rero, risk, tradeoff) is "
                          "the sound stand-in Release.shuffled(noise_multiplier, epochs=K)'s (replace-one; K: the "
                          f"passes it can give one example, {plan.per_epoch()} per full iteration of the loader), not "
                          "a Poisson number; K is counted over the iterations of this loader object the loop takes "
                          "(each iter(loader) a fresh pass: a break or a restart counts as it ran), and a step that "
                          "draws no new batch from it certifies nothing", UserWarning, stacklevel=2)
        self._watch_loader(data_loader if plan is not None else None, plan)
        self.batch_sampling, self.loader, self._told, self._refusal = kind, plan, True, None
        self._analysis = None
        return kind

    def _watch_loader(self, data_loader, plan) -> None:
        """Watch ``data_loader`` (None: stop watching); what an earlier loader of the same plan observed is kept."""
        if self._watch is not None and data_loader is not None and self._watch.watches(data_loader):
            return
        steps = sum(n for _, q, n in self.history if q > 0)
        if self._watch is not None:  # an earlier loader object: its iterations are the run's so far
            self._iterations = (self._iterations or []) + self._watch.iterations
            self._unmatched = self._unmatched or self._watch.stale
            self._watch.detach()
            self._watch = None
        if plan is None or plan != self.loader:  # a new sampler (no step recorded with the old one)
            self._iterations, self._assumed_steps, self._unmatched = None, 0, None
        if data_loader is None:
            return
        if self._iterations is None:  # steps before (a loaded state that observed none): the loader's order
            self._iterations, self._assumed_steps = [], steps
        self._watch = LoaderWatch(data_loader)

    @property
    def loader_run(self) -> LoaderRun | None:
        """The non-Poisson loader's iterations this run took (:class:`~reconrisk._src.adapters.opacus_loaders.LoaderRun`);
        None when they were never observed (the steps are then counted in the loader's order)."""
        if self.loader is None or self._iterations is None:
            return None
        its = self._iterations + (self._watch.iterations if self._watch else [])
        why = self._unmatched or (self._watch.stale if self._watch else None)
        return LoaderRun(self.loader, tuple(its), self._assumed_steps, why)

    @property
    def _noiseless(self) -> bool:
        """A step without noise touched the data (σ = 0 at q > 0): no finite guarantee."""
        return any(s == 0 and q > 0 for s, q, _ in self.history)

    @property
    def _touched(self) -> bool:
        """Some step sampled the data with positive probability (q > 0)."""
        return any(q > 0 for _, q, _ in self.history)

    @property
    def analysis(self):
        """The :class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis` of the history so far: every question
        (ε, ReRo, the trade-off curve, the risks) asked between two steps shares its distributions."""

        rel = self.release
        if self._analysis is None or self._analysis.release != rel:
            self._analysis = PrivacyAnalysis(rel)
        return self._analysis

    # -- Opacus accountant interface ------------------------------------------------------
    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one optimisation step (merged into the last history entry when σ and q repeat).

        As Opacus's accountants: σ ≥ 0 (0: no noise, ε = ∞ from then on) and q in [0, 1] (0: the step
        never touches the data, no privacy loss)."""
        sigma = v.in_range("noise_multiplier", noise_multiplier, 0.0, math.inf, low_open=False)
        q = v.in_range("sample_rate", sample_rate, 0.0, 1.0, low_open=False, high_open=False)
        extend_history(self.history, sigma, q)
        if q > 0 and self._watch is not None and self._unmatched is None:
            why = self._watch.stale
            if why is None and not self._watch.match_step():
                why = ("an optimisation step drew no new batch from the watched data loader (the optimizer stepped "
                       "without drawing, or drew from another loader object): the steps cannot be matched to the "
                       "loader's passes")
            if why is not None:
                self._unmatched = why
                warnings.warn(f"ReconRiskAccountant: {why}; this accountant will certify nothing for this run",
                              UserWarning, stacklevel=2)

    def get_epsilon(self, delta: float, *, accountant: str = "pld", **kwargs) -> float:
        """ε spent so far at ``delta`` (reconrisk's PLD accountant by default; 0 before any step that
        touched the data, ∞ after a step without noise)."""
        delta = v.probability_open("delta", delta)
        if not self._touched:
            return 0.0
        if self._noiseless:
            return math.inf
        self._check_sampler()
        if accountant == "pld":
            return float(self.analysis.epsilon(delta).upper)

        return float(epsilon(release=self.release, delta=delta, accountant=accountant))

    def __len__(self) -> int:
        return int(sum(n for _, _, n in self.history))

    @classmethod
    def mechanism(cls) -> str:
        return MECHANISM

    def get_optimizer_hook_fn(self, sample_rate: float) -> Callable[[Any], None]:
        """The callback ``PrivacyEngine.make_private`` attaches to its ``DPOptimizer`` (as Opacus's accountants)."""
        q = v.in_range("sample_rate", sample_rate, 0.0, 1.0, low_open=False, high_open=False)
        loader = _make_private_loader()
        if loader is not None:  # make_private's prepared loader: Poisson, or the user's own
            try:
                self.use_data_loader(loader)
            except ReconRiskError as exc:  # a sampler with no analysis: let Opacus train, certify nothing
                self._watch_loader(None, None)
                self.batch_sampling, self.loader, self._told, self._refusal = "unknown", None, True, str(exc)
                warnings.warn(f"ReconRiskAccountant: {exc}; this accountant will certify nothing for this run",
                              UserWarning, stacklevel=2)

        def hook_fn(optim) -> None:
            self.step(noise_multiplier=optim.noise_multiplier, sample_rate=q * optim.accumulated_iterations)

        return hook_fn

    def state_dict(self, destination=None):
        if destination is None:
            destination = OrderedDict()
        destination["history"] = copy.deepcopy(self.history)
        destination["mechanism"] = self.mechanism()
        destination["batch_sampling"] = self.batch_sampling
        if self.loader is not None:
            destination["loader"] = self.loader.to_dict()
        if self.loader_run is not None:  # the iterations observed (absent: counted in the loader's order)
            destination.update(self.loader_run.to_state())
        return destination

    def load_state_dict(self, state_dict) -> None:
        if not isinstance(state_dict, Mapping) or "history" not in state_dict or "mechanism" not in state_dict:
            raise ReconRiskError("state_dict must be a mapping holding 'history' and 'mechanism'; found "
                                 + repr(state_dict)[:80])
        if not isinstance(state_dict["history"], (list, tuple)):
            raise ReconRiskError("state_dict['history'] must be a list of (noise_multiplier, sample_rate, steps); found "
                                 f"{state_dict['history']!r:.80}")
        if state_dict["mechanism"] != self.mechanism():
            raise ReconRiskError(
                f"state_dict of mechanism {state_dict['mechanism']!r} cannot be loaded into a {self.mechanism()!r} accountant"
            )
        hist = state_dict["history"]
        probe = ReconRiskAccountant()
        for h in hist:  # validates every entry as step does (σ ≥ 0, q in [0, 1], steps in [1, MAX_STEPS])
            if not isinstance(h, (list, tuple)) or len(h) != 3:
                raise ReconRiskError(f"history entries must be (noise_multiplier, sample_rate, steps); found {h!r:.80}")
            probe.step(noise_multiplier=h[0], sample_rate=h[1])
            v.steps("steps", h[2])
        total = sum(int(h[2]) for h in hist)
        if total > v.MAX_STEPS:
            raise ReconRiskError(f"the history may hold at most {v.MAX_STEPS:g} steps in all; found {total}")
        hist = [tuple(h) for h in hist]
        kind = state_dict.get("batch_sampling")  # absent in Opacus's own accountants' states: Poisson assumed
        kind = None if kind is None else v.choice("batch_sampling", kind, ("poisson", *KINDS, "unknown"))
        plan = None if state_dict.get("loader") is None else LoaderPlan.from_dict(state_dict["loader"])
        if plan is not None and plan.kind != kind:
            raise ReconRiskError(f"state_dict's loader draws {plan.kind} batches but its batch_sampling says {kind!r}")
        if plan is None and state_dict.get("iterations") is not None:
            raise ReconRiskError("state_dict holds loader iterations but no loader (its plan): they cannot be read")
        run = None if plan is None else LoaderRun.from_state(plan, state_dict)
        steps = sum(int(n) for _, q, n in hist if q > 0)
        if run is not None and run.unmatched is None:
            run.passes(steps)  # a saved count that cannot have drawn these steps is refused at once
        if self._told and hist and ((kind or "poisson") != self.batch_sampling or plan != self.loader):
            drawn = ("names no sampler (Opacus's accountants assume Poisson)" if kind is None else
                     f"was drawn by {kind} batches{f' ({plan.describe()})' if plan else ' (its loader not named)'}")
            raise ReconRiskError(f"the saved history {drawn} and this "
                                 f"accountant's data loader draws {self.batch_sampling} ones"
                                 f"{f' ({self.loader.describe()})' if self.loader else ''}; resume with the same "
                                 "sampler")
        self.history = [(float(s), float(q), int(n)) for s, q, n in hist]
        if not self._told:
            self.batch_sampling, self.loader = kind or "poisson", plan
            if kind == "unknown":
                self._refusal = "the saved history was drawn by a batch sampler reconrisk has no analysis for"
        if run is not None:
            self._iterations, self._assumed_steps, self._unmatched = list(run.iterations), run.assumed_steps, run.unmatched
        elif self._watch is not None:  # a state that observed no iterations, resumed on a watched loader
            self._iterations, self._assumed_steps, self._unmatched = [], steps, None
        else:
            self._iterations, self._assumed_steps, self._unmatched = None, 0, None
        if self._watch is not None:
            self._watch.forget()
        self._analysis = None

    # -- reconrisk additions -------------------------------------------------------------
    @property
    def release(self) -> Release:
        """The release the history accounts for under ``batch_sampling`` (the stand-in for non-Poisson
        batches); refused after a step without noise (no finite guarantee)."""
        self._check_sampler()
        return opacus_history_release(self.history, self.loader_run or self.loader or self.batch_sampling)[0]

    def _check_sampler(self) -> None:
        if self._refusal is not None:
            raise ReconRiskError(f"nothing is certified for this run: {self._refusal}")

    def _vacuous(self, measure: str, **details) -> Bound:
        """After a step without noise nothing is certified: the measure's trivial end (success ≤ 1, Bayes
        security ≥ 0), the other end open."""
        why = "a step without noise (noise_multiplier 0): no guarantee"
        if measure == "bayes_security":
            return Bound(measure, 0.0, None, method="no_noise", formula=why, details=details)
        return Bound(measure, None, 1.0, method="no_noise", formula=why, details=details)

    def rero(self, kappa: float | None = None, *, prior_size: int | None = None):
        """Certified ReRo bracket of the history so far (same as ``reconrisk bound`` for that release)."""
        if self._noiseless:
            return self._vacuous("rero", kappa=resolve_kappa(kappa, prior_size), prior_size=prior_size)
        return self.analysis.rero(kappa, prior_size=prior_size)

    def tradeoff(self, alphas):
        """Certified trade-off curve of the history so far (:func:`reconrisk._src.analysis.privacy_rero.tradeoff`)."""
        if self._noiseless:
            raise ReconRiskError("the history holds a step without noise (noise_multiplier 0): the trade-off curve "
                                 "is 0 at every α (no membership test is ruled out)")
        return self.analysis.tradeoff(alphas)

    def risk(self, measure: str = "reconstruction", **kwargs):
        """Certified bracket on one risk measure (:func:`reconrisk._src.measures.risk.risk`)."""
        if self._noiseless:
            return self._vacuous(canonical_measure(measure), **kwargs)
        return self.analysis.risk(measure, **kwargs)


def _make_private_loader():
    """The data loader Opacus's ``PrivacyEngine.make_private`` prepared, or None when not called from there.

    ``make_private`` builds its loader (a Poisson ``DPDataLoader``, or the user's own for
    ``poisson_sampling=False``) and then calls ``accountant.get_optimizer_hook_fn``, passing only
    1/len(loader); its local ``data_loader`` is read here (the frames of ``get_optimizer_hook_fn``'s
    callers, a few levels up, whose function is ``make_private`` and whose ``self`` has an ``accountant``).
    """
    frame = sys._getframe(2)
    for _ in range(4):
        if frame is None:
            return None
        loc = frame.f_locals
        if frame.f_code.co_name == "make_private" and hasattr(loc.get("self"), "accountant") \
                and "data_loader" in loc:
            return loc["data_loader"]
        frame = frame.f_back
    return None


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

    Calibrated for the sampler the run uses:

    * ``poisson_sampling=True`` (Opacus's default): Opacus replaces the loader by a Poisson one at sample
      rate 1/len(data_loader); ``epochs · len(data_loader)`` steps.
    * ``poisson_sampling=False``: the batches are the user's loader's — shuffled (``shuffle=True``) or
      sequential, possibly several passes per loader epoch — and no Poisson number describes them; σ is
      calibrated for the sound stand-in ``Release.shuffled(σ, K)`` (K full-batch Gaussian steps of
      replace-one sensitivity 2C, C against the zero-out reference for the reconstruction measures; K the
      passes ``epochs`` loader epochs can give one example: :class:`~reconrisk._src.adapters.opacus_loaders.LoaderPlan`;
      why it is sound: :mod:`reconrisk._src.adapters.opacus_loaders`), said in a one-line ``UserWarning``. A loader
      whose passes cannot be proved is refused in one line. The calibration assumes whole loader epochs; what
      the accountant certifies is the run as it went (a loop that restarts the loader counts more passes).

    Returns what ``privacy_engine.make_private`` returns; the calibration (the one calibrator's
    :class:`~reconrisk._src.analysis.calibrate.Calibration` as a dict: ``noise_multiplier``, ``sample_rate``,
    ``steps``, ``bound`` …, plus ``batch_sampling`` and, for non-Poisson batches, ``stand_in`` and ``loader``) is kept on
    ``privacy_engine.reconrisk_calibration``. A :class:`ReconRiskAccountant` in the engine is told the
    loader, so it reports the numbers of the same release.
    """

    epochs = v.integer("epochs", epochs, minimum=1)
    max_grad_norm = v.positive("max_grad_norm", max_grad_norm)
    try:
        n_batches = len(data_loader)
    except TypeError:
        raise ReconRiskError(f"data_loader must have a length; found {type(data_loader).__name__}") from None
    n_batches = v.integer("len(data_loader)", n_batches, minimum=1)
    poisson = make_private_kwargs.get("poisson_sampling", True)
    plan = None if poisson else loader_plan(data_loader)  # refuses a loader whose passes it cannot prove
    kind = "poisson" if plan is None else plan.kind
    acct = getattr(privacy_engine, "accountant", None)
    if acct is not None and len(acct) > 0:
        warnings.warn("make_private_with_risk: the accountant has already recorded steps; the calibration assumes a "
                      "fresh start, so the final risk will be higher than the target", stacklevel=2)
    kw = {k: x for k, x in dict(prior_size=prior_size, kappa=kappa, baseline=baseline, prior=prior, fpr=fpr).items()
          if x is not None}
    if kind == "poisson":
        cal = _calibration_dict(calibrate(measure, target, "noise_multiplier", sample_rate=1.0 / n_batches,
                                          steps=epochs * n_batches, **kw))
    else:
        passes = plan.passes(epochs * plan.batches)  # what `epochs` loader epochs can give one example
        # Release.shuffled(σ, K) is Release.fixed_batch(σ, N, N, K): the one calibrator's fixed-batch door
        cal = _calibration_dict(calibrate(measure, target, "noise_multiplier", steps=passes, batch_size=plan.n,
                                          dataset_size=plan.n, **kw))
        cal["stand_in"] = f"Release.shuffled(noise_multiplier={cal['noise_multiplier']:.6g}, epochs={passes})"
        cal["loader"] = plan.to_dict()
        mine = isinstance(acct, ReconRiskAccountant)
        warnings.warn(f"make_private_with_risk: poisson_sampling=False, so the batches are {kind} "
                      f"({plan.describe()}), not Poisson; {epochs} loader epochs give one example at most {passes} "
                      f"passes, and σ = {cal['noise_multiplier']:.4g} is calibrated for the sound stand-in "
                      f"{cal['stand_in']} (replace-one)" + ("" if mine else f"; the engine's {type(acct).__name__} "
                      "still reports Poisson numbers: use ReconRiskAccountant"), UserWarning, stacklevel=2)
    cal["batch_sampling"] = kind
    privacy_engine.reconrisk_calibration = cal
    out = privacy_engine.make_private(
        module=module, optimizer=optimizer, data_loader=data_loader, noise_multiplier=cal["noise_multiplier"],
        max_grad_norm=max_grad_norm, **make_private_kwargs,
    )
    acct = getattr(privacy_engine, "accountant", None)
    if isinstance(acct, ReconRiskAccountant) and isinstance(out, tuple) and len(out) >= 3:
        acct.use_data_loader(out[-1])  # what make_private told it already, unless its frame was not found
    return out


def _calibration_dict(cal: Calibration) -> dict:
    """What ``privacy_engine.reconrisk_calibration`` holds: the Calibration as a dict, with the bound's
    ``measure``, ``baseline``, ``lower``, ``upper`` and ``formula`` at the top level (as earlier releases kept it)."""
    b = cal.bound
    out = cal.to_dict()
    out.update(measure=cal.quantity, baseline=b.details.get("baseline"), lower=b.lower, upper=b.upper,
               formula=b.formula)
    return out


def _register_if_loaded() -> None:
    """Register in Opacus's registry at import when Opacus is already loaded (never imports it here)."""

    if "opacus.accountants" in sys.modules:
        try:
            register_with_opacus()
        except ReconRiskError:  # another class holds the name: leave it (register_with_opacus(force=True) replaces)
            pass


_register_if_loaded()


from .opacus_audit import OneRunAudit, OneRunAuditResult  # noqa: E402  (torch is imported only in its hook)
