"""Seed 002 closed-form attacks (Thm 1, Thm 8) on exactly trained convex models."""

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconrisk._src.attacks.closed_form import (
    closed_form_experiment,
    glm_reconstruct,
    linreg_reconstruct_no_intercept,
    noise_curve,
)
from reconrisk.errors import ReconRiskError
from reconrisk._src.train.convex import augment, train_linear


@pytest.mark.parametrize("model", ["ridge", "logistic"])
@pytest.mark.parametrize("n, dim", [(20, 3), (50, 5), (200, 20)])
@pytest.mark.parametrize("lam", [1e-3, 0.1, 1.0])
def test_theorem1_recovers_point_and_label_on_exact_optima(model, n, dim, lam):
    r = closed_form_experiment(model, n=n, dim=dim, lam=lam, seed=1)
    assert r["identifiable"] and r["grad_norm"] < 1e-10
    assert r["relative_error"] <= 1e-8
    assert r["label_recovered"] is True


@pytest.mark.parametrize("n, dim", [(20, 3), (50, 5), (200, 20)])
def test_theorem8_one_candidate_is_the_target(n, dim):
    r = closed_form_experiment("linear", n=n, dim=dim, seed=2)
    assert r["candidates"] == 2 and r["relative_error"] <= 1e-8
    assert r["label_recovered"] is None  # the label is an input of Thm 8


@given(st.integers(0, 10_000), st.integers(8, 60), st.integers(1, 6), st.floats(1e-3, 2.0))
def test_logistic_recovery_property(seed, n, dim, lam):
    """≤ 1e-8 unless the target is fitted so confidently that its residual h(θᵀx̃) − y (the attack's divisor)
    is tiny: then the precision is rounding/residual, as the first-order analysis predicts (seen: 1e-13/2e-10)."""
    r = closed_form_experiment("logistic", n=n, dim=dim, lam=lam, seed=seed)
    assert r["label_recovered"] is True
    assert r["relative_error"] <= max(1e-8, 1e-11 / max(r["target_residual"], 1e-300))


def test_theorem1_and_theorem8_agree_on_least_squares_with_intercept():
    """Independent cross-check: Thm 1 (identity link, λ = 0) and Thm 8 applied to x̃ = [1, x] with y known."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((30, 4))
    y = X @ rng.standard_normal(4) + 1.0 + 0.3 * rng.standard_normal(30)
    theta = train_linear(X, y, 0.0, bias=True).theta
    a = glm_reconstruct(theta, X[:-1], y[:-1], 0.0, 30, "linear")
    b = linreg_reconstruct_no_intercept(theta, augment(X[:-1], True), y[:-1], y[-1])
    best = b.candidates[np.argmin(np.linalg.norm(b.candidates[:, 1:] - a.x_hat, axis=1))]
    np.testing.assert_allclose(best, np.concatenate([[1.0], X[-1]]), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.x_hat, X[-1], rtol=1e-9, atol=1e-12)
    assert a.y_hat == pytest.approx(y[-1], rel=1e-9)


def test_zero_residual_is_reported_not_divided():
    """A target lying exactly on the fit of the others leaves no trace: 'not identifiable', no inf/nan warnings."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((25, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.standard_normal(25)
    th_others = np.linalg.lstsq(X[:-1], y[:-1], rcond=None)[0]
    y[-1] = X[-1] @ th_others  # residual 0: the optimum does not move
    theta = train_linear(X, y, 0.0, bias=False).theta
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = linreg_reconstruct_no_intercept(theta, X[:-1], y[:-1], y[-1])
    assert not r.identifiable and r.x_hat is None and "not identifiable" in r.reason
    # the same for Thm 1 with an intercept
    Xt = augment(X, True)
    th_o = np.linalg.lstsq(Xt[:-1], y[:-1], rcond=None)[0]
    y[-1] = Xt[-1] @ th_o
    theta = train_linear(X, y, 0.0, bias=True).theta
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = glm_reconstruct(theta, X[:-1], y[:-1], 0.0, 25, "linear")
    assert not r.identifiable and r.to_dict()["candidates"] == 0


@pytest.mark.parametrize("model", ["linear", "ridge", "logistic"])
def test_noise_degrades_smoothly(model):
    """Small output-perturbation noise s: MSE grows like s² (a first-order effect), monotonically."""
    curve = noise_curve(model, [1e-5, 1e-4, 1e-3], trials=200, seed=0)
    m = np.array([c["mse_mean"] for c in curve])
    assert np.all(np.diff(m) > 0)
    ratio = m / np.array([1e-10, 1e-8, 1e-6])
    assert ratio.max() / ratio.min() < 1.5
    # Thm 8's quadratic may lose its real roots when θ is perturbed (reported, not divided by): rarely at small s
    assert all(c["not_identifiable"] <= 0.05 * c["trials"] for c in curve)
    assert curve[0]["not_identifiable"] == 0


def test_label_recovery_falls_with_large_noise():
    r = closed_form_experiment("logistic", noise_std=1.0, trials=200, seed=0)
    lr = r["noise"]["label_recovery"]
    assert lr["ci_high"] < 0.99  # no longer exact
    r0 = closed_form_experiment("logistic", noise_std=1e-6, trials=50, seed=0)
    assert r0["noise"]["label_recovery"]["rate"] == 1.0


def test_same_seed_same_numbers():
    a = closed_form_experiment("ridge", noise_std=0.01, trials=20, seed=4)
    b = closed_form_experiment("ridge", noise_std=0.01, trials=20, seed=4)
    assert a == b


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(model="poisson"), "model"),
        (dict(model="linear", lam=0.1), "lam"),
        (dict(model="ridge", lam=0.0), "lam"),
        (dict(model="ridge", n=2), "n"),
        (dict(model="linear", n=5, dim=5), "n"),
        (dict(model="logistic", noise_std=-1.0), "noise_std"),
        (dict(model="logistic", trials=0), "trials"),
        (dict(model="logistic", dim=0), "dim"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, word):
    model = kwargs.pop("model")
    with pytest.raises(ReconRiskError, match=word):
        closed_form_experiment(model, **kwargs)


def test_bad_arrays():
    with pytest.raises(ReconRiskError, match="theta"):
        linreg_reconstruct_no_intercept(np.zeros(2), np.ones((4, 3)), np.ones(4), 1.0)
    with pytest.raises(ReconRiskError, match="theta"):
        glm_reconstruct(np.zeros((2, 4)), np.ones((4, 3)), np.ones(4), 0.1, 5, "linear")
    with pytest.raises(ReconRiskError, match="y_others"):
        glm_reconstruct(np.zeros(4), np.ones((4, 3)), np.full(4, 0.5), 0.1, 5, "logistic")
    with pytest.raises(ReconRiskError, match="lam"):
        train_linear(np.ones((4, 2)), np.ones(4), -1.0)
    with pytest.raises(ReconRiskError, match="not unique"):
        train_linear(np.ones((4, 2)), np.ones(4), 0.0, bias=False)
