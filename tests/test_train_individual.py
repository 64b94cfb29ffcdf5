"""Per-example norm recording and filtered training in the JAX trainer (train/individual.py).

Sizes: 200 digits, q = 0.05 (so the step gathers a padded batch: the index/valid path), T = 6 steps, a
10-unit MLP; four compiled programs (batch, step, epoch recording; filtered training). The direct norms are
per-example gradients by vmap(grad) at the parameters the transcript recorded.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.flatten_util import ravel_pytree  # noqa: E402

from reconrisk import Release  # noqa: E402
from reconrisk._src.individual.privacy import IndividualFilter  # noqa: E402
from reconrisk._src.data import load_digits  # noqa: E402
from reconrisk.errors import ReconRiskError  # noqa: E402
from reconrisk._src.train import dpsgd, models  # noqa: E402
from reconrisk._src.train.clipping import cross_entropy  # noqa: E402

N, C, LR = 200, 4.5, 0.5  # C near the median gradient norm at initialisation: some rows clipped, some not
REL = Release(1.0, 0.05, 6, clip_norm=C)
FEW = dict(orders=(2.0, 4.0, 8.0, 16.0, 32.0))  # integer orders: a cheap charge table


@pytest.fixture(scope="module")
def setup():
    d = load_digits()
    model = models.get_model("mlp", d.image_shape)
    return model, d.x[:N], d.y[:N]


@pytest.fixture(scope="module")
def batch_run(setup, production_xla):
    model, x, y = setup
    assert dpsgd.make_step_config(REL, N, 2.0, "hard").cap is not None  # the gathered-batch path
    with production_xla():  # its parameters are compared bit for bit with other recording modes'
        return dpsgd.train(model, REL, x, y, seed=1, learning_rate=LR, record=True, record_norms="batch",
                           chunk_steps=REL.steps)


@pytest.fixture(scope="module")
def direct(setup):
    """min(C, ‖∇ℓ(θ, z_i)‖) of every row by vmap(grad), at a flat θ (one compiled program)."""
    model, x, y = setup
    _, unravel = ravel_pytree(model.init(jax.random.PRNGKey(0)))

    def loss(p, xi, yi):
        return cross_entropy(model.logits(p, xi[None]), yi[None])[0]

    @jax.jit
    def norms(theta):
        g = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(unravel(theta), jnp.asarray(x), jnp.asarray(y))
        return jax.vmap(lambda t: jnp.linalg.norm(ravel_pytree(t)[0]))(g)

    return lambda theta: np.minimum(np.asarray(norms(jnp.asarray(theta)), dtype=float), C)


def test_batch_norms_are_the_sampled_rows_gradient_norms(batch_run, direct):
    r = batch_run
    masks = np.asarray(r.transcript.masks)
    assert r.norms.shape == (N, REL.steps) and r.norms.dtype == np.float32
    assert np.array_equal(~np.isnan(r.norms), masks.T)  # observed exactly where sampled
    for t in range(REL.steps):
        rows = np.flatnonzero(masks[t])
        np.testing.assert_allclose(r.norms[rows, t], direct(r.transcript.thetas[t])[rows], rtol=2e-4)


@pytest.mark.production_xla  # "recording never changes training", bit for bit: the production build
def test_step_and_epoch_norms_cover_every_row(setup, batch_run, direct):
    model, x, y = setup
    s = dpsgd.train(model, REL, x, y, seed=1, learning_rate=LR, record=False, record_norms="step",
                    chunk_steps=REL.steps)
    e = dpsgd.train(model, REL, x, y, seed=1, learning_rate=LR, record=False, record_norms="epoch",
                    chunk_steps=REL.steps)
    # recording never changes training
    for a, b in zip(jax.tree_util.tree_leaves(s.params), jax.tree_util.tree_leaves(batch_run.params)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.isnan(s.norms).any()
    for t in (0, REL.steps - 1):
        np.testing.assert_allclose(s.norms[:, t], direct(batch_run.transcript.thetas[t]), rtol=2e-4)
    observed = batch_run.norms[~np.isnan(batch_run.norms)]
    np.testing.assert_allclose(observed, s.norms[~np.isnan(batch_run.norms)], rtol=1e-5)  # gathered vs all rows
    # one epoch is ⌈1/q⌉ = 20 steps; step t evaluates slice t of the data (rows 10t … 10t + 9): in these 6
    # steps rows 0–59 are observed once each, at step row // 10, the rest never
    seen = ~np.isnan(e.norms)
    rows = np.arange(60)
    assert seen.sum() == 60 and seen[rows, rows // 10].all()
    np.testing.assert_allclose(e.norms[rows, rows // 10], s.norms[rows, rows // 10], rtol=1e-5)


def test_filtered_training_follows_the_filter(setup):
    model, x, y = setup
    gamma = IndividualFilter(Release(1.0, 0.05, 4, clip_norm=C), **FEW).budget_rero(0.1)  # ~4 steps at C
    f = IndividualFilter(REL, target_rero=gamma, kappa=0.1, **FEW)
    r = dpsgd.train(model, REL, x, y, seed=2, learning_rate=LR, record=True, record_norms="step",
                    individual_filter=f, chunk_steps=REL.steps)
    assert r.individual_filter is f and np.array_equal(r.filtered, f.filtered)
    assert 0 < f.filtered.sum() < N  # clipped examples stopped after ~4 steps, small ones kept
    assert np.all(f.certified_rero(0.1) <= gamma)
    # the float32 bookkeeping in the scan equals the float64 filter run on the same norms
    ref = IndividualFilter(REL, target_rero=gamma, kappa=0.1, **FEW)
    for t in range(REL.steps):
        ref.admit(r.norms[:, t])
    np.testing.assert_array_equal(ref.counts, f.counts)
    np.testing.assert_array_equal(ref.stopped_at, f.stopped_at)
    # a stopped example is in no batch from its stop on
    masks = np.asarray(r.transcript.masks)
    late = np.arange(REL.steps)[None, :] >= f.stopped_at[:, None]
    assert not masks.T[late].any()


def test_filter_and_norms_need_hard_clipping(setup):
    model, x, y = setup
    with pytest.raises(ReconRiskError, match="clip_mode='hard'"):
        dpsgd.train(model, REL, x, y, record=False, record_norms="step", clip_mode="gelu")
    with pytest.raises(ReconRiskError, match="record_norms must be"):
        dpsgd.train(model, REL, x, y, record=False, record_norms="sometimes")
