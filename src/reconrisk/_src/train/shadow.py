"""Shadow models θ_i = A(D⁻ ∪ {z_i}) trained many at once (Balle, Cherubin & Hayes 2022, §IV; spec_002 §3.1–3.3).

The informed adversary of Balle, Cherubin & Hayes 2022 knows the fixed set D⁻, the training
algorithm A and its initialisation. It trains one *shadow model* per shadow
target z_i and learns the inverse map θ → z from the pairs (θ_i, z_i)
(:mod:`reconrisk._src.attacks.reconstructor`). The paper trained its shadow models
one by one; here every model of a chunk is trained inside **one jitted
program**: for dense models (with or without DP) the batched matrix-product program of
:mod:`reconrisk._src.train.shadow_dense` (the first layer one shared product per
step for all models), otherwise ``jax.vmap`` over (target image, target label, noise key) of
a ``lax.scan`` over the training steps. Both train the same models to float
rounding; ``benchmarks/bench_shadow.py`` times them against sequential loops.

Training algorithm A (the same function for shadow and released models)
    Full-batch gradient descent with heavy-ball momentum on D⁻ ∪ {z}, starting
    from ``model.init(PRNGKey(init_seed))`` — one initialisation shared by
    every shadow and released model (the paper's "known init"; with
    ``random_init=True`` each model draws its own, the paper's failing case).
    Every step is the shared composable DP-SGD step of
    :mod:`reconrisk._src.train.dpsgd` (clipped sum, noise of ``Release.noise``,
    momentum optimizer; ``StepConfig`` with sample rate 1). With a
    :class:`~reconrisk._src.release.Release` it is DP-GD: per-example clipping to
    C, N(0, σ²C²I) on the sum (the noise family keyed by ``Release.noise``),
    divided by n; momentum is post-processing. Without DP, C = inf and the
    noise std is 0: plain gradient descent on the mean loss. The noise std is
    a traced argument, so every ε of a grid runs the same compiled program.

Departures from the paper (spec_002 §3.3): the default model is Hayes, Mahloujifar & Balle's (2023)
``mlp`` (input→10→10, eLU) on the 8×8 digits (760 parameters), not the
784-input MNIST MLP (7,960), and the default run is shorter with a larger
learning rate (30 steps at 0.5 instead of 100 at 0.1). Parameters are
flattened with ``jax.flatten_util.ravel_pytree`` — per layer ``[b, w]``, the
colab's order — identically for shadow and released models (:func:`flatten`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..errors import ReconRiskError
from ..release import Release
from . import shadow_dense
from .clipping import cross_entropy
from .dpsgd import Batch, batch_clipped_sum, make_step_config, step_keys, step_optimizer, StepConfig
from .models import Model
from .noise import noise_fn

#: Default hyper-parameters (spec_002 §3.3's colab: lr 0.1, momentum 0.9, 100 steps; on the 8×8 digits we take
#: fewer, larger steps — lr 0.5, 30 steps — which reach ~75 % test accuracy with |D⁻| = 50).
DEFAULT_STEPS = 30
DEFAULT_LEARNING_RATE = 0.5
DEFAULT_MOMENTUM = 0.9
DEFAULT_INIT_SEED = 42


@dataclass(frozen=True)
class ShadowConfig:
    """The training algorithm A, known to the adversary (hashable: a static argument of ``jax.jit``).

    ``release``: None (no DP) or a full-batch Gaussian :class:`Release` whose
    ``steps`` must equal ``steps``.
    """

    steps: int = DEFAULT_STEPS
    learning_rate: float = DEFAULT_LEARNING_RATE
    momentum: float = DEFAULT_MOMENTUM
    init_seed: int = DEFAULT_INIT_SEED
    release: Release | None = None
    random_init: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", v.integer("steps", self.steps, minimum=1))
        object.__setattr__(self, "learning_rate", v.positive("learning_rate", self.learning_rate))
        object.__setattr__(self, "momentum", v.in_range("momentum", self.momentum, 0.0, 1.0, low_open=False))
        object.__setattr__(self, "init_seed", v.integer("init_seed", self.init_seed, minimum=0))
        r = self.release
        if r is not None:
            if not isinstance(r, Release) or not r.homogeneous or r.noise != "gaussian":
                raise ReconRiskError("release must be None or a homogeneous Gaussian reconrisk.Release")
            if r.sample_rate != 1.0:
                raise ReconRiskError(f"shadow training is full batch: release.sample_rate must be 1; found {r.sample_rate:g}")
            if r.steps != self.steps:
                raise ReconRiskError(f"release.steps must equal steps = {self.steps}; found {r.steps}")

    @property
    def dp(self) -> bool:
        return self.release is not None

    def to_dict(self) -> dict:
        return {"steps": self.steps, "learning_rate": self.learning_rate, "momentum": self.momentum,
                "init_seed": self.init_seed, "random_init": self.random_init,
                "release": None if self.release is None else self.release.to_dict()}

    def step_config(self, n: int):
        """The shared DP-SGD :class:`~reconrisk._src.train.dpsgd.StepConfig` on n = |D⁻| + 1 points (full batch, momentum).

        Without DP: C = inf (every clip factor is 1) and the traced noise std is
        0, so the step is plain gradient descent on the mean loss.
        """

        if self.release is None:
            return StepConfig(sample_rate=1.0, clip_norm=float("inf"), learning_rate=self.learning_rate,
                              normalizer=float(n), momentum=self.momentum)
        return make_step_config(self.release, n, self.learning_rate, "hard", momentum=self.momentum)

    def static(self, n: int) -> tuple:
        """The compiled part of A; the noise std σC is a traced argument (ε grids share one program)."""
        return (self.step_config(n), self.steps, self.init_seed, self.random_init)

    @property
    def noise_std(self) -> float:
        return 0.0 if self.release is None else self.release.noise_scale


def _plain_gradient(cfg) -> bool:
    """Whether the step config is plain GD (no clipping, no noise: C = inf, as :meth:`ShadowConfig.step_config` sets)."""
    return math.isinf(cfg.clip_norm)


def _train_one(model: Model, static: tuple, x_fixed, y_fixed, x_target, y_target, noise_std, key):
    """A(D⁻ ∪ {z}) for one target: the flat final parameters (jit/vmap-able): a ``lax.scan`` of :func:`_step`."""
    from .._jax import jax
    import jax.numpy as jnp

    carry, body = _step(model, static, x_fixed, y_fixed, x_target, y_target, noise_std, key)
    (params, _), _ = jax.lax.scan(body, carry, jnp.arange(static[1]))
    return flatten(params)


def _step(model: Model, static: tuple, x_fixed, y_fixed, x_target, y_target, noise_std, key):
    """(initial carry, ``body(carry, t) -> (carry, None)``): one step of A on D⁻ ∪ {z}, the generic program.

    Each step is the shared DP-SGD step of :mod:`reconrisk._src.train.dpsgd`, stage
    by stage: the clipped sum (``batch_clipped_sum``; full batch), the noise
    of ``Release.noise`` (``noise_fn``) keyed by ``step_keys``, and the update
    of ``step_optimizer`` (momentum). The clipped sum over D⁻ ∪ {z} is taken
    as (sum over D⁻) + (the target's term): under ``vmap`` over models D⁻ is
    then an *unbatched* operand, and JAX folds the models into the free
    dimension of one large matrix product per layer instead of many tiny
    batched ones (sums are additive; only float rounding differs from
    ``release_step`` on the concatenated data). Without DP (C = inf, noise
    std 0) the step is the plain gradient of the summed loss — no per-example
    norms, no zero-scale noise draw — which equals the clipped sum with every
    factor 1 to float rounding (tested). Called once per step from Python it
    is also the benchmark's "ordinary training loop" baseline.
    """
    from .._jax import jax
    import jax.numpy as jnp
    import optax
    from jax.flatten_util import ravel_pytree

    cfg, steps, init_seed, random_init = static
    init_key = jax.random.fold_in(key, 1) if random_init else jax.random.PRNGKey(init_seed)
    params = model.init(init_key)
    _, unravel = ravel_pytree(params)
    run_key = jax.random.fold_in(key, 0)
    opt = step_optimizer(cfg)
    add_noise = noise_fn(cfg.noise)
    full = lambda m: Batch(jnp.ones((m,), jnp.float32), None, None, jnp.bool_(False))  # noqa: E731
    xt, yt = x_target[None], y_target[None]

    if _plain_gradient(cfg):  # no DP: every clip factor is 1 and the noise std 0 — the plain batch gradient

        def loss(p):  # Σ over D⁻ ∪ {z} of the per-example losses, D⁻ unbatched under vmap as below
            return (jnp.sum(cross_entropy(model.logits(p, x_fixed), y_fixed))
                    + jnp.sum(cross_entropy(model.logits(p, xt), yt)))

        def plain(carry, t):
            p, state = carry
            updates, state = opt.update(jax.grad(loss)(p), state, p)
            return (optax.apply_updates(p, updates), state), None

        return (params, opt.init(params)), plain

    def body(carry, t):
        p, state = carry
        s_fixed, _ = batch_clipped_sum(model, p, x_fixed, y_fixed, full(x_fixed.shape[0]), cfg.clip_norm, cfg.clip_mode)
        s_target, _ = batch_clipped_sum(model, p, xt, yt, full(1), cfg.clip_norm, cfg.clip_mode)
        summed = ravel_pytree(s_fixed)[0] + ravel_pytree(s_target)[0]
        _, k_noise = step_keys(run_key, t)
        g = add_noise(k_noise, summed, noise_std)
        updates, state = opt.update(unravel(g), state, p)
        return (optax.apply_updates(p, updates), state), None

    return (params, opt.init(params)), body


def flatten(params):
    """The flat parameter vector in the one order used everywhere (``ravel_pytree``: per layer b, then w)."""
    from jax.flatten_util import ravel_pytree

    return ravel_pytree(params)[0]


def _check(model: Model, x_fixed, y_fixed, x_targets, y_targets):
    if not isinstance(model, Model):
        raise ReconRiskError(f"model must be a reconrisk Model (train.models.get_model); found {type(model).__name__}")
    xf = np.asarray(x_fixed, dtype=np.float32)
    yf = np.asarray(y_fixed, dtype=np.int32)
    xt = np.asarray(x_targets, dtype=np.float32)
    yt = np.asarray(y_targets, dtype=np.int32)
    d = model.input_dim
    if xf.ndim != 2 or xf.shape[1] != d or yf.shape != (xf.shape[0],) or xf.shape[0] < 1:
        raise ReconRiskError(f"x_fixed must be (n, {d}) with n >= 1 and y_fixed (n,); found {xf.shape} and {yf.shape}")
    if xt.ndim != 2 or xt.shape[1] != d or yt.shape != (xt.shape[0],) or xt.shape[0] < 1:
        raise ReconRiskError(f"x_targets must be (N, {d}) with N >= 1 and y_targets (N,); found {xt.shape} and {yt.shape}")
    for name, arr in (("y_fixed", yf), ("y_targets", yt)):
        if arr.min() < 0 or arr.max() >= model.num_classes:
            raise ReconRiskError(f"{name} must hold labels in [0, {model.num_classes - 1}]; found {int(arr.min())}..{int(arr.max())}")
    return xf, yf, xt, yt


_COMPILED: dict = {}


def _vectorised(model: Model, cfg: ShadowConfig, n: int, program: str = "auto"):
    """The jitted program for a chunk of models: (xf, yf, xt (M, d), yt (M,), noise std, keys (M, 2)) -> (M, P).

    ``program``: ``"dense"`` (:mod:`reconrisk._src.train.shadow_dense`: the batched
    matrix-product program, dense models), ``"vmap"`` (``jax.vmap``
    of the one-model program: any model, DP or not) or ``"auto"`` (dense
    where it applies).
    """
    from .._jax import jax

    static = cfg.static(n)
    program = _program(model, cfg, n, program)
    key = (program, model, static)
    if key not in _COMPILED:
        if program == "dense":
            run = shadow_dense.dense_program(model, static)  # refuses a model or config it does not support
            _COMPILED[key] = jax.jit(run)
        else:
            one = lambda xf, yf, xt, yt, s, k: _train_one(model, static, xf, yf, xt, yt, s, k)  # noqa: E731
            _COMPILED[key] = jax.jit(jax.vmap(one, in_axes=(None, None, 0, 0, None, 0)))
    return _COMPILED[key]


def _program(model: Model, cfg: ShadowConfig, n: int, program: str) -> str:
    """``"dense"`` or ``"vmap"``: ``program`` checked, ``"auto"`` resolved (dense where it applies)."""

    if program == "auto":
        return "dense" if shadow_dense.supports(model, cfg.step_config(n)) else "vmap"
    if program not in ("dense", "vmap"):
        raise ReconRiskError(f"program must be 'auto', 'dense' or 'vmap'; found {program!r}")
    return program


def _single(model: Model, cfg: ShadowConfig, n: int):
    from .._jax import jax

    static = cfg.static(n)
    key = ("one", model, static)
    if key not in _COMPILED:
        _COMPILED[key] = jax.jit(lambda xf, yf, xt, yt, s, k: _train_one(model, static, xf, yf, xt, yt, s, k))
    return _COMPILED[key]


def model_keys(seed: int, count: int, offset: int = 0):
    """Per-model keys fold_in(PRNGKey(seed), offset + i): model i's noise does not depend on the chunking."""
    from .._jax import jax
    import jax.numpy as jnp

    base = jax.random.PRNGKey(v.integer("seed", seed, minimum=0))
    return jax.vmap(lambda i: jax.random.fold_in(base, i))(jnp.arange(offset, offset + count))


def train_shadow_models(model: Model, x_fixed, y_fixed, x_targets, y_targets, cfg: ShadowConfig, *, seed: int = 0,
                        offset: int = 0, chunk: int | None = None, pad_chunks: bool = False, progress=None,
                        program: str = "auto") -> np.ndarray:
    """θ_i = A(D⁻ ∪ {z_i}) for every row of ``x_targets``: flat parameters (N, P), float32.

    One jitted program per chunk of ``chunk`` models (default
    :func:`default_chunk`): for dense models the
    batched matrix-product program of
    :mod:`reconrisk._src.train.shadow_dense`, otherwise ``jax.vmap`` of the
    one-model program (``program="dense"|"vmap"`` forces one; the two train
    the same models to float rounding). The last chunk is padded
    so that one compiled program serves every chunk; with ``pad_chunks`` even
    fewer than ``chunk`` models are padded up to it, so that calls with
    different N share the program). Model i uses the key
    ``fold_in(PRNGKey(seed), offset + i)`` for its DP noise (and its init if
    ``cfg.random_init``): the same numbers whatever ``chunk`` is. Give the
    released models a different ``seed`` or ``offset`` than the shadow models
    (the adversary does not know the released model's noise).
    ``progress(k)`` is called after each chunk of k models (in order). On
    CPU, chunks run in a pool of two threads per core (the compiled program is
    shared; each chunk writes its own rows, so the result does not depend on
    the threads).
    """
    from .._jax import jax

    if not isinstance(cfg, ShadowConfig):
        raise ReconRiskError(f"cfg must be a ShadowConfig; found {type(cfg).__name__}")
    xf, yf, xt, yt = _check(model, x_fixed, y_fixed, x_targets, y_targets)
    chunk = default_chunk(model, cfg, xf.shape[0], program) if chunk is None else v.integer("chunk", chunk, minimum=1)
    offset = v.integer("offset", offset, minimum=0)
    n = xt.shape[0]
    if not pad_chunks:
        chunk = min(chunk, n)
    fn = _vectorised(model, cfg, xf.shape[0] + 1, program)
    keys = np.asarray(model_keys(seed, n, offset))
    out = np.empty((n, model.num_params), np.float32)
    xf_j, yf_j, noise = jax.device_put((xf, yf, np.float32(cfg.noise_std)))
    starts = list(range(0, n, chunk))

    def one_chunk(start: int) -> int:
        stop = min(n, start + chunk)
        idx = np.concatenate([np.arange(start, stop), np.full(chunk - (stop - start), start)])
        out[start:stop] = np.asarray(fn(xf_j, yf_j, xt[idx], yt[idx], noise, keys[idx]))[: stop - start]
        return stop - start

    # the first chunk runs here (it compiles the program once), the others in a pool if there are several
    workers = min(len(starts) - 1, _chunk_workers())
    first = one_chunk(starts[0])
    if progress is not None:
        progress(first)
    if workers <= 1:
        done = map(one_chunk, starts[1:])
    else:  # XLA releases the GIL while a program runs: two chunks per core at a time
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="reconrisk-shadow")
        done = pool.map(one_chunk, starts[1:])
    try:
        for k in done:
            if progress is not None:
                progress(k)
    finally:
        if workers > 1:
            pool.shutdown(wait=True, cancel_futures=True)
    return out


#: On CPU a dense-program chunk holds about this many activations per layer (models × (|D⁻| + 1) × widest
#: layer), so that a step's arrays stay in a core's L2 cache (digits MLP, 2-core CPU: at |D⁻| = 500, chunks of
#: 16 trained ~40 % more models per second than chunks of 128; at |D⁻| = 50, 64–128 were best).
CPU_CHUNK_ACTIVATIONS = 1 << 16


def default_chunk(model: Model, cfg: ShadowConfig, n_fixed: int, program: str = "auto") -> int:
    """Models per program call: 128, except for the dense program on CPU: the power of two in [8, 128]
    nearest (in log scale) to :data:`CPU_CHUNK_ACTIVATIONS` / ((|D⁻| + 1) × widest layer)."""

    from .._jax import jax

    if jax.default_backend() != "cpu" or _program(model, cfg, n_fixed + 1, program) != "dense":
        return 128
    width = max(layer.out_features for layer in model.layers)
    fit = CPU_CHUNK_ACTIVATIONS / ((n_fixed + 1) * width)
    return int(2 ** min(7, max(3, round(math.log2(fit)))))


def _chunk_workers() -> int:
    """Chunks trained at once: two per CPU core on the CPU backend, one elsewhere (an accelerator runs one
    program at a time). Each program mostly runs on one core (its small per-model products do not split);
    a second thread per core fills the gaps while the first copies its inputs in and its parameters out
    (measured on 2 cores, chunks of 128: 4 threads +5–14 % over 2, 6–8 no better)."""

    from .._jax import jax

    if jax.default_backend() != "cpu":
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - platforms without sched_getaffinity
        cores = os.cpu_count() or 1
    return 2 * max(1, cores)


def train_shadow_models_sequential(model: Model, x_fixed, y_fixed, x_targets, y_targets, cfg: ShadowConfig, *,
                                   seed: int = 0, offset: int = 0, program: str = "scan") -> np.ndarray:
    """The same models one by one, in a Python loop: the benchmark's sequential baselines.

    ``program``: ``"scan"`` — one jitted whole-training program (``lax.scan``
    over the steps) per model, the generic one-model program; ``"dense"`` —
    the batched program of :mod:`reconrisk._src.train.shadow_dense` called with
    one model at a time (dense models); ``"steps"`` — the ordinary
    training loop: a jitted step function called ``steps`` times per model.
    """
    import jax.numpy as jnp

    xf, yf, xt, yt = _check(model, x_fixed, y_fixed, x_targets, y_targets)
    n = xf.shape[0] + 1
    keys = model_keys(seed, xt.shape[0], v.integer("offset", offset, minimum=0))
    xf_j, yf_j = jnp.asarray(xf), jnp.asarray(yf)
    noise = jnp.float32(cfg.noise_std)
    out = np.empty((xt.shape[0], model.num_params), np.float32)
    if program == "scan":
        fn = _single(model, cfg, n)
        for i in range(xt.shape[0]):
            out[i] = np.asarray(fn(xf_j, yf_j, jnp.asarray(xt[i]), jnp.asarray(yt[i]), noise, keys[i]))
    elif program == "dense":
        fn = _vectorised(model, cfg, n, "dense")
        for i in range(xt.shape[0]):
            out[i] = np.asarray(fn(xf_j, yf_j, jnp.asarray(xt[i : i + 1]), jnp.asarray(yt[i : i + 1]), noise,
                                   keys[i : i + 1]))[0]
    elif program == "steps":
        init, step = _stepwise(model, cfg, n)
        for i in range(xt.shape[0]):
            args = (xf_j, yf_j, jnp.asarray(xt[i]), jnp.asarray(yt[i]), noise, keys[i])
            carry = init(*args)
            for t in range(cfg.steps):
                carry = step(carry, jnp.int32(t), *args)
            out[i] = np.asarray(flatten(carry[0]))
    else:
        raise ReconRiskError(f"program must be 'scan', 'dense' or 'steps'; found {program!r}")
    return out


def _stepwise(model: Model, cfg: ShadowConfig, n: int):
    """(jitted init, jitted one-step function) of the generic program: the ordinary per-step training loop."""
    from .._jax import jax

    static = cfg.static(n)
    key = ("steps", model, static)
    if key not in _COMPILED:
        init = jax.jit(lambda *a: _step(model, static, *a)[0])
        step = jax.jit(lambda carry, t, *a: _step(model, static, *a)[1](carry, t)[0])
        _COMPILED[key] = (init, step)
    return _COMPILED[key]


def shadow_accuracy(model: Model, thetas, x, y) -> np.ndarray:
    """Accuracy on (x, y) of each flat parameter vector in ``thetas`` (N, P)."""
    from .._jax import jax
    import jax.numpy as jnp

    unravel = model.unravel()
    xs, ys = jnp.asarray(x, jnp.float32), jnp.asarray(y)
    acc = jax.jit(jax.vmap(lambda th: jnp.mean(jnp.argmax(model.logits(unravel(th), xs), 1) == ys)))
    return np.asarray(acc(jnp.asarray(thetas)))


@dataclass(frozen=True)
class Splits:
    """Disjoint index sets of a dataset (spec_002 §3.2): fixed set D⁻, shadow pool, test targets."""

    fixed: np.ndarray
    shadow: np.ndarray
    test: np.ndarray
    seed: int

    def to_dict(self) -> dict:
        return {"fixed": int(self.fixed.size), "shadow": int(self.shadow.size), "test": int(self.test.size),
                "seed": self.seed}


def make_splits(size: int, n_fixed: int, n_shadow: int, n_test: int, seed: int = 0) -> Splits:
    """A seeded permutation cut consecutively into fixed | test | shadow (the rest of the data is unused)."""
    size = v.integer("dataset size", size, minimum=3)
    n_fixed = v.integer("fixed_size", n_fixed, minimum=1)
    n_shadow = v.integer("shadow_models", n_shadow, minimum=1)
    n_test = v.integer("targets", n_test, minimum=1)
    seed = v.integer("seed", seed, minimum=0)
    if n_fixed + n_shadow + n_test > size:
        raise ReconRiskError(f"fixed_size + shadow_models + targets must be <= the dataset size {size}; "
                             f"found {n_fixed} + {n_shadow} + {n_test} = {n_fixed + n_shadow + n_test}")
    perm = np.random.default_rng(seed).permutation(size)
    return Splits(perm[:n_fixed], perm[n_fixed + n_test: n_fixed + n_test + n_shadow], perm[n_fixed: n_fixed + n_test],
                  seed)


__all__ = [
    "ShadowConfig",
    "Splits",
    "flatten",
    "make_splits",
    "model_keys",
    "shadow_accuracy",
    "train_shadow_models",
    "train_shadow_models_sequential",
]
