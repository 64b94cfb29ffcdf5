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
