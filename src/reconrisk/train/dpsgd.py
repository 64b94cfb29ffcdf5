"""DP-SGD with fast per-example clipping, and the transcript of what it releases.

One step (seed 000, §2; spec_000 §1.1) is

    g_t = Σ_{z ∈ B_t} clip_C(∇_θ ℓ(θ_t, z)) + N(0, σ²C² I),     θ_{t+1} = θ_t − η · g_t / (q·N),

with B_t a Poisson sample (each point independently with probability q;
q = 1 is full batch). The noise is added to the **sum**; the update divides
by the expected batch size q·N (post-processing, as Opacus does), and the
transcript records the sum g_t itself.

Per-example clipping without per-example gradients ("ghost clipping")
    :meth:`Model.apply <reconrisk.train.models.Model.apply>` exposes each
    layer's input ``a`` and takes an additive perturbation of its output. One
    backward pass of the summed loss with respect to a zero perturbation gives
    every back-propagated signal ``δ``. For a dense layer the per-example
    gradient is the outer product ``a_b δ_b^T`` (plus ``δ_b`` for the bias), so

        ‖∇ℓ_b‖² = Σ_layers (‖a_b‖² + 1)·‖δ_b‖²,
        Σ_b w_b ∇ℓ_b = Σ_layers aᵀ(w ⊙ δ)          (one matrix product per layer).

    Convolutions are dense maps on im2col patches at P positions; their
    per-example norm uses either the Gram form Σ_{p,p'} (a_p·a_p')(δ_p·δ_p')
    or the explicit (K×O) per-example kernel gradient, whichever is cheaper
    at trace time. Inner products of the per-example gradients with any fixed
    vector (what the attacks need) are ``Σ_p a_pᵀ G δ_p`` — again no
    per-example gradient. :func:`naive_clipped_sum` is the ``vmap(grad)``
    reference the tests compare against.

Clipping modes
    ``"hard"``: clip_C(v) = v / max(1, ‖v‖/C) (seed 000, footnote 3).
    ``"gelu"``: the soft clip of seed 001, v / (GELU(‖v‖/C − 1) + 1), whose
    norm can reach 1.115·C and which scales small gradients *up* by up to
    1.189; the noise std stays σC as the release says (account for the
    1.115 sensitivity yourself, as seed 001 does).
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import _validate as v
from ..errors import ReconRiskError
from ..release import Release
from .models import Model

CLIP_MODES = ("hard", "gelu")
#: Default learning rate: θ moves by η · (mean clipped gradient + noise/(qN)).
DEFAULT_LEARNING_RATE = 2.0
#: Probability budget for a Poisson batch overflowing the padded batch size.
_OVERFLOW_PROB = 1e-12


# ----------------------------------------------------------------------------------------
# per-example gradients from activations and back-propagated signals
# ----------------------------------------------------------------------------------------
def cross_entropy(logits, labels):
    """Per-example softmax cross-entropy with integer labels."""
    import jax
    import jax.numpy as jnp

    logp = jax.nn.log_softmax(logits)
    return -jnp.take_along_axis(logp, labels[:, None].astype(jnp.int32), axis=1)[:, 0]


def signals(model: Model, params, x, y):
    """(taps, deltas, losses): layer inputs (B,P,K), output signals (B,P,O), per-example losses."""
    import jax

    def total(perturbations):
        logits, taps = model.apply(params, x, perturbations)
        losses = cross_entropy(logits, y)
        return losses.sum(), (taps, losses)

    deltas, (taps, losses) = jax.grad(total, has_aux=True)(model.zero_perturbations(x.shape[0]))
    return taps, deltas, losses


def _layer_sq_norms(a, d):
    import jax.numpy as jnp

    _, p, k = a.shape
    o = d.shape[-1]
    if p == 1:
        d2 = jnp.sum(d[:, 0] ** 2, axis=-1)
        return (jnp.sum(a[:, 0] ** 2, axis=-1) + 1.0) * d2
    bias = jnp.sum(jnp.sum(d, axis=1) ** 2, axis=-1)
    if p * p * (k + o) < p * k * o:
        ga = jnp.einsum("bpk,bqk->bpq", a, a)
        gd = jnp.einsum("bpo,bqo->bpq", d, d)
        return jnp.sum(ga * gd, axis=(1, 2)) + bias
    g = jnp.einsum("bpk,bpo->bko", a, d)
    return jnp.sum(g * g, axis=(1, 2)) + bias


def per_example_sq_norms(taps, deltas):
    """‖∇_θ ℓ_b‖² for every example b, from taps and signals only."""
    return sum(_layer_sq_norms(a, d) for a, d in zip(taps, deltas))


def weighted_grad_sum(taps, deltas, weights):
    """Σ_b w_b ∇_θ ℓ_b as a parameter pytree (one einsum per layer)."""
    import jax.numpy as jnp

    out = []
    for a, d in zip(taps, deltas):
        dw = d * weights[:, None, None]
        out.append({"w": jnp.einsum("bpk,bpo->ko", a, dw), "b": jnp.sum(dw, axis=(0, 1))})
    return tuple(out)


def grad_inner_products(taps, deltas, vectors):
    """⟨∇_θ ℓ_b, G⟩ for every example b and every parameter pytree G in ``vectors``.

    ``vectors`` is a parameter pytree whose leaves carry a leading axis of M
    vectors; returns (B, M).
    """
    import jax.numpy as jnp

    total = 0.0
    for a, d, g in zip(taps, deltas, vectors):
        t = jnp.einsum("bpk,mko->bmpo", a, g["w"])
        total = total + jnp.einsum("bmpo,bpo->bm", t, d) + jnp.einsum("bpo,mo->bm", d, g["b"])
    return total


def clip_factors(sq_norms, clip_norm: float, mode: str = "hard"):
    """Per-example scale s_b with clip(∇ℓ_b) = s_b ∇ℓ_b."""
    import jax
    import jax.numpy as jnp

    norms = jnp.sqrt(sq_norms)
    if mode == "hard":
        return jnp.minimum(1.0, clip_norm / jnp.maximum(norms, 1e-30))
    if mode == "gelu":
        return 1.0 / (jax.nn.gelu(norms / clip_norm - 1.0, approximate=False) + 1.0)
    raise ReconRiskError(f"clip_mode must be one of {', '.join(map(repr, CLIP_MODES))}; found {mode!r}")


def clipped_grad_sum(model: Model, params, x, y, clip_norm: float, weights=None, mode: str = "hard"):
    """(Σ_b weights_b · clip_C(∇ℓ_b) as a pytree, per-example gradient norms).

    ``weights`` (B,) is the batch mask (1 = in the batch); default all ones.
    """
    import jax.numpy as jnp

    taps, deltas, _ = signals(model, params, x, y)
    sq = per_example_sq_norms(taps, deltas)
    scale = clip_factors(sq, clip_norm, mode)
    if weights is not None:
        scale = scale * weights
    return weighted_grad_sum(taps, deltas, scale), jnp.sqrt(sq)


def naive_clipped_sum(model: Model, params, x, y, clip_norm: float, weights=None, mode: str = "hard"):
    """Reference: materialise every per-example gradient with ``vmap(grad)``."""
    import jax
    import jax.numpy as jnp

    def loss(p, xi, yi):
        return cross_entropy(model.logits(p, xi[None]), yi[None])[0]

    grads = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(params, x, y)
    sq = sum(jnp.sum(g.reshape(g.shape[0], -1) ** 2, axis=1) for g in jax.tree_util.tree_leaves(grads))
    scale = clip_factors(sq, clip_norm, mode)
    if weights is not None:
        scale = scale * weights
    summed = jax.tree_util.tree_map(lambda g: jnp.tensordot(scale, g, axes=1), grads)
    return summed, jnp.sqrt(sq)


# ----------------------------------------------------------------------------------------
# one DP-SGD step
# ----------------------------------------------------------------------------------------
def batch_cap(n: int, sample_rate: float, steps: int, trials: int = 1) -> int | None:
    """Padded batch size for Poisson sampling, or None to mask the full dataset.

    With q small the step gathers at most ``cap`` sampled points instead of
    evaluating all N; ``cap`` is chosen so that a batch larger than it has
    probability < 1e-12 over all steps and trials (if it happens anyway the
    run raises instead of silently dropping points).
    """
    if sample_rate >= 1.0:
        return None
    from scipy import stats

    budget = _OVERFLOW_PROB / (steps * trials)
    counts = np.arange(n + 1)
    tail = stats.binom.sf(counts, n, sample_rate)  # P(batch size > c); accurate far into the tail
    cap = int(counts[np.argmax(tail <= budget)]) if (tail <= budget).any() else n
    return None if cap * 2 > n else max(cap, 1)


@dataclass(frozen=True)
class StepConfig:
    """Static configuration of one DP-SGD step (hashable, for ``jax.jit``)."""

    noise_multiplier: float
    sample_rate: float
    clip_norm: float
    learning_rate: float
    clip_mode: str = "hard"
    cap: int | None = None
    normalizer: float = 1.0  # the update uses g_t / normalizer (q·N)


def poisson_batch(key, n: int, sample_rate: float, cap: int | None):
    """(mask (n,), index (cap,) or None, valid (cap,) or None, overflow flag)."""
    import jax
    import jax.numpy as jnp

    if sample_rate >= 1.0:
        return jnp.ones((n,), jnp.float32), None, None, jnp.bool_(False)
    mask = jax.random.bernoulli(key, sample_rate, (n,))
    if cap is None:
        return mask.astype(jnp.float32), None, None, jnp.bool_(False)
    count = jnp.sum(mask)
    (index,) = jnp.nonzero(mask, size=cap, fill_value=0)
    valid = (jnp.arange(cap) < count).astype(jnp.float32)
    return mask.astype(jnp.float32), index, valid, count > cap


def masked_clipped_sum(model, params, x, y, mask, index, valid, cfg: StepConfig):
    """Clipped-gradient sum over the points of a Poisson batch (full mask or padded gather)."""
    if index is None:
        return clipped_grad_sum(model, params, x, y, cfg.clip_norm, mask, cfg.clip_mode)
    return clipped_grad_sum(model, params, x[index], y[index], cfg.clip_norm, valid, cfg.clip_mode)


def step_keys(key, t):
    import jax

    k = jax.random.fold_in(key, t)
    return jax.random.fold_in(k, 0), jax.random.fold_in(k, 1)


def dpsgd_step(model: Model, cfg: StepConfig, params, key, t, x, y):
    """One DP-SGD step on (x, y). Returns (new params, released (θ_t, g_t), batch mask, stats).

    ``θ_t`` and ``g_t`` are flat vectors (``jax.flatten_util.ravel_pytree``
    order). ``stats`` holds the sum of per-example norms in the batch, the
    number clipped (norm > C) and the batch size, and the overflow flag.
    """
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    k_batch, k_noise = step_keys(key, t)
    mask, index, valid, overflow = poisson_batch(k_batch, x.shape[0], cfg.sample_rate, cfg.cap)
    summed, norms = masked_clipped_sum(model, params, x, y, mask, index, valid, cfg)
    flat_sum, unravel = ravel_pytree(summed)
    noise = jax.random.normal(k_noise, flat_sum.shape, flat_sum.dtype) * (cfg.noise_multiplier * cfg.clip_norm)
    g = flat_sum + noise
    theta, _ = ravel_pytree(params)
    new_params = unravel(theta - cfg.learning_rate * g / cfg.normalizer)
    member = mask if index is None else valid
    stats = {
        "norm_sum": jnp.sum(norms * member),
        "clipped": jnp.sum((norms > cfg.clip_norm) * member),
        "members": jnp.sum(member),
        "overflow": overflow,
    }
    return new_params, theta, g, mask, stats


# ----------------------------------------------------------------------------------------
# transcript
# ----------------------------------------------------------------------------------------
@dataclass
class Transcript:
    """What DP-SGD releases (seed 000, §3.1: all privatised gradients and iterates).

    ``thetas`` (T+1, P): θ_0 … θ_T, where g_t was computed at θ_t.
    ``grads`` (T, P): the privatised sums g_t. ``masks`` (T, N) bool: batch
    membership of every training point (the adversary may read only the rows
    of the points it knows). ``meta``: the release, model and learning rate.
    Arrays may be numpy memory maps when loaded from disk.
    """

    thetas: np.ndarray
    grads: np.ndarray
    masks: np.ndarray
    meta: dict = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return int(self.grads.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.thetas.nbytes + self.grads.nbytes + self.masks.nbytes)

    def save(self, path: str | os.PathLike) -> Path:
        """Write an uncompressed ``.npz`` (no pickles; ``meta`` stored as JSON text)."""
        writer = TranscriptWriter(path, self.thetas.shape[1], self.masks.shape[1], self.steps, self.meta)
        writer.write_initial(self.thetas[0])
        writer.write_chunk(self.thetas[1:], self.grads, self.masks)
        return writer.close()

    @classmethod
    def load(cls, path: str | os.PathLike, *, mmap: bool = True) -> "Transcript":
        """Read a transcript ``.npz`` without pickle; large arrays are memory-mapped."""
        p = Path(path)
        if not p.is_file():
            raise ReconRiskError(f"transcript file not found: {str(p)!r}")
        if not mmap:
            try:
                with np.load(p, allow_pickle=False) as z:
                    arrays = {k: z[k] for k in ("thetas", "grads", "masks", "meta")}
            except (ValueError, OSError, KeyError, zipfile.BadZipFile) as exc:
                raise ReconRiskError(f"{str(p)!r} is not a reconrisk transcript: {exc}") from None
        else:
            arrays = _mmap_npz(p, ("thetas", "grads", "masks", "meta"))
        meta = json.loads(str(arrays["meta"][()]))
        return cls(arrays["thetas"], arrays["grads"], arrays["masks"].astype(bool, copy=False), meta)


def _mmap_npz(path: Path, names) -> dict:
    """Memory-map the members of an uncompressed ``.npz`` (read-only, no pickle)."""
    out = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for name in names:
                info = zf.getinfo(name + ".npy")
                if info.compress_type != zipfile.ZIP_STORED:
                    with zf.open(info) as fh:
                        out[name] = np.load(io.BytesIO(fh.read()), allow_pickle=False)
                    continue
                with open(path, "rb") as fh:
                    fh.seek(info.header_offset)
                    local = fh.read(30)
                    if local[:4] != b"PK\x03\x04":
                        raise ValueError("bad local header")
                    name_len = int.from_bytes(local[26:28], "little")
                    extra_len = int.from_bytes(local[28:30], "little")
                    start = info.header_offset + 30 + name_len + extra_len
                    fh.seek(start)
                    version = np.lib.format.read_magic(fh)
                    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                   else np.lib.format.read_array_header_2_0)
                    shape, fortran, dtype = read_header(fh)
                    offset = fh.tell()
                if dtype.hasobject:
                    raise ValueError("object arrays are refused")
                if dtype.kind in "US" or int(np.prod(shape)) == 0:
                    with zf.open(info) as fh2:
                        out[name] = np.load(io.BytesIO(fh2.read()), allow_pickle=False)
                else:
                    out[name] = np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape,
                                          order="F" if fortran else "C")
    except (KeyError, ValueError, OSError, zipfile.BadZipFile) as exc:
        raise ReconRiskError(f"{str(path)!r} is not a reconrisk transcript: {exc}") from None
    return out


class TranscriptWriter:
    """Streams a transcript into an uncompressed ``.npz`` chunk by chunk (bounded memory)."""

    def __init__(self, path, n_params: int, n_points: int, steps: int, meta: dict):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.zf = zipfile.ZipFile(self.path, "w", compression=zipfile.ZIP_STORED, allowZip64=True)
        self.shapes = {"thetas": (steps + 1, n_params), "grads": (steps, n_params), "masks": (steps, n_points)}
        self.dtypes = {"thetas": np.dtype("<f4"), "grads": np.dtype("<f4"), "masks": np.dtype("|b1")}
        self.meta = meta
        self.handles = {}
        self.written = {k: 0 for k in self.shapes}
        self.tmp = {}
        # zipfile can write only one member at a time: stage members as files, then store them.
        for name in self.shapes:
            tmp = self.path.with_name(self.path.name + f".{name}.part")
            fh = open(tmp, "wb")
            header = {"descr": np.lib.format.dtype_to_descr(self.dtypes[name]), "fortran_order": False,
                      "shape": self.shapes[name]}
            np.lib.format.write_array_header_2_0(fh, header)
            self.handles[name] = fh
            self.tmp[name] = tmp

    def _append(self, name, arr):
        arr = np.ascontiguousarray(arr, dtype=self.dtypes[name])
        self.handles[name].write(arr.tobytes())
        self.written[name] += arr.shape[0]

    def write_initial(self, theta0):
        self._append("thetas", np.asarray(theta0)[None])

    def write_chunk(self, thetas_next, grads, masks):
        self._append("thetas", thetas_next)
        self._append("grads", grads)
        self._append("masks", masks)

    def close(self) -> Path:
        for name, fh in self.handles.items():
            fh.close()
            if self.written[name] != self.shapes[name][0]:
                raise RuntimeError(f"transcript member {name}: wrote {self.written[name]} rows of {self.shapes[name][0]}")
            self.zf.write(self.tmp[name], arcname=name + ".npy")
            os.remove(self.tmp[name])
        buf = io.BytesIO()
        np.save(buf, np.array(json.dumps(self.meta)), allow_pickle=False)
        self.zf.writestr("meta.npy", buf.getvalue())
        self.zf.close()
        return self.path


# ----------------------------------------------------------------------------------------
# training
# ----------------------------------------------------------------------------------------
@dataclass
class TrainResult:
    params: object
    transcript: Transcript | None
    clipped_fraction: float
    mean_grad_norm: float


def make_step_config(release: Release, n: int, learning_rate: float, clip_mode: str, trials: int = 1) -> StepConfig:
    if not isinstance(release, Release) or not release.homogeneous:
        raise ReconRiskError("release must be a homogeneous reconrisk.Release (one noise multiplier and sample rate)")
    if release.noise != "gaussian":
        raise ReconRiskError(f"the simulator adds Gaussian noise; found release.noise = {release.noise!r}")
    v.choice("clip_mode", clip_mode, CLIP_MODES)
    lr = v.positive("learning_rate", learning_rate)
    q = release.sample_rate
    return StepConfig(
        noise_multiplier=release.noise_multiplier,
        sample_rate=q,
        clip_norm=release.clip_norm,
        learning_rate=lr,
        clip_mode=clip_mode,
        cap=batch_cap(n, q, release.steps, trials),
        normalizer=max(q * n, 1e-12),
    )


def train(
    model: Model,
    release: Release,
    x,
    y,
    *,
    seed: int = 0,
    learning_rate: float = DEFAULT_LEARNING_RATE,
    clip_mode: str = "hard",
    params=None,
    record: bool = True,
    chunk_steps: int = 256,
    transcript_path: str | os.PathLike | None = None,
    max_memory_bytes: int = 1 << 30,
) -> TrainResult:
    """Run DP-SGD as ``release`` describes on (x, y) and record its transcript.

    Steps run as a jitted ``lax.scan`` in chunks of ``chunk_steps``; with
    ``transcript_path`` each chunk is streamed to an uncompressed ``.npz`` on
    disk (and the returned transcript memory-maps it). Without a path, a
    transcript larger than ``max_memory_bytes`` is refused.
    """
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    x = np.asarray(x, dtype=np.float32)
    y = np.asarray(y, dtype=np.int32)
    if x.ndim != 2 or x.shape[1] != model.input_dim or y.shape != (x.shape[0],):
        raise ReconRiskError(f"x must be (N, {model.input_dim}) and y (N,); found {x.shape} and {y.shape}")
    if x.shape[0] < 1:
        raise ReconRiskError("x must hold at least one example; found 0")
    seed = v.integer("seed", seed, minimum=0)
    chunk_steps = v.integer("chunk_steps", chunk_steps, minimum=1)
    cfg = make_step_config(release, x.shape[0], learning_rate, clip_mode)
    key = jax.random.PRNGKey(seed)
    k_init, k_run = jax.random.split(key)
    if params is None:
        params = model.init(k_init)
    n_params = model.num_params
    T = release.steps
    size = 4 * (2 * T + 1) * n_params + T * x.shape[0]
    if record and transcript_path is None and size > max_memory_bytes:
        raise ReconRiskError(
            f"the transcript would take {size / 2**20:.0f} MiB (> max_memory_bytes); pass transcript_path to stream it to disk"
        )
    xs, ys = jnp.asarray(x), jnp.asarray(y)

    @jax.jit
    def run_chunk(params, ts):
        def body(p, t):
            p2, theta, g, mask, stats = dpsgd_step(model, cfg, p, k_run, t, xs, ys)
            out = (theta, g, mask.astype(bool)) if record else ()
            return p2, (out, stats)

        return jax.lax.scan(body, params, ts)

    meta = {
        "release": release.to_dict(),
        "model": model.to_dict(),
        "learning_rate": cfg.learning_rate,
        "clip_mode": clip_mode,
        "normalizer": cfg.normalizer,
        "seed": seed,
        "update": "theta_{t+1} = theta_t - learning_rate * g_t / normalizer",
    }
    writer = None
    parts: list = []
    if record and transcript_path is not None:
        writer = TranscriptWriter(transcript_path, n_params, x.shape[0], T, meta)
        writer.write_initial(np.asarray(ravel_pytree(params)[0]))
    norm_sum = clipped = members = 0.0
    overflow = False
    for start in range(0, T, chunk_steps):
        ts = jnp.arange(start, min(T, start + chunk_steps))
        params, (out, stats) = run_chunk(params, ts)
        norm_sum += float(stats["norm_sum"].sum())
        clipped += float(stats["clipped"].sum())
        members += float(stats["members"].sum())
        overflow |= bool(stats["overflow"].any())
        if record:
            thetas, grads, masks = (np.asarray(a) for a in out)
            thetas_next = np.concatenate([thetas[1:], np.asarray(ravel_pytree(params)[0])[None]])
            if writer is not None:
                writer.write_chunk(thetas_next, grads, masks)
            else:
                parts.append((thetas, grads, masks))
    if overflow:
        raise RuntimeError("a Poisson batch exceeded the padded batch size (probability < 1e-12); rerun with another seed")
    transcript = None
    if record:
        if writer is not None:
            transcript = Transcript.load(writer.close())
        else:
            thetas = np.concatenate([p[0] for p in parts] + [np.asarray(ravel_pytree(params)[0])[None]])
            transcript = Transcript(thetas, np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts]), meta)
    denom = max(members, 1.0)
    return TrainResult(params, transcript, clipped / denom, norm_sum / denom)


def model_accuracy(model: Model, params, x, y) -> float:
    """Fraction of (x, y) the model classifies correctly (:func:`reconrisk.metrics.accuracy` of its argmax)."""
    import jax.numpy as jnp

    from ..metrics import accuracy

    pred = jnp.argmax(model.logits(params, jnp.asarray(x, jnp.float32)), axis=1)
    return accuracy(np.asarray(pred), np.asarray(y))
