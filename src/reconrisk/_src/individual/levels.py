"""Sensitivity levels: the grid per-example accounting rounds each clipped-gradient norm up onto.

Shared by the ex-post per-example accounting (:mod:`reconrisk._src.individual.privacy`) and the individual
Rényi filter (:mod:`reconrisk._src.individual.filter`). Rounding a sensitivity s/C **up** onto a level is sound:
the Poisson-subsampled Gaussian pair at a smaller sensitivity is a post-processing of the pair at a larger
one (scale by s′/s, add independent noise), so every composed privacy-loss distribution at s′ is dominated by
the one at s (Feldman & Zrnic 2021, §5). An unobserved norm (NaN) is taken as C; the exact 0 is always a
level. Equal levels are grouped: example i's composition is ``Release.schedule([(σ/u_k, q, c_ik), …])``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as v
from ..errors import ReconRiskError
from ..release import Release, gaussian_release

__all__ = ["DEFAULT_BUCKETS", "MIN_LEVEL", "sensitivity_levels", "bucket_index", "check_norms", "poisson_release",
           "level_counts", "schedule_of", "BLOCKS", "CHUNK_ROWS"]

#: Default number of positive sensitivity levels (besides the exact 0): geometric from MIN_LEVEL to 1.
DEFAULT_BUCKETS = 32
#: Smallest positive level (s/C); smaller non-zero norms are rounded up to it.
MIN_LEVEL = 2.0**-8


def sensitivity_levels(buckets: Any = DEFAULT_BUCKETS) -> np.ndarray:
    """The grid of sensitivity levels u = s/C: ``[0, u_1, …, u_K = 1]``, increasing.

    ``buckets`` an integer K ≥ 1: K levels geometric from ``MIN_LEVEL`` (2⁻⁸) to 1
    (ratio (2⁸)^{1/(K−1)}, 19 % at K = 32); or an increasing array of levels in (0, 1]
    ending at 1. The exact 0 is always a level (a zero gradient adds no loss).
    """
    if isinstance(buckets, (int, np.integer)) and not isinstance(buckets, bool):
        k = v.integer("buckets", buckets, minimum=1, maximum=4096)
        pos = np.array([1.0]) if k == 1 else np.geomspace(MIN_LEVEL, 1.0, k)
        pos[-1] = 1.0
    else:
        try:
            pos = np.asarray(buckets, dtype=float).ravel()
        except (TypeError, ValueError):
            raise ReconRiskError(f"buckets must be a number of levels or an increasing array of levels in (0, 1]; "
                                 f"found {buckets!r:.60}") from None
        if (pos.size == 0 or not np.all(np.isfinite(pos)) or np.any(pos <= 0) or np.any(np.diff(pos) <= 0)
                or pos[-1] != 1.0):
            raise ReconRiskError("buckets must be an increasing array of levels in (0, 1] ending at 1; found "
                                 f"{pos.tolist()!r:.80}")
    return np.concatenate([[0.0], pos])


_CELLS = 1 << 14  # cells of [0, 1] in bucket_index's table


def bucket_index(norms, clip_norm: float, levels: np.ndarray) -> np.ndarray:
    """Index into ``levels`` of the smallest level ≥ min(C, norm)/C, elementwise (NaN → the top level, 1).

    Rounding **up** only raises the number (module docstring), so the result is
    monotone: a larger norm never gets a smaller level.
    """
    s = np.asarray(norms, dtype=float)
    if np.any(s < 0):
        raise ReconRiskError("norms must be >= 0 (clipped-gradient norms; NaN where not observed); found "
                             f"{float(s[s < 0][0])!r}")
    c = v.positive("clip_norm", clip_norm)
    u = np.array(np.minimum(s / c, 1.0))  # NaN stays NaN (an array even for one norm)
    np.copyto(u, 1.0, where=np.isnan(u))
    # the smallest level ≥ each cell's start, then up one level while u is above (exact; a searchsorted's answer
    # at a few passes over the array instead of a binary search per element)
    cells = np.minimum((u * _CELLS).astype(np.int64), _CELLS - 1)
    idx = np.searchsorted(levels, np.arange(_CELLS) / _CELLS, side="left").astype(np.int64)[cells]
    while True:
        above = u > levels[idx]
        if not above.any():
            return idx
        idx += above


def check_norms(norms, steps: int, *, values: bool = True) -> np.ndarray:
    try:
        s = np.asarray(norms, dtype=float)
    except (TypeError, ValueError):
        raise ReconRiskError(f"norms must be a float array (n, T); found {type(norms).__name__}") from None
    if s.ndim != 2 or s.shape[1] != steps or s.shape[0] < 1:
        raise ReconRiskError(f"norms must be an array (n, T) with T = the release's steps ({steps}) and n >= 1; "
                             f"found shape {s.shape}")
    if values and np.any(s < 0):
        raise ReconRiskError(f"norms must be >= 0 (NaN where not observed); found {float(s[s < 0][0])!r}")
    return s


def poisson_release(release) -> Release:
    rel = gaussian_release(release, "per-example accounting")
    if rel.as_run.sampler == "fixed":
        raise ReconRiskError("per-example accounting is for Poisson (or full-batch) releases; found sampler='fixed' "
                             "(replace-one: the replacement's norm is unknown)")
    return rel


#: Examples counted per chunk of an (n, T) array (bounds the (rows, T) level-index buffer: 1024 × T int64).
CHUNK_ROWS = 1024
#: How an iterator of norms is cut: ``"examples"`` blocks (b, T) of consecutive examples, or ``"steps"`` blocks
#: (n, t) of consecutive steps.
BLOCKS = ("examples", "steps")


def _count_into(out: np.ndarray, idx: np.ndarray, rel: Release, first_step: int) -> None:
    """Add the level indices ``idx`` (rows, t) of steps first_step … first_step + t − 1 into ``out`` (rows, S, K+1)."""
    rows, k1 = idx.shape[0], out.shape[2]
    start, t0, t1 = 0, first_step, first_step + idx.shape[1]
    for j, seg in enumerate(rel.segments):
        a, b = max(start, t0), min(start + seg.steps, t1)
        if a < b:
            flat = (idx[:, a - t0:b - t0] + (np.arange(rows, dtype=np.int64) * k1)[:, None]).ravel()
            out[:, j] += np.bincount(flat, minlength=rows * k1).reshape(rows, k1)
        start += seg.steps


def level_counts(norms, release: Release, levels: np.ndarray, *, blocks: str = "examples") -> np.ndarray:
    """(n, segments, levels) counts: how many steps of each segment put example i at each level.

    ``norms`` an (n, T) array — an ``np.memmap`` too: it is read :data:`CHUNK_ROWS` examples at a time — or an
    iterator of blocks (streamed: only the counts and one block are held): ``blocks="examples"``, arrays
    (b, T) of consecutive examples; ``blocks="steps"``, arrays (n, t) of consecutive steps. The counts are
    the same however the norms arrive (tested).
    """
    rel = poisson_release(release)
    blocks = v.choice("blocks", blocks, BLOCKS)
    if isinstance(norms, np.ndarray) or isinstance(norms, (list, tuple)):
        arr = norms if isinstance(norms, np.ndarray) else check_norms(norms, rel.steps)
        if arr.ndim != 2 or arr.shape[1] != rel.steps or arr.shape[0] < 1:
            check_norms(arr, rel.steps)  # raises, naming the shape
        return _count_examples((arr[i:i + CHUNK_ROWS] for i in range(0, arr.shape[0], CHUNK_ROWS)), rel, levels)
    if not hasattr(norms, "__iter__"):
        raise ReconRiskError(f"norms must be a float array (n, T) or an iterator of blocks; found "
                             f"{type(norms).__name__}")
    if blocks == "examples":
        return _count_examples(iter(norms), rel, levels)
    return _count_steps(iter(norms), rel, levels)


def _count_examples(chunks, rel: Release, levels: np.ndarray) -> np.ndarray:
    parts = []
    for block in chunks:
        s = check_norms(block, rel.steps, values=False)  # bucket_index checks the values
        out = np.zeros((s.shape[0], len(rel.segments), levels.size), dtype=np.int64)
        _count_into(out, bucket_index(s, rel.clip_norm, levels), rel, 0)
        parts.append(out)
    if not parts:
        raise ReconRiskError("norms held no block of examples; found an empty iterator")
    return np.concatenate(parts, axis=0)


def _count_steps(chunks, rel: Release, levels: np.ndarray) -> np.ndarray:
    out, t = None, 0
    for block in chunks:
        try:
            s = np.asarray(block, dtype=float)
        except (TypeError, ValueError):
            raise ReconRiskError(f"each block of steps must be a float array (n, t); found "
                                 f"{type(block).__name__}") from None
        if s.ndim != 2 or s.shape[0] < 1 or (out is not None and s.shape[0] != out.shape[0]):
            n = "n >= 1" if out is None else f"n = {out.shape[0]} (the first block's)"
            raise ReconRiskError(f"each block of steps must be an array (n, t) with {n}; found shape {s.shape}")
        if t + s.shape[1] > rel.steps:
            raise ReconRiskError(f"the blocks of steps hold more than the release's {rel.steps} steps")
        if out is None:
            out = np.zeros((s.shape[0], len(rel.segments), levels.size), dtype=np.int64)
        _count_into(out, bucket_index(s, rel.clip_norm, levels), rel, t)
        t += s.shape[1]
    if out is None or t != rel.steps:
        raise ReconRiskError(f"the blocks of steps must hold the release's {rel.steps} steps; found {t}")
    return out


def schedule_of(release: Release, counts: np.ndarray, levels: np.ndarray) -> Release | None:
    """The release example i sees: segment j at level u_k for c_jk steps is ``(σ_j/u_k, q_j, c_jk)``.

    ``counts`` (segments, levels); None when every step is at level 0 (no loss at all). The
    full-sensitivity segments come first, in the release's order, so an example at level 1 on
    every step gets exactly the release's own schedule (and numbers).
    """
    segs = []
    for k in range(levels.size - 1, 0, -1):
        for j, seg in enumerate(release.segments):
            c = int(counts[j, k])
            if c:
                segs.append((seg.noise_multiplier / levels[k], seg.sample_rate, c))
    if not segs:
        return None
    return Release.schedule(segs, clip_norm=release.clip_norm)
