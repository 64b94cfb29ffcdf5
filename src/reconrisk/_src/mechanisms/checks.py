"""Checks of ``dp_accounting`` events reconrisk hands to ``dp_accounting``'s own constructors, one line each.

:func:`mixture_of_gaussians` validates a ``MixtureOfGaussiansDpEvent`` before ``dp_accounting`` builds its
privacy-loss distribution: that constructor raises its own ``ValueError`` on a standard deviation of 0 (no
noise: nothing finite can be certified), on negative sensitivities, and recurses without end on some
sensitivities tiny against the noise; here each is one :class:`~reconrisk.errors.ReconRiskError` naming the
field, the value and the valid range.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validate as v
from ..errors import ReconRiskError

_MOG = "MixtureOfGaussiansDpEvent"


def mixture_of_gaussians(event) -> tuple[float, np.ndarray, np.ndarray]:
    """(standard deviation, sensitivities, probabilities) of a mixture-of-Gaussians event ``dp_accounting`` can
    build: σ > 0 and finite; sensitivities finite, ≥ 0 and at most 1/MIN_NOISE standard deviations; probabilities
    in [0, 1] summing to 1."""
    sd = v.real(f"{_MOG}.standard_deviation", event.standard_deviation)
    if not (sd > 0 and math.isfinite(sd)):
        raise ReconRiskError(f"{_MOG}.standard_deviation must be > 0 and finite (0 is no noise: no finite guarantee); "
                             f"found {sd:g}")
    try:
        sens = np.asarray(event.sensitivities, dtype=float)
        probs = np.asarray(event.sampling_probs, dtype=float)
    except (TypeError, ValueError):
        raise ReconRiskError(f"{_MOG}.sensitivities and .sampling_probs must be lists of numbers; found "
                             f"{event.sensitivities!r:.60} and {event.sampling_probs!r:.60}") from None
    if sens.ndim != 1 or sens.size == 0 or sens.shape != probs.shape:
        raise ReconRiskError(f"{_MOG}.sensitivities and .sampling_probs must be non-empty lists of equal length; "
                             f"found {sens.size} and {probs.size}")
    if not np.isfinite(sens).all() or (sens < 0).any() or (sens / sd > 1.0 / v.MIN_NOISE).any():
        raise ReconRiskError(f"{_MOG}.sensitivities must be finite, >= 0 and at most {1.0 / v.MIN_NOISE:g} standard "
                             f"deviations ({sd:g}) in size; found {sens.tolist()!r:.80}")
    if not np.isfinite(probs).all() or (probs < 0).any() or abs(float(probs.sum()) - 1.0) > 1e-9:
        raise ReconRiskError(f"{_MOG}.sampling_probs must be probabilities in [0, 1] summing to 1; found "
                             f"{probs.tolist()!r:.80} (sum {float(probs.sum()):.6g})")
    return sd, sens, probs


def constructor_failure(event, exc: BaseException) -> ReconRiskError:
    """The one line for an exception ``dp_accounting`` raised building ``event``'s privacy-loss distribution
    (its ``ValueError``s, and the ``RecursionError`` its mixture-of-Gaussians constructor can fall into)."""
    what = "recursion without end" if isinstance(exc, RecursionError) else str(exc)
    return ReconRiskError(f"{type(event).__name__}: dp_accounting cannot build its privacy-loss distribution ({what})")
