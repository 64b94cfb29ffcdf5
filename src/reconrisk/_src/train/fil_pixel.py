"""‖J e_i‖² of the clipped per-example gradient for every input pixel i at once, for conv-first models (the CNN).

Used by :func:`reconrisk._src.train.fil.per_example_fil` for the trace estimators
(Guo, Karrer, Chaudhuri & van der Maaten 2022, Eq. 5 and the exact trace) when :func:`applies` (a convolution
first whose per-example kernel gradient is cheaper explicitly, a second
convolution in Gram form, and few pixels). Same quantity as the forward-over-reverse
JVPs of :func:`~reconrisk._src.train.fil.jacobian_sq_norm` — the same basis
directions e_i; for Eq. 5 the same sampled coordinates are read out of the
per-pixel values — tested equal to float32 rounding. What changes is the
arithmetic (one example; layer l has taps ``a_l`` (P_l × K_l), signals
``δ_l``, pre-activations ``s_l``, eLU derivatives ``E_l = elu'(s_l)``):

* **the first layer's tangent is a table.** The probe e_i enters as the tap
  tangent ``da₁(i) = im2col(e_i)`` — a constant 0/1 pattern, nonzero at ≤ 4
  positions for a 3×3/2 convolution — and ``ds₁(i) = da₁(i) W₁`` is the same
  for every example of the batch (d × P₁ × O₁ numbers per step).
* **the second layer's tap tangent is never formed.** ``da₂(i) = I₂(E₁ ⊙ ds₁(i))
  = I₂(E₁) ⊙ C(i)`` with ``I₂`` the second layer's im2col (a gather, so it
  commutes with ⊙) and ``C(i) = I₂(ds₁(i))`` per step, not per example. Every
  quantity linear in da₂ — the next pre-activation tangent ``ds₂ = da₂ W₂``,
  ``da₂,p·a₂,q``, ``da₂,p·(Uδ₂,p)`` — is a matrix product of the constant
  (d × K₂) table C with a per-example (K₂ × ·) operand, one GEMM per position
  for the whole batch; ``da₂,p·da₂,q`` likewise with ``C_p ⊙ C_q``.
* the signal tangents ``dδ_l`` run backwards through the layers as matrix
  products on rows (pixel, example): ``dδ_L = p ⊙ ds_L − p(p·ds_L)`` (softmax
  cross-entropy), ``dδ_{l−1} = E_{l−1} ⊙ col2im(dδ_l W_lᵀ) + col2im(δ_l W_lᵀ) ⊙
  elu''(s_{l−1}) ⊙ ds_{l−1}``.
* norms as in :mod:`~reconrisk._src.train.fil_ghost`: the first layer from its
  explicit K₁×O₁ kernel tangent ``dK₁ = da₁ᵀδ₁ + a₁ᵀdδ₁``, the second in Gram form
  ``Σ_pq (da_p·da_q)(δ_p·δ_q) + 2(da_p·a_q)(δ_p·dδ_q) + (a_p·a_q + 1)(dδ_p·dδ_q)``,
  later ones by :func:`~reconrisk._src.train.fil_ghost._layer_terms`; the clip by
  ``‖J_g̃ t‖² = c²‖J_u t‖² + (4cc' + 4c'²‖u‖²)(uᵀJ_u t)²``.

All d pixels are evaluated (the exact trace sums them; Eq. 5 takes the m
sampled ones, with repeats, and multiplies their mean by d), so the route is
used only where d is at most :data:`MAX_PIXELS_PER_PROBE` × m (or d ≤
:data:`MAX_PIXELS` for the exact trace).

Structure taken from the geometry (static index tables built at trace time):
``da₂,p·da₂,q`` is formed only for the position pairs whose tap tangents can
share a tap for some pixel (:func:`_overlapping_pairs`: p = q for 3×3/2
convolutions — the rest is exactly zero), and the part of dK₁ that does not go
through dδ₂ (``da₁ᵀδ₁`` and ``[a₁|1]ᵀ(g₁ ⊙ elu''(s₁) ⊙ ds₁)``) is summed over
the ≤ 4 (conv-1 position, tap) slots that hold each pixel
(:func:`_pixel_slots`), one gathered row of a per-example table per slot.

Cost (digits CNN, d = 64, 16-example chunks; shared 2-core CPU, one XLA
thread, interleaved in one process): 3.7–5.2 ms of CPU per chunk against
5.2–7.6 ms for the previous revision (×0.67–0.72), ~3.1 M multiply-adds per
example. Most of it is still two dense products per pixel, both efficient
GEMMs now (~0.45 and ~0.75 ms per chunk): the second layer's pre-activation
tangent C @ (I₂(E₁) ⊙ [a₂ | Uδ | W₂]) (K₂ = 144 → 37 columns per position)
and dδ₂ @ N (128 → 160); the rest is ~40 small fusions of 0.05–0.3 ms each,
mostly layout changes between the pixel-major products (shared table C) and
the example-major ones (per-example N). Tried and measured slower: conv-2
tangents from per-(position, slot, tap) tables contracted with W₁ and gathered
per (pixel, position) (7× fewer multiply-adds for the first product, but the
K = 16, N = 9 GEMM and the gathers cost more than the dense GEMM: 6.8 against
6.6 ms per chunk); N as a product over the k² taps per (example, position)
(K = 9, N = 10: 1.7 ms against 0.2 ms batched over (example, channel)).
Also measured (one pinned core, 16-example chunks, interleaved with this
revision, equal results to 2e-7), none adopted:

* the first product only on the pixels that reach each conv-2 position (a
  rectangle of the image per position: 121 of the 256 (pixel, position) pairs
  at 8×8), one GEMM per position: 7–13 % less time per chunk, but no change
  of the training step beyond its noise (18.9–20.9 against 19.6–20.3 ms);
* the pixel index as the minor axis throughout: slower (XLA transposes the
  operands back to its own GEMM layouts);
* the slot gathers replaced by the transpose of a tap-major im2col (a
  pad-and-add over 160 channels): 6.1 against 3.3 ms per chunk;
* N batched over channels only, over (example, position), through
  Z = dδ₂W₂ᵀ, or unrolled over the k² taps: 1.7–2.3 against 1.0 ms for N and
  the product together.

Not tried: splitting dδ₂ = E₂ ⊙ (W₃ dδ₃) + g₂ ⊙ elu''(s₂) ⊙ ds₂ into a
rank-10 part and a part on the ~1.9 of 4 positions each pixel reaches (at most
~30 % of the second product). :class:`~reconrisk._src.train.fil.FILHook` runs
several chunks side by side, which XLA:CPU executes concurrently (on this
2-core machine the second core gives ~1.6×: 25–32 ms per step on one core,
15–20 ms on two).
"""

from __future__ import annotations

import numpy as np

from .clipping import per_example_sq_norms
from .fil_dense import _clip_terms
from .fil_ghost import _gram_form, _layer_terms
from .models import im2col

#: Largest input dimension d evaluated pixel by pixel (arrays of d × batch × layer-1 outputs per example).
MAX_PIXELS = 256
#: Eq. 5 uses this route only if d ≤ this × m (all d pixels are evaluated for m sampled ones).
MAX_PIXELS_PER_PROBE = 2


def applies(model, method: str, num_coords: int) -> bool:
    """Whether :func:`pixel_trace_sq_norms` handles ``model`` (and is expected to be cheaper than the ghost tangents)."""

    layers = model.layers
    if method == "spectral" or len(layers) < 2 or layers[0].kind != "conv":
        return False
    l1, l2 = layers[0], layers[1]
    if _gram_form(l1.positions, l1.in_features, l1.out_features):
        return False  # the first layer's kernel tangent is formed explicitly
    if l2.kind != "conv" or (l2.positions > 1 and not _gram_form(l2.positions, l2.in_features, l2.out_features)):
        return False
    d = model.input_dim
    if d > MAX_PIXELS:
        return False
    return method == "trace_exact" or d <= MAX_PIXELS_PER_PROBE * num_coords


def _gather_fn(model, l: int):
    """(N, flat input of layer l) ↦ (N, P_l, K_l): the layer's im2col (conv) or reshape (dense)."""

    layer = model.layers[l]

    def f(h):
        n = h.shape[0]
        if layer.kind == "conv":
            return im2col(h.reshape(n, layer.in_hw[0], layer.in_hw[1], layer.in_channels), layer.kernel,
                          layer.stride, layer.out_hw)
        return h.reshape(n, 1, layer.in_features)

    return f


def _scatter_fn(model, l: int, n: int, dtype):
    """The transpose of :func:`_gather_fn` (col2im: a pad-and-add) for n rows: (n, P_l, K_l) ↦ (n, flat input)."""
    from .._jax import jax

    layer = model.layers[l]
    flat = layer.in_features if layer.kind == "dense" else layer.in_hw[0] * layer.in_hw[1] * layer.in_channels
    g = _gather_fn(model, l)
    t = jax.linear_transpose(g, jax.ShapeDtypeStruct((n, flat), dtype))
    return lambda v: t(v)[0]


def _elu_d(s):
    """(elu'(s), elu''(s)) as JAX differentiates ``jax.nn.elu`` (the s ≤ 0 branch at s = 0)."""
    import jax.numpy as jnp

    e = jnp.exp(jnp.minimum(s, 0.0))
    pos = s > 0
    return jnp.where(pos, 1.0, e), jnp.where(pos, 0.0, e)


def _primal(model, params, x, y):
    """Per layer: taps a (B,P,K), pre-activations s (B,P,O), signals δ (B,P,O), back-propagated tap gradients
    g = col2im(δ W ᵀ) of the layer's input (B, flat) for layers ≥ 2; and the softmax p (B, classes)."""
    from .._jax import jax
    import jax.numpy as jnp

    layers = model.layers
    b = x.shape[0]
    h, taps, pre = x, [], []
    for l, (layer, p) in enumerate(zip(layers, params)):
        a = _gather_fn(model, l)(h)
        s = a @ p["w"] + p["b"]
        taps.append(a)
        pre.append(s)
        h = jax.nn.elu(s).reshape(b, -1) if l < len(layers) - 1 else s.reshape(b, -1)
    prob = jax.nn.softmax(h, axis=-1)
    delta = (prob - jax.nn.one_hot(y, h.shape[-1], dtype=h.dtype)).reshape(pre[-1].shape)
    deltas, grads = [None] * len(layers), [None] * len(layers)
    deltas[-1] = delta
    for l in range(len(layers) - 1, 0, -1):
        g = _scatter_fn(model, l, b, x.dtype)(deltas[l] @ params[l]["w"].T)  # ∂ℓ/∂h_{l-1}, flat
        grads[l] = g
        deltas[l - 1] = g.reshape(pre[l - 1].shape) * _elu_d(pre[l - 1])[0]
    return taps, pre, deltas, grads, prob


def _eye_taps(model):
    """(d, P1, K1) numpy 0/1: the first layer's im2col of every basis image e_i (static, from the geometry)."""
    from .._jax import jax
    import jax.numpy as jnp

    with jax.ensure_compile_time_eval():
        return np.asarray(_gather_fn(model, 0)(jnp.eye(model.input_dim, dtype=jnp.float32)))


def _pixel_slots(model):
    """Static (d, S) rows ``j·K1 + t`` of the first-layer taps (position j, tap t) that hold pixel i, and a (d, S)
    validity mask (pixels on fewer than S positions are padded with row 0, masked out)."""
    taps = _eye_taps(model)
    d = taps.shape[0]
    lists = [np.flatnonzero(taps[i].reshape(-1) > 0) for i in range(d)]
    s = max(1, max(len(r) for r in lists))
    rows = np.zeros((d, s), np.int64)
    ok = np.zeros((d, s), bool)
    for i, r in enumerate(lists):
        rows[i, : len(r)], ok[i, : len(r)] = r, True
    return rows, ok


def _overlapping_pairs(model):
    """Static (p, q) index arrays: the second-layer position pairs whose tap tangents da₂(i)_p, da₂(i)_q can
    share a nonzero tap for some pixel i. Depends only on the geometry (supports of the two im2cols), not on
    the weights; for 3×3/2 convolutions only p = q (the patches of two conv-2 positions share no conv-1
    position touched by one pixel)."""
    from .._jax import jax
    import jax.numpy as jnp

    o1 = model.layers[0].out_features
    touched = np.sum(_eye_taps(model), axis=-1) > 0  # (d, P1): conv-1 positions holding pixel i
    with jax.ensure_compile_time_eval():
        img = jnp.asarray(np.repeat(touched.astype(np.float32), o1, axis=1))  # (d, P1·O1)
        sup = (np.asarray(_gather_fn(model, 1)(img)) > 0).astype(np.int64)  # (d, P2, K2) support of C(i)
    return np.nonzero(np.einsum("ipk,iqk->pq", sup, sup) > 0)


def pixel_trace_sq_norms(model, params, x, y, clip_norm, clip_mode: str, idx, eps_sq: float):
    """(B,) ``‖J_g̃‖_F²`` (``idx=None``) or Eq. 5's ``(d/m)Σ_k ‖J_g̃ e_{idx_k}‖²`` (``idx`` (B, m)).

    Traceable. Same quantity as :func:`reconrisk._src.train.fil_ghost.ghost_trace_sq_norms`.
    """
    import jax.numpy as jnp

    layers = model.layers
    nl = len(layers)
    b, d = x.shape
    dt = x.dtype
    taps, pre, deltas, grads, prob = _primal(model, params, x, y)
    u_sq = per_example_sq_norms(taps, deltas)
    c, c1 = _clip_terms(u_sq + eps_sq, clip_norm, clip_mode)
    kappa = 4.0 * c * c1 + 4.0 * c1 * c1 * u_sq
    e = [_elu_d(s) for s in pre[:-1]]  # (elu', elu'') of the hidden layers

    # ---- first layer: constant tap tangents, per-step pre-activation tangents (rows: pixel i)
    ds1 = jnp.asarray(_eye_taps(model), dt) @ params[0]["w"]  # (d, P1, O1): im2col(e_i) W₁
    # ---- second layer: the tap tangent da₂(i) = I₂(E₁) ⊙ C(i), never formed
    g2 = _gather_fn(model, 1)
    ctab = g2(ds1.reshape(d, -1))  # (d, P2, K2)
    ie1 = g2(e[0][0].reshape(b, -1))  # (B, P2, K2)
    a2, dl2 = taps[1], deltas[1]
    w2 = params[1]["w"]
    p2 = a2.shape[1]
    kern2 = jnp.einsum("bpk,bpo->bko", a2, dl2)  # U (B, K2, O2)
    u1 = jnp.einsum("bko,bpo->bpk", kern2, dl2)  # U δ_p
    # one GEMM per position p: C_p (d × K2) @ [I₂(E₁)_p ⊙ (a₂,q for all q | Uδ_p | W₂ columns)]
    rhs = jnp.concatenate([ie1[:, :, :, None] * a2[:, None, :, :].transpose(0, 1, 3, 2),  # (B,P,K,Q)
                           (ie1 * u1)[..., None],
                           ie1[..., None] * w2[None, None]], axis=-1)  # (B, P2, K2, P2 + 1 + O2)
    prod = jnp.einsum("ipk,bpkn->ibpn", ctab, rhs)  # (d, B, P2, n)
    xa = prod[..., :p2]  # da_p·a_q
    du2 = jnp.sum(prod[..., p2], axis=-1)  # Σ_p da_p·(Uδ_p)
    ds2 = prod[..., p2 + 1:]  # (d, B, P2, O2)
    # da_p·da_q = Σ_k (C_p ⊙ C_q)(I₂(E₁)_p ⊙ I₂(E₁)_q), only on the pairs that can overlap (p = q here)
    pp, qq = _overlapping_pairs(model)
    dada = jnp.einsum("ink,bnk->ibn", ctab[:, pp] * ctab[:, qq], ie1[:, pp] * ie1[:, qq])  # (d, B, pairs)

    # ---- forward tangents of layers ≥ 3 (rows (d, B) flattened)
    n = d * b
    ds = [ds1, ds2]  # ds1 is per pixel only; broadcast over examples where used
    da_rows = [None, None]
    for l in range(2, nl):
        dh = (e[l - 1][0][None] * ds[l - 1]).reshape(n, -1)
        da = _gather_fn(model, l)(dh)
        da_rows.append(da.reshape(d, b, *da.shape[1:]))
        ds.append((da @ params[l]["w"]).reshape(d, b, *pre[l].shape[1:]))
    # ---- backward signal tangents down to layer 2 (layer 1's is never formed, see below)
    dsl = ds[-1]  # (d, B, 1, classes)
    pr = prob[None, :, None, :]
    dd = [None] * nl
    dd[-1] = pr * dsl - pr * jnp.sum(pr * dsl, axis=-1, keepdims=True)
    for l in range(nl - 1, 1, -1):
        dg = _scatter_fn(model, l, n, dt)((dd[l] @ params[l]["w"].T).reshape(n, *taps[l].shape[1:]))
        dg = dg.reshape(d, b, *pre[l - 1].shape[1:])
        gl = grads[l].reshape(pre[l - 1].shape)
        dd[l - 1] = dg * e[l - 1][0][None] + (gl * e[l - 1][1])[None] * ds[l - 1]

    # ---- layer 1: explicit kernel tangent dK₁ = da₁ᵀδ₁ + a₁ᵀdδ₁ and bias tangent 1ᵀdδ₁ (O1 × (K1+1) per row)
    # dδ₁ = E₁ ⊙ col2im(dδ₂W₂ᵀ) + g₁ ⊙ elu''(s₁) ⊙ ds₁. The first part enters [a₁ | 1]ᵀdδ₁ through the
    # per-example matrix N ((K1+1)·O1 × P2·O2): N[(c,k),(q,o)] = Σ_off W₂[(c,off),o] I₂(ã_k ⊙ E₁)[q,(c,off)]
    # with ã = [a₁ | 1] (the adjoint of col2im is im2col), so it is one GEMM per example, no col2im.
    a1, dl1 = taps[0], deltas[0]
    k1, o1 = a1.shape[2], dl1.shape[2]
    aug = jnp.concatenate([a1, jnp.ones_like(a1[..., :1])], axis=-1)  # (B, P1, K1+1)
    # I₂(ã ⊙ E₁) = I₂(ã) ⊙ I₂(E₁) (im2col is a gather), formed from the small I₂(ã) (B, P2, K1+1, k²)
    l1, l2 = layers[0], layers[1]
    augs = im2col(aug.reshape(b, l1.out_hw[0], l1.out_hw[1], k1 + 1), l2.kernel, l2.stride, l2.out_hw)
    itil = ie1.reshape(b, p2, o1, 1, -1) * augs.reshape(b, p2, 1, k1 + 1, -1)  # (B, P2, O1, K1+1, k²)
    itil = itil.transpose(0, 2, 3, 1, 4)  # (B, O1, K1+1, P2, k²)
    w2r = w2.reshape(o1, -1, w2.shape[1])  # (O1, k², O2): C-major features
    # N[b,(c,k),(q,o)] as products batched over (example, layer-1 channel c)
    w2b = jnp.broadcast_to(w2r[None], (b,) + w2r.shape)
    nmat = jnp.einsum("bckqf,bcfo->bckqo", itil, w2b).reshape(b, o1 * (k1 + 1), -1)
    y1 = jnp.einsum("ibn,bmn->bim", dd[1].reshape(d, b, -1), nmat).reshape(b, d, o1, k1 + 1)
    # the rest of dK₁ involves only the conv-1 positions j holding pixel i (at tap t = t(i, j)):
    # Σ_j F[b,j,t(i,j)] with F[b,j,t,c,k] = W₁[t,c] (g₁ ⊙ elu''(s₁))[b,j,c] ã[b,j,k] + [k = t] δ₁[b,j,c],
    # gathered slot by slot (one row of F per pixel and slot)
    gh1 = grads[1].reshape(pre[0].shape) * e[0][1]  # g₁ ⊙ elu''(s₁) (B, P1, O1)
    f1 = (params[0]["w"][None, None, :, :, None] * (gh1[:, :, None, :, None] * aug[:, :, None, None, :])
          + jnp.eye(k1, k1 + 1, dtype=dt)[None, None, :, None, :] * dl1[:, :, None, :, None])
    p1 = a1.shape[1]
    f1 = f1.reshape(b * p1 * k1, o1 * (k1 + 1))  # rows (b, j, t)
    slot_rows, slot_ok = _pixel_slots(model)
    rest = 0.0
    for s_ in range(slot_rows.shape[1]):
        rows = (np.arange(b)[:, None] * (p1 * k1) + slot_rows[None, :, s_]).reshape(-1).astype(np.int32)
        part = jnp.take(f1, jnp.asarray(rows), axis=0)
        ok = slot_ok[:, s_]
        rest = rest + (part if ok.all() else part * jnp.asarray(np.tile(ok, b), dt)[:, None])
    y1 = y1 + rest.reshape(y1.shape)
    kern1 = jnp.concatenate([jnp.einsum("bpk,bpo->bko", a1, dl1), jnp.sum(dl1, axis=1)[:, None]], axis=1)
    sq = jnp.sum(y1 * y1, axis=(2, 3)).T  # (d, B)
    udu = jnp.sum(y1 * kern1.swapaxes(1, 2)[:, None], axis=(2, 3)).T
    # ---- layer 2: Gram form from the GEMM products
    d2 = dd[1]  # (d, B, P2, O2)
    gdd = jnp.einsum("bpo,bqo->bpq", dl2, dl2)
    gaa = jnp.einsum("bpk,bqk->bpq", a2, a2) + 1.0
    yd = jnp.einsum("bpo,ibqo->ibpq", dl2, d2)  # δ_p·dδ_q
    dddd = jnp.einsum("ibpo,ibqo->ibpq", d2, d2)
    sq = sq + jnp.sum(dada * gdd[:, pp, qq][None], axis=2)
    sq = sq + jnp.sum(dddd * gaa[None] + 2.0 * xa * yd, axis=(2, 3))
    ub2 = jnp.einsum("bpk,bko->bpo", a2, kern2) + jnp.sum(dl2, axis=1)[:, None, :]
    udu = udu + du2 + jnp.sum(d2 * ub2[None], axis=(2, 3))
    # ---- layers ≥ 3
    for l in range(2, nl):
        s, ud = _layer_terms(taps[l], deltas[l], da_rows[l], dd[l])
        sq, udu = sq + s, udu + ud
    per = c[None] ** 2 * sq + kappa[None] * udu * udu  # (d, B): ‖J_g̃ e_i‖²
    if idx is None:
        return jnp.sum(per, axis=0)
    return d * jnp.mean(jnp.take_along_axis(per.T, idx, axis=1), axis=1)
