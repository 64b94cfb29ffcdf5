"""Stage 1 of a DP-SGD step for every sampler a :class:`~reconrisk.release.Release` names.

``"poisson"`` (and ``"full"``, q = 1): :func:`reconrisk.train.dpsgd.poisson_batch`;
``"fixed"``: exactly ``batch_size`` points without replacement (:func:`fixed_batch`), the
sampler of :meth:`Release.fixed_batch <reconrisk.release.Release.fixed_batch>`, so an audit
at a fixed batch size is compared with the bound for that sampler.
"""

from __future__ import annotations

from .dpsgd import Batch, StepConfig, poisson_batch


def fixed_batch(key, n: int, size: int) -> Batch:
    """Exactly ``size`` of the n points, uniformly without replacement (the ``"fixed"`` sampler of a release).

    The first ``size`` entries of a uniform random permutation; full mask, no gather (the
    trials' shared-head evaluation needs one). The release is then analysed for replace-one
    neighbours (:meth:`reconrisk.release.Release.fixed_batch`).
    """
    from .._jax import jax
    import jax.numpy as jnp

    if size >= n:
        return Batch(jnp.ones((n,), jnp.float32), None, None, jnp.bool_(False))
    chosen = jax.random.permutation(key, n)[:size]
    mask = jnp.zeros((n,), jnp.float32).at[chosen].set(1.0)
    return Batch(mask, None, None, jnp.bool_(False))


def sample_batch(key, n: int, cfg: StepConfig) -> Batch:
    """Stage 1 for the configured sampler: Poisson (:func:`poisson_batch`) or fixed size (:func:`fixed_batch`)."""
    if cfg.sampler == "fixed":
        return fixed_batch(key, n, cfg.batch_size)
    return poisson_batch(key, n, cfg.sample_rate, cfg.cap)
