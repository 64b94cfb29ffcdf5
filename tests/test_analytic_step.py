"""The blocked explicit step of seed 003 (attacks/analytic_step.py) against the vmapped step it replaced.

* Same keys → same reconstructions and gradient norms as the earlier
  one-``vmap``-per-chunk step (written out below as the reference), for the
  oracle and ratio estimators, with and without bias, whatever the block size.
* The on-device MSE (Def. 3) and NCC (Def. 5), now formed from Σd, Σd²,
  Σ(x − x̄)d and per-sample sums of X, equal float64 numpy metrics of the same
  reconstructions; at 10⁶ pixels with a large offset (mean ≫ spread, where
  centring matters) they stay within 1e-6, where a plain float32
  accumulation of the same sums is measurably off (power check).
"""

from __future__ import annotations

import numpy as np
import pytest

from _reference import REFERENCE_OPTIONS
from reconrisk._src.attacks import analytic as atk
from reconrisk._src.attacks import analytic_step as st

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402


def _reference_step(rows, dim, bias, sc):
    """The pre-block step: one vmap of the DP-SGD step over the whole chunk (as in earlier versions)."""
    one = st._one_step(rows, dim, bias, sc)

    def batch(p, xb, base_key, idx, s, c):
        keys = jax.vmap(lambda i: jax.random.fold_in(base_key, i))(idx)
        return jax.vmap(one, in_axes=(None, 0, 0, None, None))(p, xb, keys, s, c)

    return jax.jit(batch, compiler_options=REFERENCE_OPTIONS)  # the reference: compiled cheaply (tests/_reference.py)


def _host_metrics(x, xh):
    x, xh = np.asarray(x, np.float64), np.asarray(xh, np.float64)
    err = np.mean((xh - x) ** 2, axis=1)
    xc, hc = x - x.mean(axis=1, keepdims=True), xh - xh.mean(axis=1, keepdims=True)
    return err, np.sum(xc * hc, axis=1) / np.sqrt(np.sum(xc * xc, axis=1) * np.sum(hc * hc, axis=1))


@pytest.mark.parametrize("rows,dim,bias,sc,block", [(3, 40, False, "oracle", 2), (4, 50, True, "ratio", None)])
def test_blocked_step_equals_vmapped_step(rows, dim, bias, sc, block, monkeypatch):
    if block is not None:  # two reconstructions per lax.map iteration: 7 rows = 3 blocks + a remainder of 1
        monkeypatch.setattr(st, "BLOCK_ELEMENTS", block * rows * dim)
        st._gathered_step.cache_clear()
    x = jnp.asarray(np.random.default_rng(dim).uniform(0, 1, (7, dim)), jnp.float32)
    p = {"W": jnp.zeros((rows, dim), jnp.float32), "b": jnp.zeros((rows,), jnp.float32)}
    if not bias:
        p.pop("b")
    key, idx = jax.random.key(11), jnp.arange(5, 12, dtype=jnp.uint32)
    s, c = jnp.float32(0.3), jnp.float32(0.5)
    got_xh, got_n = st._gathered_step(rows, dim, bias, sc, False)(p, x, None, jnp.arange(7), key, idx, s, c)
    want_xh, want_n = _reference_step(rows, dim, bias, sc)(p, x, key, idx, s, c)
    st._gathered_step.cache_clear()
    np.testing.assert_allclose(np.asarray(got_n), np.asarray(want_n), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got_xh), np.asarray(want_xh), rtol=1e-6, atol=1e-6)
    assert not np.allclose(np.asarray(got_xh[0]), np.asarray(got_xh[1]))  # independent keys per row


def test_gathered_metrics_equal_float64_metrics_of_the_same_reconstructions():
    """simulate_success's device metrics vs numpy float64 metrics of simulate_attack's reconstructions (same keys)."""
    rng = np.random.default_rng(2)
    x = np.vstack([rng.uniform(0, 1, 2000), 50.0 + rng.uniform(0, 1e-2, 2000), np.linspace(-1, 1, 2000)])
    sim = atk.simulate_success(x, [0.05], 0.1, 3, mode="explicit", seed=3, data_range=None)  # clipped: β < 1
    xh = atk.simulate_attack(x, 0.05, 0.1, 3, mode="explicit", seed=np.random.default_rng([3, 0]))
    err, corr = _host_metrics(x.astype(np.float32), xh)
    np.testing.assert_allclose(sim.mse[0], err, rtol=2e-6)
    np.testing.assert_allclose(sim.ncc[0], corr, rtol=2e-6, atol=1e-7)


def _f32_sequential(v):
    return float(np.cumsum(np.asarray(v, np.float32), dtype=np.float32)[-1])


def test_metrics_at_a_million_pixels_beat_a_plain_float32_sum():
    """N = 10⁶, offset image (mean 0.7, spread 0.01, noise std 0.007: NCC ≈ 0.8): device MSE and NCC within 1e-6 of float64; the same sums
    accumulated plainly in float32 miss by more (so the comparison can fail)."""
    n = 1_000_000
    x = (0.7 + 0.01 * np.random.default_rng(4).standard_normal(n))[None, :]
    x32 = x.astype(np.float32)
    clip = 0.5 * float(np.linalg.norm(x))  # clipped: β = 1/2
    sim = atk.simulate_success(x, [1e-5], clip, 1, mode="explicit", seed=5)
    xh = atk.simulate_attack(x, 1e-5, clip, 1, mode="explicit", seed=np.random.default_rng([5, 0]))
    err, corr = _host_metrics(x32, xh)
    assert abs(sim.mse[0, 0] / err[0] - 1) < 1e-6
    assert abs(sim.ncc[0, 0] / corr[0] - 1) < 1e-6
    # power: the plain float32 accumulation of the same quantities (the "wrong norm under load" kind of error)
    xh = np.asarray(xh[0], np.float32)
    d = xh - x32[0]
    plain_mse = _f32_sequential(d * d) / n
    xc = x32[0] - np.float32(_f32_sequential(x32[0]) / n)
    hc = xh - np.float32(_f32_sequential(xh) / n)
    plain_ncc = _f32_sequential(xc * hc) / np.sqrt(_f32_sequential(xc * xc) * _f32_sequential(hc * hc))
    assert abs(plain_mse / err[0] - 1) > 1e-5 or abs(plain_ncc / corr[0] - 1) > 1e-5


def test_sample_stats_are_the_centred_sums():
    x = np.random.default_rng(6).uniform(0, 1, (3, 5000)) + np.array([[0.0], [100.0], [-3.0]])
    got = np.asarray(st._sample_stats(5000)(jnp.asarray(x, jnp.float32)))
    x32 = x.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(got[:, 0], x32.mean(axis=1), rtol=1e-7)
    centred = x32 - got[:, :1].astype(np.float64)
    np.testing.assert_allclose(got[:, 2], np.sum(centred**2, axis=1), rtol=1e-5)
    assert np.all(np.abs(got[:, 1] - centred.sum(axis=1)) <= 1e-6 * np.abs(x32).sum(axis=1))


def test_block_rows():
    assert st.block_rows(1, 224 * 224 * 3, "cpu") == 1
    assert st.block_rows(665, 224 * 224 * 3, "cpu") == 1
    assert st.block_rows(3, 40, "cpu") == st.BLOCK_ELEMENTS // 120
    assert st.block_rows(1, 224 * 224 * 3, "gpu") >= 10**6  # accelerators: the whole chunk in one vmap
