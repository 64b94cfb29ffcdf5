"""Guo, Karrer, Chaudhuri & van der Maaten's (2022) subsampling factor: how much Poisson sampling shrinks the Fisher information leakage.

Theory layer: numpy/scipy only. Moved here from the "accountants" section of
:mod:`reconrisk._src.theory.mse`: the FIL bounds read it, it reads no bound.

* :func:`gaussian_step_dp_epsilon` — (ε, δ)-DP of one Gaussian step by the
  classical calibration ``ε = k·√(2 log(1.25/δ))/σ`` (Guo et al. 2022, Alg. 1 line 4).
* :func:`subsampling_factor_value` — Guo et al. 2022, Eq. 3,
  ``q / (q + (1 − q) e^{−ε})``, in log space.
* :func:`subsampling_factor` — Eq. 3 for a whole run with the δ that makes the
  union-bound failure probability ``T·δ`` equal ``1/n`` (Guo et al. 2022, §6.1), as a
  :class:`SubsamplingFactor`.

Vocabulary: the paper calls this factor κ; reconrisk keeps ``kappa`` for the
prior's baseline success probability and calls this one the
**subsampling factor** (``subsampling_factor`` in Python, CLI flags and JSON).

Departures from the printed paper (spec_001 §4.4): GELU soft clipping bounds a
clipped gradient's norm by ``1.11522·C`` (the computed maximum of
``r/(GELU(r−1)+1)``, rounded up), where the paper rounds to ``1.115``;
:data:`GELU_CLIP_OVERSHOOT` is the default, :data:`GELU_CLIP_OVERSHOOT_PAPER`
reproduces the paper. Dwork–Roth's calibration formally needs ε < 1; the
paper uses it regardless, and so do we.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from .. import _validate as v
from ..errors import ReconRiskError

#: Upper bound on ``||GELU-clip(g)|| / C`` (max of r/(GELU(r−1)+1) = 1.1152189…, rounded up).
GELU_CLIP_OVERSHOOT = 1.11522
#: The value Guo et al. 2022 prints (Algorithm 1 line 4; its code uses σ/1.115 in the RDP accountant).
GELU_CLIP_OVERSHOOT_PAPER = 1.115


def gaussian_step_dp_epsilon(
    noise_multiplier: float, delta: float, *, sensitivity_factor: float = 2 * GELU_CLIP_OVERSHOOT
) -> float:
    """ε of one Gaussian step, ``ε = sensitivity_factor · √(2 log(1.25/δ)) / σ`` (Dwork et al.; Guo et al. 2022, Alg. 1 line 4).

    ``sensitivity_factor`` is the replace-one sensitivity in units of C:
    ``2 × 1.115`` for GELU-clipped gradients (the paper's choice), 2 for
    hard clipping.
    """
    sigma = v.positive("noise_multiplier", noise_multiplier)
    delta = v.probability_open("delta", delta)
    k = v.positive("sensitivity_factor", sensitivity_factor)
    return k * math.sqrt(2.0 * math.log(1.25 / delta)) / sigma


def subsampling_factor_value(sample_rate, epsilon):
    """Guo et al. 2022, Eq. 3: ``q / (q + (1 − q) e^{−ε})``, computed as ``expit(ε + logit q)``; 1 at q = 1.

    Element-wise over arrays; a float for scalar inputs.
    """
    q, q_scalar = v.positive_array("sample_rate", sample_rate)
    if (q > 1).any():
        raise ReconRiskError(f"sample_rate must be in (0, 1]; found {float(q[q > 1].ravel()[0])}")
    e, e_scalar = v.positive_array("epsilon", epsilon, allow_zero=True, allow_inf=True)
    with np.errstate(divide="ignore"):
        logit = np.log(q) - np.log1p(-np.minimum(q, 1.0))
    out = np.where(q >= 1.0, 1.0, special.expit(e + logit))
    return float(out) if (q_scalar and e_scalar) else out


@dataclass(frozen=True)
class SubsamplingFactor:
    """The subsampling factor of Guo et al. 2022, Eq. 3 for T subsampled Gaussian steps, with its failure probability.

    The per-step (ε, δ)-DP guarantee behind Eq. 3 fails with probability δ
    per step; over the run the FIL bound ``I ⪯ factor · Σ_t I_t`` holds except
    with probability ``failure_probability = min(1, T·δ)`` (union bound).
    Where that event cannot be tolerated, use factor 1 (Eq. 2, no failure
    probability). ``meets_target`` says whether ``T·δ ≤ 1/n`` (Guo et al. 2022, §6.1).
    """

    value: float
    step_epsilon: float
    delta: float
    steps: int
    failure_probability: float
    target_failure: float | None
    meets_target: bool | None

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["subsampling_factor"] = d.pop("value")
        return d


def subsampling_factor(
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    delta: float | None = None,
    *,
    n: int | None = None,
    sensitivity_factor: float = 2 * GELU_CLIP_OVERSHOOT,
) -> SubsamplingFactor:
    """Eq. 3 for a run of ``steps`` steps, with δ chosen (when ``delta`` is None) so that ``T·δ = 1/n`` (needs ``n``)."""
    steps = v.integer("steps", steps, minimum=1)
    q = v.sample_rate("sample_rate", sample_rate)
    if n is not None:
        n = v.integer("n", n, minimum=1)
    if delta is None:
        if n is None:
            raise ReconRiskError("delta must be given (in (0, 1)) or n, to choose delta = 1/(n·steps); found neither")
        delta = 1.0 / (n * steps * (1 + 1e-12))
    delta = v.probability_open("delta", delta)
    eps = gaussian_step_dp_epsilon(noise_multiplier, delta, sensitivity_factor=sensitivity_factor)
    fail = min(1.0, steps * delta)
    target = None if n is None else 1.0 / n
    return SubsamplingFactor(
        value=float(subsampling_factor_value(q, eps)),
        step_epsilon=eps,
        delta=delta,
        steps=steps,
        failure_probability=fail,
        target_failure=target,
        meets_target=None if target is None else bool(fail <= target),
    )


__all__ = [
    "GELU_CLIP_OVERSHOOT",
    "GELU_CLIP_OVERSHOOT_PAPER",
    "SubsamplingFactor",
    "gaussian_step_dp_epsilon",
    "subsampling_factor",
    "subsampling_factor_value",
]
