"""Seed 002 RecoNN on the digits: vmapped shadow training, scaler, NN-oracle evaluation, with and without DP."""

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("optax")

from reconrisk._src.attacks.reconstructor import ParamScaler, evaluate, run_reconn, train_reconstructor  # noqa: E402
from reconrisk._src.data import load_digits  # noqa: E402
from reconrisk.errors import ReconRiskError  # noqa: E402
from reconrisk._src.release import Release  # noqa: E402
from reconrisk._src.train.models import get_model  # noqa: E402
from reconrisk._src.train.shadow import (  # noqa: E402
    ShadowConfig,
    make_splits,
    train_shadow_models,
    train_shadow_models_sequential,
)

STEPS = 30


@pytest.fixture(scope="module")
def digits():
    return load_digits()


@pytest.fixture(scope="module")
def experiment(digits):
    # small CI run: 256 shadow models, 64 released models, no DP and DP-GD at epsilon = 1 (delta = 1e-5)
    return run_reconn(digits, fixed_size=50, shadow_models=256, targets=64, epsilons=(None, 1.0), steps=STEPS,
                      hidden=(128, 128), epochs=60, seed=0)


def test_without_dp_the_attack_beats_chance_with_an_interval(experiment):
    s = experiment.settings[0]
    assert s.epsilon is None
    d = s.to_dict()
    chance = d["chance"]
    assert chance == pytest.approx(1 / 51)
    # "well above" 1/(|D-|+1): the whole 95% Clopper-Pearson interval lies above 10x chance
    assert d["nn_oracle_success"]["ci_low"] > 10 * chance
    assert d["nn_oracle_success"]["ci_low"] <= d["nn_oracle_success"]["rate"] <= d["nn_oracle_success"]["ci_high"]
    # and the reconstructions are closer to their targets than the nearest known point, on average
    assert d["mse"]["mean"] < d["oracle_mse"]["mean"]
    assert s.released_accuracy > 0.5  # the released models are useful classifiers


def test_at_small_epsilon_the_attack_falls_to_chance(experiment):
    s = experiment.settings[1]
    assert s.epsilon == 1.0 and s.noise_multiplier > 1
    nn = s.to_dict()["nn_oracle_success"]
    # chance lies inside (or above) the interval: no evidence of success beyond the blind guess
    assert nn["ci_low"] <= s.evaluation.chance
    assert nn["rate"] < experiment.settings[0].to_dict()["nn_oracle_success"]["ci_low"]


def test_vmapped_training_equals_the_sequential_loop_and_is_seeded(digits):
    x, y = digits.x, digits.y
    model = get_model("mlp", digits.image_shape)
    cfg = ShadowConfig(steps=STEPS, release=Release(2.0, 1.0, STEPS, clip_norm=1.0))
    # chunk 128 padded: the program the experiment fixture compiled (DP noise and clip are traced arguments)
    run = lambda seed: train_shadow_models(model, x[:50], y[:50], x[60:66], y[60:66], cfg, seed=seed,  # noqa: E731
                                           chunk=128, pad_chunks=True)
    a = run(3)
    b = train_shadow_models_sequential(model, x[:50], y[:50], x[60:66], y[60:66], cfg, seed=3)
    np.testing.assert_allclose(a, b, atol=2e-5)  # model i's key does not depend on the batching of models
    np.testing.assert_array_equal(a, run(3))  # same seed, same numbers
    assert np.abs(run(4) - a).max() > 1e-3  # another seed, other DP noise


def test_known_init_makes_the_target_the_only_difference(digits):
    x, y = digits.x, digits.y
    model = get_model("mlp", digits.image_shape)
    cfg = ShadowConfig(steps=STEPS)
    a = train_shadow_models(model, x[:50], y[:50], x[[60, 60, 61]], y[[60, 60, 61]], cfg, seed=0, chunk=128,
                            pad_chunks=True)
    assert np.array_equal(a[0], a[1])  # no DP, same init: same target -> same model, whatever the key
    assert np.abs(a[0] - a[2]).max() > 0


def test_scaler_is_fitted_on_shadows_and_survives_constant_coordinates():
    rng = np.random.default_rng(0)
    th = rng.normal(3.0, 2.0, (40, 5))
    th[:, 2] = 7.0
    sc = ParamScaler.fit(th)
    z = sc.transform(th)
    np.testing.assert_allclose(z.mean(0), 0, atol=1e-6)
    np.testing.assert_allclose(z.std(0)[[0, 1, 3, 4]], 1, atol=1e-5)
    assert np.all(z[:, 2] == 0)
    with pytest.raises(ReconRiskError, match="thetas"):
        sc.transform(th[:, :4])


def test_evaluate_counts_nearest_neighbour_success_exactly():
    fixed = np.array([[0.0, 0.0], [1.0, 1.0]])
    targets = np.array([[0.2, 0.0], [0.9, 0.9], [0.5, 0.5]])
    recon = np.array([[0.2, 0.05], [1.0, 1.0], [0.5, 0.5]])  # near target | equals a fixed point | exact
    ev = evaluate(recon, targets, fixed)
    assert ev.nn_success.tolist() == [True, False, True]
    np.testing.assert_allclose(ev.oracle_mse, [0.02, 0.01, 0.25])
    assert ev.to_dict()["nn_oracle_success"]["successes"] == 2


def test_reconstructor_is_deterministic_in_its_seed(digits):
    # the experiment fixture's shapes (256 shadow models of the digits MLP, 64-pixel targets, hidden (128, 128),
    # 60 epochs): its compiled training program is reused (a program of its own cost ~3 s of CPU; these three
    # trainings, ~0.5 s)
    rng = np.random.default_rng(1)
    p = get_model("mlp", digits.image_shape).num_params
    th, z = rng.normal(size=(256, p)), rng.random((256, digits.dim))
    a = train_reconstructor(th, z, hidden=(128, 128), epochs=60, seed=5).predict(th[:3])
    b = train_reconstructor(th, z, hidden=(128, 128), epochs=60, seed=5).predict(th[:3])
    c = train_reconstructor(th, z, hidden=(128, 128), epochs=60, seed=6).predict(th[:3])
    np.testing.assert_array_equal(a, b)
    assert np.abs(a - c).max() > 0


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda d: make_splits(len(d), 1000, 1000, 100), "fixed_size"),
        (lambda d: ShadowConfig(steps=0), "steps"),
        (lambda d: ShadowConfig(steps=5, release=Release(1.0, 0.5, 5)), "sample_rate"),
        (lambda d: ShadowConfig(steps=5, release=Release(1.0, 1.0, 6)), "steps"),
        (lambda d: run_reconn(d, epsilons=(-1.0,)), "epsilon"),
        (lambda d: run_reconn("digits"), "dataset"),
        (lambda d: train_shadow_models(get_model("mlp", d.image_shape), d.x[:5, :10], d.y[:5], d.x[:2], d.y[:2],
                                       ShadowConfig()), "x_fixed"),
        (lambda d: train_reconstructor(np.ones((4, 3)), np.ones((5, 2))), "targets"),
        (lambda d: evaluate(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 4))), "fixed"),
    ],
)
def test_bad_input_names_the_parameter(digits, call, word):
    with pytest.raises(ReconRiskError, match=word):
        call(digits)


def test_cli_reconn_writes_grid_and_json(experiment, tmp_path, capsys):
    """The CLI on the fixture's sizes (its compiled programs are reused): files, JSON keys, chance level."""
    import json

    from reconrisk._src.cli import main

    args = ["informed", "reconn", "--shadow-models", "256", "--fixed-size", "50", "--targets", "64", "--steps",
            str(STEPS), "--epochs", "60", "--hidden", "128,128", "--out", str(tmp_path), "--json"]
    assert main(args) == 0
    d = json.loads(capsys.readouterr().out)
    assert (tmp_path / "reconn_grid.png").stat().st_size > 0 and (tmp_path / "reconn.json").is_file()
    s = d["settings"][0]
    assert s["epsilon"] is None and s["chance"] == pytest.approx(1 / 51)
    assert {"mse", "oracle_mse", "nn_oracle_success", "below_oracle_mse"} <= set(s)
    # same seed, same numbers as the library call
    assert s["nn_oracle_success"] == experiment.settings[0].to_dict()["nn_oracle_success"]
