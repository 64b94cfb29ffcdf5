"""Shared by the FIL route tests: a route's per-example FIL beside the JVP path's, same keys and coordinates.

Compilation (most of these tests' cost): every quantity is computed inside ``jax.jit`` (run eagerly, each of
the hundreds of operations of a route compiles on its own: the CNN's JVP path took ~14 s of CPU eagerly against
~3 s as one program), and the test-only programs — the JVP reference a route is compared with, and the
deliberately broken variants of the power checks — compile with ``REFERENCE_OPTIONS`` (tests/_reference.py).
The routes under test keep XLA's default options, as the trainer compiles them.
"""

from __future__ import annotations

import numpy as np

from _reference import REFERENCE_OPTIONS, reference_jit  # noqa: F401  (re-exported for the route tests)

def jvp_reference(fn):
    """``fn`` with :func:`reconrisk._src.train.fil.per_example_fil` forced onto the per-example JVP path (the reference)."""
    from reconrisk._src.train import fil as F

    return reference_jit(fn, [(F, "_route", lambda *a: "jvp")])


def fast_and_jvp(monkeypatch, model, params, x, y, **kw):
    """(FIL by the route ``per_example_fil`` picks, FIL by the per-example JVP path) with the same keys."""
    from reconrisk._src._jax import jax
    from reconrisk._src.train import fil as F

    def run():
        return F.per_example_fil(model, params, x, y, noise_std=0.7, key=jax.random.PRNGKey(3), **kw)

    del monkeypatch  # kept for the callers' signature; the reference patches the route itself, per call
    return np.asarray(jax.jit(run)()), np.asarray(jvp_reference(run)())


def digits_head(n: int):
    """(image shape, first n digits as JAX arrays, their labels)."""
    import jax.numpy as jnp

    from reconrisk._src.data import load_digits

    d = load_digits()
    return d.image_shape, jnp.asarray(d.x[:n]), jnp.asarray(d.y[:n])
