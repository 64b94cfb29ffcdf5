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

import functools

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from _fil_routes import digits_head, reference_jit  # noqa: E402
from reconrisk._src.train import fil as F  # noqa: E402
from reconrisk._src.train import fil_ghost, fil_pixel, models  # noqa: E402


@functools.lru_cache(maxsize=None)
def _cnn():
    shape, x, y = digits_head(6)
    model = models.get_model("cnn", shape)
    return model, model.init(jax.random.PRNGKey(2)), x, y


@pytest.fixture(scope="module")
def cnn_data():
    return _cnn()


def _pixel_fn(idx=None, clip_mode="gelu"):
    """clip norm ↦ the all-pixel route's (B,) ‖J‖² (Eq. 5 at ``idx``, or the exact trace) on the digits CNN."""
    model, params, x, y = _cnn()
    return lambda c: fil_pixel.pixel_trace_sq_norms(model, params, x, y, c, clip_mode, idx, 1e-14)


@functools.lru_cache(maxsize=None)
def _programs():
    """(route under test, reference): one compiled program each for both clip modes and both estimators, the
    clip norm traced (the three equality cases are two calls); the ghost route is the reference."""
    model, params, x, y = _cnn()
    b, d = x.shape
    idx = jax.random.randint(jax.random.PRNGKey(5), (b, d), 0, d)
    every = jax.numpy.broadcast_to(jax.numpy.arange(d), (b, d))

    def ghost(c, mode, probes):
        return fil_ghost.ghost_trace_sq_norms(model, params, x, y, c, mode, probes, 1e-14)

    pixel = jax.jit(lambda c: {m: (_pixel_fn(idx, m)(c), _pixel_fn(None, m)(c)) for m in ("gelu", "hard")})
    ghosts = reference_jit(lambda c: {m: (ghost(c, m, idx), ghost(c, m, every)) for m in ("gelu", "hard")})
    return idx, pixel, ghosts


@functools.lru_cache(maxsize=None)
def _routes(clip_norm):
    """{clip mode: ((pixel Eq. 5, pixel exact), (ghost Eq. 5, ghost on all d coordinates))} at ``clip_norm``."""
    _, pixel, ghosts = _programs()
    c = np.float32(clip_norm)
    got, ref = pixel(c), ghosts(c)
    return {m: (tuple(np.asarray(a) for a in got[m]), tuple(np.asarray(a) for a in ref[m])) for m in got}


def _good():
    """The all-pixel exact trace, GELU clip at C = 0.05 (clipping active): what the power checks break."""
    return _routes(0.05)["gelu"][0][1]


def _broken(*patches):
    return np.asarray(reference_jit(_pixel_fn(), patches)(np.float32(0.05)))


@pytest.mark.parametrize("clip_mode, clip_norm", [("gelu", 0.05), ("hard", 0.05), ("gelu", 50.0)])
def test_pixel_route_equals_ghost_route(cnn_data, clip_mode, clip_norm):
    """Eq. 5 with the same coordinates (drawn with repeats) and the exact trace (= the ghost route's Eq. 5 on
    all d coordinates once each), clipping active and inactive; one compile per route for all cases."""
    d = cnn_data[2].shape[1]
    got, ref = _routes(clip_norm)[clip_mode]
    for pixel, ghost in zip(got, ref):
        assert (ghost > 0).all()
        np.testing.assert_allclose(pixel, ghost, rtol=2e-5)
    assert len(np.unique(np.asarray(_programs()[0][0]))) < d  # the sampled coordinates repeat


@pytest.mark.parametrize("broken", ["elu_curvature", "clip_derivative"])
def test_a_dropped_term_would_be_caught(cnn_data, broken):
    good = _good()
    if broken == "elu_curvature":
        real = fil_pixel._elu_d
        bad = _broken((fil_pixel, "_elu_d", lambda s: (real(s)[0], 0.0 * real(s)[1])))
    else:
        real = fil_pixel._clip_terms  # (fil_dense's, imported by name: patched where the pixel route reads it)
        bad = _broken((fil_pixel, "_clip_terms", lambda *a: (real(*a)[0], 0.0 * real(*a)[1])))
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
def test_a_dropped_block_would_be_caught(cnn_data, broken):
    """Leaving out one second-layer position pair of da_p·da_q, or one first-layer slot of the pixels, moves the
    result far beyond the tolerance of the equality tests."""
    good = _good()
    if broken == "pair":
        real = fil_pixel._overlapping_pairs
        bad = _broken((fil_pixel, "_overlapping_pairs", lambda m: tuple(a[1:] for a in real(m))))
    else:
        real = fil_pixel._pixel_slots
        bad = _broken((fil_pixel, "_pixel_slots", lambda m: tuple(a[:, :-1] for a in real(m))))
    assert np.max(np.abs(bad / good - 1)) > 1e-3


def test_pixel_route_on_another_geometry():
    """Odd input size (padding on both convolutions) and two input channels: the route's static tables are
    built from the geometry, so its Eq. 5 estimate (every pixel evaluated, a few read out) still equals the ghost
    route's with the same coordinates."""
    model = models.get_model("cnn", (6, 6, 2))
    assert F._route(model, "trace_exact", 50) == "pixel"
    # arbitrary parameters and inputs, drawn with numpy (jax.random compiles a sampler per shape)
    rng = np.random.default_rng(4)
    shapes = jax.eval_shape(model.init, jax.random.PRNGKey(0))
    params = jax.tree_util.tree_map(lambda a: jax.numpy.asarray(0.3 * rng.standard_normal(a.shape), a.dtype), shapes)
    x = jax.numpy.asarray(rng.uniform(size=(3, model.input_dim)), jax.numpy.float32)
    y = jax.numpy.asarray([0, 3, 7])
    idx = jax.numpy.asarray(rng.integers(0, model.input_dim, (3, 12)), jax.numpy.int32)
    ref = np.asarray(reference_jit(lambda: fil_ghost.ghost_trace_sq_norms(model, params, x, y, 0.05, "gelu", idx, 1e-14))())
    assert (ref > 0).all()
    got = jax.jit(lambda: fil_pixel.pixel_trace_sq_norms(model, params, x, y, 0.05, "gelu", idx, 1e-14))()
    np.testing.assert_allclose(np.asarray(got), ref, rtol=2e-5)
