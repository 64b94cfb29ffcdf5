"""Coarsened schedules: per-example accounting whose number of compositions stops growing with the examples.

Example i's schedule is its level counts c_i,jk (segment j, level u_k); its composition
depends only on them, and each distinct vector costs one composition — with random norms
every example's vector is distinct, so the cost was linear in the examples. What is
bucketed can be bucketed coarser, soundly, in the order that composition respects:

**Dominance.** Write a segment's counts by their upper-cumulative sums
N_k = Σ_{k′≥k} c_k′ (the number of its steps at level u_k or above, k = 1 … K). If
N′_k ≥ N_k for every k, the schedule N′ is reached from N by moving steps to higher
levels and adding steps; each move is sound (the pair at a smaller sensitivity is a
post-processing of the pair at a larger one: the module docstring of
:mod:`reconrisk._src.individual.privacy`) and an added step only composes one more
mechanism, so every composed divergence of N′ is at least N's. Likewise N″ ≤ N
is dominated by it. Rounding each N_k **up** onto a grid (at most the segment's steps;
then the running minimum from level 1 up, so the result is again non-increasing in k and
still ≥ min_{k′≤k} N_k′ = N_k) therefore gives a dominating schedule — an upper end — and
rounding **down** (then the running maximum from the top level down, still ≤ N_k) a
dominated one — a lower end. Examples that
share a rounded vector share one composition.

**The grid.** A step at level u_k of segment j costs about
w_jk = q_j²·(exp(u_k²/σ_j²) − 1) (the χ² divergence of the Poisson-subsampled Gaussian
pair; the composition's ε grows with Σ w), and N_k weighs w_jk − w_j,k−1 in that sum,
so N_k is rounded onto multiples of Δ_jk = max(1, ⌊β/(w_jk − w_j,k−1)⌋): each level
adds at most β to an example's cost, a coarse grid where a level weighs little. β is the
smallest on the ladder W·2^(−m/8) (W: the cost of the release's worst case) at which
both the upper and the lower vectors of the examples take at most ``max_compositions``
distinct values, so the number of compositions is bounded whatever the number of
examples. The upper end is reported as each example's number (never below its exact
number); the lower end bounds the error, and both are labelled estimates as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..release import Release

__all__ = ["DEFAULT_MAX_COMPOSITIONS", "Coarsening", "coarsen", "level_weights", "round_schedules", "unique_rows"]

#: Distinct count vectors composed exactly; above it the schedules are coarsened (module docstring).
DEFAULT_MAX_COMPOSITIONS = 512
_LADDER = 8  # β ladder: W·2^(−m/_LADDER)
_RUNGS = 40 * _LADDER


def level_weights(release: Release, levels: np.ndarray) -> np.ndarray:
    """(S, K) weight of N_jk = #steps of segment j at level ≥ u_k: w_jk − w_j,k−1, w = q²·expm1(u²/σ²) > 0."""
    out = []
    for seg in release.segments:
        w = seg.sample_rate**2 * np.expm1(np.minimum((levels / seg.noise_multiplier) ** 2, 50.0))
        out.append(np.diff(w))
    return np.maximum(np.array(out), 1e-300)


def _cumulative(counts: np.ndarray) -> np.ndarray:
    """(G, S, K+1) counts → (G, S, K) upper-cumulative N_k = Σ_{k′≥k} c_k′, k = 1 … K."""
    return np.cumsum(counts[:, :, :0:-1], axis=2)[:, :, ::-1]


def _counts(cum: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_cumulative` given each segment's steps (S,)."""
    top = np.concatenate([cum, np.zeros(cum.shape[:2] + (1,), dtype=cum.dtype)], axis=2)
    c = top[:, :, :-1] - top[:, :, 1:]
    return np.concatenate([(steps[None, :] - cum[:, :, 0])[:, :, None], c], axis=2)


def round_schedules(counts: np.ndarray, spacing: np.ndarray, steps: np.ndarray, *, up: bool) -> np.ndarray:
    """Counts (G, S, K+1) whose N_k are rounded up (a dominating schedule) or down (a dominated one) onto
    multiples of ``spacing`` (S, K), kept non-increasing in k and within [0, steps]."""
    return _counts(_rounded(_cumulative(counts), spacing, steps, up), steps)


def _rounded(cum: np.ndarray, spacing: np.ndarray, steps: np.ndarray, up: bool) -> np.ndarray:
    if up:  # r_k ≥ N_k; the running minimum from level 1 up stays ≥ min_{k′≤k} N_k′ = N_k
        r = np.minimum.accumulate(np.minimum(-(-cum // spacing) * spacing, steps[None, :, None]), axis=2)
    else:  # r_k ≤ N_k; the running maximum from the top down stays ≤ max_{k′≥k} N_k′ = N_k
        r = np.maximum.accumulate(((cum // spacing) * spacing)[:, :, ::-1], axis=2)[:, :, ::-1]
    return r


def _hash(x: np.ndarray) -> np.ndarray:
    key = np.random.default_rng(0).integers(1, 2**62, size=x.shape[1:], dtype=np.int64)
    with np.errstate(over="ignore"):
        return (x.reshape(x.shape[0], -1) * key.ravel()).sum(axis=1)


def _distinct(x: np.ndarray) -> int:
    """Number of distinct rows (by a 64-bit hash: used only to choose β, never to group)."""
    return int(np.unique(_hash(x)).size)


def unique_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(x, axis=0, return_inverse=True)`` (the same rows, in some order), by a hash checked row by row
    (a collision falls back to ``np.unique``): a sort of n keys instead of n rows."""
    _, first, inv = np.unique(_hash(x), return_index=True, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    uniq = x[first]
    if not np.array_equal(uniq[inv], x):
        uniq, inv = np.unique(x, axis=0, return_inverse=True)
        inv = np.asarray(inv).reshape(-1)
    return uniq, inv


@dataclass(frozen=True)
class Coarsening:
    """The coarsened groups: ``upper``/``lower`` (G′, S, K+1) and, per exact group, its row in each."""

    beta: float
    spacing: np.ndarray
    upper: np.ndarray
    upper_of: np.ndarray
    lower: np.ndarray
    lower_of: np.ndarray

    def to_dict(self) -> dict:
        return {"beta": float(self.beta), "upper_compositions": int(len(self.upper)),
                "lower_compositions": int(len(self.lower)),
                "largest_spacing": int(self.spacing.max()), "smallest_spacing": int(self.spacing.min())}


def coarsen(groups: np.ndarray, release: Release, levels: np.ndarray, max_compositions: int) -> Coarsening | None:
    """Coarsen the distinct count vectors ``groups`` (G, S, K+1) to at most ``max_compositions`` per end
    (module docstring); None when there are that few already (the exact path)."""
    max_compositions = v.integer("max_compositions", max_compositions, minimum=1)
    if len(groups) <= max_compositions:
        return None
    weights = level_weights(release, levels)
    steps = np.array([seg.steps for seg in release.segments], dtype=np.int64)
    total = float(np.sum(steps[:, None] * weights))

    def spacing_at(m: int) -> np.ndarray:
        beta = total * 2.0 ** (-m / _LADDER)
        return np.maximum(1, np.floor(np.minimum(beta / weights, 2.0**62))).astype(np.int64)

    cum = _cumulative(groups)

    def fits(m: int) -> bool:
        sp = spacing_at(m)
        return all(_distinct(_rounded(cum, sp, steps, up)) <= max_compositions for up in (True, False))

    lo, hi = 0, _RUNGS  # fits(0): every N_k rounds to 0 or to the segment's steps
    while hi - lo > 1:  # a rung that fits next to one that does not (distinct counts grow as β shrinks)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    for m in range(hi + 1, min(hi + _LADDER, _RUNGS)):  # the counts are not strictly monotone: look a little finer
        if fits(m):
            lo = m
    sp = spacing_at(lo)
    up, up_of = unique_rows(round_schedules(groups, sp, steps, up=True))
    dn, dn_of = unique_rows(round_schedules(groups, sp, steps, up=False))
    return Coarsening(total * 2.0 ** (-lo / _LADDER), sp, up, up_of, dn, dn_of)
