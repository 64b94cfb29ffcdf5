"""Informed-adversary trials, vectorised (Hayes, Mahloujifar & Balle 2023, §3.1, §4, App. A): data split, priors, jitted trial batches.

One trial: a fixed known set D₋ (drawn once from the dataset), a fresh
uniform prior of n candidates (drawn from the remaining points, or uniform
noise), a target drawn from the prior, DP-SGD on D₋ ∪ {target}, then the
attacks; success is exact match. A batch of trials is one
``jit(vmap(trial))`` call, and inside a trial the steps are one ``lax.scan``
that trains with the shared step (:func:`reconrisk._src.train.dpsgd.dpsgd_step`)
and lets the adversary observe each released step (θ_t, g_t, known batch
mask) as it comes, so no transcript is held in memory. The adversary's
per-step computation is exactly :func:`reconrisk._src.attacks.prior_aware.observe_step`
— the function the transcript-based attack uses — and the known-gradient
deduction is :func:`~reconrisk._src.attacks.prior_aware.deduct_known` for every
attack. With a full-mask batch (no cap: q = 1, or q large) the clipped sum
over D₋ is a function of (θ_t, D₋, the known rows of the mask) only — exactly
what the adversary recomputes — so it is evaluated once
(``release_step(head=(D₋ x, D₋ y))``) and serves both the trainer's sum and
the adversary's deduction; D₋ then stays an unbatched operand under ``vmap``
over trials (one large matrix product per layer instead of one per trial).
This roughly halves the work of a q = 1 trial and changes the trainer's sum
only by float rounding (the default audit's successes are unchanged). For an
all-dense model that shared sum is computed feature-major
(:func:`reconrisk._src.train.clipping.clipped_grad_sum_feature_major`: examples on
the minor axis, so the vmapped (trials, units, |D₋|) arrays need no transpose
between the matrix products and the elementwise stages; 2.2× fewer CPU-seconds
per trial, the default audit's JSON unchanged). With a cap the adversary
recomputes the deduction from its own padded gather.

The compiled trial functions are cached on the static configuration; σ and
σC are traced arguments, so an ε grid compiles once.

Randomness: the data split and the priors come from
``numpy.random.default_rng([seed, …])``; trial t uses the JAX key
``fold_in(PRNGKey(seed), t)`` for initialisation, batches and noise. The same
seed gives the same numbers, whatever the vmap batch size.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import _validate as v
from ..attacks.gradient_inversion import gradient_inversion, nearest_neighbour
from ..attacks.prior_aware import attack_scores, deduct_known, observe_step
from ..data import mean_pairwise_distance, uniform_noise_prior
from ..errors import ReconRiskError
from ..train.dpsgd import apply_update, dpsgd_step, make_step_config, OVERFLOW_MESSAGE, release_step
from ..train.models import get_model

PRIOR_KINDS = ("data", "uniform")
PRIOR_AWARE = ("alg2", "alg3", "loglik", "no_deduction")
DEFAULT_KNOWN_SIZE = 999


# ----------------------------------------------------------------------------------------
# data split and priors
# ----------------------------------------------------------------------------------------
def _unique(dataset):
    """Drop duplicate (image, label) rows, so that exact match means the same candidate."""
    key = np.concatenate([dataset.x, dataset.y[:, None].astype(np.float32)], axis=1)
    _, first = np.unique(key, axis=0, return_index=True)
    return np.sort(first)


def split_dataset(dataset, prior_size: int, known_size: int | None, seed: int):
    """(known_x, known_y, pool_x, pool_y): a fixed D₋ and the pool priors are drawn from."""
    known, pool = split_indices(dataset, prior_size, known_size, seed)
    return dataset.x[known], dataset.y[known], dataset.x[pool], dataset.y[pool]


def split_indices(dataset, prior_size: int, known_size: int | None, seed: int):
    """(known, pool): indices into ``dataset`` of D₋ and of the pool (distinct rows, a seeded permutation)."""
    keep = _unique(dataset)
    n = keep.size
    if prior_size > n - 1:
        raise ReconRiskError(
            f"prior_size must be in [2, {n - 1}] for dataset {dataset.name!r} of {n} distinct points; found {prior_size}"
        )
    if known_size is None:
        known_size = min(DEFAULT_KNOWN_SIZE, n - prior_size)
    if known_size + prior_size > n:
        raise ReconRiskError(
            f"known_size + prior_size must be <= {n} (distinct points in {dataset.name!r}); "
            f"found {known_size} + {prior_size}"
        )
    perm = np.random.default_rng([seed, 0]).permutation(keep)
    return perm[:known_size], perm[known_size:]


def draw_priors(pool_size: int, prior_size: int, trials: int, seed: int):
    """(prior indices (trials, n) into the pool, target positions (trials,))."""
    idx = np.empty((trials, prior_size), dtype=np.int64)
    target = np.empty(trials, dtype=np.int64)
    for t in range(trials):  # trial t is the same whatever the number of trials
        rng = np.random.default_rng([seed, 1, prior_size, t])
        idx[t] = rng.choice(pool_size, prior_size, replace=False)
        target[t] = rng.integers(0, prior_size)
    return idx, target


# ----------------------------------------------------------------------------------------
# vectorised trials
# ----------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=16)
def _trial_functions(model, cfg, steps: int, n_known: int, inversion: tuple):
    """jit(vmap(...)) trial functions for the prior-aware attacks and for gradient inversion.

    Cached on the static configuration; σ and the data are runtime arguments, so
    an ε grid compiles once.
    """
    from .._jax import jax
    import jax.numpy as jnp

    import optax

    inv_steps, inv_restarts, inv_lr = inversion
    shared = cfg.cap is None and n_known > 0  # full-mask batches: one evaluation of the known points' clipped sum
    unravel = model.unravel()
    names = PRIOR_AWARE

    def train_setup(kx, ky, key, prior_x, prior_y, target):
        x = jnp.concatenate([kx, prior_x[target][None]])
        y = jnp.concatenate([ky, prior_y[target][None]])
        k_init, k_run, k_gi = jax.random.split(key, 3)
        return cfg, x, y, model.init(k_init), k_run, k_gi

    def stats_summary(stats):
        return jnp.stack([stats["norm_sum"].sum(), stats["clipped"].sum(), stats["members"].sum(),
                          stats["overflow"].any().astype(jnp.float32)])

    def prior_aware_trial(sigma, noise_std, kx, ky, key, prior_x, prior_y, target):
        c, x, y, params, k_run, _ = train_setup(kx, ky, key, prior_x, prior_y, target)

        def body(p, t):
            if shared:
                info, stats = release_step(model, c, p, k_run, t, x[n_known:], y[n_known:], noise_std, head=(kx, ky))
            else:
                info, stats = release_step(model, c, p, k_run, t, x, y, noise_std)
            p2, _ = apply_update(c, info, optax.EmptyState())
            # the adversary: released (θ_t, g_t), the known rows of the batch mask, D₋, the prior; without a cap the
            # known points' clipped sum (a function of θ_t, D₋ and the mask only) is evaluated once, for both
            obs = observe_step(model, c, info.theta, info.g, info.batch.mask[:n_known], kx, ky, prior_x, prior_y,
                               unravel, known_sum=info.head_sum)
            return p2, (obs, stats)

        _, (obs, stats) = jax.lax.scan(body, params, jnp.arange(steps))
        scores = attack_scores(obs, sample_rate=c.sample_rate, noise_multiplier=sigma, clip_norm=c.clip_norm)
        success = jnp.stack([jnp.argmax(scores[k]) == target for k in names])
        return success, stats_summary(stats)

    def inversion_trial(sigma, noise_std, kx, ky, key, prior_x, prior_y, target):
        c, x, y, params, k_run, k_gi = train_setup(kx, ky, key, prior_x, prior_y, target)

        def body(p, t):
            p2, theta, g, mask, stats = dpsgd_step(model, c, p, k_run, t, x, y, noise_std)
            gbar = deduct_known(model, c, unravel(theta), g, mask[:n_known], kx, ky)
            return p2, (theta, gbar, stats)

        _, (thetas, gbars, stats) = jax.lax.scan(body, params, jnp.arange(steps))
        z, _ = gradient_inversion(
            model, unravel, thetas, gbars, prior_y[target], k_gi, clip_norm=c.clip_norm,
            steps=inv_steps, restarts=inv_restarts, learning_rate=inv_lr, clip_mode=c.clip_mode,
        )
        guess = nearest_neighbour(z, prior_x)
        err = jnp.mean((z - prior_x[target]) ** 2)
        return jnp.stack([(guess == target).astype(jnp.float32), err]), stats_summary(stats)

    axes = (None, None, None, None, 0, 0, 0, 0)
    return jax.jit(jax.vmap(prior_aware_trial, in_axes=axes)), jax.jit(jax.vmap(inversion_trial, in_axes=axes))


def trial_batch_size(steps: int, prior_size: int, trials: int, n_known: int, requested: int | None) -> int:
    """Trials per vmapped call: keep the stacked per-step observations (T × n × 4 floats per trial) near 64 MiB."""
    if requested is not None:
        return v.integer("batch_trials", requested, minimum=1)
    per_trial = 16 * steps * (prior_size + 1) + 4 * steps * (n_known + 1)
    return int(max(1, min(trials, 64, (64 << 20) // max(per_trial, 1))))


@dataclass
class TrialOutcomes:
    """Per-trial success of each attack, gradient-inversion errors, and the trainer's summed statistics."""

    outcomes: dict
    errors: np.ndarray | None
    norm_sum: float
    clipped: float
    members: float
    known_size: int


class _Inputs:
    """Host-side trial inputs (keys, priors, targets) for slices of the trial range."""

    def __init__(self, setting, dataset, pool_x, pool_y):
        from .._jax import jax

        s = setting
        self.prior = s.prior
        self.pool_x, self.pool_y = pool_x, pool_y
        self.prior_idx, self.targets = draw_priors(pool_x.shape[0], s.prior_size, s.trials, s.seed)
        if s.prior == "uniform":
            rng = np.random.default_rng([s.seed, 2, s.prior_size])
            dist = mean_pairwise_distance(pool_x, rng)
            self.noise_x = np.stack([uniform_noise_prior(s.prior_size, dataset.dim, rng, mean_distance=dist)
                                     for _ in range(s.trials)])
            self.noise_y = rng.integers(0, dataset.num_classes, (s.trials, s.prior_size)).astype(np.int32)
        self.base_key = jax.random.PRNGKey(v.jax_seed(s.seed))
        self.trials = s.trials

    def batch(self, lo: int, size: int):
        from .._jax import jax
        import jax.numpy as jnp

        ids = np.minimum(np.arange(lo, lo + size), self.trials - 1)  # pad the last batch by repeating a trial
        keys = jax.vmap(lambda i: jax.random.fold_in(self.base_key, i))(jnp.asarray(ids))
        if self.prior == "uniform":
            px, py = self.noise_x[ids], self.noise_y[ids]
        else:
            px, py = self.pool_x[self.prior_idx[ids]], self.pool_y[self.prior_idx[ids]]
        return keys, jnp.asarray(px), jnp.asarray(py), jnp.asarray(self.targets[ids].astype(np.int32))


def run_trials(setting, dataset, *, progress: Callable[[int], None] | None = None,
               batch_trials: int | None = None) -> TrialOutcomes:
    """Run ``setting.trials`` trials of the requested attacks on ``setting.release``."""
    import jax.numpy as jnp

    s = setting
    release = s.release
    model = get_model(s.model, dataset.image_shape, dataset.num_classes)
    known_x, known_y, pool_x, pool_y = split_dataset(dataset, s.prior_size, s.known_size, s.seed)
    n_known = known_x.shape[0]
    cfg = make_step_config(release, n_known + 1, s.learning_rate, s.clip_mode, trials=s.trials)
    inversion = (s.inversion_steps, s.inversion_restarts, s.inversion_learning_rate)
    pa_fn, gi_fn = _trial_functions(model, cfg, release.steps, n_known, inversion)
    traced = (jnp.float32(release.noise_multiplier), jnp.float32(release.noise_std),
              jnp.asarray(known_x), jnp.asarray(known_y))
    inputs = _Inputs(s, dataset, pool_x, pool_y)
    want_pa = any(a != "gradient_inversion" for a in s.attacks)
    want_gi = "gradient_inversion" in s.attacks
    bs = trial_batch_size(release.steps, s.prior_size, s.trials, n_known, batch_trials)
    outcomes: dict = {}
    stats = np.zeros(4)
    errors = None
    if want_pa:
        ok, st = _run_batches(pa_fn, traced, inputs, bs, progress if not want_gi else None)
        stats += st
        for j, name in enumerate(PRIOR_AWARE):
            outcomes[name] = ok[:, j]
    if want_gi:
        out, st = _run_batches(gi_fn, traced, inputs, max(1, min(bs, 16)), progress)
        if not want_pa:
            stats += st
        outcomes["gradient_inversion"] = out[:, 0] > 0.5
        errors = out[:, 1].astype(np.float64)
    if stats[3] > 0:
        raise ReconRiskError(OVERFLOW_MESSAGE)
    return TrialOutcomes(outcomes, errors, float(stats[0]), float(stats[1]), float(stats[2]), n_known)


def _run_batches(fn, traced, inputs: _Inputs, bs: int, progress):
    """(stacked per-trial outputs, summed stats (4,)) over all trials, ``bs`` trials per call."""
    res, stats = [], np.zeros(4)
    pending = None
    for lo in range(0, inputs.trials, bs):
        n_this = min(bs, inputs.trials - lo)
        call = fn(*traced, *inputs.batch(lo, bs))  # dispatched asynchronously
        if pending is not None:
            _collect(pending, res, progress)
        pending = (call, n_this)
    _collect(pending, res, progress)
    out = np.concatenate([r[0] for r in res])
    for r in res:
        stats += r[1].sum(axis=0)
    return out, stats


def _collect(pending, res, progress):
    (out, st), n_this = pending
    res.append((np.asarray(out)[:n_this], np.asarray(st)[:n_this]))
    if progress is not None:
        progress(n_this)
