"""Fisher information leakage (FIL) accounting for DP-SGD (Guo, Karrer, Chaudhuri & van der Maaten 2022, §6, Algorithm 1, Eqs. 1–5).

Simulation layer: JAX is imported inside the functions.

Per-step FIL (Eq. 1, with the noise scale corrected)
    One DP-SGD step releases ``Σ_{z∈B} g̃(w; z) + N(0, s²I)`` with
    ``s = σC`` (spec_001 §4.2; the paper's Eq. 1 writes σ² and drops C²;
    ``paper_literal=True`` reproduces it). For a target z in the batch this is
    a Gaussian mechanism of ``ζ ↦ g̃(w; ζ, y)``, so

        I_step(z) = J(z)ᵀJ(z) / s²,    J(z) = ∂g̃(w; ζ, y)/∂ζ |_{ζ=z}   (p × d),

    where ``g̃ = g / (GELU(||g||/C − 1) + 1)`` is the GELU soft clip of the
    per-example parameter gradient g (a tiny 1e-14 is added under the square
    root of ||g||², as the authors add 1e-7 to the norm, so the clip stays
    differentiable at g = 0). We store per example the scalar
    ``η̄²_step = Tr(I_step)/d`` (dFIL) or the spectral ``η²_step = ||I_step||₂``.

Three estimators of ``||J||²`` (the ``method`` argument)
    * ``"trace_exact"``: ``||J||_F²`` from the full Jacobian
      (``jax.jacfwd``: d forward-over-reverse passes). Small models only.
    * ``"trace_sampled"`` (Eq. 5, default): draw m coordinates i_1..i_m
      uniformly *with replacement*, fresh for every example and every step
      (the authors' code reuses one key for all draws of a step — spec_001
      §10.6 — we do not), and estimate ``(d/m) Σ_k ||J e_{i_k}||²`` with m
      forward-over-reverse JVPs. Unbiased for ``||J||_F²``.
    * ``"spectral"``: power iteration ``v ← Jᵀ(Jv)/||·||`` with JVP + VJP
      (20 iterations from a random normal start); ``||Jv||²`` estimates
      ``||J||₂²`` from below (power iteration converges from below).

How the trace estimators are computed (:func:`_route`; same numbers, same coordinates)
    * dense models whose first layer has h ≤ m (or ≤ d) units: the
      first-layer reduction of :mod:`reconrisk._src.train.fil_dense`;
    * small conv-first models (the digits CNN: d ≤ 256 pixels, and d ≤ 2m
      for Eq. 5): every pixel's ``‖J e_i‖²`` from first-layer tangent tables
      (:mod:`reconrisk._src.train.fil_pixel`): the second layer's tap tangent is
      never formed, quantities linear in it are GEMMs with a per-step table;
    * any other model (the CNN on larger inputs, wide MLPs): batched ghost tangents
      (:mod:`reconrisk._src.train.fil_ghost`): one vmapped linearised pass of the
      batch's taps and signals for all probes, Gram-form norms, no per-example
      gradient vectors;
    * the per-example forward-over-reverse JVPs of :func:`jacobian_sq_norm`
      (the reference; the spectral estimator always uses them).
    The trainer's hook evaluates the padded Poisson gather in chunks of
    :data:`ROW_CHUNK` rows, several side by side (independent computations,
    which XLA:CPU runs concurrently), and skips the chunks after the last member.

Composition and subsampling (Theorems 3–4, Eqs. 2–4)
    Per-step values are summed over the steps in which the example was in
    the batch and multiplied by ``κ = q/(q + (1 − q)e^{−ε})`` (Eq. 3) where
    ε is the (ε, δ)-DP of one step with sensitivity ``2 × 1.115C`` (Alg. 1
    line 4) — it holds except with probability T·δ — or κ = 1 (Eq. 2,
    ``use_subsampling_factor=False``). Summing spectral norms bounds the spectral norm of
    the sum (sub-additivity). The sum over one run is an unbiased Monte-Carlo
    estimate of the Theorem 3/4 upper bound on ``I_h(z)``; R repeated runs
    are averaged. The per-example bound for unbiased attacks is ``1/η̄²``
    (plug-in; not itself unbiased, spec_001 §10.6).

Sampling
    Batches are Poisson samples (each point independently with probability
    q), as the simulator (:mod:`reconrisk._src.train.dpsgd`) and the RDP
    accountant assume; Guo et al. 2022, Theorem 4 is stated for uniformly random
    fixed-size batches. The convexity argument behind Eqs. 2–3 only needs the
    target to be in the batch with probability q independently of the other
    members, which Poisson sampling satisfies.

Trainer
    Accounting is a :class:`FILHook` on the shared trainer
    (:func:`reconrisk._src.train.dpsgd.train`): same Poisson batches and padded
    gather, clipping, noise and update (the optax transformation with momentum:
    Guo et al. 2022 uses 0.5, ``v ← μv + g_t/(qN)``, ``w ← w − ρv``). The hook
    evaluates the FIL of the batch members at the parameters *before* the
    update (w_{t−1}; Algorithm 1 line 8's ``w_t`` is a typo). Momentum is
    post-processing of the released noisy gradients, so Theorem 3 still
    applies. Run r uses the keys of :func:`fil_run_keys`; the parameters equal
    those of ``train(..., key=k_train)`` without the hook (tested).

Models
    The simulator's models use eLU (C¹ with a second derivative defined
    except at 0) rather than the tanh of Guo et al. 2022, App. C; the input-Jacobian
    of the gradient exists almost everywhere, which is all the estimators
    need. ReLU would give a zero/undefined mixed derivative.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .. import _validate as v
from .._deprecated import warn_renamed
from ..accounting.order2 import release_rdp_alpha2
from ..accounting.subsampling import GELU_CLIP_OVERSHOOT, SubsamplingFactor, subsampling_factor
from ..errors import ReconRiskError
from ..release import Release
from ..results import Bound
from ..theory.mse import dfil_bound, rdp_mse
from .clipping import clip_factors, cross_entropy
from .dpsgd import check_data, model_accuracy, StepHook, train
from .fil_dense import dense_trace_sq_norms
from .fil_ghost import ghost_trace_sq_norms
from .fil_pixel import applies, pixel_trace_sq_norms

FIL_METHODS = ("trace_sampled", "trace_exact", "spectral")
DEFAULT_NUM_COORDS = 50
DEFAULT_POWER_ITERS = 20
_NORM_EPS_SQ = 1e-14
#: Rows of a padded Poisson batch evaluated together by :class:`FILHook` (chunks after the last member are skipped).
ROW_CHUNK = 16
#: Chunks per iteration of :class:`FILHook`'s loop, evaluated side by side as independent computations.
LOOP_CHUNKS = 2
#: At most this many chunks are evaluated side by side before the loop (:func:`lead_chunks`).
MAX_LEAD_CHUNKS = 8


# ----------------------------------------------------------------------------------------
# ||J||² of a function ζ ↦ f(ζ) at one point, by three estimators
# ----------------------------------------------------------------------------------------
def jacobian_sq_norm(f, z, method: str = "trace_sampled", *, key=None, num_coords: int = DEFAULT_NUM_COORDS,
                     power_iters: int = DEFAULT_POWER_ITERS):
    """``||J_f(z)||_F²`` (trace methods) or ``||J_f(z)||₂²`` (spectral) for ``f: R^d → R^p`` (traceable by JAX).

    ``key`` (a JAX PRNG key) is needed by ``trace_sampled`` and ``spectral``.
    """
    from .._jax import jax
    import jax.numpy as jnp

    d = z.shape[0]
    if method == "trace_exact":
        J = jax.jacfwd(f)(z)
        return jnp.sum(J**2)
    if method == "trace_sampled":
        idx = jax.random.randint(key, (num_coords,), 0, d)
        tangents = jax.nn.one_hot(idx, d, dtype=z.dtype)
        cols = jax.vmap(lambda t: jax.jvp(f, (z,), (t,))[1])(tangents)  # (m, p) = J e_i
        return d * jnp.mean(jnp.sum(cols**2, axis=-1))
    if method == "spectral":
        v0 = jax.random.normal(key, (d,), z.dtype)
        _, vjp = jax.vjp(f, z)

        def body(_, vec):
            u = jax.jvp(f, (z,), (vec,))[1]
            w = vjp(u)[0]
            return w / jnp.maximum(jnp.linalg.norm(w), 1e-30)

        vec = jax.lax.fori_loop(0, power_iters, body, v0 / jnp.linalg.norm(v0))
        u = jax.jvp(f, (z,), (vec,))[1]
        return jnp.sum(u**2)
    raise ReconRiskError(f"method must be one of {', '.join(map(repr, FIL_METHODS))}; found {method!r}")


def gaussian_mechanism_fil(f, z, noise_std: float, method: str = "trace_exact", *, key=None,
                           num_coords: int = DEFAULT_NUM_COORDS, power_iters: int = DEFAULT_POWER_ITERS) -> float:
    """FIL of ``h = f(z) + N(0, s²I)`` about z: the dFIL ``Tr(JᵀJ)/(d s²)`` or, with ``method="spectral"``, ``||JᵀJ||₂/s²``."""
    from .._jax import jax
    import jax.numpy as jnp

    method = v.choice("method", method, FIL_METHODS)
    s = v.positive("noise_std", noise_std)
    z = jnp.asarray(z, jnp.float32)
    if method != "trace_exact" and key is None:
        key = jax.random.PRNGKey(0)
    sq = jacobian_sq_norm(f, z, method, key=key, num_coords=num_coords, power_iters=power_iters)
    scale = s**2 if method == "spectral" else s**2 * z.shape[0]
    return float(sq) / scale


# ----------------------------------------------------------------------------------------
# the clipped per-example gradient as a function of the input
# ----------------------------------------------------------------------------------------
def clipped_grad_fn(model, params, clip_norm: float, clip_mode: str = "gelu"):
    """``(x (d,), y ()) ↦ g̃(w; x, y)`` flattened to (p,): the clipped per-example gradient at ``params``.

    Uses the simulator's loss and clip factors (:func:`reconrisk._src.train.dpsgd.cross_entropy`,
    :func:`~reconrisk._src.train.dpsgd.clip_factors`), so the function differentiated is
    the one the trainer sums.
    """
    from .._jax import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    flat, unravel = ravel_pytree(params)

    def g(x, y):
        def loss(theta):
            return cross_entropy(model.logits(unravel(theta), x[None]), jnp.reshape(y, (1,)))[0]

        grad = jax.grad(loss)(flat)
        sq = jnp.sum(grad**2) + _NORM_EPS_SQ
        return grad * clip_factors(sq, clip_norm, clip_mode)

    return g


def per_example_fil(model, params, x, y, *, clip_norm: float, noise_std: float, method: str = "trace_sampled",
                    key=None, num_coords: int = DEFAULT_NUM_COORDS, clip_mode: str = "gelu",
                    power_iters: int = DEFAULT_POWER_ITERS):
    """Per-step FIL of each example of (x, y) if it were in the batch (Guo et al. 2022, Eq. 1 / Eq. 5).

    Returns a (B,) JAX array: ``η̄²_step = ||J||_F²/(d s²)`` for the trace
    methods or ``η²_step = ||J||₂²/s²`` for ``"spectral"``, with
    ``s = noise_std`` (σC for DP-SGD). ``key`` is split per example.
    Traceable (use inside ``jax.jit``); no validation beyond the method.
    """
    from .._jax import jax

    if method not in FIL_METHODS:
        raise ReconRiskError(f"method must be one of {', '.join(map(repr, FIL_METHODS))}; found {method!r}")
    keys = jax.random.split(key if key is not None else jax.random.PRNGKey(0), x.shape[0])
    return _fil_rows(model, params, x, y, keys, clip_norm, noise_std, method, num_coords, clip_mode, power_iters)


def _fil_rows(model, params, x, y, keys, clip_norm, noise_std, method, num_coords, clip_mode, power_iters):
    """:func:`per_example_fil` with one key per row given (so that row chunks reuse the keys of the whole batch)."""
    from .._jax import jax

    d = x.shape[1]
    route = _route(model, method, num_coords)
    if route != "jvp":
        idx = None
        if method == "trace_sampled":  # the same coordinates as the JVP path below draws
            idx = jax.vmap(lambda k: jax.random.randint(k, (num_coords,), 0, d))(keys)
        trace = {"dense": dense_trace_sq_norms, "pixel": pixel_trace_sq_norms, "ghost": ghost_trace_sq_norms}[route]
        sq = trace(model, params, x, y, clip_norm, clip_mode, idx, _NORM_EPS_SQ)
        return sq / (noise_std**2 * d)
    g = clipped_grad_fn(model, params, clip_norm, clip_mode)

    def one(xi, yi, ki):
        return jacobian_sq_norm(lambda z: g(z, yi), xi, method, key=ki, num_coords=num_coords,
                                power_iters=power_iters)

    sq = jax.vmap(one)(x, y, keys)
    return sq / (noise_std**2 if method == "spectral" else noise_std**2 * d)


def _route(model, method: str, num_coords: int) -> str:
    """Which computation :func:`per_example_fil` uses: ``"dense"``, ``"pixel"``, ``"ghost"`` or ``"jvp"``.

    The trace estimators use the first-layer reduction (:mod:`reconrisk._src.train.fil_dense`)
    where it is exact and cheaper (:func:`_reducible`), the all-pixel tables of
    :mod:`reconrisk._src.train.fil_pixel` for small conv-first models (:func:`.fil_pixel.applies`),
    otherwise the batched ghost tangents (:mod:`reconrisk._src.train.fil_ghost`), which equal
    the per-example JVPs of :func:`jacobian_sq_norm` for any model. The spectral
    estimator uses the JVP/VJP power iteration of :func:`jacobian_sq_norm`.
    """

    if method == "spectral":
        return "jvp"
    if _reducible(model, method, num_coords):
        return "dense"
    return "pixel" if applies(model, method, num_coords) else "ghost"


def _reducible(model, method: str, num_coords: int) -> bool:
    """Whether the first-layer reduction (:mod:`reconrisk._src.train.fil_dense`) is exact here and cheaper than JVPs.

    All layers dense (MLPs, logistic regression) and the first layer's width
    h at most the number of probes the JVP path would run (m coordinates, or
    d for the exact trace).
    """
    if method == "spectral" or not model.layers or any(layer.kind != "dense" for layer in model.layers):
        return False
    h = model.layers[0].out_features
    return h <= (num_coords if method == "trace_sampled" else model.input_dim)


# ----------------------------------------------------------------------------------------
# Algorithm 1: DP-SGD with FIL accounting
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FILConfig:
    """How the FIL is accounted (everything except the release and the data)."""

    method: str = "trace_sampled"
    num_coords: int = DEFAULT_NUM_COORDS
    power_iters: int = DEFAULT_POWER_ITERS
    clip_mode: str = "gelu"
    learning_rate: float = 0.1
    momentum: float = 0.5
    use_subsampling_factor: bool = True  # Guo et al. 2022, Eq. 3; False: factor 1 (Eq. 2)
    delta: float | None = None  # per-step δ of Eq. 3; None: 1/(n·T), so that T·δ ≤ 1/n
    paper_literal: bool = False  # s = σ (the paper's Eq. 1) instead of σC
    runs: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "method", v.choice("method", self.method, FIL_METHODS))
        # at most 10⁴ sampled coordinates per example and step (a request of 1e12 crashed inside JAX)
        object.__setattr__(self, "num_coords", v.integer("num_coords", self.num_coords, minimum=1, maximum=10**4))
        object.__setattr__(self, "power_iters", v.integer("power_iters", self.power_iters, minimum=1))
        object.__setattr__(self, "clip_mode", v.choice("clip_mode", self.clip_mode, ("gelu", "hard")))
        object.__setattr__(self, "learning_rate", v.positive("learning_rate", self.learning_rate))
        object.__setattr__(self, "momentum", v.in_range("momentum", self.momentum, 0.0, 1.0, low_open=False))
        if self.delta is not None:
            object.__setattr__(self, "delta", v.probability_open("delta", self.delta))
        object.__setattr__(self, "runs", v.integer("runs", self.runs, minimum=1, maximum=10**4))
        object.__setattr__(self, "seed", v.integer("seed", self.seed, minimum=0))

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class FILAccounting:
    """Per-example FIL after DP-SGD (mean over runs) and the bounds it gives.

    ``fil``: (n,) ``η̄²(z)`` (trace methods) or spectral ``η²(z)`` summed over
    steps, scaled by κ, averaged over runs; ``fil_runs``: (runs, n).
    ``bounds``: per-example MSE lower bounds ``1/fil`` for unbiased attacks. ``rdp_mse``: Guo et al.'s (2022)
    Theorem 1 at ``rdp_epsilon``, a :class:`~reconrisk._src.results.Bound` with a lower end only
    (``rdp_mse_bound``, its float of earlier releases, still reads, deprecated).
    """

    fil: np.ndarray
    fil_runs: np.ndarray
    measure: str  # "dfil" or "spectral"
    release: Release
    config: FILConfig
    noise_std: float
    subsampling: SubsamplingFactor | None
    subsampling_factor: float
    rdp_epsilon: float
    rdp_mse: Bound
    test_accuracy: float | None
    test_accuracy_runs: tuple
    train_seconds: float = field(default=0.0, compare=False)
    params_runs: tuple = field(default=(), compare=False, repr=False)  # final parameters of every run

    @property
    def bounds(self) -> np.ndarray:
        return dfil_bound(self.fil)

    @property
    def rdp_mse_bound(self) -> float:
        warn_renamed("FILAccounting.rdp_mse_bound", "FILAccounting.rdp_mse.lower", "reconrisk")
        return self.rdp_mse.lower

    @property
    def max_fil_bound(self) -> float:
        """``1/max_z η̄²(z)``: the worst-case example's bound (Fig. 5 'max-dFIL')."""
        return float(dfil_bound(float(np.max(self.fil))))

    @property
    def median_fil_bound(self) -> float:
        """``1/median_z η̄²(z)`` (Fig. 5 'median-dFIL')."""
        return float(dfil_bound(float(np.median(self.fil))))

    def summary(self) -> dict:
        b = self.bounds
        return {"min": float(np.min(b)), "median": float(np.median(b)), "max": float(np.max(b))}

    def to_dict(self) -> dict:
        return {
            "release": self.release.to_dict(),
            "config": self.config.to_dict(),
            "measure": self.measure,
            "noise_std": self.noise_std,
            "subsampling_factor": self.subsampling_factor,
            "subsampling": None if self.subsampling is None else self.subsampling.to_dict(),
            "rdp_epsilon": self.rdp_epsilon,
            "rdp_mse_bound": self.rdp_mse.lower,
            "dfil_bound": self.summary(),
            "max_dfil_bound": self.max_fil_bound,
            "median_dfil_bound": self.median_fil_bound,
            "test_accuracy": self.test_accuracy,
            "train_seconds": self.train_seconds,
        }


@dataclass(frozen=True)
class FILHook(StepHook):
    """Algorithm 1 lines 6–9 as a step hook: add κ·FIL(w_{t−1}; z) of every batch member z.

    State ``(acc (n,), factor, noise_std, k_fil)``: the running per-example sums,
    the subsampling factor, the FIL noise scale s and the FIL key (step t
    uses ``fold_in(k_fil, t)``). The batch's padded gather (``info.batch``)
    is the trainer's own, so only members are evaluated.
    """

    model: object
    method: str
    num_coords: int
    power_iters: int
    clip_mode: str
    clip_norm: float
    lead_chunks: int = 1  # chunks evaluated side by side before the loop (:func:`lead_chunks`)

    def step(self, state, info):
        from .._jax import jax
        import jax.numpy as jnp

        acc, factor, noise_std, k_fil = state
        kt = jax.random.fold_in(k_fil, info.t)
        batch = info.batch

        def fil_of(x, y, keys):
            return _fil_rows(self.model, info.params, x, y, keys, self.clip_norm, noise_std, self.method,
                             self.num_coords, self.clip_mode, self.power_iters)

        if batch.index is None:  # evaluate every example, keep the members
            keys = jax.random.split(kt, info.x.shape[0])
            acc = acc + factor * fil_of(info.x, info.y, keys) * batch.mask
            return (acc, factor, noise_std, jnp.asarray(k_fil)), ()
        # The padded gather holds the members first (pad_members), then padding. It is evaluated in chunks of
        # ROW_CHUNK rows, several chunks side by side as independent computations (XLA:CPU runs independent
        # operations concurrently: on 2 cores this measured ~1.8x the throughput of one chunk at a time, and
        # less CPU time than one computation over the same rows): first ``lead_chunks`` chunks (enough for
        # the expected batch size), then LOOP_CHUNKS chunks per loop iteration until the last member. The keys
        # are those of the whole gather, so the numbers do not depend on the chunking.
        cap = batch.index.shape[0]
        r = min(ROW_CHUNK, cap)
        lead = max(1, min(self.lead_chunks, -(-cap // r)))
        span = LOOP_CHUNKS * r
        nloop = -(-max(cap - lead * r, 0) // span)
        pad = lead * r + nloop * span - cap
        index = jnp.concatenate([batch.index, jnp.zeros((pad,), batch.index.dtype)])
        valid = jnp.concatenate([batch.valid, jnp.zeros((pad,), batch.valid.dtype)])
        keys = jax.random.split(kt, cap)
        keys = jnp.concatenate([keys, jnp.broadcast_to(keys[:1], (pad,) + keys.shape[1:])])
        count = jnp.sum(batch.valid).astype(jnp.int32)

        def add_chunks(acc, start, nchunks):  # rows [start, start + nchunks·r), one computation per chunk
            rows = jax.lax.dynamic_slice_in_dim(index, start, nchunks * r)
            ks = jax.lax.dynamic_slice_in_dim(keys, start, nchunks * r)
            ok = jax.lax.dynamic_slice_in_dim(valid, start, nchunks * r)
            vals = jnp.concatenate([fil_of(info.x[rows[c * r:(c + 1) * r]], info.y[rows[c * r:(c + 1) * r]],
                                           ks[c * r:(c + 1) * r]) for c in range(nchunks)])
            return acc.at[rows].add(factor * vals * ok)

        acc = add_chunks(acc, 0, lead)

        def body(carry):
            j, acc = carry
            return j + 1, add_chunks(acc, lead * r + j * span, LOOP_CHUNKS)

        _, acc = jax.lax.while_loop(lambda c: lead * r + c[0] * span < count, body, (jnp.int32(0), acc))
        return (acc, factor, noise_std, jnp.asarray(k_fil)), ()


def lead_chunks(n: int, sample_rate: float) -> int:
    """ROW_CHUNK-row chunks :class:`FILHook` evaluates before its loop: enough for the expected batch q·n
    (⌈q·n / ROW_CHUNK⌉), 1 to :data:`MAX_LEAD_CHUNKS`. Measured on the digits CNN (q·n = 67): 5 chunks
    18.2–18.7 ms per step, 4 chunks and the loop for the rest 27 ms, 6 chunks 23 ms."""
    return int(min(MAX_LEAD_CHUNKS, max(1, math.ceil(sample_rate * n / ROW_CHUNK))))


def train_dpsgd_with_fil(model, release: Release, x, y, *, x_test=None, y_test=None,
                         config: FILConfig | None = None, chunk_steps: int = 64, progress=None) -> FILAccounting:
    """Guo et al. 2022, Algorithm 1 on (x, y): DP-SGD as ``release`` describes, with per-example FIL accounting.

    ``config`` (:class:`FILConfig`) selects the estimator, clipping, learning
    rate, momentum, the subsampling factor and the number of repeated runs. ``progress(k)`` is
    called after every k steps (all runs: ``runs × steps`` in total).
    """

    import jax.numpy as jnp

    cfg = config if config is not None else FILConfig()
    if not isinstance(cfg, FILConfig):
        raise ReconRiskError(f"config must be a FILConfig; found {type(cfg).__name__}")
    x, y = check_data(model, x, y)
    if (x_test is None) != (y_test is None):
        raise ReconRiskError("give both x_test and y_test, or neither")
    if x_test is not None:
        x_test, y_test = check_data(model, x_test, y_test, "x_test")
    chunk_steps = v.integer("chunk_steps", chunk_steps, minimum=1)
    n, d = x.shape
    sigma, q, T = release.noise_multiplier, release.sample_rate, release.steps
    noise_std = sigma if cfg.paper_literal else release.noise_std
    overshoot = GELU_CLIP_OVERSHOOT if cfg.clip_mode == "gelu" else 1.0
    sub = None
    factor = 1.0
    if cfg.use_subsampling_factor and q < 1.0:
        sub = subsampling_factor(sigma, q, T, cfg.delta, n=n, sensitivity_factor=2 * overshoot)
        factor = sub.value
    rdp_eps = release_rdp_alpha2(release, sensitivity=overshoot)
    hook = FILHook(model, cfg.method, cfg.num_coords, cfg.power_iters, cfg.clip_mode, release.clip_norm,
                   lead_chunks(n, q))
    fil_runs = np.zeros((cfg.runs, n))
    accs = []
    params_runs = []
    t0 = time.perf_counter()
    for r in range(cfg.runs):
        k_train, k_fil = fil_run_keys(cfg.seed, r)
        state = (jnp.zeros((n,), jnp.float32), jnp.float32(factor), jnp.float32(noise_std), k_fil)
        res = train(model, release, x, y, key=k_train, learning_rate=cfg.learning_rate, momentum=cfg.momentum,
                    clip_mode=cfg.clip_mode, record=False, hooks=(hook,), hook_states=(state,), runs=cfg.runs,
                    chunk_steps=chunk_steps, progress=progress)
        fil_runs[r] = np.asarray(res.hook_states[0][0], dtype=float)
        params_runs.append(res.params)
        if x_test is not None:
            accs.append(model_accuracy(model, res.params, x_test, y_test))
    seconds = time.perf_counter() - t0
    fil = fil_runs.mean(axis=0)
    return FILAccounting(
        fil=fil,
        fil_runs=fil_runs,
        measure="spectral" if cfg.method == "spectral" else "dfil",
        release=release,
        config=cfg,
        noise_std=noise_std,
        subsampling=sub,
        subsampling_factor=factor,
        rdp_epsilon=rdp_eps,
        rdp_mse=rdp_mse(rdp_eps),
        test_accuracy=float(np.mean(accs)) if accs else None,
        test_accuracy_runs=tuple(float(a) for a in accs),
        train_seconds=seconds,
        params_runs=tuple(params_runs),
    )


def fil_run_keys(seed: int, run: int):
    """(trainer key, FIL key) of run r: ``split(fold_in(PRNGKey(seed), r))``; the trainer key feeds :func:`~.dpsgd.train`."""
    from .._jax import jax

    k_train, k_fil = jax.random.split(jax.random.fold_in(jax.random.PRNGKey(v.jax_seed(seed)), run))
    return k_train, k_fil
