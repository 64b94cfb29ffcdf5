"""Clipping algebra of DP-SGD: per-example norms, clip factors and clipped sums without per-example gradients.

Per-example clipping without per-example gradients ("ghost clipping")
    :meth:`Model.apply <reconrisk._src.train.models.Model.apply>` exposes each
    layer's input ``a`` and takes an additive perturbation of its output. One
    backward pass of the summed loss with respect to a zero perturbation gives
    every back-propagated signal ``δ``. For a dense layer the per-example
    gradient is the outer product ``a_b δ_b^T`` (plus ``δ_b`` for the bias), so

        ‖∇ℓ_b‖² = Σ_layers (‖a_b‖² + 1)·‖δ_b‖²,
        Σ_b w_b ∇ℓ_b = Σ_layers aᵀ(w ⊙ δ)          (one matrix product per layer).

    Convolutions are dense maps on im2col patches at P positions; their
    per-example norm uses either the Gram form Σ_{p,p'} (a_p·a_p')(δ_p·δ_p')
    or the explicit (K×O) per-example kernel gradient, whichever is cheaper
    at trace time; when the explicit gradients are formed for the norm,
    :func:`clipped_grad_sum` reuses them for the clipped sum (Σ_b s_b g_b, a
    B×(K·O) product) instead of contracting taps and signals again. Inner products of the per-example gradients with any fixed
    vector (what the attacks need) are ``Σ_p a_pᵀ G δ_p`` — again no
    per-example gradient. :func:`naive_clipped_sum` is the ``vmap(grad)``
    reference the tests compare against.

Clipping modes
    ``"hard"``: clip_C(v) = v / max(1, ‖v‖/C) (Hayes, Mahloujifar & Balle 2023, footnote 3).
    ``"gelu"``: the soft clip of Guo, Karrer, Chaudhuri & van der Maaten 2022, v / (GELU(‖v‖/C − 1) + 1), whose
    norm can reach 1.115·C and which scales small gradients *up* by up to
    1.189; the noise std stays σC as the release says (account for the
    1.115 sensitivity yourself, as Guo et al. 2022 does).
"""

from __future__ import annotations

from ..errors import ReconRiskError
from .models import Model, tap_major_rows

CLIP_MODES = ("hard", "gelu")


# ----------------------------------------------------------------------------------------
# per-example gradients from activations and back-propagated signals
# ----------------------------------------------------------------------------------------
def cross_entropy(logits, labels):
    """Per-example softmax cross-entropy with integer labels."""
    from .._jax import jax
    import jax.numpy as jnp

    logp = jax.nn.log_softmax(logits)
    return -jnp.take_along_axis(logp, labels[:, None].astype(jnp.int32), axis=1)[:, 0]


def signals(model: Model, params, x, y, tap_major: bool = False):
    """(taps, deltas, losses): layer inputs (B,P,K), output signals (B,P,O), per-example losses.

    ``tap_major``: conv taps in tap-major feature order (see
    :meth:`Model.apply <reconrisk._src.train.models.Model.apply>`).
    """
    from .._jax import jax

    def total(perturbations):
        logits, taps = model.apply(params, x, perturbations, tap_major=tap_major)
        losses = cross_entropy(logits, y)
        return losses.sum(), (taps, losses)

    deltas, (taps, losses) = jax.grad(total, has_aux=True)(model.zero_perturbations(x.shape[0]))
    return taps, deltas, losses


def _explicit_kernel(a, d) -> bool:
    """Whether a layer's per-example norm is cheaper from the explicit (K×O) kernel gradient than from the Gram form."""
    _, p, k = a.shape
    o = d.shape[-1]
    return p > 1 and not p * p * (k + o) < p * k * o


def _layer_sq_norms(a, d):
    import jax.numpy as jnp

    _, p, k = a.shape
    o = d.shape[-1]
    if p == 1:
        d2 = jnp.sum(d[:, 0] ** 2, axis=-1)
        return (jnp.sum(a[:, 0] ** 2, axis=-1) + 1.0) * d2
    bias = jnp.sum(jnp.sum(d, axis=1) ** 2, axis=-1)
    if not _explicit_kernel(a, d):
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
    from .._jax import jax
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
    Convolutions are evaluated on tap-major taps (the cheaper gather on CPU,
    :func:`~reconrisk._src.train.models.im2col`); their kernel sums are permuted
    back to the kernel's C-major rows, so only float rounding differs from
    the C-major evaluation.
    """
    import jax.numpy as jnp

    taps, deltas, _ = signals(model, params, x, y, tap_major=True)
    sq, explicit = 0.0, []
    for a, d in zip(taps, deltas):
        if _explicit_kernel(a, d):  # the per-example kernel gradients are formed for the norm: reuse them for the sum
            # (B, O, K) or (B, K, O): XLA:CPU's batched product is faster with the longer axis minor (profiled)
            k_minor = a.shape[-1] >= d.shape[-1]
            g = jnp.einsum("bpo,bpk->bok", d, a) if k_minor else jnp.einsum("bpk,bpo->bko", a, d)
            sq = sq + jnp.sum(g * g, axis=(1, 2)) + jnp.sum(jnp.sum(d, axis=1) ** 2, axis=-1)
            explicit.append((g, k_minor))
        else:
            sq = sq + _layer_sq_norms(a, d)
            explicit.append(None)
    scale = clip_factors(sq, clip_norm, mode)
    if weights is not None:
        scale = scale * weights
    out = []
    for a, d, e in zip(taps, deltas, explicit):
        dw = d * scale[:, None, None]
        if e is None:
            w = jnp.einsum("bpk,bpo->ko", a, dw)
        else:
            g, k_minor = e
            w = jnp.tensordot(scale, g, axes=1)
            w = w.T if k_minor else w
        out.append({"w": w, "b": jnp.sum(dw, axis=(0, 1))})
    for i, layer in enumerate(model.layers):
        if layer.kind == "conv":  # a no-op reorder for one input channel (both orders coincide)
            out[i]["w"] = tap_major_rows(layer, out[i]["w"], inverse=True)
    return tuple(out), jnp.sqrt(sq)


def feature_major(model: Model) -> bool:
    """Whether :func:`clipped_grad_sum_feature_major` applies: every layer dense (MLP, logistic regression)."""
    return all(layer.kind == "dense" for layer in model.layers)


def clipped_grad_sum_feature_major(model: Model, params, x, y, clip_norm: float, weights=None, mode: str = "hard"):
    """:func:`clipped_grad_sum` of an all-dense model, computed with examples on the **minor** axis.

    The same algebra (taps, back-propagated signals, ‖∇ℓ_b‖² = Σ_layers
    (‖a_b‖² + 1)·‖δ_b‖², the clipped sum Σ_b s_b δ_b a_bᵀ), but every
    activation and signal is held as (features, B) instead of (B, features):
    layer l computes ``Wᵀ a + b`` on the (K, B) taps. Under ``vmap`` over
    trials that share ``x`` (the audit's known set D₋) the batched arrays are
    (trials, features, B): the first layer is one (trials·O, K) × (K, B)
    matrix product whose output is already in the layout every following
    elementwise stage, the softmax (a reduction over the middle axis) and the
    small per-trial products of the next layers read, where the (B, features)
    form made XLA transpose the (B, trials·O) product three times per step.
    Same values as :func:`clipped_grad_sum` up to float rounding (a test
    compares them); returns (pytree, norms (B,)).
    """
    from .._jax import jax
    import jax.numpy as jnp
    from jax import lax

    if not feature_major(model):
        raise ReconRiskError(f"clipped_grad_sum_feature_major needs an all-dense model; found {model.name!r}")
    last = len(model.layers) - 1
    contract0 = (((0,), (0,)), ((), ()))  # Wᵀ a: contract W's input axis with the taps' feature axis

    def total(perturbations):
        h, taps = x.T, []
        for i, p in enumerate(params):
            taps.append(h)
            s = lax.dot_general(p["w"], h, contract0) + p["b"][:, None] + perturbations[i]
            h = jax.nn.elu(s) if i < last else s
        logp = jax.nn.log_softmax(h, axis=0)
        return -jnp.sum(jnp.take_along_axis(logp, y[None, :].astype(jnp.int32), axis=0)), tuple(taps)

    zeros = tuple(jnp.zeros((layer.out_features, x.shape[0]), jnp.float32) for layer in model.layers)
    deltas, taps = jax.grad(total, has_aux=True)(zeros)
    sq = sum((jnp.sum(a * a, axis=0) + 1.0) * jnp.sum(d * d, axis=0) for a, d in zip(taps, deltas))
    scale = clip_factors(sq, clip_norm, mode)
    if weights is not None:
        scale = scale * weights
    out = []
    for a, d in zip(taps, deltas):
        dw = d * scale[None, :]
        # (O, K) = Σ_b dw[:, b] a[:, b]ᵀ: examples contracted on the minor axis of both operands
        out.append({"w": lax.dot_general(dw, a, (((1,), (1,)), ((), ()))).T, "b": jnp.sum(dw, axis=1)})
    return tuple(out), jnp.sqrt(sq)


def naive_clipped_sum(model: Model, params, x, y, clip_norm: float, weights=None, mode: str = "hard"):
    """Reference: materialise every per-example gradient with ``vmap(grad)``."""
    from .._jax import jax
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


def pairwise_sum(v, block: int = 256):
    """Σ of ``v`` over its last axis as a tree of block sums (float32-safe for ~10⁸ terms).

    A float32 reduction of n terms carries a rounding error up to ~n·ε
    (ε = 6e-8) — 1e-4 relative and more at n ≈ 10⁸, and its value depends on
    how the backend splits the loop across threads. Summing blocks of
    ``block`` terms, then the block sums, and so on, bounds the error by
    ~block·⌈log_block n⌉·ε (≈ 5e-5 worst case, ~1e-7 typical) whatever the
    thread split.
    """
    import jax.numpy as jnp

    while v.shape[-1] > block:
        pad = (-v.shape[-1]) % block
        if pad:
            v = jnp.pad(v, [(0, 0)] * (v.ndim - 1) + [(0, pad)])
        v = jnp.sum(v.reshape(v.shape[:-1] + (-1, block)), axis=-1)
    return jnp.sum(v, axis=-1)
