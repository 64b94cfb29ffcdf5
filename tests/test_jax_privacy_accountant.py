"""reconrisk's jax-privacy accountant (reconrisk.integrations.jax_privacy), driven through jax-privacy's own
DpParams and calibrators, held against jax-privacy's own DpsgdTrainingAccountant (PLD and RDP configs) and
against dp_accounting composed independently.

Settings are kept small (a few hundred steps, coarse where jax-privacy's own PLD is slow) so the file runs in
about a minute on 2 cores.
"""

from __future__ import annotations

import math

import pytest

jp = pytest.importorskip("jax_privacy", reason="the jax-privacy integration needs jax-privacy "
                                               "(pip install reconrisk[jax-privacy])")
dpa = pytest.importorskip("dp_accounting", reason="the independent reference composes with dp_accounting")

from jax_privacy.accounting import (  # noqa: E402
    DpParams, DpsgdTrainingAccountant, PldAccountantConfig, RdpAccountantConfig, SamplingMethod)

from reconrisk._src.analysis.privacy import PrivacyAnalysis  # noqa: E402
from reconrisk.errors import ReconRiskError  # noqa: E402
from reconrisk.integrations import jax_privacy as rj  # noqa: E402

DELTA = 1e-5
POISSON, FIXED = SamplingMethod.POISSON, SamplingMethod.FIXED_BATCH_SIZE
#: reconrisk's upper end charges a certified floating-point round-off allowance that dp_accounting does not
#: (relative ~1e-7 on the same 1e-4 grid); "never looser" is held to it.
ROUNDOFF = 1e-6


def _params(**kw) -> DpParams:
    return DpParams(delta=kw.pop("delta", DELTA), **kw)


def _jax_privacy(config, T, p) -> float:
    return DpsgdTrainingAccountant(config).compute_epsilon(T, p)


def test_public_path_is_the_module_and_import_reconrisk_leaves_jax_privacy_alone():
    import subprocess
    import sys

    import reconrisk._src.integrations.jax_privacy as impl

    assert rj is impl
    code = "import sys, reconrisk, reconrisk.integrations; reconrisk.Release; print('jax_privacy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("T, kw", [
    (1000, dict(noise_multipliers=1.0, num_samples=60000, batch_size=256)),
    (400, dict(noise_multipliers=0.8, num_samples=5000, batch_size=50)),
    (2000, dict(noise_multipliers=2.0, num_samples=50000, batch_size=500, cycle_length=10)),
])
def test_poisson_never_looser_than_jax_privacy_pld_and_inside_or_below_it(T, kw):
    p = _params(**kw)
    acc = rj.ReconRiskAccountant()
    ours = acc.compute_epsilon(T, p)
    theirs = _jax_privacy(PldAccountantConfig(), T, p)
    rdp = _jax_privacy(RdpAccountantConfig(), T, p)
    bracket = acc.analysis(T, p).epsilon(DELTA, two_sided=True)
    assert ours == bracket.upper
    assert ours <= theirs * (1 + ROUNDOFF)  # never looser than jax-privacy's PLD
    assert bracket.lower <= theirs  # jax-privacy's PLD lies inside or above the certified bracket
    assert ours < rdp
    assert isinstance(acc.analysis(T, p), PrivacyAnalysis)


def test_poisson_equals_dp_accounting_composed_independently():
    """The same run composed by dp_accounting's PLDAccountant directly (float parameters, the cycle reduction
    written out): jax-privacy's reading of cycle_length and the schedule, reproduced independently."""
    p = _params(noise_multipliers=[(0, 1.2), (150, 0.9)], num_samples=20000, batch_size=100,
                batch_size_scale_schedule={100: 2})
    acc = dpa.pld.PLDAccountant(value_discretization_interval=1e-4)
    for t, s, b in [(100, 1.2, 100), (50, 1.2, 200), (150, 0.9, 200)]:
        acc.compose(dpa.PoissonSampledDpEvent(b / 20000, dpa.GaussianDpEvent(s)), t)
    ref = acc.get_epsilon(DELTA)
    ours = rj.ReconRiskAccountant().compute_epsilon(300, p)
    assert ours == pytest.approx(ref, rel=1e-5)
    assert ours <= ref * (1 + ROUNDOFF)
    assert rj.schedule(300, p) == [(100, 1.2, 100), (50, 1.2, 200), (150, 0.9, 200)]

    q = _params(noise_multipliers=1.5, num_samples=10007, batch_size=40, cycle_length=5)  # 10007 // 5 = 2001
    acc = dpa.pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dpa.PoissonSampledDpEvent(40 / 2001, dpa.GaussianDpEvent(1.5)), math.ceil(333 / 5))
    assert rj.ReconRiskAccountant().compute_epsilon(333, q) == pytest.approx(acc.get_epsilon(DELTA), rel=1e-5)


def test_fixed_batch_is_the_replace_one_release_and_sound():
    """Fixed-size batches: replace-one, the symmetrised per-step curve composed (an adversary picks each step's
    orientation). jax-privacy composes one orientation of the Poisson pair at σ/2, which is below: the gap is
    that choice, and ours is at least the better orientation's value (never below what jax-privacy reports)."""
    from reconrisk._src.release import Release

    T, p = 200, _params(noise_multipliers=1.0, num_samples=10000, batch_size=100, sampling_method=FIXED)
    acc = rj.ReconRiskAccountant()
    ours = acc.compute_epsilon(T, p)
    assert acc.analysis(T, p).release.as_run == Release.fixed_batch(1.0, 100, 10000, T)
    theirs = _jax_privacy(PldAccountantConfig(), T, p)
    assert theirs * (1 - ROUNDOFF) <= ours < _jax_privacy(RdpAccountantConfig(), T, p)


def test_refusals_name_the_field():
    acc = rj.ReconRiskAccountant()
    cases = [
        (dict(noise_multipliers=None), "noise_multipliers"),
        (dict(noise_multipliers=-1.0), "noise_multipliers"),
        (dict(noise_multipliers=[(5, 1.0)]), "noise_multipliers"),
        (dict(batch_size=20000), "batch_size"),
        (dict(cycle_length=4, noise_multipliers=[(0, 1.0), (10, 2.0)]), "noise_multipliers"),
        (dict(cycle_length=4, batch_size_scale_schedule={10: 2}), "batch_size_scale_schedule"),
        (dict(cycle_length=4, batch_size=3000), "batch_size"),
        (dict(truncated_batch_size=50, sampling_method=FIXED), "truncated_batch_size"),
        (dict(examples_per_user=2, cycle_length=3), "cycle_length"),
        (dict(examples_per_user=0), "examples_per_user"),
        (dict(delta=0.0), "delta"),
    ]
    for kw, field in cases:
        base = dict(noise_multipliers=1.0, num_samples=10000, batch_size=100)
        base.update(kw)
        with pytest.raises(ReconRiskError, match=field):
            acc.compute_epsilon(10, _params(**base))
    with pytest.raises(ReconRiskError, match="num_updates"):
        acc.compute_epsilon(-1, _params(noise_multipliers=1.0, num_samples=100, batch_size=10))
    with pytest.raises(ReconRiskError, match="DpParams"):
        acc.compute_epsilon(1, {"noise_multipliers": 1.0})


def test_conventions_of_every_dp_training_accountant():
    acc = rj.ReconRiskAccountant(PldAccountantConfig())
    p = _params(noise_multipliers=1.0, num_samples=1000, batch_size=10)
    assert acc.compute_epsilon(0, p) == 0.0
    assert acc.compute_epsilon(5, DpParams(noise_multipliers=1.0, num_samples=1000, batch_size=10, delta=DELTA,
                                           is_finite_guarantee=False)) == math.inf
    assert acc.compute_epsilon(5, _params(noise_multipliers=0.0, num_samples=1000, batch_size=10)) == math.inf
    assert acc.can_calibrate_steps() and acc.can_calibrate_batch_size() and acc.can_calibrate_noise_multipliers()
    assert isinstance(acc, jp.accounting.DpTrainingAccountant)


def test_truncated_poisson_and_its_bandmf_cycles_match_jax_privacy():
    """truncated_batch_size: the truncated-Poisson Gaussian step over num_samples // cycle_length examples; jax-privacy's
    PLD value (dp_accounting's own construction of the same dominating pair) lies in or above the bracket."""
    acc = rj.ReconRiskAccountant()
    for T, kw in [(300, dict(num_samples=6000, batch_size=20, truncated_batch_size=24, cycle_length=3))]:
        p = _params(noise_multipliers=1.0, **kw)
        a = acc.analysis(T, p)
        (step,) = a.steps
        assert step.count == math.ceil(T / (kw.get("cycle_length") or 1))
        assert step.sampler.dataset_size == kw["num_samples"] // (kw.get("cycle_length") or 1)
        ours, bracket = acc.compute_epsilon(T, p), a.epsilon(DELTA, two_sided=True)
        theirs = _jax_privacy(PldAccountantConfig(), T, p)
        assert ours >= bracket.upper and ours == pytest.approx(bracket.upper, rel=1e-6)
        assert bracket.lower <= theirs and ours <= theirs * (1 + ROUNDOFF)
        r = a.rero(prior_size=10)
        assert 0.1 < r.lower <= r.upper < 1.0


def test_user_level_poisson_matches_jax_privacy_user_level_accountant():
    from jax_privacy.accounting import DpsgdTrainingUserLevelAccountant

    p = _params(noise_multipliers=4.0, num_samples=1000, batch_size=20, examples_per_user=2)
    acc = rj.ReconRiskAccountant()
    ours = acc.compute_epsilon(20, p)
    theirs = DpsgdTrainingUserLevelAccountant(PldAccountantConfig()).compute_epsilon(20, p)
    assert ours == pytest.approx(theirs, rel=1e-5) and ours <= theirs * (1 + ROUNDOFF)
    (step,) = acc.analysis(20, p).steps
    assert step.count == 20 and step.mechanism.sensitivities == (0.0, 1.0, 2.0)
    assert step.mechanism.sampling_probs == pytest.approx((0.98**2, 2 * 0.02 * 0.98, 0.02**2), rel=1e-12)
    # one example per user is the example-level run
    one = _params(noise_multipliers=4.0, num_samples=1000, batch_size=20, examples_per_user=1)
    assert acc.compute_epsilon(20, one) == acc.compute_epsilon(20, _params(noise_multipliers=4.0, num_samples=1000,
                                                                           batch_size=20))
    with pytest.raises(ReconRiskError, match="sampling_method"):
        acc.compute_epsilon(20, _params(noise_multipliers=4.0, num_samples=1000, batch_size=20, examples_per_user=2,
                                        sampling_method=FIXED))


def test_jax_privacy_calibrators_drive_it_unchanged():
    """jax-privacy's three calibrators with our accountant: each answer meets the target under our ε and the next
    step past it (tolerance of the calibrator) does not; they agree with jax-privacy's own PLD accountant."""
    from jax_privacy.accounting import calibrate as cal

    acc = rj.ReconRiskAccountant()
    common = dict(target_epsilon=2.0, accountant=acc, num_samples=20000, target_delta=DELTA)
    sigma = cal.calibrate_noise_multiplier(batch_sizes=100, num_updates=500, **common)
    eps = lambda T, **kw: acc.compute_epsilon(T, _params(num_samples=20000, **kw))  # noqa: E731
    assert eps(500, noise_multipliers=sigma, batch_size=100) <= 2.0 < eps(500, noise_multipliers=sigma - 0.01,
                                                                         batch_size=100)
    T = cal.calibrate_num_updates(noise_multipliers=1.0, batch_sizes=100, **common)
    assert eps(T, noise_multipliers=1.0, batch_size=100) <= 2.0 < eps(T + 1, noise_multipliers=1.0, batch_size=100)
    B = cal.calibrate_batch_size(noise_multipliers=1.0, num_updates=500, **common)
    assert eps(500, noise_multipliers=1.0, batch_size=B) <= 2.0 < eps(500, noise_multipliers=1.0, batch_size=B + 1)
    # with cycles jax-privacy rounds the steps up to whole cycles, which our ε does not charge
    Tc = cal.calibrate_num_updates(noise_multipliers=1.0, batch_sizes=100, cycle_length=4, **common)
    assert Tc % 4 == 0 and eps(Tc, noise_multipliers=1.0, batch_size=100, cycle_length=4) <= 2.0


def test_risk_target_calibration_through_the_one_calibrator():
    from reconrisk._src.analysis.calibrate import calibrate

    kw = dict(target_rero=0.2, kappa=0.1, num_samples=20000)
    acc = rj.ReconRiskAccountant()

    def rero(T, **p):
        return acc.analysis(T, _params(num_samples=20000, **p)).rero(0.1).upper

    sigma = rj.calibrate_noise_multiplier(batch_sizes=100, num_updates=500, **kw)
    assert sigma == calibrate("reconstruction", 0.2, "noise_multiplier", sample_rate=100 / 20000, steps=500,
                              kappa=0.1).noise_multiplier
    assert rero(500, noise_multipliers=sigma, batch_size=100) <= 0.2 < rero(500, noise_multipliers=sigma * 0.99,
                                                                          batch_size=100)
    sigma_f = rj.calibrate_noise_multiplier(batch_sizes=100, num_updates=500, sampling_method=FIXED, **kw)
    assert rero(500, noise_multipliers=sigma_f, batch_size=100, sampling_method=FIXED) <= 0.2
    T = rj.calibrate_num_updates(noise_multipliers=1.0, batch_sizes=100, cycle_length=4, **kw)
    assert T % 4 == 0
    assert rero(T, noise_multipliers=1.0, batch_size=100, cycle_length=4) <= 0.2 < rero(
        T + 1, noise_multipliers=1.0, batch_size=100, cycle_length=4)
    B = rj.calibrate_batch_size(noise_multipliers=1.0, num_updates=500, **kw)
    assert rero(500, noise_multipliers=1.0, batch_size=B) <= 0.2 < rero(500, noise_multipliers=1.0, batch_size=B + 1)
    for bad, field in [(dict(batch_sizes=[(0, 100), (10, 200)]), "batch_sizes"), (dict(truncated_batch_size=50),
                                                                                   "truncated_batch_size"),
                       (dict(examples_per_user=3), "examples_per_user"), (dict(accountant=object()), "accountant")]:
        with pytest.raises(ReconRiskError, match=field):
            rj.calibrate_noise_multiplier(**{"batch_sizes": 100, "num_updates": 500, **kw, **bad})


def test_events_of_jax_privacy_experimental_accounting():
    """reconrisk.analyse reads every event jax_privacy.experimental.accounting builds, and each equals the
    accountant's analysis of the same run (with replacement: the revealed mixture, tested below)."""
    import reconrisk
    from jax_privacy.experimental import accounting as ex

    acc = rj.ReconRiskAccountant()
    a = reconrisk.analyse(ex.amplified_bandmf_event(1.0, 2000, num_bands=10, sampling_prob=0.01))
    b = acc.analysis(2000, _params(noise_multipliers=1.0, num_samples=10000, batch_size=10, cycle_length=10))
    assert a is b  # one release, one shared analysis
    f = reconrisk.analyse(ex.fixed_dpsgd_event(0.5, 100, dataset_size=1000, batch_size=10))
    assert f.release.as_run == acc.analysis(100, _params(noise_multipliers=1.0, num_samples=1000, batch_size=10,
                                                         sampling_method=FIXED)).release.as_run
    t = reconrisk.analyse(ex.truncated_amplified_bandmf_event(1.0, 60, num_bands=3, sampling_prob=0.01,
                                                              largest_group_size=2000, truncated_batch_size=24))
    u = acc.analysis(60, _params(noise_multipliers=1.0, num_samples=6000, batch_size=20, truncated_batch_size=24,
                                 cycle_length=3))
    assert t.steps == u.steps
    assert t.epsilon(DELTA).upper == u.epsilon(DELTA).upper
    w = reconrisk.analyse(ex.fixed_dpsgd_event(2.0, 3, dataset_size=1000, batch_size=40, replace=True))
    (step,) = w.steps
    assert (step.count, step.mechanism.sample_size, step.mechanism.dataset_size) == (3, 40, 1000)
    assert w.relation == "replace_one"


@pytest.mark.parametrize("T", [1, 2])
def test_sampling_with_replacement_is_the_revealed_mixture_of_gaussians(T):
    """SampledWithReplacementDpEvent of a Gaussian (fixed_dpsgd_event(replace=True)): the target drawn M ~
    Bin(b, 1/n) times, M revealed, so δ(ε) = Σ π_m δ_G(ε; μ = m/s) per step; T = 2 composes to the mixture over
    (m₁, m₂) of Gaussians with μ = √(m₁² + m₂²)/s. The reference is that sum with the Gaussian privacy profile
    (Balle & Wang 2018), computed here with scipy; the two-sided bracket must contain it."""
    import numpy as np
    import reconrisk
    from scipy import special, stats

    def gauss_delta(eps, mu):
        return special.ndtr(-eps / mu + mu / 2) - math.exp(eps) * special.ndtr(-eps / mu - mu / 2)

    s, n, b = 2.0, 1000, 40
    a = reconrisk.analyse(dpa.SelfComposedDpEvent(dpa.SampledWithReplacementDpEvent(n, b, dpa.GaussianDpEvent(s)), T))
    m = np.arange(b + 1)
    pi = stats.binom.pmf(m, b, 1 / n)
    for eps in (0.5, 1.5):
        if T == 1:
            ref = sum(p * gauss_delta(eps, k / s) for k, p in zip(m[1:], pi[1:]))
        else:
            ref = sum(p1 * p2 * gauss_delta(eps, math.hypot(k1, k2) / s) for k1, p1 in zip(m, pi)
                      for k2, p2 in zip(m, pi) if k1 or k2)
        d = a.delta(eps, two_sided=True)
        assert d.lower <= ref <= d.upper and d.upper - d.lower < 1e-3 * ref
    # its RDP curve: a revealed mixture's Rényi divergence, at α = 2: log Σ π_m e^{m²/s²} per step
    (step,) = a.steps
    assert step.rdp([2.0])[0] == pytest.approx(T * math.log(sum(p * math.exp(k * k / s**2) for k, p in zip(m, pi))),
                                               rel=1e-10)


def test_monte_carlo_rero_is_an_estimate_that_covers_the_exact_value():
    """Hoeffding's one-sided interval: the estimator on draws of a Gaussian pair's privacy loss (μ = 1.2, exact
    ReRo Φ(Φ⁻¹(κ) + μ)) and on jax-privacy's balls-in-bins draws with one bin (no amplification: four Gaussian
    steps at σ = 2, μ = 1); labelled an estimate, never certified."""
    import numpy as np
    from jax_privacy import batch_selection
    from scipy import stats

    mu, kappa = 1.2, 0.1
    exact = stats.norm.cdf(stats.norm.ppf(kappa) + mu)
    x = np.random.default_rng(7).normal(mu, 1.0, 50_000)
    b = rj.rero_estimate(mu * x - mu * mu / 2, kappa=kappa)
    assert b.lower is None and b.confidence == 0.95 and b.method == "monte_carlo_estimate"
    assert b.details["kind"].startswith("estimate")
    assert b.estimate == pytest.approx(exact, abs=0.01) and exact <= b.upper <= exact + 0.03
    assert b.upper == pytest.approx(b.estimate + math.sqrt(math.log(400 / 0.05) / (2 * 50_000)), rel=1e-12)
    m = rj.monte_carlo_rero(batch_selection.BallsInBinsSampling(iterations=4, cycle_length=1), 2.0, [1.0],
                            num_samples=20_000, seed=3, kappa=kappa)
    exact = stats.norm.cdf(stats.norm.ppf(kappa) + 1.0)
    assert m.estimate == pytest.approx(exact, abs=0.015) and exact <= m.upper
    assert m.details["kind"].startswith("estimate") and m.details["seed"] == 3
    with pytest.raises(ReconRiskError, match="privacy_loss"):
        rj.rero_estimate([0.1], kappa=kappa)


def test_jax_and_numpy_scalars_in_every_field_read_as_their_values():
    """jax-privacy hands jax/numpy scalars (float32 among them) to accountants and calibrators: every DpParams
    field, num_updates, and a schedule given as an array of (step, σ) rows read as the plain Python values."""
    import jax.numpy as jnp
    import numpy as np

    acc = rj.ReconRiskAccountant()
    plain = dict(noise_multipliers=1.0, num_samples=1000, batch_size=10, delta=1e-5, cycle_length=3)
    odd = dict(noise_multipliers=jnp.float32(1.0), num_samples=jnp.int32(1000), batch_size=jnp.int32(10),
               delta=jnp.float32(1e-5), cycle_length=jnp.int32(3))
    assert acc.compute_epsilon(jnp.int32(30), DpParams(**odd)) == pytest.approx(
        acc.compute_epsilon(30, DpParams(**{**plain, "delta": float(jnp.float32(1e-5))})), rel=1e-12)
    for field, value in [("truncated_batch_size", 15), ("examples_per_user", 2)]:
        kw = dict(noise_multipliers=2.0, num_samples=1000, batch_size=10, delta=1e-5)
        a = acc.compute_epsilon(3, DpParams(**kw, **{field: value}))
        assert acc.compute_epsilon(3, DpParams(**kw, **{field: jnp.int32(value)})) == a
    sched = [(0, 2.0), (50, 1.0)]
    kw = dict(num_samples=1000, batch_size=10, delta=1e-5)
    assert acc.compute_epsilon(80, DpParams(noise_multipliers=np.array(sched), **kw)) == \
        acc.compute_epsilon(80, DpParams(noise_multipliers=sched, **kw))
    sigma = rj.calibrate_noise_multiplier(target_rero=0.05, kappa=1e-3, batch_sizes=jnp.int32(64),
                                          num_updates=jnp.int32(50), num_samples=jnp.int32(10000))
    assert sigma == rj.calibrate_noise_multiplier(target_rero=0.05, kappa=1e-3, batch_sizes=64, num_updates=50,
                                                  num_samples=10000)


def test_monte_carlo_rero_reads_jax_scalars_and_refuses_a_missing_baseline_before_drawing(monkeypatch):
    import jax.numpy as jnp
    import numpy as np
    from jax_privacy import batch_selection

    from reconrisk._src.integrations import jax_privacy_estimate as est

    s = batch_selection.BallsInBinsSampling(iterations=4, cycle_length=1)
    kw = dict(num_samples=200, seed=3, kappa=0.1)
    a = rj.monte_carlo_rero(s, 2.0, [1.0], **kw)
    b = rj.monte_carlo_rero(s, jnp.float32(2.0), np.array([1.0]), **{**kw, "num_samples": np.int64(200)})
    assert (a.estimate, a.upper) == (b.estimate, b.upper)

    def never(*args, **kwargs):
        raise AssertionError("drew privacy losses before checking the prior")
    monkeypatch.setattr(est.sample_generation, "get_privacy_loss_sample", never)
    with pytest.raises(ReconRiskError, match="kappa"):
        rj.monte_carlo_rero(s, 2.0, [1.0], num_samples=200, seed=3)
    with pytest.raises(ReconRiskError, match="confidence"):
        rj.monte_carlo_rero(s, 2.0, [1.0], num_samples=200, seed=3, kappa=0.1, confidence=1.5)
