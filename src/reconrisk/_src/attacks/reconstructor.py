"""The reconstructor-network attack (RecoNN) of Balle, Cherubin & Hayes 2022 (§IV–V; spec_002 §3–4).

An informed adversary who knows D⁻, the training algorithm and its
initialisation trains shadow models θ_i = A(D⁻ ∪ {z_i})
(:func:`reconrisk._src.train.shadow.train_shadow_models`, vmapped) and fits a
network φ with φ(θ_i) ≈ z_i; the attack on a released θ is ẑ = φ(θ).

Pipeline (spec_002 §3.4–3.6)
    * **Standardise** every parameter coordinate to zero mean and unit
      variance, fitted on the shadow models only (:class:`ParamScaler`;
      fitting on the released models too would leak).
    * **Reconstructor**: an MLP with ReLU hidden layers and a sigmoid output
      (pixels in [0, 1]); loss mean|ẑ − z| + mean(ẑ − z)² (MAE + MSE).
    * **Evaluation** on released models, one per test target:
      per-target MSE; the *nearest-neighbour oracle* success — the
      reconstruction's nearest point (Euclidean) in D⁻ ∪ {target} is the
      target — whose chance level for a reconstruction that ignores θ is
      1/(|D⁻| + 1) (targets and D⁻ exchangeable); and the paper's criterion,
      reconstruction MSE below the NN-oracle MSE (the MSE from the target to
      its closest point of D⁻). Rates carry Clopper–Pearson intervals.

Departures from the paper (stated, all for CPU budgets): hidden widths
(256, 256) instead of (1000, 1000); Adam at 1e-3 instead of RMSProp at 3e-4
(few hundred shadow models rather than 10K, so fewer, larger steps); the
reconstructor is plain JAX + optax (no Haiku/flax).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import _validate as v
from ..analysis.calibrate import noise_multiplier_for_epsilon
from ..data import Dataset
from ..errors import ReconRiskError
from ..metrics import SuccessRate
from ..release import Release
from ..train.models import get_model
from ..train.shadow import (
    DEFAULT_LEARNING_RATE, DEFAULT_STEPS, ShadowConfig, make_splits, shadow_accuracy, train_shadow_models,
)

DEFAULT_HIDDEN = (256, 256)


def _matrix(name: str, arr, cols: int | None = None) -> np.ndarray:
    try:
        a = np.asarray(arr, dtype=np.float64)
    except (TypeError, ValueError):
        raise ReconRiskError(f"{name} must be a 2-d array of numbers") from None
    if a.ndim != 2 or a.shape[0] < 1 or (cols is not None and a.shape[1] != cols):
        want = f"(N, {cols})" if cols is not None else "(N, P)"
        raise ReconRiskError(f"{name} must have shape {want} with N >= 1; found {a.shape}")
    if not np.isfinite(a).all():
        raise ReconRiskError(f"{name} must be finite; found NaN or inf")
    return a


@dataclass(frozen=True)
class ParamScaler:
    """Per-coordinate standardisation fitted on shadow parameters only (spec_002 §3.4)."""

    mean: np.ndarray
    scale: np.ndarray

    @classmethod
    def fit(cls, thetas) -> "ParamScaler":
        t = _matrix("thetas", thetas)
        if t.shape[0] < 2:
            raise ReconRiskError(f"thetas must hold at least 2 shadow models to fit a scaler; found {t.shape[0]}")
        sd = t.std(axis=0)
        # constant coordinates carry no information: scale 1 keeps them at 0 instead of dividing by 0
        return cls(t.mean(axis=0), np.where(sd > 0, sd, 1.0))

    def transform(self, thetas) -> np.ndarray:
        t = _matrix("thetas", thetas, self.mean.size)
        return ((t - self.mean) / self.scale).astype(np.float32)


def _mlp_init(key, sizes):
    from .._jax import jax
    import jax.numpy as jnp

    keys = jax.random.split(key, len(sizes) - 1)
    return [{"w": jax.random.normal(k, (a, b), jnp.float32) * jnp.sqrt(2.0 / a), "b": jnp.zeros((b,), jnp.float32)}
            for k, a, b in zip(keys, sizes[:-1], sizes[1:])]


def _mlp_apply(params, x):
    from .._jax import jax

    for layer in params[:-1]:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    return jax.nn.sigmoid(x @ params[-1]["w"] + params[-1]["b"])


@dataclass
class Reconstructor:
    """A trained φ: standardised flat parameters → image in [0, 1]^d."""

    params: list
    scaler: ParamScaler
    hidden: tuple
    history: list = field(default_factory=list)  # training loss (MAE + MSE) per epoch

    def predict(self, thetas) -> np.ndarray:
        from .._jax import jax
        import jax.numpy as jnp

        x = self.scaler.transform(thetas)
        return np.asarray(jax.jit(_mlp_apply)(self.params, jnp.asarray(x)), dtype=np.float64)


def train_reconstructor(thetas, targets, *, hidden=DEFAULT_HIDDEN, epochs: int = 200, batch_size: int = 32,
                        learning_rate: float = 1e-3, seed: int = 0) -> Reconstructor:
    """Fit φ on shadow pairs (θ_i, z_i) with loss MAE + MSE and Adam (Balle, Cherubin & Hayes 2022, §V-A; departures in the module doc).

    The data order of each epoch is a permutation drawn from
    ``PRNGKey(seed)``; the initialisation too. Same seed → same network.
    """
    from .._jax import jax
    import jax.numpy as jnp

    th = _matrix("thetas", thetas)
    z = _matrix("targets", targets)
    if z.shape[0] != th.shape[0]:
        raise ReconRiskError(f"targets must have one row per shadow model ({th.shape[0]}); found {z.shape[0]}")
    hidden = tuple(v.integer("hidden width", h, minimum=1) for h in hidden)
    epochs = v.integer("epochs", epochs, minimum=1)
    batch_size = v.integer("batch_size", batch_size, minimum=1)
    lr = v.positive("learning_rate", learning_rate)
    seed = v.integer("seed", seed, minimum=0)
    scaler = ParamScaler.fit(th)
    x = jnp.asarray(scaler.transform(th))
    zj = jnp.asarray(z, jnp.float32)
    n = x.shape[0]
    bs = min(batch_size, n)
    k_init, k_perm = jax.random.split(jax.random.PRNGKey(seed))
    params = _mlp_init(k_init, (x.shape[1], *hidden, z.shape[1]))
    params, hist = _fit_program(n, bs, lr, epochs)(params, x, zj, k_perm)
    return Reconstructor(params, scaler, hidden, [float(h) for h in np.asarray(hist)])


_PROGRAMS: dict = {}


def _fit_program(n: int, bs: int, lr: float, epochs: int):
    """One jitted training program per (N, batch, lr, epochs), reused across calls (e.g. across ε)."""
    from .._jax import jax
    import jax.numpy as jnp
    import optax

    key = (n, bs, lr, epochs)
    if key in _PROGRAMS:
        return _PROGRAMS[key]
    nb = n // bs  # full batches only: one compiled shape (the remainder changes every epoch)
    opt = optax.adam(lr)

    def loss_fn(p, xb, zb):
        out = _mlp_apply(p, xb)
        return jnp.mean(jnp.abs(out - zb)) + jnp.mean((out - zb) ** 2)

    def fit(params, x, z, k_perm):
        def epoch(carry, e):
            perm = jax.random.permutation(jax.random.fold_in(k_perm, e), n)[: nb * bs].reshape(nb, bs)

            def step(c, idx):
                p, s = c
                val, g = jax.value_and_grad(loss_fn)(p, x[idx], z[idx])
                upd, s = opt.update(g, s, p)
                return (optax.apply_updates(p, upd), s), val

            carry, vals = jax.lax.scan(step, carry, perm)
            return carry, jnp.mean(vals)

        (params, _), hist = jax.lax.scan(epoch, (params, opt.init(params)), jnp.arange(epochs))
        return params, hist

    _PROGRAMS[key] = jax.jit(fit)
    return _PROGRAMS[key]


@dataclass(frozen=True)
class ReconnEvaluation:
    """Per-target outcome of RecoNN on released models (arrays of length |targets|)."""

    mse: np.ndarray  # reconstruction MSE per target
    oracle_mse: np.ndarray  # MSE from the target to its nearest point of D⁻ (the NN oracle)
    nn_success: np.ndarray  # bool: nearest point of D⁻ ∪ {target} to the reconstruction is the target
    fixed_size: int
    confidence: float = 0.95

    @property
    def chance(self) -> float:
        return 1.0 / (self.fixed_size + 1)

    def to_dict(self) -> dict:
        nn = SuccessRate.from_outcomes(self.nn_success, self.confidence).to_dict()
        below = SuccessRate.from_outcomes(self.mse < self.oracle_mse, self.confidence).to_dict()
        m = self.mse
        return {
            "targets": int(m.size),
            "mse": {"mean": float(m.mean()), "se": float(m.std(ddof=1) / np.sqrt(m.size)) if m.size > 1 else None,
                    "median": float(np.median(m))},
            "oracle_mse": {"mean": float(self.oracle_mse.mean())},
            "nn_oracle_success": nn,
            "below_oracle_mse": below,
            "chance": self.chance,
            "confidence": self.confidence,
        }


def evaluate(reconstructions, targets, fixed, *, confidence: float = 0.95) -> ReconnEvaluation:
    """MSE, NN-oracle MSE and NN-oracle success of ``reconstructions`` (N, d) of ``targets`` (N, d) given D⁻ ``fixed``."""
    r = _matrix("reconstructions", reconstructions)
    t = _matrix("targets", targets, r.shape[1])
    f = _matrix("fixed", fixed, r.shape[1])
    if t.shape[0] != r.shape[0]:
        raise ReconRiskError(f"targets must have one row per reconstruction ({r.shape[0]}); found {t.shape[0]}")
    confidence = v.probability_open("confidence", confidence)
    mse = np.mean((r - t) ** 2, axis=1)
    d_fixed_r = ((r**2).sum(1)[:, None] + (f**2).sum(1)[None, :] - 2 * r @ f.T)  # (N, n) squared distances
    d_fixed_t = ((t**2).sum(1)[:, None] + (f**2).sum(1)[None, :] - 2 * t @ f.T)
    d = r.shape[1]
    success = d * mse < d_fixed_r.min(axis=1)  # strictly nearer to the target than to every point of D⁻
    oracle = np.maximum(d_fixed_t.min(axis=1), 0.0) / d
    return ReconnEvaluation(mse, oracle, success, f.shape[0], confidence)


# ----------------------------------------------------------------------------------------
# the whole attack on one dataset, with and without DP
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReconnSetting:
    """One training algorithm (no DP, or DP-GD at ``epsilon``) and the attack's outcome on it."""

    epsilon: float | None  # None: no DP
    noise_multiplier: float | None
    evaluation: ReconnEvaluation
    reconstructions: np.ndarray = field(repr=False)
    released_accuracy: float | None = None

    def to_dict(self) -> dict:
        return {"epsilon": self.epsilon, "noise_multiplier": self.noise_multiplier,
                "released_accuracy": self.released_accuracy, **self.evaluation.to_dict()}


@dataclass(frozen=True)
class ReconnResult:
    settings: list
    targets: np.ndarray = field(repr=False)
    config: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {**self.config, "settings": [s.to_dict() for s in self.settings]}


def run_reconn(dataset, *, fixed_size: int = 50, shadow_models: int = 256, targets: int = 64,
               epsilons=(None,), steps: int | None = None, learning_rate: float | None = None,
               clip_norm: float = 1.0, delta: float = 1e-5, model: str = "mlp", hidden=DEFAULT_HIDDEN,
               epochs: int = 100, chunk: int | None = None, seed: int = 0, confidence: float = 0.95,
               progress=None) -> ReconnResult:
    """Balle, Cherubin & Hayes's (2022) RecoNN experiment on ``dataset`` (a :class:`reconrisk._src.data.Dataset`), per ε in ``epsilons``.

    ``None`` in ``epsilons`` means no DP. For a finite ε the shadow and the
    released models run full-batch DP-GD with the noise multiplier that makes
    ``steps`` Gaussian steps (ε, δ)-DP (add/remove neighbours, exact Gaussian
    accountant; substitution neighbours, the ReRo notion, double the
    sensitivity). Splits, shadow keys (seed + 1) and released-model keys
    (seed + 2, unknown to the adversary) are all derived from ``seed``.
    ``progress(label)`` is called before each phase.
    """

    if not isinstance(dataset, Dataset):
        raise ReconRiskError(f"dataset must be a reconrisk._src.data.Dataset (load_dataset('digits')); found {type(dataset).__name__}")
    steps = DEFAULT_STEPS if steps is None else v.integer("steps", steps, minimum=1)
    lr = DEFAULT_LEARNING_RATE if learning_rate is None else v.positive("learning_rate", learning_rate)
    clip_norm = v.positive("clip_norm", clip_norm)
    delta = v.probability_open("delta", delta)
    seed = v.integer("seed", seed, minimum=0)
    eps_list = []
    for e in epsilons:
        eps_list.append(None if e is None else v.positive("epsilon", e))
    if not eps_list:
        raise ReconRiskError("epsilons must hold at least one value (None for no DP)")
    splits = make_splits(len(dataset), fixed_size, shadow_models, targets, seed)
    net = get_model(model, dataset.image_shape, dataset.num_classes)
    xf, yf = dataset.x[splits.fixed], dataset.y[splits.fixed]
    xs, ys = dataset.x[splits.shadow], dataset.y[splits.shadow]
    xt, yt = dataset.x[splits.test], dataset.y[splits.test]
    settings = []
    for e in eps_list:
        if e is None:
            cfg, sigma = ShadowConfig(steps=steps, learning_rate=lr), None
        else:
            sigma = noise_multiplier_for_epsilon(e, 1.0, steps, delta)
            cfg = ShadowConfig(steps=steps, learning_rate=lr, release=Release(sigma, 1.0, steps, clip_norm=clip_norm))
        label = "no DP" if e is None else f"epsilon = {e:g}"
        if progress is not None:
            progress(f"{label}: {shadow_models} shadow models")
        shadows = train_shadow_models(net, xf, yf, xs, ys, cfg, seed=seed + 1, chunk=chunk, pad_chunks=True)
        if progress is not None:
            progress(f"{label}: {targets} released models")
        released = train_shadow_models(net, xf, yf, xt, yt, cfg, seed=seed + 2, chunk=chunk, pad_chunks=True)
        if progress is not None:
            progress(f"{label}: reconstructor")
        rec = train_reconstructor(shadows, xs, hidden=hidden, epochs=epochs, seed=seed)
        recon = rec.predict(released)
        ev = evaluate(recon, xt, xf, confidence=confidence)
        acc = float(np.mean(shadow_accuracy(net, released[: min(16, targets)], xs, ys)))
        settings.append(ReconnSetting(e, sigma, ev, recon, acc))
    config = {"dataset": dataset.name, "image_shape": list(dataset.image_shape), "model": net.name,
              "num_params": net.num_params, "splits": splits.to_dict(), "steps": steps, "learning_rate": lr,
              "momentum": ShadowConfig().momentum, "clip_norm": clip_norm, "delta": delta, "hidden": list(hidden),
              "epochs": epochs, "seed": seed}
    return ReconnResult(settings, xt, config)


__all__ = ["ParamScaler", "ReconnEvaluation", "ReconnResult", "ReconnSetting", "Reconstructor", "evaluate", "run_reconn",
           "train_reconstructor"]
