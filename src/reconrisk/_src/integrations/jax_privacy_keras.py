"""A jax-privacy Keras configuration whose noise meets a reconstruction-risk target.

:func:`keras_config_for_rero` returns ``jax_privacy.keras_api.DPKerasConfig`` (jax-privacy ≥ 2.0, Keras 3 on
the JAX backend: ``pip install 'reconrisk[jax-privacy,keras]'``) with the smallest noise multiplier at which the
certified ReRo of the run the config trains is at most the target — Hayes, Mahloujifar & Balle 2023, Cor. 4 on
the privacy-loss distribution of the Poisson-subsampled Gaussian, found by reconrisk's one calibrator
(:func:`reconrisk._src.analysis.calibrate.calibrate`, which evaluated the bound at the answer).

**The run the config trains.** ``poisson_sampling_in_fit=True``: ``model.fit`` draws each step's batch by
jax-privacy's ``CyclicPoissonSampling`` at q = batch_size / train_size (one group), for
``floor(train_size / batch_size)`` steps an epoch (Keras's default ``steps_per_epoch`` there), so
``train_steps = epochs × floor(train_size / batch_size)``; gradients are clipped to ``clip_norm`` (rescaled to
unit norm by default: the sensitivity is then 1) and Gaussian noise of std σ × sensitivity is added to their
sum. That is ``Release(σ, q, train_steps)`` under add/remove-one, the release calibrated here. Gradient
accumulation is fixed at 1: with k > 1 accumulated Poisson batches a step holds an example Binomial(k, q)
times, which is not the release jax-privacy's own calibration assumes (it reads q as k × batch_size /
train_size); a user who needs it can pass the returned config through ``dataclasses.replace`` and account
for it themself.

**The config's ε.** ``DPKerasConfig`` checks its noise multiplier against jax-privacy's own PLD accountant
(discretisation 1e-3) and refuses one whose ε there exceeds ``epsilon`` + 0.1. The returned ``epsilon`` is the
larger of that accountant's ε and reconrisk's certified ε of the same release
(``reconrisk.analyse(Release(σ, q, train_steps)).epsilon(delta).upper``) at the calibrated σ: both are upper
bounds on the run's ε, differing by their discretisations (a few parts in a million at 1e-3), so the field is a
sound ε whichever reads it, and jax-privacy's check passes.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any

from .. import _validate as v
from ..analysis.accountant import shared_analysis
from ..analysis.calibrate import calibrate
from ..errors import ReconRiskError

__all__ = ["keras_config_for_rero", "keras_run_shape"]

INSTALL_HINT = "pip install 'reconrisk[jax-privacy,keras]'"


def keras_run_shape(epochs: int, batch_size: int, train_size: int) -> tuple[float, int]:
    """(q, train_steps) of the run ``model.fit(x, y, epochs=epochs)`` takes with Poisson sampling in fit:
    q = batch_size / train_size, floor(train_size / batch_size) steps an epoch."""
    epochs = v.integer("epochs", epochs, minimum=1)
    n = v.integer("train_size", train_size, minimum=1)
    b = v.integer("batch_size", batch_size, minimum=1, maximum=n)
    return b / n, epochs * max(1, n // b)


def _keras_api():
    """jax-privacy's Keras module. Keras 3 reads its backend when first imported and jax-privacy's Keras API
    runs on JAX only: with Keras not yet imported and ``KERAS_BACKEND`` unset, the backend is set to ``jax``."""
    if "keras" not in sys.modules:
        os.environ.setdefault("KERAS_BACKEND", "jax")
    try:
        from jax_privacy import keras_api
    except ImportError as exc:  # keras, or jax-privacy, absent (or Keras's backend not installed)
        raise ImportError(f"keras_config_for_rero needs jax-privacy and Keras 3 with the JAX backend "
                          f"({INSTALL_HINT}); importing them failed: {exc}") from exc
    return keras_api


def keras_config_for_rero(target_rero: float, *, epochs: int, batch_size: int, train_size: int, clip_norm: float,
                          kappa: float | None = None, prior_size: int | None = None, delta: float = 1e-5,
                          rescale_to_unit_norm: bool = True, microbatch_size: int | None = None,
                          seed: int | None = None) -> Any:
    """A ``jax_privacy.keras_api.DPKerasConfig`` whose noise multiplier meets ``target_rero``.

    The prior is given by its baseline ``kappa`` (the blind guess's success) or its size ``prior_size``
    (uniform: κ = 1/prior_size), exactly one of them. ``epochs``, ``batch_size`` (the expected batch of
    Poisson sampling), ``train_size``, ``clip_norm`` and ``delta`` are the config's. The noise multiplier is
    the smallest (to the calibrator's relative tolerance 1e-3, rounded up) at which the certified ReRo of
    ``Release(σ, batch_size / train_size, train_steps)`` is at most ``target_rero``; ``train_steps`` =
    ``epochs × floor(train_size / batch_size)``. Raises :class:`~reconrisk.errors.ReconRiskError` for an
    invalid argument or a target no noise meets, ``ImportError`` when jax-privacy or Keras is absent.
    """
    target = v.probability_open("target_rero", target_rero)
    if (kappa is None) == (prior_size is None):
        raise ReconRiskError(f"give exactly one of kappa (the prior's baseline, in (0, 1)) and prior_size (an integer "
                             f">= 2); found kappa={kappa!r}, prior_size={prior_size!r}")
    prior = ({"kappa": v.probability_open("kappa", kappa)} if kappa is not None
             else {"prior_size": v.integer("prior_size", prior_size, minimum=2)})
    q, steps = keras_run_shape(epochs, batch_size, train_size)
    clip = v.positive("clip_norm", clip_norm)
    delta = v.probability_open("delta", delta)
    if not isinstance(rescale_to_unit_norm, bool):
        raise ReconRiskError(f"rescale_to_unit_norm must be True or False; found {rescale_to_unit_norm!r}")
    if microbatch_size is not None:
        microbatch_size = v.integer("microbatch_size", microbatch_size, minimum=1, maximum=int(batch_size))
    if seed is not None:
        seed = v.integer("seed", seed, minimum=0, maximum=2**63 - 1)
    found = calibrate("reconstruction", target, "noise_multiplier", sample_rate=q, steps=steps, **prior)
    sigma = found.noise_multiplier
    keras_api = _keras_api()
    from jax_privacy.accounting import analysis as jp_analysis

    theirs = keras_api.DPKerasConfig._accountant.compute_epsilon(  # the check DPKerasConfig runs on itself
        steps, jp_analysis.DpParams(noise_multipliers=sigma, batch_size=int(batch_size),
                                    num_samples=int(train_size), delta=delta))
    epsilon = max(float(theirs), shared_analysis(found.release).epsilon(delta).upper)
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ReconRiskError(f"jax-privacy's accountant gives epsilon={epsilon} at noise_multiplier={sigma:.6g}; "
                             "DPKerasConfig needs a finite epsilon > 0")
    return keras_api.DPKerasConfig(
        epsilon=float(epsilon), delta=delta, clipping_norm=clip, batch_size=int(batch_size),
        gradient_accumulation_steps=1, train_steps=steps, train_size=int(train_size),
        poisson_sampling_in_fit=True, noise_multiplier=float(sigma), rescale_to_unit_norm=rescale_to_unit_norm,
        microbatch_size=microbatch_size, seed=seed)
