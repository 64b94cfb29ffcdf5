"""The noise stage of a DP-SGD step: one function per noise family, chosen by ``Release.noise``.

A noise function privatises the clipped-gradient **sum** of one step::

    noise_fn(key, summed, scale) -> released

``key`` is the step's noise key (a JAX PRNG key), ``summed`` the flat (P,)
float32 vector Σ_{z∈B_t} clip_C(∇ℓ(θ_t, z)) and ``scale`` the release's
noise level as a traced scalar (:attr:`reconrisk.Release.noise_scale`: the
standard deviation σC for the Gaussian family, the concentration κ for VMF), so that one compiled step serves every ε of a grid. The
function must be traceable (it runs inside ``jit``/``vmap``/``lax.scan``) and
draw all its randomness from ``key``.

Gaussian (Hayes, Mahloujifar & Balle 2023, §2, spec_000 §1.1)
    ``summed + N(0, scale² I)``.

Adding a noise family (e.g. Biswas et al.'s (2024) von Mises–Fisher mechanism)
    1. write ``def vmf(key, summed, scale): ...`` in the module of that
       mechanism (it may read its own parameters from ``scale`` or close
       over static ones);
    2. call ``register_noise("vmf", vmf)`` when that module is imported; for a
       family of :data:`reconrisk._src.release.NOISE_FAMILIES` this also marks it
       implemented (:func:`reconrisk._src.release.register_noise_family`), so
       ``Release(noise="vmf")`` is accepted from then on;
    3. nothing else changes: :func:`reconrisk._src.train.dpsgd.make_step_config`
       copies ``release.noise`` into the static :class:`StepConfig` and the
       step calls :func:`noise_fn` of it.
"""

from __future__ import annotations

from typing import Callable

from ..errors import ReconRiskError
from ..mechanisms.vmf import vmf_noise_jax
from ..release import NOISE_FAMILIES, register_noise_family

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


_REGISTRY: dict[str, NoiseFn] = {"gaussian": gaussian, "vmf": vmf}


def register_noise(name: str, fn: NoiseFn) -> None:
    """Make ``fn`` the noise function of the family ``name`` (replacing an earlier one)."""
    if not isinstance(name, str) or not name:
        raise ReconRiskError(f"noise family name must be a non-empty string; found {name!r}")
    if not callable(fn):
        raise ReconRiskError(f"noise function for {name!r} must be callable; found {fn!r}")
    _REGISTRY[name] = fn

    if name in NOISE_FAMILIES:
        register_noise_family(name)


def noise_families() -> tuple[str, ...]:
    """The noise families the simulator can add."""
    return tuple(_REGISTRY)


def noise_fn(name: str) -> NoiseFn:
    """The noise function of the family ``name``; a ReconRiskError names the implemented ones otherwise."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ReconRiskError(
            f"noise must be one of {', '.join(map(repr, _REGISTRY))} for the simulator; found {name!r}"
        ) from None
