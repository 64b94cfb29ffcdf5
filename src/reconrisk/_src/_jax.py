"""The one place reconrisk imports JAX: ``from .._jax import jax`` (inside functions, so JAX stays lazy).

Importing this module imports JAX and, once, makes JAX's random numbers fast
on CPU without changing a single bit of them.

Why
    JAX's default PRNG is Threefry-2x32 with 20 rounds (Salmon et al., SC'11).
    On CPU, JAX lowers the ``threefry2x32`` primitive as a *rolled* loop: a
    ``while`` of 5 iterations of 4 rounds. XLA cannot fuse across the loop, so
    every iteration writes and re-reads the whole counter array: on this
    project's 2-core CI machine a 150,528-element ``jax.random.normal`` costs
    about 2.8 ms, 19 ns per number, and the Gaussian noise dominated the DP-SGD
    step (about 270k numbers per step for the 256-wide MLP) and Riess et al.'s (2024)
    explicit reconstructions (150,528 per reconstruction). On GPU JAX already
    lowers the same primitive *unrolled*; doing the same on CPU lets XLA fuse
    the 20 rounds into one elementwise loop: 0.6–0.8 ms, 3.5–5× faster (a 269k-number draw: 1.1 ms).

What changes
    Only the CPU lowering rule of :data:`jax.extend.random.threefry2x32_p`, and
    only for draws of at least ``UNROLL_MIN_SIZE`` (2¹⁷) numbers; smaller ones
    are lowered as the same rolled loop JAX uses (:func:`threefry2x32_rolled`).
    The function computed is the same Threefry-2x32-20 (key schedule, rotation
    constants 13 15 26 6 / 17 29 16 24, key injection every 4 rounds), so every
    key, every ``jax.random`` draw and every result of reconrisk is bit-for-bit
    what it was (``tests/test_jax_rng.py`` checks the Random123 known-answer
    vectors and that draws equal those of the rolled lowering). Compilation of
    a program with many random calls is a little slower (the unrolled rounds
    are larger HLO).

Set ``RECONRISK_ROLLED_THREEFRY=1`` to keep JAX's own CPU lowering (for a
benchmark's before/after); ``RECONRISK_THREEFRY_UNROLL_MIN=N`` moves the size
threshold. If a future JAX moves the public names used here, the rule is simply
not installed (JAX's own stays; results are identical).
"""

from __future__ import annotations

import math
import os

import jax  # noqa: F401  (re-exported: ``from .._jax import jax``)
import numpy as np

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA  # Threefry's key-schedule parity constant

INSTALLED = False


def _rotl(x, r: int):
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32_unrolled(k1, k2, x1, x2):
    """Threefry-2x32-20 on uint32 arrays, written as 20 straight-line rounds (fusable by XLA)."""

    ks = (k1, k2, k1 ^ k2 ^ np.uint32(_PARITY))
    x0, x1 = x1 + ks[0], x2 + ks[1]
    for block in range(5):
        for r in _ROTATIONS[block % 2]:
            x0 = x0 + x1
            x1 = _rotl(x1, r) ^ x0
        x0 = x0 + ks[(block + 1) % 3]
        x1 = x1 + ks[(block + 2) % 3] + np.uint32(block + 1)
    return x0, x1


def threefry2x32_rolled(k1, k2, x1, x2):
    """The same function as a loop of 5 blocks of 4 rounds (what JAX itself lowers on CPU)."""
    import jax.numpy as jnp
    from jax import lax

    ks = (k1, k2, k1 ^ k2 ^ np.uint32(_PARITY))
    rot = np.array(_ROTATIONS, dtype=np.uint32)

    def block(i, state):
        x0, x1, ka, kb, kc = state
        r = jnp.asarray(rot)[i % 2]
        for j in range(4):
            x0 = x0 + x1
            x1 = ((x1 << r[j]) | (x1 >> (np.uint32(32) - r[j]))) ^ x0
        return x0 + kb, x1 + kc + (i + np.uint32(1)), kb, kc, ka

    out = lax.fori_loop(np.uint32(0), np.uint32(5), block, (x1 + ks[0], x2 + ks[1], ks[0], ks[1], ks[2]))
    return out[0], out[1]


# Draws of fewer numbers keep the rolled form: there the unrolled rule measured no faster inside the audit's vmapped
# training scan (small noise vectors, 64 trials × 760 parameters), while from ~10⁵ numbers on it is 2.5–5× faster.
UNROLL_MIN_SIZE = int(os.environ.get("RECONRISK_THREEFRY_UNROLL_MIN", str(2**17)))


def _install() -> bool:
    if os.environ.get("RECONRISK_ROLLED_THREEFRY", "") not in ("", "0"):
        return False
    try:
        from jax.extend.random import threefry2x32_p
        from jax.interpreters import mlir

        unrolled = mlir.lower_fun(lambda k1, k2, x1, x2: threefry2x32_unrolled(k1, k2, x1, x2), multiple_results=True)
        rolled = mlir.lower_fun(lambda k1, k2, x1, x2: threefry2x32_rolled(k1, k2, x1, x2), multiple_results=True)

        def rule(ctx, *args):
            size = math.prod(ctx.avals_out[0].shape)
            return (unrolled if size >= UNROLL_MIN_SIZE else rolled)(ctx, *args)

        mlir.register_lowering(threefry2x32_p, rule, platform="cpu")
    except Exception:  # pragma: no cover - a JAX without these public names: keep its own (identical) rule
        return False
    return True


INSTALLED = _install()
