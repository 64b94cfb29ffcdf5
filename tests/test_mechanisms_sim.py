"""Seed 004 simulation: VMF noise in JAX, inverting gradients, and the qualitative claims at CI size."""

from __future__ import annotations

import math

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from reconrisk.errors import ReconRiskError  # noqa: E402
from reconrisk._src.mechanisms.vmf import vmf_mean_resultant, vmf_noise_jax  # noqa: E402


@pytest.mark.parametrize("p,kappa", [(3, 2.0), (500, 40.0)])
def test_jax_vmf_mean_cosine_within_3_se(p, kappa):
    import jax.numpy as jnp

    g = jnp.arange(1.0, p + 1.0)
    mu = np.asarray(g / jnp.linalg.norm(g))
    draw = jax.jit(jax.vmap(lambda k: vmf_noise_jax(k, g, kappa)))
    y = np.asarray(draw(jax.random.split(jax.random.PRNGKey(5), 4000)), dtype=np.float64)
    assert np.allclose(np.linalg.norm(y, axis=1), 1.0, atol=1e-5)
    c = y @ mu
    assert abs(c.mean() - vmf_mean_resultant(p, kappa)) < 3 * c.std(ddof=1) / math.sqrt(c.size)


def test_inverting_gradients_recovers_a_noiseless_batch():
    import jax.numpy as jnp

    from reconrisk._src.attacks.gradient_inversion import inverting_gradients
    from reconrisk._src.metrics import mse

    # a linear softmax model on 4×4 images: the gradient determines a single image up to the label row
    rng = np.random.default_rng(0)
    w = jnp.asarray(rng.standard_normal((16, 3)) * 0.1, jnp.float32)
    x_true = jnp.asarray(rng.uniform(size=(1, 16)), jnp.float32)
    y = jnp.asarray([1])

    def grad_fn(x, labels):
        def loss(wf):
            logits = x @ wf.reshape(16, 3)
            return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(x.shape[0]), labels])

        return jax.grad(loss)(w.ravel())

    rec, loss = inverting_gradients(grad_fn, grad_fn(x_true, y), y, jax.random.PRNGKey(0), image_shape=(4, 4, 1),
                                    iterations=400, learning_rate=0.05, tv_weight=0.0)
    assert float(loss) < 1e-3
    assert float(mse(np.asarray(rec), np.asarray(x_true)).mean()) < 0.01
    noise = np.asarray(jax.random.uniform(jax.random.PRNGKey(1), (1, 16)))
    assert float(mse(noise, np.asarray(x_true)).mean()) > 0.05  # a random guess is far worse


def test_capacity_matched_sigma_inverts_theorem5():
    from reconrisk._src.theory.capacity import log_capacity_gaussian
    from reconrisk._src.experiments.mechanisms import gaussian_sigma_for_log_capacity

    s = gaussian_sigma_for_log_capacity(42.57, 1.0, 4100)
    assert log_capacity_gaussian(s, 1.0, 4100) == pytest.approx(42.57, rel=1e-5)


def test_compare_config_validates():
    from reconrisk._src.experiments.mechanisms import CompareConfig

    with pytest.raises(ReconRiskError, match="epsilons"):
        CompareConfig(epsilons=(1.0, -2.0))
    with pytest.raises(ReconRiskError, match="vmf_compositions"):
        CompareConfig(vmf_compositions="layers")


@pytest.mark.slow
def test_qualitative_claims_ci_size():
    """seed 004 §9: at matched ε Gaussian accuracy ≥ VMF accuracy and VMF MSE ≥ Gaussian MSE (digits, small run)."""
    from reconrisk._src.experiments.mechanisms import CompareConfig, compare_mechanisms

    res = compare_mechanisms(CompareConfig(epsilons=(8.0,), epochs=4, attack_iterations=150))
    g, vm = (next(p for p in res.points if p.mechanism == m) for m in ("gaussian", "vmf"))
    assert g.accuracy >= vm.accuracy
    assert vm.mse >= g.mse
    assert vm.log_capacity < g.log_capacity
    assert res.baseline["mse"] < g.mse  # noise protects compared with clipping alone


def test_release_vmf_trains_in_the_shared_simulator():
    """Release.vmf(κ) runs through train/dpsgd.py's noise seam: the released gradient is a unit vector."""
    from reconrisk._src.data import load_digits
    from reconrisk._src.release import Release
    from reconrisk._src.train.dpsgd import train
    from reconrisk._src.train.models import get_model

    ds = load_digits().subset(np.arange(200))
    model = get_model("logistic", ds.image_shape)
    rel = Release.vmf(500.0, sample_rate=0.25, steps=5)
    assert rel.noise_scale == 500.0 and rel.concentration == 500.0
    res = train(model, rel, ds.x, ds.y, seed=0)
    g = np.asarray(res.transcript.grads)
    assert np.allclose(np.linalg.norm(g.reshape(g.shape[0], -1), axis=1), 1.0, atol=1e-4)
    with pytest.raises(ReconRiskError, match="VMF"):
        from reconrisk._src.analysis.accountant import epsilon

        epsilon(release=rel, delta=1e-5)
    with pytest.raises(ReconRiskError, match="concentration"):
        Release(1.0, 0.1, 10).concentration
