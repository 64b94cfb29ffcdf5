"""Flower rounds whose cohort varies: accounted as the schedule that ran (one step per round, its own q).

A strategy that samples a different number of clients each round (here Flower's own server-side fixed-clipping
wrapper told each round's cohort size, run in process; over 200 rounds, and under Poisson sampling, for which
Flower has no wrapper, the events such a strategy composes) hands the accountant one ``GaussianPrivacyEvent`` per round with that
round's ``sample_size``; the release is the schedule of those rounds (q_t = m_t / n under Poisson sampling, the
refilled cohort of m_t under no amplification), and ε is its :class:`PrivacyAnalysis`, never above Flower's own
RDP accountant on the same ledger.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

flwr = pytest.importorskip("flwr", reason="the Flower integration needs flwr (pip install reconrisk[flower])")
pytest.importorskip("dp_accounting", reason="Flower's RDP accountant needs dp_accounting")

from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402
from flwr.serverapp import (  # noqa: E402
    GaussianPrivacyEvent, NeighboringRelation, PrivacyConfig, RdpAccountant, SamplingMethod, ServerApp)
from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg  # noqa: E402

from reconrisk import Release  # noqa: E402
from reconrisk._src.analysis.privacy import PrivacyAnalysis  # noqa: E402
from reconrisk.integrations.flower import ReconRiskAccountant  # noqa: E402
from reconrisk.integrations.flower_runtime import run_in_process  # noqa: E402

N, SIGMA, DELTA = 10, 3.0, 1e-5


def _config(mode: str) -> PrivacyConfig:
    s, r = {"poisson": (SamplingMethod.POISSON, NeighboringRelation.ADD_OR_REMOVE_ONE),
            "no-amplification": (SamplingMethod.NO_AMPLIFICATION, NeighboringRelation.ADD_OR_REMOVE_ONE)}[mode]
    return PrivacyConfig(target_delta=DELTA, population_size=N, neighboring_relation=r, sampling_method=s)


def _cohorts(rounds: int, seed: int = 0) -> list[int]:
    """Each round's cohort size, 2 to 6 of the 10 clients (a strategy adapting it, or clients dropping out)."""
    g = np.random.default_rng(seed)
    return [int(m) for m in g.integers(2, 7, size=rounds)]


class VaryingCohort(DifferentialPrivacyServerSideFixedClipping):
    """Flower's wrapper over FedAvg, the round's cohort size set before each round (Flower's wrapper checks the
    replies against ``num_sampled_clients``, and composes an event of the cohort it sampled)."""

    def __init__(self, cohorts, accountant):
        inner = FedAvg(fraction_train=1e-9, fraction_evaluate=0.0, min_train_nodes=cohorts[0], min_available_nodes=1)
        super().__init__(inner, SIGMA, 1.0, cohorts[0], accountant=accountant)
        self.cohorts = cohorts

    def configure_train(self, server_round, arrays, config, grid):
        m = self.cohorts[server_round - 1]
        self.num_sampled_clients = self.strategy.min_train_nodes = m
        return super().configure_train(server_round, arrays, config, grid)


def _client_app() -> ClientApp:
    app = ClientApp()

    @app.train()
    def train(msg: Message, context) -> Message:  # a fixed small update per client: the accounting is the point
        arrays = msg.content["arrays"]
        pid = int(context.node_config["partition-id"])
        out = ArrayRecord({k: Array(a + 0.01 * (pid + 1)) for k, a in zip(arrays.keys(), arrays.to_numpy_ndarrays())})
        return Message(content=RecordDict({"arrays": out, "metrics": MetricRecord({"num-examples": 8})}), reply_to=msg)

    return app


def _simulate(mode: str, rounds: int):
    acct = ReconRiskAccountant(_config(mode))
    cohorts = _cohorts(rounds)
    strategy = VaryingCohort(cohorts, acct)
    server = ServerApp()

    @server.main()
    def main(grid, context):
        strategy.start(grid=grid, initial_arrays=ArrayRecord({"w": Array(np.zeros(4))}), num_rounds=rounds,
                       train_config=ConfigRecord({}))

    random.seed(0)
    np.random.seed(0)
    run_in_process(server, _client_app(), N)
    return acct, cohorts


def _ledger(mode: str, rounds: int):
    """Poisson sampling has no Flower wrapper (its DP wrappers account no amplification only): the events a
    varying Poisson cohort hands the accountant, one per round."""
    acct, cohorts = ReconRiskAccountant(_config(mode)), _cohorts(rounds)
    for m in cohorts:
        acct.compose(GaussianPrivacyEvent(SIGMA, m, N))
    return acct, cohorts


def _check(mode, acct, cohorts):
    rounds = len(cohorts)
    assert acct.num_releases == rounds and len(set(cohorts)) == 5
    ledger = [(e.sample_size, n) for e, n in acct._compositions]
    assert [m for m, _ in ledger] == cohorts and all(n == 1 for _, n in ledger)  # one event per round, as run
    sampler = "poisson" if mode == "poisson" else "fixed"  # no amplification, m < n: the refilled cohort
    release = Release.schedule([(SIGMA, m / N, 1) for m in cohorts], sampler=sampler)
    assert acct.release == release and len(release.segments) > rounds // 2  # the rounds in order, neighbours merged
    eps = PrivacyAnalysis(release).epsilon(DELTA, two_sided=True)
    assert acct.get_epsilon(DELTA) == eps.upper
    assert eps.upper - eps.lower <= 0.01 * eps.upper
    if mode == "poisson":  # Flower's own RDP accountant on the same ledger: the same release, looser
        rdp = RdpAccountant(_config(mode))
        for m in cohorts:
            rdp.compose(GaussianPrivacyEvent(SIGMA, m, N))
        assert eps.upper <= rdp.get_epsilon(DELTA)
    # composition commutes: the rounds grouped by cohort size are the same run
    counts = Release.schedule([(SIGMA, m / N, cohorts.count(m)) for m in sorted(set(cohorts))], sampler=sampler)
    other = PrivacyAnalysis(counts).epsilon(DELTA, two_sided=True)
    assert other.lower <= eps.upper and eps.lower <= other.upper
    # and a constant cohort of the largest size is a looser account of the same run (post-processing in q)
    looser = PrivacyAnalysis(Release.schedule([(SIGMA, max(cohorts) / N, rounds)], sampler=sampler))
    assert eps.upper <= looser.epsilon(DELTA, two_sided=True).lower


def test_a_varying_cohort_inside_flowers_wrapper_is_the_schedule_that_ran():
    """Flower's own wrapper, in process, 40 rounds (it asks ε after every round, each a fresh composition of the
    rounds so far: 200 rounds took minutes on a loaded machine; the 200-round ledgers are checked below)."""
    acct, cohorts = _simulate("no-amplification", rounds=40)
    _check("no-amplification", acct, cohorts)


@pytest.mark.parametrize("mode", ["no-amplification", "poisson"])
def test_varying_cohorts_over_200_rounds_are_the_schedule_that_ran(mode):
    acct, cohorts = _ledger(mode, rounds=200)
    _check(mode, acct, cohorts)
