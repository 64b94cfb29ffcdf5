"""The GLM reconstruction attack on output-perturbed logistic regression (Guo, Karrer, Chaudhuri & van der Maaten 2022, §7.2, after Balle et al. 2022).

numpy only. The informed adversary knows the release ``θ̂ = θ* + N(0, σ²I)``,
the other n − 1 training points, λ and n (and, in Guo et al. 2022, the target's
label, which this attack does not need). With bias features ``x̃ = [1, x]``
the first-order condition of the training objective
``Σ_j (sigmoid(θᵀx̃_j) − y_j) x̃_j + nλθ = 0`` gives

    b := Σ_{j≠i} (sigmoid(θ̂ᵀx̃_j) − y_j) x̃_j + nλθ̂ = −(s_i − y_i) x̃_i      (exactly, if θ̂ = θ*)

and since x̃_i's first coordinate is 1, ``x̂_i = b[1:] / b[0]``. Optionally
``ŷ_i = sigmoid(θ̂ᵀx̃̂_i) + b[0]`` estimates the label.

The attack is exact at σ = 0 and biased for σ > 0 (the division by b[0] is
non-linear), so it may beat the unbiased-attack bounds of Theorems 1–2; see
:class:`GLMAttackResult` for the per-example bias estimate used to explain
such "violations".

Vectorised evaluation (:func:`glm_attack_mse`): with
``S(θ̂) = Σ_{all j} (sigmoid(θ̂ᵀx̃_j) − y_j) x̃_j + nλθ̂`` — one (n × p) product
per trial batch — the adversary's sum over the others is ``S − ρ_i x̃_i``
with ``ρ_i = sigmoid(θ̂ᵀx̃_i) − y_i``, and the reconstruction error is

    x̂_i − x_i = (S[1:] − S[0] x_i) / (S[0] − ρ_i),

which avoids subtracting two nearly equal reconstructions when the attack is
near-perfect. This uses x_i only to *score* the attack; the tests check it
against :func:`glm_attack` fed the other n − 1 points alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from .. import _validate as v
from ..errors import ReconRiskError


#: Canonical-link GLM families of Balle, Cherubin & Hayes 2022, Thm 1: the mean function h = b′.
FAMILIES = ("logistic", "linear")


def mean_function(family: str):
    """h(t): sigmoid for logistic regression, the identity for linear/ridge regression (Balle, Cherubin & Hayes 2022, Thm 1)."""
    return special.expit if family == "logistic" else (lambda t: t)


def _arrays(X, y, name_x="X_others", name_y="y_others", family: str = "logistic"):
    try:
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
    except (TypeError, ValueError):
        raise ReconRiskError(f"{name_x} must be an (m, d) array and {name_y} an (m,) array of labels") from None
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ReconRiskError(f"{name_x} must be (m, d) and {name_y} (m,); found {X.shape} and {y.shape}")
    if not (np.isfinite(X).all() and np.isfinite(y).all()):
        raise ReconRiskError(f"{name_x} and {name_y} must be finite")
    if family == "logistic" and not np.isin(y, (0.0, 1.0)).all():
        raise ReconRiskError(f"{name_y} must hold labels 0 or 1")
    return X, y


def _first_order(theta_hat, X, y, lam: float, n: int, family: str):
    """(θ̂ as (R, p), b = Σ_{j≠i}(h(θ̂ᵀx̃_j) − y_j)x̃_j + nλθ̂ as (R, p), was-1-d) — the known side of Thm 1."""
    n = v.integer("n", n, minimum=1)
    if n != X.shape[0] + 1:
        raise ReconRiskError(f"n must be the training-set size, len(X_others) + 1 = {X.shape[0] + 1}; found {n}")
    th = np.asarray(theta_hat, dtype=float)
    single = th.ndim == 1
    th = np.atleast_2d(th)
    if th.shape[1] != X.shape[1] + 1:
        raise ReconRiskError(f"theta_hat must have d + 1 = {X.shape[1] + 1} entries (bias first); found {th.shape[-1]}")
    Xt = np.concatenate([np.ones((X.shape[0], 1)), X], axis=1)
    resid = mean_function(family)(th @ Xt.T) - y[None, :]  # (R, m)
    return th, resid @ Xt + n * lam * th, single


def first_order_residual(theta_hat, X_others, y_others, lam: float, n: int, family: str = "logistic"):
    """b = −(h(θᵀx̃_i) − y_i)x̃_i from the known side, (p,) or (R, p), and its cancellation scale.

    The scale ``Σ_{j≠i}|h(θ̂ᵀx̃_j) − y_j|·||x̃_j|| + nλ||θ̂||`` is what b was
    computed from: |b[0]| ≤ 1e-12 × scale means the target's residual is 0 to
    rounding, and x is not identifiable.
    """
    family = v.choice("family", family, FAMILIES)
    X, y = _arrays(X_others, y_others, family=family)
    lam = v.real("lam", lam)
    th, b, single = _first_order(theta_hat, X, y, lam, n, family)
    Xt = np.concatenate([np.ones((X.shape[0], 1)), X], axis=1)
    resid = np.abs(mean_function(family)(th @ Xt.T) - y[None, :])
    scale = resid @ np.linalg.norm(Xt, axis=1) + n * abs(lam) * np.linalg.norm(th, axis=1)
    return (b[0], float(scale[0])) if single else (b, scale)


def glm_attack(theta_hat, X_others, y_others, lam: float, n: int, *, return_label: bool = False,
               family: str = "logistic"):
    """Reconstruct the missing training input from a released bias-augmented θ̂ and the other n − 1 points.

    Balle, Cherubin & Hayes 2022, Thm 1 for a canonical-link GLM with intercept trained on
    ``Σ_j [b(θᵀx̃_j) − y_j θᵀx̃_j] + (nλ/2)||θ||²`` (the regulariser covers the
    intercept): ``family="logistic"`` (h = sigmoid, y ∈ {0, 1}) or
    ``"linear"`` (h = identity: least squares, ridge for λ > 0; y real).
    B = −nλθ − Σ_{j≠i} (h(θᵀx̃_j) − y_j) x̃_j = (h(θᵀx̃_i) − y_i) x̃_i, so
    x̂ = B[1:]/B[0] and ŷ = h(θᵀx̃̂) − B[0] (the code keeps b = −B).

    ``theta_hat``: (d + 1,) or (R, d + 1) releases (bias first); ``lam`` ≥ 0
    (λ = 0 needs a unique optimum: data in general position).
    Returns x̂ with shape (d,) or (R, d) (``inf``/``nan`` where ``b[0] = 0``:
    the target's residual is 0 and x is not identifiable — see
    :func:`reconrisk._src.attacks.closed_form.glm_reconstruct` for the guarded
    form), and ŷ too if ``return_label``.
    """
    family = v.choice("family", family, FAMILIES)
    X, y = _arrays(X_others, y_others, family=family)
    lam = v.real("lam", lam)
    if lam < 0 or np.isinf(lam):
        raise ReconRiskError(f"lam must be >= 0 and finite; found {lam}")
    th, b, single = _first_order(theta_hat, X, y, lam, n, family)
    h = mean_function(family)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x_hat = b[:, 1:] / b[:, :1]
        y_hat = h(np.sum(th[:, 1:] * x_hat, axis=1) + th[:, 0]) + b[:, 0]
    if single:
        x_hat, y_hat = x_hat[0], y_hat[0]
    return (x_hat, y_hat) if return_label else x_hat


@dataclass(frozen=True)
class GLMAttackResult:
    """Per-example outcome of the GLM attack over ``trials`` independent output-perturbation draws.

    ``mse``: mean over valid trials of ``||x̂_i − x_i||²/d`` (NaN if every
    trial failed); ``mse_se``: its standard error; ``bias_sq``: the squared
    bias per coordinate ``||mean(x̂_i) − x_i||²/d`` (trial-mean estimate, with
    Monte-Carlo error of order mse/trials); ``mean_reconstruction``: the
    trial mean of x̂_i (n, d); ``failed``: trials with ``b[0] = 0`` or a
    non-finite x̂ (dropped, as in the authors' code).
    """

    mse: np.ndarray
    mse_se: np.ndarray
    bias_sq: np.ndarray
    mean_reconstruction: np.ndarray
    failed: np.ndarray
    trials: int
    noise_std: float
    seed: int | None

    def to_dict(self) -> dict:
        ok = np.isfinite(self.mse)
        return {"trials": self.trials, "noise_std": self.noise_std, "seed": self.seed,
                "examples": int(self.mse.size), "failed_examples": int((~ok).sum()),
                "mse": {"min": float(np.nanmin(self.mse)), "median": float(np.nanmedian(self.mse)),
                        "max": float(np.nanmax(self.mse))}}


def glm_attack_mse(X, y, theta_star, lam: float, noise_std: float, *, trials: int = 10_000, seed: int = 0,
                   chunk: int | None = None, progress=None) -> GLMAttackResult:
    """Expected reconstruction MSE of the GLM attack for every training example (Guo et al. 2022, Fig. 3).

    ``theta_star``: the exact bias-augmented minimiser on (X, y) (see
    :func:`reconrisk._src.train.convex.train_logreg` with ``bias=True``). Draws
    ``trials`` releases ``θ* + N(0, σ²I)`` from ``np.random.default_rng(seed)``
    and attacks every example with each, in chunks of trials (memory
    ``O(n · chunk · d)``). ``progress(k)`` is called after each k trials.
    """
    X, y = _arrays(X, y, "X", "y")
    lam = v.positive("lam", lam)
    s = v.positive("noise_std", noise_std)
    trials = v.integer("trials", trials, minimum=1)
    seed = v.integer("seed", seed, minimum=0)
    theta = np.asarray(theta_star, dtype=float)
    n, d = X.shape
    if theta.shape != (d + 1,):
        raise ReconRiskError(f"theta_star must have d + 1 = {d + 1} entries (bias first); found shape {theta.shape}")
    if chunk is None:
        chunk = max(1, min(trials, int(2e7 // max(1, n * d))))
    chunk = v.integer("chunk", chunk, minimum=1)
    rng = np.random.default_rng(seed)
    Xt = np.concatenate([np.ones((n, 1)), X], axis=1)
    sum_sq = np.zeros(n)
    sum_sq2 = np.zeros(n)
    sum_x = np.zeros((n, d))
    count = np.zeros(n)
    done = 0
    while done < trials:
        r = min(chunk, trials - done)
        th = theta + s * rng.standard_normal((r, d + 1))  # (r, p)
        rho = special.expit(th @ Xt.T) - y[None, :]  # (r, n)
        S = rho @ Xt + n * lam * th  # (r, p)
        b0 = S[:, :1] - rho  # (r, n): the adversary's b[0] for target i
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            err = (S[:, None, 1:] - S[:, None, :1] * X[None, :, :]) / b0[:, :, None]  # (r, n, d) = x̂ − x
            sq = np.mean(err**2, axis=2)  # (r, n)
        ok = np.isfinite(sq) & (b0 != 0)
        sq_ok = np.where(ok, sq, 0.0)
        sum_sq += sq_ok.sum(axis=0)
        sum_sq2 += (sq_ok**2).sum(axis=0)
        sum_x += np.where(ok[:, :, None], err, 0.0).sum(axis=0)
        count += ok.sum(axis=0)
        done += r
        if progress is not None:
            progress(r)
    with np.errstate(divide="ignore", invalid="ignore"):
        mse = sum_sq / count
        var = np.maximum(sum_sq2 / count - mse**2, 0.0)
        se = np.sqrt(var / np.maximum(count - 1, 1))
        mean_err = sum_x / count[:, None]
    bias_sq = np.mean(mean_err**2, axis=1)
    return GLMAttackResult(
        mse=mse,
        mse_se=se,
        bias_sq=bias_sq,
        mean_reconstruction=X + mean_err,
        failed=(trials - count).astype(int),
        trials=trials,
        noise_std=s,
        seed=seed,
    )


@dataclass(frozen=True)
class Violations:
    """Examples whose realised attack MSE falls below the predicted unbiased bound ``1/η̄²``.

    ``significant``: below it by more than 3 Monte-Carlo standard errors.
    ``among_bound_le_1``: violations among examples whose bound is ≤ 1 (the
    paper's check: all of them should respect it). ``bias_dominated``: the
    violations where the attack's squared bias per coordinate is at least
    the variance part of its MSE — i.e. where Theorem 2's unbiased form does
    not apply and its general (biased) form is the relevant one.
    """

    index: np.ndarray
    fraction: float
    significant: int
    among_bound_le_1: int
    bias_dominated: int
    evaluated: int

    def to_dict(self) -> dict:
        return {"count": int(self.index.size), "fraction": self.fraction, "significant": self.significant,
                "among_bound_le_1": self.among_bound_le_1, "bias_dominated": self.bias_dominated,
                "evaluated": self.evaluated}


def find_violations(bounds, result: GLMAttackResult) -> Violations:
    """Compare per-example bounds (e.g. ``1/η̄²``) with the realised MSE of :func:`glm_attack_mse`."""
    b = np.asarray(bounds, dtype=float)
    if b.shape != result.mse.shape:
        raise ReconRiskError(f"bounds must have shape {result.mse.shape}; found {b.shape}")
    ok = np.isfinite(result.mse)
    viol = ok & (result.mse < b)
    sig = viol & (result.mse + 3 * result.mse_se < b)
    variance = np.maximum(result.mse - result.bias_sq, 0.0)
    biased = viol & (result.bias_sq >= variance)
    return Violations(
        index=np.flatnonzero(viol),
        fraction=float(viol.sum() / max(ok.sum(), 1)),
        significant=int(sig.sum()),
        among_bound_le_1=int((viol & (b <= 1.0)).sum()),
        bias_dominated=int(biased.sum()),
        evaluated=int(ok.sum()),
    )
