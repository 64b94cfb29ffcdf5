"""The optimal analytic gradient-inversion attack under DP-SGD (Riess et al. 2024, Prop. 1 / Cor. 1).

The adversary replaces the network by one linear layer ``f(X) = WX`` with
``W ∈ R^{M×N}`` and the loss ``L = 1_Mᵀ W X``. The per-example gradient is
``∇_W L = 1_M Xᵀ`` (every row a copy of X, Eq. 6 with ∂L/∂f_j = 1), of norm
``√M‖X‖``. DP-SGD with batch size 1 clips it by ``β = min(1, C/(√M‖X‖))``
and adds ``N(0, σ²C²)`` to every coordinate (Eqs. 10-11). The attacker
averages the M noisy rows and divides by the *oracle* scale β (Eq. 16; the
paper's modelling assumption that the scales are given to the attacker, which
can only help it). The result is ``X̂ ~ N(X, σ²·max(C²/M, ‖X‖²)·I)``,
``σ²‖X‖²`` once ``M ≥ (C/‖X‖)²`` (Eq. 20 with the corrected, squared row rule).

Modes of :func:`simulate_attack`:

* ``mode="explicit"`` runs the real DP-SGD step in JAX (imported lazily):
  an explicit ``W`` (and optionally a learnable bias ``b``), ``jax.grad`` of
  the loss, per-example clipping of the whole gradient at C, Gaussian noise
  σC. It is memory-bound: one sample costs M·N floats.
* ``mode="fast"`` (numpy only) samples the exact law directly:
  ``X̂ = X + sqrt(v)·Z`` with ``v`` from
  :func:`~reconrisk._src.theory.analytic.reconstruction_variance`. Equal in
  distribution to the explicit mode (tested).
* ``mode="law"`` (:func:`simulate_success` only, oracle scale): samples the
  *metrics* (MSE, PSNR, NCC) of a fast-mode reconstruction from their exact
  joint law with three variates per reconstruction, never forming X̂ (see
  :func:`_law_metrics`). A shortcut, not a simulation of the step: it is
  tested to agree in distribution (KS) with the explicit DP-SGD step and the
  fast path, and is labelled ``mode="law"`` in every result.

Estimators (``scale``):

* ``"oracle"`` — the optimal attack above.
* ``"ratio"`` — the naive bias-trick estimator of Eq. 15 (Fowl et al.;
  needs ``bias=True``): ``Σ_j ∇̃_{W_j} / Σ_j ∇̃_{b_j}``, a ratio of Gaussians
  with no moments, shown as a baseline. (The authors' code divides row-wise;
  summing the rows first only reduces the noise of this baseline.)

A :class:`SuboptimalRowsWarning` is issued when ``M < (C/‖X‖)²`` for some
sample (the authors' code warns the same way): the attack is then not optimal
and the reconstruction carries "over-proportional" noise.
"""

from __future__ import annotations

import csv
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .. import _validate as val
from ..theory.analytic import ncc_bound, reconstruction_variance
from ..metrics import mse, ncc, psnr  # noqa: F401  (Riess et al. 2024, Defs. 3-5; re-exported)
from ..theory.analytic_laws import mse_cdfs, psnr_means
from ..errors import ReconRiskError
from .analytic_step import _gathered_step, _sample_stats

__all__ = [
    "SuboptimalRowsWarning",
    "simulate_attack",
    "simulate_success",
    "AnalyticSimulation",
    "average_reconstructions",
    "mse",
    "psnr",
    "ncc",
    "clip_norm_for_regime",
    "CLIP_REGIMES",
]

MODES = ("fast", "explicit")
#: :func:`simulate_success` also takes ``"law"``: the metrics sampled from their exact law.
SUCCESS_MODES = MODES + ("law",)
SCALES = ("oracle", "ratio")
#: Riess et al. 2024, Fig. 2 rows: C = m (always clipped), C = √M·m, C = 10·√M·max‖X‖ (never clipped).
CLIP_REGIMES = ("min", "sqrt_rows", "large")
_ELEMENTS_PER_CHUNK = 1 << 23  # M·N floats per explicit-mode chunk (32 MiB fp32 per buffer)


class SuboptimalRowsWarning(UserWarning):
    """The layer has fewer rows than (C/‖X‖)²: clipping is inactive and the attack is not optimal."""


# ----------------------------------------------------------------------------
# averaging (metrics of Riess et al. 2024, App. A.1 live in reconrisk._src.metrics)
# ----------------------------------------------------------------------------


def average_reconstructions(reconstructions) -> np.ndarray:
    """Prop. 7: average k matched reconstructions (axis 0); the variance drops to σ²‖X‖²/k."""
    r = np.asarray(reconstructions, dtype=float)
    if r.ndim < 2 or r.shape[0] < 1:
        raise ReconRiskError(f"reconstructions must have shape (k, ..., N) with k >= 1; found {r.shape}")
    return r.mean(axis=0)


# ----------------------------------------------------------------------------
# the attack
# ----------------------------------------------------------------------------


def _data(x) -> tuple[np.ndarray, bool, np.ndarray]:
    """(samples (n, N), whether x was one sample, ‖X‖² per sample from one streaming pass)."""
    if isinstance(x, (str, bool)) or x is None:
        raise ReconRiskError(f"x must be an array of shape (N,) or (n, N); found {x!r}")
    arr = np.asarray(x, dtype=float)
    single = arr.ndim == 1
    arr = np.atleast_2d(arr)
    if arr.ndim != 2 or arr.shape[1] < 1 or arr.shape[0] < 1:
        raise ReconRiskError(f"x must have shape (N,) or (n, N) with N >= 1; found {np.shape(x)}")
    sq = np.einsum("ij,ij->i", arr, arr)  # one streaming pass; finite sums imply finite entries
    if not np.isfinite(sq).all() and not np.isfinite(arr).all():
        raise ReconRiskError("x must hold finite numbers; found nan or inf")
    if (sq == 0).any():
        i = int(np.flatnonzero(sq == 0)[0])
        raise ReconRiskError(f"x must have nonzero norm (Riess et al. 2024 excludes X = 0); found norm 0 at sample {i}")
    return arr, single, sq


def _generator(seed) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool)):
        return np.random.default_rng(seed)
    raise ReconRiskError(f"seed must be None, an int or a numpy Generator; found {seed!r}")


def _warn_rows(norms: np.ndarray, clip_norm: float, rows: int, bias: bool) -> None:
    need = clip_norm**2 / (norms**2 + (1.0 if bias else 0.0))
    short = rows < need * (1 - 1e-12)
    if short.any():
        warnings.warn(
            f"M < (C/|X|)^2 for {int(short.sum())} of {norms.size} samples (rows={rows}, need up to "
            f"{math.ceil(float(need.max()) * (1 - 1e-12))}): clipping is inactive there and the attack is not optimal",
            SuboptimalRowsWarning,
            stacklevel=3,
        )


def simulate_attack(
    x,
    noise_multiplier,
    clip_norm,
    rows,
    *,
    bias: bool = False,
    scale: str = "oracle",
    mode: str = "fast",
    seed=None,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Reconstructions X̂ of each sample from one DP-SGD step with batch size 1 (Riess et al. 2024, Cor. 1).

    ``x``: one sample (N,) or a batch (n, N) — each row is attacked in its own
    step. Returns an array of the same shape. ``seed`` (int or numpy
    Generator) fixes the randomness: same seed, same numbers (in explicit mode
    each sample's JAX key is ``fold_in(key(seed), index)``, so the result does
    not depend on the chunking). ``progress`` is called with the number of
    samples finished after each chunk.
    """
    arr, single, sq = _data(x)
    s = val.positive("noise_multiplier", noise_multiplier)
    c = val.positive("clip_norm", clip_norm)
    m = val.integer("rows", rows, minimum=1)
    md = val.choice("mode", mode, MODES)
    sc = val.choice("scale", scale, SCALES)
    if sc == "ratio" and not bias:
        raise ReconRiskError("scale 'ratio' (the bias trick, Eq. 15) needs bias=True; found bias=False")
    rng = _generator(seed)
    # explicit mode: the norms only feed the rows warning (the step computes its own); ‖X‖² is at hand. The fast
    # path keeps np.linalg.norm, so its numbers stay those of earlier versions bit for bit.
    norms = np.sqrt(sq) if md == "explicit" else np.linalg.norm(arr, axis=1)
    _warn_rows(norms, c, m, bias)
    if md == "fast":
        out = _fast(arr, norms, s, c, m, bias, sc, rng)
        if progress is not None:
            progress(arr.shape[0])
    else:
        out = _explicit(arr, s, c, m, bias, sc, int(rng.integers(0, 2**31 - 1)), progress)
    return out[0] if single else out


def _fast(arr, norms, s, c, m, bias, sc, rng) -> np.ndarray:
    if sc == "oracle":
        var = np.asarray(reconstruction_variance(s, c, m, norms, bias=bias), dtype=float).reshape(-1, 1)
        return arr + np.sqrt(var) * rng.standard_normal(arr.shape)
    # ratio: row-averaged weight and bias gradients, each N(β·signal, σ²C²/M)
    beta = np.minimum(1.0, c / (math.sqrt(m) * np.sqrt(norms**2 + 1.0))).reshape(-1, 1)
    sd = s * c / math.sqrt(m)
    w = beta * arr + sd * rng.standard_normal(arr.shape)
    b = beta + sd * rng.standard_normal((arr.shape[0], 1))
    return w / b


_RESIDENT_BYTES = 1 << 30  # data up to 1 GiB (float32) is sent to the device once; larger data chunk by chunk


def _explicit(
    arr, s, c, m, bias, sc, seed, progress, return_norms: bool = False, metrics: bool = False, repeats: int = 1
):
    """Run the explicit step on every sample ``repeats`` times (sample i's j-th draw is row i·repeats + j).

    The noise key of row r is ``fold_in(key, r)``, so ``repeats=1`` draws the
    noise of earlier versions bit for bit; the reconstructions equal theirs up
    to float32 rounding of the clip factor β (the pairwise norm is now summed
    one reconstruction at a time on CPU, not over a whole chunk, so its last
    bit can differ; for the benchmark's image and the tested shapes it does
    not). Samples live on the device (sent
    once) when they fit in :data:`_RESIDENT_BYTES`; chunks are dispatched ahead
    so the device never waits for the host, and only each chunk's results
    (3 numbers per row in ``metrics`` mode) come back. The jitted step and the
    metric algebra live in :mod:`reconrisk._src.attacks.analytic_step`.
    """
    try:
        from .._jax import jax
        import jax.numpy as jnp
    except ImportError as exc:  # pragma: no cover - sim extra missing
        raise ReconRiskError("mode 'explicit' needs JAX (pip install 'reconrisk[sim]'); use mode='fast'") from exc
    n, dim = arr.shape
    total = n * repeats
    k_w, k_noise = jax.random.split(jax.random.key(seed))
    params = {"W": 0.01 * jax.random.normal(k_w, (m, dim), dtype=jnp.float32)}  # value irrelevant: ∇_W = 1Xᵀ
    if bias:
        params["b"] = jnp.zeros((m,), dtype=jnp.float32)
    step = _gathered_step(m, dim, bool(bias), sc, bool(metrics))
    per_chunk = _ELEMENTS_PER_CHUNK * (1 if jax.default_backend() == "cpu" else 8)
    chunk = max(1, min(total, per_chunk // (m * dim)))
    out = np.empty((total, 2)) if metrics else np.empty((total, dim))
    norms = np.empty(total)
    x32 = np.ascontiguousarray(arr, dtype=np.float32)
    # jax.device_put, not jnp.asarray: the same bits, but 30 MB went across in ~5 ms instead of ~35 ms (CPU backend)
    resident = jax.device_put(x32) if x32.nbytes <= _RESIDENT_BYTES else None
    stats = _sample_stats(dim) if metrics else (lambda xs: None)  # the metrics' per-sample sums, once per sample
    resident_stats = None if resident is None else stats(resident)
    s32, c32 = jnp.float32(s), jnp.float32(c)
    pending = None
    for start in range(0, total, chunk):
        stop = min(total, start + chunk)
        rows = np.minimum(np.arange(start, start + chunk), total - 1) // repeats  # pad with a valid sample
        if resident is not None:
            src, st, loc = resident, resident_stats, jnp.asarray(rows, dtype=jnp.int32)
        else:
            src, loc = jax.device_put(x32[rows]), jnp.arange(chunk, dtype=jnp.int32)
            st = stats(src)
        idx = jnp.arange(start, start + chunk, dtype=jnp.uint32)
        call = (step(params, src, st, loc, k_noise, idx, s32, c32), start, stop)
        if pending is not None:
            _store(pending, out, norms, progress)
        pending = call
    _store(pending, out, norms, progress)
    return (out, norms) if return_norms else out


def _store(pending, out, norms, progress):
    (res, gnorm), start, stop = pending
    out[start:stop] = np.asarray(res)[: stop - start]
    norms[start:stop] = np.asarray(gnorm)[: stop - start]
    if progress is not None:
        progress(stop - start)


def _centred_norms(arr: np.ndarray, sumsq: np.ndarray) -> np.ndarray:
    """a = ‖X − mean(X)·1‖ for every sample (what :func:`_law_metrics` needs), given ``sumsq`` = ‖X‖²."""
    dim = arr.shape[1]
    # a² = ‖X‖² − N·mean² from two streaming passes (no centred copy of the data); where the cancellation would
    # cost more than ~1e-8 relative (a² < 1e-8‖X‖²) the centred norm is computed directly for those rows
    mean = arr.mean(axis=1)
    a2 = sumsq - dim * mean * mean
    bad = a2 < 1e-8 * sumsq
    if bad.any():
        a2[bad] = np.sum((arr[bad] - mean[bad, None]) ** 2, axis=1)
    return np.sqrt(np.maximum(a2, 0.0))


def _law_metrics(a: np.ndarray, dim: int, var: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(MSE, NCC) of ``X̂ = X + √v·Z``, Z ~ N(0, I_N), sampled from their exact joint law (3 variates per sample).

    ``a`` holds each sample's centred norm (:func:`_centred_norms`). Write
    ``X_c = X − mean(X)·1`` (norm a) and split Z along the orthonormal
    directions ``1/√N`` and ``e = X_c/a`` and their complement:
    ``w = Zᵀ1/√N``, ``u = Zᵀe`` ~ N(0, 1) and ``r² = ‖rest‖²`` ~ χ²_{N−2},
    all independent (rotation invariance of Z). Then
    ``‖Z‖² = w² + u² + r²`` so ``MSE = v(w² + u² + r²)/N`` (Def. 3), and the
    centred reconstruction is ``X_c + √v(u·e + rest)``, so (Def. 5)

        NCC = (a + √v·u) / sqrt(a² + 2a√v·u + v(u² + r²)).

    A constant sample (a = 0) has NCC nan, as :func:`reconrisk._src.metrics.ncc`
    gives; then u² + r² ~ χ²_{N−1} still holds for the MSE. Riess et al. 2024 states the
    MSE law (Prop. 3: v·χ²_N/N); the joint law with the NCC is derived here.
    """
    n = a.shape[0]
    w = rng.standard_normal(n)
    u = rng.standard_normal(n) if dim >= 2 else np.zeros(n)
    r2 = rng.chisquare(dim - 2, n) if dim >= 3 else np.zeros(n)
    sd = np.sqrt(var)
    err = var * (w * w + u * u + r2) / dim
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = (a + sd * u) / np.sqrt(a * a + 2 * a * sd * u + var * (u * u + r2))
    return err, np.where(a > 0, corr, np.nan)


# ----------------------------------------------------------------------------
# an experiment over noise multipliers (Riess et al. 2024, Fig. 2)
# ----------------------------------------------------------------------------


def clip_norm_for_regime(regime: str, norms, rows) -> float:
    """The clip norm of Riess et al. 2024, Fig. 2's rows: ``min`` → C = m; ``sqrt_rows`` → C = √M·m; ``large`` → 10·√M·max‖X‖."""
    r = val.choice("regime", regime, CLIP_REGIMES)
    m = val.integer("rows", rows, minimum=1)
    nrm = np.asarray(norms, dtype=float)
    if nrm.size == 0 or not (nrm > 0).all():
        raise ReconRiskError("norms must be a non-empty array of positive numbers")
    if r == "min":
        return float(nrm.min())
    if r == "sqrt_rows":
        return float(math.sqrt(m) * nrm.min())
    return float(10.0 * math.sqrt(m) * nrm.max())


@dataclass(frozen=True, eq=False)
class AnalyticSimulation:
    """Empirical MSE, PSNR and NCC of the attack on each sample, for each noise multiplier, with the theory.

    Arrays are indexed ``[noise multiplier, sample]``. ``variance`` is the
    per-coordinate variance predicted for the configured layer
    (``σ²·max(C²/M, ‖X‖²)``); ``optimal_variance`` is the floor ``σ²‖X‖²``
    of the optimal attack (the theory the paper overlays).
    """

    noise_multipliers: tuple[float, ...]
    clip_norm: float
    rows: int
    bias: bool
    scale: str
    mode: str
    data_range: float | None
    seed: int
    norms: np.ndarray
    data_ranges: np.ndarray
    variance: np.ndarray
    mse: np.ndarray
    psnr: np.ndarray
    ncc: np.ndarray
    dim: int = field(default=0)
    repeats: int = field(default=1)  # attacks per sample: rows i·repeats … of the arrays belong to sample i

    @property
    def optimal_variance(self) -> np.ndarray:
        s = np.asarray(self.noise_multipliers).reshape(-1, 1)
        return s**2 * self.norms.reshape(1, -1) ** 2

    @property
    def clipped_fraction(self) -> float:
        """Fraction of samples with M ≥ (C/‖X‖)² — where the attack is optimal."""
        return float(np.mean(self.rows * self.norms**2 >= self.clip_norm**2 * (1 - 1e-12)))

    def summary(self) -> list[dict]:
        out = []
        for i, s in enumerate(self.noise_multipliers):
            v = self.variance[i]
            psnr_theory = psnr_means(v, self.dim, self.data_ranges)  # PSNRLaw(v_j, N, r_j).mean() per sample
            out.append(
                {
                    "noise_multiplier": s,
                    "mse_mean": float(np.mean(self.mse[i])),
                    "mse_median": float(np.median(self.mse[i])),
                    "theory_mse_mean": float(np.mean(v)),
                    "optimal_mse_mean": float(np.mean(self.optimal_variance[i])),
                    "psnr_mean": float(np.mean(self.psnr[i])),
                    "theory_psnr_mean": float(np.mean(psnr_theory)),
                    "ncc_mean": float(np.nanmean(self.ncc[i])),
                    "ncc_bound": float(ncc_bound(s, self.dim)),
                }
            )
        return out

    def to_dict(self) -> dict:
        return {
            "noise_multipliers": list(self.noise_multipliers),
            "clip_norm": self.clip_norm,
            "rows": self.rows,
            "bias": self.bias,
            "scale": self.scale,
            "mode": self.mode,
            "data_range": self.data_range,
            "seed": self.seed,
            "samples": int(self.norms.size) // self.repeats,
            "repeats": self.repeats,
            "dim": self.dim,
            "min_norm": float(self.norms.min()),
            "max_norm": float(self.norms.max()),
            "clipped_fraction": self.clipped_fraction,
            "summary": self.summary(),
        }

    def csv_rows(self) -> list[dict]:
        """One row per (noise multiplier, sample), with the law's CDF at the observed MSE (uniform if the theory holds)."""
        # Column by column (the same floats as one MSELaw per row: mse_cdfs is elementwise; the NCC bound depends
        # on σ alone): at 300,000 samples the per-row laws took ~10 s
        rows = []
        n = self.norms.size
        norms = self.norms.astype(float).tolist()
        sample = [j // self.repeats for j in range(n)]
        for i, s in enumerate(self.noise_multipliers):
            if n == 0:
                continue
            variance = self.variance[i, :n].astype(float)
            cdf = mse_cdfs(variance, self.dim, self.mse[i, :n]).tolist()
            bound = float(ncc_bound(s, self.dim))
            keys = ("noise_multiplier", "sample", "norm", "mse", "psnr", "ncc", "theory_variance", "theory_mse_cdf",
                    "ncc_bound")
            cols = zip(sample, norms, self.mse[i, :n].astype(float).tolist(), self.psnr[i, :n].astype(float).tolist(),
                       self.ncc[i, :n].astype(float).tolist(), variance.tolist(), cdf)
            rows.extend(dict(zip(keys, (s, *c, bound))) for c in cols)
        return rows

    def write_csv(self, path) -> Path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        rows = self.csv_rows()
        with p.open("w", newline="") as fh:
            w = csv.writer(fh)  # every row's keys are the header, in order: DictWriter's per-row lookups add ~30 %
            w.writerow(list(rows[0]))
            w.writerows(r.values() for r in rows)
        return p


def simulate_success(
    x,
    noise_multipliers: Sequence[float],
    clip_norm,
    rows,
    *,
    bias: bool = False,
    scale: str = "oracle",
    mode: str = "fast",
    data_range=1.0,
    seed: int = 0,
    repeats: int = 1,
    progress: Callable[[int], None] | None = None,
) -> AnalyticSimulation:
    """Attack every sample of ``x`` once per noise multiplier and measure MSE, PSNR, NCC (Riess et al. 2024, Fig. 2).

    ``data_range=None`` uses each sample's own range (Def. 4); the paper's
    figures use a fixed range of 1. The j-th noise multiplier uses the numpy
    seed ``[seed, j]``. ``mode="law"`` (oracle scale only) samples the metrics
    from their exact joint law (:func:`_law_metrics`) instead of forming each
    reconstruction: O(1) random variates per sample instead of O(N).

    ``repeats`` attacks every sample that many times with independent noise
    (a Monte-Carlo count per image): the result holds ``len(x)·repeats`` rows,
    sample i's draws at rows ``i·repeats … i·repeats + repeats − 1``. The
    explicit mode keeps the data on the device and sends only indices, so
    10⁴ reconstructions of one 224×224×3 image run as a few jitted calls;
    ``repeats=1`` attacks with the noise of earlier versions (MSE and NCC equal
    theirs to float32 rounding, ~2e-7 relative: see analytic_step).
    """
    arr, _, sq = _data(x)
    if isinstance(noise_multipliers, (int, float)):
        noise_multipliers = [noise_multipliers]
    sig = tuple(val.positive("noise_multipliers", s) for s in noise_multipliers)
    if not sig:
        raise ReconRiskError("noise_multipliers must hold at least one value; found none")
    c = val.positive("clip_norm", clip_norm)
    m = val.integer("rows", rows, minimum=1)
    sd = val.integer("seed", seed, minimum=0)
    reps = val.integer("repeats", repeats, minimum=1)
    if arr.shape[0] * reps > 10**8:
        raise ReconRiskError(
            f"repeats={reps} × {arr.shape[0]} samples = {arr.shape[0] * reps} reconstructions; at most 10^8 per call"
        )
    mode = val.choice("mode", mode, SUCCESS_MODES)
    if mode == "law" and val.choice("scale", scale, SCALES) != "oracle":
        raise ReconRiskError("mode 'law' samples the oracle attack's exact law; found scale='ratio' (use fast or explicit)")
    dr = None if data_range is None else val.positive("data_range", data_range)
    sumsq = sq if mode == "law" else None  # the norms and the centred norms from _data's one pass
    norms = np.sqrt(sumsq) if mode == "law" else np.linalg.norm(arr, axis=1)
    ranges = (arr.max(axis=1) - arr.min(axis=1)) if dr is None else np.full(norms.shape, dr)
    if dr is None and (ranges == 0).any():
        raise ReconRiskError("data_range=None needs non-constant samples (per-sample range 0 found)")
    centred = _centred_norms(arr, sumsq) if mode == "law" else None
    if reps > 1:  # per-row copies of the per-sample quantities (the data itself is not copied)
        norms, ranges = np.repeat(norms, reps), np.repeat(ranges, reps)
        centred = None if centred is None else np.repeat(centred, reps)
    rows_total = arr.shape[0] * reps
    var = np.empty((len(sig), rows_total))
    res = {k: np.empty((len(sig), rows_total)) for k in ("mse", "psnr", "ncc")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SuboptimalRowsWarning)  # reported once below
        for i, s in enumerate(sig):
            var[i] = reconstruction_variance(s, c, m, norms, bias=bias)
            if mode == "explicit":  # metrics on the device, same keys as simulate_attack(seed=default_rng([sd, i]))
                jax_seed = int(np.random.default_rng([sd, i]).integers(0, 2**31 - 1))
                sc = val.choice("scale", scale, SCALES)
                if sc == "ratio" and not bias:
                    raise ReconRiskError("scale 'ratio' (the bias trick, Eq. 15) needs bias=True; found bias=False")
                out = _explicit(arr, s, c, m, bias, sc, jax_seed, progress, metrics=True, repeats=reps)
                res["mse"][i] = out[:, 0]
                with np.errstate(divide="ignore"):
                    res["psnr"][i] = 10.0 * (2.0 * np.log10(ranges) - np.log10(out[:, 0]))
                res["ncc"][i] = out[:, 1]
                continue
            if mode == "law":  # the exact joint law of (MSE, NCC); no reconstruction is formed
                res["mse"][i], res["ncc"][i] = _law_metrics(centred, arr.shape[1], var[i], np.random.default_rng([sd, i]))
                with np.errstate(divide="ignore"):
                    res["psnr"][i] = 10.0 * (2.0 * np.log10(ranges) - np.log10(res["mse"][i]))
                if progress is not None:
                    progress(rows_total)
                continue
            ref = np.repeat(arr, reps, axis=0) if reps > 1 else arr  # the fast path forms every reconstruction
            xh = simulate_attack(
                ref, s, c, m, bias=bias, scale=scale, mode=mode, seed=np.random.default_rng([sd, i]), progress=progress
            )
            res["mse"][i] = mse(ref, xh)
            res["psnr"][i] = psnr(ref, xh, data_range=dr)
            res["ncc"][i] = ncc(ref, xh)
    _warn_rows(norms, c, m, bias)
    return AnalyticSimulation(
        sig, c, m, bool(bias), scale, mode, dr, sd, norms, ranges, var, res["mse"], res["psnr"], res["ncc"], arr.shape[1], reps
    )
