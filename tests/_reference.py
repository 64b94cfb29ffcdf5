"""Test-only programs compiled cheaply: the references a unit is compared with, and deliberately broken variants.

Most of the trainer-family tests' cost is XLA compilation. A reference computation (vmap(grad) for the ghost
clipping, the per-example JVP path for a FIL route, the generic vmapped shadow program for the dense one) or a
power check's broken variant is compiled here with :data:`REFERENCE_OPTIONS`. The suite compiles everything
at that level by default (``RECONRISK_TEST_XLA=fast``, tests/conftest.py), so there the options change
nothing; written per compilation, they keep the references cheap in a production-level run
(``RECONRISK_TEST_XLA=production``), where the unit under test is compiled as production compiles it. Same
function either way: the options change the machine code XLA emits, not what it computes (float rounding
aside: ~4e-7 relative on the FIL routes, against tolerances of 2e-5 and wider).
"""

from __future__ import annotations

#: XLA backend optimisation off. About half the compile time (digits CNN on the 2-core machine: FIL all-pixel
#: route 4.5 → 2.5 s of CPU, ghost tangents 2.8 → 1.1 s); execution is slower, which these small shapes do not feel.
REFERENCE_OPTIONS = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


def reference_jit(fn, patches=()):
    """``fn`` compiled with :data:`REFERENCE_OPTIONS`, traced (and called) with ``patches`` applied.

    ``patches``: (object, attribute name, value) triples set for the duration of each call (the trace sees
    them; a fresh function object, so no trace of ``fn`` made without them is reused).
    """
    import pytest

    from reconrisk._src._jax import jax

    compiled = jax.jit(lambda *a: fn(*a), compiler_options=REFERENCE_OPTIONS)

    def call(*args):
        with pytest.MonkeyPatch.context() as m:
            for obj, name, value in patches:
                m.setattr(obj, name, value)
            return compiled(*args)

    return call


def shadow_reference(monkeypatch, model, cfg, n: int, program: str = "vmap"):
    """Have the shadow trainer run one of its generic programs compiled as a reference.

    ``program``: ``"vmap"`` (``train_shadow_models(..., program="vmap")``: ``vmap`` of ``_train_one`` over the
    targets), ``"dense"`` (the batched dense program, ``program="dense"`` or ``"auto"`` for dense models, and
    the sequential ``"dense"`` baseline), ``"scan"`` (``train_shadow_models_sequential(..., program="scan")``: ``_train_one`` for one
    target) or ``"steps"`` (``program="steps"``: the (init, step) pair of ``_step``) — the programs
    :mod:`reconrisk._src.train.shadow` builds, compiled with :data:`REFERENCE_OPTIONS` and put in its cache for this
    test (``monkeypatch`` removes them after); checked to be what the trainer's cache now serves. The trace
    happens at the first call, so patches active then (e.g. ``_plain_gradient``) are seen.
    """
    from reconrisk._src._jax import jax
    from reconrisk._src.train import shadow

    static = cfg.static(n)
    jit = lambda f: jax.jit(f, compiler_options=REFERENCE_OPTIONS)  # noqa: E731
    one = lambda xf, yf, xt, yt, s, k: shadow._train_one(model, static, xf, yf, xt, yt, s, k)  # noqa: E731
    if program == "vmap":
        key, value, lookup = ("vmap", model, static), jit(jax.vmap(one, in_axes=(None, None, 0, 0, None, 0))), \
            lambda: shadow._vectorised(model, cfg, n, "vmap")
    elif program == "dense":
        from reconrisk._src.train import shadow_dense

        key, value = ("dense", model, static), jit(shadow_dense.dense_program(model, static))
        lookup = lambda: shadow._vectorised(model, cfg, n, "dense")  # noqa: E731
    elif program == "scan":
        key, value, lookup = ("one", model, static), jit(one), lambda: shadow._single(model, cfg, n)
    elif program == "steps":
        value = (jit(lambda *a: shadow._step(model, static, *a)[0]),
                 jit(lambda carry, t, *a: shadow._step(model, static, *a)[1](carry, t)[0]))
        key, lookup = ("steps", model, static), lambda: shadow._stepwise(model, cfg, n)
    else:
        raise ValueError(program)
    monkeypatch.setitem(shadow._COMPILED, key, value)
    assert lookup() is value  # the trainer's cache serves the reference program
