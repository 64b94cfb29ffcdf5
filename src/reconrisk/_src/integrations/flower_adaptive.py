"""Flower's adaptive clipping (Andrew et al. 2021), accounted: the update *and* the noisy clipped count.

Flower's ``DifferentialPrivacyServerSideAdaptiveClipping`` and ``…ClientSideAdaptiveClipping`` take
no accountant, and each round they release two things computed on the same cohort of m clients:

* the noisy aggregate: N(0, (z·C)²) added to the sum of the m updates clipped to norm C (std z·C/m
  on their average), where z is the wrapper's ``noise_multiplier`` *after* Flower's adjustment
  ``z = (σ⁻² − (2σ_b)⁻²)^(−1/2)`` of the σ the user asked for (``compute_adaptive_noise_params``);
* the noisy count of clipped clients: ``np.random.normal(count, clipped_count_stddev)`` — the
  **uncentred** count, noise std σ_b = ``clipped_count_stddev`` on the count itself (only then
  divided by m to update C). One client moves it by 1; Flower's adjustment assumes the centred
  count of Andrew et al. (b − ½, sensitivity ½), so a ledger that composes z alone under-reports.

**The joint release.** Scale the count by z·C/σ_b: the round releases (S, (zC/σ_b)·b) +
N(0, z²C²·I), one Gaussian mechanism on one cohort. A client moves S by ≤ k·C and b by ≤ 1, where
k = 1 when it leaves its slot empty (Poisson, or every client every round) and k = 2 when its slot
is refilled or replaced (``no-amplification`` with m < n, ``without-replacement``;
:func:`reconrisk._src.integrations.flower_release.cohort_release`). The shift over the noise std is
then √(k²/z² + 1/σ_b²) — that of a Gaussian on the sum alone with noise multiplier
σ_e = k / √(k²/z² + 1/σ_b²), which the accountant reads in units of the shift k·C. Subsampling
and the composition over rounds (the clipping norm is a function of earlier releases) are those
of the fixed-clipping wrapper, so :class:`AccountedAdaptiveClipping` composes
``GaussianPrivacyEvent(σ_e, m, n)`` each round. ReRo of a refilled cohort also reads the zero-out
reference (:mod:`reconrisk._src.measures.rero_zeroout`) at σ_e, a shift of 1/σ_e² = 1/z² + 1/(4σ_b²) per
participation: sound for the reference whose target sends the update 0 and the count ½ (one law for every
candidate; the real client then moves (S, b) by (≤ C, ±½)). Same cohort of m = n clients, user σ 5, count
std 5, 10 rounds, δ 1e-5: z = 5.774 alone says ε 2.207; composed with the count, σ_e = 3.780 and
ε 3.565 (Gaussian DP, μ = √10/σ_e).

**Two departures of Flower's wrappers from that mechanism, closed here.** (1) They update the clipping
norm from the noisy count *before* adding the update's noise, and scale it to the *new* norm, while
the updates were clipped to the old one: a round that shrinks the norm adds less than z·C (z·0.93 in a
plain run). :class:`AccountedAdaptiveClipping` adds the noise at max(C_used, C_new) — never less than
accounted, never less than Flower's; given the released count, more noise is post-processing. (2)
They aggregate whatever replies came back while the noise stays scaled to ``num_sampled_clients``:
with m′ < m the average moves by C/m′. Such a round is skipped, as Flower's accounted fixed-clipping
wrappers skip it: nothing released, nothing composed.
"""

from __future__ import annotations

import math
from logging import WARNING
from math import isfinite

from flwr.serverapp import GaussianPrivacyEvent
from flwr.serverapp.exception import PrivacyBudgetExhausted
from flwr.serverapp.strategy import FedAvg, Strategy
from flwr.serverapp.strategy.dp_adaptive_clipping import DifferentialPrivacyAdaptiveBase
from flwr.supercore import log

from .. import _validate as v
from ..errors import ReconRiskError
from .flower import ReconRiskAccountant
from .flower_release import _sampling

__all__ = ["AccountedAdaptiveClipping", "joint_noise_multiplier"]


def joint_noise_multiplier(noise_multiplier: float, clipped_count_stddev: float, *, refilled: bool = False) -> float:
    """σ_e of one round of adaptive clipping, update and count together (module docstring).

    ``noise_multiplier``: the update's z (Flower's wrapper attribute, already adjusted);
    ``clipped_count_stddev``: σ_b; ``refilled``: the client's slot is refilled or replaced (sum
    moves by 2C, σ_e read in units of 2C) rather than left empty (C).
    """
    z = v.positive("noise_multiplier", noise_multiplier)
    sb = v.positive("clipped_count_stddev", clipped_count_stddev)
    if not isinstance(refilled, bool):
        raise ReconRiskError(f"refilled must be a bool; found {refilled!r} ({type(refilled).__name__})")
    k = 2.0 if refilled else 1.0
    return k / math.sqrt((k / z) ** 2 + 1.0 / sb ** 2)


class AccountedAdaptiveClipping(Strategy):
    """Flower's adaptive-clipping DP wrapper with every release composed into a Flower accountant.

    ``dp_strategy``: a ``DifferentialPrivacyServerSideAdaptiveClipping`` or
    ``DifferentialPrivacyClientSideAdaptiveClipping`` around ``FedAvg``; ``accountant``: a
    :class:`~reconrisk.integrations.flower.ReconRiskAccountant` (Flower's RDP accountant reads a
    no-amplification cohort of m < n as a shift of C, which the refilled cohort exceeds) in
    ``no-amplification`` or ``without-replacement`` — FedAvg samples a fixed-size cohort, so a
    ``poisson`` config is refused. Before each round it builds the joint event
    ``GaussianPrivacyEvent(σ_e, m, n)`` and, where the accountant has a limit, asks ``would_exceed`` —
    raising Flower's ``PrivacyBudgetExhausted`` as Flower's fixed-clipping wrappers do (a
    ReconRiskAccountant's risk target raises its own, naming the risk). After a round whose count
    or update was released, it composes the event. The update's noise is added at the larger of the
    norm the updates were clipped to and Flower's updated one, and a round with fewer replies than
    ``num_sampled_clients`` is skipped (module docstring). Replies must carry one ArrayRecord and one
    MetricRecord of equal weight each (the sensitivity of FedAvg's average and of the count is then
    that of one client).
    """

    def __init__(self, dp_strategy: DifferentialPrivacyAdaptiveBase, accountant) -> None:
        super().__init__()
        if not isinstance(dp_strategy, DifferentialPrivacyAdaptiveBase):
            raise ReconRiskError("dp_strategy must be a Flower DifferentialPrivacy…AdaptiveClipping wrapper; found "
                                 f"{type(dp_strategy).__name__}")
        inner = dp_strategy.strategy
        if not isinstance(inner, FedAvg) or type(inner).aggregate_train is not FedAvg.aggregate_train:
            raise ReconRiskError("dp_strategy must wrap a strategy using FedAvg.aggregate_train; found "
                                 f"{type(inner).__name__}")
        if not (dp_strategy.noise_multiplier > 0 and dp_strategy.clipped_count_stddev > 0):
            raise ReconRiskError("dp_strategy's noise_multiplier and clipped_count_stddev must be > 0 (a noiseless "
                                 f"release has no finite epsilon); found {dp_strategy.noise_multiplier!r}, "
                                 f"{dp_strategy.clipped_count_stddev!r}")
        if not isinstance(accountant, ReconRiskAccountant):
            raise ReconRiskError("accountant must be a reconrisk.integrations.flower.ReconRiskAccountant; found "
                                 f"{type(accountant).__name__}")
        mode = _sampling(accountant.config)
        if mode not in ("no-amplification", "without-replacement"):
            # FedAvg samples exactly m of the connected clients, never Poisson (Flower's wrappers refuse it too)
            raise ReconRiskError("the accountant's sampling_method must be one of 'no-amplification', "
                                 f"'without-replacement' (FedAvg samples a fixed-size cohort); found {mode!r}")
        for k in (False, True):  # refused now, not after a round has released what the ledger cannot hold
            v.noise_multiplier("the joint noise multiplier (update and count)", joint_noise_multiplier(
                dp_strategy.noise_multiplier, dp_strategy.clipped_count_stddev, refilled=k))
        self.dp_strategy, self.accountant = dp_strategy, accountant
        self._pending: dict[int, GaussianPrivacyEvent] = {}

    def __repr__(self) -> str:
        return f"AccountedAdaptiveClipping({self.dp_strategy!r})"

    def event(self, sample_size: int) -> GaussianPrivacyEvent:
        """The joint event of one round of ``sample_size`` clients (module docstring)."""
        n = self.accountant.config.population_size
        m = v.integer("sample_size", sample_size, minimum=1)
        if m > n:
            raise ReconRiskError(f"sample_size must be <= population_size={n}; found {m}")
        mode = _sampling(self.accountant.config)
        refilled = mode == "without-replacement" or (mode == "no-amplification" and m < n)
        sigma = joint_noise_multiplier(self.dp_strategy.noise_multiplier, self.dp_strategy.clipped_count_stddev,
                                       refilled=refilled)
        return GaussianPrivacyEvent(noise_multiplier=sigma, sample_size=m, population_size=n)

    def configure_train(self, server_round, arrays, config, grid):
        messages = list(self.dp_strategy.configure_train(server_round, arrays, config, grid))
        if not messages:
            return messages
        dp = self.dp_strategy
        if len(messages) != dp.num_sampled_clients:
            raise ReconRiskError(f"the round's sample size must equal num_sampled_clients={dp.num_sampled_clients} "
                                 f"(the noise is scaled to it); found {len(messages)}")
        event = self.event(len(messages))
        if self.accountant.config.max_epsilon is not None and self.accountant.would_exceed(event):
            spent = self.accountant.get_privacy_spent()
            raise PrivacyBudgetExhausted(f"The next private release would exceed max_epsilon (current epsilon: "
                                         f"{spent.epsilon}, delta: {spent.delta}).")
        self._pending[server_round] = event
        return messages

    def aggregate_train(self, server_round, replies):
        replies = list(replies)
        event = self._pending.pop(server_round, None)
        dp = self.dp_strategy
        if event is not None:
            _check_weights(replies, dp.strategy.weighted_by_key)
            answered = sum(not r.has_error() for r in replies)
            if answered == len(replies) and answered != dp.num_sampled_clients:
                log(WARNING, "round %s skipped: %s replies where the noise is scaled to num_sampled_clients=%s "
                             "(the average would move by more than the release composed)", server_round, answered,
                    dp.num_sampled_clients)
                return None, None
        before = dp.clipping_norm
        # Flower scales the update's noise to the norm *after* the count's update (module docstring): add it
        # at the larger of the norm the updates were clipped to and the new one
        vars(dp)["_add_noise_to_aggregated_arrays"] = lambda arrays: _noise_at_least(dp, before, arrays)
        try:
            arrays, metrics = dp.aggregate_train(server_round, replies)
        finally:
            vars(dp).pop("_add_noise_to_aggregated_arrays", None)
        if event is not None and (arrays is not None or self.dp_strategy.clipping_norm != before):
            self.accountant.compose(event)
        return arrays, metrics

    def configure_evaluate(self, server_round, arrays, config, grid):
        return self.dp_strategy.configure_evaluate(server_round, arrays, config, grid)

    def aggregate_evaluate(self, server_round, replies):
        return self.dp_strategy.aggregate_evaluate(server_round, replies)

    def summary(self) -> None:
        self.dp_strategy.summary()


def _noise_at_least(dp, used: float, arrays):
    """Flower's ``_add_noise_to_aggregated_arrays`` at norm max(used, the updated norm), the norm restored."""
    after = dp.clipping_norm
    dp.clipping_norm = max(used, after)
    try:
        return type(dp)._add_noise_to_aggregated_arrays(dp, arrays)
    finally:
        dp.clipping_norm = after


def _check_weights(replies, key: str) -> None:
    weights = []
    for reply in replies:
        if reply.has_error():
            continue
        c = reply.content
        if len(c.array_records) != 1 or len(c.metric_records) != 1:
            raise ReconRiskError("each reply must hold one ArrayRecord and one MetricRecord (a client moves the count "
                                 f"by one); found {len(c.array_records)} and {len(c.metric_records)}")
        w = next(iter(c.metric_records.values())).get(key)
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not isfinite(w) or w <= 0:
            raise ReconRiskError(f"each reply's weight {key!r} must be a positive finite number; found {w!r}")
        weights.append(float(w))
    if any(w != weights[0] for w in weights[1:]):
        raise ReconRiskError(f"replies must carry equal weights (FedAvg's average then moves by C/m); found {weights}")
