"""‖J‖_F² of the clipped per-example gradient of any model (conv or dense) from batched tangents of the ghost signals.

Used by :func:`reconrisk._src.train.fil.per_example_fil` for the trace estimators
(Guo, Karrer, Chaudhuri & van der Maaten 2022, Eq. 5 and the exact trace) when the first-layer reduction of
:mod:`reconrisk._src.train.fil_dense` does not apply (a convolution first, or a
first layer wider than the number of probes). It computes the *same* numbers
as the forward-over-reverse JVPs of :func:`~reconrisk._src.train.fil.jacobian_sq_norm`
— the same probe directions e_i, the same sampled coordinates for the same
key — tested equal to float32 rounding; only the arithmetic is arranged
differently:

* all probes of all examples go through **one** vmapped JVP of the batched
  forward/backward pass that yields the layer inputs ("taps") ``a`` and
  output signals ``δ`` (the trainer's ghost-clipping quantities,
  :func:`reconrisk._src.train.clipping.signals`), so a convolution's tangent is one
  large im2col matrix product instead of one tiny product per example and probe;
* the per-example parameter gradient (p numbers per example and probe) is
  never formed: for a layer with ``u = [Σ_p a_p δ_pᵀ ; Σ_p δ_p]`` and a probe
  t, ``J_u t = [Σ_p da_p δ_pᵀ + a_p dδ_pᵀ ; Σ_p dδ_p]``, whose squared norm is,
  in Gram form over positions p, q,

      ‖J_u t‖² = Σ_pq (da_p·da_q)(δ_p·δ_q) + 2(da_p·a_q)(δ_p·dδ_q) + (a_p·a_q + 1)(dδ_p·dδ_q)

  (or from the explicit K×O kernel tangent where that is cheaper, the rule of
  :func:`reconrisk._src.train.clipping._explicit_kernel`), and
  ``uᵀJ_u t = Σ_p da_p·(U δ_p) + dδ_p·(Uᵀa_p + u_b)`` with the per-example
  kernel gradient ``U = Σ_p a_p δ_pᵀ`` formed once per example (not per probe);
* the clip enters as in :mod:`~reconrisk._src.train.fil_dense`:
  ``‖J_g̃ t‖² = c²‖J_u t‖² + (4cc' + 4c'²‖u‖²)(uᵀJ_u t)²`` with ``c`` the
  trainer's clip factor at ``‖u‖² + 1e-14`` and ``c' = dc/d‖u‖²``.

The exact trace sums over all d basis directions; Eq. 5 multiplies the mean
over the m sampled coordinates by d. Probes are processed in blocks of at most
:data:`PROBE_BLOCK` (a ``lax.scan`` over blocks), so the exact trace on
28×28 inputs needs no (d × B × d) tangent array.
"""

from __future__ import annotations

from .clipping import cross_entropy, per_example_sq_norms
from .fil_dense import _clip_terms

#: Probes per vmapped JVP; more are scanned in blocks of this size.
PROBE_BLOCK = 64


def _signal_fn(model, params, y):
    """x (B, d) ↦ (taps, deltas): the trainer's ghost quantities as a function of the inputs alone."""
    from .._jax import jax

    def f(x):
        def total(perturbations):
            logits, taps = model.apply(params, x, perturbations)
            return cross_entropy(logits, y).sum(), taps

        deltas, taps = jax.grad(total, has_aux=True)(model.zero_perturbations(x.shape[0]))
        return taps, deltas

    return f


def _gram_form(p: int, k: int, o: int) -> bool:
    """Whether a layer's tangent norm is cheaper in Gram form (P²(K+O)) than from the explicit K×O kernel (PKO).

    The rule of :func:`reconrisk._src.train.clipping._explicit_kernel` for the trainer's norms.
    """
    return p > 1 and p * p * (k + o) < p * k * o


def _dot(u, v):
    """Σ over the last axis of u·v (broadcasting): a fused multiply-reduce, which XLA on CPU runs far faster
    than a ``dot_general`` with per-example batch dimensions (measured 2.4 ms against 30 ms for one (50, 137, 576)
    contraction)."""
    import jax.numpy as jnp

    return jnp.sum(u * v, axis=-1)


def _layer_terms(a, d, da, dd):
    """Per (probe, example): (‖du‖², u·du) of one layer; a (B,P,K), d (B,P,O), da (M,B,P,K), dd (M,B,P,O)."""
    import jax.numpy as jnp

    p, k, o = a.shape[1], a.shape[2], d.shape[-1]
    if p == 1:
        a0, d0, da0, dd0 = a[:, 0], d[:, 0], da[:, :, 0], dd[:, :, 0]
        a2, d2 = _dot(a0, a0), _dot(d0, d0)
        ada, ddd = _dot(da0, a0), _dot(dd0, d0)
        sq = _dot(da0, da0) * d2 + 2.0 * ada * ddd + (a2 + 1.0) * _dot(dd0, dd0)
        return sq, ada * d2 + (a2 + 1.0) * ddd
    kern = jnp.sum(a[:, :, :, None] * d[:, :, None, :], axis=1)  # per-example kernel gradient U (B, K, O)
    u1 = _dot(kern[:, None], d[:, :, None, :])  # U δ_p (B, P, K)
    u2 = jnp.sum(a[:, :, :, None] * kern[:, None], axis=2)
    u2 = u2 + jnp.sum(d, axis=1)[:, None, :]  # Uᵀa_p + u_b (B, P, O)
    udu = jnp.sum(da * u1, axis=(2, 3)) + jnp.sum(dd * u2, axis=(2, 3))
    if _gram_form(p, k, o):
        # Σ_pq (da_p·da_q)(δ_p·δ_q) = Σ_p da_p·Z_p with Z_p = Σ_q (δ_p·δ_q) da_q (likewise for dδ): elementwise
        # sums over the few positions on position-major copies, then one fused multiply-reduce each
        dat, ddt = jnp.moveaxis(da, 2, 0), jnp.moveaxis(dd, 2, 0)
        gdd = jnp.sum(d[:, :, None, :] * d[:, None, :, :], axis=-1)  # (B, P, P)
        gaa = jnp.sum(a[:, :, None, :] * a[:, None, :, :], axis=-1) + 1.0
        z = sum(gdd[None, :, :, j, None] * dat[j][:, :, None, :] for j in range(p))  # (M, B, P, K)
        w = sum(gaa[None, :, :, j, None] * ddt[j][:, :, None, :] for j in range(p))  # (M, B, P, O)
        xa = jnp.stack([_dot(da, a[None, :, j][:, :, None, :]) for j in range(p)], axis=-1)  # da_i·a_j
        yd = jnp.stack([_dot(dd, d[None, :, i][:, :, None, :]) for i in range(p)], axis=-2)  # δ_i·dδ_j
        sq = jnp.sum(da * z, axis=(2, 3)) + jnp.sum(dd * w, axis=(2, 3)) + 2.0 * jnp.sum(xa * yd, axis=(2, 3))
    else:
        dk = jnp.sum(da[..., :, None] * d[None, :, :, None, :] + a[None, :, :, :, None] * dd[..., None, :], axis=2)
        db = jnp.sum(dd, axis=2)
        sq = jnp.sum(dk * dk, axis=(2, 3)) + _dot(db, db)
    return sq, udu


def ghost_trace_sq_norms(model, params, x, y, clip_norm, clip_mode: str, idx, eps_sq: float):
    """(B,) ``‖J_g̃‖_F²`` (``idx=None``: all d basis directions) or Eq. 5's ``(d/m)Σ_k ‖J_g̃ e_{idx_k}‖²`` (``idx`` (B, m)).

    Traceable (use inside ``jax.jit``). Same quantity as
    :func:`reconrisk._src.train.fil.jacobian_sq_norm` of
    :func:`reconrisk._src.train.fil.clipped_grad_fn` for every example.
    """
    from .._jax import jax
    import jax.numpy as jnp

    b, d = x.shape
    f = _signal_fn(model, params, y)
    (taps, deltas), f_jvp = jax.linearize(f, x)  # one primal pass; f_jvp is linear in the tangent
    u_sq = per_example_sq_norms(taps, deltas)
    c, c1 = _clip_terms(u_sq + eps_sq, clip_norm, clip_mode)
    kappa = 4.0 * c * c1 + 4.0 * c1 * c1 * u_sq

    if idx is None:
        probes = jnp.broadcast_to(jnp.arange(d, dtype=jnp.int32)[:, None], (d, b))  # (M, B)
    else:
        probes = jnp.asarray(idx, jnp.int32).T  # (m, B)
    m = probes.shape[0]

    def block_sum(pb, w):  # Σ over a block of probes (M_b, B) of w_k ‖J_g̃ e_{pb_k}‖², (B,); w_k ∈ {0, 1}
        tangents = jax.nn.one_hot(pb, d, dtype=x.dtype) * w[:, None, None]  # a zero tangent adds exactly 0
        dtaps, ddeltas = jax.vmap(f_jvp)(tangents)
        sq = udu = 0.0
        for a, dl, da, ddl in zip(taps, deltas, dtaps, ddeltas):
            s, ud = _layer_terms(a, dl, da, ddl)
            sq, udu = sq + s, udu + ud
        return jnp.sum(c * c * sq + kappa * udu * udu, axis=0)

    if m <= PROBE_BLOCK:
        total = block_sum(probes, jnp.ones((m,), x.dtype))
    else:  # scan over blocks; the last one is padded with zero-weighted copies of probe 0
        nblk = -(-m // PROBE_BLOCK)
        pad = nblk * PROBE_BLOCK - m
        padded = jnp.concatenate([probes, jnp.broadcast_to(probes[:1], (pad, b))], axis=0) if pad else probes
        weights = (jnp.arange(nblk * PROBE_BLOCK) < m).astype(x.dtype).reshape(nblk, PROBE_BLOCK)
        blocks = padded.reshape(nblk, PROBE_BLOCK, b)
        total = jax.lax.scan(lambda acc, blk: (acc + block_sum(*blk), None), jnp.zeros((b,), x.dtype),
                             (blocks, weights))[0]
    return total if idx is None else d * total / m
