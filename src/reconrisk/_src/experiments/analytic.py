"""Riess et al.'s (2024) experiments: the data they run on, the Fig. 2 simulations and the Fig. 5 scale demo.

Computation only; :mod:`reconrisk._src.report.analytic` draws the results.

* :func:`synthetic_uniform`, :func:`load_digits_or_none`, :func:`synthetic_image`
  — the data of Figs. 2 and 5 (U(0, 1)^N points, the 8×8 digits, a smooth
  test image).
* :func:`fig2_simulations` — Fig. 2: the attack simulated at each σ in each
  clip regime (C = m, C = √M·m, C = 10·√M·max‖X‖); row r uses seed
  ``seed + r``, so the rows are independent experiments.
* :func:`scale_demo` — Fig. 5: an image and its a-times rescaled copy,
  attacked with C = ‖X‖, M = 1 and the same noise draw, so the MSE ratio is a²
  exactly (not only in expectation); PSNR with the range scaled by a and NCC
  are unchanged.
"""

from __future__ import annotations

import warnings
from typing import Callable, Sequence

import numpy as np

from .. import _validate as val
from ..attacks.analytic import (
    SuboptimalRowsWarning, clip_norm_for_regime, mse, ncc, psnr, simulate_attack, simulate_success,
)
from ..data import load_digits
from ..errors import ReconRiskError

#: Fig. 2's noise multipliers: logspace(-3, 2, 6)[1:-1] in the authors' code.
FIG2_SIGMAS = (1e-2, 1e-1, 1.0, 10.0)
#: Fig. 2's clip regimes, one row each.
FIG2_REGIMES = ("min", "sqrt_rows", "large")


def synthetic_uniform(samples: int = 100, dim: int = 4, seed: int = 0) -> np.ndarray:
    """Fig. 2's data: ``samples`` points from U(0, 1)^dim (numpy seed ``seed``)."""
    n = val.integer("samples", samples, minimum=1)
    d = val.integer("dim", dim, minimum=1)
    return np.random.default_rng(val.integer("seed", seed, minimum=0)).uniform(0.0, 1.0, size=(n, d))


def load_digits_or_none(samples: int | None = None) -> np.ndarray | None:
    """The 8×8 digits in [0, 1], flattened (n, 64), from ``reconrisk._src.data.load_digits`` (the bundled copy)."""
    d = load_digits()
    x = getattr(d, "x", getattr(d, "images", d))
    x = np.asarray(x, dtype=float).reshape(len(x), -1)
    x = x[np.linalg.norm(x, axis=1) > 0]
    return x if samples is None else x[: val.integer("samples", samples, minimum=1)]


def synthetic_image(height: int = 32, width: int = 32, channels: int = 3) -> np.ndarray:
    """A deterministic smooth test image in [0, 1] (H, W, C): colour gradients and a ring."""
    yy, xx = np.meshgrid(np.linspace(0, 1, height), np.linspace(0, 1, width), indexing="ij")
    ring = np.exp(-(((np.hypot(xx - 0.5, yy - 0.5) - 0.3) / 0.08) ** 2))
    chans = [xx, yy, ring, 1 - xx, (xx + yy) / 2]
    return np.clip(np.stack(chans[:channels], axis=-1), 0.0, 1.0)


def fig2_simulations(
    x,
    *,
    rows: int = 100,
    noise_multipliers: Sequence[float] = FIG2_SIGMAS,
    regimes: Sequence[str] = FIG2_REGIMES,
    data_range: float = 1.0,
    mode: str = "fast",
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
) -> dict:
    """Riess et al. 2024, Fig. 2 on the samples ``x`` (n, N): ``{regime: AnalyticSimulation}`` in ``regimes`` order."""

    arr = np.asarray(x, dtype=float)
    if arr.ndim != 2:
        raise ReconRiskError(f"x must have shape (n, N); found {arr.shape}")
    norms = np.linalg.norm(arr, axis=1)
    if (norms == 0).any():
        raise ReconRiskError("x must have nonzero norms (Riess et al. 2024 excludes X = 0); found norm 0")
    sig = [val.positive("noise_multipliers", s) for s in noise_multipliers]
    sims = {}
    for r, regime in enumerate(regimes):
        c = clip_norm_for_regime(regime, norms, rows)
        with warnings.catch_warnings():
            if regime == "large":  # sub-optimal by design: that is the point of this row
                warnings.simplefilter("ignore", SuboptimalRowsWarning)
            sims[regime] = simulate_success(
                arr, sig, c, rows, mode=mode, data_range=data_range, seed=seed + r, progress=progress
            )
    return sims


def scale_demo(image=None, *, factor: float = 10.0, noise_multiplier: float = 1e-3, seed: int = 0) -> dict:
    """Riess et al. 2024, Fig. 5's numbers: attack an image and its ``factor``-times rescaled copy with the same seed.

    Returns ``{"original": {...}, "scaled": {...}, "mse_ratio", "factor",
    "noise_multiplier", "image", "reconstructions"}`` where each of
    ``original``/``scaled`` holds ``clip_norm``, ``mse``, ``psnr``, ``ncc``
    and ``reconstructions`` maps each to ``(data, reconstruction)`` (flat).
    """

    img = synthetic_image() if image is None else np.asarray(image, dtype=float)
    a = val.positive("factor", factor)
    s = val.positive("noise_multiplier", noise_multiplier)
    x = img.reshape(-1)
    rng_range = float(x.max() - x.min()) or 1.0
    results: dict = {}
    recs = {}
    for label, scale in (("original", 1.0), ("scaled", a)):
        xs = scale * x
        c = float(np.linalg.norm(xs))
        xh = simulate_attack(xs, s, c, 1, seed=seed)
        recs[label] = (xs, xh)
        results[label] = {
            "clip_norm": c,
            "mse": float(mse(xs, xh)),
            "psnr": float(psnr(xs, xh, data_range=scale * rng_range)),
            "ncc": float(ncc(xs, xh)),
        }
    results["mse_ratio"] = results["scaled"]["mse"] / results["original"]["mse"]
    results["factor"] = a
    results["noise_multiplier"] = s
    results["image"] = img
    results["reconstructions"] = recs
    return results


__all__ = [
    "FIG2_SIGMAS",
    "FIG2_REGIMES",
    "synthetic_uniform",
    "load_digits_or_none",
    "synthetic_image",
    "fig2_simulations",
    "scale_demo",
]
