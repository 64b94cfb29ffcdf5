"""Flower's adaptive clipping accounted (update and noisy clipped count), and risk targets that stop training
the Flower way (the accountant handed to Flower's own DP wrapper, no StopBeforeBudget, no max_epsilon).

References computed here without reconrisk's engine: the Gaussian-DP closed form (Balle & Wang 2018) of the
joint mechanism with every client every round, μ = √T·√(1/z² + 1/σ_b²) (z: Flower's update noise multiplier,
σ_b: the count's std; reconrisk.integrations.flower_adaptive), and dp_accounting's optimistic PLD for the
refilled cohort's joint shift √(4/z² + 1/σ_b²).
"""

from __future__ import annotations

import math

import pytest

pytest.importorskip("flwr", reason="the Flower integration needs flwr (pip install reconrisk[flower])")

from flwr.clientapp.mod import adaptiveclipping_mod  # noqa: E402
from flwr.serverapp import GaussianPrivacyEvent, NeighboringRelation, PrivacyConfig, SamplingMethod  # noqa: E402
from flwr.serverapp.exception import PrivacyBudgetExhausted  # noqa: E402
from flwr.serverapp.strategy import (  # noqa: E402
    DifferentialPrivacyClientSideAdaptiveClipping, DifferentialPrivacyServerSideAdaptiveClipping, FedAvg)
from scipy import optimize, stats  # noqa: E402
from test_flower import N_CLIENTS, config, dp_strategy, make_client_app, run  # noqa: E402

from reconrisk.errors import ReconRiskError  # noqa: E402
from reconrisk.integrations.flower import ReconRiskAccountant, RiskTargetExceeded, calibrate_flower  # noqa: E402
from reconrisk.integrations.flower_adaptive import AccountedAdaptiveClipping, joint_noise_multiplier  # noqa: E402


def gaussian_dp_epsilon(mu, delta):
    """Balle & Wang 2018: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), solved for ε."""
    def d(e):
        return stats.norm.cdf(-e / mu + mu / 2) - math.exp(e) * stats.norm.cdf(-e / mu - mu / 2)

    return optimize.brentq(lambda e: d(e) - delta, 0.0, 200.0, xtol=1e-12)


def flowers_update_multiplier(sigma, count_std):
    """Flower's compute_adaptive_noise_params: z = (σ⁻² − (2σ_b)⁻²)^(−1/2), written out."""
    return (sigma ** -2 - (2 * count_std) ** -2) ** -0.5


def adaptive(sigma, count_std, m, wrapper=DifferentialPrivacyServerSideAdaptiveClipping):
    inner = FedAvg(fraction_train=m / N_CLIENTS, fraction_evaluate=0.0, min_train_nodes=m, min_available_nodes=m)
    return wrapper(inner, noise_multiplier=sigma, num_sampled_clients=m, initial_clipping_norm=1.0,
                   clipped_count_stddev=count_std)


# -- the joint noise multiplier ---------------------------------------------------------------------------
@pytest.mark.parametrize("sigma,count_std,n,rounds,delta,reported,joint", [
    (5.0, 5.0, 10, 10, 1e-5, 2.207, 3.565),  # the figure
    (3.0, 4.0, 20, 15, 1e-6, None, None),    # a setting the issue does not name
])
def test_the_count_is_composed_with_the_update(sigma, count_std, n, rounds, delta, reported, joint):
    z = flowers_update_multiplier(sigma, count_std)
    strategy = adaptive(sigma, count_std, N_CLIENTS)
    assert strategy.noise_multiplier == pytest.approx(z, rel=1e-12)  # what Flower adds to the update
    acct = ReconRiskAccountant(config(population=n, delta=delta))
    sigma_e = joint_noise_multiplier(z, count_std)
    acct.compose(GaussianPrivacyEvent(sigma_e, n, n), rounds)
    closed = gaussian_dp_epsilon(math.sqrt(rounds) * math.sqrt(1 / z ** 2 + 1 / count_std ** 2), delta)
    update_only = gaussian_dp_epsilon(math.sqrt(rounds) / z, delta)
    assert acct.get_epsilon(delta) == pytest.approx(closed, rel=1e-9)
    assert acct.get_epsilon(delta) > update_only
    if joint is not None:
        assert (update_only, closed) == pytest.approx((reported, joint), abs=6e-4)


def test_refilled_cohort_reads_the_joint_shift_in_units_of_2c():
    """m < n, no amplification: the sum moves by 2C, the count by 1; the joint shift over the noise std is
    √(4/z² + 1/σ_b²), never below the attack on it (dp_accounting's optimistic PLD at that shift)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    z, sb, m, n, t = 4.0, 3.0, 5, 10, 12
    acct = ReconRiskAccountant(config(population=n))
    strat = AccountedAdaptiveClipping(adaptive(5.0, sb, m), acct)
    strat.dp_strategy.noise_multiplier = z
    ev = strat.event(m)
    assert ev.noise_multiplier == pytest.approx(2 / math.sqrt(4 / z ** 2 + 1 / sb ** 2), rel=1e-12)
    acct.compose(ev, t)
    shift = math.sqrt(4 / z ** 2 + 1 / sb ** 2)
    attack = pld.from_gaussian_mechanism(1 / shift, sampling_prob=m / n, pessimistic_estimate=False,
                                         use_connect_dots=False).self_compose(t).get_epsilon_for_delta(1e-5)
    assert acct.get_epsilon(1e-5) >= attack
    assert strat.event(n).noise_multiplier == pytest.approx(1 / math.sqrt(1 / z ** 2 + 1 / sb ** 2), rel=1e-12)


@pytest.mark.parametrize("side", ["server", "client"])
def test_inside_flowers_adaptive_wrappers(side):
    wrapper, mods = {"server": (DifferentialPrivacyServerSideAdaptiveClipping, []),
                     "client": (DifferentialPrivacyClientSideAdaptiveClipping, [adaptiveclipping_mod])}[side]
    acct = ReconRiskAccountant(config())
    strategy = AccountedAdaptiveClipping(adaptive(5.0, 5.0, N_CLIENTS, wrapper), acct)
    clips = []

    class Watch(AccountedAdaptiveClipping):
        def aggregate_train(self, server_round, replies):
            out = super().aggregate_train(server_round, replies)
            clips.append(self.dp_strategy.clipping_norm)
            return out

    strategy = Watch(strategy.dp_strategy, acct)
    run(strategy, rounds=3, client_app=make_client_app(mods))
    assert acct.num_releases == 3 and len(set(clips)) == 3  # the clipping norm moved every round
    z = flowers_update_multiplier(5.0, 5.0)
    closed = gaussian_dp_epsilon(math.sqrt(3) * math.sqrt(1 / z ** 2 + 1 / 25), 1e-5)
    assert acct.get_epsilon(1e-5) == pytest.approx(closed, rel=1e-9)


def test_adaptive_stops_at_the_epsilon_limit_and_refuses_what_it_cannot_account():
    acct = ReconRiskAccountant(config(max_epsilon=2.0))
    strategy = AccountedAdaptiveClipping(adaptive(5.0, 5.0, N_CLIENTS), acct)
    with pytest.raises(PrivacyBudgetExhausted, match="max_epsilon"):
        run(strategy, rounds=20)
    assert 1 <= acct.num_releases < 20 and acct.get_epsilon(1e-5) <= 2.0
    with pytest.raises(ReconRiskError, match="ReconRiskAccountant"):
        AccountedAdaptiveClipping(adaptive(5.0, 5.0, N_CLIENTS), object())
    with pytest.raises(ReconRiskError, match="AdaptiveClipping"):
        AccountedAdaptiveClipping(dp_strategy(None), acct)
    with pytest.raises(ReconRiskError, match="clipped_count_stddev"):
        joint_noise_multiplier(5.0, 0.0)


# -- a risk target alone stops Flower's own wrapper, and the message names the risk ---------------------
def test_a_risk_target_stops_flowers_own_wrapper_without_max_epsilon():
    target, sigma = 0.05, 4.0
    cal = calibrate_flower(target, "reconstruction", solve="steps", noise_multiplier=sigma, clients_per_round=5,
                           num_clients=N_CLIENTS, sampling="no-amplification", prior_size=100)
    acct = ReconRiskAccountant(config(), max_risk=target, measure="reconstruction", prior_size=100)
    assert acct.state_dict()["config"]["max_epsilon"] is None  # the config as given
    with pytest.raises(RiskTargetExceeded, match="reconstruction risk target 0.05") as stop:
        run(dp_strategy(acct, sigma=sigma), rounds=cal.steps + 5)
    assert "epsilon" not in str(stop.value)
    assert acct.num_releases == cal.steps
    assert acct.risk("reconstruction", prior_size=100).upper == cal.bound.upper <= target
    # asked directly with a limit, it answers as Flower's protocol does: a bool
    ev = GaussianPrivacyEvent(sigma, 5, N_CLIENTS)
    assert acct.would_exceed(ev, max_risk=target, prior_size=100) is True
    assert acct.exceeded_by(ev)["limit"] == "risk"


def test_without_a_risk_target_the_config_is_flowers():
    cfg = config()
    assert ReconRiskAccountant(cfg).config is cfg
    cfg2 = PrivacyConfig(1e-5, 10, NeighboringRelation.ADD_OR_REMOVE_ONE, SamplingMethod.NO_AMPLIFICATION, 3.0)
    assert ReconRiskAccountant(cfg2, max_risk=0.1, prior_size=10).config.max_epsilon == 3.0


# -- the tutorial's claim: its apps run unchanged in Flower's simulation runtime ---------------------------
def test_the_tutorials_apps_run_in_flowers_simulation_as_written(monkeypatch):
    """docs/tutorials/flower.md §2 says run_simulation(server_app=server, client_app=client, num_supernodes=10)
    runs its two apps unchanged (Ray): its blocks are run here up to its in-process run, then that call, as
    written; training stops where the page says (FedAvg samples the 5 the wrapper expects every round)."""
    import doctest
    import pathlib

    pytest.importorskip("ray", reason="Flower's simulation runtime needs Ray (pip install 'reconrisk[flower]')")
    from flwr.simulation import run_simulation

    monkeypatch.setenv("FLWR_TELEMETRY_ENABLED", "0")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    monkeypatch.setenv("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    page = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "tutorials" / "flower.md").read_text("utf-8")
    examples = doctest.DocTestParser().get_examples(page)
    ns: dict = {}
    for i, ex in enumerate(examples):
        if "run_in_process(server" in ex.source:
            break
        exec(compile(ex.source, f"flower.md example {i}", "single"), ns)  # noqa: S102
    shown = next(e.want.strip() for e in examples if e.source.strip() == "print(strategy.stop_message)")
    run_simulation(server_app=ns["server"], client_app=ns["client"], num_supernodes=10)
    assert ns["strategy"].stop_message == shown
    assert ns["acct"].num_releases == ns["cal"].steps == 20


# -- what Flower's adaptive wrappers actually add, and rounds they release at a smaller noise -------------
@pytest.mark.parametrize("side", ["server", "client"])
def test_the_update_noise_is_never_below_z_times_the_clip_norm_the_updates_were_clipped_to(side, monkeypatch):
    """Flower's adaptive wrappers update the clipping norm from the noisy count *before* they add the update's
    noise, and scale that noise to the new norm (``compute_stdv(z, clipping_norm, m)``), while the updates
    were clipped to the old one: a round whose count is below the target quantile shrinks the norm and adds
    less noise than z·C/m (here z·0.926 in the first round of this seed). The event composed is z against C,
    so the noise added must be at least z·C_used/m in every round."""
    import flwr.serverapp.strategy.dp_adaptive_clipping as dac

    wrapper, mods = {"server": (DifferentialPrivacyServerSideAdaptiveClipping, []),
                     "client": (DifferentialPrivacyClientSideAdaptiveClipping, [adaptiveclipping_mod])}[side]
    stds, used = [], []
    add = dac.add_gaussian_noise_inplace
    monkeypatch.setattr(dac, "add_gaussian_noise_inplace", lambda arrays, std: (stds.append(std), add(arrays, std))[1])

    class Watch(AccountedAdaptiveClipping):
        def aggregate_train(self, server_round, replies):
            used.append(self.dp_strategy.clipping_norm)
            return super().aggregate_train(server_round, replies)

    acct = ReconRiskAccountant(config())
    strategy = Watch(adaptive(5.0, 5.0, N_CLIENTS, wrapper), acct)
    run(strategy, rounds=4, client_app=make_client_app(mods))
    z = strategy.dp_strategy.noise_multiplier
    assert acct.num_releases == len(stds) == len(used) == 4
    assert min(s * N_CLIENTS / c for s, c in zip(stds, used)) >= z * (1 - 1e-12)
    assert any(s * N_CLIENTS / c > z * 1.001 for s, c in zip(stds, used))  # Flower's larger noise is kept


def test_a_round_with_fewer_replies_than_the_noise_is_scaled_to_releases_nothing():
    """Flower's adaptive wrappers aggregate whatever replies came back (a warning when fewer than
    num_sampled_clients) while the noise stays scaled to num_sampled_clients: the average over m′ < m
    clients moves by C/m′ under noise z·C/m, a smaller multiplier than the one composed. Such a round is
    skipped, as Flower's accounted fixed-clipping wrappers skip it: nothing released, nothing composed."""
    class Drop(AccountedAdaptiveClipping):
        def aggregate_train(self, server_round, replies):
            return super().aggregate_train(server_round, list(replies)[1:])

    acct = ReconRiskAccountant(config())
    strategy = Drop(adaptive(5.0, 5.0, N_CLIENTS), acct)
    norm = strategy.dp_strategy.clipping_norm
    result = run(strategy, rounds=2)
    assert acct.num_releases == 0 and strategy.dp_strategy.clipping_norm == norm
    assert not result.train_metrics_clientapp


def test_hostile_sizes_are_refused_in_one_line():
    strategy = AccountedAdaptiveClipping(adaptive(5.0, 5.0, N_CLIENTS), ReconRiskAccountant(config()))
    with pytest.raises(ReconRiskError, match="sample_size must be <= population_size=10; found 11"):
        strategy.event(11)
    with pytest.raises(ReconRiskError, match="refilled must be a bool"):
        joint_noise_multiplier(2.0, 2.0, refilled="no")


def test_a_poisson_config_is_refused_since_fedavg_samples_a_fixed_cohort():
    """FedAvg samples exactly m of the connected clients, never Poisson: under add-or-remove that is the
    refilled cohort (ε 4.34 here: 5 of 10, σ 5, count std 5, 20 rounds), which a 'poisson' config would
    account as q = m/n, shift C (ε 2.57). Flower's own wrappers refuse an accountant not in
    'no-amplification'; so does this one (and keeps 'without-replacement', replace-one's reading)."""
    with pytest.raises(ReconRiskError, match="sampling_method must be one of .*no-amplification.*; found 'poisson'"):
        AccountedAdaptiveClipping(adaptive(5.0, 5.0, 5), ReconRiskAccountant(config("poisson")))
    AccountedAdaptiveClipping(adaptive(5.0, 5.0, 5), ReconRiskAccountant(config("without-replacement")))


def test_a_joint_noise_outside_the_analysed_range_is_refused_before_any_round():
    """σ_e beyond [1e-12, 1e8] cannot be composed; refused when the wrapper is built, not after a round
    has released what the ledger then refuses to hold."""
    big = adaptive(5.0, 5.0, N_CLIENTS)
    big.noise_multiplier, big.clipped_count_stddev = 1e9, 1e9
    with pytest.raises(ReconRiskError, match=r"^the joint noise multiplier .* must be in \[1e-12, 1e\+08\]"):
        AccountedAdaptiveClipping(big, ReconRiskAccountant(config()))
