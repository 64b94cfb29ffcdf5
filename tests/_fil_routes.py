"""Shared by the FIL route tests: a route's per-example FIL beside the JVP path's, same keys and coordinates."""

from __future__ import annotations

import numpy as np


def fast_and_jvp(monkeypatch, model, params, x, y, **kw):
    """(FIL by the route ``per_example_fil`` picks, FIL by the per-example JVP path) with the same keys."""
    from reconrisk._jax import jax
    from reconrisk.train import fil as F

    def run():
        return np.asarray(F.per_example_fil(model, params, x, y, noise_std=0.7, key=jax.random.PRNGKey(3), **kw))

    fast = run()
    with monkeypatch.context() as m:
        m.setattr(F, "_route", lambda *a: "jvp")
        ref = run()
    return fast, ref


def digits_head(n: int):
    """(image shape, first n digits as JAX arrays, their labels)."""
    import jax.numpy as jnp

    from reconrisk.data import load_digits

    d = load_digits()
    return d.image_shape, jnp.asarray(d.x[:n]), jnp.asarray(d.y[:n])
