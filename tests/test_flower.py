"""reconrisk's Flower accountant, stopping rule, calibration and local-DP bounds, inside Flower.

Every simulation runs Flower's own ServerApp, strategies (FedAvg inside Flower's
DifferentialPrivacyServerSideFixedClipping wrapper), ClientApp and LocalDpMod on a numpy MLP
trained on the embedded digits split over 10 clients. Two runtimes:

* Flower's simulation runtime (``flwr.simulation.run_simulation``, Ray backend on 1 CPU, one
  ClientApp actor in its own process; ``flwr[simulation]``, skipped without Ray):
  test_in_flowers_simulation_runtime — ε after each round and the stop at the calibrated round.
  The ServerApp runs in a thread of this process there, so the accountant is read directly.
* reconrisk.integrations.flower_runtime.run_in_process (a flwr Grid delivering each Message to
  the ClientApp in this process, no Ray): every other simulation test. It is fast, and the
  local-DP test needs each client's clean update, which only this process can record.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

flwr = pytest.importorskip("flwr", reason="the Flower integration needs flwr (pip install reconrisk[flower])")
pytest.importorskip("dp_accounting", reason="Flower's RDP accountant needs dp_accounting")

from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402
from flwr.clientapp.mod import LocalDpMod, fixedclipping_mod  # noqa: E402
from flwr.serverapp import (  # noqa: E402
    GaussianPrivacyEvent, NeighboringRelation, PrivacyConfig, RdpAccountant, SamplingMethod, ServerApp)
from flwr.serverapp.strategy import (  # noqa: E402
    DifferentialPrivacyClientSideFixedClipping, DifferentialPrivacyServerSideFixedClipping, FedAvg)
from scipy import stats  # noqa: E402

from reconrisk import Release  # noqa: E402
from reconrisk._src.analysis.privacy import PrivacyAnalysis
from reconrisk._src.theory.analytic_laws import MSELaw  # noqa: E402
from reconrisk._src.data import load_digits  # noqa: E402
from reconrisk.errors import ReconRiskError  # noqa: E402
from reconrisk.integrations.flower import (  # noqa: E402
    ReconRiskAccountant, RiskTargetExceeded, StopBeforeBudget, calibrate_flower)
from reconrisk.integrations.flower_local import LocalDpRiskMetrics, local_dp_bounds  # noqa: E402
from reconrisk.integrations.flower_runtime import run_in_process  # noqa: E402

N_CLIENTS, PER_CLIENT, HIDDEN = 10, 64, 16
MODES = {"poisson": (SamplingMethod.POISSON, NeighboringRelation.ADD_OR_REMOVE_ONE),
         "without-replacement": (SamplingMethod.WITHOUT_REPLACEMENT, NeighboringRelation.REPLACE_ONE),
         "no-amplification": (SamplingMethod.NO_AMPLIFICATION, NeighboringRelation.ADD_OR_REMOVE_ONE)}


def config(mode="no-amplification", population=N_CLIENTS, delta=1e-5, max_epsilon=None):
    s, r = MODES[mode]
    return PrivacyConfig(target_delta=delta, population_size=population, neighboring_relation=r,
                         sampling_method=s, max_epsilon=max_epsilon)


# -- a numpy MLP client (equal example counts: Flower's accounted FedAvg needs equal weights) -----------
def init_arrays(seed=0):
    g = np.random.default_rng(seed)
    return arrays_of({"w1": g.normal(0, 0.1, (64, HIDDEN)), "b1": np.zeros(HIDDEN),
                      "w2": g.normal(0, 0.1, (HIDDEN, 10)), "b2": np.zeros(10)})


def arrays_of(params):
    return ArrayRecord({k: Array(np.asarray(a)) for k, a in params.items()})


DIM = 64 * HIDDEN + HIDDEN + HIDDEN * 10 + 10


def make_client_app(mods=(), record=None):
    d = load_digits()
    app = ClientApp(mods=list(mods))

    @app.train()
    def train(msg: Message, context) -> Message:
        pid = int(context.node_config["partition-id"])
        x = d.x[pid * PER_CLIENT:(pid + 1) * PER_CLIENT].astype(float)
        y = d.y[pid * PER_CLIENT:(pid + 1) * PER_CLIENT]
        arrays = msg.content["arrays"]
        p = {k: a.copy() for k, a in zip(arrays.keys(), arrays.to_numpy_ndarrays())}
        for _ in range(2):  # two full-batch gradient steps
            h = np.maximum(x @ p["w1"] + p["b1"], 0.0)
            z = h @ p["w2"] + p["b2"]
            pr = np.exp(z - z.max(1, keepdims=True))
            pr /= pr.sum(1, keepdims=True)
            pr[np.arange(len(y)), y] -= 1.0
            gz = pr / len(y)
            gh = (gz @ p["w2"].T) * (h > 0)
            for k, g in (("w2", h.T @ gz), ("b2", gz.sum(0)), ("w1", x.T @ gh), ("b1", gh.sum(0))):
                p[k] -= 0.5 * g
        if record is not None:  # the clean trained model, before any mod clips or noises it
            record[(context.node_id, int(msg.content["config"]["server-round"]))] = (
                np.concatenate([a.ravel() for a in arrays.to_numpy_ndarrays()]),
                np.concatenate([p[k].ravel() for k in arrays.keys()]))
        content = RecordDict({"arrays": arrays_of(p), "metrics": MetricRecord({"num-examples": PER_CLIENT})})
        return Message(content=content, reply_to=msg)

    return app


def run(strategy, rounds, client_app=None, seed=0):
    """Run Flower's ServerApp with ``strategy`` for ``rounds``; return Flower's Result."""
    out = {}
    server = ServerApp()

    @server.main()
    def main(grid, context):
        out["result"] = strategy.start(grid=grid, initial_arrays=init_arrays(), num_rounds=rounds,
                                       train_config=ConfigRecord({}))

    random.seed(seed)  # FedAvg samples its nodes with Python's random
    np.random.seed(seed)  # Flower's wrappers draw their noise from numpy's global generator
    run_in_process(server, client_app or make_client_app(), N_CLIENTS)
    return out["result"]


def dp_strategy(accountant, sigma=1.0, per_round=5, clip=1.0, wrapper=DifferentialPrivacyServerSideFixedClipping):
    inner = FedAvg(fraction_train=per_round / N_CLIENTS, fraction_evaluate=0.0, min_train_nodes=per_round,
                   min_available_nodes=per_round)
    return wrapper(inner, sigma, clip, per_round, accountant=accountant)


# -- the accountant inside Flower's wrapper ---------------------------------------------------------------
@pytest.mark.parametrize("side", ["server", "client"])
def test_epsilon_after_each_round_is_the_analysis_of_the_same_release(side):
    """Both of Flower's accounted wrappers (server-side clipping; client-side with fixedclipping_mod)."""
    wrapper, mods = {"server": (DifferentialPrivacyServerSideFixedClipping, []),
                     "client": (DifferentialPrivacyClientSideFixedClipping, [fixedclipping_mod])}[side]
    acct = ReconRiskAccountant(config())
    eps = []

    class Watch(StopBeforeBudget):
        def aggregate_train(self, server_round, replies):
            out = super().aggregate_train(server_round, replies)
            eps.append(acct.get_epsilon(1e-5))
            return out

    result = run(Watch(dp_strategy(acct, sigma=2.0, wrapper=wrapper)), rounds=3, client_app=make_client_app(mods))
    assert acct.num_releases == 3
    for t, e in enumerate(eps, start=1):  # 5 of 10 clients, no amplification: the refilled cohort
        assert e == PrivacyAnalysis(Release.fixed_batch(2.0, 5, N_CLIENTS, t)).epsilon(1e-5).upper
    # Flower's own metrics carry the spent budget each round
    assert result.train_metrics_clientapp[3]["privacy_epsilon"] == eps[-1]
    assert result.train_metrics_clientapp[3]["privacy_rounds"] == 3


# -- the same inside Flower's own simulation runtime (Ray) ----------------------------------------------------
#: Ray on one CPU, one ClientApp actor (the 10 SuperNodes share it), quiet; 2-core CI machines
RAY_BACKEND = {"init_args": {"num_cpus": 1, "include_dashboard": False, "logging_level": 30},
               "client_resources": {"num_cpus": 1, "num_gpus": 0.0}}


def test_in_flowers_simulation_runtime(monkeypatch):
    """flwr.simulation.run_simulation (Ray backend): ε after each round is the PrivacyAnalysis of the
    same release, and training stops before the round after the one the calibrator predicts."""
    ray = pytest.importorskip("ray", reason="Flower's simulation runtime needs Ray (pip install 'reconrisk[flower]')")
    from flwr.simulation import run_simulation

    monkeypatch.setenv("FLWR_TELEMETRY_ENABLED", "0")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    monkeypatch.setenv("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")  # no GPU here: silence Ray's notice about it
    target, sigma, rounds = 0.05, 2.0, 6  # (σ 2: the zero-out reference allows 3 rounds; σ 3 now allows 7 > 6)
    cal = calibrate_flower(target, "reconstruction", solve="steps", noise_multiplier=sigma, clients_per_round=5,
                           num_clients=N_CLIENTS, sampling="no-amplification", prior_size=100)
    assert 2 <= cal.steps <= rounds - 2  # a stop inside the run, after a few rounds
    acct = ReconRiskAccountant(config(), max_risk=target, measure="reconstruction", prior_size=100)
    seen = []  # (round, releases, epsilon, risk) after each aggregation, read in the ServerApp's thread

    class Watch(StopBeforeBudget):
        def aggregate_train(self, server_round, replies):
            replies = list(replies)
            out = super().aggregate_train(server_round, replies)
            seen.append((server_round, len(replies), acct.num_releases, acct.get_epsilon(1e-5), ray.is_initialized()))
            return out

    strategy = Watch(dp_strategy(acct, sigma=sigma))
    out = {}
    server = ServerApp()

    @server.main()
    def main(grid, context):
        out["grid"] = type(grid).__name__
        # timeout: a round's replies are awaited 60 s at most (not Flower's default hour) should Ray fail
        out["result"] = strategy.start(grid=grid, initial_arrays=init_arrays(), num_rounds=rounds,
                                       train_config=ConfigRecord({}), timeout=60)

    random.seed(0)
    np.random.seed(0)
    try:
        run_simulation(server_app=server, client_app=make_client_app(), num_supernodes=N_CLIENTS,
                       backend_config=RAY_BACKEND)
    finally:
        if ray.is_initialized():  # Flower shuts Ray down itself; only if a failure left it running
            ray.shutdown()
    assert out["grid"] == "InMemoryGrid"  # Flower's simulation grid, not reconrisk's in-process one
    trained = [s for s in seen if s[1] > 0]
    assert [s[0] for s in trained] == list(range(1, cal.steps + 1))
    assert all(s[1] == 5 and s[4] for s in trained)  # 5 clients' replies each round, through Ray
    for rnd, _, releases, eps, _ in trained:
        assert releases == rnd
        assert eps == PrivacyAnalysis(Release.fixed_batch(sigma, 5, N_CLIENTS, rnd)).epsilon(1e-5).upper
    # stopped before the round the calibrator refuses; the spent budget is in Flower's metrics
    assert strategy.stopped_round == cal.steps + 1 and acct.num_releases == cal.steps
    metrics = out["result"].train_metrics_clientapp
    assert metrics[cal.steps]["privacy_epsilon"] == trained[-1][3]
    stop = metrics[cal.steps + 1]
    assert stop["privacy_stopped"] == 1 and stop["privacy_rounds"] == cal.steps
    assert stop["privacy_risk"] == cal.bound.upper <= target


def test_training_stops_at_the_round_the_calibrator_predicts():
    target, sigma = 0.05, 3.0  # (7 rounds under the zero-out reference; σ 4 now allows 14 > 12)
    cal = calibrate_flower(target, "reconstruction", solve="steps", noise_multiplier=sigma, clients_per_round=5,
                           num_clients=N_CLIENTS, sampling="no-amplification", prior_size=100)
    assert 1 <= cal.steps < 12
    acct = ReconRiskAccountant(config(), max_risk=target, measure="reconstruction", prior_size=100)
    strategy = StopBeforeBudget(dp_strategy(acct, sigma=sigma))
    result = run(strategy, rounds=12)
    assert acct.num_releases == cal.steps
    assert strategy.stopped_round == cal.steps + 1
    assert "stopped before round" in strategy.stop_message
    stop = result.train_metrics_clientapp[cal.steps + 1]
    assert stop["privacy_stopped"] == 1 and stop["privacy_rounds"] == cal.steps
    assert stop["privacy_risk"] <= target
    assert acct.risk("reconstruction", prior_size=100).upper == cal.bound.upper


def test_stops_on_flowers_own_epsilon_limit_too():
    cal = calibrate_flower(20.0, "epsilon", solve="steps", noise_multiplier=2.0, clients_per_round=5,
                           num_clients=N_CLIENTS, sampling="no-amplification", delta=1e-5)
    acct = ReconRiskAccountant(config(max_epsilon=20.0))
    strategy = StopBeforeBudget(dp_strategy(acct, sigma=2.0))
    run(strategy, rounds=cal.steps + 3)
    assert acct.num_releases == cal.steps and strategy.stopped_round == cal.steps + 1


def test_state_round_trips_through_state_dict():
    acct = ReconRiskAccountant(config("poisson", population=1000), max_risk=0.5, prior_size=10)
    acct.compose(GaussianPrivacyEvent(1.0, 10, 1000), 20)
    acct.compose(GaussianPrivacyEvent(1.5, 20, 1000), 5)
    state = acct.state_dict()
    import json

    state = json.loads(json.dumps(state))  # JSON-serialisable
    other = ReconRiskAccountant(config("poisson", population=1000))
    other.load_state_dict(state)
    assert other.num_releases == 25 and other.risk_target == acct.risk_target
    assert other.release == acct.release
    assert other.get_epsilon(1e-5) == acct.get_epsilon(1e-5)
    with pytest.raises(ReconRiskError, match="config"):
        ReconRiskAccountant(config("poisson", population=999)).load_state_dict(state)
    with pytest.raises(ReconRiskError, match="schema"):
        other.load_state_dict({**state, "schema_version": 99})


# -- the accountant against Flower's RDP accountant and against PrivacyAnalysis --------------------------
@pytest.mark.parametrize("mode,sigma,m,n,t", [("poisson", 1.0, 10, 1000, 100), ("poisson", 0.8, 50, 1000, 30),
                                             ("no-amplification", 1.0, 10, 1000, 100),
                                             ("no-amplification", 5.0, 3, 50, 7),
                                             ("no-amplification", 2.0, 50, 50, 7),
                                             ("without-replacement", 1.0, 10, 1000, 100)])
def test_epsilon_is_the_pld_of_the_release_and_never_above_flowers_rdp(mode, sigma, m, n, t):
    cfg = config(mode, population=n)
    ours, rdp = ReconRiskAccountant(cfg), RdpAccountant(cfg)
    ev = GaussianPrivacyEvent(sigma, m, n)
    ours.compose(ev, t)
    rdp.compose(ev, t)
    if mode == "without-replacement" or (mode == "no-amplification" and m < n):
        release = Release.fixed_batch(sigma, m, n, t)  # no-amplification, m < n: the refilled cohort
        # Flower's RDP reads sigma against the replace-one sensitivity 2C; the same release is sigma/2 there
        import dp_accounting as dpa

        same = dpa.rdp.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
        same.compose(dpa.SelfComposedDpEvent(dpa.SampledWithoutReplacementDpEvent(n, m, dpa.GaussianDpEvent(sigma / 2)), t))
        reference = same.get_epsilon(1e-5)
        if mode == "without-replacement":
            assert ours.get_epsilon(1e-5) > rdp.get_epsilon(1e-5)  # Flower's units understate it
    else:
        release = Release(sigma, 1.0 if mode == "no-amplification" else m / n, t)
        reference = rdp.get_epsilon(1e-5)
    assert ours.release == release
    assert ours.get_epsilon(1e-5) == PrivacyAnalysis(release).epsilon(1e-5).upper
    assert ours.get_epsilon(1e-5) <= reference
    spent = ours.get_privacy_spent()
    assert (spent.epsilon, spent.delta, spent.num_releases, spent.accounting_method) == (
        ours.get_epsilon(1e-5), 1e-5, t, "pld")
    assert ours.get_delta(spent.epsilon) <= 1e-5 * (1 + 1e-6)


def test_would_exceed_for_epsilon_and_risk_leaves_the_state_unchanged():
    acct = ReconRiskAccountant(config("poisson", population=1000))
    ev = GaussianPrivacyEvent(1.0, 10, 1000)
    acct.compose(ev, 50)
    e50 = acct.get_epsilon(1e-5)
    e51 = PrivacyAnalysis(Release(1.0, 0.01, 51)).epsilon(1e-5).upper
    assert acct.would_exceed(ev, (e50 + e51) / 2) and not acct.would_exceed(ev, e51)
    assert acct.would_exceed(ev, e50, 1) and not acct.would_exceed(ev, e51 * 2, 1)
    r51 = PrivacyAnalysis(Release(1.0, 0.01, 51)).risk("reconstruction", prior_size=100).upper
    assert not acct.would_exceed(ev, max_risk=r51, prior_size=100)
    assert acct.would_exceed(ev, max_risk=r51 * 0.999, prior_size=100)
    assert acct.num_releases == 50 and acct.get_epsilon(1e-5) == e50
    with pytest.raises(ReconRiskError, match="limit"):
        acct.would_exceed(ev)


def test_implements_flowers_protocol_member_for_member():
    """Every member of flwr.serverapp.PrivacyAccountant, with its parameters (names, order, defaults) and types."""
    import inspect
    import typing

    from flwr.serverapp import PrivacyAccountant, PrivacySpent

    members = [k for k in vars(PrivacyAccountant) if not k.startswith("_")]
    assert set(members) >= {"config", "num_releases", "compose", "get_epsilon", "get_delta", "get_privacy_spent",
                            "would_exceed", "state_dict", "load_state_dict"}
    for name in members:
        theirs, ours = vars(PrivacyAccountant)[name], getattr(ReconRiskAccountant, name)
        if isinstance(theirs, property):
            assert isinstance(ours, property), name
            assert (typing.get_type_hints(ours.fget)["return"] == typing.get_type_hints(theirs.fget)["return"]), name
            continue
        p_theirs = list(inspect.signature(theirs).parameters.values())
        p_ours = list(inspect.signature(ours).parameters.values())
        assert [(p.name, p.kind, p.default) for p in p_ours[:len(p_theirs)]] == [
            (p.name, p.kind, p.default) for p in p_theirs], name
        assert all(p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in p_ours[len(p_theirs):]), name
        assert typing.get_type_hints(ours).get("return") == typing.get_type_hints(theirs).get("return"), name
    # and the values returned are of those types, driven through Flower's own types
    acct = ReconRiskAccountant(config("poisson", population=100, max_epsilon=5.0))
    acct.compose(GaussianPrivacyEvent(noise_multiplier=1.2, sample_size=7, population_size=100), count=3)
    assert isinstance(acct.config, PrivacyConfig) and type(acct.num_releases) is int and acct.num_releases == 3
    spent = acct.get_privacy_spent()
    assert isinstance(spent, PrivacySpent) and spent.optimal_order is None
    assert all(type(x) is float for x in (acct.get_epsilon(1e-5), acct.get_delta(1.0), spent.epsilon, spent.delta))
    assert type(acct.would_exceed(GaussianPrivacyEvent(1.2, 7, 100), None, 2)) is bool
    assert isinstance(acct.state_dict(), dict) and acct.load_state_dict(acct.state_dict()) is None


@pytest.mark.parametrize("mode", list(MODES))
def test_would_exceed_with_count_is_composing_count_rounds(mode):
    """Flower's semantics: would_exceed(event, limit, count) is whether ε after count more releases is > limit."""
    cfg = config(mode, population=200, delta=1e-6)
    acct, ev = ReconRiskAccountant(cfg), GaussianPrivacyEvent(noise_multiplier=1.5, sample_size=20, population_size=200)
    acct.compose(ev, 4)
    after = ReconRiskAccountant(cfg)
    after.compose(ev, 4)
    after.compose(ev, 6)
    e10 = after.get_epsilon(1e-6)
    assert acct.would_exceed(ev, e10 * 0.999, 6) and not acct.would_exceed(ev, e10, 6)
    assert not acct.would_exceed(ev, e10 * 0.999, 5)
    assert acct.num_releases == 4  # unchanged
    with pytest.raises(ValueError, match="count"):
        acct.would_exceed(ev, 1.0, 0)
    with pytest.raises(ValueError, match="max_epsilon"):
        acct.would_exceed(ev, 0.0)


@pytest.mark.parametrize("mode", list(MODES))
def test_get_delta_on_flowers_domain(mode):
    """Flower's get_delta takes any finite ε >= 0: δ(0) (the total variation) and ε beyond reconrisk's ε range."""
    acct = ReconRiskAccountant(config(mode, population=100))
    acct.compose(GaussianPrivacyEvent(1.0, 10, 100), 20)
    a = acct.analysis
    assert acct.get_delta(0.0) == a.delta(0.0).upper >= acct.get_delta(0.5) == a.delta(0.5).upper
    assert acct.get_delta(300.0) == a.delta(300.0).upper <= 1e-10
    assert acct.get_delta(0.0) <= 1.0
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ReconRiskError, match="epsilon"):
            acct.get_delta(bad)


def test_refuses_a_sampling_and_relation_pair_it_does_not_analyse():
    cfg = config("poisson")
    object.__setattr__(cfg, "neighboring_relation", NeighboringRelation.REPLACE_ONE)  # a pair Flower refuses today
    with pytest.raises(ReconRiskError, match="neighboring_relation"):
        ReconRiskAccountant(cfg)


def test_load_state_dict_refuses_malformed_state():
    acct = ReconRiskAccountant(config("poisson", population=100))
    acct.compose(GaussianPrivacyEvent(1.0, 10, 100), 2)
    state = acct.state_dict()
    for bad in ({**state, "risk_target": [0.1]}, {**state, "compositions": None},
                {**state, "compositions": [{"event": {"noise_multiplier": 1.0}, "count": 1}]},
                {**state, "compositions": [{"event": state["compositions"][0]["event"], "count": 0}]}):
        with pytest.raises(ReconRiskError):
            acct.load_state_dict(bad)
    assert acct.num_releases == 2


@pytest.mark.parametrize("measure,args", [("reconstruction", {"prior_size": 100}), ("reidentification", {"prior_size": 100}),
                                          ("attribute", {"baseline": 0.1}), ("membership_tpr", {"fpr": 0.01}),
                                          ("membership_advantage", {}), ("rad", {"prior_size": 100}),
                                          ("bayes_security", {})])
def test_every_risk_measure_is_the_analysis_of_the_release(measure, args):
    acct = ReconRiskAccountant(config("without-replacement", population=1000))
    acct.compose(GaussianPrivacyEvent(1.0, 10, 1000), 20)
    assert acct.risk(measure, **args) == PrivacyAnalysis(Release.fixed_batch(1.0, 10, 1000, 20)).risk(measure, **args)


def test_calibrated_noise_meets_the_target_at_the_given_rounds():
    cal = calibrate_flower(0.05, "reconstruction", rounds=50, clients_per_round=10, num_clients=1000,
                           sampling="without-replacement", prior_size=100)
    acct = ReconRiskAccountant(config("without-replacement", population=1000), max_risk=0.05, prior_size=100)
    ev = GaussianPrivacyEvent(cal.noise_multiplier, 10, 1000)
    acct.compose(ev, 49)
    assert not acct.would_exceed(ev)
    acct.compose(ev)
    assert acct.risk("reconstruction", prior_size=100).upper == cal.bound.upper <= 0.05
    assert acct.exceeded_by(ev)["limit"] == "risk"
    with pytest.raises(RiskTargetExceeded, match="reconstruction risk target 0.05"):  # Flower's call: it stops
        acct.would_exceed(ev)


@pytest.mark.parametrize("bad", [dict(max_risk=1.5, prior_size=10), dict(max_risk=0.1), dict(prior_size=10),
                                 dict(max_risk=0.1, measure="nope", prior_size=10)])
def test_invalid_risk_targets_are_refused(bad):
    with pytest.raises(ReconRiskError):
        ReconRiskAccountant(config(), **bad)


def test_invalid_inputs_are_refused():
    acct = ReconRiskAccountant(config("poisson", population=100))
    with pytest.raises(ReconRiskError, match="population_size"):
        acct.compose(GaussianPrivacyEvent(1.0, 10, 1000))
    with pytest.raises(ReconRiskError, match="count"):
        acct.compose(GaussianPrivacyEvent(1.0, 10, 100), 0)
    with pytest.raises(ReconRiskError, match="event"):
        acct.compose((1.0, 10, 100))
    with pytest.raises(ReconRiskError, match="delta"):
        acct.get_epsilon(1.5)
    with pytest.raises(ReconRiskError, match="config"):
        ReconRiskAccountant({"target_delta": 1e-5})
    with pytest.raises(ReconRiskError, match="num_releases=0"):
        acct.risk("reconstruction", prior_size=10)
    assert acct.get_epsilon(1e-5) == 0.0 and acct.get_delta(1.0) == 0.0
    with pytest.raises(ReconRiskError, match="sampling"):
        calibrate_flower(0.1, rounds=5, clients_per_round=2, num_clients=10, sampling="shuffled", prior_size=10)
    with pytest.raises(ReconRiskError, match="clients_per_round"):
        calibrate_flower(0.1, rounds=5, clients_per_round=20, num_clients=10, prior_size=10)
    with pytest.raises(ReconRiskError, match="accountant"):
        StopBeforeBudget(dp_strategy(None))


# -- local DP: the analytic attack on the noisy updates ----------------------------------------------------
def test_local_dp_analytic_attack_follows_its_law():
    mod = LocalDpMod(clipping_norm=0.5, sensitivity=0.5, epsilon=20.0, delta=1e-5)
    record, seen = {}, []

    class Server(LocalDpRiskMetrics):
        def aggregate_train(self, server_round, replies):
            replies = list(replies)
            for r in replies:  # what the honest-but-curious server sees: each client's noisy model
                a = r.content["arrays"]
                seen.append((r.metadata.src_node_id, server_round,
                             np.concatenate([x.ravel() for x in a.to_numpy_ndarrays()])))
            return super().aggregate_train(server_round, replies)

    inner = FedAvg(fraction_train=0.5, fraction_evaluate=0.0, min_train_nodes=5, min_available_nodes=5)
    strategy = Server(inner, mod, DIM, prior_size=100)
    result = run(strategy, rounds=8, client_app=make_client_app([mod], record))
    bounds = local_dp_bounds(mod, DIM, prior_size=100)
    # the attack: the server's unbiased reconstruction of the clipped update, noisy model - model sent
    hits, n = 0, 0
    for node, rnd, noisy in seen:
        sent, trained = record[(node, rnd)]
        update = trained - sent
        clipped = update * min(1.0, mod.clipping_norm / np.linalg.norm(update))
        mse = np.mean((noisy - sent - clipped) ** 2)
        hits += mse <= bounds["eta_mse"]
        n += 1
    assert n == 40
    lo, hi = stats.binomtest(hits, n).proportion_ci(0.999, method="exact")
    assert lo <= bounds["mse_rero"] <= hi  # the law of this attack (attack-specific), within the interval
    assert bounds["mse_rero"] == pytest.approx(float(MSELaw(bounds["expected_mse"], DIM).cdf(bounds["eta_mse"])))
    last = result.train_metrics_clientapp[8]
    k = max(strategy.participations.values())
    assert last["ldp_max_rounds"] == k and last["ldp_mse_rero"] == bounds["mse_rero"]
    assert last["ldp_rero"] == PrivacyAnalysis(Release(bounds["noise_multiplier"], 1.0, k, sampler="fixed")).rero(
        prior_size=100).upper
    assert last["ldp_mse_rero_rounds"] >= last["ldp_mse_rero"]  # k matched reconstructions: a stronger attack


def test_local_dp_bounds_validate_inputs():
    mod = LocalDpMod(clipping_norm=1.0, sensitivity=1.0, epsilon=1.0, delta=1e-5)
    with pytest.raises(ReconRiskError, match="dim"):
        local_dp_bounds(mod, 0)
    with pytest.raises(ReconRiskError, match="mod"):
        local_dp_bounds(object(), 10)
    with pytest.raises(ReconRiskError, match="rounds"):
        local_dp_bounds(mod, 10, rounds=0)


def test_importing_reconrisk_does_not_import_flower():
    import subprocess
    import sys

    code = "import sys, reconrisk, reconrisk.integrations; print('flwr' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
