"""The noise stage of a DP-SGD step: one JAX function per mechanism, chosen by ``Release.noise``.

A noise function privatises the clipped-gradient **sum** of one step::

    noise_fn(key, summed, scale) -> released

``key`` is the step's noise key (a JAX PRNG key), ``summed`` the flat (P,)
float32 vector Σ_{z∈B_t} clip_C(∇ℓ(θ_t, z)) and ``scale`` the release's
noise level as a traced scalar (:attr:`reconrisk.Release.noise_scale`: the
standard deviation σC for the Gaussian family, the concentration κ for VMF), so that one compiled step serves every ε of a grid. The
function must be traceable (it runs inside ``jit``/``vmap``/``lax.scan``) and
draw all its randomness from ``key``.

Gaussian (Hayes, Mahloujifar & Balle 2023, §1.1)
    ``summed + N(0, scale² I)``.

The functions are attached to their mechanism classes (:func:`reconrisk._src.mechanisms.base.attach_simulator`),
so the mechanisms registry is the only table of noise families: a new family is a mechanism module (registered,
with a ``level_name``) plus one ``attach_simulator(ThatMechanism, fn)`` call here.
"""

from __future__ import annotations

from typing import Callable

from .._deprecated import warn_renamed
from ..mechanisms.base import Mechanism, attach_simulator, by_name, registered, simulator
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.vmf import vmf_noise_jax
from ..mechanisms.von_mises_fisher import VonMisesFisher

NoiseFn = Callable[..., object]


def gaussian(key, summed, scale):
    """``summed + N(0, scale² I)``: ``scale`` is the noise standard deviation σC (drawn in ``summed``'s dtype)."""
    from .._jax import jax

    noise = jax.random.normal(key, summed.shape, summed.dtype) * scale
    return summed + noise


def vmf(key, summed, scale):
    """Biswas et al. 2024, Alg. 2 (lines 7′–8′): a draw of VMF(g/‖g‖, κ) with concentration κ = ``scale`` (a unit vector).

    The whole gradient is flattened before normalising (one block: Prop. 3 of
    Biswas et al. 2024 — per-layer blocks inflate the RDP enormously).
    """

    return vmf_noise_jax(key, summed, scale).astype(summed.dtype)


attach_simulator(Gaussian, gaussian)
attach_simulator(VonMisesFisher, vmf)


def register_noise(name: str, fn: NoiseFn) -> None:
    """Deprecated: attach ``fn`` to the registered mechanism ``name`` (:func:`~reconrisk._src.mechanisms.base.attach_simulator`)."""
    warn_renamed("register_noise()", "reconrisk._src.mechanisms.base.attach_simulator()", "reconrisk")
    attach_simulator(by_name(name), fn)


def noise_families() -> tuple[str, ...]:
    """The noise families the simulator can add (the registered mechanisms with a simulator attached)."""
    return tuple(n for n, c in registered(Mechanism).items() if c.simulator is not None)


def noise_fn(name: str) -> NoiseFn:
    """The noise function of the family ``name``; a ReconRiskError names the implemented ones otherwise."""
    return simulator(name)
