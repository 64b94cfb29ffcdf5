"""Per-example gradient norms and filtered training, as hooks on the DP-SGD trainer.

``train(..., record_norms=mode)`` gives ``result.norms`` (n, T) float32: example i's
clipped-gradient norm min(C, ‖∇ℓ(θ_t, z_i)‖) at step t, NaN where it was not observed
(:func:`reconrisk.bounds.individual.individual_analysis` takes NaN as C). Modes
(:data:`NORM_MODES`):

``"batch"``
    the sampled examples only, read from the norms the step already computes for its
    clipped sum (free); every other entry NaN.
``"step"``
    every example at every step: one extra forward/backward pass over the whole data per
    step (ghost norms from activations and back-propagated signals,
    :func:`reconrisk.train.clipping.per_example_sq_norms`; no per-example gradient).
``"epoch"``
    every example once per epoch (at steps t ≡ 0 mod ⌈1/q⌉), NaN in between: about one
    extra pass per epoch, the cost of the epoch's own batches.

``train(..., individual_filter=f)`` with an
:class:`~reconrisk.bounds.individual_filter.IndividualFilter` trains with a per-example
budget (Feldman & Zrnic 2021, individual Rényi filter): before each step's batch sum
every example's gradient norm **at θ_t** is computed over the whole data (the ``"step"``
pass; the filter's theorem charges the step whether or not the example is sampled, at
the norm it actually had), each example is admitted (scale 1) or stopped for good
(scale 0) by the filter's budget test, and the batch sum uses those scales. The filter's
bookkeeping (integer counts per sensitivity level, so the spent RDP is ``counts @
charges``) rides in the scan carry; float32 charges are rounded up, the budget down and
each norm inflated by ``NORM_ROUNDING`` before it is bucketed, so the float32 test is
sound for the float64 accounting (:data:`reconrisk.bounds.individual_filter.MARGIN`
covers the summation). After training ``result.individual_filter`` holds the state
(``filtered``, ``spent``, ``certified_rero``, …), ``result.filtered`` the stopped examples;
with ``record_norms="step"`` the filter's own norms are recorded (no second pass), and
``IndividualFilter.contributed(result.norms)`` zeroes each stopped example's steps from
its stop on (what it contributed).

Hard clipping only: the GELU soft clip can scale a gradient above C (Guo et al. 2022),
which no per-example accounting here covers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ReconRiskError
from .clipping import per_example_sq_norms, signals
from .dpsgd import StepHook

#: Norm recording modes of ``train(..., record_norms=)``.
NORM_MODES = ("batch", "step", "epoch")
#: Relative inflation of a float32 norm before bucketing (covers its rounding: ≤ 1e-6 relative).
NORM_ROUNDING = 1e-5


def all_norms(model, params, x, y, clip_norm: float):
    """min(C, ‖∇ℓ(θ, z_i)‖) for every row of (x, y) (float32 (n,)), from taps and signals (ghost norms)."""
    import jax.numpy as jnp

    taps, deltas, _ = signals(model, params, x, y)
    return jnp.minimum(jnp.sqrt(per_example_sq_norms(taps, deltas)), clip_norm)


def epoch_period(sample_rate: float) -> int:
    """Steps per epoch, ⌈1/q⌉ (one full-data norm pass per epoch in mode ``"epoch"``)."""
    return max(1, math.ceil(1.0 / sample_rate - 1e-9))


@dataclass(frozen=True)
class RecordNorms(StepHook):
    """Records per-example clipped-gradient norms (module docstring: ``mode``); output (n,) per step."""

    mode: str
    model: object
    clip_norm: float
    n: int
    period: int = 1

    def step(self, state, info):
        from .._jax import jax
        import jax.numpy as jnp

        nan = jnp.full((self.n,), jnp.nan, jnp.float32)
        if self.mode == "batch":
            norms = jnp.minimum(info.norms, self.clip_norm).astype(jnp.float32)
            batch = info.batch
            if batch.index is None:
                return state, jnp.where(batch.mask > 0, norms, nan)
            rows = jnp.where(batch.valid > 0, batch.index, self.n)  # padding rows are dropped
            return state, nan.at[rows].set(norms, mode="drop")
        if self.mode == "step":
            return state, all_norms(self.model, info.params, info.x, info.y, self.clip_norm).astype(jnp.float32)
        return state, jax.lax.cond(
            info.t % self.period == 0,
            lambda: all_norms(self.model, info.params, info.x, info.y, self.clip_norm).astype(jnp.float32),
            lambda: nan)


@dataclass(frozen=True)
class FilterHook(StepHook):
    """The individual filter inside the scan: ``weights`` admits or stops each example before the batch sum.

    State ``(counts (n, L) int32, active (n,) bool, stopped_at (n,) int32, last norms (n,) float32)``.
    Constants are tuples (the hook is hashable, a key of the compiled program): the
    sensitivity levels, the charges (L, A) rounded up to float32, the budget (A,) rounded down.
    """

    model: object
    clip_norm: float
    n: int
    levels: tuple
    charges: tuple
    budget: tuple
    margin: float
    record: bool = False
    steps: int = 0

    def init(self, params):
        import jax.numpy as jnp

        return (jnp.zeros((self.n, len(self.levels)), jnp.int32), jnp.ones((self.n,), bool),
                jnp.full((self.n,), self.steps, jnp.int32), jnp.zeros((self.n,), jnp.float32))

    def weights(self, state, params, t, x, y):
        import jax.numpy as jnp

        counts, active, stopped_at, _ = state
        norms = all_norms(self.model, params, x, y, self.clip_norm).astype(jnp.float32)
        levels = jnp.asarray(self.levels, jnp.float32)
        charges = jnp.asarray(self.charges, jnp.float32)
        u = jnp.minimum(norms / self.clip_norm, 1.0) * (1.0 + NORM_ROUNDING)
        k = jnp.clip(jnp.searchsorted(levels, u, side="left"), 1, len(self.levels) - 1)
        spent = counts.astype(jnp.float32) @ charges
        after = (spent + charges[k]) * (1.0 + self.margin)
        ok = active & jnp.all(after <= jnp.asarray(self.budget, jnp.float32)[None, :], axis=1)
        counts = counts.at[jnp.arange(self.n), k].add(ok.astype(jnp.int32))
        stopped_at = jnp.where(active & ~ok, t.astype(jnp.int32), stopped_at)
        return (counts, ok, stopped_at, norms), ok.astype(jnp.float32)

    def step(self, state, info):
        return state, (state[3] if self.record else ())


def _round_f32(a: np.ndarray, up: bool) -> np.ndarray:
    f = np.asarray(a, dtype=np.float32)
    bad = (f.astype(float) < a) if up else (f.astype(float) > a)
    return np.where(bad, np.nextafter(f, np.float32(np.inf if up else -np.inf)), f)


def individual_hooks(model, release, cfg, n: int, record_norms, individual_filter, clip_mode: str) -> tuple:
    """The hooks ``train`` appends for ``record_norms`` / ``individual_filter`` (in this order)."""
    from .. import _validate as v
    from ..bounds.individual_filter import IndividualFilter

    if clip_mode != "hard":
        raise ReconRiskError(f"per-example norms and the individual filter need clip_mode='hard' (the GELU soft clip "
                             f"can exceed C); found clip_mode={clip_mode!r}")
    mode = None if record_norms is None else v.choice("record_norms", record_norms, NORM_MODES)
    hooks = []
    if individual_filter is not None:
        if not isinstance(individual_filter, IndividualFilter):
            raise ReconRiskError(f"individual_filter must be a reconrisk IndividualFilter; found "
                                 f"{type(individual_filter).__name__}")
        f = individual_filter
        if f.release.dominating() != release.dominating() and f.release != release:
            raise ReconRiskError(f"individual_filter was built for {f.release!r}; training runs {release!r}")
        if f.n is not None:
            raise ReconRiskError("individual_filter has already been used (one filter per training run)")
        hooks.append(FilterHook(model, float(cfg.clip_norm), n, tuple(_round_f32(f.levels, up=True).tolist()),
                                tuple(map(tuple, _round_f32(f.charges, up=True).tolist())),
                                tuple(_round_f32(f.budget, up=False).tolist()), float(f.margin_jax),
                                record=mode == "step", steps=int(release.steps)))
        if mode == "step":
            mode = None
    if mode is not None:
        hooks.append(RecordNorms(mode, model, float(cfg.clip_norm), n, epoch_period(cfg.sample_rate)))
    return tuple(hooks)


def finish_individual(result, count: int, individual_filter, steps: int) -> None:
    """Move the individual hooks' outputs from ``result.hook_*`` to ``norms``, ``filtered``, ``individual_filter``."""
    states, outs = result.hook_states[-count:], result.hook_outputs[-count:]
    result.hook_states, result.hook_outputs = result.hook_states[:-count], result.hook_outputs[:-count]
    for st, out in zip(states, outs):
        if isinstance(out, np.ndarray) and out.ndim == 2:
            result.norms = np.ascontiguousarray(out.T.astype(np.float32))
    if individual_filter is not None:
        counts, active, stopped_at, _ = (np.asarray(a) for a in states[0])
        individual_filter.load_state(counts, active, steps)
        individual_filter.stopped_at = stopped_at.astype(np.int64)
        result.filtered = individual_filter.filtered
        result.individual_filter = individual_filter
