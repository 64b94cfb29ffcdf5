"""Rényi DP at order α = 2, the order Guo, Karrer, Chaudhuri & van der Maaten's (2022) Theorem 1 (MSE ≥ 1/(4(e^ε − 1))) reads.

Theory layer: numpy/scipy only. Moved here from the "accountants" section of
:mod:`reconrisk._src.theory.mse` (an accountant: the bounds read it, it reads no bound).

* :func:`release_rdp_alpha2` — a DP-SGD :class:`~reconrisk._src.release.Release`
  (Poisson-subsampled Gaussian composed over its segments), with the clipped
  gradient's sensitivity in units of C (1 hard clip, 1.11522 GELU soft clip).
* :func:`output_perturbation_rdp` — ``θ* + N(0, σ²I)`` for λ-regularised
  logistic regression, by the paper's printed formula and by the standard one.

Departure from the printed paper (spec_001 §6): the paper states
(2, ε)-RDP with ``ε = 2/(nλσ)`` (reproducing its 1.58 and 1579); the Gaussian
mechanism with L2 sensitivity ``2/(nλ)`` is (2, ``4/(nλσ)²``)-RDP. Both are
offered, named ``"paper"`` and ``"gaussian"``.
"""

from __future__ import annotations

import numpy as np

from .. import _validate as v
from ..release import Release, Segment, gaussian_release
from .rdp import release_rdp

#: Output-perturbation ε formulas (spec_001 §6).
OUTPUT_PERTURBATION_FORMULAS = ("paper", "gaussian")


def release_rdp_alpha2(release: Release, *, sensitivity: float = 1.0) -> float:
    """RDP ε at α = 2 of a DP-SGD :class:`Release` (Poisson-subsampled Gaussian, composed over its segments).

    For one step ``log(1 + q²(e^{1/σ_eff²} − 1))`` with ``σ_eff = σ/sensitivity``
    (sensitivity in units of C: 1 for hard clipping, 1.11522 for the GELU
    soft clip). Evaluated by :func:`reconrisk._src.accounting.rdp.release_rdp`
    (exact at integer orders).
    """
    release = gaussian_release(release, "the order-2 RDP of DP-SGD")  # fixed-size batches: σ/2
    k = v.positive("sensitivity", sensitivity)
    segs = [Segment(s.noise_multiplier / k, s.sample_rate, s.steps) for s in release.segments]
    return float(release_rdp(segs, orders=np.array([2]))[0])


def output_perturbation_rdp(n: int, lam: float, noise_std: float, formula: str = "gaussian") -> float:
    """RDP ε at α = 2 of ``θ* + N(0, σ²I)`` for λ-regularised logistic regression on n points.

    ``formula="paper"``: ``2/(nλσ)`` as printed in Guo et al. 2022, §7.1 (gives its
    (2, 1.58) at n = 12,665, λ = σ = 1e-2 and 1579 at σ = 1e-5).
    ``formula="gaussian"``: the standard Gaussian RDP ``αΔ²/(2σ²)`` at α = 2
    with the L2 sensitivity ``Δ = 2/(nλ)`` of the minimiser of
    ``(1/n)Σ ℓ + (λ/2)||θ||²`` (Chaudhuri et al. 2011), i.e. ``4/(nλσ)²``.
    Both assume ``||x|| ≤ 1`` and a 1-Lipschitz loss; pixel data in [0, 1]^d
    do not satisfy the first (spec_001 §6), so neither is a certificate there.
    """
    n = v.integer("n", n, minimum=1)
    lam = v.positive("lam", lam)
    s = v.positive("noise_std", noise_std)
    formula = v.choice("formula", formula, OUTPUT_PERTURBATION_FORMULAS)
    if formula == "paper":
        return 2.0 / (n * lam * s)
    return 4.0 / (n * lam * s) ** 2


__all__ = ["OUTPUT_PERTURBATION_FORMULAS", "release_rdp_alpha2", "output_perturbation_rdp"]
