"""Relative rounding of the per-step PMFs of :mod:`reconrisk._src.accounting.pld`.

A tilted composition (:meth:`reconrisk._src.accounting.pmf.PMF.tilted`) reads tail masses with *relative*
precision only if every per-step error is relative too: :func:`pessimistic_scale` and
:func:`relative_excess` turn the pessimistic and optimistic steps' rounding into a factor on the atoms.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from .pld_step import hockey_stick_add, hockey_stick_remove, x_of_remove_loss
from .pmf import UNIT

#: Largest ratio c = μ(L > ε)/δ(ε) charged relatively; beyond it (grids of a few cells, where one cell
#: spans many orders of magnitude of δ) the rounding is charged as an absolute slack of 32u instead.
C_RELATIVE_MAX = 1e9


def pessimistic_scale(grid: np.ndarray, sigma: float, q: float, direction: str = "remove") -> tuple[float, float]:
    """(1 + 32u·c rounded up, absolute slack): c ≥ P(L > ε)/δ(ε) on the grid's range (see :func:`step_pmf`).

    c is bounded on ~2000 coarse intervals [l_a, l_b]: P(L > ε) ≤ P(L > l_a) and δ(ε) ≥ δ(l_b)
    (both monotone), δ(l_b) taken minus its error bound. Below the grid δ(ε) ≥ δ(l_0) and P ≤ 1.
    Where c exceeds ``C_RELATIVE_MAX`` the error 8α·P(L > ε) ≤ 32u is charged in total variation.

    ``direction``: P = μ and the remove loss (:func:`hockey_stick_remove`), or ``"add"``: P = ν = N(0, σ²),
    loss −λ(x), δ from :func:`hockey_stick_add`, P(L > ε) = Φ(x(−ε)/σ). The add direction's cells are
    differences of ``ndtr`` values in the tail they describe as the remove's are (:func:`cell_masses`), so
    the same 8α·P(L > ε) bound holds. Its δ(ε) falls to 0 at −log(1 − q), where the ratio c grows without
    bound; from the first coarse point where c would exceed ``C_RELATIVE_MAX`` (or δ is not resolved) the
    error is charged absolutely, 32u·P(L > l_a) (P there is at most a few per-step tails).
    """
    idx = np.unique(np.linspace(0, grid.size - 1, min(grid.size, 2001)).astype(np.int64))
    l = grid[idx]
    if direction == "add":
        d, err = hockey_stick_add(l, sigma, q, with_error=True)
        x = x_of_remove_loss(-l, sigma, q)
        with np.errstate(invalid="ignore"):
            mu_tail = np.where(np.isfinite(x), special.ndtr(x / sigma), np.where(x > 0, 1.0, 0.0))
    else:
        d, err = hockey_stick_remove(l, sigma, q, with_error=True)
        x = x_of_remove_loss(l, sigma, q)
        with np.errstate(invalid="ignore"):
            mu_tail = np.where(np.isfinite(x), (1 - q) * special.ndtr(-x / sigma) + q * special.ndtr(-(x - 1) / sigma),
                               1.0)
    d = d - err
    if not d[0] > 0:
        return 1.0, 32 * UNIT
    # beyond the first coarse point whose δ is not resolved (far tail, δ below ~1e-300) the error
    # 8α·P(L > ε) ≤ 32u·P(L > l_a) is charged absolutely (a negligible amount); before it, relatively
    unresolved = d <= 0
    if direction == "add":  # also where the ratio would pass C_RELATIVE_MAX (δ → 0 at −log(1 − q))
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.concatenate([[1.0 / d[0]], mu_tail[:-1] / np.where(d[1:] > 0, d[1:], 1.0)])
        unresolved = unresolved | ~(r <= C_RELATIVE_MAX)
    bad = np.flatnonzero(unresolved)
    end = int(bad[0]) if bad.size else l.size
    if end == 0:
        return 1.0, 32 * UNIT
    abs_slack = 32 * UNIT * float(mu_tail[end - 1]) if end < l.size else 0.0
    ratios = [1.0 / d[0]]
    if end > 1:
        ratios.append(float(np.max(mu_tail[: end - 1] / d[1:end])))
    c = max(ratios) * 1.01
    if not c <= C_RELATIVE_MAX:
        return 1.0, 32 * UNIT
    return (1.0 + 32 * UNIT * c) * (1 + 4 * UNIT), abs_slack


def relative_excess(y, val, keep, pts, l, D, D_err, probs, sigma, q) -> float:
    """r with D̃(y) ≤ (1 + r)·D(y) for every y ≥ 0 (D̃ the curve of ``probs``), or ∞ if not established.

    Chain (u the unit round-off; ŷ = fl(e^l), the computed vertex positions):

    1. the atoms p_i = fl(ŷ_i·fl(ŝ_i − ŝ_{i−1})) at exact y_i = e^{l_i}, with jumps ≥ 0 and ŝ the
       computed slopes (each ŝ within 3u of the exact slope of the vertex polygon V, all ≤ 0):
       D̃(y) = Σ (p_i/y_i)(y_i − y)₊ ≤ (1 + 7.3u)·V(y/(1 + 1.01u)) (a subtraction's rounding is
       relative to its result, and all the polygon's slopes have one sign);
    2. V ≤ (1 + r_meas)·C between consecutive certified points, C the polygon through the certified
       points (ŷ_j, v_j): measured at the points (both polygons are linear between them) with the
       chord V(ŷ_j) = v_b + (v_a − v_b)(ŷ_b − ŷ_j)/(ŷ_b − ŷ_a), a sum of non-negative terms whose
       rounding is ≤ 6u of its value; where v_j = 0, V must be 0;
    3. C ≤ D at the exact positions (step 1 of :func:`optimistic_ctd`); the computed positions and the
       shift of step 1 move the argument by ≤ 2.1u relatively, and D(y(1 − 2.1u)) ≤ (1 + 2.2u·c)·D(y),
       c = y|D′(y(1 − 2.1u))|/D(y) ≤ y_{j+1}·ν(L > l_{j−1})/D(y_{j+1}) on [y_j, y_{j+1}] (D convex,
       decreasing, D′ = −ν(L > log y)), taken over the grid up to the last atom.
    """
    u = UNIT
    j = pts
    pos = np.clip(np.searchsorted(keep, j, side="left"), 1, keep.size - 1)
    a, b = keep[pos - 1], keep[pos]
    frac = (y[b] - y[j]) / (y[b] - y[a])
    drop = val[a] - val[b]
    poly = val[b] + drop * frac
    poly_hi = poly + 6 * u * (np.abs(val[b]) + np.abs(drop) * frac)
    at_vertex = (j == a) | (j == b)
    poly_hi = np.where(j == a, val[a], np.where(j == b, val[b], poly_hi))
    v = val[j]
    zero = v <= 0.0
    if np.any(zero & ~at_vertex & (poly_hi > 0.0)) or np.any(zero & (v < 0.0)):
        return math.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        r_meas = float(np.max(np.where(zero | at_vertex, 0.0, (poly_hi - v) / np.where(zero, 1.0, v)), initial=0.0))
    r_meas = max(r_meas, 0.0)
    # c over the grid intervals up to the last atom (y holds 0 first, then e^{l})
    nz = np.flatnonzero(probs > 0)
    if nz.size == 0:
        return 0.0
    last = int(nz[-1])
    x = x_of_remove_loss(l, sigma, q)
    nu = np.where(np.isfinite(x), special.ndtr(-x / sigma), 1.0)
    d_low = D - D_err - 8.8e-16 * np.abs(D)
    ey = np.exp(l)
    top = min(last + 1, l.size - 1)
    # interval [y_j, y_{j+1}] for j = -1 .. last: ν(L > l_{j-1}) with ν = 1 for indices < 0
    nu_prev = np.concatenate([[1.0, 1.0], nu[: max(top - 1, 0)]])[: top + 1]
    dn = d_low[: top + 1]
    yn = ey[: top + 1] * (1 + 4 * u)
    if last + 1 > l.size - 1:
        # the last atom sits on the last grid point: D̃ vanishes just past it, bound D there by D(l_last + h/2)
        l_end = np.array([l[-1] + 0.5 * (l[-1] - l[-2] if l.size > 1 else 1e-3)])
        d_end, e_end = hockey_stick_remove(l_end, sigma, q, with_error=True)
        dn = np.concatenate([dn, d_end - e_end])
        yn = np.concatenate([yn, np.exp(l_end) * (1 + 4 * u)])
        nu_prev = np.concatenate([nu_prev, nu[-2:-1] if l.size > 1 else [1.0]])
    if np.any(dn <= 0):
        return math.inf
    c = float(np.max(yn * nu_prev / dn)) * 1.01
    return (r_meas + 12 * u + 6 * u * c) * (1 + 1e-6) + r_meas * 12 * u
