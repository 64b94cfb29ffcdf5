"""The jitted DP-SGD step of Riess et al.'s (2024) explicit attack mode (split out of :mod:`reconrisk._src.attacks.analytic`).

One reconstruction is one real DP-SGD step with batch size 1 on the linear
layer ``f(X) = WX (+ b)`` with the loss ``L = 1ᵀ(WX + b)``: ``jax.grad`` of
the loss gives the per-example gradient (every row of ``∇_W`` is X, ``∇_b =
1``), its norm over the M·N (+ M) elements is a pairwise float32 sum
(:func:`~reconrisk._src.train.clipping.pairwise_sum`), the clip factor is
``β = min(1, C/‖g‖)`` (Eq. 10, :func:`~reconrisk._src.train.clipping.clip_factors`)
and the Gaussian noise ``N(0, σ²C²)`` is added to every coordinate of the
clipped gradient (Eqs. 11-12, :func:`~reconrisk._src.train.noise.gaussian`). The
estimator is Eq. 16 (oracle scale β: the row mean over β) or Eq. 15 (the
ratio of the row-summed weight and bias gradients).

Layout (why it is fast on CPU)
    On CPU a chunk of reconstructions runs as ``lax.map`` over *blocks* of
    :data:`BLOCK_ELEMENTS` // (M·N) reconstructions (one image of
    224×224×3 per block), not as one ``vmap`` over the chunk (accelerators
    keep the one ``vmap``: :func:`block_rows`). Under ``vmap``
    XLA materialised the erfinv of the noise for the whole chunk (tens of MB)
    and, in the metric step, generated the noise again for each of the
    reductions that read it (three times); per block every intermediate stays
    in the core's cache and the noise is generated once. Each reconstruction's
    key is still ``fold_in(key, row)`` and each draw ``jax.random.normal(k,
    (M, N))``, so the noise bits are those of earlier versions.

Metrics (Riess et al. 2024, Def. 3 MSE, Def. 5 NCC) without a second pass over X̂
    With ``d = X̂ − X`` (the same float32 subtraction as before) and, once per
    *sample*, ``x̄`` (pairwise mean), ``S_x = Σ(x − x̄)`` (the rounding left in
    x̄) and ``S_xx = Σ(x − x̄)²``, each reconstruction needs only the three
    pairwise sums ``S_d = Σd``, ``S_dd = Σd²``, ``S_xd = Σ(x − x̄)d``:

        MSE = S_dd / N,
        Σ x_c·h_c = S_xx + S_xd − S_x·t,      t = (S_x + S_d)/N,
        Σ h_c²    = S_xx + 2 S_xd + S_dd − (S_x + S_d)·t,
        Σ x_c²    = S_xx − S_x²/N,
        NCC = Σ x_c·h_c / sqrt(Σ x_c² · Σ h_c²)

    (``x_c``, ``h_c``: X and X̂ minus their means; exact algebra, no raw
    moments: nothing cancels beyond what the centred sums themselves carry).
    Earlier versions centred X̂ with its own pairwise mean and summed the
    centred products; the two agree to float32 rounding (~1e-7 relative,
    tested against float64 numpy on the returned reconstructions).
"""

from __future__ import annotations

import functools

from ..train.clipping import clip_factors, pairwise_sum
from ..train.noise import gaussian

#: elements (M·N per reconstruction) handled per ``lax.map`` iteration: at least one reconstruction, about 1 MiB
#: of float32 per intermediate, so the noise, X̂ and d of a block stay in a core's L2 cache.
BLOCK_ELEMENTS = 1 << 18


#: rows per iteration on accelerators: the whole chunk in one ``vmap`` (a GPU needs the parallel width; the
#: cache argument is the CPU's). This is the earlier layout, measured at 0.045 s per 10⁴ reconstructions on an H100.
_ACCELERATOR_BLOCK = 1 << 30


def block_rows(rows: int, dim: int, backend: str | None = None) -> int:
    """Reconstructions per ``lax.map`` iteration for an M×N layer (≥ 1) on ``backend`` (default: JAX's)."""
    if backend is None:
        from .._jax import jax

        backend = jax.default_backend()
    if backend != "cpu":
        return _ACCELERATOR_BLOCK
    return max(1, BLOCK_ELEMENTS // (rows * dim))


def _one_step(rows: int, dim: int, bias: bool, sc: str):
    """``one(p, xi, key, s, c) -> (x̂, ‖g‖)``: one DP-SGD step on one sample and the estimator (unjitted)."""
    from .._jax import jax
    import jax.numpy as jnp

    def loss(p, xi):  # L = 1ᵀ(W X + b)
        out = p["W"] @ xi
        if bias:
            out = out + p["b"]
        return jnp.sum(out)

    grad = jax.grad(loss)

    def one(p, xi, key, s, c):
        g = grad(p, xi)  # per-example gradient: every row of ∇_W is X, ∇_b = 1
        # ‖g‖² over M·N ≈ 10⁸ float32 terms: a plain reduction is off by ~1e-4 relative (rounding, thread
        # split dependent: the "wrong norm under load" of earlier versions); the pairwise sum is not.
        sq = pairwise_sum(jnp.ravel(g["W"]) ** 2)
        if bias:
            sq = sq + pairwise_sum(g["b"] ** 2)
        gnorm = jnp.sqrt(sq)
        beta = clip_factors(sq, c, "hard")  # Eq. 10: min(1, C/‖g‖) (Opacus adds 1e-6 to the norm; negligible)
        kw, kb = jax.random.split(key)
        noisy_w = gaussian(kw, beta * g["W"], s * c)  # Eq. 11
        if sc == "oracle":
            return jnp.mean(noisy_w, axis=0) / beta, gnorm  # Eq. 16 with the oracle scale β·∂L/∂f_j = β
        noisy_b = gaussian(kb, beta * g["b"], s * c)  # Eq. 12
        return jnp.sum(noisy_w, axis=0) / jnp.sum(noisy_b), gnorm  # Eq. 15, rows summed first

    return one


def _keys(base_key, idx):
    from .._jax import jax

    return jax.vmap(lambda i: jax.random.fold_in(base_key, i))(idx)


def _metric_row(one, dim: int):
    """``row(p, xi, stats_i, key, s, c) -> ([MSE, NCC], ‖g‖)`` for one reconstruction (see the module docstring)."""
    import jax.numpy as jnp

    def row(p, xi, st, key, s, c):
        xh, gnorm = one(p, xi, key, s, c)
        d = xh - xi
        xbar, sx, sxx = st[0], st[1], st[2]
        sd, sdd, sxd = pairwise_sum(d), pairwise_sum(d * d), pairwise_sum((xi - xbar) * d)
        t = (sx + sd) / dim
        num = sxx + sxd - sx * t  # Σ x_c·h_c
        hh = sxx + 2.0 * sxd + sdd - (sx + sd) * t  # Σ h_c²
        corr = num / jnp.sqrt((sxx - sx * sx / dim) * hh)  # Def. 5 (nan for a constant sample, as before)
        return jnp.stack([sdd / dim, corr]), gnorm  # Def. 3

    return row


@functools.lru_cache(maxsize=16)
def _sample_stats(dim: int):
    """``stats(xs (n, N)) -> (n, 3)``: per sample x̄ (pairwise mean), Σ(x − x̄) and Σ(x − x̄)², float32, jitted."""
    from .._jax import jax
    import jax.numpy as jnp

    def stats(xs):
        xbar = pairwise_sum(xs) / dim
        xc = xs - xbar[:, None]
        return jnp.stack([xbar, pairwise_sum(xc), pairwise_sum(xc * xc)], axis=1)

    return jax.jit(stats)


@functools.lru_cache(maxsize=16)
def _gathered_step(rows: int, dim: int, bias: bool, sc: str, metrics: bool):
    """The explicit (metric) step reading its samples by index from a source array.

    ``step(p, src, stats, loc, base_key, idx, s, c)``: row r attacks
    ``src[loc[r]]`` (``stats`` = :func:`_sample_stats` of ``src``, ignored
    without ``metrics``). With the data resident on the device a chunk sends
    only indices and keys across, and each block gathers its own rows: the
    image is not copied once per reconstruction (``repeats``).
    """
    from .._jax import jax
    from jax import lax

    one = _one_step(rows, dim, bias, sc)
    row = _metric_row(one, dim) if metrics else None
    size = block_rows(rows, dim)

    def gathered(p, src, st, loc, base_key, idx, s, c):
        keys = _keys(base_key, idx)
        if metrics:
            return lax.map(lambda a: row(p, src[a[0]], st[a[0]], a[1], s, c), (loc, keys), batch_size=size)
        return lax.map(lambda a: one(p, src[a[0]], a[1], s, c), (loc, keys), batch_size=size)

    return jax.jit(gathered)
