"""Certified client-level privacy and reconstruction risk inside Flower (``flwr`` ≥ 1.35).

* :class:`ReconRiskAccountant` implements Flower's ``flwr.serverapp.PrivacyAccountant``
  protocol member for member, so it can be handed to Flower's central-DP strategy
  wrappers (``DifferentialPrivacyServerSideFixedClipping(…, accountant=…)``). It keeps
  the ledger of composed ``GaussianPrivacyEvent`` s and answers every question from one
  :class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis` of the rounds composed so far:
  ε from the pessimistic privacy-loss distribution (PLD), and every risk measure of
  ``reconrisk risk`` at the client level (:meth:`ReconRiskAccountant.risk`). Its risk target
  alone (no ``max_epsilon``) stops Flower's own wrapper before the round that would pass it,
  with :class:`RiskTargetExceeded` naming the risk.
* :class:`StopBeforeBudget` wraps a Flower DP strategy: before each round it asks the
  accountant whether the round would pass the ε or risk target, and if so ends training
  with a logged message and the spent budget in Flower's train metrics.
* :func:`calibrate_flower` — the noise multiplier (or the number of rounds) that meets a
  client-level risk target, from reconrisk's one calibrator
  (:func:`reconrisk._src.analysis.calibrate.calibrate`).

**What the noise multiplier means.** Flower's fixed-clipping wrappers clip each client's
update to norm C and add ``N(0, (σC/m)²)`` to the average of the m sampled updates, i.e.
``N(0, (σC)²)`` to their **sum**. reconrisk reads σ the same way in every mode — noise std
on the sum divided by the clipping norm, the convention of
:class:`~reconrisk._src.release.Release` (Hayes, Mahloujifar & Balle 2023, §1.1):

================================  =====================================================
``sampling_method`` (relation)    release analysed
================================  =====================================================
``poisson`` (add-or-remove-one)   ``Release(σ, q = sample_size / population_size)``:
                                  the Poisson-subsampled Gaussian, sensitivity C
``without-replacement``           ``Release.fixed_batch(σ, sample_size, population_size)``:
(replace-one)                     the clipped sum moves by up to 2C (Dong, Roth & Su
                                  2022, Thm 4.2)
``no-amplification``, m = n       ``Release(σ, q = 1)``: every client every round, the sum
(add-or-remove-one)               moves by C; Gaussian DP with μ = √T/σ, exact (Balle &
                                  Wang 2018)
``no-amplification``, m < n       ``Release.fixed_batch(σ, m, n)``: the cohort of m is
(add-or-remove-one)               refilled when a client is removed, so the sum moves by
                                  up to 2C in each round the client is sampled
                                  (:func:`cohort_release`, where the reduction is proved)
================================  =====================================================

Departures from Flower's RDP backend. Under ``no-amplification`` with m < n it composes
``GaussianDpEvent(σ)`` (shift C each round), which the refilled cohort exceeds: an adversary whose
other clients send −C·e while the target sends +C·e attains ε 3.046 at σ 6.562, 5 of 10 clients,
20 rounds, δ 1e-5 (Flower's RDP: 3.060; shift C alone: 2.823; this accountant: 3.091), and 11.69
at σ 4, 8 of 10, 30 rounds (Flower: 6.81; this accountant: 11.82). Under ``without-replacement`` it hands σ to
``dp_accounting``'s ``GaussianDpEvent`` unchanged, i.e. it reads σ relative to the
replace-one sensitivity 2C; with Flower's own noise (std σC on the sum) that understates ε
(σ 1, 10 of 1,000 clients, 100 rounds, δ 1e-5: 1.48 where ``dp_accounting``'s RDP at σ/2
gives 11.2). Under ``poisson``, and ``no-amplification`` with every client every round, both
accountants mean the same release and this one's ε is never above the RDP one (PLD rather than
the RDP → (ε, δ) conversion).
"""

from __future__ import annotations

import dataclasses
import sys
from logging import WARNING
from typing import Any

from flwr.app import MetricRecord
from flwr.serverapp import GaussianPrivacyEvent, NeighboringRelation, PrivacyConfig, PrivacySpent, SamplingMethod
from flwr.serverapp.exception import PrivacyBudgetExhausted
from flwr.serverapp.strategy import Strategy
from flwr.serverapp.strategy.dp_fixed_clipping import DifferentialPrivacyFixedClippingBase
from flwr.supercore import log

from .. import _validate as v
from ..analysis.privacy import PrivacyAnalysis
from ..analysis.calibrate import Calibration, calibrate, canonical_quantity, meets, quantity_bound
from ..measures.risk import canonical_measure
from ..errors import ReconRiskError
from ..release import Release
from .flower_release import MODELS, SAMPLERS, _check_config, _sampling, _segment, cohort_release, release_of

__all__ = ["ReconRiskAccountant", "RiskTargetExceeded", "StopBeforeBudget", "calibrate_flower", "release_of",
           "cohort_release", "SAMPLERS", "MODELS"]

_STATE_SCHEMA = 1
_BACKEND = "reconrisk-pld"
#: The keyword arguments a risk measure takes (:func:`reconrisk._src.measures.risk.risk`).
RISK_ARGS = ("kappa", "prior_size", "baseline", "prior", "fpr")


#: The ε limit ``ReconRiskAccountant.config`` reports when a risk target stands alone (no ε limit): finite, so
#: that Flower's wrappers, which ask ``would_exceed`` only when ``config.max_epsilon`` is set, ask it.
NO_EPSILON_LIMIT = sys.float_info.max


class RiskTargetExceeded(PrivacyBudgetExhausted):
    """The next release would pass the accountant's risk target (Flower's exception, so a ServerApp ends)."""


def _risk_words(measure: str) -> str:
    return {"reconstruction": "reconstruction risk"}.get(measure, measure.replace("_", " "))


class ReconRiskAccountant:
    """Flower's ``PrivacyAccountant`` protocol backed by reconrisk's PLD analysis, plus client-level risk.

    ``config``: Flower's ``PrivacyConfig`` (its ``target_delta``, ``population_size``,
    sampling and relation, optional ``max_epsilon``). A risk target —
    ``max_risk`` for ``measure`` (``"reconstruction"``, ``"membership_advantage"``, …,
    every measure of :func:`reconrisk._src.measures.risk.risk`) with the measure's baseline
    (``prior_size``, ``kappa``, ``baseline``, ``prior``, ``fpr``) — makes
    :meth:`would_exceed` answer for it too. The noise multiplier's meaning in each sampling
    mode: the module docstring.
    """

    def __init__(self, config: PrivacyConfig, *, max_risk: float | None = None, measure: str = "reconstruction",
                 **risk_args) -> None:
        self._config = _check_config(config)
        self._risk_target = _risk_target(max_risk, measure, risk_args)
        self._compositions: list[tuple[GaussianPrivacyEvent, int]] = []
        self._analysis: PrivacyAnalysis | None = None

    # -- the protocol ---------------------------------------------------------------------------
    @property
    def config(self) -> PrivacyConfig:
        """Flower's privacy configuration. With a risk target and no ``max_epsilon`` its ``max_epsilon`` reads
        :data:`NO_EPSILON_LIMIT` (no ε limit): Flower's DP wrappers ask :meth:`would_exceed` before a round
        only when one is set, and this is how the risk target is asked for. :meth:`state_dict` keeps the
        config as given."""
        if self._risk_target is not None and self._config.max_epsilon is None:
            return dataclasses.replace(self._config, max_epsilon=NO_EPSILON_LIMIT)
        return self._config

    @property
    def num_releases(self) -> int:
        """Number of private releases (rounds) composed so far."""
        return sum(c for _, c in self._compositions)

    @property
    def risk_target(self) -> dict | None:
        """The risk target (``measure``, ``max_risk`` and the baseline arguments), or None."""
        return None if self._risk_target is None else dict(self._risk_target)

    def compose(self, event: GaussianPrivacyEvent, count: int = 1) -> None:
        """Compose ``count`` identical releases of ``event``."""
        _segment(self._config, event)
        count = self._count(count)
        self._compositions.append((event, count))
        self._analysis = None

    def _count(self, count) -> int:
        """``count`` releases more, refused where the ledger would pass the longest release analysed."""
        return v.integer("count", count, minimum=1, maximum=max(v.MAX_STEPS - self.num_releases, 1))

    @property
    def release(self) -> Release | None:
        """The release composed so far (None before the first round)."""
        return release_of(self._config, self._compositions) if self._compositions else None

    @property
    def analysis(self) -> PrivacyAnalysis | None:
        """The one :class:`PrivacyAnalysis` of the rounds composed so far (None before the first round)."""
        if self._analysis is None and self._compositions:
            self._analysis = PrivacyAnalysis(self.release)
        return self._analysis

    def get_epsilon(self, delta: float) -> float:
        """ε at ``delta``: the upper end of the certified bracket (pessimistic PLD; exact Gaussian DP at q = 1)."""
        delta = v.probability_open("delta", delta)
        a = self.analysis
        return 0.0 if a is None else float(a.epsilon(delta).upper)

    def get_delta(self, epsilon: float) -> float:
        """δ at ``epsilon`` ≥ 0 (Flower's domain: finite, 0 included): the upper end of the certified bracket."""
        epsilon = v.real("epsilon", epsilon)
        if epsilon < 0:
            raise ReconRiskError(f"epsilon must be >= 0 and finite; found {epsilon!r}")
        a = self.analysis
        return 0.0 if a is None else float(a.delta(epsilon).upper)

    def get_privacy_spent(self, delta: float | None = None) -> PrivacySpent:
        """Flower's ``PrivacySpent`` at ``delta`` (default: the config's ``target_delta``); method ``"pld"``."""
        delta = self._config.target_delta if delta is None else delta
        return PrivacySpent(epsilon=self.get_epsilon(delta), delta=float(delta), num_releases=self.num_releases,
                            accounting_method="pld")

    def would_exceed(self, event: GaussianPrivacyEvent, max_epsilon: float | None = None, count: int = 1, *,
                     max_risk: float | None = None, measure: str | None = None, **risk_args) -> bool:
        """Whether composing ``count`` × ``event`` would pass the ε limit or the risk target (state unchanged).

        ε limit: ``max_epsilon``, else the config's; risk target: ``max_risk`` (with ``measure`` and its
        baseline), else the accountant's. Exceeding means the certified bound at the projected release
        does not meet the target — the predicate of :func:`reconrisk._src.analysis.calibrate.calibrate`, so the
        round this refuses is the round after the calibrator's largest number of rounds.

        Called as Flower's DP wrappers call it — ``would_exceed(event)``, no limit given here — when it is
        the accountant's own risk target that the round would pass, it raises :class:`RiskTargetExceeded`
        (Flower's ``PrivacyBudgetExhausted``) with a message naming the risk: Flower's own message would
        name ε, which is not what stops training. :meth:`exceeded_by` answers without raising.
        """
        flowers_call = max_epsilon is None and max_risk is None and measure is None and not risk_args
        why = self.exceeded_by(event, max_epsilon, count, max_risk=max_risk, measure=measure, **risk_args)
        if why is not None and flowers_call and why["limit"] == "risk":
            raise RiskTargetExceeded(why["message"])
        return why is not None

    def exceeded_by(self, event: GaussianPrivacyEvent, max_epsilon: float | None = None, count: int = 1, *,
                    max_risk: float | None = None, measure: str | None = None, **risk_args) -> dict | None:
        """What :meth:`would_exceed` would refuse, without raising: None, or a dict with ``limit``
        (``"epsilon"`` or ``"risk"``), ``target``, ``value`` (the certified end that fails), ``rounds``
        (after the projected release) and ``message`` (one line naming the limit)."""
        _segment(self._config, event)
        count = self._count(count)
        eps = self._config.max_epsilon if max_epsilon is None else v.positive("max_epsilon", max_epsilon)
        target = (self._risk_target if max_risk is None
                  else _risk_target(max_risk, measure or "reconstruction", risk_args))
        if max_risk is None and (measure is not None or risk_args):
            raise ReconRiskError("measure and its baseline go with max_risk; found no max_risk")
        if eps is None and target is None:
            raise ReconRiskError("would_exceed needs a limit: max_epsilon (here or in PrivacyConfig) or a risk "
                                 "target (max_risk here or in the accountant); found none")
        projected = PrivacyAnalysis(release_of(self._config, [*self._compositions, (event, count)]))
        rounds = self.num_releases + count
        if eps is not None:
            b = projected.epsilon(self._config.target_delta)
            if not meets(b, eps):
                return {"limit": "epsilon", "target": eps, "value": b.upper, "rounds": rounds,
                        "message": f"the next release would exceed max_epsilon={eps:g} (certified epsilon "
                                   f"{b.upper:.6g} at delta={self._config.target_delta:g} after {rounds} releases)"}
        if target is not None:
            args = {k: x for k, x in target.items() if k not in ("measure", "max_risk")}
            b = quantity_bound(projected, target["measure"], args)
            if not meets(b, target["max_risk"]):
                security = target["measure"] == "bayes_security"
                value = b.lower if security else b.upper
                base = ", ".join(f"{k}={x}" for k, x in args.items())
                return {"limit": "risk", "target": target["max_risk"], "value": value, "rounds": rounds,
                        "message": f"the next release would {'fall below' if security else 'exceed'} the "
                                   f"{_risk_words(target['measure'])} target {target['max_risk']:g}"
                                   + (f" ({base})" if base else "")
                                   + f": certified {'lower' if security else 'upper'} end {value:.6g} after "
                                   f"{rounds} releases"}
        return None

    def state_dict(self) -> dict[str, object]:
        """JSON-serialisable state: the config, the risk target and the ledger of composed events."""
        c = self._config
        return {
            "schema_version": _STATE_SCHEMA, "backend": _BACKEND,
            "config": {"target_delta": c.target_delta, "population_size": c.population_size,
                       "neighboring_relation": NeighboringRelation(c.neighboring_relation).value,
                       "sampling_method": _sampling(c), "max_epsilon": c.max_epsilon},
            "risk_target": self.risk_target,
            "compositions": [{"event": {"noise_multiplier": e.noise_multiplier, "sample_size": e.sample_size,
                                        "population_size": e.population_size}, "count": n}
                             for e, n in self._compositions],
        }

    def load_state_dict(self, state: dict[str, object]) -> None:
        """Restore :meth:`state_dict` output; the config must equal this accountant's."""
        if not isinstance(state, dict):
            raise ReconRiskError(f"state must be a dict from state_dict(); found {type(state).__name__}")
        if state.get("schema_version") != _STATE_SCHEMA or state.get("backend") != _BACKEND:
            raise ReconRiskError(f"state must come from a {_BACKEND} accountant of schema {_STATE_SCHEMA}; found "
                                 f"backend={state.get('backend')!r}, schema_version={state.get('schema_version')!r}")
        try:
            cfg = dict(state["config"])
            config = PrivacyConfig(target_delta=cfg["target_delta"], population_size=cfg["population_size"],
                                   neighboring_relation=NeighboringRelation(cfg["neighboring_relation"]),
                                   sampling_method=SamplingMethod(cfg["sampling_method"]), max_epsilon=cfg["max_epsilon"])
            if not isinstance(state["compositions"], list):
                raise TypeError(f"compositions must be a list; found {type(state['compositions']).__name__}")
            ledger = [(GaussianPrivacyEvent(**dict(item["event"])), item["count"]) for item in state["compositions"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise ReconRiskError(f"state holds an invalid config or composition: {exc}") from None
        if config != self._config:
            raise ReconRiskError(f"state's config must equal this accountant's {self._config}; found {config}")
        rt = state.get("risk_target")
        if rt is not None and not isinstance(rt, dict):
            raise ReconRiskError(f"state's risk_target must be a dict or None; found {type(rt).__name__}")
        target = None if rt is None else _risk_target(rt.get("max_risk"), rt.get("measure"),
                                                      {k: x for k, x in rt.items() if k not in ("measure", "max_risk")})
        for e, _ in ledger:
            _segment(config, e)
        ledger = [(e, v.integer("count", n, minimum=1)) for e, n in ledger]
        if sum(n for _, n in ledger) > v.MAX_STEPS:
            raise ReconRiskError(f"state's compositions must total at most {v.MAX_STEPS} releases; found "
                                 f"{sum(n for _, n in ledger)}")
        self._compositions, self._risk_target, self._analysis = ledger, target, None

    # -- beyond the protocol ---------------------------------------------------------------------
    def risk(self, measure: str = "reconstruction", **risk_args):
        """Certified client-level bracket (a :class:`~reconrisk._src.results.Bound`) on one risk measure so far.

        ``measure`` and its arguments as :func:`reconrisk._src.measures.risk.risk` (``prior_size``, ``kappa``,
        ``baseline``, ``prior``, ``fpr``). Before the first round there is no release: refused.
        """
        a = self.analysis
        if a is None:
            raise ReconRiskError("risk needs at least one composed round; found num_releases=0")
        return a.risk(canonical_measure(measure), **risk_args)

    def metrics(self, delta: float | None = None) -> dict[str, float]:
        """The spent budget as Flower metrics: ε, δ, rounds, and the risk target's certified upper end."""
        spent = self.get_privacy_spent(delta)
        out = {"privacy_epsilon": spent.epsilon, "privacy_delta": spent.delta, "privacy_rounds": spent.num_releases}
        t = self._risk_target
        if t is not None and self.analysis is not None:
            args = {k: x for k, x in t.items() if k not in ("measure", "max_risk")}
            b = quantity_bound(self.analysis, t["measure"], args)
            out["privacy_risk"] = float(b.lower if t["measure"] == "bayes_security" else b.upper)
        return out


def _risk_target(max_risk, measure, risk_args) -> dict | None:
    if max_risk is None:
        if risk_args:
            raise ReconRiskError(f"a measure's baseline ({', '.join(sorted(risk_args))}) goes with max_risk; "
                                 "found no max_risk")
        return None
    measure = canonical_measure(measure)
    extra = sorted(set(risk_args) - set(RISK_ARGS))
    if extra:
        raise ReconRiskError(f"risk arguments must be among {list(RISK_ARGS)}; found {', '.join(extra)}")
    target = v.probability_open("max_risk", max_risk)
    # the same checks the calibrator makes (a baseline is required, and the right one for the measure)
    quantity_bound(PrivacyAnalysis(Release(1e6, 1.0, 1)), measure, dict(risk_args))
    return {"measure": measure, "max_risk": target, **risk_args}


# ---------------------------------------------------------------------------------------------
# stopping
# ---------------------------------------------------------------------------------------------
class StopBeforeBudget(Strategy):
    """Flower's DP fixed-clipping wrapper, stopped before the round that would pass its budget.

    Before each round it builds the event Flower's wrapper would compose
    (``GaussianPrivacyEvent(noise_multiplier, num_sampled_clients, population_size)``) and
    asks the accountant's ``would_exceed``: with a :class:`ReconRiskAccountant` for its ε limit
    and its risk target, with another accountant for the config's ``max_epsilon``. When the round
    would pass, training ends there: a warning is logged, no client is contacted again, and
    that round's train metrics hold the spent budget with ``privacy_stopped = 1``. Every
    completed round's train metrics carry the spent budget too (``privacy_epsilon``, …).
    """

    def __init__(self, dp_strategy: DifferentialPrivacyFixedClippingBase) -> None:
        super().__init__()
        if not isinstance(dp_strategy, DifferentialPrivacyFixedClippingBase):
            raise ReconRiskError("dp_strategy must be a Flower DifferentialPrivacy…FixedClipping wrapper; found "
                                 f"{type(dp_strategy).__name__}")
        if dp_strategy.accountant is None:
            raise ReconRiskError("dp_strategy must have an accountant (accountant=ReconRiskAccountant(config)); "
                                 "found None")
        self.dp_strategy = dp_strategy
        #: the round training stopped before (None while it runs), and why
        self.stopped_round: int | None = None
        self.stop_message: str | None = None

    @property
    def accountant(self):
        return self.dp_strategy.accountant

    def __repr__(self) -> str:
        return f"StopBeforeBudget({self.dp_strategy!r})"

    def _budget(self) -> dict[str, float]:
        acct = self.accountant
        if isinstance(acct, ReconRiskAccountant):
            return acct.metrics()
        s = acct.get_privacy_spent()
        return {"privacy_epsilon": s.epsilon, "privacy_delta": s.delta, "privacy_rounds": s.num_releases}

    def _limited(self) -> bool:
        return self.accountant.config.max_epsilon is not None  # a ReconRiskAccountant's risk target sets one

    def _stop(self, server_round: int, why: str, risk: bool = False) -> list:
        b = self._budget()
        self.stopped_round = server_round
        spent = (f"risk={b['privacy_risk']:.6g}" if risk else
                 f"epsilon={b['privacy_epsilon']:.6g} at delta={b['privacy_delta']:g}"
                 + (f", risk={b['privacy_risk']:.6g}" if "privacy_risk" in b else ""))
        self.stop_message = f"stopped before round {server_round}: {why} (spent after {b['privacy_rounds']} rounds: {spent})"
        log(WARNING, "%s", self.stop_message)
        return []

    def configure_train(self, server_round, arrays, config, grid):
        if self.stopped_round is not None:
            return []
        dp = self.dp_strategy
        if self._limited():
            event = GaussianPrivacyEvent(noise_multiplier=dp.noise_multiplier, sample_size=dp.num_sampled_clients,
                                         population_size=self.accountant.config.population_size)
            acct = self.accountant
            if isinstance(acct, ReconRiskAccountant):
                why = acct.exceeded_by(event)
                if why is not None:
                    return self._stop(server_round, why["message"], risk=why["limit"] == "risk")
            elif acct.would_exceed(event):
                return self._stop(server_round, "the next release would exceed the privacy budget")
        try:
            return dp.configure_train(server_round, arrays, config, grid)
        except PrivacyBudgetExhausted as exc:
            return self._stop(server_round, str(exc))

    def aggregate_train(self, server_round, replies):
        if self.stopped_round is not None and server_round >= self.stopped_round:
            if server_round > self.stopped_round:
                return None, None
            return None, MetricRecord({**self._budget(), "privacy_stopped": 1})
        arrays, metrics = self.dp_strategy.aggregate_train(server_round, replies)
        out = dict(metrics or {})
        out.update(self._budget(), privacy_stopped=0)
        return arrays, MetricRecord(out)

    def configure_evaluate(self, server_round, arrays, config, grid):
        if self.stopped_round is not None:
            return []
        return self.dp_strategy.configure_evaluate(server_round, arrays, config, grid)

    def aggregate_evaluate(self, server_round, replies):
        if self.stopped_round is not None:
            return None
        return self.dp_strategy.aggregate_evaluate(server_round, replies)

    def summary(self) -> None:
        self.dp_strategy.summary()


# ---------------------------------------------------------------------------------------------
# calibration
# ---------------------------------------------------------------------------------------------
def calibrate_flower(target: float, measure: str = "reconstruction", *, rounds: int | None = None,
                     clients_per_round: int, num_clients: int, noise_multiplier: float | None = None,
                     sampling: str = "poisson", solve: str = "noise_multiplier", **risk_args) -> Calibration:
    """The noise multiplier (``solve="noise_multiplier"``, give ``rounds``) or the number of rounds
    (``solve="steps"``, give ``noise_multiplier``) at which a client-level ``measure`` meets ``target``.

    ``sampling``: Flower's sampling method — ``"poisson"`` (q = clients_per_round / num_clients),
    ``"without-replacement"`` (exactly ``clients_per_round`` of ``num_clients``, replace-one) or
    ``"no-amplification"`` (every client, q = 1, when ``clients_per_round == num_clients``; otherwise the
    refilled cohort, analysed as ``clients_per_round`` of ``num_clients`` without replacement:
    :func:`cohort_release`). ``measure`` may also be ``"epsilon"`` (with ``delta``). The noise
    multiplier is Flower's (std on the sum / clipping norm, see the module docstring). This is
    :func:`reconrisk._src.analysis.calibrate.calibrate` itself, so :class:`ReconRiskAccountant` refuses exactly
    the round after ``Calibration.steps`` at the calibrated σ.
    """
    sampling = v.choice("sampling", sampling, tuple(SAMPLERS))
    m = v.integer("clients_per_round", clients_per_round, minimum=1)
    n = v.integer("num_clients", num_clients, minimum=1)
    if m > n:
        raise ReconRiskError(f"clients_per_round must be <= num_clients={n}; found {m}")
    solve = v.choice("solve", solve, ("noise_multiplier", "steps"))
    quantity = canonical_quantity(measure)
    kw: dict[str, Any] = dict(noise_multiplier=noise_multiplier, steps=rounds)
    if sampling == "without-replacement" or (sampling == "no-amplification" and m < n):
        kw.update(batch_size=m, dataset_size=n)  # the refilled cohort of m < n: cohort_release
    else:
        kw.update(sample_rate=1.0 if sampling == "no-amplification" else m / n)
    return calibrate(quantity, target, solve, **kw, **risk_args)


def epsilon_gap_note(sampling: str) -> str:
    """One line: what separates this accountant's ε from Flower's RDP one in ``sampling`` mode."""
    notes = {"poisson": "RDP -> (eps, delta) conversion loss (same release; PLD is tight)",
             "no-amplification": "all clients each round: RDP -> (eps, delta) conversion loss (exact Gaussian DP "
                                 "here); m < n: Flower's RDP reads a shift of C, but the refilled cohort moves "
                                 "the sum by 2C in the rounds the client is sampled, so it reports less",
             "without-replacement": "units: Flower's RDP reads sigma against sensitivity 2C (replace-one), "
                                    "so it reports a smaller release; against the same release (sigma/2) "
                                    "the RDP -> (eps, delta) conversion loss"}
    return notes[v.choice("sampling", sampling, tuple(notes))]
