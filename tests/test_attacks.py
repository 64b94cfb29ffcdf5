"""Attacks: scoring rules, the idealised table of spec_000 §6, and the seed 000 acceptance checks.

The heavier checks (marked ``slow``) still run in CI with small trial counts:
soundness over the ε grid × prior sizes {2, 10, 100}, tightness of Alg. 2 at
ε = 4 with 504 trials, Alg. 3 beating Alg. 2 at q = 0.02, T = 200, and the
shape of the gradient-inversion curve. Compiling a trial program costs 10–20 s
of CPU, running 500 trials of it under 1 s: the tests share SMALL's programs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from reconrisk._src.analysis import calibrate as rr_calibrate
from scipy import integrate, stats

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.flatten_util import ravel_pytree  # noqa: E402

from reconrisk import Release  # noqa: E402
from reconrisk._src import accounting  # noqa: E402
from reconrisk._src.api import rero_bound
from reconrisk._src.attacks.prior_aware import attack_scores, observe_step, prior_aware_attack, top_k_count  # noqa: E402
from reconrisk._src.data import load_digits  # noqa: E402
from reconrisk._src.experiments.audit import AuditSetting, calibrated_settings, run_setting  # noqa: E402
from reconrisk._src.metrics import SuccessRate, clopper_pearson  # noqa: E402
from reconrisk._src.train import dpsgd, models  # noqa: E402


@pytest.fixture(scope="module")
def digits():
    return load_digits()


# The audit's compiled trial functions are cached on (model, step config, T, |D₋|, inversion settings) and jit
# specialises on the vmapped batch shape: compiling one costs ~15 s of CPU, running it ~1 s here. Tests that share
# SMALL (and SMALL_BATCH trials per call) compile it once for the whole file.
SMALL = dict(steps=20, prior_size=10, known_size=200, inversion_steps=150, inversion_restarts=2, seed=0)
SMALL_BATCH = 24


def idealised_success(n: int, mu: float) -> float:
    """∫ φ(z) Φ(z + μ)^{n−1} dz (spec_000 §6)."""
    return integrate.quad(lambda z: stats.norm.pdf(z) * stats.norm.cdf(z + mu) ** (n - 1), -12, 12)[0]


def test_idealised_integral_table():
    for n, mu, want in [(10, 0.9249, 0.3174), (10, 2.0004, 0.6738), (10, 0.2681, 0.1476), (2, 0.9249, 0.7434)]:
        assert abs(idealised_success(n, mu) - want) < 6e-4


@pytest.mark.parametrize("n,eps", [(10, 4.0), (2, 4.0), (10, 10.0)])
def test_alg2_on_orthogonal_gradients_matches_integral(n, eps):
    """Candidate gradients C·e_i (mutually orthogonal, fixed over steps), q = 1, T = 100."""
    T, C, trials = 100, 0.1, 20000
    sigma = rr_calibrate.noise_multiplier_for_epsilon(eps, 1.0, T)
    rng = np.random.default_rng(n)
    target = rng.integers(0, n, trials)
    cand = C * np.eye(n)  # (n, P=n)
    gbar = cand[target][:, None, :] + rng.normal(0, sigma * C, (trials, T, n))  # ḡ_t = clip(∇ℓ(z*)) + noise
    obs = {"ip": np.einsum("ntp,ip->nti", gbar, cand), "ip_raw": np.zeros((trials, T, n)),
           "cand_sq": np.full((trials, T, n), C**2), "gbar_sq": np.zeros((trials, T))}
    scores = attack_scores(obs, sample_rate=1.0, noise_multiplier=sigma, clip_norm=C, xp=np)
    rate = SuccessRate.from_outcomes(scores["alg2"].argmax(-1) == target, confidence=0.99)
    want = idealised_success(n, math.sqrt(T) / sigma)
    low, high = rate.ci
    assert low <= want <= high, (rate.rate, want)
    # strictly below the bound (spec_000 §6), and App. G ranks like Alg. 2 at q = 1
    assert high < rero_bound(sigma, 1.0, T, prior_size=n).upper + 0.01
    np.testing.assert_array_equal(scores["loglik"].argmax(-1), scores["alg2"].argmax(-1))


def test_top_k_rounds_up():
    assert top_k_count(0.02, 1000) == 20
    assert top_k_count(0.07, 100) == 7  # 0.07·100 = 7.000000000000001 in floats
    assert top_k_count(0.015, 100) == 2
    assert top_k_count(1.0, 100) == 100
    assert top_k_count(1e-6, 100) == 1


def test_loglik_has_the_corrected_sign():
    """App. G score = log N(ḡ; g^z, s²I) − log N(ḡ; 0, s²I) per step (q = 1), i.e. the MINUS sign."""
    rng = np.random.default_rng(0)
    P, n, T, sigma, C = 7, 4, 3, 1.3, 0.5
    gz = rng.normal(size=(T, n, P))
    gbar = rng.normal(size=(T, P))
    s = sigma * C
    want = (stats.norm.logpdf(gbar[:, None, :], gz, s).sum(-1) - stats.norm.logpdf(gbar, 0, s).sum(-1)[:, None]).sum(0)
    obs = {"ip": np.einsum("tnp,tp->tn", gz, gbar), "ip_raw": np.zeros((T, n)),
           "cand_sq": (gz**2).sum(-1), "gbar_sq": (gbar**2).sum(-1)}
    got = attack_scores(obs, sample_rate=1.0, noise_multiplier=sigma, clip_norm=C, xp=np)["loglik"]
    np.testing.assert_allclose(got, want, rtol=1e-10)
    # q < 1: mixture likelihood ratio (1 − q) + q·N(g^z)/N(0)
    q = 0.3
    ratio = np.exp(stats.norm.logpdf(gbar[:, None, :], gz, s).sum(-1) - stats.norm.logpdf(gbar, 0, s).sum(-1)[:, None])
    want_q = np.log(1 - q + q * ratio).sum(0)
    got_q = attack_scores(obs, sample_rate=q, noise_multiplier=sigma, clip_norm=C, xp=np)["loglik"]
    np.testing.assert_allclose(got_q, want_q, rtol=1e-10)


def test_alg3_keeps_top_steps():
    ip = np.array([[5.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])  # (T=4, n=2)
    obs = {"ip": ip, "ip_raw": ip, "cand_sq": np.ones_like(ip), "gbar_sq": np.ones(4)}
    sc = attack_scores(obs, sample_rate=0.25, noise_multiplier=1.0, clip_norm=1.0, xp=np)
    assert sc["alg2"].argmax() == 0 and sc["alg3"].argmax() == 0
    sc = attack_scores(obs, sample_rate=0.75, noise_multiplier=1.0, clip_norm=1.0, xp=np)
    np.testing.assert_allclose(sc["alg3"], [5.0, 3.0])


@pytest.mark.parametrize("q", [1.0, 0.05])
def test_transcript_attack_equals_fused_observation(digits, q):
    """prior_aware_attack on a saved transcript sees exactly what the fused trial scan sees."""
    model = models.get_model("mlp", digits.image_shape)
    rel = Release(1.5, q, 30, clip_norm=0.1)
    kx, ky = digits.x[:300], digits.y[:300]
    px, py = digits.x[1000:1008], digits.y[1000:1008]
    x = np.concatenate([kx, px[3:4]])
    y = np.concatenate([ky, py[3:4]])
    res = dpsgd.train(model, rel, x, y, seed=11, learning_rate=2.0)
    got = prior_aware_attack(model, res.transcript, kx, ky, px, py)

    cfg = dpsgd.make_step_config(rel, x.shape[0], 2.0, "hard")
    key = jax.random.PRNGKey(11)
    k_init, k_run = jax.random.split(key)
    _, unravel = ravel_pytree(model.init(k_init))

    @jax.jit
    def fused():
        def body(p, t):
            p2, theta, g, mask, _ = dpsgd.dpsgd_step(model, cfg, p, k_run, t, jnp.asarray(x), jnp.asarray(y), rel.noise_std)
            return p2, observe_step(model, cfg, theta, g, mask[:-1], jnp.asarray(kx), jnp.asarray(ky),
                                    jnp.asarray(px), jnp.asarray(py), unravel)

        return jax.lax.scan(body, model.init(k_init), jnp.arange(30))[1]

    want = fused()
    for k in ("ip", "ip_raw", "cand_sq", "gbar_sq"):
        np.testing.assert_allclose(got.observations[k], np.asarray(want[k]), rtol=2e-3, atol=2e-6)
    # ḡ_t carries only noise and (when sampled) the target: E‖ḡ‖² ≈ P σ²C²
    assert abs(np.mean(got.observations["gbar_sq"]) / (model.num_params * (1.5 * 0.1) ** 2) - 1) < 0.1


def test_no_leak_at_huge_noise(digits):
    """σ → ∞: every attack is a blind guess, success ≈ κ (checks nothing else leaks the target)."""
    s = AuditSetting.of(1e5, trials=300, attacks=("alg2", "alg3", "loglik", "no_deduction"),
                        **{**SMALL, "seed": 1})
    r = run_setting(s, digits, batch_trials=SMALL_BATCH)
    for name, rate in r.rates.items():
        lo, hi = clopper_pearson(rate.successes, rate.trials, 0.999)
        assert lo <= 0.1 <= hi, (name, rate.rate)


# ---------------------------------------------------------------------------------------
# acceptance checks (seed 000) with CI-sized trial counts
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("prior_size", [2, 10, 100])
def test_soundness_over_epsilon_grid(digits, prior_size):
    """No attack's Clopper–Pearson lower end exceeds the certified bound (default ε grid)."""
    # T = 20, |D₋| = 200 (SMALL): at prior_size 10 the compiled trials of the other tests are reused; 72
    # trials = three calls of SMALL_BATCH (was T = 100, |D₋| = 300, 60 trials; at q = 1 the success law
    # depends on √T/σ only)
    common = {**SMALL, "prior_size": prior_size, "seed": 2}
    steps = common.pop("steps")
    settings = calibrated_settings([1.0, 4.0, 10.0, 32.0], steps=steps, trials=72,
                                   attacks=("alg2", "loglik", "no_deduction"), **common)
    for s in settings:
        r = run_setting(s, digits, batch_trials=SMALL_BATCH)
        for name, rate in r.rates.items():
            assert rate.ci[0] <= r.certificate.rero.upper, (s.epsilon, prior_size, name, rate.to_dict(), r.certificate.rero.upper)


@pytest.mark.slow
def test_tightness_alg2_eps4(digits):
    """Seed 000: with every gradient clipped, Alg. 2 at ε=4, n=10, q=1 is within 0.08 of the bound."""
    # Sized to reuse SMALL's compiled trials (T = 20, |D₋| = 200; was T = 100, |D₋| = 999, its own ~15 s compile).
    # At q = 1 with every gradient clipped the success law depends on μ = √T/σ only, and σ is calibrated for ε = 4
    # at T = 20, so μ = √20/4.835 = 0.925 as at T = 100: the same bound (0.361) and idealised success (0.317,
    # spec_000 §6). 504 trials (as before; 21 calls of SMALL_BATCH, ~0.6 s once compiled): the rate's sd is
    # √(.32·.68/504) = 0.021. The test fails below 0.361 − 0.08 = 0.281: the idealised attack sits 1.7 sd above that
    # (measured 0.329: 2.3 sd), an attack 0.08 weaker 2.1 sd below it. no_deduction: measured 0.143.
    common = dict(SMALL)
    steps = common.pop("steps")
    (s,) = calibrated_settings([4.0], steps=steps, trials=504, attacks=("alg2", "no_deduction"), **common)
    r = run_setting(s, digits, batch_trials=SMALL_BATCH)
    rate = r.rates["alg2"]
    assert r.clipped_fraction == 1.0
    assert rate.ci[0] <= r.certificate.rero.upper
    assert r.certificate.rero.upper - rate.rate < 0.08, (rate.to_dict(), r.certificate.rero.upper)
    # App. E: without deducting the 200 known gradients the attack is much weaker
    assert r.rates["no_deduction"].rate < rate.rate - 0.05


@pytest.mark.slow
def test_alg3_beats_alg2_minibatch(digits):
    """Seed 000 Fig. 4: at q = 0.02 (|D₋| = 199) the top-⌈qT⌉ attack beats Alg. 2."""
    # T = 200 (was 1000, |D₋| = 499, 60 trials): the target is in ~4 of the 200 batches and Alg. 3 keeps the top 4
    # steps, Alg. 2 sums the noise of all 200. 48 trials = two calls of 24: measured 0.77 vs 0.19 (37 vs 9 of 48);
    # the paired difference has sd ≤ √(0.6/48) = 0.11, so the 0.1 margin is 4 sd inside the measured 0.58.
    # σ = 0.3558 is (32, 1e-5)-DP at q = 0.02, T = 200 (PLD; calibrate() takes ~40 s of CPU for it, and ε is only
    # the label here: the bound asserted below is computed from σ)
    s = AuditSetting.of(0.3558, 0.02, 200, 0.1, epsilon=32.0, trials=48, known_size=199, attacks=("alg3", "alg2"),
                        seed=0)
    r = run_setting(s, digits, batch_trials=24)
    a3, a2 = r.rates["alg3"], r.rates["alg2"]
    assert a3.rate > a2.rate + 0.1, (a3.to_dict(), a2.to_dict())
    assert a3.ci[0] <= r.certificate.rero.upper


@pytest.mark.slow
def test_gradient_inversion_shape(digits):
    """Seed 000 Fig. 1/App. D shape: MSE falls as ε grows; far below the prior-aware attack at small ε."""
    # 16 trials: one vmapped inversion call per σ (gradient inversion runs ≤ 16 trials per call; 24 ran two).
    # Measured: MSE 0.23 vs 0.0005 (the assertion needs a factor 2), inversion 2/16 vs 16/16, Alg. 2 14/16 at σ = 2.
    common = dict(trials=16, attacks=("gradient_inversion", "alg2"), **SMALL)
    low, high = (run_setting(AuditSetting.of(sigma, **common), digits, batch_trials=SMALL_BATCH)
                 for sigma in (2.0, 0.02))
    assert high.mse["mean"] < 0.5 * low.mse["mean"], (low.mse, high.mse)
    assert high.rates["gradient_inversion"].rate > low.rates["gradient_inversion"].rate
    assert low.rates["gradient_inversion"].rate < low.rates["alg2"].rate
