"""Output-perturbed L2-regularised logistic regression and its per-example Fisher information (Guo, Karrer, Chaudhuri & van der Maaten 2022, §7.1).

numpy/scipy only (the model is small and convex; no JAX needed).

Model and training
    ``P(y = 1 | x) = sigmoid(θᵀx̃)`` with ``x̃ = [1, x]`` when ``bias=True``
    (Guo et al. 2022, §7.2's attack model; the regulariser covers the bias too, as in
    the authors' code) or ``x̃ = x`` (§7.1). The minimiser of
    ``F(θ) = Σ_i BCE(θᵀx̃_i, y_i) + (nλ/2)||θ||²`` — equivalently
    ``(1/n)Σ + (λ/2)||θ||²`` — is found by damped Newton iterations to a
    gradient norm ``||∇F(θ*)||₂ ≤ tol`` (default 1e-10). The problem is
    strictly convex, so θ* is unique and the Guo et al. 2022 "10 runs" (which differ
    only through the L-BFGS initialisation) all give the same θ*; we solve once.

Release
    ``h = θ* + N(0, σ²I)`` (:func:`output_perturb`). Its RDP at α = 2 is
    :func:`reconrisk._src.theory.mse.output_perturbation_rdp` (the paper's
    ``2/(nλσ)`` or the standard ``4/(nλσ)²``, named).

Fisher information (Hannun et al. 2021; spec_001 §6)
    With ``s_i = sigmoid(θ*ᵀx̃_i)``, ``H = Σ_j s_j(1−s_j) x̃_j x̃_jᵀ + nλI`` and
    the implicit function theorem applied to the stationarity condition
    ``Σ_j (s_j − y_j) x̃_j + nλθ* = 0``, the per-example input Jacobian is

        J_i = ∂θ*/∂x_i = −H⁻¹ [ s_i(1−s_i) x̃_i wᵀ + (s_i − y_i) E ]       (p × d)

    where ``w`` is the part of θ* that multiplies x (θ*[1:] with a bias) and
    ``E = ∂x̃/∂x``. The label is public, so its column ``H⁻¹x̃_i`` is
    excluded. The release is a Gaussian mechanism of θ*, so
    ``I_h(x_i) = J_iᵀJ_i/σ²`` and the dFIL is ``η̄_i² = ||J_i||_F² / (σ² d)``;
    the MSE bound for unbiased attacks is ``1/η̄_i²`` (Guo et al. 2022, Thm 2).
    :func:`logreg_dfil` evaluates ``||J_i||_F²`` for all i without forming
    any J_i (``O(n p²)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import linalg, special

from .. import _validate as v
from .._deprecated import warn_renamed
from ..accounting.order2 import output_perturbation_rdp
from ..data import load_digits
from ..errors import ReconRiskError
from ..metrics import accuracy
from ..results import Bound
from ..theory.mse import dfil_bound, rdp_mse

DEFAULT_TOL = 1e-10


def _data(X, y) -> tuple[np.ndarray, np.ndarray]:
    try:
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
    except (TypeError, ValueError):
        raise ReconRiskError("X must be an (n, d) array of numbers and y an (n,) array of 0/1 labels") from None
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ReconRiskError(f"X must be a non-empty (n, d) array; found shape {X.shape}")
    if y.shape != (X.shape[0],):
        raise ReconRiskError(f"y must have shape ({X.shape[0]},); found {y.shape}")
    if not np.isfinite(X).all():
        raise ReconRiskError("X must be finite")
    if not np.isin(y, (0.0, 1.0)).all():
        raise ReconRiskError(f"y must hold labels 0 or 1; found {sorted(set(np.unique(y).tolist()) - {0.0, 1.0})[:3]}")
    return X, y


def augment(X, bias: bool) -> np.ndarray:
    """``x̃ = [1, x]`` (bias) or ``x`` itself."""
    X = np.asarray(X, dtype=float)
    return np.concatenate([np.ones(X.shape[:-1] + (1,)), X], axis=-1) if bias else X


@dataclass(frozen=True)
class LogRegFit:
    """The exact regularised minimiser θ* and how it was certified."""

    theta: np.ndarray
    bias: bool
    lam: float
    n: int
    iterations: int
    grad_norm: float
    tol: float

    @property
    def weights(self) -> np.ndarray:
        """The coefficients of x (θ without the bias)."""
        return self.theta[1:] if self.bias else self.theta

    def to_dict(self) -> dict:
        return {"bias": self.bias, "lam": self.lam, "n": self.n, "iterations": self.iterations,
                "grad_norm": self.grad_norm, "tol": self.tol, "theta": self.theta.tolist()}


def objective(theta, Xt, y, lam: float) -> tuple[float, np.ndarray, np.ndarray]:
    """``F(θ) = Σ BCE + (nλ/2)||θ||²``, its gradient and Hessian (on augmented features)."""
    n = Xt.shape[0]
    z = Xt @ theta
    s = special.expit(z)
    f = float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * n * lam * theta @ theta)
    g = Xt.T @ (s - y) + n * lam * theta
    H = (Xt * (s * (1 - s))[:, None]).T @ Xt + n * lam * np.eye(Xt.shape[1])
    return f, g, H


def train_logreg(X, y, lam: float, *, bias: bool = True, tol: float = DEFAULT_TOL, max_iter: int = 100) -> LogRegFit:
    """Exact λ-regularised logistic regression by damped Newton to ``||∇F|| ≤ tol``.

    Raises :class:`ReconRiskError` if the tolerance is not reached in
    ``max_iter`` iterations (it is reached in < 15 on digits and MNIST).
    """
    X, y = _data(X, y)
    lam = v.positive("lam", lam)
    tol = v.positive("tol", tol)
    max_iter = v.integer("max_iter", max_iter, minimum=1)
    Xt = augment(X, bias)
    theta = np.zeros(Xt.shape[1])
    f, g, H = objective(theta, Xt, y, lam)
    for it in range(1, max_iter + 1):
        gn = float(np.linalg.norm(g))
        if gn <= tol:
            return LogRegFit(theta, bias, lam, X.shape[0], it - 1, gn, tol)
        step = linalg.solve(H, g, assume_a="pos")
        t = 1.0
        floor = 1e-13 * max(1.0, abs(f))  # F cannot be resolved below this: judge by the gradient there
        while True:  # Armijo backtracking; Newton steps are accepted (t = 1) near the optimum
            cand = theta - t * step
            f2, g2, H2 = objective(cand, Xt, y, lam)
            if f2 <= f - 1e-4 * t * (g @ step):
                break
            if f2 <= f + floor and float(np.linalg.norm(g2)) < gn:
                break
            if t < 1e-12:
                break
            t *= 0.5
        if f2 > f + floor or float(np.linalg.norm(g2)) >= gn and f2 > f:  # no progress possible
            break
        theta, f, g, H = cand, f2, g2, H2
    gn = float(np.linalg.norm(g))
    if gn <= tol:
        return LogRegFit(theta, bias, lam, X.shape[0], max_iter, gn, tol)
    raise ReconRiskError(f"Newton did not reach gradient norm <= tol = {tol:g} (found {gn:.3g}); raise tol or max_iter")


@dataclass(frozen=True)
class LinearFit:
    """The exact minimiser of ``Σ ½(θᵀx̃_i − y_i)² + (nλ/2)||θ||²`` (least squares at λ = 0, ridge at λ > 0)."""

    theta: np.ndarray
    bias: bool
    lam: float
    n: int
    grad_norm: float

    def to_dict(self) -> dict:
        return {"bias": self.bias, "lam": self.lam, "n": self.n, "grad_norm": self.grad_norm,
                "theta": self.theta.tolist()}


def train_linear(X, y, lam: float = 0.0, *, bias: bool = True, refine: int = 2) -> LinearFit:
    """Exact least squares (λ = 0) or ridge regression (λ > 0) in float64 (Balle, Cherubin & Hayes 2022, Thm 1 and Thm 8 victims).

    Solves the normal equations ``(X̃ᵀX̃ + nλI)θ = X̃ᵀy`` by Cholesky, then
    ``refine`` rounds of iterative refinement on the residual gradient, so
    that the released model is the optimum to rounding error (the attack turns
    any residual gradient directly into reconstruction error). λ = 0 needs
    X̃ of full column rank (unique optimum); otherwise a ReconRiskError.
    """
    try:
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
    except (TypeError, ValueError):
        raise ReconRiskError("X must be an (n, d) array of numbers and y an (n,) array of numbers") from None
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1 or y.shape != (X.shape[0],):
        raise ReconRiskError(f"X must be a non-empty (n, d) array and y (n,); found {X.shape} and {y.shape}")
    if not (np.isfinite(X).all() and np.isfinite(y).all()):
        raise ReconRiskError("X and y must be finite")
    lam = v.real("lam", lam)
    if lam < 0 or np.isinf(lam):
        raise ReconRiskError(f"lam must be >= 0 and finite; found {lam}")
    refine = v.integer("refine", refine, minimum=0)
    Xt = augment(X, bias)
    n, p = Xt.shape
    A = Xt.T @ Xt + n * lam * np.eye(p)
    try:
        cho = linalg.cho_factor(A)
    except linalg.LinAlgError:
        raise ReconRiskError(f"the least-squares optimum is not unique (X has rank < {p}); use lam > 0 or more points") from None
    if np.linalg.cond(A) > 1e12:
        raise ReconRiskError(f"the normal equations are ill-conditioned (cond = {np.linalg.cond(A):.2g}); use lam > 0")
    theta = linalg.cho_solve(cho, Xt.T @ y)
    for _ in range(refine):
        g = Xt.T @ (Xt @ theta - y) + n * lam * theta
        theta = theta - linalg.cho_solve(cho, g)
    g = Xt.T @ (Xt @ theta - y) + n * lam * theta
    return LinearFit(theta, bias, lam, n, float(np.linalg.norm(g)))


def output_perturb(theta, noise_std: float, rng: np.random.Generator, trials: int | None = None) -> np.ndarray:
    """``h = θ* + N(0, σ²I)``: one release (trials=None) or ``trials`` independent ones, (trials, p)."""
    theta = np.asarray(theta, dtype=float)
    s = v.positive("noise_std", noise_std)
    if not isinstance(rng, np.random.Generator):
        raise ReconRiskError(f"rng must be a numpy Generator (np.random.default_rng(seed)); found {type(rng).__name__}")
    shape = theta.shape if trials is None else (v.integer("trials", trials, minimum=1),) + theta.shape
    return theta + s * rng.standard_normal(shape)


def _pieces(X, y, fit: LogRegFit):
    Xt = augment(X, fit.bias)
    s = special.expit(Xt @ fit.theta)
    a = s * (1 - s)
    r = s - y
    H = (Xt * a[:, None]).T @ Xt + fit.n * fit.lam * np.eye(Xt.shape[1])
    return Xt, a, r, H


def _E(fit: LogRegFit, d: int) -> np.ndarray:
    E = np.eye(d)
    return np.vstack([np.zeros((1, d)), E]) if fit.bias else E


def logreg_input_jacobians(X, y, fit: LogRegFit, index=None) -> np.ndarray:
    """Exact ``J_i = ∂θ*/∂x_i`` (implicit function theorem), shape (k, p, d) for the k examples in ``index``."""
    X, y = _data(X, y)
    _check_fit(fit, X)
    Xt, a, r, H = _pieces(X, y, fit)
    idx = np.arange(X.shape[0]) if index is None else np.atleast_1d(np.asarray(index))
    w = fit.weights
    E = _E(fit, X.shape[1])
    inner = a[idx, None, None] * Xt[idx, :, None] * w[None, None, :] + r[idx, None, None] * E[None]
    Hinv = linalg.inv(H)
    return -np.einsum("pq,kqd->kpd", Hinv, inner)


def _check_fit(fit, X) -> None:
    if not isinstance(fit, LogRegFit):
        raise ReconRiskError(f"fit must be a LogRegFit from train_logreg; found {type(fit).__name__}")
    if fit.n != X.shape[0] or fit.weights.shape[0] != X.shape[1]:
        raise ReconRiskError(f"fit was trained on n = {fit.n}, d = {fit.weights.shape[0]}; found X of shape {X.shape}")


def jacobian_sq_frobenius(X, y, fit: LogRegFit) -> np.ndarray:
    """``||J_i||_F²`` for every example, without forming J_i.

    ``||−H⁻¹(a x̃ wᵀ + r E)||_F² = a²||u||²||w||² + 2ar uᵀ(H⁻¹Ew) + r²||H⁻¹E||_F²`` with ``u = H⁻¹x̃``.
    """
    X, y = _data(X, y)
    _check_fit(fit, X)
    Xt, a, r, H = _pieces(X, y, fit)
    w = fit.weights
    E = _E(fit, X.shape[1])
    cho = linalg.cho_factor(H)
    U = linalg.cho_solve(cho, Xt.T).T  # (n, p): H⁻¹x̃_i
    ME = linalg.cho_solve(cho, E)  # (p, d)
    vvec = ME @ w
    c = float(np.sum(ME**2))
    out = a**2 * np.sum(U**2, axis=1) * float(w @ w) + 2 * a * r * (U @ vvec) + r**2 * c
    return np.maximum(out, 0.0)


@dataclass(frozen=True)
class LogRegFIL:
    """Per-example dFIL of the output-perturbed logistic regression release, and the RDP comparison.

    ``rdp_mse``: Guo et al.'s (2022) Theorem 1 at ``rdp_epsilon``, a :class:`~reconrisk._src.results.Bound` with a
    lower end only (``rdp_mse_bound``, its float of earlier releases, still reads, deprecated).
    """

    eta_bar_sq: np.ndarray  # (n,) η̄_i² = ||J_i||_F² / (σ² d)
    noise_std: float
    lam: float
    n: int
    d: int
    rdp_epsilon: float
    formula: str
    rdp_mse: Bound
    fit: LogRegFit = field(repr=False)

    @property
    def rdp_mse_bound(self) -> float:
        warn_renamed("LogRegFIL.rdp_mse_bound", "LogRegFIL.rdp_mse.lower", "reconrisk")
        return self.rdp_mse.lower

    @property
    def bounds(self) -> np.ndarray:
        """Per-example MSE lower bounds ``1/η̄_i²`` for unbiased attacks."""
        return dfil_bound(self.eta_bar_sq)

    def summary(self) -> dict:
        b = self.bounds
        return {"min": float(np.min(b)), "median": float(np.median(b)), "max": float(np.max(b))}

    def to_dict(self) -> dict:
        return {"noise_std": self.noise_std, "lam": self.lam, "n": self.n, "d": self.d,
                "rdp_epsilon": self.rdp_epsilon, "epsilon_formula": self.formula,
                "rdp_mse_bound": self.rdp_mse.lower, "dfil_bound": self.summary()}


def logreg_dfil(X, y, lam: float, noise_std: float, *, fit: LogRegFit | None = None, bias: bool = True,
                formula: str = "gaussian") -> LogRegFIL:
    """Per-example dFIL ``η̄_i² = ||J_i||_F²/(σ²d)`` of ``θ* + N(0, σ²I)`` and the Theorem 1 RDP bound beside it.

    ``formula`` picks the RDP ε (``"gaussian"``: ``4/(nλσ)²``, standard;
    ``"paper"``: ``2/(nλσ)`` as printed in Guo et al. 2022).
    """
    X, y = _data(X, y)
    lam = v.positive("lam", lam)
    s = v.positive("noise_std", noise_std)
    if fit is None:
        fit = train_logreg(X, y, lam, bias=bias)
    elif fit.lam != lam:
        raise ReconRiskError(f"fit was trained with lam = {fit.lam:g}; found lam = {lam:g}")
    n, d = X.shape
    eps = output_perturbation_rdp(n, lam, s, formula)
    eta = jacobian_sq_frobenius(X, y, fit) / (s**2 * d)
    return LogRegFIL(eta, s, lam, n, d, eps, formula, rdp_mse(eps), fit)


def logreg_spectral_fil(X, y, fit: LogRegFit, noise_std: float, chunk: int = 256) -> np.ndarray:
    """Per-example spectral FIL ``η_i² = ||J_i||₂²/σ²`` from the explicit Jacobians (small d only)."""
    X, y = _data(X, y)
    s = v.positive("noise_std", noise_std)
    out = np.empty(X.shape[0])
    for start in range(0, X.shape[0], chunk):
        idx = np.arange(start, min(X.shape[0], start + chunk))
        J = logreg_input_jacobians(X, y, fit, idx)
        out[idx] = np.linalg.norm(J, ord=2, axis=(1, 2)) ** 2 / s**2
    return out


def logreg_accuracy(X, y, theta, bias: bool = True) -> float:
    """Fraction of (X, y) classified correctly by ``sigmoid(θᵀx̃) > 1/2`` (:func:`reconrisk._src.metrics.accuracy`)."""

    X, y = _data(X, y)
    return accuracy(augment(X, bias) @ np.asarray(theta, dtype=float) > 0, y > 0.5)


def binary_digits(first: int = 0, second: int = 1):
    """The digits data restricted to two classes: (X (n, 64) in [0, 1], y ∈ {0, 1}, image_shape)."""

    for name, c in (("first", first), ("second", second)):
        v.integer(name, c, minimum=0, maximum=9)
    if first == second:
        raise ReconRiskError(f"first and second must be different digits; found {first} twice")
    ds = load_digits()
    keep = (ds.y == first) | (ds.y == second)
    return ds.x[keep].astype(float), (ds.y[keep] == second).astype(float), ds.image_shape


__all__ = [
    "LinearFit",
    "LogRegFIL",
    "LogRegFit",
    "logreg_accuracy",
    "augment",
    "binary_digits",
    "jacobian_sq_frobenius",
    "logreg_dfil",
    "logreg_input_jacobians",
    "logreg_spectral_fil",
    "objective",
    "output_perturb",
    "train_linear",
    "train_logreg",
]
