"""The discrete Gaussian mechanism (Canonne, Kamath & Steinke 2020): :class:`DiscreteGaussian`.

An integer query of sensitivity Δ (an integer) plus noise Y ~ N_Z(0, σ²), P(Y = y) ∝ e^{−y²/(2σ²)} on the
integers. The pair is N_Z(0, σ²) against N_Z(Δ, σ²): the normalisers cancel, and the privacy loss at y is
(Δ² − 2yΔ)/(2σ²), an affine function on a lattice; the pair is symmetric (y ↦ Δ − y swaps its two laws), so
the add and remove directions are one distribution.

**PLD** (:meth:`DiscreteGaussian.pld`): the lattice truncated to |y| ≤ K = ⌈38σ⌉ + Δ (beyond it the weights are
below e^{−722}); each atom's probability is its weight over an *upper* bound of the normaliser (the kept
weights plus 2e^{−K²/(2σ²)}/(1 − e^{−K/σ²}), which bounds the rest), so every kept probability is at most its
true value. Pessimistic: losses rounded up and the mass not kept (at least the truncated mass) put at +∞;
optimistic: losses rounded down and that mass dropped (:func:`~.pld_build.atoms_pmf`).

**RDP**: ε(α) ≤ αΔ²/(2σ²) for every α > 1 — not the discrete Gaussian's exact curve, but the bound Canonne,
Kamath & Steinke 2020 prove (Thm 4: the mechanism is ½(Δ/σ)²-concentrated DP), so it is sound. No pure ε and no
μ-GDP bound here. ``dp_accounting`` has no event for this mechanism (``event_types`` is empty): analyse it as
steps, ``analyse([Step(DiscreteGaussian(σ, Δ), NoAmplification(), T)])``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..results import Support
from .base import Mechanism, Sampler, register
from .pld_build import atoms_pmf
from .samplers import NoAmplification

#: The largest σ and Δ whose lattice is enumerated (about 2·38σ + 2Δ atoms).
MAX_SIGMA = 1e5
MAX_SENSITIVITY = 10**6


@register
@dataclass(frozen=True)
class DiscreteGaussian(Mechanism):
    """Discrete Gaussian noise N_Z(0, σ²), σ = ``sigma`` in (0, 1e5], for an integer ``sensitivity`` Δ ≥ 1."""

    sigma: float
    sensitivity: int = 1
    name = "discrete_gaussian"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", v.in_range("sigma", self.sigma, 0.0, MAX_SIGMA, high_open=False))
        object.__setattr__(self, "sensitivity", v.integer("sensitivity", self.sensitivity, minimum=1,
                                                          maximum=MAX_SENSITIVITY))

    def supports(self, sampler: Sampler) -> Support:
        ok = isinstance(sampler, NoAmplification)
        return Support(ok, "" if ok else f"a discrete Gaussian step under {sampler.describe()} is not analysed "
                                         "(no amplification only)")

    def lattice(self) -> tuple[np.ndarray, np.ndarray, float]:
        """(y, P(Y = y) rounded down, mass left out ≥ the true truncated mass) of N_Z(0, σ²) on |y| ≤ K."""
        s2 = self.sigma * self.sigma
        k = math.ceil(38.0 * self.sigma) + self.sensitivity
        y = np.arange(-k, k + 1, dtype=np.float64)
        logw = -y * y / (2.0 * s2)
        top = float(logw.max())
        kept = float(np.exp(logw - top).sum())
        rest = 2.0 * math.exp(-k * k / (2.0 * s2) - top) / -math.expm1(-k / s2)
        p = np.exp(logw - top) / (kept + rest)
        return y, p, max(0.0, 1.0 - float(p.sum()))

    def pld(self, sampler: Sampler, h: float, *, pessimistic: bool, direction: str):
        y, p, out = self.lattice()
        d, s2 = float(self.sensitivity), self.sigma * self.sigma
        return atoms_pmf((d * d - 2.0 * y * d) / (2.0 * s2), p, h, pessimistic, infinity_mass=out)

    def rdp(self, sampler: Sampler, orders) -> np.ndarray:
        """αΔ²/(2σ²): Canonne, Kamath & Steinke 2020, Thm 4 (a proven upper bound, not the exact curve)."""
        return np.asarray(orders, dtype=float) * self.sensitivity**2 / (2.0 * self.sigma**2)

    def event_label(self, sampler: Sampler) -> str:
        return f"DiscreteGaussian(sigma={self.sigma:g}, sensitivity={self.sensitivity})"
