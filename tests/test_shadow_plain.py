"""Shadow training without DP takes the plain batch gradient; it must equal the clipped-sum step with C = inf."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")

from _reference import shadow_reference  # noqa: E402
from reconrisk._src.data import load_digits  # noqa: E402
from reconrisk._src.train import shadow  # noqa: E402
from reconrisk._src.train.models import get_model  # noqa: E402


def test_plain_gradient_equals_the_ghost_clipped_sum(monkeypatch):
    d = load_digits()
    model = get_model("mlp", d.image_shape)
    cfg = shadow.ShadowConfig(steps=8)
    args = (model, d.x[:40], d.y[:40], d.x[50:54], d.y[50:54], cfg)
    assert shadow._plain_gradient(cfg.step_config(41))
    shadow._COMPILED.clear()
    fast = shadow.train_shadow_models(*args, chunk=4, program="vmap")  # the dense program: test_shadow_dense.py
    with monkeypatch.context() as m:
        m.setattr(shadow, "_plain_gradient", lambda c: False)
        shadow._COMPILED.clear()
        # the clipped-sum programs are the references: compiled with tests/_reference.py's options
        shadow_reference(m, model, cfg, 41, "vmap")
        shadow_reference(m, model, cfg, 41, "scan")
        ghost = shadow.train_shadow_models(*args, chunk=4, program="vmap")
        ghost_seq = shadow.train_shadow_models_sequential(*args)
    shadow._COMPILED.clear()
    init = np.asarray(shadow.flatten(model.init(__import__("jax").random.PRNGKey(cfg.init_seed))))
    assert np.abs(ghost - init).max() > 1e-2  # the models moved: the comparison has power
    np.testing.assert_allclose(fast, ghost, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ghost_seq, ghost, rtol=1e-4, atol=1e-5)
