"""The suite's XLA level switch (tests/conftest.py): fast-level tests run fast-level programs, and a
``production_xla`` test runs the production build even of a program a fast-level test compiled before it.

The reference builds are compiled explicitly with per-compilation XLA options, independent of the switch.
The function is one whose bits differ between the two levels (checked first: on a CPU where they agreed the
tests could not fail, and the first one says so by skipping).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

FAST = os.environ.get("RECONRISK_TEST_XLA", "fast") == "fast"
from _reference import REFERENCE_OPTIONS  # noqa: E402  (the fast level, per compilation)

LEVELS = {"fast": REFERENCE_OPTIONS,
          "production": {"xla_backend_optimization_level": 2, "xla_llvm_disable_expensive_passes": False}}


def _mixed(x):
    return jnp.tanh(x) * jnp.exp(-x) + jnp.log1p(x * x) + jnp.sin(3.1 * x)


MIXED = jax.jit(_mixed)  # one jit object: its in-memory cache is what the switch must not reuse
X = np.random.default_rng(0).random(4096, dtype=np.float32)


def _reference(level: str) -> np.ndarray:
    return np.asarray(jax.jit(_mixed).lower(X).compile(compiler_options=LEVELS[level])(X))


def test_the_levels_round_differently():
    # 381 of the 4,096 floats differ on the 2-core x86 machine (AVX2); a CPU on which XLA rounds both builds
    # alike could not tell the levels apart, and the tests below would pass whatever the switch did: say so
    if np.array_equal(_reference("fast"), _reference("production")):
        pytest.skip("XLA's two levels round this function alike on this CPU: the level tests cannot fail here")


def test_an_unmarked_test_runs_the_suite_level():
    assert (os.environ.get("JAX_DISABLE_MOST_OPTIMIZATIONS") == "1") is FAST
    np.testing.assert_array_equal(np.asarray(MIXED(X)), _reference("fast" if FAST else "production"))


@pytest.mark.production_xla
def test_a_marked_test_runs_the_production_build_even_of_a_cached_program():
    assert "JAX_DISABLE_MOST_OPTIMIZATIONS" not in os.environ  # nor do its subprocesses compile at the fast level
    np.testing.assert_array_equal(np.asarray(MIXED(X)), _reference("production"))


def test_the_level_is_restored_after_a_marked_test():
    assert (os.environ.get("JAX_DISABLE_MOST_OPTIMIZATIONS") == "1") is FAST
    fresh = jax.jit(lambda x: _mixed(x) * 1.0)  # a program not compiled before: built at the suite's level again
    np.testing.assert_array_equal(np.asarray(fresh(X)), _reference("fast" if FAST else "production"))
