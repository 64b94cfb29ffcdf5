"""The informed-adversary trial loop behind ``reconrisk audit`` (seed 000, §3.1, §4, App. A).

One trial: a fixed known set D₋ (drawn once from the dataset), a fresh
uniform prior of n candidates (drawn from the remaining points, or uniform
noise), a target drawn from the prior, DP-SGD on D₋ ∪ {target}, then the
attacks; success is exact match. Trials are vectorised: a batch of trials is
one ``jit(vmap(trial))`` call, and inside a trial the steps are one
``lax.scan`` that trains and lets the adversary observe each released step
(θ_t, g_t, known batch mask) as it comes, so no transcript is held in memory.
The adversary's per-step computation is exactly
:func:`reconrisk.attacks.prior_aware.observe_step` — the function the
transcript-based :func:`~reconrisk.attacks.prior_aware.prior_aware_attack`
uses — and reads only what DP-SGD releases plus D₋ and the prior (the
tests check both paths agree). The known points' clipped gradients are
recomputed by the adversary, not borrowed from the trainer.

Randomness: the data split and the priors come from
``numpy.random.default_rng([seed, …])``; trial t uses the JAX key
``fold_in(PRNGKey(seed), t)`` for initialisation, batches and noise. The same
seed gives the same numbers, whatever the vmap batch size.
"""

from __future__ import annotations

import functools
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

from .. import _validate as v
from ..errors import ReconRiskError
from ..metrics import SuccessRate

ATTACKS = ("alg2", "alg3", "loglik", "no_deduction", "gradient_inversion")
PRIOR_KINDS = ("data", "uniform")
DEFAULT_KNOWN_SIZE = 999


@dataclass(frozen=True)
class AuditSetting:
    """One point of an audit: a DP-SGD configuration and how to attack it."""

    noise_multiplier: float
    sample_rate: float = 1.0
    steps: int = 100
    clip_norm: float = 0.1
    prior_size: int = 10
    trials: int = 1000
    known_size: int | None = None  # default: min(999, dataset size − prior size)
    epsilon: float | None = None
    delta: float = 1e-5
    model: str = "mlp"
    learning_rate: float = 2.0
    clip_mode: str = "hard"
    prior: str = "data"
    attacks: tuple[str, ...] = ("alg3",)
    seed: int = 0
    inversion_steps: int = 300
    inversion_restarts: int = 5
    inversion_learning_rate: float = 0.01

    def __post_init__(self) -> None:
        from ..release import Release

        Release(self.noise_multiplier, self.sample_rate, self.steps, self.clip_norm)  # validates σ, q, T, C
        v.integer("prior_size", self.prior_size, minimum=2)
        v.integer("trials", self.trials, minimum=1)
        if self.known_size is not None:
            v.integer("known_size", self.known_size, minimum=0)
        if self.epsilon is not None:
            v.positive("epsilon", self.epsilon)
        v.probability_open("delta", self.delta)
        v.positive("learning_rate", self.learning_rate)
        v.choice("clip_mode", self.clip_mode, ("hard", "gelu"))
        v.choice("prior", self.prior, PRIOR_KINDS)
        v.integer("seed", self.seed, minimum=0)
        if not self.attacks:
            raise ReconRiskError("attacks must name at least one attack; found none")
        for a in self.attacks:
            v.choice("attack", a, ATTACKS)
        v.integer("inversion_steps", self.inversion_steps, minimum=1)
        v.integer("inversion_restarts", self.inversion_restarts, minimum=1)
        v.positive("inversion_learning_rate", self.inversion_learning_rate)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["attacks"] = list(self.attacks)
        return d


@dataclass
class SettingResult:
    """Attack success rates beside the certified bound for one setting."""

    setting: AuditSetting
    epsilon: float
    kappa: float
    rero_lower: float
    rero_upper: float
    rates: dict[str, SuccessRate]
    known_size: int
    clipped_fraction: float
    mean_grad_norm: float
    seconds: float
    mse: dict | None = None
    extra: dict = field(default_factory=dict)

    @property
    def primary(self) -> str:
        return self.setting.attacks[0]

    def to_dict(self) -> dict:
        s = self.setting
        out = {
            "epsilon": self.epsilon,
            "delta": s.delta,
            "noise_multiplier": s.noise_multiplier,
            "sample_rate": s.sample_rate,
            "steps": s.steps,
            "clip_norm": s.clip_norm,
            "prior_size": s.prior_size,
            "kappa": self.kappa,
            "known_size": self.known_size,
            "rero_lower": self.rero_lower,
            "rero_upper": self.rero_upper,
            "attack_name": self.primary,
            "attack": self.rates[self.primary].to_dict(),
            "attacks": {k: r.to_dict() for k, r in self.rates.items()},
            "clipped_fraction": self.clipped_fraction,
            "mean_grad_norm": self.mean_grad_norm,
            "seconds": self.seconds,
        }
        if self.mse is not None:
            out["gradient_inversion_mse"] = self.mse
        return out


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
    known, pool = perm[:known_size], perm[known_size:]
    return dataset.x[known], dataset.y[known], dataset.x[pool], dataset.y[pool]


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
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    from ..attacks.gradient_inversion import gradient_inversion, nearest_neighbour
    from ..attacks.prior_aware import attack_scores, deduct_known, observe_step
    from ..train.dpsgd import dpsgd_step

    inv_steps, inv_restarts, inv_lr = inversion
    _, unravel = ravel_pytree(model.init(jax.random.PRNGKey(0)))
    names = ("alg2", "alg3", "loglik", "no_deduction")

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
            p2, theta, g, mask, stats = dpsgd_step(model, c, p, k_run, t, x, y, noise_std)
            # the adversary: released (θ_t, g_t), the known rows of the batch mask, D₋, the prior
            obs = observe_step(model, c, theta, g, mask[:n_known], kx, ky, prior_x, prior_y, unravel)
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
    return (jax.jit(jax.vmap(prior_aware_trial, in_axes=axes)),
            jax.jit(jax.vmap(inversion_trial, in_axes=axes)), names)


def _batch_size(setting, n_known: int, requested: int | None) -> int:
    if requested is not None:
        return v.integer("batch_trials", requested, minimum=1)
    # keep the stacked per-step observations (T × n × 4 floats per trial) near 64 MiB
    per_trial = 16 * setting.steps * (setting.prior_size + 1) + 4 * setting.steps * (n_known + 1)
    return int(max(1, min(setting.trials, 64, (64 << 20) // max(per_trial, 1))))


def run_setting(
    setting: AuditSetting,
    dataset,
    *,
    progress: Callable[[int], None] | None = None,
    batch_trials: int | None = None,
) -> SettingResult:
    """Run ``setting.trials`` informed-adversary trials and compare with the ReRo bound."""
    import jax
    import jax.numpy as jnp

    from .. import accounting, rero_bound
    from ..data import mean_pairwise_distance, uniform_noise_prior
    from ..release import Release
    from ..train.dpsgd import make_step_config
    from ..train.models import get_model

    t_start = time.perf_counter()
    s = setting
    release = Release(s.noise_multiplier, s.sample_rate, s.steps, s.clip_norm)
    model = get_model(s.model, dataset.image_shape, dataset.num_classes)
    known_x, known_y, pool_x, pool_y = split_dataset(dataset, s.prior_size, s.known_size, s.seed)
    n_known = known_x.shape[0]
    cfg = make_step_config(release, n_known + 1, s.learning_rate, s.clip_mode, trials=s.trials)
    inversion = (s.inversion_steps, s.inversion_restarts, s.inversion_learning_rate)
    pa_fn, gi_fn, names = _trial_functions(model, cfg, s.steps, n_known, inversion)
    sigma = jnp.float32(release.noise_multiplier)  # traced: an ε grid compiles once
    noise_std = jnp.float32(release.noise_std)
    kx, ky = jnp.asarray(known_x), jnp.asarray(known_y)
    want_pa = any(a != "gradient_inversion" for a in s.attacks)
    want_gi = "gradient_inversion" in s.attacks

    prior_idx, targets = draw_priors(pool_x.shape[0], s.prior_size, s.trials, s.seed)
    if s.prior == "uniform":
        rng = np.random.default_rng([s.seed, 2, s.prior_size])
        dist = mean_pairwise_distance(pool_x, rng)
        noise_x = np.stack([uniform_noise_prior(s.prior_size, dataset.dim, rng, mean_distance=dist)
                            for _ in range(s.trials)])
        noise_y = rng.integers(0, dataset.num_classes, (s.trials, s.prior_size)).astype(np.int32)
    base_key = jax.random.PRNGKey(s.seed)

    def batch_inputs(lo, hi, size):
        ids = np.arange(lo, lo + size)
        ids = np.minimum(ids, hi - 1)  # pad the last batch by repeating a trial (results dropped)
        keys = jax.vmap(lambda i: jax.random.fold_in(base_key, i))(jnp.asarray(ids))
        if s.prior == "uniform":
            px, py = noise_x[ids], noise_y[ids]
        else:
            px, py = pool_x[prior_idx[ids]], pool_y[prior_idx[ids]]
        return keys, jnp.asarray(px), jnp.asarray(py), jnp.asarray(targets[ids].astype(np.int32))

    outcomes = {}
    stats_total = np.zeros(4)
    bs = _batch_size(s, n_known, batch_trials)
    if want_pa:
        succ = []
        for lo in range(0, s.trials, bs):
            n_this = min(bs, s.trials - lo)
            ok, st = pa_fn(sigma, noise_std, kx, ky, *batch_inputs(lo, s.trials, bs))
            succ.append(np.asarray(ok)[:n_this])
            stats_total += np.asarray(st)[:n_this].sum(axis=0)
            if progress is not None:
                progress(n_this if not want_gi else 0)
        ok = np.concatenate(succ)
        for j, name in enumerate(names):
            outcomes[name] = ok[:, j]
    mse = None
    if want_gi:
        gi_bs = max(1, min(bs, 16))
        res = []
        for lo in range(0, s.trials, gi_bs):
            n_this = min(gi_bs, s.trials - lo)
            out, st = gi_fn(sigma, noise_std, kx, ky, *batch_inputs(lo, s.trials, gi_bs))
            res.append(np.asarray(out)[:n_this])
            if not want_pa:
                stats_total += np.asarray(st)[:n_this].sum(axis=0)
            if progress is not None:
                progress(n_this)
        out = np.concatenate(res)
        outcomes["gradient_inversion"] = out[:, 0] > 0.5
        errs = out[:, 1].astype(np.float64)
        mse = {"mean": float(errs.mean()), "std": float(errs.std(ddof=1)) if errs.size > 1 else 0.0,
               "median": float(np.median(errs))}
    if stats_total[3] > 0:
        raise RuntimeError("a Poisson batch exceeded the padded batch size (probability < 1e-12); rerun with another seed")

    rates = {name: SuccessRate.from_outcomes(outcomes[name]) for name in _report_order(s.attacks)}
    bound = rero_bound(s.noise_multiplier, s.sample_rate, s.steps, prior_size=s.prior_size)
    eps = s.epsilon if s.epsilon is not None else accounting.epsilon(s.noise_multiplier, s.sample_rate, s.steps, s.delta)
    members = max(stats_total[2], 1.0)
    return SettingResult(
        setting=s,
        epsilon=float(eps),
        kappa=1.0 / s.prior_size,
        rero_lower=float(bound.lower),
        rero_upper=float(bound.upper),
        rates=rates,
        known_size=n_known,
        clipped_fraction=float(stats_total[1] / members),
        mean_grad_norm=float(stats_total[0] / members),
        seconds=time.perf_counter() - t_start,
        mse=mse,
    )


def _report_order(attacks) -> tuple[str, ...]:
    """The requested attacks, primary first (all prior-aware variants cost the same pass)."""
    return tuple(dict.fromkeys(attacks))


def calibrated_settings(
    epsilons=None,
    noise_multipliers=None,
    *,
    sample_rate: float = 1.0,
    steps: int = 100,
    delta: float = 1e-5,
    accountant: str = "pld",
    **kwargs,
) -> list[AuditSetting]:
    """One :class:`AuditSetting` per ε (σ calibrated with ``accountant``) or per given σ."""
    from .. import accounting

    if (epsilons is None) == (noise_multipliers is None):
        raise ReconRiskError("give either epsilons or noise_multipliers")
    out = []
    if epsilons is not None:
        for eps in epsilons:
            eps = v.positive("epsilon", eps)
            sigma = accounting.noise_multiplier_for_epsilon(eps, sample_rate, steps, delta, accountant)
            out.append(AuditSetting(sigma, sample_rate, steps, epsilon=eps, delta=delta, **kwargs))
    else:
        for sigma in noise_multipliers:
            out.append(AuditSetting(v.positive("noise_multiplier", sigma), sample_rate, steps, delta=delta, **kwargs))
    return out


def run_audit(settings, dataset, *, progress=None, batch_trials=None) -> list[SettingResult]:
    """Run several settings (e.g. an ε grid) on one dataset."""
    return [run_setting(s, dataset, progress=progress, batch_trials=batch_trials) for s in settings]


def total_trials(settings) -> int:
    return sum(s.trials for s in settings)
