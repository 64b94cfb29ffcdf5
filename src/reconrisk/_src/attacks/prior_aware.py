"""Prior-aware reconstruction attacks on DP-SGD transcripts (Hayes, Mahloujifar & Balle 2023, §3.4, §4.3, App. E–G).

The informed adversary knows the prior π = {z_1 … z_n} (uniform), the fixed
training set D₋, the released iterates θ_t and privatised gradients g_t, and —
for q < 1 — which *known* points were in each batch (spec_000 §2.4; the
target's own membership stays hidden). It removes the known points'
clipped gradients,

    ḡ_t = g_t − Σ_{z ∈ D₋ ∩ B_t} clip_C(∇ℓ(θ_t, z)),

and scores every candidate against every step in one vectorised pass
(:func:`observe_step`, vmapped over steps). All inner products come from the
layers' activations and back-propagated signals (see
:mod:`reconrisk._src.train.dpsgd`); no per-example gradient is formed.

Scores (each divided by C², the unit-mean normalisation of Hayes, Mahloujifar & Balle 2023, App. A,
so that a step containing the target contributes ~N(1, σ²) when every
gradient is clipped):

* ``alg2`` — Algorithm 2: O[i] = Σ_t ⟨clip_C(∇ℓ(θ_t, z_i)), ḡ_t⟩ / C².
* ``alg3`` — Algorithm 3 (App. F): the sum of the top ⌈qT⌉ per-step values
  (rounded **up** when qT is not an integer); equals ``alg2`` when q = 1.
* ``loglik`` — App. G: s_z = Σ_t ln(1 − q + q·exp(−((l_t^z)² − l_t²)/(2σ²C²)))
  with l_t = ‖ḡ_t‖ and l_t^z = ‖ḡ_t − clip_C(∇ℓ(θ_t, z))‖. **Departure from
  the printed paper:** the paper prints ``+ l_t²``; the likelihood ratio of
  N(g^z, σ²C²I) against N(0, σ²C²I) has ``− l_t²`` (spec_000 §2.4), and the
  noise std is σC for general C (the paper assumes C = 1).
* ``no_deduction`` — the App. E ablation: Alg. 2 with g_t in place of ḡ_t.

The guess is the argmax; success is exact match with the target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..errors import ReconRiskError
from ..train.clipping import CLIP_MODES, clip_factors, grad_inner_products, per_example_sq_norms, signals
from ..train.dpsgd import Batch, StepConfig, batch_cap, batch_clipped_sum, pad_members
from ..train.models import Model

PRIOR_AWARE_ATTACKS = ("alg2", "alg3", "loglik", "no_deduction")


def top_k_count(sample_rate: float, steps: int) -> int:
    """⌈qT⌉, robust to float error (0.07·100 is 7, not 8)."""
    return max(1, min(steps, math.ceil(sample_rate * steps - 1e-9)))


def known_batch(known_mask, cap):
    """Index/validity of the known points the adversary must subtract (padded gather when q is small)."""
    index, valid, _ = pad_members(known_mask, cap)
    return index, valid


def deduct_known(model: Model, cfg: StepConfig, params, g, known_mask, known_x, known_y):
    """ḡ_t = g_t − Σ_{z ∈ D₋ ∩ B_t} clip_C(∇ℓ(θ_t, z)) (flat), recomputed from what the adversary knows.

    The one known-gradient deduction: the prior-aware attacks and the
    gradient-inversion trials both call it. ``known_mask`` is the batch
    membership of the known points at this step (the released rows only).
    """
    from jax.flatten_util import ravel_pytree

    if known_x.shape[0] == 0:
        return g
    index, valid = known_batch(known_mask, cfg.cap)
    batch = Batch(known_mask, index, valid, None)
    known_sum, _ = batch_clipped_sum(model, params, known_x, known_y, batch, cfg.clip_norm, cfg.clip_mode)
    return g - ravel_pytree(known_sum)[0]


def observe_step(model: Model, cfg: StepConfig, theta, g, known_mask, known_x, known_y, cand_x, cand_y, unravel,
                 known_sum=None):
    """Per-step statistics of every candidate, computed only from what the adversary sees.

    ``theta``, ``g``: the released iterate and privatised gradient (flat).
    ``known_mask``: batch membership of the known points at this step.
    ``known_sum``: Σ_{z ∈ D₋ ∩ B_t} clip_C(∇ℓ(θ_t, z)) (flat) when it has
    already been evaluated from the same (θ_t, D₋, mask) — the simulator
    shares that one evaluation with its trainer (a deterministic function of
    what the adversary sees, so sharing it gives the adversary nothing more);
    None: :func:`deduct_known` computes it.
    Returns a dict with ``ip`` (n,) = ⟨clip(∇ℓ(θ, z_i)), ḡ⟩, ``ip_raw`` (n,) =
    ⟨clip(∇ℓ(θ, z_i)), g⟩, ``cand_sq`` (n,) = ‖clip(∇ℓ(θ, z_i))‖² and
    ``gbar_sq`` = ‖ḡ‖².
    """
    from .._jax import jax
    import jax.numpy as jnp

    params = unravel(theta)
    if known_sum is None:
        gbar = deduct_known(model, cfg, params, g, known_mask, known_x, known_y)
    else:
        gbar = g - known_sum
    taps, deltas, _ = signals(model, params, cand_x, cand_y)
    sq = per_example_sq_norms(taps, deltas)
    scale = clip_factors(sq, cfg.clip_norm, cfg.clip_mode)
    vectors = jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), unravel(gbar), unravel(g))
    ips = grad_inner_products(taps, deltas, vectors) * scale[:, None]
    return {"ip": ips[:, 0], "ip_raw": ips[:, 1], "cand_sq": sq * scale**2, "gbar_sq": jnp.sum(gbar * gbar)}


def attack_scores(obs, *, sample_rate: float, noise_multiplier: float, clip_norm: float, xp=None):
    """Scores of every attack from stacked per-step observations (leading axis T, then n).

    Works with numpy or jax arrays (``xp`` = the array module; inferred).
    """
    if xp is None:
        import jax.numpy as xp  # noqa: N813
    ip = obs["ip"] / clip_norm**2
    steps = ip.shape[-2]
    k = top_k_count(sample_rate, steps)
    if k >= steps:
        top = ip.sum(axis=-2)
    else:
        top = -xp.sort(-ip, axis=-2)[..., :k, :].sum(axis=-2)
    # App. G with the corrected sign: −((l^z)² − l²) = 2⟨g^z, ḡ⟩ − ‖g^z‖².
    expo = (2.0 * obs["ip"] - obs["cand_sq"]) / (2.0 * (noise_multiplier * clip_norm) ** 2)
    if sample_rate >= 1.0:
        ll = expo.sum(axis=-2)
    else:
        ll = xp.logaddexp(math.log1p(-sample_rate), math.log(sample_rate) + expo).sum(axis=-2)
    return {
        "alg2": ip.sum(axis=-2),
        "alg3": top,
        "loglik": ll,
        "no_deduction": obs["ip_raw"].sum(axis=-2) / clip_norm**2,
    }


@dataclass(frozen=True)
class PriorAwareResult:
    """Scores (n,) and the guessed candidate index for each attack."""

    scores: dict
    guesses: dict
    observations: dict

    def to_dict(self) -> dict:
        return {"guesses": {k: int(g) for k, g in self.guesses.items()},
                "scores": {k: np.asarray(s).tolist() for k, s in self.scores.items()}}


def prior_aware_attack(
    model: Model,
    transcript,
    known_x,
    known_y,
    prior_x,
    prior_y,
    *,
    clip_norm: float | None = None,
    noise_multiplier: float | None = None,
    sample_rate: float | None = None,
    clip_mode: str = "hard",
    known_index=None,
    chunk_steps: int = 128,
) -> PriorAwareResult:
    """Run Algorithms 2/3, App. G and the no-deduction ablation on a :class:`Transcript`.

    ``known_x``/``known_y`` are the training points the adversary knows;
    ``known_index`` their columns in ``transcript.masks`` (default: the first
    ``len(known_x)`` training points). σ, q and C default to the release
    recorded in the transcript. Steps are processed in chunks of
    ``chunk_steps``, each vmapped, so a memory-mapped transcript is read
    piece by piece.
    """
    from .._jax import jax
    import jax.numpy as jnp

    rel = transcript.meta.get("release", {})
    clip_norm = v.positive("clip_norm", clip_norm if clip_norm is not None else rel.get("clip_norm"))
    noise_multiplier = v.positive(
        "noise_multiplier", noise_multiplier if noise_multiplier is not None else rel.get("noise_multiplier")
    )
    sample_rate = v.sample_rate("sample_rate", sample_rate if sample_rate is not None else rel.get("sample_rate"))
    v.choice("clip_mode", clip_mode, CLIP_MODES)
    chunk_steps = v.integer("chunk_steps", chunk_steps, minimum=1)
    known_x = jnp.asarray(np.asarray(known_x, np.float32).reshape(-1, model.input_dim))
    known_y = jnp.asarray(np.asarray(known_y, np.int32).reshape(-1))
    prior_x = jnp.asarray(np.asarray(prior_x, np.float32).reshape(-1, model.input_dim))
    prior_y = jnp.asarray(np.asarray(prior_y, np.int32).reshape(-1))
    if prior_x.shape[0] < 1 or prior_y.shape[0] != prior_x.shape[0]:
        raise ReconRiskError(f"prior must hold ≥ 1 candidate with one label each; found {prior_x.shape[0]} and {prior_y.shape[0]}")
    n_known = known_x.shape[0]
    cols = np.arange(n_known) if known_index is None else np.asarray(known_index, dtype=np.int64)
    if cols.shape != (n_known,) or (n_known and (cols.min() < 0 or cols.max() >= transcript.masks.shape[1])):
        raise ReconRiskError("known_index must give one transcript column per known point")
    if transcript.thetas.shape[1] != model.num_params:
        raise ReconRiskError(f"transcript has {transcript.thetas.shape[1]} parameters; model has {model.num_params}")
    cap = batch_cap(max(n_known, 1), sample_rate, transcript.steps)
    if cap is not None and n_known:
        largest = max(int(np.asarray(transcript.masks[sl])[:, cols].sum(axis=1).max())
                      for sl in (slice(i, i + chunk_steps) for i in range(0, transcript.steps, chunk_steps)))
        cap = None if largest > cap else cap  # never drop a known point from the subtraction
    cfg = StepConfig(sample_rate, clip_norm, 1.0, clip_mode, cap)
    unravel = model.unravel()

    @jax.jit
    def chunk_obs(thetas, grads, masks):
        f = lambda th, g, m: observe_step(model, cfg, th, g, m, known_x, known_y, prior_x, prior_y, unravel)  # noqa: E731
        return jax.vmap(f)(thetas, grads, masks)

    parts = []
    for start in range(0, transcript.steps, chunk_steps):
        sl = slice(start, min(transcript.steps, start + chunk_steps))
        masks = np.asarray(transcript.masks[sl])[:, cols].astype(np.float32)
        parts.append(chunk_obs(jnp.asarray(np.asarray(transcript.thetas[sl])), jnp.asarray(np.asarray(transcript.grads[sl])),
                               jnp.asarray(masks)))
    obs = {k: np.concatenate([np.asarray(p[k]) for p in parts]) for k in parts[0]}
    scores = attack_scores(obs, sample_rate=sample_rate, noise_multiplier=noise_multiplier, clip_norm=clip_norm, xp=np)
    guesses = {k: int(np.argmax(s)) for k, s in scores.items()}
    return PriorAwareResult(scores, guesses, obs)
