"""keras_config_for_rero: a jax-privacy DPKerasConfig whose noise multiplier meets a ReRo target.

The calibrated config is checked against reconrisk's analysis of the run it trains (Poisson at
batch_size / train_size, epochs × floor(train_size / batch_size) steps): the ReRo at its noise multiplier meets
the target and at a 2 % smaller one does not. A tiny Keras model made private with it fits a few steps
(KERAS_BACKEND=jax). Skipped, with the reason, where jax-privacy or Keras is absent; the argument checks run
without either.
"""

from __future__ import annotations

import importlib.util
import math
import os

import numpy as np
import pytest

from reconrisk import Release, analyse
from reconrisk.errors import ReconRiskError
from reconrisk._src.integrations.jax_privacy_keras import keras_config_for_rero  # imports neither framework

if "keras" not in __import__("sys").modules:
    os.environ.setdefault("KERAS_BACKEND", "jax")  # jax-privacy's Keras API runs on the JAX backend only


@pytest.fixture(scope="module")
def keras_api():
    pytest.importorskip("jax_privacy", reason="jax-privacy is not installed (pip install 'reconrisk[jax-privacy]')")
    if importlib.util.find_spec("keras") is None:
        pytest.skip("Keras is not installed (pip install 'reconrisk[keras]')")
    keras = pytest.importorskip("keras", reason="Keras 3 could not be imported with the JAX backend")
    if keras.config.backend() != "jax":
        pytest.skip(f"Keras was imported with the {keras.config.backend()} backend; jax-privacy needs jax")
    from jax_privacy import keras_api

    return keras_api



SETTINGS = [
    dict(target_rero=0.2, prior_size=10, epochs=3, batch_size=64, train_size=1000, clip_norm=1.0),
    dict(target_rero=0.05, kappa=1e-3, epochs=2, batch_size=50, train_size=600, clip_norm=0.5, delta=1e-6),
]


def _rero(cfg, sigma, prior):
    release = Release(sigma, cfg.batch_size / cfg.train_size, cfg.train_steps, clip_norm=cfg.clipping_norm)
    return analyse(release).rero(**prior).upper


@pytest.mark.parametrize("kw", SETTINGS)
def test_the_noise_multiplier_meets_the_target_and_two_percent_less_does_not(keras_api, kw):
    cfg = keras_config_for_rero(**kw)
    assert isinstance(cfg, keras_api.DPKerasConfig)
    prior = {k: kw[k] for k in ("kappa", "prior_size") if k in kw}
    q, n = kw["batch_size"] / kw["train_size"], kw["train_size"] // kw["batch_size"]
    assert (cfg.batch_size, cfg.train_size, cfg.train_steps) == (kw["batch_size"], kw["train_size"], kw["epochs"] * n)
    assert cfg.poisson_sampling_in_fit and cfg.gradient_accumulation_steps == 1
    assert cfg.clipping_norm == kw["clip_norm"] and cfg.delta == kw.get("delta", 1e-5)
    assert _rero(cfg, cfg.noise_multiplier, prior) <= kw["target_rero"]
    assert _rero(cfg, 0.98 * cfg.noise_multiplier, prior) > kw["target_rero"]
    # the config's ε is the larger of reconrisk's certified ε and jax-privacy's own accountant's (its check)
    from jax_privacy.accounting import analysis as jp_analysis

    ours = analyse(Release(cfg.noise_multiplier, q, cfg.train_steps)).epsilon(cfg.delta).upper
    theirs = keras_api.DPKerasConfig._accountant.compute_epsilon(cfg.train_steps, jp_analysis.DpParams(
        noise_multipliers=cfg.noise_multiplier, batch_size=cfg.batch_size, num_samples=cfg.train_size,
        delta=cfg.delta))
    assert cfg.epsilon == max(ours, theirs)
    assert math.isclose(ours, theirs, rel_tol=1e-3)


def test_a_tiny_keras_model_fits_with_the_config(keras_api):
    import keras

    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    cfg = keras_config_for_rero(0.3, prior_size=10, epochs=1, batch_size=16, train_size=64, clip_norm=1.0, seed=3)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model = keras_api.make_private(model, cfg)
    model.compile(optimizer=keras.optimizers.SGD(0.1),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, epochs=1, verbose=0)
    assert len(history.history["loss"]) == 1 and np.isfinite(history.history["loss"][0])
    assert model.get_noise_multiplier() == cfg.noise_multiplier
    with pytest.raises(RuntimeError, match="run out of privacy budget"):  # no step past those calibrated for
        model.fit(x, y, epochs=1, verbose=0)


def test_the_public_jax_privacy_module_exports_it():
    pytest.importorskip("jax_privacy", reason="jax-privacy is not installed (pip install 'reconrisk[jax-privacy]')")
    from reconrisk.integrations import jax_privacy

    assert jax_privacy.keras_config_for_rero is keras_config_for_rero


BASE = dict(epochs=1, batch_size=10, train_size=100, clip_norm=1.0, prior_size=10)


@pytest.mark.parametrize("change,needle", [
    (dict(target_rero=1.5), "target_rero must be in"),
    (dict(target_rero=0.1), "target must exceed"),
    (dict(prior_size=None), "exactly one of kappa"),
    (dict(kappa=0.1), "exactly one of kappa"),
    (dict(prior_size=1), "prior_size must be an integer >= 2"),
    (dict(epochs=0), "epochs must be an integer >= 1"),
    (dict(batch_size=101), r"batch_size must be an integer in \[1, 100\]"),
    (dict(train_size=2.5), "train_size must be an integer"),
    (dict(clip_norm=-1.0), "clip_norm must be > 0"),
    (dict(delta=0.0), "delta must be in"),
    (dict(rescale_to_unit_norm="yes"), "rescale_to_unit_norm must be True or False"),
    (dict(microbatch_size=20), r"microbatch_size must be an integer in \[1, 10\]"),
    (dict(seed=-1), "seed must be an integer"),
])
def test_invalid_arguments_are_refused_in_one_line(change, needle):
    kw = {"target_rero": 0.3, **BASE, **change}
    with pytest.raises(ReconRiskError, match=needle):
        keras_config_for_rero(**kw)
