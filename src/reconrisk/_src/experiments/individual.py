"""Who is at risk: ``reconrisk audit --per-example`` — per-example reconstruction risk of one DP-SGD run.

:func:`per_example_audit` trains once on the digits (the default audit's setting: q = 1, T = 100, the
``input→10→10`` MLP, learning rate 2, κ = 1/10, N = 1,000 training points — the default audit's D₋ and its
first pool point — but C = 3 instead of 0.1, so that gradients shrink below C as the model fits, and σ
calibrated to ε = 10 at δ = 10⁻⁵), recording every example's gradient norm at every step, and turns the
norms into each example's ε_i and ReRo_i (:func:`reconrisk._src.individual.privacy.individual_analysis`:
Feldman & Zrnic 2021's individual accounting; Yu et al. 2023 for DP-SGD). Without a filter the numbers are
**ex-post estimates** of who is exposed, not a DP guarantee, and every field says so (``ex_post_*``). In
the same run it accounts Guo, Karrer, Chaudhuri & van der Maaten 2022's per-example Fisher information
leakage (Algorithm 1, :class:`~reconrisk._src.train.fil.FILHook`, hard clipping as trained) and reports how the
two rankings relate (Spearman's ρ, overlap of the most exposed). With ``budget`` (a target ReRo at κ) it
also trains a filtered run (:class:`~reconrisk._src.individual.filter.IndividualFilter`, fixed before
training) whose every example is **certified** at the budget (``certified_*``: the same number for all,
Feldman & Zrnic 2021), beside what each example spent (``ex_post_*``, estimates), its accuracy and the
share of examples filtered. The attack check is :mod:`reconrisk._src.experiments.individual_attack`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .. import _validate as v
from ..accounting.subsampling import subsampling_factor
from ..analysis.calibrate import noise_multiplier_for_epsilon
from ..data import load_digits
from ..errors import ReconRiskError
from ..individual.filter import IndividualFilter
from ..individual.privacy import individual_analysis
from ..release import Release
from ..theory.mse import dfil_bound
from ..train.dpsgd import model_accuracy, train
from ..train.fil import DEFAULT_NUM_COORDS, DEFAULT_POWER_ITERS, FILHook, lead_chunks
from ..train.models import get_model
from .trials import split_indices

#: The per-example audit's defaults: the default audit's release but C = 3 (gradients shrink below it).
DEFAULT_EPSILON = 10.0
DEFAULT_CLIP_NORM = 3.0
DEFAULT_STEPS = 100
DEFAULT_TRAIN_SIZE = 1000
DEFAULT_TOP_K = 16


@dataclass(frozen=True)
class PerExampleSetting:
    """One per-example audit: the release, the training set's size and how to train and report."""

    release: Release
    train_size: int = DEFAULT_TRAIN_SIZE
    prior_size: int = 10  # κ = 1/prior_size for ReRo_i and for the attack check
    delta: float = 1e-5
    epsilon: float | None = None  # the ε σ was calibrated to (for display)
    model: str = "mlp"
    learning_rate: float = 2.0
    seed: int = 0
    top_k: int = DEFAULT_TOP_K
    fil: bool = True
    budget: float | None = None  # target ReRo at κ of a filtered run (its budget: certified for every example)
    buckets: int = 128  # sensitivity levels (individual.privacy): 2⁻⁸…1, 4.5 % apart; 1.3 s for 1,000 examples

    @classmethod
    def of(cls, epsilon: float | None = DEFAULT_EPSILON, *, noise_multiplier: float | None = None,
           sample_rate: float = 1.0, steps: int = DEFAULT_STEPS, clip_norm: float = DEFAULT_CLIP_NORM,
           delta: float = 1e-5, **kwargs) -> "PerExampleSetting":
        """The setting at ``noise_multiplier``, or at σ calibrated to ``epsilon`` (PLD accountant)."""

        if (epsilon is None) == (noise_multiplier is None):
            raise ReconRiskError("give epsilon or noise_multiplier (one of them)")
        if noise_multiplier is None:
            epsilon = v.positive("epsilon", epsilon)
            noise_multiplier = noise_multiplier_for_epsilon(epsilon, sample_rate, steps, delta, "pld")
        return cls(Release(noise_multiplier, sample_rate, steps, clip_norm), delta=delta, epsilon=epsilon, **kwargs)

    def __post_init__(self) -> None:
        if not isinstance(self.release, Release) or not self.release.homogeneous or self.release.sampler != "poisson":
            raise ReconRiskError(f"release must be a homogeneous Poisson reconrisk.Release; found {self.release!r}")
        v.integer("train_size", self.train_size, minimum=2)
        v.integer("prior_size", self.prior_size, minimum=2)
        v.probability_open("delta", self.delta)
        v.positive("learning_rate", self.learning_rate)
        v.integer("seed", self.seed, minimum=0)
        v.integer("top_k", self.top_k, minimum=1)
        v.integer("buckets", self.buckets, minimum=1, maximum=4096)
        if self.budget is not None:
            v.in_range("budget", self.budget, 1.0 / self.prior_size, 1.0, low_open=True, high_open=False)

    @property
    def kappa(self) -> float:
        return 1.0 / self.prior_size

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "release"}
        d["release"] = self.release.to_dict()
        d["kappa"] = self.kappa
        return d


@dataclass
class FilteredRun:
    """A run trained with a per-example budget: the budget certified for every example, what each spent
    (ex-post estimates), accuracy, who was filtered. ``rero`` and ``spent_rero`` are at the setting's κ,
    computed once with the run (what the report draws); the methods answer other κ."""

    analysis: object  # IndividualPrivacy, certified (rero/epsilon: the budget; ex_post_*: what each spent)
    filtered: np.ndarray  # (n,) bool: the filter stopped the example at some step
    train_accuracy: float
    test_accuracy: float
    budget: float
    rero: float  # certified ReRo(κ) of every example: the budget's (capped by the release's worst case)
    spent_rero: np.ndarray  # (n,) what each example spent, as ReRo_i(κ): ex-post estimates

    def certified_rero(self, kappa: float) -> float:
        """The ReRo(κ) every example is certified at: the budget's (capped by the release's worst case)."""
        return float(self.analysis.rero(kappa)[0])

    def ex_post_rero(self, kappa: float) -> np.ndarray:
        """(n,) what each example spent, as ReRo_i(κ) from the norms it contributed: ex-post estimates."""
        return self.analysis.ex_post_rero(kappa)

    def to_dict(self, delta: float, kappa: float) -> dict:
        return {"budget_rero": self.budget, "kappa": kappa, "train_accuracy": self.train_accuracy,
                "test_accuracy": self.test_accuracy, "filtered_share": float(np.mean(self.filtered)),
                "filtered": self.filtered.astype(bool).tolist(),
                **self.analysis.to_dict(delta=delta, kappa=kappa)}


@dataclass
class PerExampleAudit:
    """Outcome of :func:`per_example_audit`; arrays as attributes, everything in :meth:`to_dict`."""

    setting: PerExampleSetting
    analysis: object  # reconrisk._src.individual.privacy.IndividualPrivacy (ex post)
    indices: np.ndarray  # (n,) row of each training example in the dataset
    x: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)
    image_shape: tuple
    norms: np.ndarray = field(repr=False)  # (n, T)
    epsilon: np.ndarray  # ex-post ε_i at δ
    rero: np.ndarray  # ex-post ReRo_i at κ
    worst_epsilon: object  # Bound
    worst_rero: object  # Bound
    most_exposed: np.ndarray  # positions (into the training set) of the top_k, most exposed first
    train_accuracy: float
    test_accuracy: float
    clipped_fraction: float
    dfil: np.ndarray | None = None  # Guo et al. 2022 per-example dFIL η̄²
    seconds: dict = field(default_factory=dict)
    filtered: FilteredRun | None = None
    dataset: dict = field(default_factory=dict)
    num_classes: int = 10
    #: How the ex-post ReRo_i ranks against Guo et al.'s dFIL (None without dFIL): computed once, with the result
    #: (an estimate: Spearman's ρ of this run), and read by the JSON, the page and the CLI table.
    fil_relation: dict | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        self.fil_relation = None if self.dfil is None else fil_relation(self.rero, self.dfil, self.norms)

    @property
    def n(self) -> int:
        return int(self.rero.size)

    def top_rows(self) -> list[dict]:
        """The most exposed examples, most exposed first."""

        rows = []
        for rank, i in enumerate(self.most_exposed, 1):
            row = {"rank": rank, "position": int(i), "dataset_index": int(self.indices[i]), "label": int(self.y[i]),
                   "ex_post_rero": float(self.rero[i]), "ex_post_epsilon": float(self.epsilon[i]),
                   "steps_clipped": int(np.sum(self.norms[i] >= self.setting.release.clip_norm)),
                   "mean_norm": float(np.nanmean(self.norms[i]))}
            if self.dfil is not None:
                row["dfil"] = float(self.dfil[i])
                row["dfil_mse_bound"] = float(dfil_bound(float(self.dfil[i])))
            rows.append(row)
        return rows

    def summary(self) -> dict:
        s = self.setting
        return {"kappa": s.kappa, "delta": s.delta, "examples": self.n,
                "worst_case_rero": float(self.worst_rero.upper), "worst_case_epsilon": float(self.worst_epsilon.upper),
                "ex_post_rero_median": float(np.median(self.rero)),
                "ex_post_rero_decile_10": float(np.quantile(self.rero, 0.1)),
                "ex_post_rero_decile_90": float(np.quantile(self.rero, 0.9)),
                "ex_post_rero_max": float(np.max(self.rero)),
                "ex_post_epsilon_median": float(np.median(self.epsilon)),
                "ex_post_epsilon_max": float(np.max(self.epsilon)),
                "share_at_worst_case": float(np.mean(self.rero >= float(self.worst_rero.upper) * (1 - 1e-9))),
                "train_accuracy": self.train_accuracy, "test_accuracy": self.test_accuracy,
                "clipped_fraction": self.clipped_fraction}

    def to_dict(self) -> dict:
        s = self.setting
        out = {"setting": s.to_dict(), "dataset": self.dataset, "summary": self.summary(),
               "ex_post": self.analysis.to_dict(delta=s.delta, kappa=s.kappa),
               "examples": {"dataset_index": self.indices.tolist(), "label": self.y.astype(int).tolist(),
                            "steps_clipped": np.sum(self.norms >= s.release.clip_norm, axis=1).tolist(),
                            "mean_norm": np.nanmean(self.norms, axis=1).tolist()},
               "most_exposed": self.top_rows(), "seconds": self.seconds}
        if self.dfil is not None:
            out["examples"]["dfil"] = self.dfil.tolist()
            out["examples"]["dfil_mse_bound"] = [float(dfil_bound(float(f))) for f in self.dfil]
            out["fil_relation"] = self.fil_relation
        if self.filtered is not None:
            out["filtered"] = self.filtered.to_dict(s.delta, s.kappa)
        return out


def exposure_order(rero, norms) -> np.ndarray:
    """Positions from most to least exposed: ReRo_i descending, then the mean recorded norm (ties at the worst
    case are examples clipped on nearly every step: the larger mean norm first), then the position."""
    mean = np.nan_to_num(np.nanmean(np.where(np.isnan(norms), np.inf, norms), axis=1), posinf=np.inf)
    return np.lexsort((np.arange(len(rero)), -mean, -np.asarray(rero)))


def fil_relation(rero, dfil, norms) -> dict:
    """How the ex-post ReRo_i rank against Guo et al.'s dFIL (more FIL: a smaller MSE bound, more exposed):
    Spearman's ρ with its p-value, and the overlap of the two top deciles (ties broken as :func:`exposure_order`)."""
    from scipy import stats

    rero, dfil = np.asarray(rero), np.asarray(dfil)
    n = int(rero.size)
    rho, p = stats.spearmanr(rero, dfil)
    k = max(1, n // 10)
    top_fil = np.lexsort((np.arange(n), -dfil))[:k]
    top_rero = exposure_order(rero, norms)[:k]
    return {"spearman_rho": float(rho), "spearman_p_value": float(p), "top_decile": int(k),
            "top_decile_overlap": int(np.intersect1d(top_fil, top_rero).size),
            "what": "Spearman rank correlation of the ex-post ReRo_i with Guo, Karrer, Chaudhuri & van der "
                    "Maaten 2022's per-example dFIL (Algorithm 1, same run); top_decile_overlap: examples among "
                    "the 10% most exposed by both"}


def training_split(dataset, setting: PerExampleSetting):
    """(train indices, held-out indices) into ``dataset``: the audit's seeded split with |D₋| = train_size."""

    return split_indices(dataset, setting.prior_size, setting.train_size, setting.seed)


def _norm_mode(release: Release) -> str:
    """``"batch"`` at q = 1 (every example is in every batch: the step's own norms, free), else ``"step"``."""
    return "batch" if release.sample_rate >= 1.0 else "step"


def _fil_hook(model, release: Release, n: int, seed: int):
    """Guo et al. 2022, Algorithm 1 as a hook on the same run: hard clipping (as trained), factor 1 at q = 1."""
    from .._jax import jax
    import jax.numpy as jnp

    factor = 1.0
    if release.sample_rate < 1.0:
        factor = subsampling_factor(release.noise_multiplier, release.sample_rate, release.steps, None, n=n,
                                    sensitivity_factor=2.0).value
    hook = FILHook(model, "trace_sampled", DEFAULT_NUM_COORDS, DEFAULT_POWER_ITERS, "hard", release.clip_norm,
                   lead_chunks(n, release.sample_rate))
    k_fil = jax.random.fold_in(jax.random.PRNGKey(v.jax_seed(seed)), 1)
    state = (jnp.zeros((n,), jnp.float32), jnp.float32(factor), jnp.float32(release.noise_std), k_fil)
    return hook, state


def per_example_audit(setting: PerExampleSetting | None = None, dataset=None, *,
                      progress: Callable[[int], None] | None = None) -> PerExampleAudit:
    """Train once with norm recording (and FIL accounting) and report every example's ex-post ε_i, ReRo_i.

    ``dataset`` defaults to the embedded digits; ``progress(k)`` is called after every k training steps
    (twice the steps with a ``budget``: the filtered run trains again).
    """

    s = setting if setting is not None else PerExampleSetting.of()
    if not isinstance(s, PerExampleSetting):
        raise ReconRiskError(f"setting must be a PerExampleSetting; found {type(s).__name__}")
    data = dataset if dataset is not None else load_digits()
    tr, te = training_split(data, s)
    x, y = data.x[tr], data.y[tr]
    model = get_model(s.model, data.image_shape, data.num_classes)
    hooks, states = (), ()
    if s.fil:
        hook, state = _fil_hook(model, s.release, x.shape[0], s.seed)
        hooks, states = (hook,), (state,)
    seconds = {}
    t0 = time.perf_counter()
    res = train(model, s.release, x, y, seed=s.seed, learning_rate=s.learning_rate, record=False, hooks=hooks,
                hook_states=states, record_norms=_norm_mode(s.release), progress=progress)
    seconds["train"] = time.perf_counter() - t0
    norms = np.asarray(res.norms, dtype=float)
    dfil = np.asarray(res.hook_states[0][0], dtype=float) if s.fil else None
    t0 = time.perf_counter()
    analysis = individual_analysis(s.release, norms, buckets=s.buckets)
    eps = analysis.epsilon(s.delta)
    rero = analysis.rero(s.kappa)
    seconds["analysis"] = time.perf_counter() - t0
    filtered = None
    if s.budget is not None:
        t0 = time.perf_counter()
        filtered = _filtered_run(model, s, x, y, data.x[te], data.y[te], progress)
        seconds["filtered_run"] = time.perf_counter() - t0
    return PerExampleAudit(
        setting=s, analysis=analysis, indices=np.asarray(tr), x=x, y=y, image_shape=tuple(data.image_shape),
        norms=norms, epsilon=eps, rero=rero, worst_epsilon=analysis.worst_case_epsilon(s.delta),
        worst_rero=analysis.worst_case_rero(s.kappa),
        most_exposed=exposure_order(rero, norms)[:min(s.top_k, x.shape[0])],
        train_accuracy=model_accuracy(model, res.params, x, y),
        test_accuracy=model_accuracy(model, res.params, data.x[te], data.y[te]) if len(te) else float("nan"),
        clipped_fraction=float(res.clipped_fraction), dfil=dfil, seconds=seconds, filtered=filtered,
        dataset=data.to_dict(), num_classes=int(data.num_classes))


def _filtered_run(model, s: PerExampleSetting, x, y, x_test, y_test, progress) -> FilteredRun:
    """The same training with an :class:`IndividualFilter` at ReRo ``budget`` (κ), fixed before training."""

    filt = IndividualFilter(s.release, target_rero=s.budget, kappa=s.kappa)
    res = train(model, s.release, x, y, seed=s.seed, learning_rate=s.learning_rate, record=False,
                record_norms="step", individual_filter=filt, progress=progress)  # the filter's own norm pass
    analysis = individual_analysis(s.release, np.asarray(res.norms, dtype=float), buckets=s.buckets,
                                   certified=True, individual_filter=filt)
    return FilteredRun(analysis, np.asarray(res.filtered, dtype=bool), model_accuracy(model, res.params, x, y),
                       model_accuracy(model, res.params, x_test, y_test) if len(x_test) else float("nan"), s.budget,
                       rero=float(analysis.rero(s.kappa)[0]), spent_rero=analysis.ex_post_rero(s.kappa))
