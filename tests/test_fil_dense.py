"""The first-layer reduction of FIL's trace estimators (train/fil_dense.py) against the JVP path it replaces.

Same coordinates (the same keys), same quantity: the two must agree to float32
rounding for the exact trace and for seed 001's sampled Eq. 5, for both clip
modes, with clipping active and inactive; a wrong clip derivative would show.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from _fil_routes import digits_head, fast_and_jvp as _both  # noqa: E402
from reconrisk.train import fil as F  # noqa: E402
from reconrisk.train import models  # noqa: E402


@pytest.fixture(scope="module")
def data():
    return digits_head(12)


@pytest.mark.parametrize("name, clip_mode, clip_norm", [
    ("mlp:6,7", "gelu", 0.05), ("mlp:6,7", "hard", 0.05), ("mlp:6,7", "gelu", 50.0), ("logistic", "hard", 0.05),
])
def test_reduction_equals_jvp_path(monkeypatch, data, name, clip_mode, clip_norm):
    shape, x, y = data
    model = models.get_model(name, shape)
    params = model.init(jax.random.PRNGKey(2))
    assert F._reducible(model, "trace_exact", 50) and F._reducible(model, "trace_sampled", 12)
    for method, m in (("trace_exact", 50), ("trace_sampled", 12)):
        fast, ref = _both(monkeypatch, model, params, x, y, clip_norm=clip_norm, method=method, num_coords=m,
                          clip_mode=clip_mode)
        assert (ref > 0).all()
        np.testing.assert_allclose(fast, ref, rtol=2e-5)


def test_reduction_only_where_it_is_exact_and_cheaper(data):
    shape, _, _ = data
    assert not F._reducible(models.get_model("cnn", shape), "trace_exact", 50)  # conv first layer
    assert not F._reducible(models.get_model("mlp", shape), "spectral", 50)
    assert not F._reducible(models.get_model("mlp:100", shape), "trace_sampled", 50)  # h > m: JVPs are cheaper
    assert not F._reducible(models.get_model("mlp", shape), "trace_sampled", 5)


def test_wrong_clip_derivative_would_be_caught(monkeypatch, data):
    """Power: dropping the clip's derivative term changes the result well beyond the tolerance above."""
    shape, x, y = data
    model = models.get_model("mlp:6,7", shape)
    params = model.init(jax.random.PRNGKey(2))
    from reconrisk.train import fil_dense

    good = np.asarray(fil_dense.dense_trace_sq_norms(model, params, x, y, 0.05, "gelu", None, 1e-14))
    real = fil_dense._clip_terms
    monkeypatch.setattr(fil_dense, "_clip_terms", lambda *a: (real(*a)[0], 0.0 * real(*a)[1]))
    bad = np.asarray(fil_dense.dense_trace_sq_norms(model, params, x, y, 0.05, "gelu", None, 1e-14))
    assert np.max(np.abs(bad / good - 1)) > 1e-2
