"""FIL accounting for DP-SGD (seed 001 Alg. 1): estimators, closed forms, the trainer's accounting, seeds."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.flatten_util import ravel_pytree  # noqa: E402

from _reference import reference_jit  # noqa: E402
from reconrisk import Release  # noqa: E402
from reconrisk._src.data import load_digits  # noqa: E402
from reconrisk.errors import ReconRiskError  # noqa: E402
from reconrisk._src.train import dpsgd, models  # noqa: E402
from reconrisk._src.train import fil as F  # noqa: E402


@pytest.fixture(scope="module")
def digits():
    return load_digits()


@pytest.fixture(scope="module")
def small(digits):
    model = models.get_model("mlp:6", digits.image_shape)
    params = model.init(jax.random.PRNGKey(2))
    return model, params, jnp.asarray(digits.x[:40]), jnp.asarray(digits.y[:40])


# ---------------------------------------------------------------- closed forms
@pytest.mark.parametrize("method", F.FIL_METHODS)
def test_identity_mechanism_dfil_is_one_over_s2(method):
    s = 0.2
    z = jnp.linspace(0.0, 1.0, 7)
    got = F.gaussian_mechanism_fil(lambda u: u, z, s, method, key=jax.random.PRNGKey(1), num_coords=5)
    assert got == pytest.approx(1 / s**2, rel=1e-5)


def test_linear_mechanism_fisher_information():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((9, 6)).astype(np.float32)
    s = 0.5
    z = jnp.asarray(rng.uniform(size=6), jnp.float32)
    f = lambda u: jnp.asarray(A) @ u  # noqa: E731
    # I = AᵀA/s²: dFIL = ||A||_F²/(d s²), spectral = ||A||₂²/s²
    assert F.gaussian_mechanism_fil(f, z, s, "trace_exact") == pytest.approx(np.sum(A**2) / (6 * s**2), rel=1e-5)
    assert F.gaussian_mechanism_fil(f, z, s, "spectral", key=jax.random.PRNGKey(0), power_iters=60) == pytest.approx(
        np.linalg.norm(A, 2) ** 2 / s**2, rel=1e-4)
    J = np.asarray(jax.jacfwd(f)(z))
    np.testing.assert_allclose(J.T @ J / s**2, A.T @ A / s**2, rtol=1e-5)


def test_sampled_trace_is_unbiased_on_a_small_model(small):
    model, params, x, y = small
    xi, yi = x[3], y[3]
    g = F.clipped_grad_fn(model, params, 1.0, "gelu")
    f = lambda z: g(z, yi)  # noqa: E731
    exact = float(reference_jit(lambda z: F.jacobian_sq_norm(f, z, "trace_exact"))(xi))  # the reference
    keys = jax.random.split(jax.random.PRNGKey(7), 400)
    est = np.asarray(jax.jit(jax.vmap(lambda k: F.jacobian_sq_norm(f, xi, "trace_sampled", key=k, num_coords=4)))(keys))
    se = est.std(ddof=1) / np.sqrt(est.size)
    assert se > 0 and abs(est.mean() - exact) < 3 * se
    assert se < 0.2 * exact  # the test has power: a 20%-biased estimator would fail


def test_clipped_grad_fn_is_the_trainers_clipped_gradient(small):
    model, params, x, y = small

    @jax.jit  # one program for both modes and rows (run eagerly, each op compiled on its own: ~100 compiles)
    def pairs(clip):
        out = {}
        for mode in ("gelu", "hard"):
            g = F.clipped_grad_fn(model, params, clip, mode)
            for i in (0, 5):
                ref, _ = dpsgd.naive_clipped_sum(model, params, x[i:i + 1], y[i:i + 1], clip, mode=mode)
                out[mode, i] = (g(x[i], y[i]), ravel_pytree(ref)[0])
        return out

    # C = 0.3: every gradient (norms 3.6 and 4.4) far above C, where both clips give ≈ C·∇ℓ/‖∇ℓ‖; C = 8: below C,
    # where the GELU clip scales by ~1.2 and the hard clip not at all, so a mode mix-up shows
    for clip in (0.3, 8.0):
        out = pairs(clip)
        for got, ref in out.values():
            np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=2e-5, atol=1e-7)
    gelu, hard = np.asarray(out["gelu", 0][0]), np.asarray(out["hard", 0][0])
    assert np.linalg.norm(gelu) > 1.1 * np.linalg.norm(hard)  # ratio 1.19 here


def test_per_example_fil_methods_and_noise_scale(small):
    model, params, x, y = small
    x, y = x[:3], y[:3]

    @jax.jit
    def fil(noise_std, key):
        kw = dict(clip_norm=2.0, clip_mode="gelu", noise_std=noise_std)
        return (F.per_example_fil(model, params, x, y, method="trace_exact", **kw),
                F.per_example_fil(model, params, x, y, method="spectral", key=key, **kw))

    exact, spec = (np.asarray(a) for a in fil(1.5, jax.random.PRNGKey(0)))
    g = F.clipped_grad_fn(model, params, 2.0, "gelu")
    jac = reference_jit(jax.vmap(jax.jacfwd(g), in_axes=(0, 0)))  # the reference Jacobians
    for i, J in enumerate(np.asarray(jac(x, y))):
        assert exact[i] == pytest.approx(np.sum(J**2) / (64 * 1.5**2), rel=1e-4)
        top = np.linalg.norm(J, 2) ** 2 / 1.5**2
        assert spec[i] <= top * (1 + 1e-3) and spec[i] >= 0.95 * top  # power iteration, from below
        assert spec[i] >= exact[i]  # ||I||₂ ≥ Tr(I)/d
    # s = σC: doubling the noise std divides the FIL by 4
    np.testing.assert_allclose(np.asarray(fil(3.0, jax.random.PRNGKey(0))[0]), exact / 4, rtol=1e-5)


# ---------------------------------------------------------------- Algorithm 1 in the trainer
# One accounted configuration serves four tests (one compiled FIL trainer, one compiled plain trainer): the
# step-by-step replay, the seeds/κ/summary test's six accountings (they differ only in traced values: seed, κ,
# the FIL noise scale), the q < 1 case of the plain-trainer comparison and the momentum recursion (on the plain
# trainer's transcript). T = 8 in chunks of 4: two calls of one chunk program (a shorter last chunk would
# compile a second one). C = 0.5 ≠ 1, so that the paper-literal noise scale σ differs from σC. The exact trace
# (mlp:5: the first-layer reduction); the sampled Eq. 5 in the trainer is covered by the q = 1 case below
# (ghost route), test_cnn_accounting_runs (all-pixel route) and tests/test_fil_chunks.py (its keys per row).
# n = 160, q = 0.095: the padded Poisson gather (cap 49 rows < n/2) with q·n = 15.2 members expected, so the
# hook's one lead chunk of 16 rows overflows into its loop in some steps (P ≈ 0.4 per step): the replay covers
# the gather and the loop inside the trainer too.
N_A = 160
REL_A = Release(2.0, 0.095, 8, clip_norm=0.5)
CHUNK_A = 4


def _cfg_a(**kw):
    return F.FILConfig(**{"method": "trace_exact", "runs": 2, "seed": 1, **kw})


@pytest.fixture(scope="module")
def setting_a(digits):
    model = models.get_model("mlp:5", digits.image_shape)
    return model, digits.x[:N_A], digits.y[:N_A], digits.x[N_A:N_A + 40], digits.y[N_A:N_A + 40]


@pytest.fixture(scope="module")
def accounted_a(setting_a, production_xla):
    model, x, y, xt, yt = setting_a
    with production_xla():  # compared bit for bit with plain_a (test_fil_path_and_plain_trainer_give_the_same_…)
        return F.train_dpsgd_with_fil(model, REL_A, x, y, x_test=xt, y_test=yt, config=_cfg_a(), chunk_steps=CHUNK_A)


@pytest.fixture(scope="module")
def plain_a(setting_a, production_xla):
    """The plain trainer (no FIL hook, one chunk of 8 steps) with each run's trainer key, transcript recorded."""
    model, x, y, _, _ = setting_a
    cfg = _cfg_a()
    with production_xla():
        return [dpsgd.train(model, REL_A, x, y, key=F.fil_run_keys(cfg.seed, r)[0], learning_rate=cfg.learning_rate,
                            momentum=cfg.momentum, clip_mode="gelu", runs=2) for r in range(2)]


def test_trainer_accounting_matches_a_step_by_step_replay(setting_a, plain_a):
    """Algorithm 1 replayed in Python from the plain trainer's transcript (θ_t before each update, the batch
    masks; the trainer equals the accounted run, test below): Σ_t FIL(θ_t; z)·[z ∈ B_t], κ = 1, exact trace."""
    model, x, y, _, _ = setting_a
    res = F.train_dpsgd_with_fil(model, REL_A, x, y, config=_cfg_a(use_subsampling_factor=False),
                                 chunk_steps=CHUNK_A)
    xs, ys = jnp.asarray(x), jnp.asarray(y)
    unravel = ravel_pytree(model.init(jax.random.PRNGKey(0)))[1]
    every = jax.jit(lambda th: F.per_example_fil(model, unravel(th), xs, ys, clip_norm=REL_A.clip_norm,
                                                 noise_std=REL_A.noise_std, method="trace_exact", clip_mode="gelu"))
    assert dpsgd.make_step_config(REL_A, N_A, 0.1, "gelu", trials=2).cap == 49  # the padded gather
    assert F.lead_chunks(N_A, REL_A.sample_rate) == 1
    for r in range(2):
        tr = plain_a[r].transcript
        manual = sum(np.asarray(every(jnp.asarray(tr.thetas[t]))) * tr.masks[t] for t in range(REL_A.steps))
        np.testing.assert_allclose(res.fil_runs[r], manual, rtol=2e-4, atol=1e-9)
        assert (res.fil_runs[r] == 0).any() and (res.fil_runs[r] > 0).any()  # unsampled examples have no leakage
    sizes = np.concatenate([p.transcript.masks.sum(axis=1) for p in plain_a])
    assert sizes.max() > F.ROW_CHUNK  # some batches ran the hook's loop (fixed keys: checked, not hoped)
    assert np.isinf(res.bounds[res.fil == 0]).all()
    assert res.subsampling_factor == 1.0 and res.subsampling is None
    assert res.noise_std == pytest.approx(2.0 * 0.5)


@pytest.mark.production_xla  # the FIL route and the plain trainer give the same bits in the production build
@pytest.mark.parametrize("q, momentum", [(1.0, 0.0), (0.095, 0.5)])
def test_fil_path_and_plain_trainer_give_the_same_parameters(request, digits, q, momentum):
    """The FIL hook only watches: the accounted run and the plain trainer end at the same parameters."""
    if q < 1:  # the padded Poisson gather, momentum 0.5, chunks of 4 against the plain trainer's one chunk of 8
        res, plain = request.getfixturevalue("accounted_a"), request.getfixturevalue("plain_a")
        assert (REL_A.sample_rate, res.config.momentum) == (q, momentum)
        finals = [p.params for p in plain]
    else:  # the full-mask batch; T = 4 in chunks of 2 (one chunk program, called twice)
        model = models.get_model("mlp:5", digits.image_shape)
        x, y = digits.x[:60], digits.y[:60]
        release = Release(1.3, q, 4, clip_norm=0.7)
        cfg = F.FILConfig(num_coords=3, momentum=momentum, learning_rate=0.3, seed=3, runs=2)
        res = F.train_dpsgd_with_fil(model, release, x, y, config=cfg, chunk_steps=2)
        finals = [dpsgd.train(model, release, x, y, key=F.fil_run_keys(3, r)[0], learning_rate=0.3, momentum=momentum,
                              clip_mode="gelu", record=False, runs=2).params for r in range(2)]
    for r in range(2):
        for a, b in zip(jax.tree_util.tree_leaves(res.params_runs[r]), jax.tree_util.tree_leaves(finals[r])):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # and the runs differ (the keys matter)
    assert not np.array_equal(ravel_pytree(res.params_runs[0])[0], ravel_pytree(res.params_runs[1])[0])


def test_momentum_update_is_the_seed001_recursion(plain_a):
    """optax form of v ← μv + g/(qN), w ← w − ρv, replayed from a transcript (μ = 0.5, ρ = 0.1)."""
    tr = plain_a[0].transcript
    vel = np.zeros(tr.thetas.shape[1])
    theta = np.asarray(tr.thetas[0], np.float64)
    assert tr.meta["normalizer"] == pytest.approx(0.095 * N_A) and tr.grads.shape[0] == 8
    for t in range(8):
        vel = 0.5 * vel + tr.grads[t] / tr.meta["normalizer"]
        theta = theta - 0.1 * vel
        np.testing.assert_allclose(tr.thetas[t + 1], theta, rtol=1e-5, atol=1e-6)
    assert tr.meta["momentum"] == 0.5
    # power: the momentum-free update (or ρ off by 10 %) leaves the recorded parameters after a few steps
    plain = np.asarray(tr.thetas[0], np.float64) - 0.1 * np.cumsum(tr.grads, axis=0) / tr.meta["normalizer"]
    assert np.abs(plain[-1] - tr.thetas[-1]).max() > 1e-3


def test_trainer_seeds_kappa_runs_and_summary(setting_a, accounted_a):
    model, x, y, xt, yt = setting_a
    release, cfg = REL_A, _cfg_a()
    a = accounted_a
    b = F.train_dpsgd_with_fil(model, release, x, y, x_test=xt, y_test=yt, config=cfg, chunk_steps=CHUNK_A)
    np.testing.assert_array_equal(a.fil, b.fil)  # same seed, same numbers
    assert a.test_accuracy == b.test_accuracy and len(a.test_accuracy_runs) == 2
    np.testing.assert_allclose(a.fil, a.fil_runs.mean(axis=0))
    assert not np.allclose(a.fil_runs[0], a.fil_runs[1])
    c = F.train_dpsgd_with_fil(model, release, x, y, config=_cfg_a(seed=2), chunk_steps=CHUNK_A)
    assert not np.allclose(a.fil, c.fil)
    # κ of Eq. 3 with δ = 1/(n·T) and sensitivity 2 × 1.11522 (GELU clip); the RDP ε uses σ/1.11522
    from reconrisk._src.accounting.order2 import release_rdp_alpha2
    from reconrisk._src.accounting.subsampling import GELU_CLIP_OVERSHOOT, subsampling_factor_value

    assert a.subsampling.meets_target and a.subsampling.delta == pytest.approx(1 / (N_A * 8), rel=1e-9)
    assert a.subsampling_factor == pytest.approx(subsampling_factor_value(0.095, a.subsampling.step_epsilon))
    assert a.rdp_epsilon == pytest.approx(release_rdp_alpha2(release, sensitivity=GELU_CLIP_OVERSHOOT))
    d = a.to_dict()
    assert set(d["dfil_bound"]) == {"min", "median", "max"}
    assert d["max_dfil_bound"] == pytest.approx(1 / a.fil.max())
    nokappa = F.train_dpsgd_with_fil(model, release, x, y, config=_cfg_a(use_subsampling_factor=False),
                                     chunk_steps=CHUNK_A)
    np.testing.assert_allclose(nokappa.fil * a.subsampling_factor, a.fil, rtol=1e-5)
    # the paper's Eq. 1 noise scale s = σ (= 2) instead of σC (= 1): the same run, every FIL 4 times smaller
    literal = F.train_dpsgd_with_fil(model, release, x, y, config=_cfg_a(paper_literal=True), chunk_steps=CHUNK_A)
    assert literal.noise_std == 2.0 and a.noise_std == 1.0
    np.testing.assert_allclose(literal.fil * 4, a.fil, rtol=1e-5)


def test_cnn_accounting_runs(digits):
    # m = 40 coordinates: d = 64 ≤ 2m, so the digits CNN takes the all-pixel route (as at the default m = 50);
    # n = 30, q = 0.2: the full-mask batch. One chunk of 3 steps.
    model = models.get_model("cnn", digits.image_shape)
    assert F._route(model, "trace_sampled", 40) == "pixel"
    res = F.train_dpsgd_with_fil(model, Release(1.0, 0.2, 3), digits.x[:30], digits.y[:30],
                                 config=F.FILConfig(num_coords=40, method="trace_sampled"))
    assert np.isfinite(res.fil).all() and (res.fil > 0).any()


@pytest.mark.parametrize(
    "make, word",
    [
        (lambda: F.FILConfig(method="full"), "method"),
        (lambda: F.FILConfig(runs=0), "runs"),
        (lambda: F.FILConfig(learning_rate=-1), "learning_rate"),
        (lambda: F.FILConfig(momentum=1.0), "momentum"),
        (lambda: F.FILConfig(num_coords=0), "num_coords"),
        (lambda: F.FILConfig(delta=0.0), "delta"),
        (lambda: F.FILConfig(clip_mode="soft"), "clip_mode"),
        (lambda: F.gaussian_mechanism_fil(lambda u: u, jnp.ones(3), 0.0), "noise_std"),
    ],
)
def test_bad_config(make, word):
    with pytest.raises(ReconRiskError, match=word):
        make()


def test_bad_data(digits):
    model = models.get_model("mlp:5", digits.image_shape)
    with pytest.raises(ReconRiskError, match="x must be"):
        F.train_dpsgd_with_fil(model, Release(1.0, 0.1, 2), digits.x[:10, :10], digits.y[:10])
    with pytest.raises(ReconRiskError, match="x_test"):
        F.train_dpsgd_with_fil(model, Release(1.0, 0.1, 2), digits.x[:10], digits.y[:10], x_test=digits.x[:3])
