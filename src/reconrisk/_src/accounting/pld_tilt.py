"""The choice of the exponential tilt of a composition (for :func:`reconrisk._src.accounting.pld.compose_segments`).

:func:`tilt_for_kappa` picks the tilt that centres the composition on the Neyman–Pearson threshold of κ,
from the moments of coarse step PMFs (:func:`step_moments`). Grid choice only: any θ ≥ 0 gives a certified
bracket.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from .pld import step_pmf
from .pld_step import MAX_LOSS, STEP_TAIL, loss_range

def step_moments(segments, thetas: np.ndarray, h: float | None = None, tail_mass: float = STEP_TAIL,
                 direction: str = "remove"):
    """Σ T_i·(K_i, K_i′, K_i″)(θ) for each θ: the log-MGF E_μ[e^{θL}] of the composed loss and its first
    two derivatives (the tilted mean and variance), from coarse pessimistic step PMFs of ``direction``
    (``"remove"``, ``"add"``, ``"symmetric"``). Grid choice only."""
    k0 = np.zeros(thetas.size)
    k1 = np.zeros(thetas.size)
    k2 = np.zeros(thetas.size)
    for seg in segments:
        lo, hi, _, _ = loss_range(seg.noise_multiplier, seg.sample_rate, "remove", tail_mass)
        hc = max(h or 0.0, (min(hi, MAX_LOSS) - lo) / 4000.0)
        p = step_pmf(seg.noise_multiplier, seg.sample_rate, hc, pessimistic=True, tail_mass=tail_mass,
                     direction=direction)
        l = p.losses
        pos = p.probs > 0
        lp = np.log(p.probs[pos])
        lv = l[pos]
        a = thetas[:, None] * lv[None, :] + lp[None, :]
        lz = special.logsumexp(a, axis=1)
        w = np.exp(a - lz[:, None])
        m = w @ lv
        var = w @ (lv * lv) - m * m
        k0 += seg.steps * lz
        k1 += seg.steps * m
        k2 += seg.steps * np.maximum(var, 0.0)
    return k0, k1, k2


#: Largest tilt considered (the tilted ν-tail bound e^{TK(θ) − (θ+1)a} reaches any κ ≥ 1e-300 far below it).
MAX_TILT = 1e6


def tilt_for_kappa(segments, kappa, h: float | None = None, tail_mass: float = STEP_TAIL) -> tuple[np.ndarray, np.ndarray]:
    """The tilt θ(κ) ≥ 0 that centres the tilted composition on the Neyman–Pearson threshold of κ.

    The threshold a with ν(L > a) = κ is located by the Chernoff (saddle-point) relation
    log ν(L > a) ≈ T·K(θ) − (θ + 1)·a at a = T·K′(θ) (the ν-tilt by θ + 1 is the μ-tilt by θ),
    solved for θ by bisection (the left side decreases in θ); θ = 0 where the untilted bulk already
    reaches κ. Returns (θ, sd) with sd = √(T·K″(θ)) the tilted spread of the composed loss. Grid
    choice only: any θ ≥ 0 gives a certified bracket.

    The tilted mean is also kept ≤ log(1/κ), where the threshold always lies (ν(L > a) ≤ e^{−a}): with
    few expected inclusions (T·q ≪ 1) the tail is one big jump, the Chernoff relation overshoots, and
    the tilted steps would pile up at the truncated end of their support. ``tail_mass``: the steps'
    truncated tail, as in the composition (the support the tilted mean is computed on).
    """
    kappa = np.atleast_1d(np.asarray(kappa, dtype=float))
    grid = np.concatenate([[0.0], np.logspace(-3, math.log10(MAX_TILT), 361)])
    k0, k1, k2 = step_moments(segments, grid, h, tail_mass)
    g = k0 - (grid + 1.0) * k1  # non-increasing in θ
    g = np.minimum.accumulate(g)
    lk = np.log(kappa)
    theta = np.zeros(kappa.size)
    for i, v in enumerate(lk):
        if g[0] <= v:
            continue
        j = int(np.searchsorted(-g, -v, side="left"))  # first grid point with g <= log κ
        j = min(max(j, 1), grid.size - 1)
        # linear interpolation in θ between grid[j-1] and grid[j]
        g0, g1 = g[j - 1], g[j]
        t = 1.0 if g1 >= g0 else (g0 - v) / (g0 - g1)
        theta[i] = grid[j - 1] + min(max(t, 0.0), 1.0) * (grid[j] - grid[j - 1])
        mean_cap = -v  # log(1/κ)
        if np.interp(theta[i], grid, k1) > mean_cap:
            jj = int(np.searchsorted(np.maximum.accumulate(k1), mean_cap, side="left"))
            theta[i] = grid[min(max(jj - 1, 0), grid.size - 1)] if jj > 0 else 0.0
    sd = np.sqrt(np.interp(theta, grid, k2))
    return theta, sd
