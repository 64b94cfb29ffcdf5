"""The Guo, Karrer, Chaudhuri & van der Maaten 2022 experiments on the embedded digits data: ``reconrisk fil logreg`` and ``reconrisk fil dpsgd``.

* :func:`logreg_experiment` — §7.1–7.2 scaled to digits: binary 0-vs-1
  logistic regression with output perturbation (n = 360, d = 64), per-example
  dFIL bounds beside the Theorem 1 RDP bound (Fig. 2), the GLM attack over
  many noise draws against the predicted bounds (Fig. 3) and the highest/
  lowest-leakage examples (Fig. 4).
* :func:`dpsgd_experiment` / :func:`dpsgd_grid` — §7.3 scaled to digits:
  DP-SGD with FIL accounting on a fixed train/test split of the 10-class
  digits; one point per configuration on Fig. 5 (RDP vs max-dFIL vs
  median-dFIL bound against test accuracy).

The digits split is ``np.random.default_rng(seed).permutation`` with the
first 75% for training; all randomness derives from ``seed``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .. import _validate as v
from ..attacks.glm import find_violations, glm_attack_mse
from ..data import load_digits
from .._deprecated import warn_renamed
from ..errors import ReconRiskError
from ..release import Release
from ..results import Bound
from ..train.convex import binary_digits, logreg_accuracy, logreg_dfil, train_logreg
from ..train.fil import FILConfig, train_dpsgd_with_fil
from ..train.models import get_model

#: Guo et al. 2022, Table 3 scaled to digits (n_train = 1347, q = 0.05 ≈ batch 67, momentum 0.5): 2 × 4 × 3 = 24 runs.
DEFAULT_GRID = {
    "steps": (150, 450),
    "noise_multiplier": (0.5, 1.0, 2.0, 5.0),
    "clip_norm": (0.5, 2.0, 8.0),
}
DEFAULT_SAMPLE_RATE = 0.05
DEFAULT_LEARNING_RATE = 0.5
TEST_FRACTION = 0.25


# ----------------------------------------------------------------------------------------
# logistic regression (Figs. 2–4)
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LogRegExperiment:
    """Outcome of :func:`logreg_experiment` (summary in :meth:`to_dict`; arrays as attributes).

    ``rdp_mse``: Guo et al.'s (2022) Theorem 1 at ``rdp_epsilon``, a :class:`~reconrisk._src.results.Bound` with a
    lower end only (``rdp_mse_bound``, its float of earlier releases, still reads, deprecated).
    """

    lam: float
    noise_std: float
    formula: str
    n: int
    d: int
    rdp_epsilon: float
    rdp_mse: Bound
    bounds: np.ndarray
    eta_bar_sq: np.ndarray
    attack_mse: np.ndarray | None
    violations: object | None
    train_accuracy: float
    trials: int
    seed: int
    grad_norm: float
    top: dict = field(default_factory=dict)
    figures: tuple = ()
    # what the figures draw (report.fil.logreg_figures); not part of to_dict
    x: np.ndarray | None = field(default=None, repr=False, compare=False)
    image_shape: tuple = field(default=(), repr=False, compare=False)
    mean_reconstruction: np.ndarray | None = field(default=None, repr=False, compare=False)
    top_k: int = field(default=8, repr=False, compare=False)

    @property
    def rdp_mse_bound(self) -> float:
        warn_renamed("LogRegExperiment.rdp_mse_bound", "LogRegExperiment.rdp_mse.lower", "reconrisk")
        return self.rdp_mse.lower

    @property
    def violation_fraction(self) -> float | None:
        return None if self.violations is None else self.violations.fraction

    def to_dict(self) -> dict:
        b = self.bounds
        out = {
            "task": "digits 0 vs 1, logistic regression with output perturbation",
            "n": self.n,
            "d": self.d,
            "lam": self.lam,
            "noise_std": self.noise_std,
            "epsilon_formula": self.formula,
            "rdp_epsilon": self.rdp_epsilon,
            "rdp_mse_bound": self.rdp_mse.lower,
            "dfil_bound": {"min": float(b.min()), "median": float(np.median(b)), "max": float(b.max())},
            "fraction_bound_le_1": float(np.mean(b <= 1.0)),
            "violation_fraction": self.violation_fraction,
            "train_accuracy": self.train_accuracy,
            "solver_grad_norm": self.grad_norm,
            "attack_trials": self.trials,
            "seed": self.seed,
            "figures": [str(p) for p in self.figures],
        }
        if self.violations is not None:
            out["violations"] = self.violations.to_dict()
            m = self.attack_mse
            out["attack_mse"] = {"min": float(np.nanmin(m)), "median": float(np.nanmedian(m)), "max": float(np.nanmax(m))}
            out.update(self.top)
        return out


def logreg_experiment(*, lam: float = 1e-2, noise_std: float = 1e-2, formula: str = "gaussian", trials: int = 10_000,
                      seed: int = 0, top_k: int = 8,
                      progress: Callable[[int], None] | None = None, digits: tuple[int, int] = (0, 1)) -> LogRegExperiment:
    """Guo et al. 2022, §7.1–7.2 on digits 0 vs 1; ``trials = 0`` skips the attack (Fig. 2 only).

    Computes only; :func:`reconrisk._src.report.fil.logreg_figures` draws Figs. 2–4 from the result.
    """

    # outside these ranges the solver's Hessian is singular or the noise overflows
    lam = v.in_range("lam", lam, 1e-12, 1e12, low_open=False, high_open=False)
    noise_std = v.in_range("noise_std", noise_std, 1e-12, 1e12, low_open=False, high_open=False)
    trials = v.integer("trials", trials, minimum=0)
    seed = v.integer("seed", seed, minimum=0)
    top_k = v.integer("top_k", top_k, minimum=1)
    X, y, shape = binary_digits(*digits)
    fit = train_logreg(X, y, lam, bias=True)
    fil = logreg_dfil(X, y, lam, noise_std, fit=fit, formula=formula)
    bounds = fil.bounds
    attack = viol = None
    top: dict = {}
    if trials > 0:
        attack = glm_attack_mse(X, y, fit.theta, lam, noise_std, trials=trials, seed=seed, progress=progress)
        viol = find_violations(bounds, attack)
        order = np.argsort(-fil.eta_bar_sq)
        k = min(top_k, X.shape[0] // 2)
        top = {
            "highest_dfil": {"bound": bounds[order[:k]].tolist(), "attack_mse": attack.mse[order[:k]].tolist()},
            "lowest_dfil": {"bound": bounds[order[-k:]].tolist(), "attack_mse": attack.mse[order[-k:]].tolist()},
        }
    return LogRegExperiment(
        lam=lam, noise_std=noise_std, formula=formula, n=X.shape[0], d=X.shape[1], rdp_epsilon=fil.rdp_epsilon,
        rdp_mse=fil.rdp_mse, bounds=bounds, eta_bar_sq=fil.eta_bar_sq,
        attack_mse=None if attack is None else attack.mse, violations=viol,
        train_accuracy=logreg_accuracy(X, y, fit.theta, bias=True), trials=trials, seed=seed, grad_norm=fit.grad_norm,
        top=top, x=X, image_shape=tuple(shape), top_k=top_k,
        mean_reconstruction=None if attack is None else attack.mean_reconstruction,
    )


# ----------------------------------------------------------------------------------------
# DP-SGD (Fig. 5)
# ----------------------------------------------------------------------------------------
def digits_split(seed: int = 0, test_fraction: float = TEST_FRACTION):
    """(x_train, y_train, x_test, y_test, image_shape) from a seeded permutation of the digits."""

    ds = load_digits()
    perm = np.random.default_rng(seed).permutation(len(ds))
    n_test = int(round(test_fraction * len(ds)))
    te, tr = perm[:n_test], perm[n_test:]
    return ds.x[tr], ds.y[tr], ds.x[te], ds.y[te], ds.image_shape


def _row(res) -> dict:
    d = res.to_dict()
    rel = d["release"]
    return {
        "noise_multiplier": rel["noise_multiplier"], "sample_rate": rel["sample_rate"], "steps": rel["steps"],
        "clip_norm": rel["clip_norm"], "learning_rate": res.config.learning_rate, "momentum": res.config.momentum,
        "runs": res.config.runs, "test_accuracy": res.test_accuracy, "rdp_epsilon": res.rdp_epsilon,
        "rdp_mse_bound": res.rdp_mse.lower, "max_dfil_bound": res.max_fil_bound,
        "median_dfil_bound": res.median_fil_bound, "subsampling_factor": res.subsampling_factor, "dfil_bound": res.summary(),
        "seconds": res.train_seconds,
    }


def dpsgd_experiment(*, model: str = "mlp", noise_multiplier: float = 1.0, sample_rate: float = DEFAULT_SAMPLE_RATE,
                     steps: int = 300, clip_norm: float = 1.0, config=None, seed: int = 0,
                     progress: Callable[[int], None] | None = None):
    """One configuration of Algorithm 1 on the digits split; returns :class:`~reconrisk._src.train.fil.FILAccounting`."""

    seed = v.integer("seed", seed, minimum=0)
    release = Release(noise_multiplier, sample_rate, steps, clip_norm=clip_norm)
    xtr, ytr, xte, yte, shape = digits_split(seed)
    net = get_model(model, shape)
    cfg = config if config is not None else FILConfig(seed=seed)
    return train_dpsgd_with_fil(net, release, xtr, ytr, x_test=xte, y_test=yte, config=cfg, progress=progress)


@dataclass(frozen=True)
class GridResult:
    """One row per configuration (see :func:`dpsgd_grid`) and the Fig. 5 files."""

    rows: tuple
    model: str
    figures: tuple = ()

    def to_dict(self) -> dict:
        return {"model": self.model, "configurations": len(self.rows), "rows": list(self.rows),
                "figures": [str(p) for p in self.figures]}


def grid_configurations(grid: dict | None = None) -> list[dict]:
    g = dict(DEFAULT_GRID if grid is None else grid)
    keys = ("steps", "noise_multiplier", "clip_norm")
    for k in g:
        if k not in keys:
            raise ReconRiskError(f"grid keys must be among {', '.join(keys)}; found {k!r}")
    vals = [tuple(g.get(k, DEFAULT_GRID[k])) for k in keys]
    combos = [dict(zip(keys, c)) for c in itertools.product(*vals)]
    if not 1 <= len(combos) <= 24:
        raise ReconRiskError(f"the grid must hold 1 to 24 configurations; found {len(combos)}")
    return combos


def dpsgd_grid(*, model: str = "mlp", grid: dict | None = None, sample_rate: float = DEFAULT_SAMPLE_RATE,
               config=None, seed: int = 0,
               progress: Callable[[int], None] | None = None, on_row: Callable[[dict], None] | None = None) -> GridResult:
    """Guo et al. 2022, Fig. 5 on digits: Algorithm 1 for every configuration of the (≤ 24-point) grid.

    Computes only; :func:`reconrisk._src.report.fil.grid_figures` draws Fig. 5 and writes the rows as JSON.
    """
    combos = grid_configurations(grid)
    rows = []
    for c in combos:
        res = dpsgd_experiment(model=model, sample_rate=sample_rate, config=config, seed=seed, progress=progress, **c)
        row = _row(res)
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return GridResult(tuple(rows), model)


def grid_total_steps(grid: dict | None, runs: int) -> int:
    return sum(c["steps"] for c in grid_configurations(grid)) * runs


__all__: Sequence[str] = ("LogRegExperiment", "GridResult", "logreg_experiment", "dpsgd_experiment", "dpsgd_grid",
                          "digits_split", "grid_configurations", "DEFAULT_GRID")
