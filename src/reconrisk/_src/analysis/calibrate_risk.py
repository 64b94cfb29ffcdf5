"""``calibrate_risk``: the dictionary view of :func:`reconrisk._src.analysis.calibrate.calibrate` (deprecated; kept for one release).

There is one calibrator, :func:`reconrisk._src.analysis.calibrate.calibrate`; this
function calls it and flattens its :class:`~reconrisk._src.analysis.calibrate.Calibration`
into the dictionary earlier releases returned, with a :class:`DeprecationWarning`.
"""

from __future__ import annotations

from .._deprecated import warn_renamed
from .calibrate import SOLVE, calibrate

__all__ = ["SOLVE", "calibrate_risk"]


def calibrate_risk(measure: str, target: float, solve: str = "noise_multiplier", *,
                   noise_multiplier: float | None = None, sample_rate: float | None = None, steps: int | None = None,
                   rel_tol: float = 1e-3, **baseline) -> dict:
    """Deprecated: use :func:`~reconrisk._src.analysis.calibrate.calibrate`, which returns a ``Calibration``.

    The σ, T or q meeting ``target`` on ``measure`` (``calibrate(measure, target, solve, …).to_dict()``, with
    the bound's ``lower``, ``upper``, ``baseline`` and ``formula`` at the top level)."""
    warn_renamed("calibrate_risk()", "calibrate()", "reconrisk")
    cal = calibrate(measure, target, solve, noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps,
                    rel_tol=rel_tol, **baseline)
    b = cal.bound
    out = cal.to_dict()
    out.update(measure=cal.quantity, baseline=b.details.get("baseline"), lower=b.lower, upper=b.upper,
               formula=b.formula)
    return out
