"""The all-pixel route of FIL's trace estimators for conv-first models (train/fil_pixel.py).

Same quantity as the per-example JVPs (and the ghost tangents) with the same
sampled coordinates. The comparison with the JVP path itself is in
test_fil_ghost.py (the CNN case: ghost and pixel routes against one JVP
reference, whose compile costs ~30 s here); this file compares with the ghost
route, which that test ties to the JVP path, for both estimators, both clip
modes, clipping active and inactive. Power: dropping the
eLU's second derivative (the signals' tangent through the curvature) or the
clip's derivative moves the result far beyond the tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from _fil_routes import digits_head, fast_and_jvp as _both  # noqa: E402
from reconrisk.train import fil as F  # noqa: E402
from reconrisk.train import fil_ghost, fil_pixel, models  # noqa: E402


@pytest.fixture(scope="module")
def cnn_data():
    shape, x, y = digits_head(6)
    model = models.get_model("cnn", shape)
    return model, model.init(jax.random.PRNGKey(2)), x, y


def _pixel(model, params, x, y, idx=None, clip_norm=0.05, clip_mode="gelu"):
    return np.asarray(fil_pixel.pixel_trace_sq_norms(model, params, x, y, clip_norm, clip_mode, idx, 1e-14))


@pytest.mark.parametrize("clip_mode, clip_norm", [("gelu", 0.05), ("hard", 0.05), ("gelu", 50.0)])
def test_pixel_route_equals_ghost_route(cnn_data, clip_mode, clip_norm):
    """Eq. 5 with the same coordinates (drawn with repeats) and the exact trace (= the ghost route's Eq. 5 on
    all d coordinates once each), clipping active and inactive; one ghost compile per clip setting."""
    model, params, x, y = cnn_data
    b, d = x.shape
    ghost = jax.jit(lambda idx: fil_ghost.ghost_trace_sq_norms(model, params, x, y, clip_norm, clip_mode, idx, 1e-14))
    idx = jax.random.randint(jax.random.PRNGKey(5), (b, d), 0, d)
    every = jax.numpy.broadcast_to(jax.numpy.arange(d), (b, d))
    for probes, pixel_idx in ((idx, idx), (every, None)):
        ref = np.asarray(ghost(probes))
        assert (ref > 0).all()
        np.testing.assert_allclose(_pixel(model, params, x, y, pixel_idx, clip_norm, clip_mode), ref, rtol=2e-5)
    assert len(np.unique(np.asarray(idx[0]))) < d  # the sampled coordinates repeat


@pytest.mark.parametrize("broken", ["elu_curvature", "clip_derivative"])
def test_a_dropped_term_would_be_caught(monkeypatch, cnn_data, broken):
    model, params, x, y = cnn_data
    good = _pixel(model, params, x, y)
    if broken == "elu_curvature":
        real = fil_pixel._elu_d
        monkeypatch.setattr(fil_pixel, "_elu_d", lambda s: (real(s)[0], 0.0 * real(s)[1]))
    else:
        from reconrisk.train import fil_dense

        real = fil_dense._clip_terms
        monkeypatch.setattr(fil_dense, "_clip_terms", lambda *a: (real(*a)[0], 0.0 * real(*a)[1]))
    bad = _pixel(model, params, x, y)
    assert np.max(np.abs(bad / good - 1)) > 1e-2


def test_pixel_route_only_where_it_applies():
    small, large = models.get_model("cnn", (8, 8, 1)), models.get_model("cnn", (28, 28, 1))
    assert F._route(small, "trace_exact", 50) == "pixel"
    assert F._route(small, "trace_sampled", 20) == "ghost"  # d = 64 > 2m pixels for m sampled ones
    assert F._route(small, "spectral", 50) == "jvp"
    assert F._route(large, "trace_sampled", 50) == "ghost"  # d = 784
    assert F._route(models.get_model("mlp:80", (8, 8, 1)), "trace_exact", 50) == "ghost"  # dense first layer


def test_static_structure_matches_the_dense_tables(cnn_data):
    """The geometry tables the route relies on: the pixel slots rebuild the first layer's im2col of every e_i,
    and the second-layer position pairs left out of da_p·da_q are exactly zero for every pixel."""
    import jax.numpy as jnp

    model = cnn_data[0]
    d = model.input_dim
    taps = np.asarray(fil_pixel._gather_fn(model, 0)(jnp.eye(d)))  # (d, P1, K1)
    rows, ok = fil_pixel._pixel_slots(model)
    rebuilt = np.zeros((d, taps.shape[1] * taps.shape[2]))
    for i in range(d):
        rebuilt[i, rows[i, ok[i]]] += 1.0
    np.testing.assert_array_equal(rebuilt.reshape(taps.shape), taps)
    assert ok.sum(axis=1).max() == rows.shape[1] and not ok.all()  # some pixels sit on fewer positions
    rng = np.random.default_rng(0)
    w1 = jnp.asarray(rng.normal(size=(taps.shape[2], model.layers[0].out_features)), jnp.float32)
    ctab = np.asarray(fil_pixel._gather_fn(model, 1)((jnp.asarray(taps) @ w1).reshape(d, -1)))  # (d, P2, K2)
    overlap = np.einsum("ipk,iqk->pq", np.abs(ctab), np.abs(ctab)) > 0
    pp, qq = fil_pixel._overlapping_pairs(model)
    kept = np.zeros_like(overlap)
    kept[pp, qq] = True
    np.testing.assert_array_equal(kept, overlap)


@pytest.mark.parametrize("broken", ["pair", "slot"])
def test_a_dropped_block_would_be_caught(monkeypatch, cnn_data, broken):
    """Leaving out one second-layer position pair of da_p·da_q, or one first-layer slot of the pixels, moves the
    result far beyond the tolerance of the equality tests."""
    model, params, x, y = cnn_data
    good = _pixel(model, params, x, y)
    if broken == "pair":
        real = fil_pixel._overlapping_pairs
        monkeypatch.setattr(fil_pixel, "_overlapping_pairs", lambda m: tuple(a[1:] for a in real(m)))
    else:
        real = fil_pixel._pixel_slots
        monkeypatch.setattr(fil_pixel, "_pixel_slots", lambda m: tuple(a[:, :-1] for a in real(m)))
    bad = _pixel(model, params, x, y)
    assert np.max(np.abs(bad / good - 1)) > 1e-3


def test_pixel_route_on_another_geometry():
    """Odd input size (padding on both convolutions) and two input channels: the route's static tables are
    built from the geometry, so its Eq. 5 estimate (every pixel evaluated, a few read out) still equals the ghost
    route's with the same coordinates."""
    model = models.get_model("cnn", (6, 6, 2))
    assert F._route(model, "trace_exact", 50) == "pixel"
    params = model.init(jax.random.PRNGKey(4))
    x = jax.random.uniform(jax.random.PRNGKey(5), (3, model.input_dim))
    y = jax.numpy.asarray([0, 3, 7])
    idx = jax.random.randint(jax.random.PRNGKey(6), (3, 12), 0, model.input_dim)
    ref = np.asarray(jax.jit(lambda: fil_ghost.ghost_trace_sq_norms(model, params, x, y, 0.05, "gelu", idx, 1e-14))())
    assert (ref > 0).all()
    got = jax.jit(lambda: fil_pixel.pixel_trace_sq_norms(model, params, x, y, 0.05, "gelu", idx, 1e-14))()
    np.testing.assert_allclose(np.asarray(got), ref, rtol=2e-5)
