"""Prior-oblivious gradient-inversion attack (Hayes, Mahloujifar & Balle 2023, §2.1, Eq. (1); App. A and D).

The adversary sees the iterates θ_t and the privatised gradients with the
known points removed, ḡ_t, knows the target's label, and minimises over
z ∈ [0, 1]^d

    L(z) = Σ_t  −⟨clip_C(∇_θ ℓ(θ_t, z)), ḡ_t⟩ + ‖clip_C(∇_θ ℓ(θ_t, z)) − ḡ_t‖₁,

which needs second-order autodiff (z enters through ∇_θ ℓ). Several random
restarts from uniform noise are run in parallel (``vmap``) and the one with
the lowest loss is kept. The reconstruction is turned into a prior guess by
taking the nearest prior point in L2 (Hayes, Mahloujifar & Balle 2023, footnote 5 / App. D).

**Departures from the paper**, for cost: Adam (``optax.adam``) with a
projection onto the box after every step, and a few hundred steps per restart
instead of 10⁶ steps of plain gradient descent; each trial's success is
judged against the trial's own prior (one prior per trial, so that the
Clopper–Pearson interval applies), rather than averaged over 1,000 priors
per target.
"""

from __future__ import annotations

from ..train.dpsgd import clip_factors, cross_entropy
from ..train.models import Model


def inversion_loss(model: Model, unravel, thetas, gbars, z, label, clip_norm: float, clip_mode: str = "hard"):
    """Eq. (1) for one candidate ``z`` (d,) over all steps (thetas, gbars: (T, P))."""
    from .._jax import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    def per_step(theta):
        def loss(p):
            return cross_entropy(model.logits(p, z[None]), label[None])[0]

        return ravel_pytree(jax.grad(loss)(unravel(theta)))[0]

    grads = jax.vmap(per_step)(thetas)  # (T, P)
    scale = clip_factors(jnp.sum(grads * grads, axis=1), clip_norm, clip_mode)
    clipped = grads * scale[:, None]
    return jnp.sum(-jnp.sum(clipped * gbars, axis=1) + jnp.sum(jnp.abs(clipped - gbars), axis=1))


def gradient_inversion(
    model: Model,
    unravel,
    thetas,
    gbars,
    label,
    key,
    *,
    clip_norm: float,
    steps: int = 300,
    restarts: int = 5,
    learning_rate: float = 0.01,
    clip_mode: str = "hard",
):
    """Reconstruction ẑ (d,) in [0, 1]^d and its loss; jit/vmap friendly (no validation here)."""
    from .._jax import jax
    import jax.numpy as jnp
    import optax

    opt = optax.adam(learning_rate)
    loss_fn = lambda z: inversion_loss(model, unravel, thetas, gbars, z, label, clip_norm, clip_mode)  # noqa: E731
    value_and_grad = jax.value_and_grad(loss_fn)

    def one_restart(k):
        z0 = jax.random.uniform(k, (model.input_dim,), jnp.float32)

        def body(carry, _):
            z, state = carry
            _, gz = value_and_grad(z)
            upd, state = opt.update(gz, state, z)
            z = jnp.clip(optax.apply_updates(z, upd), 0.0, 1.0)
            return (z, state), None

        (z, _), _ = jax.lax.scan(body, (z0, opt.init(z0)), None, length=steps)
        return z, loss_fn(z)

    zs, losses = jax.vmap(one_restart)(jax.random.split(key, restarts))
    best = jnp.argmin(jnp.where(jnp.isfinite(losses), losses, jnp.inf))
    return zs[best], losses[best]


def nearest_neighbour(z, candidates):
    """Index of the candidate nearest to ``z`` in L2 (works on numpy or jax arrays)."""
    import jax.numpy as jnp

    return jnp.argmin(jnp.sum((candidates - z[None]) ** 2, axis=1))


# ----------------------------------------------------------------------------------------
# Inverting Gradients (Geiping et al. 2020), the attack of Biswas et al. 2024 (spec_004 §8)
# ----------------------------------------------------------------------------------------
def total_variation(x, image_shape):
    """Anisotropic total variation of a batch of flattened images (B, H·W·C): mean |∂_h x| + mean |∂_w x|."""
    import jax.numpy as jnp

    h, w, c = image_shape
    img = x.reshape(x.shape[0], h, w, c)
    return jnp.mean(jnp.abs(img[:, 1:] - img[:, :-1])) + jnp.mean(jnp.abs(img[:, :, 1:] - img[:, :, :-1]))


def inverting_gradients(
    grad_fn,
    observed,
    labels,
    key,
    *,
    image_shape,
    iterations: int = 500,
    learning_rate: float = 0.1,
    tv_weight: float = 1e-2,
):
    """Reconstruct a batch of B images from an observed (privatised) flat gradient (Biswas et al. 2024, §8; IGA).

    Minimises ``1 − cos(grad_fn(x̂, labels), observed) + tv_weight·TV(x̂)`` over
    x̂ ∈ [0, 1]^{B×d}, as in the inversefed reference (cost ``"sim"`` over all
    layers, indices ``"def"``): Adam on the **sign** of the gradient with step
    ``learning_rate``, decayed ×0.1 at 3/8, 5/8 and 7/8 of the iterations,
    a projection onto the box after every step, uniform random initialisation.
    The attacker knows the labels (an assumption; Biswas et al. 2024 does not say).
    ``grad_fn(x, labels)`` returns the flat gradient the mechanism privatised
    (for DP-SGD: the mean of the clipped per-example gradients). Returns
    (x̂ (B, d), final loss). jit-able; no validation here (callers validate).
    """
    from .._jax import jax
    import jax.numpy as jnp
    import optax

    b = labels.shape[0]
    d = int(image_shape[0] * image_shape[1] * image_shape[2])
    obs = observed / jnp.maximum(jnp.linalg.norm(observed), 1e-30)
    bounds = {int(iterations * f): 0.1 for f in (3 / 8, 5 / 8, 7 / 8)}
    opt = optax.adam(optax.piecewise_constant_schedule(learning_rate, bounds))

    def loss_fn(x):
        g = grad_fn(x, labels)
        cos = jnp.dot(g, obs) / jnp.maximum(jnp.linalg.norm(g), 1e-30)
        return 1.0 - cos + tv_weight * total_variation(x, image_shape)

    value_and_grad = jax.value_and_grad(loss_fn)
    x0 = jax.random.uniform(key, (b, d), jnp.float32)

    def body(carry, _):
        x, state = carry
        _, gx = value_and_grad(x)
        upd, state = opt.update(jnp.sign(gx), state, x)
        return (jnp.clip(optax.apply_updates(x, upd), 0.0, 1.0), state), None

    (x, _), _ = jax.lax.scan(body, (x0, opt.init(x0)), None, length=iterations)
    return x, loss_fn(x)
