"""A one-run audit of a real DP-SGD run: m canaries, each one of its own k candidates, guessed after one training.

The game (Steinke, Nasr & Jagielski 2023; Mahloujifar, Melis & Chaudhuri 2025;
the analysis is :mod:`reconrisk._src.audit.onerun`): m canary slots, each with k
candidates, sparse random binary images (each pixel on with probability
``density``) with a uniformly drawn label; slot i's choice S_i is uniform and
independent; DP-SGD trains **once** on a known set D₋ of real digits plus the m
chosen canaries. The attacker knows D₋, every slot's candidates and the
initialisation, and guesses each slot; the ``guess_counts`` most confident
slots (top-1 minus top-2 score) are scored. Scores are centred per label over
all slots (the other canaries' sum favours whole labels alike).

What limits it: the other m − 1 canaries are noise the attacker cannot
remove. One step releases one P-dimensional sum; the digits MLP has P = 760
parameters, far fewer than the m log₂ k ≈ 3,300 bits of 1,000 choices of 10,
so at any noise level most slots stay near the blind guess and the bound
stays far below the certified ε (``benchmarks/bench_onerun.py`` prints both;
a wider model, ``mlp:256``, helps a little).

Threat models:

* ``"transcript"`` (white box, what DP-SGD releases: every θ_t and privatised
  sum g_t). Per step the attacker removes what it can predict, the known points'
  clipped sum and the prior mean of every slot's canary, Σ_i (1/k) Σ_j
  clip(∇ℓ(θ_t, z_ij)), and scores candidate j of slot i by
  Σ_t ⟨clip(∇ℓ(θ_t, z_ij)), ḡ_t⟩ (Alg. 2 of Hayes et al. 2023 per slot).
* ``"last_iterate"`` (the final model θ_T, and θ_0): candidate j of slot i
  scores ⟨clip(∇ℓ(θ_0, z_ij)) + clip(∇ℓ(θ_T, z_ij)), θ_0 − θ_T⟩ (the summed
  updates, seen only through the displacement).

Two data sets that differ in one slot's choice differ by *replacing* one
example, so the audit bounds the replace-one curve. For full-batch DP-SGD
(q = 1; the only case accepted) that curve is exactly Gaussian with
μ = 2√T/σ (the clipped sum moves by at most 2C), which gives the certified ε
beside the lower bound; the add/remove ε of the same release is reported too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..accounting.gaussian import gaussian_eps
from ..attacks.prior_aware import deduct_known
from ..audit.onerun import Guesses, onerun_lower_bounds
from ..errors import ReconRiskError
from ..release import Release
from ..results import Bound
from ..train.clipping import clip_factors, grad_inner_products, per_example_sq_norms, signals, weighted_grad_sum
from ..train.dpsgd import make_step_config, model_accuracy, train
from ..train.models import get_model

THREAT_MODELS = ("transcript", "last_iterate")


@dataclass(frozen=True)
class OneRunSetting:
    release: Release
    canaries: int = 1000
    options: int = 10
    known_size: int = 500
    guess_counts: tuple[int, ...] = (100, 250, 500, 1000)
    delta: float = 1e-5
    model: str = "mlp"
    learning_rate: float = 2.0
    density: float = 0.1
    seed: int = 0

    def __post_init__(self):
        if not isinstance(self.release, Release) or not self.release.homogeneous:
            raise ReconRiskError(f"release must be a homogeneous reconrisk.Release; found {self.release!r}")
        if self.release.sample_rate != 1.0 or self.release.noise != "gaussian":
            raise ReconRiskError("the one-run audit certifies the replace-one curve of full-batch Gaussian DP-SGD: "
                                 f"sample_rate must be 1 and the noise Gaussian; found q={self.release.sample_rate}, "
                                 f"noise={self.release.noise!r}")
        v.integer("canaries", self.canaries, minimum=1, maximum=100_000)
        v.integer("options", self.options, minimum=2, maximum=1000)
        v.integer("known_size", self.known_size, minimum=0)
        for g in self.guess_counts:
            v.integer("guess count", g, minimum=1, maximum=self.canaries)
        v.probability_open("delta", self.delta)
        v.positive("learning_rate", self.learning_rate)
        v.in_range("density", self.density, 0.0, 1.0, high_open=False)
        v.seed("seed", self.seed)

    def certified(self) -> dict:
        """Replace-one μ and ε at δ (exact for q = 1), and the release's add/remove ε."""

        r = self.release
        mu = 2.0 * np.sqrt(r.steps) / r.noise_multiplier
        return {"gdp_mu": float(mu), "epsilon": gaussian_eps(r.noise_multiplier / 2.0, self.delta, steps=r.steps),
                "epsilon_add_remove": gaussian_eps(r.noise_multiplier, self.delta, steps=r.steps),
                "formula": "replace-one: mu = 2 sqrt(T)/sigma (full batch, the clipped sum moves by <= 2C); "
                           "eps from the Gaussian privacy profile"}


def make_game(setting: OneRunSetting, dataset):
    """(known_x, known_y, cand_x (m, k, d), cand_y (m, k), choice (m,)), all from ``setting.seed``."""
    s = setting
    rng = np.random.default_rng([s.seed, 27])
    if s.known_size > dataset.x.shape[0]:
        raise ReconRiskError(f"known_size must be <= {dataset.x.shape[0]} for {dataset.name!r}; found {s.known_size}")
    known = rng.permutation(dataset.x.shape[0])[: s.known_size]
    on = rng.random((s.canaries, s.options, dataset.dim)) < s.density
    cand_x = on.astype(np.float32)
    cand_y = rng.integers(0, dataset.num_classes, (s.canaries, s.options)).astype(np.int32)
    choice = rng.integers(0, s.options, s.canaries)
    return dataset.x[known], dataset.y[known], cand_x, cand_y, choice


def _scores(model, cfg, transcript, known_x, known_y, cand_x, cand_y, threat: str) -> np.ndarray:
    """(m, k) scores of every slot's candidates from what ``threat`` releases (ghost inner products, no
    per-example gradient is materialised, so wide models fit)."""
    from .._jax import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    m, k = cand_y.shape
    thetas = jnp.asarray(np.asarray(transcript.thetas))
    unravel = model.unravel()
    kx, ky = jnp.asarray(known_x), jnp.asarray(known_y)
    cx, cy = jnp.asarray(cand_x.reshape(m * k, -1)), jnp.asarray(cand_y.reshape(-1))
    full = jnp.ones(kx.shape[0], bool)

    def cand_stats(params):
        taps, deltas, _ = signals(model, params, cx, cy)
        return taps, deltas, clip_factors(per_example_sq_norms(taps, deltas), cfg.clip_norm, cfg.clip_mode)

    def ips(taps, deltas, scale, vec):  # ⟨clip ∇ℓ(θ, z_ij), vec⟩ for every candidate
        vecs = jax.tree_util.tree_map(lambda a: a[None], unravel(vec))
        return grad_inner_products(taps, deltas, vecs)[:, 0] * scale

    @jax.jit
    def transcript_scores(thetas, grads):
        def body(acc, tg):
            theta, g = tg
            params = unravel(theta)
            gbar = deduct_known(model, cfg, params, g, full, kx, ky)  # the known points, exactly
            taps, deltas, scale = cand_stats(params)
            prior_mean = ravel_pytree(weighted_grad_sum(taps, deltas, scale / k))[0]  # Σ_i E[canary i]
            return acc + ips(taps, deltas, scale, gbar - prior_mean), None

        return jax.lax.scan(body, jnp.zeros(m * k), (thetas[:-1], grads))[0]

    @jax.jit
    def last_iterate_scores(theta0, theta_t):
        disp = theta0 - theta_t
        return sum(ips(*cand_stats(unravel(th)), disp) for th in (theta0, theta_t))

    if threat == "transcript":
        out = transcript_scores(thetas, jnp.asarray(np.asarray(transcript.grads)))
    else:
        out = last_iterate_scores(thetas[0], thetas[-1])
    scores = np.asarray(out, dtype=np.float64).reshape(m, k)
    # the other canaries' sum pulls every candidate of one label the same way: remove each label's mean score
    # (over all slots, where the true choices are only 1/k of the candidates)
    for label in np.unique(cand_y):
        sel = cand_y == label
        scores[sel] -= scores[sel].mean()
    return scores


@dataclass
class OneRunResult:
    setting: OneRunSetting
    threat_model: str
    guesses: object  # audit.onerun.Guesses
    bounds: dict
    certified: dict
    train_seconds: float
    attack_seconds: float
    bound_seconds: float
    accuracy_known: float

    # the certified numbers of ``certified`` (its floats are the JSON form) as Bounds, exact at q = 1
    def _exact(self, quantity: str, key: str, neighbouring: str) -> Bound:
        x = float(self.certified[key])
        return Bound(quantity, x, x, method="closed_form", converged=True, formula=self.certified["formula"],
                     details={"delta": self.setting.delta, "neighbouring": neighbouring})

    @property
    def certified_epsilon(self) -> Bound:
        """The replace-one ε at δ the lower bounds are compared with (exact: full batch, Gaussian)."""
        return self._exact("epsilon", "epsilon", "replace_one")

    @property
    def certified_gdp_mu(self) -> Bound:
        """The replace-one μ = 2√T/σ (exact)."""
        return self._exact("gdp_mu", "gdp_mu", "replace_one")

    @property
    def epsilon_add_remove(self) -> Bound:
        """The release's add/remove ε at δ (exact)."""
        return self._exact("epsilon", "epsilon_add_remove", "add_remove")

    def to_dict(self) -> dict:
        s = self.setting
        eps = self.bounds["epsilon"].details
        return {"threat_model": self.threat_model, "release": s.release.to_dict(), "neighbouring": "replace_one",
                "vacuous": bool(eps.get("vacuous", False)), "vacuous_reason": eps.get("vacuous_reason"),
                "canaries": s.canaries,
                "options": s.options, "known_size": s.known_size, "delta": s.delta, "seed": s.seed,
                "guess_counts": list(self.guesses.guesses), "correct_counts": list(self.guesses.correct),
                "lower": {k: b.to_dict() for k, b in self.bounds.items()}, "certified": self.certified,
                "seconds": {"train": self.train_seconds, "attack": self.attack_seconds, "bound": self.bound_seconds},
                "accuracy_known": self.accuracy_known}


def run_onerun(setting: OneRunSetting, dataset, threat_models=THREAT_MODELS, confidence: float = 0.95) -> list:
    """Train once with the canaries and audit each threat model from the same run (one result per threat model)."""

    for t in threat_models:
        v.choice("threat_model", t, THREAT_MODELS)
    s = setting
    model = get_model(s.model, dataset.image_shape, dataset.num_classes)
    known_x, known_y, cand_x, cand_y, choice = make_game(s, dataset)
    idx = np.arange(s.canaries)
    x = np.concatenate([known_x, cand_x[idx, choice]]).astype(np.float32)
    y = np.concatenate([known_y, cand_y[idx, choice]]).astype(np.int32)
    t0 = time.perf_counter()
    res = train(model, s.release, x, y, seed=s.seed, learning_rate=s.learning_rate)
    np.asarray(res.transcript.grads[-1])
    train_s = time.perf_counter() - t0
    acc = model_accuracy(model, res.params, known_x, known_y) if s.known_size else float("nan")
    cfg = make_step_config(s.release, x.shape[0], s.learning_rate, "hard")
    cert = s.certified()
    out = []
    for threat in threat_models:
        t1 = time.perf_counter()
        scores = _scores(model, cfg, res.transcript, known_x, known_y, cand_x, cand_y, threat)
        t2 = time.perf_counter()
        guesses = Guesses.from_scores(scores, choice, s.guess_counts)
        bounds = onerun_lower_bounds(guesses, delta=s.delta, confidence=confidence, certified_epsilon=cert["epsilon"])
        out.append(OneRunResult(s, threat, guesses, bounds, cert, train_s, t2 - t1, time.perf_counter() - t2, acc))
    return out
