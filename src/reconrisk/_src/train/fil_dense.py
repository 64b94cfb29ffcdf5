"""‖J‖_F² of the clipped per-example gradient of a dense network, by a reduction to the first layer's width.

Used by :func:`reconrisk._src.train.fil.per_example_fil` for the trace estimators
(Guo, Karrer, Chaudhuri & van der Maaten 2022, Eq. 5 and the exact trace) when every layer is dense and the first
layer has h ≤ m (or ≤ d) units. Same quantity as the forward-over-reverse
JVPs of :func:`~reconrisk._src.train.fil.jacobian_sq_norm` (tested equal to float
rounding, with the same sampled coordinates), at the cost of h JVPs of the
batch's ghost signals instead of m JVPs of every example's full gradient.

Derivation (one example; ``u = ∇_θ ℓ``, ``g̃ = c(‖u‖²)·u``)
    The input x enters the gradient in two places: as the first layer's
    tap (``∇_{W1} ℓ = x δ₁ᵀ``) and through the first pre-activation
    ``s₁ = xW₁ + b₁``; everything else (δ₁ = ∂ℓ/∂s₁, later taps a_l and
    signals δ_l) is a function of s₁ only. For a direction t ∈ R^d let
    ``ds = W₁ᵀt`` and ``G(ds)`` the derivative of all s₁-dependent parts
    (linear in ds; ``G_k = G(e_k)`` from h JVPs). Then

        J_u t = [t δ₁ᵀ + x dδ₁(ds)ᵀ ; dδ₁(ds) ; later layers' du_l(ds)],
        ‖J_u t‖² = ‖t‖²‖δ₁‖² + 2(t·x)(δ₁·dδ₁(ds)) + dsᵀH ds,
        uᵀJ_u t  = (t·x)‖δ₁‖² + rᵀds,

    with ``H_kk' = ⟨G_k, G_k'⟩`` and ``r_k = ⟨u, G_k⟩`` in the ghost form of
    dense layers (``du_l = da δᵀ + a dδᵀ``, ``⟨aδᵀ, a'δ'ᵀ⟩ = (a·a')(δ·δ')``):
    no per-example gradient is formed. The clip gives
    ``J_g̃ = c·J_u + 2c'·u uᵀJ_u`` (c' = dc/d‖u‖²), so

        ‖J_g̃ t‖² = c²‖J_u t‖² + (4cc' + 4c'²‖u‖²)(uᵀJ_u t)².

    Summing t over the basis e_i gives the exact trace:
    ``‖J_u‖_F² = d‖δ₁‖² + 2 sᵀW₁ᵀx + Tr(H W₁ᵀW₁)`` (s_k = δ₁·dδ₁(e_k)) and
    ``‖J_uᵀu‖² = ‖ ‖δ₁‖²x + W₁r ‖²``; for Eq. 5, t runs over the sampled
    coordinates and the mean is multiplied by d.
"""

from __future__ import annotations

from .clipping import clip_factors, cross_entropy


def _rest_signals(model, params, y):
    """s₁ (B, h) ↦ (δ₁ (B, h), taps of layers ≥ 2, their signals): the network above the first pre-activation."""
    from .._jax import jax
    import jax.numpy as jnp

    layers = model.layers

    def total(s1, perts):
        h, taps = s1, []
        for i in range(1, len(layers)):
            h = jax.nn.elu(h)
            taps.append(h)
            h = h @ params[i]["w"] + params[i]["b"] + perts[i - 1]
        return jnp.sum(cross_entropy(h, y)), tuple(taps)

    def signals(s1):
        zero = tuple(jnp.zeros((s1.shape[0], layer.out_features), s1.dtype) for layer in layers[1:])
        (d1, deltas), taps = jax.grad(total, argnums=(0, 1), has_aux=True)(s1, zero)
        return d1, taps, deltas

    return signals


def _clip_terms(sq, clip_norm, clip_mode: str):
    """(c, dc/d‖u‖²) of the trainer's clip factor at ``sq`` = ‖u‖² (+ eps)."""
    from .._jax import jax

    return clip_factors(sq, clip_norm, clip_mode), jax.vmap(jax.grad(lambda q: clip_factors(q, clip_norm, clip_mode)))(sq)


def dense_trace_sq_norms(model, params, x, y, clip_norm, clip_mode: str, idx, eps_sq: float):
    """(B,) ``‖J_g̃‖_F²`` (``idx=None``) or its Eq. 5 estimate ``(d/m)Σ_k ‖J_g̃ e_{idx_k}‖²`` (``idx`` (B, m))."""
    from .._jax import jax
    import jax.numpy as jnp

    w1 = params[0]["w"]  # (d, h)
    b, d = x.shape
    h = w1.shape[1]
    s1 = x @ w1 + params[0]["b"]
    signals = _rest_signals(model, params, y)
    d1, taps, deltas = signals(s1)
    eye = jnp.broadcast_to(jnp.eye(h, dtype=s1.dtype)[:, None, :], (h, b, h))
    dd1, dtaps, ddeltas = jax.vmap(lambda e: jax.jvp(signals, (s1,), (e,))[1])(eye)  # (h, B, ·)

    x2 = jnp.sum(x * x, axis=1)
    d1sq = jnp.sum(d1 * d1, axis=1)
    u_sq = (x2 + 1.0) * d1sq  # ‖u‖² layer by layer (ghost norms)
    hmat = (x2 + 1.0)[:, None, None] * jnp.einsum("kbi,lbi->bkl", dd1, dd1)
    r = (x2 + 1.0)[:, None] * jnp.einsum("bi,kbi->bk", d1, dd1)
    for a, dl, da, ddl in zip(taps, deltas, dtaps, ddeltas):
        a2, dl2 = jnp.sum(a * a, axis=1), jnp.sum(dl * dl, axis=1)
        u_sq = u_sq + (a2 + 1.0) * dl2
        a_da = jnp.einsum("bi,kbi->bk", a, da)  # a·da_k
        dl_ddl = jnp.einsum("bo,kbo->bk", dl, ddl)  # δ·dδ_k
        hmat = hmat + (jnp.einsum("kbi,lbi->bkl", da, da) * dl2[:, None, None]
                       + a_da[:, :, None] * dl_ddl[:, None, :] + dl_ddl[:, :, None] * a_da[:, None, :]
                       + (a2 + 1.0)[:, None, None] * jnp.einsum("kbo,lbo->bkl", ddl, ddl))
        r = r + a_da * dl2[:, None] + (a2 + 1.0)[:, None] * dl_ddl
    s = jnp.einsum("bi,kbi->bk", d1, dd1)  # δ₁·dδ₁(e_k)

    c, c1 = _clip_terms(u_sq + eps_sq, clip_norm, clip_mode)
    kappa = 4.0 * c * c1 + 4.0 * c1 * c1 * u_sq

    if idx is None:
        gram = w1.T @ w1  # (h, h)
        ju = d * d1sq + 2.0 * jnp.einsum("bk,bk->b", s, x @ w1) + jnp.einsum("bkl,kl->b", hmat, gram)
        jtu = d1sq[:, None] * x + r @ w1.T  # (B, d): J_uᵀu
        return c * c * ju + kappa * jnp.sum(jtu * jtu, axis=1)
    # Eq. 5: ‖J_g̃ e_i‖² for every coordinate i at once (shared-W₁ matrix products, no per-probe batched
    # contractions), then the sampled ones: the same numbers as evaluating only the m probes, and on XLA CPU
    # faster than the (B, m, h) per-probe form even for m < d.
    quad = jnp.sum(jnp.einsum("ik,bkl->bil", w1, hmat) * w1[None], axis=-1)  # (B, d): W₁[i]ᵀ H W₁[i]
    ju = d1sq[:, None] + 2.0 * x * (s @ w1.T) + quad
    utj = x * d1sq[:, None] + r @ w1.T
    per = c[:, None] ** 2 * ju + kappa[:, None] * utj * utj  # (B, d)
    return d * jnp.mean(jnp.take_along_axis(per, idx, axis=1), axis=1)
