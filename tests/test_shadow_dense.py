"""The batched dense shadow program (train/shadow_dense.py) trains the same models as the generic vmapped one."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")

from _reference import shadow_reference  # noqa: E402
from reconrisk._src.data import load_digits  # noqa: E402
from reconrisk.errors import ReconRiskError  # noqa: E402
from reconrisk._src.release import Release  # noqa: E402
from reconrisk._src.train import shadow, shadow_dense  # noqa: E402
from reconrisk._src.train.models import get_model  # noqa: E402

STEPS = 8
# Compiled programs shared between the tests (a program is one (model, static configuration, chunk shape)):
# * mlp:12,7 with DENSE_CFG (random init): the dense and generic programs of the equality test; the direct-form
#   test's kernel-form program is that same dense program (n = 30 < 2d: kernel form), compiled once for the run
#   (the persistent compilation cache, tests/conftest.py);
# * the default mlp with ShadowConfig(steps=STEPS), chunks of 3 models: the sequential-baselines test's batched
#   run and the threads test's chunks (7 targets in chunks of 3: 3, 3 and a padded 1). Those two tests are about
#   sequencing (baselines, threads), not the program: it is compiled as a reference for both (the dense program
#   under XLA's default options is what the equality tests compare).
# The generic vmapped program, the reference of the equality tests, is compiled with tests/_reference.py's
# options (the dense program under test with the defaults); train_shadow_models(program="vmap") still runs it.
DENSE_CFG = dict(steps=STEPS, learning_rate=0.3, momentum=0.7)


@pytest.fixture(scope="module")
def data():
    d = load_digits()
    return d, (d.x[:30], d.y[:30], d.x[40:45], d.y[40:45])


@pytest.fixture(scope="module")
def mlp_dense_reference(data):
    """The default mlp's dense program (ShadowConfig(steps=STEPS)) compiled as a reference for this module."""
    d, _ = data
    with pytest.MonkeyPatch.context() as m:
        shadow_reference(m, get_model("mlp", d.image_shape), shadow.ShadowConfig(steps=STEPS), 31, "dense")
        yield


@pytest.mark.parametrize("name,random_init", [("mlp:12,7", True), ("logistic", False)])
def test_dense_program_equals_the_generic_vmapped_program(data, name, random_init, monkeypatch):
    d, (xf, yf, xt, yt) = data
    model = get_model(name, d.image_shape)
    cfg = shadow.ShadowConfig(**DENSE_CFG, random_init=random_init)
    assert shadow_dense.supports(model, cfg.step_config(31))
    shadow_reference(monkeypatch, model, cfg, 31)
    fast = shadow.train_shadow_models(model, xf, yf, xt, yt, cfg, seed=5, program="dense")
    ref = shadow.train_shadow_models(model, xf, yf, xt, yt, cfg, seed=5, program="vmap")
    assert fast.shape == ref.shape == (5, model.num_params)
    moved = np.abs(ref - ref[:1]).max()  # targets (and with random_init the inits) differ: the comparison has power
    assert moved > 1e-2
    np.testing.assert_allclose(fast, ref, rtol=1e-4, atol=2e-5)
    # "auto" picks the dense program for a dense model without DP
    np.testing.assert_array_equal(shadow.train_shadow_models(model, xf, yf, xt, yt, cfg, seed=5), fast)


def test_every_sequential_baseline_trains_the_same_models(data, monkeypatch, mlp_dense_reference):
    d, (xf, yf, xt, yt) = data
    model = get_model("mlp", d.image_shape)
    cfg = shadow.ShadowConfig(steps=STEPS)
    shadow_reference(monkeypatch, model, cfg, 31, "steps")  # the generic one-step programs: references
    vec = shadow.train_shadow_models(model, xf, yf, xt[:3], yt[:3], cfg)
    # "steps" is the generic one-model program stepped from Python: for the default mlp it is the dense-vs-generic
    # check; "dense" one model at a time is the stronger sequential baseline ("scan" is checked in test_reconn.py)
    for program in ("dense", "steps"):
        seq = shadow.train_shadow_models_sequential(model, xf, yf, xt[:3], yt[:3], cfg, program=program)
        np.testing.assert_allclose(seq, vec, rtol=1e-4, atol=2e-5, err_msg=program)


@pytest.mark.parametrize("name,random_init", [("mlp:12,7", True), ("logistic", False)])
def test_dp_dense_program_equals_the_generic_program_noise_bits_and_clipping_included(data, name, random_init,
                                                                                     monkeypatch):
    d, (xf, yf, xt, yt) = data
    model = get_model(name, d.image_shape)
    dp = shadow.ShadowConfig(**DENSE_CFG, random_init=random_init, release=Release(0.7, 1.0, STEPS, clip_norm=0.3))
    assert shadow_dense.supports(model, dp.step_config(31))
    shadow_reference(monkeypatch, model, dp, 31)  # σ is traced: the tiny-noise run below shares it
    fast = shadow.train_shadow_models(model, xf, yf, xt, yt, dp, seed=5, program="dense")
    ref = shadow.train_shadow_models(model, xf, yf, xt, yt, dp, seed=5, program="vmap")
    np.testing.assert_allclose(fast, ref, rtol=1e-4, atol=2e-5)
    np.testing.assert_array_equal(shadow.train_shadow_models(model, xf, yf, xt, yt, dp, seed=5), fast)  # auto: dense
    # power: other noise keys, or no clipping and no noise, move the parameters far beyond the tolerance
    other = shadow.train_shadow_models(model, xf, yf, xt, yt, dp, seed=6, program="dense")
    assert np.abs(other - ref).max() > 1e-2
    tiny = shadow.ShadowConfig(**DENSE_CFG, random_init=random_init, release=Release(1e-6, 1.0, STEPS, clip_norm=0.3))
    plain = shadow.ShadowConfig(**DENSE_CFG, random_init=random_init)  # the first equality test's dense program
    clipped = shadow.train_shadow_models(model, xf, yf, xt, yt, tiny, seed=5, program="dense")
    np.testing.assert_allclose(clipped, shadow.train_shadow_models(model, xf, yf, xt, yt, tiny, seed=5, program="vmap"),
                               rtol=1e-4, atol=2e-5)
    assert np.abs(clipped - shadow.train_shadow_models(model, xf, yf, xt, yt, plain, seed=5)).max() > 1e-2


def test_direct_first_layer_equals_the_kernel_form_and_is_chosen_for_large_fixed_sets(data):
    from reconrisk._src._jax import jax

    d, (xf, yf, xt, yt) = data
    model = get_model("mlp:12,7", d.image_shape)
    cfg = shadow.ShadowConfig(**DENSE_CFG, random_init=True)
    assert shadow_dense.first_layer_form(30, 64, dp=False) == "kernel"  # the form train_shadow_models takes here
    keys = shadow.model_keys(2, len(xt))
    out = {form: np.asarray(jax.jit(shadow_dense.dense_program(model, cfg.static(31), form=form))(
        xf, yf, xt, yt, np.float32(0.0), keys)) for form in ("kernel", "direct")}
    np.testing.assert_allclose(out["direct"], out["kernel"], rtol=1e-4, atol=2e-5)
    assert np.abs(out["kernel"] - out["kernel"][:1]).max() > 1e-2
    # n²h (kernel) against 2ndh (direct) multiply-adds per model and step; DP noise leaves the data's span
    assert shadow_dense.first_layer_form(127, 64, dp=False) == "kernel"
    assert shadow_dense.first_layer_form(128, 64, dp=False) == "direct"
    assert shadow_dense.first_layer_form(10, 64, dp=True) == "direct"


def test_conv_models_keep_the_generic_program_and_bad_programs_are_refused(data):
    d, (xf, yf, xt, yt) = data
    mlp = get_model("mlp", d.image_shape)
    dp = shadow.ShadowConfig(steps=2, release=Release(2.0, 1.0, 2, clip_norm=1.0))
    cnn = get_model("cnn", d.image_shape)
    assert not shadow_dense.supports(cnn, shadow.ShadowConfig().step_config(31))
    with pytest.raises(ReconRiskError, match="program 'dense'"):
        shadow.train_shadow_models(cnn, xf, yf, xt, yt, shadow.ShadowConfig(steps=2), program="dense")
    with pytest.raises(ReconRiskError, match="form 'kernel'"):
        shadow_dense.dense_program(mlp, dp.static(31), form="kernel")
    with pytest.raises(ReconRiskError, match="form must be"):
        shadow_dense.dense_program(mlp, dp.static(31), form="gram")
    with pytest.raises(ReconRiskError, match="program must be"):
        shadow.train_shadow_models(mlp, xf, yf, xt, yt, dp, program="fast")
    with pytest.raises(ReconRiskError, match="program must be"):
        shadow.train_shadow_models_sequential(mlp, xf, yf, xt, yt, dp, program="loop")


def test_chunks_on_several_threads_give_the_same_rows_in_order(data, monkeypatch, mlp_dense_reference):
    # the default mlp in chunks of 3 (the batched program of the sequential-baselines test): 7 targets are
    # chunks of 3, 3 and 1 (padded to 3); after the first, two chunks for the pool
    d, (xf, yf, _, _) = data
    model = get_model("mlp", d.image_shape)
    xt, yt = d.x[40:47], d.y[40:47]
    cfg = shadow.ShadowConfig(steps=STEPS)
    seen: list[int] = []
    monkeypatch.setattr(shadow, "_chunk_workers", lambda: 1)
    one = shadow.train_shadow_models(model, xf, yf, xt, yt, cfg, seed=3, chunk=3, pad_chunks=True)
    monkeypatch.setattr(shadow, "_chunk_workers", lambda: 3)
    many = shadow.train_shadow_models(model, xf, yf, xt, yt, cfg, seed=3, chunk=3, pad_chunks=True,
                                      progress=seen.append)
    np.testing.assert_array_equal(many, one)
    assert seen == [3, 3, 1]  # every chunk reported once, in order
    assert np.abs(one - one[:1]).max() > 1e-2  # rows differ: a swapped chunk would fail the equality


def test_default_chunk_keeps_a_chunk_of_activations_cache_sized_on_cpu(data):
    from reconrisk._src._jax import jax

    d, _ = data
    cfg = shadow.ShadowConfig(steps=2)
    if jax.default_backend() != "cpu":
        pytest.skip("the cache-sized rule is for the CPU backend")
    mlp = get_model("mlp", d.image_shape)  # widest layer 10: chunk × (|D⁻| + 1) × 10 ≈ 2^16
    assert [shadow.default_chunk(mlp, cfg, n) for n in (10, 50, 100, 200, 500, 5000)] == [128, 128, 64, 32, 16, 8]
    assert shadow.default_chunk(get_model("mlp:256", d.image_shape), cfg, 50) == 8
    assert shadow.default_chunk(get_model("cnn", d.image_shape), cfg, 500) == 128  # the vmapped program keeps 128
