"""The audit's fast paths against the reference computations they replace (issue 8, item 7)."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from reconrisk._src.data import load_digits  # noqa: E402
from reconrisk.errors import ReconRiskError  # noqa: E402
from reconrisk._src.train import clipping, models  # noqa: E402

reference = jax.jit(clipping.clipped_grad_sum, static_argnums=(0, 6))  # the clip norm traced: one compile per model
feature_major = jax.jit(clipping.clipped_grad_sum_feature_major, static_argnums=(0, 6))


@pytest.fixture(scope="module")
def digits():
    return load_digits()


@pytest.mark.parametrize("name, mode", [("mlp", "hard"), ("mlp:12,7", "gelu"), ("logistic", "hard")])
def test_feature_major_clipped_sum_equals_example_major(digits, name, mode):
    model = models.get_model(name, digits.image_shape)
    params = model.init(jax.random.PRNGKey(1))
    x, y = jnp.asarray(digits.x[:57]), jnp.asarray(digits.y[:57])
    w = (jax.random.uniform(jax.random.PRNGKey(2), (57,)) < 0.6).astype(jnp.float32)
    for clip in (0.05, 3.0):  # every gradient clipped / most unclipped
        ref, ref_norms = reference(model, params, x, y, clip, w, mode)
        got, norms = feature_major(model, params, x, y, clip, w, mode)
        np.testing.assert_allclose(np.asarray(norms), np.asarray(ref_norms), rtol=2e-6)
        for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(ref)):
            assert a.shape == b.shape
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-6)


def test_feature_major_under_vmap_over_parameters(digits):
    # the audit's use: one shared x, parameters batched over trials
    model = models.get_model("mlp", digits.image_shape)
    params = jax.vmap(model.init)(jax.random.split(jax.random.PRNGKey(3), 3))
    x, y = jnp.asarray(digits.x[:40]), jnp.asarray(digits.y[:40])
    f = jax.jit(jax.vmap(lambda p: clipping.clipped_grad_sum_feature_major(model, p, x, y, 0.1)))
    g = jax.jit(jax.vmap(lambda p: clipping.clipped_grad_sum(model, p, x, y, 0.1)))
    (got, n1), (ref, n2) = f(params), g(params)
    np.testing.assert_allclose(np.asarray(n1), np.asarray(n2), rtol=2e-6)
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(ref)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-7)


def test_feature_major_refuses_convolutions():
    model = models.cnn((8, 8, 1))
    assert not clipping.feature_major(model)
    assert clipping.feature_major(models.mlp((8, 8, 1)))
    with pytest.raises(ReconRiskError, match="all-dense"):
        clipping.clipped_grad_sum_feature_major(model, model.init(jax.random.PRNGKey(0)),
                                                jnp.zeros((2, 64)), jnp.zeros((2,), jnp.int32), 1.0)
