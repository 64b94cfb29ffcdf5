"""The DP-SGD step's faster layouts give the same numbers: tap-major conv taps, ravel by in-place copies."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.flatten_util import ravel_pytree  # noqa: E402

from reconrisk.train import clipping, dpsgd, models  # noqa: E402


def _cnn():
    # first conv: C_in = 1, K = 9 < O = 12 (per-example kernels (B, K, O)); second: C_in = 12 (tap-major, permuted),
    # K = 108 ≥ O = 5 (per-example kernels (B, O, K)); both take the explicit per-example form
    return models.cnn((12, 12, 1), channels=(12, 5))


def test_tap_major_im2col_is_a_permutation_of_the_c_major_one():
    layer = _cnn().layers[1]
    img = jax.random.normal(jax.random.PRNGKey(0), (3, *layer.in_hw, layer.in_channels))
    c_major = jax.jit(lambda i: models.im2col(i, 3, 2, layer.out_hw))(img)
    tap_major = jax.jit(lambda i: models.im2col(i, 3, 2, layer.out_hw, tap_major=True))(img)
    # the same values, features moved: tap-major index t·C + c holds C-major index c·k² + t
    moved = models.tap_major_rows(layer, c_major[..., None])[..., 0]
    np.testing.assert_array_equal(np.asarray(moved), np.asarray(tap_major))
    assert not np.array_equal(np.asarray(c_major), np.asarray(tap_major))
    # and the row permutation is inverted exactly
    w = jax.random.normal(jax.random.PRNGKey(1), (layer.in_features, layer.out_features))
    back = models.tap_major_rows(layer, models.tap_major_rows(layer, w), inverse=True)
    np.testing.assert_array_equal(np.asarray(back), np.asarray(w))
    assert not np.array_equal(np.asarray(models.tap_major_rows(layer, w)), np.asarray(w))


def test_tap_major_apply_gives_the_same_logits():
    model = _cnn()
    params = model.init(jax.random.PRNGKey(2))
    x = jax.random.uniform(jax.random.PRNGKey(3), (6, model.input_dim))
    ref, taps = jax.jit(model.apply)(params, x)
    out, taps_tm = jax.jit(lambda p, x: model.apply(p, x, tap_major=True))(params, x)
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-5, atol=1e-6)
    assert taps_tm[0].shape == taps[0].shape and not np.array_equal(np.asarray(taps_tm[1]), np.asarray(taps[1]))


@pytest.mark.parametrize("mode", ["hard", "gelu"])
def test_clipped_sum_of_a_multichannel_cnn_matches_vmap_grad(mode):
    """Both per-example layouts (K ≥ O and K < O) and the row permutation back to the kernel's order."""
    model = _cnn()
    params = model.init(jax.random.PRNGKey(4))
    x = jax.random.uniform(jax.random.PRNGKey(5), (7, model.input_dim))
    y = jnp.arange(7) % 10
    w = jnp.array([1, 1, 0, 1, 1, 0, 1], jnp.float32)
    fast_sum = jax.jit(clipping.clipped_grad_sum, static_argnums=(0, 6))
    naive_sum = jax.jit(clipping.naive_clipped_sum, static_argnums=(0, 6))
    for clip in (0.05, 5.0):  # all clipped / none clipped; the clip norm is traced (one compilation)
        fast, norms = fast_sum(model, params, x, y, clip, w, mode)
        ref, ref_norms = naive_sum(model, params, x, y, clip, w, mode)
        np.testing.assert_allclose(np.asarray(norms), np.asarray(ref_norms), rtol=1e-4)
        for u, v in zip(jax.tree_util.tree_leaves(fast), jax.tree_util.tree_leaves(ref)):
            np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-4, atol=1e-6)


def test_ravel_equals_ravel_pytree_bit_for_bit():
    model = models.mlp(7, (5, 3))
    params = model.init(jax.random.PRNGKey(6))
    np.testing.assert_array_equal(np.asarray(jax.jit(dpsgd.ravel)(params)), np.asarray(ravel_pytree(params)[0]))
    mixed = {"a": jnp.arange(3, dtype=jnp.int32), "b": jnp.ones((2, 2), jnp.float32)}
    np.testing.assert_array_equal(np.asarray(dpsgd.ravel(mixed)), np.asarray(ravel_pytree(mixed)[0]))
    assert dpsgd.ravel(()).shape == (0,)
