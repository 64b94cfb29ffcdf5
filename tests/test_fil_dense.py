"""The first-layer reduction of FIL's trace estimators (train/fil_dense.py) against the JVP path it replaces.

Same coordinates (the same keys), same quantity: the two must agree to float32
rounding for the exact trace and for seed 001's sampled Eq. 5, for both clip
modes, with clipping active and inactive; a wrong clip derivative would show.

Compilation: per model, one program evaluates the reduction for both clip modes and both estimators with the
clip norm traced, and one the JVP reference (tests/_fil_routes.py); the parametrised tests assert on their
part of the two programs' outputs (clip norms 0.05 and 50: two calls, no recompilation).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from _fil_routes import digits_head, jvp_reference, reference_jit  # noqa: E402
from reconrisk._src.train import fil as F  # noqa: E402
from reconrisk._src.train import models  # noqa: E402

ESTIMATORS = (("trace_exact", 50), ("trace_sampled", 12))  # (method, m): all d coordinates; m = 12 ≥ h
MODES = {"mlp:6,7": ("gelu", "hard"), "logistic": ("hard",)}


@pytest.fixture(scope="module")
def data():
    return digits_head(12)


@functools.lru_cache(maxsize=None)
def _setting(name):
    shape, x, y = digits_head(12)
    model = models.get_model(name, shape)
    params = model.init(jax.random.PRNGKey(2))

    def fil(clip_norm):
        return {(mode, method): F.per_example_fil(model, params, x, y, noise_std=0.7, key=jax.random.PRNGKey(3),
                                                  clip_norm=clip_norm, method=method, num_coords=m, clip_mode=mode)
                for mode in MODES[name] for method, m in ESTIMATORS}

    return model, params, x, y, fil, jax.jit(fil), jvp_reference(fil)


@functools.lru_cache(maxsize=None)
def _both(name, clip_norm):
    """{(clip mode, method): (reduction, JVP path)} at ``clip_norm``."""
    *_, fast, ref = _setting(name)
    c = np.float32(clip_norm)
    a, b = fast(c), ref(c)
    return {k: (np.asarray(a[k]), np.asarray(b[k])) for k in a}


@pytest.mark.parametrize("name, clip_mode, clip_norm", [
    ("mlp:6,7", "gelu", 0.05), ("mlp:6,7", "hard", 0.05), ("mlp:6,7", "gelu", 50.0), ("logistic", "hard", 0.05),
])
def test_reduction_equals_jvp_path(data, name, clip_mode, clip_norm):
    model = _setting(name)[0]
    assert F._reducible(model, "trace_exact", 50) and F._reducible(model, "trace_sampled", 12)
    for method, _ in ESTIMATORS:
        fast, ref = _both(name, clip_norm)[clip_mode, method]
        assert (ref > 0).all()
        np.testing.assert_allclose(fast, ref, rtol=2e-5)


def test_reduction_only_where_it_is_exact_and_cheaper(data):
    shape, _, _ = data
    assert not F._reducible(models.get_model("cnn", shape), "trace_exact", 50)  # conv first layer
    assert not F._reducible(models.get_model("mlp", shape), "spectral", 50)
    assert not F._reducible(models.get_model("mlp:100", shape), "trace_sampled", 50)  # h > m: JVPs are cheaper
    assert not F._reducible(models.get_model("mlp", shape), "trace_sampled", 5)


def test_wrong_clip_derivative_would_be_caught(data):
    """Power: dropping the clip's derivative term changes the result well beyond the tolerance above."""
    from reconrisk._src.train import fil_dense

    _, _, _, _, fil, _, _ = _setting("mlp:6,7")
    good = _both("mlp:6,7", 0.05)["gelu", "trace_exact"][0]
    real = fil_dense._clip_terms
    broken = reference_jit(lambda c: fil(c)["gelu", "trace_exact"],
                           [(fil_dense, "_clip_terms", lambda *a: (real(*a)[0], 0.0 * real(*a)[1]))])
    bad = np.asarray(broken(np.float32(0.05)))
    assert np.max(np.abs(bad / good - 1)) > 1e-2
