"""Many dense shadow models as batched matrix products: the fast program behind ``train_shadow_models``.

:func:`reconrisk._src.train.shadow.train_shadow_models` trains θ_i = A(D⁻ ∪ {z_i})
for many targets z_i. For dense models (``mlp``, ``mlp:W1,…``, ``logistic``),
with or without DP, this module writes that training *for M models at once*
as a few large matrix products per step instead of ``jax.vmap`` of the one-model
program (which XLA turns into many small batched products, transposes and
copies). It trains exactly the same models — same algorithm A (full-batch
gradient descent with heavy-ball momentum ``v ← μv + g/n``, ``θ ← θ − ηv``
on the summed cross-entropy, :func:`reconrisk._src.train.dpsgd.dpsgd_update`),
same initialisation, same flat parameter order — to float rounding
(``tests/test_shadow_dense.py`` compares it with the generic program).

The first layer in the span of the data (the "kernel" form)
    Every model sees the same D⁻ = X (n × d) plus its own z. The gradient of
    the summed loss with respect to the first layer's weights is
    Σ_j x_j δ_jᵀ = Xᵀ Δᵀ + z δ_zᵀ (Δ: h × n, the signals of D⁻ at that layer;
    δ_z: the target's), and momentum is linear, so after any number of steps

        W₁ = W₁⁽⁰⁾ + Xᵀ Aᵀ + z cᵀ      (A: h × n, c: h, one pair per model).

    The layer's pre-activations then need no d-dimensional product at all:

        W₁ᵀ Xᵀ = P + A G + c uᵀ,      W₁ᵀ z = p_z + A u + c ‖z‖²,

    with G = X Xᵀ (n × n, shared), P = W₁⁽⁰⁾ᵀ Xᵀ (shared under the known
    init), u = X z and p_z = W₁⁽⁰⁾ᵀ z (per model, computed once). A step
    updates (A, c) by the signals themselves: the weight gradient Xᵀ Δᵀ is
    never formed. For M models the product A G is ONE (M·h × n)·(n × n)
    matrix product; W₁ itself is formed once, after the last step, by one
    (M·h × n)·(n × d) product. Per model and step this costs n²h instead of
    2ndh multiply-adds for the first layer (d = 64, n = 51 on the digits;
    d = 784 on MNIST, where the saving is 30×).

The direct form (large D⁻, and every DP run)
    The kernel form costs n²h per model and step, the explicit W₁ 2ndh, so
    from n ≥ 2d on (:func:`first_layer_form`) W₁ᵀ (M, h, d) is kept: its
    pre-activations on D⁻ are still ONE product (M·h × d)·(d × n) for all
    models (X is shared), and its gradient ONE product (M·h × n)·(n × d),
    plus the target's outer product δ_z zᵀ. Under DP the noise on W₁ leaves
    the span of the data, so DP always takes this form.

DP-GD (Hayes, Mahloujifar & Balle's (2023) DP-SGD at sample rate 1, hard clipping, Gaussian noise)
    Per-example squared gradient norms come from the signals without any
    per-example gradient: a dense layer's gradient for example j is the outer
    product a_j δ_jᵀ plus the bias δ_j, so ‖∇ℓ_j‖² = Σ_layers (‖a_j‖² + 1)‖δ_j‖²
    (‖x_j‖² of D⁻ computed once). Every signal is then scaled by
    min(1, C/‖∇ℓ_j‖) before the weight products (clipping is linear in δ_j).
    The noise is the generic program's draw bit for bit: N(0, σ²C² I_P) from
    ``step_keys(fold_in(key_i, 0), t)[1]`` over the flat (``ravel_pytree``
    order) gradient, sliced into the layers' pieces.

Layout
    Activations are stored feature-major, (M, features, n + 1) with the
    target as the last column, so every product of the upper layers is a
    batched matrix product with the model axis leading (no transposes), and
    the elementwise work (eLU and its derivative from one exponential,
    softmax, momentum) runs over contiguous arrays.

Departures from the generic program: none in the mathematics; float32 sums
are taken in a different order (relative differences ~1e-6 after 30 steps).
Convolutional models keep the generic vmapped program of
:mod:`reconrisk._src.train.shadow`.
"""

from __future__ import annotations

import math

from ..errors import ReconRiskError
from .dpsgd import step_keys
from .models import Model


def supports(model: Model, cfg) -> bool:
    """Whether the batched dense program trains this model under this step config.

    Dense layers, full batch, and either no DP (C = inf) or DP-GD with hard
    clipping and Gaussian noise (the only DP that :class:`ShadowConfig` builds).
    """

    if not (all(layer.kind == "dense" for layer in model.layers) and cfg.sample_rate == 1.0):
        return False
    return math.isinf(cfg.clip_norm) or (cfg.clip_mode == "hard" and cfg.noise == "gaussian")


def first_layer_form(n_fixed: int, input_dim: int, dp: bool) -> str:
    """``"kernel"`` (first layer in the span of the data; plain GD only) or ``"direct"`` (explicit W₁).

    Per model and step the kernel form costs n²h multiply-adds and the direct
    one 2ndh (n = |D⁻|, d inputs, h first-layer outputs), so the kernel form
    is taken while n < 2d. DP noise on W₁ leaves the span of the data, so DP
    always takes the direct form.
    """
    return "direct" if dp or n_fixed >= 2 * input_dim else "kernel"


def _elu_and_derivative(s):
    """(eLU(s), eLU'(s)) from one exponential: for s ≤ 0 both are built from e = exp(s)."""
    import jax.numpy as jnp

    e = jnp.exp(jnp.minimum(s, 0.0))
    pos = s > 0
    return jnp.where(pos, s, e - 1.0), jnp.where(pos, 1.0, e)


def dense_program(model: Model, static: tuple, form: str | None = None):
    """``run(x_fixed, y_fixed, x_targets, y_targets, noise_std, keys) -> (M, P)`` flat final parameters (jit-able).

    ``static`` is :meth:`ShadowConfig.static`: (step config, steps, init seed,
    random init). ``keys`` (M, 2) are the per-model keys, read as the generic
    program reads them: model i's init is ``model.init(fold_in(key_i, 1))``
    with ``random_init``, and under DP step t's noise is
    ``N(0, noise_std² I_P)`` drawn from ``step_keys(fold_in(key_i, 0), t)[1]``
    on the flat (``ravel_pytree``-order) gradient — the same draws as the
    generic program. ``form`` forces the first layer's form
    (:func:`first_layer_form` by default).
    """

    from .._jax import jax
    import jax.numpy as jnp

    cfg, steps, init_seed, random_init = static
    if not supports(model, cfg):
        raise ReconRiskError(f"program 'dense' needs a dense model (found {model.name!r}) and a full-batch step config "
                             f"without DP or with hard clipping and Gaussian noise (found clip_norm={cfg.clip_norm}, "
                             f"sample_rate={cfg.sample_rate}, clip_mode={cfg.clip_mode!r}, noise={cfg.noise!r})")
    dp = not math.isinf(cfg.clip_norm)
    if form not in (None, "kernel", "direct"):
        raise ReconRiskError(f"form must be None, 'kernel' or 'direct'; found {form!r}")
    if form == "kernel" and dp:
        raise ReconRiskError("form 'kernel' trains without DP only (DP noise on W1 leaves the span of the data)")
    lr, mu, norm, clip = float(cfg.learning_rate), float(cfg.momentum), float(cfg.normalizer), float(cfg.clip_norm)
    nlayers = len(model.layers)
    classes = model.num_classes
    sizes = []  # ravel_pytree order: per layer b (out,), then w (in, out)
    for layer in model.layers:
        sizes += [layer.out_features, layer.in_features * layer.out_features]
    offsets = [0]
    for k in sizes:
        offsets.append(offsets[-1] + k)

    def run(xf, yf, xt, yt, noise_std, keys):
        m = xt.shape[0]
        n, d = xf.shape
        kernel = (form or first_layer_form(n, d, dp)) == "kernel"
        if random_init:
            init = jax.vmap(lambda k: model.init(jax.random.fold_in(k, 1)))(keys)
        else:
            one = model.init(jax.random.PRNGKey(init_seed))
            init = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (m,) + a.shape), one)
        w0 = init[0]["w"]  # (M, d, h)
        h1 = w0.shape[2]
        zz = jnp.sum(xt * xt, axis=1)  # (M,)
        onehot = jnp.concatenate([jnp.broadcast_to(jax.nn.one_hot(yf, classes, dtype=jnp.float32).T[None],
                                                   (m, classes, n)),
                                  jax.nn.one_hot(yt, classes, dtype=jnp.float32)[:, :, None]], axis=2)  # (M, o, n+1)
        params = {"b": [init[i]["b"] for i in range(nlayers)],
                  "wt": [jnp.swapaxes(init[i]["w"], 1, 2) for i in range(1, nlayers)]}  # upper layers (M, out, in)
        if kernel:
            gram = xf @ xf.T  # (n, n), shared
            u = xt @ xf.T  # (M, n): X z for every model
            if random_init:
                p_fixed = jnp.einsum("nd,mdh->mhn", xf, w0)  # (M, h, n)
            else:
                p_fixed = (w0[0].T @ xf.T)[None]  # (1, h, n): one product for every model
            p_target = jnp.einsum("md,mdh->mh", xt, w0)  # (M, h)
            params.update(A=jnp.zeros((m, h1, n), jnp.float32), c=jnp.zeros((m, h1), jnp.float32))
        else:
            xft = xf.T  # (d, n), once
            params["w1t"] = jnp.swapaxes(w0, 1, 2)  # (M, h, d)
        if dp:
            run_keys = jax.vmap(lambda k: jax.random.fold_in(k, 0))(keys)
            xsq = jnp.concatenate([jnp.broadcast_to(jnp.sum(xf * xf, axis=1)[None], (m, n)), zz[:, None]], axis=1)
        velocity = jax.tree_util.tree_map(jnp.zeros_like, params)

        def first_layer(p):
            b1 = p["b"][0]
            if kernel:
                a, c = p["A"], p["c"]
                s_fixed = (p_fixed + (a.reshape(m * h1, n) @ gram).reshape(m, h1, n)
                           + c[:, :, None] * u[:, None, :] + b1[:, :, None])
                s_target = p_target + jnp.einsum("mhn,mn->mh", a, u) + c * zz[:, None] + b1
            else:
                w1t = p["w1t"]
                s_fixed = (w1t.reshape(m * h1, d) @ xft).reshape(m, h1, n) + b1[:, :, None]
                s_target = jnp.einsum("mhd,md->mh", w1t, xt) + b1
            return jnp.concatenate([s_fixed, s_target[:, :, None]], axis=2)  # (M, h, n+1)

        def step(carry, t):
            p, vel = carry
            s = first_layer(p)
            acts, derivs = [], []
            for i in range(1, nlayers):  # hidden eLU layers, then the next affine map
                hid, der = _elu_and_derivative(s)
                acts.append(hid)
                derivs.append(der)
                s = jnp.einsum("mok,mkj->moj", p["wt"][i - 1], hid) + p["b"][i][:, :, None]
            logits = s - jnp.max(s, axis=1, keepdims=True)
            ex = jnp.exp(logits)
            deltas = [None] * nlayers  # d(per-example CE)/d pre-activations, (M, out, n+1) per layer
            deltas[-1] = ex / jnp.sum(ex, axis=1, keepdims=True) - onehot
            for i in range(nlayers - 1, 0, -1):
                # Wᵀδ as a plain batched product (M, in, out)(M, out, n+1): the einsum with W's first axis contracted
                # lowers to a transposed-operand dot that XLA:CPU runs ~4× slower (the barrier keeps the transpose).
                w_in_out = jax.lax.optimization_barrier(jnp.swapaxes(p["wt"][i - 1], 1, 2))
                deltas[i - 1] = (w_in_out @ deltas[i]) * derivs[i - 1]
            if dp:  # per-example clipping: ‖∇ℓ_j‖² = Σ_layers (‖a_j‖² + 1)‖δ_j‖² (outer products and biases)
                sq = (xsq + 1.0) * jnp.sum(deltas[0] * deltas[0], axis=1)
                for i in range(1, nlayers):
                    sq = sq + (jnp.sum(acts[i - 1] * acts[i - 1], axis=1) + 1.0) * jnp.sum(deltas[i] * deltas[i],
                                                                                       axis=1)
                scale = jnp.minimum(1.0, clip / jnp.maximum(jnp.sqrt(sq), 1e-30))[:, None, :]  # (M, 1, n+1)
                deltas = [dl * scale for dl in deltas]
            grads = {"b": [jnp.sum(dl, axis=2) for dl in deltas],
                     "wt": [jnp.einsum("moj,mkj->mok", deltas[i], acts[i - 1]) for i in range(1, nlayers)]}
            d1 = deltas[0]
            if kernel:
                grads.update(A=d1[:, :, :n], c=d1[:, :, n])
            else:
                grads["w1t"] = (d1[:, :, :n].reshape(m * h1, n) @ xf).reshape(m, h1, d) + d1[:, :, n:] * xt[:, None, :]
            if dp:  # the generic program's draw: N(0, σ²C² I_P) on the flat gradient, keyed per model and step
                z = jax.vmap(lambda k: jax.random.normal(step_keys(k, t)[1], (offsets[-1],), jnp.float32))(run_keys)
                z = z * noise_std
                piece = lambda j: z[:, offsets[j]:offsets[j + 1]]  # noqa: E731
                grads["b"] = [g + piece(2 * i) for i, g in enumerate(grads["b"])]
                grads["w1t"] = grads["w1t"] + jnp.swapaxes(piece(1).reshape(m, d, h1), 1, 2)
                grads["wt"] = [g + jnp.swapaxes(piece(2 * i + 1).reshape(m, g.shape[2], g.shape[1]), 1, 2)
                               for i, g in zip(range(1, nlayers), grads["wt"])]
            vel = jax.tree_util.tree_map(lambda v, g: mu * v + g / norm, vel, grads)
            p = jax.tree_util.tree_map(lambda q, v: q - lr * v, p, vel)
            return (p, vel), None

        (params, _), _ = jax.lax.scan(step, (params, velocity), jnp.arange(steps))
        if kernel:
            w1 = (w0 + jnp.swapaxes((params["A"].reshape(m * h1, n) @ xf).reshape(m, h1, -1), 1, 2)
                  + xt[:, :, None] * params["c"][:, None, :])
        else:
            w1 = jnp.swapaxes(params["w1t"], 1, 2)
        flat = [params["b"][0], w1.reshape(m, -1)]
        for i in range(1, nlayers):  # ravel_pytree order: per layer b, then w (in, out) row-major
            flat += [params["b"][i], jnp.swapaxes(params["wt"][i - 1], 1, 2).reshape(m, -1)]
        return jnp.concatenate(flat, axis=1)

    return run


__all__ = ["dense_program", "first_layer_form", "supports"]
