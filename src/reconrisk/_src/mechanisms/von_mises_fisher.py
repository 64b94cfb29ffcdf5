"""The von Mises–Fisher mechanism as a step: :class:`VonMisesFisher` (concentration κ, optional dimension p).

The law itself (log I_ν, the normaliser, Wood's sampler) is :mod:`.vmf`; the RDP curve is
:func:`reconrisk._src.accounting.vmf.vmf_rdp` (Biswas et al. 2024, Prop. 1), which needs the dimension p: without it
the curve is unknown (+inf). No privacy-loss distribution is built (``pld`` None: the analysis answers from
the RDP curve). Under Poisson sampling the unsampled curve is kept (sound: Rényi divergence is jointly
quasi-convex, so sampling never raises it; the Zhu–Wang amplified curve is
:class:`~reconrisk._src.analysis.guarantee.GuaranteeAnalysis.vmf`'s). A DP-SGD release with this noise is
``Release(concentration=κ, …)`` (:class:`~reconrisk._src.release.Segment` holds one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..results import Support
from .base import Mechanism, Sampler, register
from .samplers import NoAmplification, Poisson


@register
@dataclass(frozen=True)
class VonMisesFisher(Mechanism):
    """VMF noise of ``concentration`` κ > 0 on the sphere of dimension ``dim`` (p ≥ 2, or None: unknown)."""

    concentration: float
    dim: int | None = None
    name = "vmf"
    level_name = "concentration"

    def __post_init__(self) -> None:
        object.__setattr__(self, "concentration", v.positive("concentration", self.concentration))
        if self.dim is not None:
            object.__setattr__(self, "dim", v.integer("dim", self.dim, minimum=2))

    def supports(self, sampler: Sampler) -> Support:
        ok = isinstance(sampler, (NoAmplification, Poisson))
        return Support(ok, "" if ok else f"VMF noise under {sampler.describe()} is analysed for Poisson sampling only")

    def relation(self, sampler: Sampler) -> str:
        return "add_remove"

    def rdp(self, sampler: Sampler, orders) -> np.ndarray:
        from ..accounting.vmf import vmf_rdp  # (scipy: off import reconrisk._src.release's numpy-only path)

        o = np.asarray(orders, dtype=float)
        if self.dim is None:
            return np.full(o.size, np.inf)
        return np.atleast_1d(np.asarray(vmf_rdp(o, self.concentration, self.dim), dtype=float))

    def event_label(self, sampler: Sampler) -> str:
        return f"VMF(concentration={self.concentration:g}" + (f", dim={self.dim})" if self.dim else ")")
