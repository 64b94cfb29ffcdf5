"""Many dense shadow models as batched matrix products: the fast program behind ``train_shadow_models``.

:func:`reconrisk.train.shadow.train_shadow_models` trains θ_i = A(D⁻ ∪ {z_i})
for many targets z_i. For dense models (``mlp``, ``mlp:W1,…``, ``logistic``)
without DP, this module writes that training *for M models at once* as a few
large matrix products per step instead of ``jax.vmap`` of the one-model
program (which XLA turns into many small batched products, transposes and
copies). It trains exactly the same models — same algorithm A (full-batch
gradient descent with heavy-ball momentum ``v ← μv + g/n``, ``θ ← θ − ηv``
on the summed cross-entropy, :func:`reconrisk.train.dpsgd.dpsgd_update`),
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

Layout
    Activations are stored feature-major, (M, features, n + 1) with the
    target as the last column, so every product of the upper layers is a
    batched matrix product with the model axis leading (no transposes), and
    the elementwise work (eLU and its derivative from one exponential,
    softmax, momentum) runs over contiguous arrays.

Departures from the generic program: none in the mathematics; float32 sums
are taken in a different order (relative differences ~1e-6 after 30 steps).
DP-SGD (per-example clipping + noise) and convolutional models keep the
generic vmapped program of :mod:`reconrisk.train.shadow`.
"""

from __future__ import annotations

from ..errors import ReconRiskError
from .models import Model


def supports(model: Model, cfg) -> bool:
    """Whether the batched dense program trains this model under this step config (dense layers, no DP)."""
    import math

    return (all(layer.kind == "dense" for layer in model.layers) and math.isinf(cfg.clip_norm)
            and cfg.sample_rate == 1.0)


def _elu_and_derivative(s):
    """(eLU(s), eLU'(s)) from one exponential: for s ≤ 0 both are built from e = exp(s)."""
    import jax.numpy as jnp

    e = jnp.exp(jnp.minimum(s, 0.0))
    pos = s > 0
    return jnp.where(pos, s, e - 1.0), jnp.where(pos, 1.0, e)


def dense_program(model: Model, static: tuple):
    """``run(x_fixed, y_fixed, x_targets, y_targets, keys) -> (M, P)`` flat final parameters (jit-able).

    ``static`` is :meth:`ShadowConfig.static`: (step config, steps, init seed,
    random init). ``keys`` (M, 2) are the per-model keys; they are read only
    with ``random_init`` (model i's init is ``model.init(fold_in(key_i, 1))``,
    as in the generic program). Without DP the models use no other randomness.
    """
    from .._jax import jax
    import jax.numpy as jnp

    cfg, steps, init_seed, random_init = static
    if not supports(model, cfg):
        raise ReconRiskError(f"program 'dense' needs a dense model (found {model.name!r}) and a plain (non-DP) "
                             f"full-batch step config (found clip_norm={cfg.clip_norm}, sample_rate={cfg.sample_rate})")
    lr, mu, norm = float(cfg.learning_rate), float(cfg.momentum), float(cfg.normalizer)
    nlayers = len(model.layers)
    classes = model.num_classes

    def run(xf, yf, xt, yt, keys):
        m = xt.shape[0]
        n = xf.shape[0]
        if random_init:
            init = jax.vmap(lambda k: model.init(jax.random.fold_in(k, 1)))(keys)
        else:
            one = model.init(jax.random.PRNGKey(init_seed))
            init = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (m,) + a.shape), one)
        w0 = init[0]["w"]  # (M, d, h)
        h1 = w0.shape[2]
        gram = xf @ xf.T  # (n, n), shared
        u = xt @ xf.T  # (M, n): X z for every model
        zz = jnp.sum(xt * xt, axis=1)  # (M,)
        if random_init:
            p_fixed = jnp.einsum("nd,mdh->mhn", xf, w0)  # (M, h, n)
        else:
            p_fixed = (w0[0].T @ xf.T)[None]  # (1, h, n): one product for every model
        p_target = jnp.einsum("md,mdh->mh", xt, w0)  # (M, h)
        onehot = jnp.concatenate([jnp.broadcast_to(jax.nn.one_hot(yf, classes, dtype=jnp.float32).T[None],
                                                   (m, classes, n)),
                                  jax.nn.one_hot(yt, classes, dtype=jnp.float32)[:, :, None]], axis=2)  # (M, o, n+1)

        params = {"A": jnp.zeros((m, h1, n), jnp.float32), "c": jnp.zeros((m, h1), jnp.float32),
                  "b": [init[0]["b"]] + [init[i]["b"] for i in range(1, nlayers)],
                  "wt": [jnp.swapaxes(init[i]["w"], 1, 2) for i in range(1, nlayers)]}  # upper layers (M, out, in)
        velocity = jax.tree_util.tree_map(jnp.zeros_like, params)

        def step(carry, _):
            p, vel = carry
            a, c, b1 = p["A"], p["c"], p["b"][0]
            s_fixed = (p_fixed + (a.reshape(m * h1, n) @ gram).reshape(m, h1, n)
                       + c[:, :, None] * u[:, None, :] + b1[:, :, None])
            s_target = p_target + jnp.einsum("mhn,mn->mh", a, u) + c * zz[:, None] + b1
            s = jnp.concatenate([s_fixed, s_target[:, :, None]], axis=2)  # (M, h, n+1)
            acts, derivs = [], []
            for i in range(1, nlayers):  # hidden eLU layers, then the next affine map
                hid, der = _elu_and_derivative(s)
                acts.append(hid)
                derivs.append(der)
                s = jnp.einsum("mok,mkj->moj", p["wt"][i - 1], hid) + p["b"][i][:, :, None]
            logits = s - jnp.max(s, axis=1, keepdims=True)
            ex = jnp.exp(logits)
            delta = ex / jnp.sum(ex, axis=1, keepdims=True) - onehot  # d(summed CE)/d logits, (M, o, n+1)
            g_wt, g_b = [None] * (nlayers - 1), [None] * nlayers
            for i in range(nlayers - 1, 0, -1):
                g_b[i] = jnp.sum(delta, axis=2)
                g_wt[i - 1] = jnp.einsum("moj,mkj->mok", delta, acts[i - 1])
                # Wᵀδ as a plain batched product (M, in, out)(M, out, n+1): the einsum with W's first axis contracted
                # lowers to a transposed-operand dot that XLA:CPU runs ~4× slower (the barrier keeps the transpose).
                w_in_out = jax.lax.optimization_barrier(jnp.swapaxes(p["wt"][i - 1], 1, 2))
                delta = (w_in_out @ delta) * derivs[i - 1]
            g_b[0] = jnp.sum(delta, axis=2)
            grads = {"A": delta[:, :, :n], "c": delta[:, :, n], "b": g_b, "wt": g_wt}
            vel = jax.tree_util.tree_map(lambda v, g: mu * v + g / norm, vel, grads)
            p = jax.tree_util.tree_map(lambda q, v: q - lr * v, p, vel)
            return (p, vel), None

        (params, _), _ = jax.lax.scan(step, (params, velocity), None, length=steps)
        w1 = (w0 + jnp.swapaxes((params["A"].reshape(m * h1, n) @ xf).reshape(m, h1, -1), 1, 2)
              + xt[:, :, None] * params["c"][:, None, :])
        flat = [params["b"][0], w1.reshape(m, -1)]
        for i in range(1, nlayers):  # ravel_pytree order: per layer b, then w (in, out) row-major
            flat += [params["b"][i], jnp.swapaxes(params["wt"][i - 1], 1, 2).reshape(m, -1)]
        return jnp.concatenate(flat, axis=1)

    return run


__all__ = ["dense_program", "supports"]
