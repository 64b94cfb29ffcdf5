"""The CPU lowering of Threefry installed by ``reconrisk._src._jax`` computes JAX's own function, bit for bit."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("jax")

# Random123's known-answer vectors for Threefry-2x32-20 (key, counter) -> output; JAX's own tests use the same.
KAT = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


def test_installed_and_known_answers():
    from reconrisk._src._jax import INSTALLED, jax
    import jax.numpy as jnp
    from jax.extend.random import threefry_2x32

    assert INSTALLED
    f = jax.jit(threefry_2x32)
    for key, ctr, out in KAT:
        got = f(jnp.array(key, jnp.uint32), jnp.array(ctr, jnp.uint32))
        assert [int(v) for v in got] == list(out)


def test_unrolled_rule_is_fused_on_cpu():
    """The rule is really in use: a large draw lowers with no while loop (JAX's own CPU rule has one); a small one keeps it."""
    from reconrisk._src._jax import UNROLL_MIN_SIZE, jax

    if jax.default_backend() != "cpu":
        pytest.skip("the rule is installed for CPU only")
    big = jax.jit(lambda k: jax.random.normal(k, (UNROLL_MIN_SIZE,))).lower(jax.random.key(0)).as_text()
    small = jax.jit(lambda k: jax.random.normal(k, (1000,))).lower(jax.random.key(0)).as_text()
    assert "while" not in big
    assert "while" in small


_DRAWS = """
import numpy as np
from reconrisk._src._jax import jax, INSTALLED
k = jax.random.key(11)
a = jax.jit(lambda k: jax.random.normal(k, (3, 1001)))(k)
b = jax.random.uniform(jax.random.fold_in(k, 7), (513,))
c = jax.random.bits(jax.random.split(k, 4)[2], (17,))
d = jax.jit(lambda k: jax.random.normal(k, (2**17 + 5,)))(jax.random.fold_in(k, 3))  # above the unroll threshold
np.save({out!r}, np.concatenate([np.ravel(a), np.ravel(b), np.ravel(c).astype(np.float64), np.ravel(d)]))
"""
_DRAW = "import sys; sys.path.insert(0, {src!r})" + _DRAWS + "print(INSTALLED)\n"


def test_draws_equal_jax_own_lowering(tmp_path):
    """The same draws in this process (the installed rule) and in a subprocess with JAX's own lowering
    (``RECONRISK_ROLLED_THREEFRY=1`` is read at import, hence the subprocess: one, not one per lowering)."""
    from reconrisk._src._jax import INSTALLED, jax

    src = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, "src"))
    out = {}
    path = str(tmp_path / "draw1.npy")
    env = dict(os.environ, RECONRISK_ROLLED_THREEFRY="1", JAX_PLATFORMS="cpu")
    res = subprocess.run([sys.executable, "-c", _DRAW.format(src=src, out=path)],
                         env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "False"
    out["1"] = np.load(path)
    assert INSTALLED
    path = str(tmp_path / "draw0.npy")
    with jax.default_device(jax.devices("cpu")[0]):
        exec(_DRAWS.format(out=path), {})
    out["0"] = np.load(path)
    assert out["0"].size == 3 * 1001 + 513 + 17 + 2**17 + 5
    np.testing.assert_array_equal(out["0"], out["1"])
