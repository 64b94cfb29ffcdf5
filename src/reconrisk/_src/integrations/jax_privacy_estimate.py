"""ReRo **estimates** for the samplers jax-privacy accounts only by Monte Carlo: balls-in-bins and b-min-sep
sampling with (banded) matrix-factorization noise (``jax_privacy.experimental.monte_carlo``).

No privacy-loss distribution is known in closed form for these samplers; jax-privacy draws privacy losses of
their dominating pair and estimates δ(ε) from them. :func:`rero_estimate` does the same for reconstruction
robustness: ReRo(κ) of a pair is inf over ε of e^ε·κ + δ(ε) (the Neyman–Pearson duality of the trade-off curve;
Hayes, Mahloujifar & Balle 2023 bound ReRo by the same curve), and δ(ε) = E_P[(1 − e^{ε−L})₊] is the mean of a
[0, 1]-valued function of the loss L drawn from P. On a grid of K values of ε fixed before the draws, each mean
gets a one-sided **Hoeffding** bound at level α/K (a union bound), so

    upper = min_ε e^ε·κ + δ̂(ε) + √(log(K/α) / (2N))

holds with probability ≥ 1 − α over the N draws (``confidence`` = 1 − α); ``estimate`` is the plug-in
min_ε e^ε·κ + δ̂(ε). Both are **estimates from samples, never certified**: the result says so
(``method="monte_carlo_estimate"``, ``details["kind"]`` says so, ``confidence`` set, ``lower`` None).
"""

from __future__ import annotations

import math

import numpy as np
from jax_privacy.experimental.monte_carlo import sample_generation

from .. import _validate as v
from ..errors import ReconRiskError
from ..priors import resolve_kappa
from ..results import Bound

#: ε-grid size of :func:`rero_estimate` (the union bound's K).
GRID = 400


def rero_estimate(privacy_loss, *, kappa: float | None = None, prior_size: int | None = None,
                  confidence: float = 0.95) -> Bound:
    """The Monte Carlo ReRo estimate (module docstring) from ``privacy_loss``: draws of the privacy loss
    log(P/Q)(x) with x from P, the distribution in which the target took part (jax-privacy's
    ``get_privacy_loss_sample(..., positive_sample=True)``); +∞ allowed."""
    k = resolve_kappa(kappa, prior_size)
    conf = v.in_range("confidence", confidence, 0.0, 1.0)
    loss = np.asarray(privacy_loss, dtype=float).ravel()
    if loss.size < 2 or np.isnan(loss).any() or np.isneginf(loss).any():
        raise ReconRiskError(f"privacy_loss must hold at least 2 draws, none NaN or -inf; found {loss.size} draws"
                             + (" with NaN or -inf" if loss.size and (np.isnan(loss).any() or np.isneginf(loss).any())
                                else ""))
    n = loss.size
    eps = np.linspace(-2.0, math.log(1.0 / k) + 2.0, GRID)  # fixed before the draws are read
    with np.errstate(over="ignore", invalid="ignore"):
        d = np.array([np.mean(-np.expm1(np.minimum(e - loss, 0.0))) for e in eps])
    slack = math.sqrt(math.log(GRID / (1.0 - conf)) / (2.0 * n))
    point = np.exp(eps) * k + d
    j = int(np.argmin(point))
    est = float(min(1.0, max(k, point[j])))
    upper = float(min(1.0, np.min(point + slack)))
    return Bound("rero", None, upper, estimate=est, confidence=conf, method="monte_carlo_estimate",
                 formula="ReRo(kappa) = inf_eps e^eps kappa + delta(eps); delta(eps) = E_P[(1 - e^(eps - L))+] from "
                         "samples of L, one-sided Hoeffding at level alpha/K on K = 400 eps fixed before the draws",
                 converged=None,
                 details={"kappa": k, "samples": n, "epsilon_at_estimate": float(eps[j]), "hoeffding_slack": slack,
                          "kind": "estimate (from samples; not a guarantee)", "interval": "Hoeffding (one-sided, union over the epsilon grid)"})


def _item(x):
    """A 0-d numpy/jax value (float32 included) as its Python number; anything else as given."""
    return np.asarray(x).item() if getattr(x, "ndim", None) == 0 else x


def monte_carlo_rero(strategy, noise_multiplier: float, c_col, *, num_samples: int, seed: int,
                     kappa: float | None = None, prior_size: int | None = None, confidence: float = 0.95,
                     dataset_size: int | None = None) -> Bound:
    """:func:`rero_estimate` of ``num_samples`` privacy losses that jax-privacy draws for ``strategy``
    (``BallsInBinsSampling``, ``BMinSepSampling``, …) with matrix-factorization noise ``noise_multiplier`` and the
    banded strategy column ``c_col`` (``jax_privacy.experimental.monte_carlo.sample_generation.
    get_privacy_loss_sample``, ``positive_sample=True``); an estimate, never certified."""
    n = v.integer("num_samples", _item(num_samples), minimum=2, maximum=10**8)
    seed = v.seed("seed", _item(seed))
    sigma = v.positive("noise_multiplier", _item(noise_multiplier))
    resolve_kappa(kappa, prior_size)  # the prior and the level are checked before any draw
    v.in_range("confidence", confidence, 0.0, 1.0)
    try:
        loss, _ = sample_generation.get_privacy_loss_sample(strategy, sigma, np.asarray(c_col, dtype=float), seed=seed,
                                                            positive_sample=True, num_samples=n,
                                                            dataset_size=dataset_size)
    except (ValueError, TypeError, NotImplementedError) as exc:
        raise ReconRiskError(f"jax-privacy cannot draw privacy losses for {type(strategy).__name__}: {exc}") from None
    out = rero_estimate(loss, kappa=kappa, prior_size=prior_size, confidence=confidence)
    return Bound(out.quantity, None, out.upper, estimate=out.estimate, confidence=out.confidence, method=out.method,
                 formula=out.formula, converged=None,
                 details={**out.details, "strategy": repr(strategy), "noise_multiplier": sigma, "seed": seed})
