"""Stage 1 of a DP-SGD step for every sampler a :class:`~reconrisk._src.release.Release` names.

``"poisson"`` (and ``"full"``, q = 1): :func:`poisson_batch`, padded to a static size for small q
(:func:`batch_cap`, :func:`pad_members`: the one padding helper);
``"fixed"``: exactly ``batch_size`` points without replacement (:func:`fixed_batch`), the
sampler of :meth:`Release.fixed_batch <reconrisk._src.release.Release.fixed_batch>`, so an audit
at a fixed batch size is compared with the bound for that sampler.
"""

from __future__ import annotations

import numpy as np

from .step_types import Batch, StepConfig

#: Probability budget for a Poisson batch overflowing the padded batch size.
_OVERFLOW_PROB = 1e-12
OVERFLOW_MESSAGE = "a Poisson batch exceeded the padded batch size (probability < 1e-12); rerun with another seed"


def batch_cap(n: int, sample_rate: float, steps: int, trials: int = 1) -> int | None:
    """Padded batch size for Poisson sampling, or None to mask the full dataset.

    With q small the step gathers at most ``cap`` sampled points instead of
    evaluating all N; ``cap`` is chosen so that a batch larger than it has
    probability < 1e-12 over all steps and trials (if it happens anyway the
    run raises instead of silently dropping points).
    """
    if sample_rate >= 1.0:
        return None
    from scipy import stats

    budget = _OVERFLOW_PROB / (steps * trials)
    counts = np.arange(n + 1)
    tail = stats.binom.sf(counts, n, sample_rate)  # P(batch size > c); accurate far into the tail
    cap = int(counts[np.argmax(tail <= budget)]) if (tail <= budget).any() else n
    return None if cap * 2 > n else max(cap, 1)


def pad_members(mask, cap: int | None):
    """(index (cap,), valid (cap,) float32, count) of the nonzero entries of ``mask``, padded with row 0.

    The one padding helper: the trainer's batch, the adversary's known batch
    and FIL accounting all gather through it. ``cap=None`` gives (None, None, count).
    """
    import jax.numpy as jnp

    member = mask > 0
    count = jnp.sum(member)
    if cap is None:
        return None, None, count
    (index,) = jnp.nonzero(member, size=cap, fill_value=0)
    return index, (jnp.arange(cap) < count).astype(jnp.float32), count


def poisson_batch(key, n: int, sample_rate: float, cap: int | None) -> Batch:
    """Each of n points independently with probability q; gathered into ``cap`` rows when q is small."""
    from .._jax import jax
    import jax.numpy as jnp

    if sample_rate >= 1.0:
        return Batch(jnp.ones((n,), jnp.float32), None, None, jnp.bool_(False))
    mask = jax.random.bernoulli(key, sample_rate, (n,))
    index, valid, count = pad_members(mask, cap)
    overflow = jnp.bool_(False) if cap is None else count > cap
    return Batch(mask.astype(jnp.float32), index, valid, overflow)


def fixed_batch(key, n: int, size: int) -> Batch:
    """Exactly ``size`` of the n points, uniformly without replacement (the ``"fixed"`` sampler of a release).

    The first ``size`` entries of a uniform random permutation; full mask, no gather (the
    trials' shared-head evaluation needs one). The release is then analysed for replace-one
    neighbours (:meth:`reconrisk._src.release.Release.fixed_batch`).
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
