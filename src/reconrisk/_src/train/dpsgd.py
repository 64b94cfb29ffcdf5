"""DP-SGD as a composable step, and the training loop with a per-step hook.

One step (Hayes, Mahloujifar & Balle 2023, §2; spec_000 §1.1) is

    g_t = Σ_{z ∈ B_t} clip_C(∇_θ ℓ(θ_t, z)) + N(0, σ²C² I),     θ_{t+1} = θ_t − η · g_t / (q·N),

with B_t a Poisson sample (each point independently with probability q;
q = 1 is full batch). The noise is added to the **sum**; the update divides
by the expected batch size q·N (post-processing, as Opacus does), and the
transcript records the sum g_t itself.

The step is four stages, each a function a variant can reuse or replace::

    key_t ──► poisson_batch ──► batch_clipped_sum ──► noise_fn(release.noise) ──► dpsgd_update (optax)
              (mask, padded     (ghost clipping,      (Gaussian: + N(0, s²I),      (θ ← θ − η·v,
               index, valid)     train/clipping.py)     s = Release.noise_scale,    v ← μv + g/(qN))
                                                        traced; train/noise.py)
                        └──────────── StepInfo(t, params θ_t, batch, g_t, keys) ──► hooks
                                      (transcript, FIL accounting, attacks observe here)

* :func:`poisson_batch` and :func:`pad_members` are the one place a Poisson
  batch is drawn and padded to a static size (``cap``) for small q; the
  adversary's known-point batch and FIL accounting use the same helper.
* :func:`release_step` runs the first three stages and returns what the
  mechanism releases; :func:`dpsgd_step` adds the plain (momentum-free) update.
* :func:`dpsgd_update` is an ``optax.GradientTransformation`` (momentum
  included); with momentum 0 it is exactly θ − η·g/(qN).
* :func:`train` scans the step in jitted chunks and calls each
  :class:`StepHook` inside the scan with the parameters *before* the update,
  the batch and the keys; a hook's state rides in the scan carry and its
  per-step outputs are returned (the transcript is recorded by one).

:class:`StepConfig` holds only static choices (q, C, η, clip mode, noise
family, cap, normaliser, momentum); the noise scale ``noise_std`` is a traced
argument, so an ε grid compiles once.

Speed notes (XLA:CPU, profiled on the 2-core machine): the flat θ_t and g_t
are assembled by :func:`ravel` (in-place copies; ``ravel_pytree``'s
concatenate was emitted as a per-element operand search), and a
convolution's clipped sum runs on tap-major patches
(:func:`~reconrisk._src.train.clipping.clipped_grad_sum`); both give the same
numbers (ravel: bit for bit; tap-major: up to float rounding, CNN only). Clipping algebra lives in
:mod:`reconrisk._src.train.clipping`, transcript I/O in
:mod:`reconrisk._src.train.transcript` (both re-exported here).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Sequence

import numpy as np

from .. import _validate as v
from ..errors import ReconRiskError
from ..metrics import accuracy
from ..release import Release
from .clipping import (  # noqa: F401  (re-exported: the step's clipping stage)
    CLIP_MODES,
    clip_factors,
    clipped_grad_sum,
    clipped_grad_sum_feature_major,
    cross_entropy,
    feature_major,
    grad_inner_products,
    naive_clipped_sum,
    per_example_sq_norms,
    signals,
    weighted_grad_sum,
)
from .individual import finish_individual, individual_hooks
from .models import Model
from .noise import noise_fn
from .sampling import (  # noqa: F401  (re-exported: stage 1)
    OVERFLOW_MESSAGE, batch_cap, pad_members, poisson_batch, sample_batch,
)
from .step_types import Batch, StepConfig, StepHook, StepInfo  # noqa: F401  (re-exported)
from .transcript import Transcript, TranscriptWriter  # noqa: F401  (re-exported)
from .transcript import TranscriptSink as _TranscriptSink, transcript_meta as _transcript_meta

#: Default learning rate: θ moves by η · (mean clipped gradient + noise/(qN)).
DEFAULT_LEARNING_RATE = 2.0


# ----------------------------------------------------------------------------------------
# stage 2: the clipped sum over the batch
# ----------------------------------------------------------------------------------------
def batch_clipped_sum(model: Model, params, x, y, batch: Batch, clip_norm: float, mode: str = "hard"):
    """(Σ_{z∈B} clip_C(∇ℓ(θ, z)) as a pytree, per-row gradient norms) over a full mask or a padded gather."""
    if batch.index is None:
        return clipped_grad_sum(model, params, x, y, clip_norm, batch.mask, mode)
    return clipped_grad_sum(model, params, x[batch.index], y[batch.index], clip_norm, batch.valid, mode)


def masked_clipped_sum(model, params, x, y, mask, index, valid, cfg: "StepConfig"):
    """Compatibility form of :func:`batch_clipped_sum` taking the batch's parts and a :class:`StepConfig`."""
    return batch_clipped_sum(model, params, x, y, Batch(mask, index, valid, None), cfg.clip_norm, cfg.clip_mode)


# ----------------------------------------------------------------------------------------
# the static configuration and stage 4: the update (an optax transformation)
# ----------------------------------------------------------------------------------------
class MomentumState(NamedTuple):
    velocity: Any


def dpsgd_update(learning_rate: float, normalizer: float, momentum: float = 0.0):
    """The update as an ``optax.GradientTransformation``: ``v ← μv + g/normalizer``, ``θ ← θ − η v``.

    With ``momentum=0`` the update is ``−η·g/normalizer`` (no state), exactly
    the simulator's θ − η·g/(qN). Momentum is post-processing of the released
    g_t, so it changes no privacy analysis (Guo, Karrer, Chaudhuri & van der Maaten 2022 uses μ = 0.5).
    """
    from .._jax import jax
    import optax

    lr, mu, norm = learning_rate, momentum, normalizer
    tmap = jax.tree_util.tree_map

    def init(params):
        if mu == 0.0:
            return optax.EmptyState()
        return MomentumState(tmap(lambda p: jax.numpy.zeros_like(p), params))

    def update(grads, state, params=None):
        del params
        if mu == 0.0:
            return tmap(lambda g: -(lr * g / norm), grads), state
        vel = tmap(lambda g, u: mu * u + g / norm, grads, state.velocity)
        return tmap(lambda u: -(lr * u), vel), MomentumState(vel)

    return optax.GradientTransformation(init, update)


def step_optimizer(cfg: StepConfig):
    return dpsgd_update(cfg.learning_rate, cfg.normalizer, cfg.momentum)


# ----------------------------------------------------------------------------------------
# one step
# ----------------------------------------------------------------------------------------
def ravel(tree):
    """The flat vector of a pytree, in ``jax.flatten_util.ravel_pytree`` order (the same values).

    Written as in-place ``dynamic_update_slice`` copies of each leaf into one
    buffer: XLA:CPU emits ``ravel_pytree``'s concatenate as a loop that picks
    the operand of every element, which cost more than the whole first-layer
    matrix product of the 256-wide MLP's step (profiled); the copies are
    plain memory moves. Mixed dtypes fall back to ``ravel_pytree``.
    """
    from .._jax import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.flatten_util import ravel_pytree

    leaves = jax.tree_util.tree_leaves(tree)
    if not leaves or len({leaf.dtype for leaf in leaves}) != 1:
        return ravel_pytree(tree)[0]
    flat = jnp.zeros((sum(leaf.size for leaf in leaves),), leaves[0].dtype)
    offset = 0
    for leaf in leaves:
        flat = lax.dynamic_update_slice(flat, leaf.reshape(-1), (offset,))
        offset += leaf.size
    return flat


def step_keys(key, t):
    """(batch key, noise key) of step t: ``fold_in(fold_in(key, t), 0 | 1)``."""
    from .._jax import jax

    k = jax.random.fold_in(key, t)
    return jax.random.fold_in(k, 0), jax.random.fold_in(k, 1)


def _head_tail_clipped_sum(model: Model, params, head, x, y, batch: Batch, clip_norm: float, mode: str):
    """(sum, norms, head sum (flat)) over the rows ``head`` (hx, hy) followed by (x, y), full mask (no cap)."""
    from .._jax import jax
    import jax.numpy as jnp

    hx, hy = head
    k = hx.shape[0]
    head_sum = clipped_grad_sum_feature_major if feature_major(model) else clipped_grad_sum
    hsum, hnorms = head_sum(model, params, hx, hy, clip_norm, batch.mask[:k], mode)
    tsum, tnorms = clipped_grad_sum(model, params, x, y, clip_norm, batch.mask[k:], mode)
    summed = jax.tree_util.tree_map(jnp.add, hsum, tsum)
    return summed, jnp.concatenate([hnorms, tnorms]), ravel(hsum)


def release_step(model: Model, cfg: StepConfig, params, key, t, x, y, noise_std, head=None, weights=None):
    """Stages 1–3: (StepInfo with the released (θ_t, g_t), stats); no update.

    ``weights`` (n,): per-example contribution scales multiplying the batch membership
    (an individual filter's admissions, :mod:`reconrisk._src.train.individual`); None: all 1.

    ``noise_std`` is the noise scale of the release (σC for Gaussian noise), a
    traced scalar. ``stats`` holds the sum of per-example norms in the batch,
    the number clipped (norm > C), the batch size and the overflow flag.
    ``head=(hx, hy)`` (full-mask batches only, ``cfg.cap`` None): the training
    set is ``hx`` followed by ``x``; the clipped sum is evaluated over the two
    parts and the head's part comes back as ``StepInfo.head_sum``, so that an
    observer who needs it (the adversary's known points) reuses it instead of
    evaluating it again — and a head shared by vmapped runs stays unbatched.
    For an all-dense model the head's sum is computed feature-major
    (:func:`~reconrisk._src.train.clipping.clipped_grad_sum_feature_major`, the
    layout that suits a head shared by vmapped runs); the same sum up to float
    rounding.
    """
    import jax.numpy as jnp

    k_batch, k_noise = step_keys(key, t)
    n = x.shape[0] + (0 if head is None else head[0].shape[0])
    batch = sample_batch(k_batch, n, cfg)
    if weights is not None:
        batch = batch._replace(mask=batch.mask * weights,
                               valid=None if batch.index is None else batch.valid * weights[batch.index])
    head_sum = None
    if head is not None:
        if batch.index is not None:
            raise ReconRiskError("release_step(head=...) needs a full-mask batch (no cap)")
        summed, norms, head_sum = _head_tail_clipped_sum(model, params, head, x, y, batch, cfg.clip_norm, cfg.clip_mode)
    else:
        summed, norms = batch_clipped_sum(model, params, x, y, batch, cfg.clip_norm, cfg.clip_mode)
    flat_sum = ravel(summed)
    g = noise_fn(cfg.noise)(k_noise, flat_sum, noise_std)
    theta = ravel(params)
    member = batch.member
    stats = {
        "norm_sum": jnp.sum(norms * member),
        "clipped": jnp.sum((norms > cfg.clip_norm) * member),
        "members": jnp.sum(member),
        "overflow": batch.overflow,
    }
    return StepInfo(t, params, theta, g, batch, k_batch, k_noise, x, y, noise_std, head_sum, norms), stats


def apply_update(cfg: StepConfig, info: StepInfo, opt_state):
    """Stage 4: (new params, new optimizer state) from the released g_t."""
    import optax
    from jax.flatten_util import ravel_pytree

    _, unravel = ravel_pytree(info.params)
    updates, opt_state = step_optimizer(cfg).update(unravel(info.g), opt_state, info.params)
    return optax.apply_updates(info.params, updates), opt_state


def dpsgd_step(model: Model, cfg: StepConfig, params, key, t, x, y, noise_std):
    """One momentum-free DP-SGD step. Returns (new params, θ_t, g_t, batch mask, stats).

    ``θ_t`` and ``g_t`` are flat vectors (``jax.flatten_util.ravel_pytree``
    order); ``noise_std`` is σC (traced). With momentum use :func:`release_step`
    and :func:`apply_update` with an optimizer state.
    """
    import optax

    info, stats = release_step(model, cfg, params, key, t, x, y, noise_std)
    new_params, _ = apply_update(cfg, info, optax.EmptyState())
    return new_params, info.theta, info.g, info.batch.mask, stats


# ----------------------------------------------------------------------------------------
# hooks
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RecordTranscript(StepHook):
    """The transcript hook: records (θ_t, g_t, batch mask) of every step."""

    def step(self, state, info: StepInfo):
        return state, (info.theta, info.g, info.batch.mask.astype(bool))


# ----------------------------------------------------------------------------------------
# the loop
# ----------------------------------------------------------------------------------------
@dataclass
class TrainResult:
    params: object
    transcript: Transcript | None
    clipped_fraction: float
    mean_grad_norm: float
    hook_states: tuple = ()
    hook_outputs: tuple = ()
    opt_state: object = field(default=None, repr=False)
    norms: np.ndarray | None = None  # (n, T) with record_norms / a filter (train/individual.py)
    filtered: np.ndarray | None = None  # (n,) stopped by the individual filter
    individual_filter: object = None


def make_step_config(release: Release, n: int, learning_rate: float, clip_mode: str, trials: int = 1,
                     momentum: float = 0.0) -> StepConfig:
    """The static step configuration of ``release`` on n points (the cap covers ``trials`` runs)."""
    if not isinstance(release, Release) or not release.homogeneous:
        raise ReconRiskError("release must be a homogeneous reconrisk.Release (one noise multiplier and sample rate)")
    noise_fn(release.noise)  # refuses a family the simulator does not implement
    v.choice("clip_mode", clip_mode, CLIP_MODES)
    lr = v.positive("learning_rate", learning_rate)
    mu = v.in_range("momentum", momentum, 0.0, 1.0, low_open=False)
    q = release.sample_rate
    fixed = release.sampler == "fixed"
    size = 0
    if fixed:
        size = int(round(q * n))
        if size < 1 or abs(size - q * n) > 1e-9 * n:
            raise ReconRiskError(
                f"a fixed-batch release on {n} points needs sample_rate = batch_size/{n}; found sample_rate={q!r} "
                f"(q·n = {q * n:.6g} is not a whole batch)")
    return StepConfig(
        sample_rate=q,
        clip_norm=release.clip_norm,
        learning_rate=lr,
        clip_mode=clip_mode,
        cap=None if fixed else batch_cap(n, q, release.steps, trials),
        normalizer=max(q * n, 1e-12),
        noise=release.noise,
        momentum=float(mu),
        sampler="fixed" if fixed else "poisson",
        batch_size=size,
    )


def check_data(model: Model, x, y, name: str = "x"):
    """(x float32 (N, d), y int32 (N,)) or a ReconRiskError naming the shapes."""
    x = np.asarray(x, dtype=np.float32)
    y = np.asarray(y, dtype=np.int32)
    if x.ndim != 2 or x.shape[1] != model.input_dim or y.shape != (x.shape[0],) or x.shape[0] < 1:
        raise ReconRiskError(
            f"{name} must be (N, {model.input_dim}) with N ≥ 1 and its labels (N,); found {x.shape} and {y.shape}")
    return x, y


@functools.lru_cache(maxsize=32)
def _chunk_runner(model: Model, cfg: StepConfig, hooks: tuple):
    """jit(scan) over a chunk of steps; cached on the static parts, so repeated runs and σ values compile once."""
    from .._jax import jax

    def run_chunk(carry, ts, k_run, xs, ys, noise_std):
        def body(c, t):
            params, opt_state, states = c
            scales, states = None, list(states)
            for i, hook in enumerate(hooks):
                states[i], w = hook.weights(states[i], params, t, xs, ys)
                if w is not None:
                    scales = w if scales is None else scales * w
            info, stats = release_step(model, cfg, params, k_run, t, xs, ys, noise_std, weights=scales)
            new_states, outs = [], []
            for hook, st in zip(hooks, states):
                st, out = hook.step(st, info)
                new_states.append(st)
                outs.append(out)
            params, opt_state = apply_update(cfg, info, opt_state)
            return (params, opt_state, tuple(new_states)), (tuple(outs), stats)

        return jax.lax.scan(body, carry, ts)

    return jax.jit(run_chunk)


def train(
    model: Model,
    release: Release,
    x,
    y,
    *,
    seed: int = 0,
    key=None,
    learning_rate: float = DEFAULT_LEARNING_RATE,
    momentum: float = 0.0,
    clip_mode: str = "hard",
    params=None,
    record: bool = True,
    hooks: Sequence[StepHook] = (),
    hook_states: Sequence | None = None,
    runs: int = 1,
    chunk_steps: int = 256,
    transcript_path: str | os.PathLike | None = None,
    max_memory_bytes: int = 1 << 30,
    progress=None,
    record_norms: str | None = None,
    individual_filter=None,
) -> TrainResult:
    """Run DP-SGD as ``release`` describes on (x, y); record its transcript and call ``hooks`` every step.

    Keys: ``key`` (a JAX key) or ``PRNGKey(seed)``, split into (init, run);
    step t draws its batch and noise from ``step_keys(run, t)``. Steps run as a
    jitted ``lax.scan`` in chunks of ``chunk_steps`` (compiled once per static
    configuration); with ``transcript_path`` each chunk is streamed to an
    uncompressed ``.npz`` (and the returned transcript memory-maps it). Without
    a path, a transcript larger than ``max_memory_bytes`` is refused.
    ``hooks``/``hook_states``: see :class:`StepHook`; their final states and
    stacked outputs come back in the result. ``runs``: how many runs share
    the batch-overflow budget. ``progress(k)`` is called after each chunk of k steps.
    ``record_norms`` (``"batch"``, ``"step"``, ``"epoch"``) and ``individual_filter`` (an
    :class:`~reconrisk._src.individual.filter.IndividualFilter`): per-example norms and
    filtered training, :mod:`reconrisk._src.train.individual` (``result.norms``, ``.filtered``).
    """
    from .._jax import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    x, y = check_data(model, x, y)
    seed = v.integer("seed", seed, minimum=0)
    chunk_steps = v.integer("chunk_steps", chunk_steps, minimum=1)
    runs = v.integer("runs", runs, minimum=1)
    hooks = tuple(hooks)
    for h in hooks:
        if not isinstance(h, StepHook):
            raise ReconRiskError(f"hooks must be StepHook instances; found {h!r}")
    cfg = make_step_config(release, x.shape[0], learning_rate, clip_mode, trials=runs, momentum=momentum)
    k_init, k_run = jax.random.split(jax.random.PRNGKey(v.jax_seed(seed)) if key is None else key)
    if params is None:
        params = model.init(k_init)
    T = release.steps
    size = 4 * (2 * T + 1) * model.num_params + T * x.shape[0]
    if record and transcript_path is None and size > max_memory_bytes:
        raise ReconRiskError(
            f"the transcript would take {size / 2**20:.0f} MiB (> max_memory_bytes); pass transcript_path to stream it to disk"
        )
    if hook_states is None:
        hook_states = [h.init(params) for h in hooks]
    if len(hook_states) != len(hooks):
        raise ReconRiskError(f"hook_states must hold one state per hook ({len(hooks)}); found {len(hook_states)}")
    own = ()
    if record_norms is not None or individual_filter is not None:
        own = individual_hooks(model, release, cfg, x.shape[0], record_norms, individual_filter, clip_mode)
        hooks, hook_states = hooks + own, list(hook_states) + [h.init(params) for h in own]
    all_hooks = ((RecordTranscript(),) if record else ()) + hooks
    states = (((),) if record else ()) + tuple(hook_states)
    sink = None
    if record:
        meta = _transcript_meta(model, release, cfg, clip_mode, seed)
        sink = _TranscriptSink(transcript_path, model.num_params, x.shape[0], T, meta,
                               np.asarray(ravel_pytree(params)[0]))
    run_chunk = _chunk_runner(model, cfg, all_hooks)
    xs, ys = jnp.asarray(x), jnp.asarray(y)
    noise_std = jnp.float32(release.noise_scale)  # σC, or κ for VMF noise (the noise function's scalar)
    carry = (params, step_optimizer(cfg).init(params), states)
    totals = np.zeros(3)
    overflow = False
    outputs: list = []
    for start in range(0, T, chunk_steps):
        ts = jnp.arange(start, min(T, start + chunk_steps))
        carry, (outs, stats) = run_chunk(carry, ts, k_run, xs, ys, noise_std)
        totals += [float(stats[k].sum()) for k in ("norm_sum", "clipped", "members")]
        overflow |= bool(stats["overflow"].any())
        if record:
            sink.add(outs[0], np.asarray(ravel_pytree(carry[0])[0]))
        outputs.append(outs[1:] if record else outs)
        if progress is not None:
            progress(int(ts.shape[0]))
    if overflow:
        raise ReconRiskError(OVERFLOW_MESSAGE)
    params, opt_state, states = carry
    transcript = sink.close(np.asarray(ravel_pytree(params)[0])) if record else None
    hook_outputs = tuple(
        jax.tree_util.tree_map(lambda *a: np.concatenate([np.asarray(b) for b in a]), *[o[i] for o in outputs])
        for i in range(len(hooks))
    )
    denom = max(totals[2], 1.0)
    result = TrainResult(params, transcript, totals[1] / denom, totals[0] / denom,
                         tuple(states[1:] if record else states), hook_outputs, opt_state)
    if own:
        finish_individual(result, own, individual_filter, T)
    return result


def model_accuracy(model: Model, params, x, y) -> float:
    """Fraction of (x, y) the model classifies correctly (:func:`reconrisk._src.metrics.accuracy` of its argmax)."""
    import jax.numpy as jnp

    pred = jnp.argmax(model.logits(params, jnp.asarray(x, jnp.float32)), axis=1)
    return accuracy(np.asarray(pred), np.asarray(y))
