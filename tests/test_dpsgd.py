"""DP-SGD simulator: ghost clipping against vmap(grad), noise, sampling, transcripts."""

from __future__ import annotations

import dataclasses
import functools

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


@pytest.fixture(scope="module")
def digits():
    return load_digits()


step = jax.jit(dpsgd.dpsgd_step, static_argnums=(0, 1))


def _leaves_close(a, b, atol):
    for u, w in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(w), atol=atol, rtol=1e-4)


@functools.lru_cache(maxsize=None)
def _both_sums(name, clip):
    """{mode: (ghost sum and norms, vmap(grad) sum and norms)} for both clip modes, from two compiled programs per
    model (the clip norm is traced): the ghost sums (the unit) and the vmap(grad) sums (the reference, compiled
    as tests/_reference.py says). Two modes in one program share the forward pass and per-example gradients:
    about half the compile time of one program per mode. Each parametrised test below asserts on its mode."""
    model = models.get_model(name, (8, 8, 1))
    d = load_digits()
    params = model.init(jax.random.PRNGKey(1))
    x, y = jnp.asarray(d.x[:37]), jnp.asarray(d.y[:37])
    w = (jax.random.uniform(jax.random.PRNGKey(2), (37,)) < 0.6).astype(jnp.float32)
    fast, ref = (program(params, x, y, clip, w) for program in _sums_programs(model))
    return {mode: (fast[mode], ref[mode]) for mode in fast}


@functools.lru_cache(maxsize=None)
def _sums_programs(model):
    def both(sums):
        return lambda *a: {mode: sums(model, *a, mode) for mode in ("hard", "gelu")}

    return jax.jit(both(dpsgd.clipped_grad_sum)), reference_jit(both(dpsgd.naive_clipped_sum))


@pytest.mark.parametrize("name", ["mlp", "cnn", "logistic", "mlp:12,7"])
@pytest.mark.parametrize("mode", ["hard", "gelu"])
def test_ghost_clipping_matches_vmap_grad(digits, name, mode):
    assert digits.image_shape == (8, 8, 1)
    for clip in (0.05, 3.0):  # all clipped / mostly unclipped
        (fast, norms), (ref, ref_norms) = _both_sums(name, clip)[mode]
        np.testing.assert_allclose(np.asarray(norms), np.asarray(ref_norms), rtol=1e-4)
        _leaves_close(fast, ref, atol=1e-5)


def test_cnn_on_larger_images_uses_both_norm_forms():
    # 28×28 input: first conv has P=196 positions (explicit form), the Gram form is used where cheaper
    model = models.cnn((28, 28, 1))
    params = model.init(jax.random.PRNGKey(0))
    x = jax.random.uniform(jax.random.PRNGKey(1), (5, 784))
    y = jnp.arange(5) % 10
    fast, norms = jax.jit(lambda p: dpsgd.clipped_grad_sum(model, p, x, y, 0.5, None, "hard"))(params)
    ref, ref_norms = reference_jit(lambda p: dpsgd.naive_clipped_sum(model, p, x, y, 0.5, None, "hard"))(params)
    np.testing.assert_allclose(np.asarray(norms), np.asarray(ref_norms), rtol=1e-4)
    _leaves_close(fast, ref, atol=1e-5)


def test_inner_products_without_per_example_grads(digits):
    model = models.get_model("mlp", digits.image_shape)
    x, y = jnp.asarray(digits.x[:9]), jnp.asarray(digits.y[:9])

    def loss(p, xi, yi):
        return dpsgd.cross_entropy(model.logits(p, xi[None]), yi[None])[0]

    params = model.init(jax.random.PRNGKey(3))
    vecs = [model.init(jax.random.PRNGKey(k)) for k in (4, 5)]
    stacked = jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), *vecs)

    @jax.jit  # one program (eagerly, every op of signals and vmap(grad) compiled on its own: ~60 compiles)
    def both(params, stacked):
        taps, deltas, _ = dpsgd.signals(model, params, x, y)
        g = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(params, x, y)
        flat = jax.vmap(lambda gi: ravel_pytree(gi)[0])(g)
        vflat = jax.vmap(lambda v_: ravel_pytree(v_)[0])(stacked)
        return dpsgd.grad_inner_products(taps, deltas, stacked), flat @ vflat.T

    ips, ref = both(params, stacked)
    assert float(jnp.abs(ref).max()) > 1e-2  # the inner products are not all ~0: the comparison has power
    np.testing.assert_allclose(np.asarray(ips), np.asarray(ref), rtol=1e-4, atol=1e-5)


def test_clip_factor_bounds():
    sq = np.linspace(0, 25, 1001) ** 2
    clipped = jax.jit(lambda mode: jnp.sqrt(sq) * dpsgd.clip_factors(sq, 2.0, mode), static_argnums=0)
    hard = clipped("hard")
    assert float(hard.max()) <= 2.0 + 1e-6
    soft = clipped("gelu")
    assert 1.114 * 2.0 < float(soft.max()) < 1.116 * 2.0  # seed 001: ‖g̃‖ ≤ 1.115 C
    with pytest.raises(ReconRiskError):
        dpsgd.clip_factors(sq, 2.0, "soft")


# One mlp trainer (n = 50, q = 0.5, T = 12 in chunks of 3, η = 1.5, C = 0.1; σ traced) for the transcript tests.
MLP_N, MLP_LR = 50, 1.5


def test_train_transcript_consistency(digits):
    model = models.get_model("mlp", digits.image_shape)
    rel = Release(3.0, 0.5, 12, clip_norm=0.1)
    x, y = digits.x[:MLP_N], digits.y[:MLP_N]
    res = dpsgd.train(model, rel, x, y, seed=5, learning_rate=MLP_LR, chunk_steps=3)
    tr = res.transcript
    assert tr.thetas.shape == (13, model.num_params) and tr.grads.shape == (12, model.num_params)
    assert tr.masks.shape == (12, MLP_N) and 0.3 < tr.masks.mean() < 0.7
    # θ_{t+1} = θ_t − η g_t / (qN), qN = 25 (q < 1: the expected batch size, not N)
    np.testing.assert_allclose(tr.thetas[1:], tr.thetas[:-1] - MLP_LR * tr.grads / 25.0, atol=1e-5)
    # g_t − Σ_{z ∈ B_t} clip(∇ℓ(θ_t, z)) is N(0, σ²C²): check its standard deviation. 12 × 760 = 9120 draws: the
    # sample std's relative standard error is 1/√(2·9120) = 0.74 %, so the 3 % bound is 4 standard errors
    # (false alarm ~6e-5; the seed is fixed anyway) and a noise scale off by 3 % or more fails.
    _, unravel = ravel_pytree(model.init(jax.random.PRNGKey(0)))
    clipped_sum = reference_jit(lambda th, w: ravel_pytree(dpsgd.clipped_grad_sum(
        model, unravel(th), jnp.asarray(x), jnp.asarray(y), 0.1, w, "hard")[0])[0])
    resid = []
    for t in range(12):
        resid.append(tr.grads[t] - np.asarray(clipped_sum(jnp.asarray(tr.thetas[t]), tr.masks[t].astype(np.float32))))
    resid = np.concatenate(resid)
    assert abs(resid.std() / (3.0 * 0.1) - 1) < 0.03
    assert abs(resid.mean()) < 0.01
    assert res.clipped_fraction == 1.0  # C = 0.1 clips every digits gradient
    np.testing.assert_allclose(ravel_pytree(res.params)[0], tr.thetas[-1], atol=1e-6)


# One logistic-regression setting (one compiled trainer) for the seeding, sample-rate and noise-registry tests:
# n = 400, q = 0.25, T = 40 in one chunk; the sample-rate test needs the 16 000 membership draws.
LOGISTIC_REL = Release(1.0, 0.25, 40, clip_norm=1.0)


@pytest.fixture(scope="module")
def logistic_runs(digits):
    """seed ↦ transcript of the shared logistic setting (each seed trained once)."""
    model = models.get_model("logistic", digits.image_shape)
    done = {}

    def run(seed):
        if seed not in done:
            done[seed] = dpsgd.train(model, LOGISTIC_REL, digits.x[:400], digits.y[:400], seed=seed).transcript
        return done[seed]

    return model, run


def test_same_seed_same_transcript(digits, logistic_runs):
    model, run = logistic_runs
    a = run(3)
    b = dpsgd.train(model, LOGISTIC_REL, digits.x[:400], digits.y[:400], seed=3).transcript  # trained again
    c = run(4)
    np.testing.assert_array_equal(a.grads, b.grads)
    np.testing.assert_array_equal(a.masks, b.masks)
    assert not np.array_equal(a.grads, c.grads)


def test_poisson_gather_equals_mask(digits):
    """The padded-gather batch (small q) computes the same sum as masking the full dataset."""
    model = models.get_model("mlp", digits.image_shape)
    rel = Release(1.0, 0.02, 50, clip_norm=0.1)
    x, y = jnp.asarray(digits.x[:600]), jnp.asarray(digits.y[:600])
    cfg = dpsgd.make_step_config(rel, 600, 1.0, "hard")
    assert cfg.cap is not None and cfg.cap < 60
    cfg_full = dataclasses.replace(cfg, cap=None)
    params = model.init(jax.random.PRNGKey(0))
    full_step = reference_jit(lambda t: dpsgd.dpsgd_step(model, cfg_full, params, jax.random.PRNGKey(9), t, x, y,
                                                         rel.noise_std))  # the full mask: the reference
    sizes = []
    for t in range(5):
        p1, th1, g1, m1, s1 = step(model, cfg, params, jax.random.PRNGKey(9), t, x, y, rel.noise_std)
        p2, th2, g2, m2, s2 = full_step(t)
        np.testing.assert_array_equal(np.asarray(m1), np.asarray(m2))
        np.testing.assert_allclose(np.asarray(g1), np.asarray(g2), atol=1e-5)
        assert float(s1["members"]) == float(np.asarray(m1).sum())
        sizes.append(float(np.asarray(m1).sum()))
    assert 0 < np.mean(sizes) < 30


def test_batch_cap_tail():
    from scipy import stats

    cap = dpsgd.batch_cap(500, 0.02, 1000, 128)
    assert cap is not None and stats.binom.sf(cap, 500, 0.02) <= 1e-12 / (1000 * 128)
    assert stats.binom.sf(cap - 1, 500, 0.02) > 1e-12 / (1000 * 128)
    assert dpsgd.batch_cap(100, 1.0, 10) is None
    assert dpsgd.batch_cap(100, 0.6, 10) is None


def test_mean_sample_rate(logistic_runs):
    tr = logistic_runs[1](3)
    assert tr.masks.shape == (40, 400)
    rate = tr.masks.mean()
    assert abs(rate - 0.25) < 4 * np.sqrt(0.25 * 0.75 / tr.masks.size)


def test_transcript_disk_roundtrip(tmp_path, digits):
    model = models.get_model("mlp", digits.image_shape)
    rel = Release(2.0, 0.5, 12, clip_norm=0.1)  # the consistency test's trainer (σ traced): four chunks of 3 steps
    x, y = digits.x[:MLP_N], digits.y[:MLP_N]
    mem = dpsgd.train(model, rel, x, y, seed=1, learning_rate=MLP_LR, chunk_steps=3).transcript
    disk = dpsgd.train(model, rel, x, y, seed=1, learning_rate=MLP_LR, chunk_steps=3,
                       transcript_path=tmp_path / "t.npz").transcript
    assert isinstance(disk.grads, np.memmap)
    for k in ("thetas", "grads", "masks"):
        np.testing.assert_array_equal(np.asarray(getattr(mem, k)), np.asarray(getattr(disk, k)))
    mem.save(tmp_path / "m.npz")
    again = dpsgd.Transcript.load(tmp_path / "m.npz", mmap=False)
    np.testing.assert_array_equal(again.grads, mem.grads)
    assert again.meta["release"]["noise_multiplier"] == 2.0
    with np.load(tmp_path / "m.npz", allow_pickle=False) as z:  # plain npz, no pickles
        assert set(z.files) == {"thetas", "grads", "masks", "meta"}


def test_transcript_load_refuses_pickles(tmp_path):
    np.savez(tmp_path / "bad.npz", thetas=np.array([object()], dtype=object), grads=np.zeros(2),
             masks=np.zeros(2), meta=np.array("{}"))
    with pytest.raises(ReconRiskError):
        dpsgd.Transcript.load(tmp_path / "bad.npz")
    with pytest.raises(ReconRiskError):
        dpsgd.Transcript.load(tmp_path / "bad.npz", mmap=False)
    with pytest.raises(ReconRiskError, match="not found"):
        dpsgd.Transcript.load(tmp_path / "none.npz")


def test_memory_limit(digits):
    model = models.get_model("logistic", digits.image_shape)
    with pytest.raises(ReconRiskError, match="transcript_path"):
        dpsgd.train(model, Release(1.0, 1.0, 10), digits.x[:10], digits.y[:10], max_memory_bytes=1000)


def test_bad_inputs(digits):
    model = models.get_model("mlp", digits.image_shape)
    with pytest.raises(ReconRiskError):
        dpsgd.train(model, Release(1.0, 1.0, 2), digits.x[:10, :5], digits.y[:10])
    with pytest.raises(ReconRiskError):
        dpsgd.train(model, Release(1.0, 1.0, 2), digits.x[:10], digits.y[:10], clip_mode="soft")
    with pytest.raises(ReconRiskError):
        models.get_model("resnet", (8, 8, 1))
    with pytest.raises(ReconRiskError):
        models.get_model("cnn", 64)


def test_seed000_model_size():
    assert models.get_model("mlp", (28, 28, 1)).num_params == 7960  # seed 000, App. C
    assert models.get_model("mlp", (8, 8, 1)).num_params == 760


# ---------------------------------------------------------------- the composable step
def test_noise_registry_dispatches_on_release_noise(digits, logistic_runs, monkeypatch):
    from dataclasses import dataclass

    from reconrisk._src.mechanisms import base as mbase
    from reconrisk._src.mechanisms.gaussian import Gaussian
    from reconrisk._src.train import noise

    assert "gaussian" in noise.noise_families()
    with pytest.raises(ReconRiskError, match="noise"):
        noise.noise_fn("laplace")
    model, run = logistic_runs
    x, y = digits.x[:400], digits.y[:400]
    rel = LOGISTIC_REL
    base = run(4)
    calls = []

    def shifted(key, summed, noise_std):  # a stand-in family: Gaussian noise plus 1
        calls.append(1)
        return noise.gaussian(key, summed, noise_std) + 1.0

    @dataclass(frozen=True)
    class Shifted(Gaussian):  # a throwaway mechanism, registered for this test only
        name = "shifted"

    monkeypatch.setitem(mbase._BY_NAME, "shifted", Shifted)
    mbase.attach_simulator(Shifted, shifted)
    assert noise.noise_fn("shifted") is shifted and noise.noise_fn("gaussian") is noise.gaussian
    cfg = dataclasses.replace(dpsgd.make_step_config(rel, 400, 2.0, "hard"), noise="shifted")
    params = model.init(jax.random.split(jax.random.PRNGKey(4))[0])
    k_run = jax.random.split(jax.random.PRNGKey(4))[1]
    _, theta, g, mask, _ = step(model, cfg, params, k_run, 0, jnp.asarray(x), jnp.asarray(y), rel.noise_std)
    assert calls
    np.testing.assert_array_equal(np.asarray(mask), base.masks[0])  # the same Poisson batch (q = 0.25)
    np.testing.assert_allclose(np.asarray(g), base.grads[0] + 1.0, rtol=1e-6, atol=1e-6)


# The hook test's setting (mlp:4, n = 80, q = 0.1, T = 8): its plain run is the first σ of the one-compilation test.
HOOK_REL = Release(1.0, 0.1, 8, clip_norm=0.5)


@pytest.fixture(scope="module")
def hook_setting(digits, production_xla):
    model = models.get_model("mlp:4", digits.image_shape)
    x, y = digits.x[:80], digits.y[:80]
    with production_xla():  # the hook test compares its parameters with a hooked run's, bit for bit
        return model, x, y, dpsgd.train(model, HOOK_REL, x, y, seed=3, record=False)


def test_noise_std_is_traced_one_compilation_for_many_sigmas(hook_setting):
    model, x, y, a = hook_setting
    before = dpsgd._chunk_runner.cache_info()
    b = dpsgd.train(model, Release(3.0, 0.1, 8, clip_norm=0.5), x, y, seed=3, record=False)
    after = dpsgd._chunk_runner.cache_info()
    assert (after.hits, after.misses) == (before.hits + 1, before.misses)  # the cached chunk program served it
    assert not np.allclose(np.asarray(ravel_pytree(a.params)[0]), np.asarray(ravel_pytree(b.params)[0]))


def test_pad_members_is_the_one_gather():
    mask = jnp.asarray([0.0, 1.0, 0.0, 1.0, 1.0])
    index, valid, count = jax.jit(dpsgd.pad_members, static_argnums=1)(mask, 4)
    assert int(count) == 3
    np.testing.assert_array_equal(np.asarray(index), [1, 3, 4, 0])
    np.testing.assert_array_equal(np.asarray(valid), [1, 1, 1, 0])
    assert dpsgd.pad_members(mask, None)[:2] == (None, None)


@pytest.mark.production_xla  # training with a hook gives the bits of training without: the production build
def test_hook_sees_parameters_before_the_update_and_the_batch(hook_setting):
    """A hook recording (θ_t, batch size) agrees with the transcript, and does not change training."""

    @dataclasses.dataclass(frozen=True)
    class Watch(dpsgd.StepHook):
        def init(self, params):
            return jnp.float32(0.0)

        def step(self, state, info):
            return state + jnp.sum(info.batch.member), (info.theta, jnp.sum(info.batch.member))

    model, x, y, plain = hook_setting
    rel = HOOK_REL
    res = dpsgd.train(model, rel, x, y, seed=3, hooks=(Watch(),), chunk_steps=4)  # T = 8: two chunks of 4
    thetas, sizes = res.hook_outputs[0]
    np.testing.assert_array_equal(thetas, res.transcript.thetas[:-1])
    np.testing.assert_array_equal(sizes, res.transcript.masks.sum(axis=1))
    assert float(res.hook_states[0]) == res.transcript.masks.sum()
    np.testing.assert_array_equal(ravel_pytree(plain.params)[0], ravel_pytree(res.params)[0])
    with pytest.raises(ReconRiskError, match="hooks"):
        dpsgd.train(model, rel, x, y, hooks=(lambda s, i: (s, ()),))
