"""The audit behind ``reconrisk audit``: settings that carry a :class:`~reconrisk.Release`, bounds, trials, results.

An :class:`AuditSetting` holds the release it audits (σ, q, T, C, noise
family) and how to attack it. :func:`certify` reads that release for the
certified ReRo bound (Hayes, Mahloujifar & Balle 2023, Cor. 4) and ε; :func:`~reconrisk._src.experiments.trials.run_trials`
trains on the same release and plays the informed adversary;
:func:`run_setting` does both. The bound comes first and costs little, so the
command line shows it before any trial has run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .. import _validate as v
from .._deprecated import warn_renamed
from ..analysis.calibrate import noise_multiplier_for_epsilon
from ..analysis.privacy import PrivacyAnalysis
from ..audit.empirical import empirical_audit
from ..errors import ReconRiskError
from ..metrics import SuccessRate
from ..release import Release
from ..results import Bound
from ..train.noise import noise_fn
from .trials import PRIOR_KINDS, run_trials

ATTACKS = ("alg2", "alg3", "loglik", "no_deduction", "gradient_inversion")


@dataclass(frozen=True)
class AuditSetting:
    """One point of an audit: the release (DP-SGD run) and how to attack it.

    Build it from a :class:`Release` or with :meth:`of` from σ, q, T, C.
    """

    release: Release
    prior_size: int = 10
    trials: int = 1000
    known_size: int | None = None  # default: min(999, dataset size − prior size)
    epsilon: float | None = None
    delta: float = 1e-5
    model: str = "mlp"
    learning_rate: float = 2.0
    clip_mode: str = "hard"
    prior: str = "data"
    attacks: tuple[str, ...] = ("alg3",)
    seed: int = 0
    inversion_steps: int = 300
    inversion_restarts: int = 5
    inversion_learning_rate: float = 0.01

    @classmethod
    def of(cls, noise_multiplier: float, sample_rate: float = 1.0, steps: int = 100, clip_norm: float = 0.1,
           *, sampler: str = "poisson", **kwargs) -> "AuditSetting":
        """The setting for ``Release(noise_multiplier, sample_rate, steps, clip_norm, sampler=sampler)``.

        ``sampler="fixed"``: the trainer draws exactly q·n of the n = known_size + 1 training
        points per step without replacement, and the bound is the fixed-batch (replace-one) one.
        """
        return cls(Release(noise_multiplier, sample_rate, steps, clip_norm, sampler=sampler), **kwargs)

    def __post_init__(self) -> None:
        if not isinstance(self.release, Release) or not self.release.homogeneous:
            raise ReconRiskError(f"release must be a homogeneous reconrisk.Release; found {self.release!r}")
        noise_fn(self.release.noise)
        v.integer("prior_size", self.prior_size, minimum=2)
        v.integer("trials", self.trials, minimum=1)
        if self.known_size is not None:
            v.integer("known_size", self.known_size, minimum=0)
        if self.epsilon is not None:
            v.positive("epsilon", self.epsilon)
        v.probability_open("delta", self.delta)
        v.positive("learning_rate", self.learning_rate)
        v.choice("clip_mode", self.clip_mode, ("hard", "gelu"))
        v.choice("prior", self.prior, PRIOR_KINDS)
        v.integer("seed", self.seed, minimum=0)
        if not self.attacks:
            raise ReconRiskError("attacks must name at least one attack; found none")
        for a in self.attacks:
            v.choice("attack", a, ATTACKS)
        v.integer("inversion_steps", self.inversion_steps, minimum=1)
        v.integer("inversion_restarts", self.inversion_restarts, minimum=1)
        v.positive("inversion_learning_rate", self.inversion_learning_rate)

    # the release's numbers, read from the one Release
    noise_multiplier = property(lambda self: self.release.noise_multiplier)
    sample_rate = property(lambda self: self.release.sample_rate)
    steps = property(lambda self: self.release.steps)
    clip_norm = property(lambda self: self.release.clip_norm)

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "release"}
        d["attacks"] = list(self.attacks)
        d["release"] = self.release.to_dict()
        return d


@dataclass(frozen=True)
class Certificate:
    """What the release certifies before any trial: ε at δ and the ReRo bound at κ = 1/n.

    ``privacy``: the release's ε at the setting's δ, the PLD :class:`~reconrisk._src.results.Bound`;
    ``target_epsilon``: the ε the noise was calibrated to (an input, ≥ ``privacy.upper``), ``None`` for a
    setting given by σ. ``rero``: the ReRo Bound (Hayes, Mahloujifar & Balle 2023, Cor. 4). ``epsilon``, the
    float of earlier releases (the target, else the PLD ε), still reads (deprecated).
    """

    privacy: Bound
    kappa: float
    rero: object  # reconrisk._src.measures.rero.ReroBound
    target_epsilon: float | None = None

    @property
    def epsilon(self) -> float:
        warn_renamed("Certificate.epsilon", "Certificate.privacy.upper (or .target_epsilon)", "reconrisk")
        return self.label

    @property
    def label(self) -> float:
        """The setting's ε as tables and figures name it: the calibration target, else the certified ε."""
        return float(self.target_epsilon if self.target_epsilon is not None else self.privacy.upper)

    def rero_dict(self) -> dict:
        r = self.rero
        out = {"method": r.method, "lower": r.lower, "upper": r.upper, "width": r.width}
        if r.method == "pld":
            out["discretization"] = r.details.get("discretization")
        return out


def certify(setting: AuditSetting) -> Certificate:
    """ε (the calibrated target, else the PLD ε of the release) and the certified bound (Hayes, Mahloujifar & Balle 2023, Cor. 4)."""

    s = setting
    analysis = PrivacyAnalysis(s.release)
    bound = analysis.rero(prior_size=s.prior_size)
    target = None if s.epsilon is None else float(s.epsilon)
    return Certificate(analysis.epsilon(s.delta), 1.0 / s.prior_size, bound, target)


@dataclass
class SettingResult:
    """Attack success rates beside the certified bound for one setting."""

    setting: AuditSetting
    certificate: Certificate
    rates: dict[str, SuccessRate]
    known_size: int
    clipped_fraction: float
    mean_grad_norm: float
    seconds: float
    mse: dict | None = None
    extra: dict = field(default_factory=dict)

    epsilon = property(lambda self: self.certificate.label)  # the setting's ε (target, else certified)
    kappa = property(lambda self: self.certificate.kappa)

    # the scalar names of earlier releases (the certified bracket is ``certificate.rero``, a Bound), for one release
    @property
    def rero_lower(self) -> float:
        warn_renamed("SettingResult.rero_lower", "SettingResult.certificate.rero.lower", "reconrisk")
        return float(self.certificate.rero.lower)

    @property
    def rero_upper(self) -> float:
        warn_renamed("SettingResult.rero_upper", "SettingResult.certificate.rero.upper", "reconrisk")
        return float(self.certificate.rero.upper)

    @property
    def primary(self) -> str:
        return self.setting.attacks[0]

    def empirical(self, attack: str | None = None, confidence: float = 0.95):
        """What ``attack``'s successes refute (:func:`reconrisk._src.audit.empirical.empirical_audit`): the one-sided
        Clopper–Pearson ReRo lower bound at κ and the ε lower bound at the setting's δ, beside the certified ones."""

        rate = self.rates[attack or self.primary]
        return empirical_audit(rate.successes, rate.trials, kappa=self.kappa, delta=self.setting.delta,
                               confidence=confidence, certified_rero=self.certificate.rero,
                               certified_epsilon=self.epsilon)

    def to_dict(self) -> dict:
        s = self.setting
        out = {
            "epsilon": self.epsilon,
            "delta": s.delta,
            "neighbouring": s.release.neighbouring,  # the relation of every ε here, certified and refuted alike
            "release": s.release.to_dict(),
            "noise_multiplier": s.noise_multiplier,
            "noise_std": s.release.noise_std,
            "sample_rate": s.sample_rate,
            "steps": s.steps,
            "clip_norm": s.clip_norm,
            "prior_size": s.prior_size,
            "kappa": self.kappa,
            "known_size": self.known_size,
            "rero": self.certificate.rero_dict(),
            "attack_name": self.primary,
            "attack": self.rates[self.primary].to_dict(),
            "attacks": {k: r.to_dict() for k, r in self.rates.items()},
            "empirical": self.empirical().to_dict(),
            "empirical_attacks": {k: self.empirical(k).to_dict() for k in self.rates},
            "clipped_fraction": self.clipped_fraction,
            "mean_grad_norm": self.mean_grad_norm,
            "seconds": self.seconds,
        }
        if self.mse is not None:
            out["gradient_inversion_mse"] = self.mse
        return out


def run_setting(
    setting: AuditSetting,
    dataset,
    *,
    progress: Callable[[int], None] | None = None,
    batch_trials: int | None = None,
    certificate: Certificate | None = None,
) -> SettingResult:
    """Run ``setting.trials`` informed-adversary trials and compare with the ReRo bound of the same release."""
    t_start = time.perf_counter()
    cert = certificate if certificate is not None else certify(setting)
    res = run_trials(setting, dataset, progress=progress, batch_trials=batch_trials)
    rates = {name: SuccessRate.from_outcomes(res.outcomes[name]) for name in dict.fromkeys(setting.attacks)}
    mse = None
    if res.errors is not None:
        e = res.errors
        mse = {"mean": float(e.mean()), "std": float(e.std(ddof=1)) if e.size > 1 else 0.0,
               "median": float(np.median(e))}
    members = max(res.members, 1.0)
    return SettingResult(
        setting=setting,
        certificate=cert,
        rates=rates,
        known_size=res.known_size,
        clipped_fraction=float(res.clipped / members),
        mean_grad_norm=float(res.norm_sum / members),
        seconds=time.perf_counter() - t_start,
        mse=mse,
    )


def calibrated_settings(
    epsilons=None,
    noise_multipliers=None,
    *,
    sample_rate: float = 1.0,
    steps: int = 100,
    clip_norm: float = 0.1,
    delta: float = 1e-5,
    accountant: str = "pld",
    sampler: str = "poisson",
    **kwargs,
) -> list[AuditSetting]:
    """One :class:`AuditSetting` per ε (σ calibrated with ``accountant``) or per given σ.

    ``sampler="fixed"`` (batches of exactly q·n, replace-one): the fixed-batch release at σ is
    the Poisson one at σ/2 (:meth:`~reconrisk._src.release.Release.dominating`), so σ is twice
    the Poisson calibration — exact, not a bound on a bound.
    """

    if (epsilons is None) == (noise_multipliers is None):
        raise ReconRiskError("give either epsilons or noise_multipliers")
    out = []
    if epsilons is not None:
        for eps in epsilons:
            eps = v.positive("epsilon", eps)
            sigma = noise_multiplier_for_epsilon(eps, sample_rate, steps, delta, accountant)
            if sampler == "fixed":
                sigma *= 2.0
            out.append(AuditSetting.of(sigma, sample_rate, steps, clip_norm, sampler=sampler, epsilon=eps, delta=delta,
                                       **kwargs))
    else:
        for sigma in noise_multipliers:
            sigma = v.positive("noise_multiplier", sigma)
            out.append(AuditSetting.of(sigma, sample_rate, steps, clip_norm, sampler=sampler, delta=delta, **kwargs))
    return out


def run_audit(settings, dataset, *, progress=None, batch_trials=None) -> list[SettingResult]:
    """Run several settings (e.g. an ε grid) on one dataset."""
    return [run_setting(s, dataset, progress=progress, batch_trials=batch_trials) for s in settings]


def total_trials(settings) -> int:
    return sum(s.trials for s in settings)
