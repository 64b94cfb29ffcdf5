"""Closed-form reconstruction attacks on exactly trained convex models (Balle, Cherubin & Hayes 2022, §III; spec_002 §2).

numpy only. If θ is the unique optimum of a strictly convex, differentiable
ERM objective, its first-order condition (Balle, Cherubin & Hayes 2022, Eq. 1) gives the
missing point's gradient from the known ones:

    ∇_θ ℓ(θ; z) = −∇_θ [ Σ_{z′∈D⁻} ℓ(θ; z′) + regulariser ](θ).

* **GLMs with intercept** (Thm 1; linear, ridge and logistic regression):
  :func:`glm_reconstruct` recovers x and the label y. The algebra lives once,
  in :func:`reconrisk._src.attacks.glm.glm_attack` (Guo, Karrer, Chaudhuri & van der Maaten's (2022) attack is the
  logistic case); here it is guarded: when the target's residual
  h(θᵀx̃) − y is 0 to rounding (|B₁| ≤ 1e-12 × the scale of the sum it was
  computed from) x is **not identifiable** and no division happens.
* **Linear regression without intercept, label known** (Thm 8):
  :func:`linreg_reconstruct_no_intercept` returns the two roots of
  c²(vᵀθ) − c·y − 1 = 0, x̂ = c·v with v = X⁻ᵀ(Y⁻ − X⁻θ).

:func:`closed_form_experiment` generates a synthetic problem, trains the
victim exactly (:func:`reconrisk._src.train.convex.train_linear`,
:func:`~reconrisk._src.train.convex.train_logreg`), optionally perturbs θ with
N(0, s²I) (output perturbation), and reports the relative error and the
label recovery; with ``trials`` > 1 also the reconstruction MSE over noise
draws, whose dependence on s :func:`noise_curve` tabulates.

Objective scaling (spec_002 §2.2 "pitfalls"): Σ_j [b(θᵀx̃_j) − y_jθᵀx̃_j] +
(nλ/2)||θ||² with the penalty on the intercept too, y ∈ {0, 1} — the
convention of ``train/convex.py``. The paper's exact scaling was lost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from .. import _validate as v
from ..errors import ReconRiskError
from ..metrics import SuccessRate
from ..train.convex import train_linear, train_logreg
from .glm import FAMILIES, first_order_residual, glm_attack

MODELS = ("linear", "ridge", "logistic")
#: |B₁| below this multiple of its cancellation scale means "target residual is 0": not identifiable.
IDENTIFIABILITY_RTOL = 1e-12


@dataclass(frozen=True)
class Reconstruction:
    """The attack's answer: the best candidate, every candidate, or why there is none."""

    x_hat: np.ndarray | None
    y_hat: float | None
    candidates: np.ndarray = field(repr=False)  # (k, d), k = 0 when not identifiable
    identifiable: bool = True
    reason: str | None = None

    def to_dict(self) -> dict:
        return {"identifiable": self.identifiable, "reason": self.reason, "candidates": int(self.candidates.shape[0]),
                "x_hat": None if self.x_hat is None else self.x_hat.tolist(), "y_hat": self.y_hat}


def _not_identifiable(d: int, reason: str) -> Reconstruction:
    return Reconstruction(None, None, np.empty((0, d)), False, reason)


def glm_reconstruct(theta, X_others, y_others, lam: float, n: int, family: str = "logistic") -> Reconstruction:
    """Balle, Cherubin & Hayes 2022, Thm 1 on one release θ (bias first): x̂ = B[1:]/B₁, ŷ = h(θᵀx̃̂) − B₁, guarded.

    ``family``: ``"logistic"`` (ŷ is also rounded to {0, 1} in ``y_hat``;
    the raw value is h(θᵀx̃̂) − B₁ ∈ (−1, 2)) or ``"linear"`` (least squares / ridge).
    """
    family = v.choice("family", family, FAMILIES)
    th = np.asarray(theta, dtype=float)
    if th.ndim != 1:
        raise ReconRiskError(f"theta must be one release, a (d + 1,) vector; found shape {th.shape}")
    b, scale = first_order_residual(th, X_others, y_others, lam, n, family)
    d = th.size - 1
    if not np.isfinite(b).all():
        return _not_identifiable(d, "the first-order residual is not finite")
    if abs(b[0]) <= IDENTIFIABILITY_RTOL * max(scale, 1e-300):
        return _not_identifiable(d, "the target's residual h(theta'x) - y is 0: x is not identifiable")
    x_hat, y_raw = glm_attack(th, X_others, y_others, lam, n, return_label=True, family=family)
    y_hat = float(y_raw)
    if family == "logistic":
        y_hat = float(y_raw >= 0.5)
    return Reconstruction(x_hat, y_hat, x_hat[None, :])


def linreg_reconstruct_no_intercept(theta, X_others, y_others, y_target: float) -> Reconstruction:
    """Balle, Cherubin & Hayes 2022, Thm 8: least squares without intercept, target label known → two candidates for x.

    v = X⁻ᵀ(Y⁻ − X⁻θ) = (xᵀθ − y)·x, so x = c·v with c = 1/(xᵀθ − y), and
    c²(vᵀθ) − c·y − 1 = 0. Roots are taken in the cancellation-free form
    q = (y + sign(y)√(y² + 4vᵀθ))/2, c₁ = q/(vᵀθ), c₂ = −1/q. Special cases:
    v = 0 (target fitted exactly: not identifiable); vᵀθ = 0 (one root
    c = −1/y); y² + 4vᵀθ < 0 (complex roots: θ is not such an optimum).
    ``x_hat`` is c₁·v (the root the data cannot tell apart from c₂·v; both are in ``candidates``).
    """
    try:
        X = np.asarray(X_others, dtype=float)
        Y = np.asarray(y_others, dtype=float)
        th = np.asarray(theta, dtype=float)
    except (TypeError, ValueError):
        raise ReconRiskError("theta, X_others and y_others must be arrays of numbers") from None
    if X.ndim != 2 or Y.shape != (X.shape[0],):
        raise ReconRiskError(f"X_others must be (m, d) and y_others (m,); found {X.shape} and {Y.shape}")
    if th.shape != (X.shape[1],):
        raise ReconRiskError(f"theta must have d = {X.shape[1]} entries (no intercept); found shape {th.shape}")
    if not (np.isfinite(X).all() and np.isfinite(Y).all() and np.isfinite(th).all()):
        raise ReconRiskError("theta, X_others and y_others must be finite")
    y = v.real("y_target", y_target)
    d = th.size
    r = Y - X @ th
    vec = X.T @ r
    scale = float(np.abs(r) @ np.linalg.norm(X, axis=1))
    if np.linalg.norm(vec) <= IDENTIFIABILITY_RTOL * max(scale, 1e-300):
        return _not_identifiable(d, "the target's residual x'theta - y is 0: x is not identifiable")
    a = float(vec @ th)
    a_scale = float(np.abs(vec) @ np.abs(th))
    if abs(a) <= IDENTIFIABILITY_RTOL * max(a_scale, 1e-300):
        if y == 0:
            return _not_identifiable(d, "v'theta = 0 and y = 0: the quadratic has no root")
        c = np.array([-1.0 / y])
    else:
        disc = y * y + 4 * a
        if disc < 0:
            return _not_identifiable(d, "complex roots: theta is not the least-squares optimum of such data")
        q = 0.5 * (y + math.copysign(math.sqrt(disc), y if y != 0 else 1.0))
        c = np.array([q / a, -1.0 / q])
    cands = c[:, None] * vec[None, :]
    return Reconstruction(cands[0], y, cands)


# ----------------------------------------------------------------------------------------
# synthetic experiments
# ----------------------------------------------------------------------------------------
def _problem(model: str, n: int, dim: int, rng: np.random.Generator):
    X = rng.standard_normal((n, dim))
    w = rng.standard_normal(dim) / math.sqrt(dim)
    if model == "logistic":
        y = (rng.random(n) < special.expit(2.0 * (X @ w) + 0.3)).astype(float)
    else:
        y = X @ w + 0.5 + 0.5 * rng.standard_normal(n)
    return X, y


def _fit(model: str, X, y, lam: float):
    if model == "logistic":
        fit = train_logreg(X, y, lam, bias=True, tol=1e-12)
        return fit.theta, fit.grad_norm
    fit = train_linear(X, y, lam, bias=model == "ridge")
    return fit.theta, fit.grad_norm


def _attack(model: str, theta, X, y, lam: float) -> Reconstruction:
    others = slice(0, X.shape[0] - 1)
    if model == "linear":
        return linreg_reconstruct_no_intercept(theta, X[others], y[others], y[-1])
    fam = "logistic" if model == "logistic" else "linear"
    return glm_reconstruct(theta, X[others], y[others], lam, X.shape[0], fam)


def _errors(rec: Reconstruction, x) -> tuple[float, float]:
    """(relative error ||x̂ − x||/||x||, MSE ||x̂ − x||²/d) of the best candidate (the nearer root for Thm 8)."""
    if not rec.identifiable:
        return math.nan, math.nan
    err = np.linalg.norm(rec.candidates - x[None, :], axis=1)
    e = float(err.min())
    return e / max(float(np.linalg.norm(x)), 1e-300), e * e / x.size


def _label_recovered(model: str, rec: Reconstruction, y: float) -> bool | None:
    if model == "linear" or not rec.identifiable:
        return None if model == "linear" else False
    if model == "logistic":
        return bool(rec.y_hat == y)
    return bool(abs(rec.y_hat - y) <= 1e-6 * max(1.0, abs(y)))


def _target_residual(model: str, theta, X, y, lam: float) -> float:
    """|h(θ*ᵀx̃) − y| of the target at the exact optimum: the attack divides by it, so its precision is
    ≈ (gradient norm + rounding of the sum) / this (spec_002 §8: "guard B₁ ≈ 0")."""
    if model == "linear":
        return float(abs(X[-1] @ theta - y[-1]))
    if model == "logistic":
        return float(abs(special.expit(theta[0] + X[-1] @ theta[1:]) - y[-1]))
    return float(abs(theta[0] + X[-1] @ theta[1:] - y[-1]))


def _lam(model: str, lam) -> float:
    if lam is None:
        return 0.0 if model == "linear" else 0.1
    lam = v.real("lam", lam)
    if model == "linear":
        if lam != 0:
            raise ReconRiskError(f"lam must be 0 for model 'linear' (Thm 8: unregularised least squares); found {lam}")
        return 0.0
    if not lam > 0 or math.isinf(lam):
        raise ReconRiskError(f"lam must be > 0 and finite for model {model!r}; found {lam}")
    return lam


def closed_form_experiment(model: str, *, n: int = 50, dim: int = 5, lam: float | None = None,
                           noise_std: float = 0.0, trials: int = 1, seed: int = 0) -> dict:
    """Train a convex victim exactly on synthetic data, release θ (+ N(0, s²I)), and reconstruct the last point.

    ``model``: ``"linear"`` (Thm 8, no intercept, λ = 0, label known),
    ``"ridge"`` (Thm 1, identity link with intercept, λ > 0; default 0.1) or
    ``"logistic"`` (Thm 1, λ > 0; default 0.1). Features X ~ N(0, I), labels
    from a random linear model; everything from ``np.random.default_rng(seed)``.
    Returns ``relative_error`` and ``label_recovered`` for the first release
    and ``target_residual`` (the divisor of the attack: a confidently fitted
    target, residual ≈ 1e-8, costs digits of precision)
    (noise-free when ``noise_std`` = 0), and with ``trials`` > 1 a ``noise``
    block: reconstruction MSE mean ± standard error over ``trials`` draws,
    label-recovery rate with a Clopper–Pearson interval and the number of
    draws where x was not identifiable.
    """
    model = v.choice("model", model, MODELS)
    n = v.integer("n", n, minimum=3)
    dim = v.integer("dim", dim, minimum=1)
    if model == "linear" and n <= dim:
        raise ReconRiskError(f"n must exceed dim = {dim} for a unique least-squares optimum; found n = {n}")
    lam = _lam(model, lam)
    s = v.real("noise_std", noise_std)
    if s < 0 or math.isinf(s):
        raise ReconRiskError(f"noise_std must be >= 0 and finite; found {noise_std}")
    trials = v.integer("trials", trials, minimum=1)
    seed = v.integer("seed", seed, minimum=0)
    rng = np.random.default_rng(seed)
    X, y = _problem(model, n, dim, rng)
    theta, grad_norm = _fit(model, X, y, lam)
    releases = theta[None, :] + s * rng.standard_normal((trials, theta.size))
    recs = [_attack(model, th, X, y, lam) for th in releases]
    rel, _ = _errors(recs[0], X[-1])
    out = {"target_residual": _target_residual(model, theta, X, y, lam), "model": model, "n": n, "dim": dim, "lam": lam, "noise_std": s, "seed": seed,
           "grad_norm": grad_norm, "identifiable": recs[0].identifiable, "reason": recs[0].reason,
           "relative_error": rel, "label_recovered": _label_recovered(model, recs[0], y[-1]),
           "candidates": int(recs[0].candidates.shape[0])}
    if trials > 1:
        mses = np.array([_errors(r, X[-1])[1] for r in recs])
        ok = np.isfinite(mses)
        block = {"trials": trials, "not_identifiable": int((~ok).sum())}
        if ok.any():
            m = mses[ok]
            block.update(mse_mean=float(m.mean()), mse_se=float(m.std(ddof=1) / math.sqrt(m.size)) if m.size > 1 else None,
                         mse_median=float(np.median(m)))
        if model != "linear":
            labels = [bool(_label_recovered(model, r, y[-1])) for r in recs]
            block["label_recovery"] = SuccessRate.from_outcomes(labels).to_dict()
        out["noise"] = block
    return out


def noise_curve(model: str, noise_stds, *, n: int = 50, dim: int = 5, lam: float | None = None, trials: int = 200,
                seed: int = 0) -> list[dict]:
    """Reconstruction MSE (mean ± s.e. over ``trials`` draws) against the output-perturbation std s.

    The same problem (same ``seed``) for every s, so the curve shows how the
    exact attack degrades as noise is added to θ.
    """
    stds = [v.positive("noise_std", s) for s in np.atleast_1d(noise_stds)]
    if not stds:
        raise ReconRiskError("noise_stds must hold at least one value > 0")
    return [{"noise_std": s, **closed_form_experiment(model, n=n, dim=dim, lam=lam, noise_std=s, trials=trials,
                                                      seed=seed)["noise"]} for s in stds]


__all__ = ["MODELS", "Reconstruction", "closed_form_experiment", "glm_reconstruct", "linreg_reconstruct_no_intercept",
           "noise_curve"]
