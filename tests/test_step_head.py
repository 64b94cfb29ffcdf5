"""release_step(head=...): the clipped sum evaluated as head + tail rows, the head's part shared with the adversary.

The audit's trials evaluate the known points' clipped sum once for the trainer
and the adversary. It must release the same step as the plain full-batch step
(to float32 rounding) and hand the adversary exactly its own deduction.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402
from _reference import reference_jit  # noqa: E402

from reconrisk import Release  # noqa: E402
from reconrisk._src.attacks.prior_aware import deduct_known, observe_step  # noqa: E402
from reconrisk.errors import ReconRiskError  # noqa: E402
from reconrisk._src.train import dpsgd, models  # noqa: E402


def _step_program(model, cfg):
    """One jitted step (a program per static configuration; run eagerly its hundreds of operations compiled one
    by one): the plain and the head + tail release, the adversary's deduction and observations (own and shared
    head sum), and the update."""
    from jax.flatten_util import ravel_pytree

    @jax.jit
    def one(params, key, t, x, y, s):
        plain, _ = dpsgd.release_step(model, cfg, params, key, t, x, y, s)
        split, _ = dpsgd.release_step(model, cfg, params, key, t, x[25:], y[25:], s, head=(x[:25], y[:25]))
        gbar = deduct_known(model, cfg, params, split.g, split.batch.mask[:25], x[:25], y[:25])
        unravel = ravel_pytree(params)[1]
        args = (model, cfg, split.theta, split.g, split.batch.mask[:25], x[:25], y[:25], x[25:], y[25:], unravel)
        a = observe_step(*args)
        b = observe_step(*args, known_sum=split.head_sum)
        new_params, _ = dpsgd.apply_update(cfg, split, optax.EmptyState())
        return plain, split, gbar, a, b, new_params

    return one


@pytest.mark.parametrize("q", [1.0, 0.7])
def test_head_tail_step_equals_plain_step(q):
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.uniform(size=(30, 12)), jnp.float32)
    y = jnp.asarray(rng.integers(0, 3, 30), jnp.int32)
    model = models.get_model("mlp:5", 12, num_classes=3)
    release = Release(0.8, q, 5, clip_norm=0.2)
    cfg = dpsgd.make_step_config(release, 30, 0.5, "hard")
    assert cfg.cap is None
    params = model.init(jax.random.PRNGKey(1))
    key, s = jax.random.PRNGKey(2), jnp.float32(release.noise_std)
    one = _step_program(model, cfg)
    for t in range(3):
        plain, split, gbar, a, b, new_params = one(params, key, t, x, y, s)
        np.testing.assert_array_equal(np.asarray(plain.batch.mask), np.asarray(split.batch.mask))
        np.testing.assert_allclose(np.asarray(split.g), np.asarray(plain.g), rtol=1e-5, atol=1e-6)
        # the shared head sum is the adversary's own deduction, and the observations agree
        np.testing.assert_allclose(np.asarray(split.g - split.head_sum), np.asarray(gbar), rtol=1e-5, atol=1e-6)
        for k in a:
            np.testing.assert_allclose(np.asarray(a[k]), np.asarray(b[k]), rtol=1e-5, atol=1e-6)
        params = new_params
    # power: a head that misses a row is a different release (the short variant compiled as a test-only program)
    short = reference_jit(lambda p: dpsgd.release_step(model, cfg, p, key, 0, x[26:], y[26:], s,
                                                       head=(x[:25], y[:25]))[0].g)(params)
    full = one(params, key, 0, x, y, s)[1].g
    assert not np.allclose(np.asarray(short), np.asarray(full))


def test_head_needs_a_full_mask_batch():
    model = models.get_model("mlp:3", 4, num_classes=2)
    release = Release(1.0, 0.01, 5, clip_norm=1.0)
    x = jnp.zeros((2000, 4), jnp.float32)
    y = jnp.zeros((2000,), jnp.int32)
    cfg = dpsgd.make_step_config(release, 2000, 0.5, "hard")
    assert cfg.cap is not None
    with pytest.raises(ReconRiskError, match="full-mask"):  # refused while tracing: nothing is compiled
        jax.jit(lambda p, k: dpsgd.release_step(model, cfg, p, k, 0, x[1000:], y[1000:], jnp.float32(1.0),
                                                head=(x[:1000], y[:1000])))(model.init(jax.random.PRNGKey(0)),
                                                                             jax.random.PRNGKey(0))
