"""Calibration: the smallest noise multiplier that keeps reconstruction risk below a target.

"Smallest σ with γ ≤ γ* at κ" (issue 2, §4): γ = B_κ(μ_{T,σ,q}, ν_{T,σ}) is
non-increasing in σ, so a bisection on log σ brackets the answer. The
returned σ is the *upper* end of the final bracket, at which the certified
upper end of the PLD bracket (or the exact closed form) is ≤ γ*; the
calibration is therefore sound whatever the discretisation error.

Floating point: the returned σ is checked against the same function that
``rero_bound`` evaluates (closed form for q = 1, the certified PLD upper end
otherwise) and stepped up by ulps until that value is ≤ γ* *exactly*, so
``rero_bound(σ).upper <= target`` holds as printed (issue 9).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import special

from .. import _validate as v
from .._roots import bisect_log
from ..errors import ReconRiskError
from ..release import Release
from .rero import closed_form, pld_upper, rero_bounds


#: Smallest κ the PLD calibration search accepts (q < 1); q = 1 has a closed form for any κ.
MIN_KAPPA_PLD = 1e-12


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`noise_multiplier_for_rero`."""

    noise_multiplier: float
    target_rero: float
    kappa: float
    sample_rate: float
    steps: int
    rero_upper: float
    bracket: tuple[float, float]
    method: str

    def to_dict(self) -> dict:
        d = asdict(self)
        d["bracket"] = list(self.bracket)
        return d


def noise_multiplier_for_rero(
    target_rero: float,
    kappa: float,
    sample_rate: float,
    steps: int,
    *,
    rel_tol: float = 1e-3,
) -> Calibration:
    """Smallest σ (to relative ``rel_tol``) with certified γ ≤ ``target_rero``."""
    kappa = v.probability_open("kappa", kappa)
    target = v.in_range("target_rero", target_rero, kappa, 1.0)
    q = v.sample_rate("sample_rate", sample_rate)
    t = v.steps("steps", steps)
    if q < 1.0 and kappa < MIN_KAPPA_PLD:  # issue 10: prior_size 2^64 ran for minutes
        raise ReconRiskError(
            f"kappa must be >= {MIN_KAPPA_PLD:g} (prior_size <= 10^12) to calibrate at sample_rate < 1: smaller "
            f"baselines need PLD grids this search cannot afford; found kappa={kappa:g}"
        )
    rel_tol = v.in_range("rel_tol", rel_tol, 0.0, 1.0)
    if q == 1.0:
        # Φ(Φ⁻¹(κ) + √T/σ) = γ*  ⇔  σ = √T / (Φ⁻¹(γ*) − Φ⁻¹(κ))
        gap = float(special.ndtri(target) - special.ndtri(kappa))
        sigma = math.sqrt(t) / gap if gap > 0 else math.inf
        if not math.isfinite(sigma):
            raise ReconRiskError(
                f"target_rero={target!r} is indistinguishable from kappa={kappa!r} in floating point; "
                "no finite noise multiplier is needed to be told apart from it — raise target_rero"
            )
        sigma, up = _strict(sigma, lambda s: float(closed_form(Release(s, 1.0, t), np.array([kappa]))[0]), target)
        return Calibration(sigma, target, kappa, q, t, up, (sigma, sigma), "closed_form")

    # as σ → 0 the adversary sees exactly whether the target was ever sampled
    gamma_max = 1.0 - (1.0 - q) ** t * (1.0 - kappa)
    if target >= gamma_max:
        raise ReconRiskError(
            f"target_rero must be < {gamma_max:.6g}, the reconstruction success without any noise at "
            f"sample_rate={q:g}, steps={t}, kappa={kappa:g}; found {target:g} (every noise multiplier meets it)"
        )

    def ok(sigma: float) -> bool:
        return bool(pld_upper(Release(sigma, q, t), np.array([kappa]))[0] <= target)

    try:
        lo, hi = bisect_log(ok, 0.2, 2.0, rel_tol=rel_tol, name="noise_multiplier")
    except ReconRiskError as exc:  # pragma: no cover - target > kappa always reachable
        raise ReconRiskError(f"cannot reach target_rero={target} at kappa={kappa}: {exc}") from None
    hi, up = _strict(hi, lambda s: float(rero_bounds(Release(s, q, t), kappa)[0].upper), target)
    return Calibration(hi, target, kappa, q, t, up, (lo, hi), "pld")


def _strict(sigma: float, bound, target: float) -> tuple[float, float]:
    """Step σ up until ``bound(σ) <= target`` holds exactly in floating point (bound non-increasing in σ)."""
    up = bound(sigma)
    for step in range(200):
        if up <= target:
            return sigma, up
        sigma = math.nextafter(sigma, math.inf) if step < 8 else sigma * (1 + 1e-9 * 2 ** min(step - 8, 40))
        up = bound(sigma)
    raise ReconRiskError(  # pragma: no cover - the bound decreases to kappa < target
        f"could not meet target_rero={target} in floating point near noise_multiplier={sigma:g}"
    )
