"""Output-perturbed logistic regression: exact solver, implicit-function Jacobians, dFIL, and the GLM attack."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, special

from reconrisk._src.attacks.glm import find_violations, glm_attack, glm_attack_mse
from reconrisk.errors import ReconRiskError
from reconrisk._src.train import convex as C


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(3)
    n, d = 40, 5
    X = rng.uniform(size=(n, d))
    y = (X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n) > 0).astype(float)
    return X, y


@pytest.fixture(scope="module")
def digits01():
    return C.binary_digits(0, 1)


def test_newton_reaches_tolerance_and_matches_lbfgs(toy):
    X, y = toy
    fit = C.train_logreg(X, y, 0.05, bias=True)
    assert fit.grad_norm <= 1e-10
    Xt = C.augment(X, True)
    res = optimize.minimize(lambda t: C.objective(t, Xt, y, 0.05)[:2], np.zeros(6), jac=True, method="L-BFGS-B",
                            options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000})
    np.testing.assert_allclose(fit.theta, res.x, atol=1e-6)
    with pytest.raises(ReconRiskError, match="did not reach"):
        C.train_logreg(X, y, 0.05, max_iter=1)


@pytest.mark.parametrize("bias", [True, False])
def test_implicit_jacobian_matches_finite_differences(toy, bias):
    X, y = toy
    lam = 0.05
    fit = C.train_logreg(X, y, lam, bias=bias)
    i = 7
    J = C.logreg_input_jacobians(X, y, fit, [i])[0]
    h = 1e-5
    fd = np.zeros_like(J)
    for k in range(X.shape[1]):
        Xp, Xm = X.copy(), X.copy()
        Xp[i, k] += h
        Xm[i, k] -= h
        fd[:, k] = (C.train_logreg(Xp, y, lam, bias=bias).theta - C.train_logreg(Xm, y, lam, bias=bias).theta) / (2 * h)
    np.testing.assert_allclose(J, fd, atol=1e-8 * max(1.0, np.abs(J).max()) + 1e-9, rtol=1e-5)


def test_implicit_jacobian_matches_jax_jacobian_of_the_stationarity_solution(toy):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    try:
        import jax.numpy as jnp

        X, y = toy
        lam, i = 0.05, 3
        fit = C.train_logreg(X, y, lam, bias=True)
        n = X.shape[0]

        def theta_of(xi):
            # Newton iterations from θ*: differentiating through them gives ∂θ*/∂x_i (unrolled solver)
            Xi = jnp.asarray(X).at[i].set(xi)
            Xt = jnp.concatenate([jnp.ones((n, 1)), Xi], axis=1)
            th = jnp.asarray(fit.theta)
            for _ in range(4):
                s = jax.nn.sigmoid(Xt @ th)
                g = Xt.T @ (s - y) + n * lam * th
                H = (Xt * (s * (1 - s))[:, None]).T @ Xt + n * lam * jnp.eye(Xt.shape[1])
                th = th - jnp.linalg.solve(H, g)
            return th

        Jjax = np.asarray(jax.jacfwd(theta_of)(jnp.asarray(X[i])))
        np.testing.assert_allclose(C.logreg_input_jacobians(X, y, fit, [i])[0], Jjax, rtol=1e-7, atol=1e-12)
    finally:
        jax.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("bias", [True, False])
def test_frobenius_shortcut_equals_explicit_jacobians(toy, bias):
    X, y = toy
    fit = C.train_logreg(X, y, 0.02, bias=bias)
    explicit = np.sum(C.logreg_input_jacobians(X, y, fit) ** 2, axis=(1, 2))
    np.testing.assert_allclose(C.jacobian_sq_frobenius(X, y, fit), explicit, rtol=1e-10)


def test_dfil_definition_scaling_and_spectral(toy):
    X, y = toy
    fit = C.train_logreg(X, y, 0.02)
    a = C.logreg_dfil(X, y, 0.02, 1e-2, fit=fit)
    b = C.logreg_dfil(X, y, 0.02, 1e-5, fit=fit, formula="paper")
    J = C.logreg_input_jacobians(X, y, fit)
    np.testing.assert_allclose(a.eta_bar_sq, np.sum(J**2, axis=(1, 2)) / (1e-4 * X.shape[1]), rtol=1e-10)
    np.testing.assert_allclose(b.eta_bar_sq, a.eta_bar_sq * 1e6, rtol=1e-10)  # η̄² ∝ 1/σ²
    assert a.rdp_epsilon == pytest.approx(4 / (40 * 0.02 * 1e-2) ** 2)
    assert b.rdp_epsilon == pytest.approx(2 / (40 * 0.02 * 1e-5))
    spec = C.logreg_spectral_fil(X, y, fit, 1e-2)
    assert np.all(spec >= a.eta_bar_sq * (1 - 1e-9))  # η² ≥ η̄² = Tr/d
    assert np.all(spec <= a.eta_bar_sq * X.shape[1] * (1 + 1e-9))


def test_glm_attack_is_exact_without_noise(toy):
    X, y = toy
    lam = 0.02
    fit = C.train_logreg(X, y, lam, bias=True)
    for i in (0, 11, 39):
        others = np.delete(np.arange(X.shape[0]), i)
        x_hat, y_hat = glm_attack(fit.theta, X[others], y[others], lam, X.shape[0], return_label=True)
        np.testing.assert_allclose(x_hat, X[i], atol=1e-6)
        assert y_hat == pytest.approx(y[i], abs=1e-6)


def test_vectorised_attack_equals_the_adversarys_view_and_is_seeded(toy):
    X, y = toy
    lam, s, trials = 0.02, 1e-3, 64
    fit = C.train_logreg(X, y, lam, bias=True)
    res = glm_attack_mse(X, y, fit.theta, lam, s, trials=trials, seed=5, chunk=trials)
    draws = fit.theta + s * np.random.default_rng(5).standard_normal((trials, X.shape[1] + 1))
    for i in (2, 17):
        others = np.delete(np.arange(X.shape[0]), i)
        x_hat = glm_attack(draws, X[others], y[others], lam, X.shape[0])
        assert res.mse[i] == pytest.approx(np.mean((x_hat - X[i]) ** 2), rel=1e-6)
        np.testing.assert_allclose(res.mean_reconstruction[i], x_hat.mean(axis=0), rtol=1e-6, atol=1e-9)
    again = glm_attack_mse(X, y, fit.theta, lam, s, trials=trials, seed=5, chunk=7)
    np.testing.assert_allclose(again.mse, res.mse, rtol=1e-9)  # chunking does not change the numbers
    other = glm_attack_mse(X, y, fit.theta, lam, s, trials=trials, seed=6)
    assert not np.allclose(other.mse, res.mse)


def test_attack_mse_matches_the_linearised_closed_form(toy):
    # small σ: x̂_i − x_i ≈ −[−x_i, I] H δ / r_i with δ ~ N(0, σ²I), so E||x̂−x||²/d ≈ σ²||[−x_i, I]H||_F²/(r_i² d)
    X, y = toy
    lam, s = 0.02, 1e-7
    fit = C.train_logreg(X, y, lam, bias=True)
    Xt = C.augment(X, True)
    sig = special.expit(Xt @ fit.theta)
    H = (Xt * (sig * (1 - sig))[:, None]).T @ Xt + X.shape[0] * lam * np.eye(Xt.shape[1])
    res = glm_attack_mse(X, y, fit.theta, lam, s, trials=4000, seed=0)
    for i in range(0, 40, 5):
        P = np.hstack([-X[i][:, None], np.eye(X.shape[1])])
        pred = s**2 * np.sum((P @ H) ** 2) / ((sig[i] - y[i]) ** 2 * X.shape[1])
        assert res.mse[i] == pytest.approx(pred, rel=0.08)


def test_digits_attack_reconstructs_high_dfil_and_fails_on_low(digits01):
    X, y, _ = digits01
    lam, s = 1e-4, 1e-5
    fit = C.train_logreg(X, y, lam, bias=True)
    fil = C.logreg_dfil(X, y, lam, s, fit=fit)
    res = glm_attack_mse(X, y, fit.theta, lam, s, trials=300, seed=0)
    order = np.argsort(-fil.eta_bar_sq)
    assert np.max(res.mse[order[:8]]) < 1e-5  # near-perfect (RMS pixel error < 0.3%)
    assert np.median(res.mse[order[-8:]]) > 0.1  # fails
    v = find_violations(fil.bounds, res)
    assert v.among_bound_le_1 == 0  # every example with bound ≤ 1 respects it
    assert v.evaluated == X.shape[0]
    assert np.corrcoef(np.log(fil.bounds), np.log(res.mse))[0, 1] > 0.8


def test_violations_are_flagged_when_a_bound_is_beaten():
    from reconrisk._src.attacks.glm import GLMAttackResult

    mse = np.array([0.5, 2.0, 0.01])
    r = GLMAttackResult(mse, np.full(3, 1e-3), np.array([0.4, 0.0, 0.009]), np.zeros((3, 2)), np.zeros(3, int), 100, 1.0, 0)
    v = find_violations(np.array([1.0, 1.0, 0.1]), r)
    assert v.index.tolist() == [0, 2] and v.among_bound_le_1 == 2 and v.bias_dominated == 2 and v.significant == 2
    assert v.fraction == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda X, y: C.train_logreg(X, y, 0.0), "lam"),
        (lambda X, y: C.train_logreg(X, y + 2, 0.1), "y must hold labels"),
        (lambda X, y: C.train_logreg(X[:, 0], y, 0.1), "X must be"),
        (lambda X, y: C.train_logreg(X, y[:-1], 0.1), "y must have shape"),
        (lambda X, y: C.output_perturb(np.zeros(3), 0.1, 0), "rng"),
        (lambda X, y: C.output_perturb(np.zeros(3), -1.0, np.random.default_rng(0)), "noise_std"),
        (lambda X, y: C.logreg_dfil(X, y, 0.1, 0.0), "noise_std"),
        (lambda X, y: C.logreg_dfil(X, y, 0.1, 1.0, formula="x"), "formula"),
        (lambda X, y: glm_attack(np.zeros(3), X, y, 0.1, X.shape[0] + 1), "theta_hat"),
        (lambda X, y: glm_attack(np.zeros(6), X, y, 0.1, X.shape[0]), "n"),
        (lambda X, y: glm_attack_mse(X, y, np.zeros(6), 0.1, 1.0, trials=0), "trials"),
        (lambda X, y: C.binary_digits(3, 3), "different"),
    ],
)
def test_bad_input(toy, call, word):
    X, y = toy
    with pytest.raises(ReconRiskError, match=word):
        call(X, y)
