"""The types a DP-SGD step passes around: its static configuration, its batch, what a hook sees and the hook.

Plain data (no JAX at import): :class:`StepConfig` (the static choices, hashable for ``jax.jit``),
:class:`Batch` (stage 1's output), :class:`StepInfo` (what a :class:`StepHook` sees at step t) and
:class:`StepHook` itself. The stages that make and read them live above: the samplers in
:mod:`reconrisk._src.train.sampling`, the step and the loop in :mod:`reconrisk._src.train.dpsgd`, the per-example
hooks in :mod:`reconrisk._src.train.individual` (all re-exported by :mod:`reconrisk._src.train.dpsgd`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple


@dataclass(frozen=True)
class StepConfig:
    """Static choices of one DP-SGD step (hashable, for ``jax.jit``); σC is not here — it is traced."""

    sample_rate: float
    clip_norm: float
    learning_rate: float
    clip_mode: str = "hard"
    cap: int | None = None
    normalizer: float = 1.0  # the update uses g_t / normalizer (q·N)
    noise: str = "gaussian"  # the release's noise family (train/noise.py)
    momentum: float = 0.0
    sampler: str = "poisson"  # "poisson" or "fixed" (exactly batch_size rows, without replacement)
    batch_size: int = 0  # the fixed sampler's batch size


class Batch(NamedTuple):
    """A Poisson batch: ``mask`` (n,) float32 membership; with a cap, the padded gather ``index``/``valid`` (cap,)."""

    mask: Any
    index: Any
    valid: Any
    overflow: Any

    @property
    def member(self):
        """Per-row membership of the rows the step evaluates (``mask`` or ``valid``)."""
        return self.mask if self.index is None else self.valid


class StepInfo(NamedTuple):
    """What a hook sees at step t: θ_t (pytree and flat), the batch, the released g_t, the keys."""

    t: Any
    params: Any
    theta: Any
    g: Any
    batch: Batch
    k_batch: Any
    k_noise: Any
    x: Any
    y: Any
    noise_std: Any
    head_sum: Any = None  # with ``head``: the clipped sum over the head rows (flat)
    norms: Any = None  # per-row gradient norms of the rows the step evaluated (``batch.member`` says which count)


@dataclass(frozen=True)
class StepHook:
    """Something that watches every step inside the jitted scan (subclass; keep it hashable).

    ``init(params)`` gives the initial state (a pytree; or pass ``hook_states``
    to :func:`train`); ``step(state, info)`` returns (new state, per-step
    output pytree). Outputs are stacked over steps and returned by
    :func:`train` as numpy arrays.
    """

    def init(self, params):
        return ()

    def step(self, state, info: StepInfo):
        return state, ()

    def weights(self, state, params, t, x, y):
        """Before the batch sum: (state, per-example contribution scales (n,) or None); see release_step."""
        return state, None
