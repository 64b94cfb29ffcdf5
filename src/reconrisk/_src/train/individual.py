"""Per-example gradient norms and filtered training, as hooks on the DP-SGD trainer.

``train(..., record_norms=mode)`` gives ``result.norms`` (n, T) float32: example i's
clipped-gradient norm min(C, ‖∇ℓ(θ_t, z_i)‖) at step t, NaN where it was not observed
(:func:`reconrisk._src.individual.privacy.individual_analysis` takes NaN as C). Modes
(:data:`NORM_MODES`):

``"batch"``
    the sampled examples only, read from the norms the step already computes for its
    clipped sum (free); every other entry NaN.
``"step"``
    every example at every step: one extra forward/backward pass over the whole data per
    step (ghost norms from activations and back-propagated signals,
    :func:`reconrisk._src.train.clipping.per_example_sq_norms`; no per-example gradient).
``"epoch"``
    every example once per epoch of ⌈1/q⌉ steps, NaN in between: step t evaluates the
    rows of slice t mod ⌈1/q⌉ of the data (⌈n/⌈1/q⌉⌉ rows, about one batch), so each example
    is observed once per epoch, at its slice's step — the cost of one extra pass per epoch,
    spread evenly (a whole pass every ⌈1/q⌉ steps under ``lax.cond`` measured slower).

``train(..., individual_filter=f)`` with an
:class:`~reconrisk._src.individual.filter.IndividualFilter` trains with a per-example
budget (Feldman & Zrnic 2021, individual Rényi filter): before each step's batch sum
every example's gradient norm **at θ_t** is computed over the whole data (the ``"step"``
pass; the filter's theorem charges the step whether or not the example is sampled, at
the norm it actually had), each example is admitted (scale 1) or stopped for good
(scale 0) by the filter's budget test, and the batch sum uses those scales. The filter's
bookkeeping (integer counts per sensitivity level, so the spent RDP is ``counts @
charges``) rides in the scan carry; float32 charges are rounded up, the budget down and
each norm inflated by ``NORM_ROUNDING`` before it is bucketed, so the float32 test is
sound for the float64 accounting (:data:`reconrisk._src.individual.filter.MARGIN`
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

from .. import _validate as v
from ..errors import ReconRiskError
from ..individual.filter import IndividualFilter
from .clipping import per_example_sq_norms, signals
from .step_types import StepHook

#: Norm recording modes of ``train(..., record_norms=)``.
NORM_MODES = ("batch", "step", "epoch")
#: Relative inflation of a float32 norm before bucketing (covers its rounding: ≤ 1e-6 relative).
NORM_ROUNDING = 1e-5


def all_norms(model, params, x, y, clip_norm: float):
    """min(C, ‖∇ℓ(θ, z_i)‖) for every row of (x, y) (float32 (n,)), from taps and signals (ghost norms)."""
    import jax.numpy as jnp

    taps, deltas, _ = signals(model, params, x, y, tap_major=True)  # the cheaper conv gather on CPU (the norm
    return jnp.minimum(jnp.sqrt(per_example_sq_norms(taps, deltas)), clip_norm)  # is the same in either order)


def epoch_period(sample_rate: float) -> int:
    """Steps per epoch, ⌈1/q⌉ (one full-data norm pass per epoch in mode ``"epoch"``)."""
    return max(1, math.ceil(1.0 / sample_rate - 1e-9))


@dataclass(frozen=True)
class RecordNorms(StepHook):
    """Records per-example clipped-gradient norms (module docstring: ``mode``).

    Per-step outputs are kept small, because a scan's stacked output of (n,) floats per step measured
    0.2–0.4 ms a step on CPU (more than the 10-unit MLP's whole step): ``"batch"`` with a padded gather
    and ``"epoch"`` output (norms, row indices) of the rows they evaluated; ``"step"`` outputs (n,) (it
    costs a full pass anyway). :func:`finish_individual` assembles ``result.norms`` (n, T).
    """

    mode: str
    model: object
    clip_norm: float
    n: int
    period: int = 1

    def step(self, state, info):
        from .._jax import jax
        import jax.numpy as jnp

        if self.mode == "batch":
            norms = jnp.minimum(info.norms, self.clip_norm).astype(jnp.float32)
            batch = info.batch
            if batch.index is None:
                return state, jnp.where(batch.mask > 0, norms, jnp.nan)
            return state, (norms, jnp.where(batch.valid > 0, batch.index, self.n).astype(jnp.int32))
        if self.mode == "step":
            return state, all_norms(self.model, info.params, info.x, info.y, self.clip_norm).astype(jnp.float32)
        m = -(-self.n // self.period)  # rows per slice (the last slice wraps around to the first rows)
        rows = ((info.t % self.period) * m + jnp.arange(m)) % self.n
        norms = all_norms(self.model, info.params, info.x[rows], info.y[rows], self.clip_norm)
        return state, (norms.astype(jnp.float32), rows.astype(jnp.int32))

    def assemble(self, state, out, steps: int) -> np.ndarray:
        """``result.norms`` (n, T) float32 from this hook's final state and stacked outputs."""
        if isinstance(out, tuple):  # (norms (T, m), rows (T, m)); row n is padding
            vals, rows = (np.asarray(a) for a in out)
            norms = np.full((self.n + 1, steps), np.nan, np.float32)
            norms[rows, np.broadcast_to(np.arange(steps)[:, None], rows.shape)] = vals
            return np.ascontiguousarray(norms[: self.n])
        return np.ascontiguousarray(np.asarray(out, dtype=np.float32).T)


@dataclass(frozen=True)
class FilterHook(StepHook):
    """The individual filter inside the scan: ``weights`` admits or stops each example before the batch sum.

    State ``(counts (n, L) int32, active (n,) bool, stopped_at (n,) int32, spent (n, A) float32, last
    norms (n,) float32)``. Constants are tuples (the hook is hashable, a key of the compiled program): the
    sensitivity levels, the charges (L, A) rounded up to float32, the budget (A,) rounded down. ``spent``
    is accumulated step by step (a matrix product counts @ charges every step cost more than the rest of
    the bookkeeping); t float32 additions of non-negative terms lose at most a relative t·2⁻²⁴, which
    ``margin`` covers (:func:`jax_margin`), so the exact float64 spent of the counts stays within the budget.
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
                jnp.full((self.n,), self.steps, jnp.int32), jnp.zeros((self.n, len(self.budget)), jnp.float32),
                jnp.zeros((self.n,), jnp.float32))

    def weights(self, state, params, t, x, y):
        import jax.numpy as jnp

        counts, active, stopped_at, spent, _ = state
        norms = all_norms(self.model, params, x, y, self.clip_norm).astype(jnp.float32)
        levels = jnp.asarray(self.levels, jnp.float32)
        charges = jnp.asarray(self.charges, jnp.float32)
        u = jnp.minimum(norms / self.clip_norm, 1.0) * (1.0 + NORM_ROUNDING)
        k = jnp.clip(jnp.searchsorted(levels, u, side="left"), 1, len(self.levels) - 1)
        after = spent + charges[k]
        ok = active & jnp.all(after * (1.0 + self.margin) <= jnp.asarray(self.budget, jnp.float32)[None, :], axis=1)
        spent = jnp.where(ok[:, None], after, spent)
        counts = counts + (ok[:, None] & (k[:, None] == jnp.arange(len(self.levels))[None, :])).astype(jnp.int32)
        stopped_at = jnp.where(active & ~ok, t.astype(jnp.int32), stopped_at)
        return (counts, ok, stopped_at, spent, norms), ok.astype(jnp.float32)

    def step(self, state, info):
        return state, (state[4] if self.record else ())


def _round_f32(a: np.ndarray, up: bool) -> np.ndarray:
    f = np.asarray(a, dtype=np.float32)
    bad = (f.astype(float) < a) if up else (f.astype(float) > a)
    return np.where(bad, np.nextafter(f, np.float32(np.inf if up else -np.inf)), f)


def jax_margin(margin: float, steps: int) -> float:
    """The float32 admission margin: the filter's own plus (T + 2)·2⁻²⁴ for T float32 additions of spent and
    the rounding of the test itself (see :class:`FilterHook`)."""
    return float(margin + 1.01 * (steps + 2) * 2.0**-24)


def individual_hooks(model, release, cfg, n: int, record_norms, individual_filter, clip_mode: str) -> tuple:
    """The hooks ``train`` appends for ``record_norms`` / ``individual_filter`` (in this order)."""

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
                                tuple(_round_f32(f.budget, up=False).tolist()), jax_margin(f.margin_jax, release.steps),
                                record=mode == "step", steps=int(release.steps)))
        if mode == "step":
            mode = None
    if mode is not None:
        period = epoch_period(cfg.sample_rate)
        hooks.append(RecordNorms(mode, model, float(cfg.clip_norm), n, period))
    return tuple(hooks)


def finish_individual(result, hooks: tuple, individual_filter, steps: int) -> None:
    """Move the individual hooks' outputs from ``result.hook_*`` to ``norms``, ``filtered``, ``individual_filter``."""
    count = len(hooks)
    states, outs = result.hook_states[-count:], result.hook_outputs[-count:]
    result.hook_states, result.hook_outputs = result.hook_states[:-count], result.hook_outputs[:-count]
    for hook, st, out in zip(hooks, states, outs):
        if isinstance(hook, RecordNorms):
            result.norms = hook.assemble(st, out, steps)
        elif hook.record:
            result.norms = np.ascontiguousarray(np.asarray(out, dtype=np.float32).T)
    if individual_filter is not None:
        counts, active, stopped_at, _, _ = (np.asarray(a) for a in states[0])
        individual_filter.load_state(counts, active, steps)
        individual_filter.stopped_at = stopped_at.astype(np.int64)
        result.filtered = individual_filter.filtered
        result.individual_filter = individual_filter
