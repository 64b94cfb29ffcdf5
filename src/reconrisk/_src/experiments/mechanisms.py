"""Gaussian versus VMF DP-SGD at matched ε: accuracy, gradient-inversion error, Bayes' capacity (Biswas et al. 2024).

For every ε of a grid:

1. **Matching.** σ is the smallest noise multiplier with ε ≤ target under the
   Opacus-order RDP accountant composed over the *steps* (Biswas et al. 2024, §4);
   κ is the largest concentration with ε ≤ target under the VMF accounting
   of :mod:`reconrisk._src.accounting.vmf` (approach 2, CGF interpolation — sound
   and fast), composed over ``vmf_compositions``:
   ``"steps"`` (default; the sound count) or ``"epochs"`` (what Biswas et al. 2024 did,
   spec_004 §3 — it makes VMF look ~500× cheaper in ε than it is).
2. **Training** (Biswas et al. 2024, Algs 1–2): the paper's MLP shape scaled to the
   8×8 digits, ``64 → 50 → 15 → 10``, sigmoid, no biases (p = 4,100);
   per-example gradients flattened over all layers and clipped to C = 1
   (flat clipping: spec_004 §2, Prop. 3 — never per layer for VMF), averaged
   over the batch; Gaussian: + N(0, (Cσ/L)² I); VMF: normalise and draw
   VMF(g/‖g‖, κ) (:func:`reconrisk._src.mechanisms.vmf.vmf_noise_jax`). Adam
   (learning rate 0.05, 10 epochs, batch 32: the paper's 0.005 and 3 epochs
   do not train on the 1,400 digits).
   **Departure:** batches are uniformly drawn fixed-size batches (one
   permutation per epoch), while the accounting assumes Poisson sampling at
   γ = L/N, as Opacus-style experiments usually do.
3. **Attack:** inverting gradients
   (:func:`reconrisk._src.attacks.gradient_inversion.inverting_gradients`) on one
   batch of L held-out training images at the initial parameters θ₀ (the
   model state is not stated in the paper; θ₀ is the attacker's best case),
   against the privatised gradient of that batch produced by the same
   mechanism. Reconstructions are matched to the truth by the Hungarian
   assignment on MSE (the batch order is not identifiable); MSE and SSIM
   per image, with their standard errors.
4. **Capacity** (natural log): VMF by Thm 6 with (κ, p); Gaussian by the
   corrected Thm 5 for the channel actually applied — averaged clipped
   gradients in the ball of radius C = 1 with noise std Cσ/L, i.e.
   ``log_capacity_gaussian(σ/L, 1, p)`` (spec_004 §6 notes the paper's σ/R
   choice is unstated; capacity is scale-invariant).

The accounting is numpy/scipy; training and attack need JAX (``sim`` extra).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from .. import _validate as v
from .._roots import bisect_log
from ..accounting.vmf import concentration_for_epsilon, gaussian_epsilon_opacus, gaussian_sigma_opacus
from ..attacks.gradient_inversion import inverting_gradients
from ..data import load_digits
from ..errors import ReconRiskError
from ..mechanisms.vmf import vmf_noise_jax
from ..metrics import mse as _mse, ssim as _ssim
from ..theory.capacity import log_capacity_gaussian, log_capacity_vmf

VMF_COUNTS = ("steps", "epochs")
HIDDEN = (50, 15)


@dataclass(frozen=True)
class CompareConfig:
    """Settings of a comparison run (defaults: CI-sized digits run)."""

    epsilons: tuple[float, ...] = (1.0, 8.0, 64.0)
    epochs: int = 10
    batch_size: int = 32
    learning_rate: float = 0.05
    clip_norm: float = 1.0
    delta: float = 1e-5
    vmf_compositions: str = "steps"
    attack_iterations: int = 300
    attack_lr: float = 0.1
    tv_weight: float = 1e-2
    test_fraction: float = 0.2
    seed: int = 0
    capacity_matched: bool = False

    def __post_init__(self) -> None:
        eps = tuple(v.positive("epsilons", e) for e in self.epsilons)
        if not eps:
            raise ReconRiskError("epsilons must hold at least one value")
        object.__setattr__(self, "epsilons", eps)
        object.__setattr__(self, "epochs", v.integer("epochs", self.epochs, minimum=1))
        object.__setattr__(self, "batch_size", v.integer("batch_size", self.batch_size, minimum=1))
        object.__setattr__(self, "learning_rate", v.positive("learning_rate", self.learning_rate))
        object.__setattr__(self, "clip_norm", v.positive("clip_norm", self.clip_norm))
        object.__setattr__(self, "delta", v.probability_open("delta", self.delta))
        object.__setattr__(self, "vmf_compositions", v.choice("vmf_compositions", self.vmf_compositions, VMF_COUNTS))
        object.__setattr__(self, "attack_iterations", v.integer("attack_iterations", self.attack_iterations, minimum=1))
        object.__setattr__(self, "attack_lr", v.positive("attack_lr", self.attack_lr))
        object.__setattr__(self, "tv_weight", v.in_range("tv_weight", self.tv_weight, 0.0, math.inf, low_open=False))
        object.__setattr__(self, "test_fraction", v.in_range("test_fraction", self.test_fraction, 0.0, 1.0))
        object.__setattr__(self, "seed", v.integer("seed", self.seed, minimum=0))


@dataclass(frozen=True)
class MechanismPoint:
    """One (mechanism, ε) cell: noise parameter, capacity, accuracy and reconstruction error."""

    mechanism: str
    epsilon: float
    parameter: float  # σ (noise multiplier) or κ
    log_capacity: float
    accuracy: float
    mse: float
    mse_se: float
    ssim: float
    ssim_se: float

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Comparison:
    config: CompareConfig
    dim: int
    sample_rate: float
    steps: int
    points: tuple[MechanismPoint, ...]
    baseline: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"config": asdict(self.config), "dim": self.dim, "sample_rate": self.sample_rate, "steps": self.steps,
                "points": [p.to_dict() for p in self.points], "baseline": self.baseline}


# -- model -------------------------------------------------------------------------------------
def _init(key, sizes):
    from .._jax import jax
    import jax.numpy as jnp

    keys = jax.random.split(key, len(sizes) - 1)
    return [jax.random.normal(k, (a, b), jnp.float32) / math.sqrt(a) for k, a, b in zip(keys, sizes[:-1], sizes[1:])]


def _logits(params, x):
    from .._jax import jax

    h = x
    for i, w in enumerate(params):
        h = h @ w
        if i < len(params) - 1:
            h = jax.nn.sigmoid(h)
    return h


def _make_fns(unravel, clip_norm: float):
    """(flat mean clipped gradient of a batch, per-example loss) for the no-bias sigmoid MLP."""
    from .._jax import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    def loss1(flat, x, y):
        logits = _logits(unravel(flat), x[None])[0]
        return -jax.nn.log_softmax(logits)[y]

    def clipped_mean(flat, x, y):
        g = jax.vmap(jax.grad(loss1), in_axes=(None, 0, 0))(flat, x, y)
        n = jnp.linalg.norm(g, axis=1, keepdims=True)
        g = g * jnp.minimum(1.0, clip_norm / jnp.maximum(n, 1e-30))
        return jnp.mean(g, axis=0)

    del ravel_pytree
    return clipped_mean


def _noise_param(mechanism: str, param, clip_norm: float, batch: int):
    """The traced noise argument: the Gaussian std C·σ/L (rounded once to float32) or the VMF κ."""
    return np.float32(clip_norm * param / batch) if mechanism == "gaussian" else np.float32(param)


def _privatise(key, g, mechanism: str, noise):
    """Privatise a flat gradient; ``noise`` is :func:`_noise_param`'s value (a traced float32 scalar)."""
    from .._jax import jax

    if mechanism == "gaussian":
        return g + noise * jax.random.normal(key, g.shape, g.dtype)
    if mechanism == "vmf":
        return vmf_noise_jax(key, g, noise)
    return g  # "none": clipping only


def _programs(data, cfg: CompareConfig, mechanism: str, cache: dict):
    """Jitted (epoch, attack) programs, compiled once per mechanism and shared across ε.

    The noise level is a traced argument, so one compilation serves every ε of a comparison (it was
    a constant baked into a fresh closure: ~2 compilations per trained model).
    """
    from .._jax import jax
    import jax.numpy as jnp
    import optax
    from jax.flatten_util import ravel_pytree

    xtr, ytr, xte, yte, xatt, yatt = data
    if "base" not in cache:
        sizes = (xtr.shape[1], *HIDDEN, 10)
        keys = jax.random.split(jax.random.PRNGKey(cfg.seed), 4)
        flat0, unravel = ravel_pytree(_init(keys[0], sizes))
        grad_fn = _make_fns(unravel, cfg.clip_norm)
        ya = jnp.asarray(yatt)
        attack = jax.jit(lambda obs, k: inverting_gradients(
            lambda x, y: grad_fn(flat0, x, y), obs, ya, k, image_shape=data_shape(xtr),
            iterations=cfg.attack_iterations, learning_rate=cfg.attack_lr, tv_weight=cfg.tv_weight)[0])
        xte_j = jnp.asarray(xte)
        predict = jax.jit(lambda flat: jnp.argmax(_logits(unravel(flat), xte_j), axis=1))
        cache["base"] = (keys, flat0, unravel, grad_fn, attack, predict)
    keys, flat0, unravel, grad_fn, attack, predict = cache["base"]
    if mechanism not in cache:
        L = cfg.batch_size
        steps_per_epoch = xtr.shape[0] // L
        opt = optax.adam(cfg.learning_rate)
        xtr_j, ytr_j = jnp.asarray(xtr), jnp.asarray(ytr)

        @jax.jit
        def epoch(flat, state, k, noise):
            def step(carry, idx_key):
                flat, state = carry
                idx, kk = idx_key
                g = _privatise(kk, grad_fn(flat, xtr_j[idx], ytr_j[idx]), mechanism, noise)
                upd, state = opt.update(g, state, flat)
                return (optax.apply_updates(flat, upd), state), None

            k_perm, k_noise = jax.random.split(k)
            perm = jax.random.permutation(k_perm, xtr_j.shape[0])[: steps_per_epoch * L].reshape(steps_per_epoch, L)
            (flat, state), _ = jax.lax.scan(step, (flat, state), (perm, jax.random.split(k_noise, steps_per_epoch)))
            return flat, state

        xa, ya = jnp.asarray(xatt), jnp.asarray(yatt)
        # the privatised gradient of one held-out batch at θ₀, as one program (eagerly it was ~100 small compilations)
        observe = jax.jit(lambda k, noise: _privatise(k, grad_fn(flat0, xa, ya), mechanism, noise))
        cache[mechanism] = (epoch, jax.jit(opt.init), observe)
    return keys, flat0, attack, predict, cache[mechanism]


def _train_and_attack(data, cfg: CompareConfig, mechanism: str, param: float, cache: dict | None = None):
    """(test accuracy, reconstructions, truth) for one mechanism; deterministic in cfg.seed.

    ``cache`` (one dict per comparison) keeps the compiled programs between calls.
    """
    from .._jax import jax
    from scipy.optimize import linear_sum_assignment

    xtr, ytr, xte, yte, xatt, yatt = data
    keys, flat0, attack, predict, (epoch, opt_init, observe) = _programs(data, cfg, mechanism,
                                                                         {} if cache is None else cache)
    _, k_train, k_att_noise, k_att = keys
    train_noise = _noise_param(mechanism, param, cfg.clip_norm, cfg.batch_size)
    flat, state = flat0, opt_init(flat0)
    for e in range(cfg.epochs):
        flat, state = epoch(flat, state, jax.random.fold_in(k_train, e), train_noise)
    acc = float(np.mean(np.asarray(predict(flat)) == yte))

    # attack: the privatised gradient of one held-out batch at θ₀
    observed = observe(k_att_noise, _noise_param(mechanism, param, cfg.clip_norm, xatt.shape[0]))
    rec = np.asarray(attack(observed, k_att))
    cost = _mse(rec[:, None, :], np.asarray(xatt)[None, :, :])
    rows, cols = linear_sum_assignment(cost)
    rec = rec[rows][np.argsort(cols)]
    return acc, _mse(rec, xatt), _ssim(rec, xatt, data_shape(xtr))


def data_shape(x) -> tuple[int, int, int]:
    side = int(round(math.sqrt(x.shape[1])))
    return (side, side, 1)


def _split(cfg: CompareConfig):
    ds = load_digits()
    rng = np.random.default_rng(cfg.seed)
    perm = rng.permutation(len(ds))
    n_test = int(round(cfg.test_fraction * len(ds)))
    test, rest = perm[:n_test], perm[n_test:]
    att, train = rest[: cfg.batch_size], rest[cfg.batch_size:]
    if train.size < 2 * cfg.batch_size:
        raise ReconRiskError(f"batch_size must be at most half the training set ({train.size // 2}); found {cfg.batch_size}")
    return ds.x[train], ds.y[train], ds.x[test], ds.y[test], ds.x[att], ds.y[att]


def _se(a) -> float:
    a = np.asarray(a, dtype=float)
    return float(a.std(ddof=1) / math.sqrt(a.size)) if a.size > 1 else math.nan


def compare_mechanisms(config: CompareConfig | None = None, progress=None) -> Comparison:
    """Train and attack Gaussian and VMF DP-SGD at each ε of ``config.epsilons`` (Biswas et al. 2024, Figs 1, 4, 5).

    ``progress(k)`` (optional) is called after every trained model: 1 + 2·len(epsilons) models, or
    1 + 3·len(epsilons) with ``capacity_matched``.
    """
    cfg = config or CompareConfig()
    data = _split(cfg)
    n_train = data[0].shape[0]
    dim = data[0].shape[1] * HIDDEN[0] + HIDDEN[0] * HIDDEN[1] + HIDDEN[1] * 10
    q = cfg.batch_size / n_train
    steps = cfg.epochs * (n_train // cfg.batch_size)
    n_vmf = steps if cfg.vmf_compositions == "steps" else cfg.epochs
    points = []
    cache: dict = {}
    acc0, mse0, ssim0 = _train_and_attack(data, cfg, "none", 0.0, cache)
    baseline = {"mechanism": "clip only (no noise)", "accuracy": acc0, "mse": float(np.mean(mse0)),
                "mse_se": _se(mse0), "ssim": float(np.mean(ssim0)), "ssim_se": _se(ssim0)}
    if progress:
        progress(1)
    for eps in cfg.epsilons:
        sigma = gaussian_sigma_opacus(eps, q, steps, cfg.delta, rel_tol=1e-3)
        concentration = concentration_for_epsilon(eps, dim, q, n_vmf, cfg.delta, "2", rel_tol=1e-3)
        for mech, param, lc in (("gaussian", sigma, log_capacity_gaussian(sigma / cfg.batch_size, cfg.clip_norm, dim)),
                                ("vmf", concentration, log_capacity_vmf(concentration, dim))):
            acc, m, s = _train_and_attack(data, cfg, mech, param, cache)
            points.append(MechanismPoint(mech, eps, float(param), float(lc), acc, float(np.mean(m)), _se(m),
                                         float(np.mean(s)), _se(s)))
            if progress:
                progress(1)
            if cfg.capacity_matched and mech == "vmf":
                # Gaussian whose Bayes' capacity equals this VMF's (Biswas et al. 2024, Fig 4: equal capacity ~ equal MSE)
                s_eff = gaussian_sigma_for_log_capacity(lc, cfg.clip_norm, dim)
                sig = s_eff * cfg.batch_size
                acc, m, s = _train_and_attack(data, cfg, "gaussian", sig, cache)
                eps_g = gaussian_epsilon_opacus(sig, q, steps, cfg.delta)  # its own ε, not the VMF's
                points.append(MechanismPoint("gaussian@capacity", eps_g, float(sig), float(lc), acc,
                                             float(np.mean(m)), _se(m), float(np.mean(s)), _se(s)))
                if progress:
                    progress(1)
    return Comparison(cfg, dim, q, steps, tuple(points), baseline)


def gaussian_sigma_for_log_capacity(log_capacity: float, radius: float, dim: int) -> float:
    """σ with log C_Bayes(N(·, σ²I) on the ball of radius R) = ``log_capacity`` (decreasing in σ; bisection)."""

    target = v.positive("log_capacity", log_capacity)
    _, hi = bisect_log(lambda s: log_capacity_gaussian(s, radius, dim) <= target, 1e-3, 1.0, rel_tol=1e-6,
                       name="sigma")
    return hi
