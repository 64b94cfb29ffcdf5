"""The DP-SGD step's faster layouts give the same numbers: tap-major conv taps, ravel by in-place copies."""

from __future__ import annotations

import functools

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.flatten_util import ravel_pytree  # noqa: E402

from reconrisk._src.train import clipping, dpsgd, models  # noqa: E402


def _normal(seed, shape, scale=1.0):
    """Arbitrary inputs, drawn with numpy: jax.random would compile a sampler for every shape (~1–5 s each)."""
    return jnp.asarray(scale * np.random.default_rng(seed).standard_normal(shape), jnp.float32)


def _init(model, seed):
    """Parameters of ``model``'s shapes, N(0, 0.3²) from numpy (any values serve these layout checks)."""
    shapes = jax.eval_shape(model.init, jax.random.PRNGKey(0))  # traced, not compiled
    return jax.tree_util.tree_map(lambda a: _normal(seed + a.size, a.shape, 0.3), shapes)


def _cnn():
    # first conv: C_in = 1, K = 9 < O = 12 (per-example kernels (B, K, O)); second: C_in = 12 (tap-major, permuted),
    # K = 108 ≥ O = 5 (per-example kernels (B, O, K)); both take the explicit per-example form
    return models.cnn((12, 12, 1), channels=(12, 5))


def test_tap_major_im2col_is_a_permutation_of_the_c_major_one():
    layer = _cnn().layers[1]
    img = _normal(0, (3, *layer.in_hw, layer.in_channels))
    c_major, tap_major = jax.jit(lambda i: (models.im2col(i, 3, 2, layer.out_hw),  # one program for both
                                            models.im2col(i, 3, 2, layer.out_hw, tap_major=True)))(img)
    # the same values, features moved: tap-major index t·C + c holds C-major index c·k² + t
    moved = models.tap_major_rows(layer, c_major[..., None])[..., 0]
    np.testing.assert_array_equal(np.asarray(moved), np.asarray(tap_major))
    assert not np.array_equal(np.asarray(c_major), np.asarray(tap_major))
    # and the row permutation is inverted exactly
    w = _normal(1, (layer.in_features, layer.out_features))
    back = models.tap_major_rows(layer, models.tap_major_rows(layer, w), inverse=True)
    np.testing.assert_array_equal(np.asarray(back), np.asarray(w))
    assert not np.array_equal(np.asarray(models.tap_major_rows(layer, w)), np.asarray(w))


def test_tap_major_apply_gives_the_same_logits():
    model = _cnn()
    params = _init(model, 2)
    x = jnp.asarray(np.random.default_rng(3).uniform(size=(6, model.input_dim)), jnp.float32)
    (ref, taps), (out, taps_tm) = jax.jit(lambda p, x: (model.apply(p, x), model.apply(p, x, tap_major=True)))(params, x)
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-5, atol=1e-6)
    assert taps_tm[0].shape == taps[0].shape and not np.array_equal(np.asarray(taps_tm[1]), np.asarray(taps[1]))


@functools.lru_cache(maxsize=None)
def _sums(clip):
    """{mode: (clipped_grad_sum, naive_clipped_sum)} for both clip modes from one program (they share the forward
    pass and per-example gradients; the clip norm is traced: one compilation for both clip values)."""
    model = _cnn()
    params = model.init(jax.random.PRNGKey(4))  # the trainer's initial scale: some rows clipped, some not at C = 5
    x = jnp.asarray(np.random.default_rng(5).uniform(size=(7, model.input_dim)), jnp.float32)
    y = jnp.arange(7) % 10
    w = jnp.array([1, 1, 0, 1, 1, 0, 1], jnp.float32)
    return _sums_program(model)(params, x, y, clip, w)


@functools.lru_cache(maxsize=None)
def _sums_program(model):
    return jax.jit(lambda *a: {m: (clipping.clipped_grad_sum(model, *a, m), clipping.naive_clipped_sum(model, *a, m))
                               for m in ("hard", "gelu")})


@pytest.mark.parametrize("mode", ["hard", "gelu"])
def test_clipped_sum_of_a_multichannel_cnn_matches_vmap_grad(mode):
    """Both per-example layouts (K ≥ O and K < O) and the row permutation back to the kernel's order."""
    for clip in (0.05, 5.0):  # all clipped / none clipped
        (fast, norms), (ref, ref_norms) = _sums(clip)[mode]
        np.testing.assert_allclose(np.asarray(norms), np.asarray(ref_norms), rtol=1e-4)
        for u, v in zip(jax.tree_util.tree_leaves(fast), jax.tree_util.tree_leaves(ref)):
            np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-4, atol=1e-6)


def test_ravel_equals_ravel_pytree_bit_for_bit():
    model = models.mlp(7, (5, 3))
    params = _init(model, 6)
    np.testing.assert_array_equal(np.asarray(jax.jit(dpsgd.ravel)(params)), np.asarray(ravel_pytree(params)[0]))
    mixed = {"a": jnp.arange(3, dtype=jnp.int32), "b": jnp.ones((2, 2), jnp.float32)}
    np.testing.assert_array_equal(np.asarray(dpsgd.ravel(mixed)), np.asarray(ravel_pytree(mixed)[0]))
    assert dpsgd.ravel(()).shape == (0,)
