"""The batched ghost-tangent path of FIL's trace estimators (train/fil_ghost.py) against the JVP path it replaces.

Same coordinates (the same keys), same quantity: the two must agree to float32
rounding for the CNN (conv first layer, where the first-layer reduction does not
apply) and for a wide MLP, for the exact trace and seed 001's sampled Eq. 5,
with clipping active and more probes than one block (the scanned path);
tests/test_fil_dense.py covers the hard clip and inactive clipping of the
shared clip algebra. A wrong term (a dropped clip derivative, a dropped
signal tangent) must fail the same tolerance.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from _fil_routes import digits_head, jvp_reference, reference_jit  # noqa: E402
from reconrisk._src.train import fil as F  # noqa: E402
from reconrisk._src.train import fil_ghost, models  # noqa: E402

CNN_CASE = ("cnn", "gelu", 0.05, "trace_sampled", 70)


@pytest.fixture(scope="module")
def data():
    return digits_head(6)


@functools.lru_cache(maxsize=None)
def _case(name, clip_mode, clip_norm, method, m):
    """(model, per-example FIL of the first 6 digits as a function of nothing: traced inside jit)."""
    shape, x, y = digits_head(6)
    model = models.get_model(name, shape)
    params = model.init(jax.random.PRNGKey(2))

    def fil():
        return F.per_example_fil(model, params, x, y, noise_std=0.7, key=jax.random.PRNGKey(3), clip_norm=clip_norm,
                                 method=method, num_coords=m, clip_mode=clip_mode)

    return model, fil


@functools.lru_cache(maxsize=None)
def _ghost(case):
    """The ghost route's FIL for ``case`` (forced: the CNN on 8×8 inputs would take the all-pixel route); one
    compiled program, shared by the equality test and the power checks."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(F, "_route", lambda *a: "ghost")
        return np.asarray(jax.jit(_case(*case)[1])())


@pytest.mark.parametrize("name, clip_mode, clip_norm, method, m", [
    CNN_CASE,  # clipping active; 70 > PROBE_BLOCK: scanned blocks, zero-weighted pad;
    # the all-pixel route (train/fil_pixel.py) is compared with the same JVP reference here
    ("mlp:80", "gelu", 0.5, "trace_exact", 20),  # h > d: not reducible; all d probes (the CNN's exact trace
    # is the same code with idx=None; its JVP reference, jacfwd, is the costliest compile of all here)
])
def test_ghost_path_equals_jvp_path(name, clip_mode, clip_norm, method, m):
    case = (name, clip_mode, clip_norm, method, m)
    model, fil = _case(*case)
    pixel = None
    if F._route(model, method, m) == "pixel":  # the CNN on 8×8 inputs takes the all-pixel route: compare it too
        pixel = np.asarray(jax.jit(fil)())
    else:
        assert F._route(model, method, m) == "ghost"
    fast, ref = _ghost(case), np.asarray(jvp_reference(fil)())
    assert (ref > 0).all()
    np.testing.assert_allclose(fast, ref, rtol=2e-5)
    if pixel is not None:  # train/fil_pixel.py against the same JVP reference (one costly JVP compile for both)
        np.testing.assert_allclose(pixel, ref, rtol=2e-5)


def test_routes():
    shape = (8, 8, 1)
    assert F._route(models.get_model("cnn", shape), "trace_sampled", 50) == "pixel"
    assert F._route(models.get_model("cnn", (28, 28, 1)), "trace_sampled", 50) == "ghost"
    assert F._route(models.get_model("mlp", shape), "trace_sampled", 50) == "dense"
    assert F._route(models.get_model("cnn", shape), "spectral", 50) == "jvp"


@pytest.mark.parametrize("broken", ["clip_derivative", "delta_tangent"])
def test_a_wrong_term_would_be_caught(data, broken):
    """Power: dropping the clip derivative or the signals' tangent moves the CNN result well beyond 2e-5
    (the CNN case of the equality test above: Eq. 5 with m = 70, clipping active)."""
    good = _ghost(CNN_CASE)
    if broken == "clip_derivative":
        real = fil_ghost._clip_terms  # (fil_dense's, imported by name: patched where the ghost route reads it)
        patch = (fil_ghost, "_clip_terms", lambda *a: (real(*a)[0], 0.0 * real(*a)[1]))
    else:
        real = fil_ghost._layer_terms
        patch = (fil_ghost, "_layer_terms", lambda a, d, da, dd: real(a, d, da, 0.0 * dd))
    bad = np.asarray(reference_jit(_case(*CNN_CASE)[1], [(F, "_route", lambda *a: "ghost"), patch])())
    assert np.max(np.abs(bad / good - 1)) > 1e-2
