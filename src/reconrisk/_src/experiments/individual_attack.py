"""The per-example audit's attack check: the prior-aware attack on the most and the least exposed deciles.

For a group G of training examples (the decile with the largest, or the smallest, ex-post ReRo_i of
:func:`reconrisk._src.experiments.individual.per_example_audit`), each trial draws a uniform prior of n
candidates from G and a target among them, and trains on the recorded run's training set S **without the
n − 1 other candidates** (D₋ = S minus the prior, known to the adversary; the target added): the run the
target is attacked in differs from the recorded run by those n − 1 examples only, so the recorded norms
describe it. The informed adversary is Hayes, Mahloujifar & Balle 2023's prior-aware attack (Alg. 2 at
q = 1; :func:`reconrisk._src.attacks.prior_aware.observe_step` on the released (θ_t, g_t) with the exact known
sum), on the same release, learning rate and model. A trial is one ``lax.scan`` that trains with
:func:`reconrisk._src.train.dpsgd.release_step` on S as a shared head weighted 0 on the prior (one compiled
program for every trial, vmapped) and the target as the one-row tail; the head's clipped sum is the
adversary's known sum. Every trial also returns its target's gradient norm at every step.

**What the attack is compared with.** Let R_z be example z's ReRo curve (success probability as a function of the
baseline β of an attacker who never saw the run). A uniform prior over z₁…z_n gives success
(1/n) Σ_j R_{z_j}(β_j) with Σ β_j = 1. At q = 1 every example's composition is Gaussian (μ_i-GDP, Dong,
Roth & Su 2022, Cor. 3.3), so the curves are ordered by μ_i and the largest is concave: the success is at
most max_j R_{z_j}(1/n) — *if* the curves were fixed in advance. So the attack is compared with the decile's
largest ReRo_i(κ = 1/n) (``largest_rero``) and with the mean over trials of the largest ReRo_i among each
trial's own candidates (``prior_largest_rero``). Both are *ex-post* numbers computed from the run's own norms:
estimates, neither DP guarantees nor bounds; the attack is a check of them, not a proof.
``trial_target_rero`` is the mean ReRo_i of the targets computed from their norms in the trials themselves.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import _validate as v
from .._deprecated import warn_renamed
from ..attacks.prior_aware import attack_scores, observe_step
from ..errors import ReconRiskError
from ..individual.privacy import individual_analysis
from ..metrics import SuccessRate
from ..train.dpsgd import apply_update, make_step_config, release_step
from ..train.models import get_model
from .trials import draw_priors, PRIOR_AWARE, trial_batch_size

GROUPS = ("most", "least")


@dataclass
class GroupAttack:
    """The attack on one group: success with its Clopper–Pearson interval beside the group's ex-post ReRo_i."""

    group: str  # "most" or "least" exposed decile
    members: np.ndarray  # positions in the training set
    attack: str
    rate: SuccessRate
    largest_rero: float  # max ex-post ReRo_i(κ) over the group (an estimate)
    prior_largest_rero: float  # mean over trials of the max ex-post ReRo_i among the trial's candidates
    target_rero: float  # mean ex-post ReRo_i(κ) of the trials' targets (recorded run)
    trial_target_rero: float  # the same from the targets' norms in the trials themselves
    worst_case: float  # the release's worst-case ReRo(κ)
    seconds: float = 0.0

    @property
    def holds(self) -> bool:
        """The attack's success rate is at most the group's largest ex-post ReRo_i."""
        return self.rate.rate <= self.largest_rero

    @property
    def bound(self) -> float:
        """Deprecated name of :attr:`largest_rero` (an ex-post estimate, not a bound)."""
        warn_renamed("GroupAttack.bound", "GroupAttack.largest_rero", "reconrisk")
        return self.largest_rero

    @property
    def prior_bound(self) -> float:
        """Deprecated name of :attr:`prior_largest_rero` (an ex-post estimate, not a bound)."""
        warn_renamed("GroupAttack.prior_bound", "GroupAttack.prior_largest_rero", "reconrisk")
        return self.prior_largest_rero

    def to_dict(self) -> dict:
        return {"group": self.group, "decile": f"{self.group} exposed 10%", "size": int(self.members.size),
                "attack_name": self.attack, "attack": self.rate.to_dict(), "ex_post_rero_max": self.largest_rero,
                "ex_post_rero_prior_max": self.prior_largest_rero, "ex_post_rero_target_mean": self.target_rero,
                "ex_post_rero_trial_target_mean": self.trial_target_rero, "worst_case_rero": self.worst_case,
                "success_le_ex_post_max": self.holds, "positions": self.members.tolist(), "seconds": self.seconds,
                "note": "ex_post_*: estimates from this run's own norms, neither DP guarantees nor bounds; the "
                        "attack is compared with the group's largest ex-post ReRo_i(kappa), which would bound a "
                        "uniform prior over its members were the norms fixed in advance (q = 1: ordered Gaussian "
                        "curves)"}


def group_members(rero: np.ndarray, group: str, fraction: float = 0.1) -> np.ndarray:
    """Positions of the ``fraction`` most (``"most"``) or least (``"least"``) exposed examples by ReRo_i."""
    rero = np.asarray(rero, dtype=float)
    v.choice("group", group, GROUPS)
    fraction = v.in_range("fraction", fraction, 0.0, 1.0, low_open=True, high_open=False)
    k = max(1, int(round(fraction * rero.size)))
    order = np.lexsort((np.arange(rero.size), rero))  # least exposed first, ties by position
    return np.sort(order[-k:] if group == "most" else order[:k])


@functools.lru_cache(maxsize=8)
def _trial_function(model, cfg, steps: int, n_train: int):
    """jit(vmap(trial)) over (key, prior positions, target); S, σ and σC are shared runtime arguments."""
    from .._jax import jax
    import jax.numpy as jnp
    import optax

    unravel = model.unravel()

    def trial(sigma, noise_std, sx, sy, key, prior_pos, target):
        px, py = sx[prior_pos], sy[prior_pos]
        tx, ty = px[target][None], py[target][None]
        weights = jnp.concatenate([jnp.ones((n_train,), jnp.float32).at[prior_pos].set(0.0), jnp.ones((1,))])
        k_init, k_run, _ = jax.random.split(key, 3)

        def body(p, t):
            info, _ = release_step(model, cfg, p, k_run, t, tx, ty, noise_std, head=(sx, sy), weights=weights)
            p2, _ = apply_update(cfg, info, optax.EmptyState())
            obs = observe_step(model, cfg, info.theta, info.g, None, None, None, px, py, unravel,
                               known_sum=info.head_sum)
            return p2, (obs, info.norms[n_train])

        _, (obs, norms) = jax.lax.scan(body, model.init(k_init), jnp.arange(steps))
        scores = attack_scores(obs, sample_rate=cfg.sample_rate, noise_multiplier=sigma, clip_norm=cfg.clip_norm)
        return jnp.stack([jnp.argmax(scores[k]) == target for k in PRIOR_AWARE]), norms

    return jax.jit(jax.vmap(trial, in_axes=(None, None, None, None, 0, 0, 0)))


def group_attack(audit, group: str, *, trials: int = 1000, attack: str = "alg2", fraction: float = 0.1,
                 seed: int | None = None, progress: Callable[[int], None] | None = None,
                 batch_trials: int | None = None) -> GroupAttack:
    """Attack targets drawn from one decile of ``audit``
    (a :class:`~reconrisk._src.experiments.individual.PerExampleAudit`)."""

    from .._jax import jax
    import jax.numpy as jnp

    t0 = time.perf_counter()
    s = audit.setting
    rel = s.release
    trials = v.integer("trials", trials, minimum=1)
    v.choice("attack", attack, PRIOR_AWARE)
    members = group_members(audit.rero, group, fraction)
    if members.size < s.prior_size:
        raise ReconRiskError(f"a {fraction:g} group of {audit.n} examples holds {members.size} examples, fewer than "
                             f"the prior size {s.prior_size}; use more training examples or a larger fraction")
    seed = s.seed if seed is None else v.integer("seed", seed, minimum=0)
    n = audit.n
    cfg = make_step_config(rel, n - s.prior_size + 1, s.learning_rate, "hard", trials=trials)
    if cfg.cap is not None:
        raise ReconRiskError(f"the attack check trains on full-mask batches (q = 1, or q large enough that no padded "
                             f"gather is needed); found sample_rate={rel.sample_rate:g} on {n} examples")
    model = get_model(s.model, audit.image_shape, int(audit.num_classes))
    fn = _trial_function(model, cfg, rel.steps, n)
    prior_idx, targets = draw_priors(members.size, s.prior_size, trials, seed)
    prior_pos = members[prior_idx]  # (trials, n) positions in S
    base = jax.random.PRNGKey(v.jax_seed(seed))
    shared = (jnp.float32(rel.noise_multiplier), jnp.float32(rel.noise_std), jnp.asarray(audit.x, jnp.float32),
              jnp.asarray(audit.y, jnp.int32))
    bs = trial_batch_size(rel.steps, s.prior_size, trials, 0, batch_trials)
    ok, norms = [], []
    for lo in range(0, trials, bs):
        ids = np.minimum(np.arange(lo, lo + bs), trials - 1)  # pad the last call by repeating a trial
        keys = jax.vmap(lambda i: jax.random.fold_in(base, i))(jnp.asarray(ids))
        out, nrm = fn(*shared, keys, jnp.asarray(prior_pos[ids], jnp.int32), jnp.asarray(targets[ids], jnp.int32))
        m = min(bs, trials - lo)
        ok.append(np.asarray(out)[:m, PRIOR_AWARE.index(attack)])
        norms.append(np.asarray(nrm)[:m])
        if progress is not None:
            progress(m)
    ok, norms = np.concatenate(ok), np.concatenate(norms).astype(np.float64)
    target_pos = prior_pos[np.arange(trials), targets]
    trial = individual_analysis(rel, np.minimum(norms, rel.clip_norm), buckets=s.buckets)
    return GroupAttack(group, members, attack, SuccessRate.from_outcomes(ok), float(np.max(audit.rero[members])),
                       float(np.mean(audit.rero[prior_pos].max(axis=1))), float(np.mean(audit.rero[target_pos])),
                       float(np.mean(trial.rero(s.kappa))), float(audit.worst_rero.upper), time.perf_counter() - t0)


def decile_attacks(audit, *, trials: int = 1000, attack: str = "alg2", groups=GROUPS,
                   progress: Callable[[int], None] | None = None, batch_trials: int | None = None) -> list[GroupAttack]:
    """:func:`group_attack` on the most and the least exposed deciles (``trials`` each)."""
    return [group_attack(audit, g, trials=trials, attack=attack, progress=progress, batch_trials=batch_trials)
            for g in groups]
