"""One risk report for one release: every bound family side by side (computation only; ``report/html.py`` draws).

:func:`risk_report` takes a :class:`~reconrisk.release.Release` and a prior (κ, or a uniform prior over N
candidates) and returns a JSON-ready dict. Each family calls **the same function, with the same defaults,
as the command that prints it alone**, so the numbers equal that command's ``--json`` output
(``tests/test_report.py`` checks this field by field):

============================  =========================================================  ==========================
family                        function (source)                                          command
============================  =========================================================  ==========================
ε at δ                        ``accounting.epsilon`` (PLD; RDP where PLD's grid fails)   ``bound``
ReRo, PLD bracket / closed    ``bounds.rero.rero_bounds(method="pld"/"closed_form")``    ``bound --method all``
ReRo, RDP Eq. (2)             ``rero_bounds(method="rdp")``                              ``bound`` (baselines.rdp)
ReRo, Monte Carlo + CI        ``rero_bounds(method="mc", samples, seed, confidence)``    ``bound --method mc``
trade-off curve f(α)          ``bounds.tradeoff.tradeoff`` on the ``tradeoff`` α grid    ``tradeoff``
operational risks             ``bounds.risk.all_risks`` (+ ``risk(.., "attribute")``)    ``risk --measure all``
Fano (Hayes, Mahloujifar & Balle 2023, App. H)        ``bounds.fano`` (new; no command of its own)               —
Guo's RDP MSE bound           ``bounds.mse.mse_bound(release=…)``                        ``mse-bound``
analytic MSE/PSNR ReRo        ``bounds.analytic.analytic_bound`` (averaged = T)          ``analytic bound``
Bayes' capacity               ``bounds.capacity.log_capacity_gaussian`` per step         ``capacity gaussian``
calibrated σ                  ``api.calibrate_noise`` (+ the certified bound at σ)       ``calibrate``
empirical attack (--attack)   ``experiments.audit.run_setting``                          ``audit``
============================  =========================================================  ==========================

Each entry carries its formula/source and its error: a certified bracket (``lower``/``upper``), a
confidence interval (Monte Carlo, attacks), or ``exact``. Families whose assumptions fail for this release
are kept with ``"applicable": false`` and the reason, never dropped silently.

Derived numbers that no single command prints (each stated in its entry's ``formula``):

* Bayes' capacity of T steps: ``log C ≤ Σ_s T_s · log(1 − q_s + q_s·C_1(σ_s))`` — one subsampled step's
  capacity is ``∫ sup_x [(1−q)φ(y) + qφ(y − x)] dy = 1 − q + q·C_1`` and capacities multiply under
  (adaptive) composition; the one-try success is then at most ``κ·C`` (the "miracle" theorem, Biswas et al. 2024, §6).
* Analytic attack over T full-batch steps: Prop. 7 of Riess et al. 2024 with k = T matched reconstructions.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np

from .. import _validate as v
from ..errors import ReconRiskError
from ..priors import resolve_kappa
from ..release import Release, gaussian_release

#: The α grid of ``reconrisk tradeoff`` (its defaults: 1e-6 … 0.5, 200 log-spaced points).
TRADEOFF_ALPHA = (1e-6, 0.5, 200)
#: Prior sizes of the "ReRo against prior size" panel (Hayes, Mahloujifar & Balle 2023, Fig. 3's 2^1 … 2^11, extended).
PRIOR_SIZES = tuple(2**k for k in range(1, 17))


@dataclass(frozen=True)
class ReportConfig:
    """What a report computes beyond the release; defaults are those of the single commands."""

    prior_size: int | None = None
    kappa: float | None = None
    delta: float = 1e-5
    samples: int = 1_000_000  # Monte Carlo (``bound --samples``); 0 skips it
    seed: int = 0
    confidence: float = 0.95
    fpr: float = 0.01  # membership TPR at this FPR (``risk --fpr``)
    attribute_baseline: float = 0.5  # attribute inference: a binary attribute with a 50/50 prior
    diam: float = 1.0  # Guo's MSE bound: data in [0, 1]^d
    target_rero: float | None = None
    model_dim: int | None = None  # Bayes' capacity: dimension p of the released gradient
    data_dim: int | None = None  # analytic attack: input dimension N
    min_norm: float | None = None  # analytic attack: smallest nonzero data norm m
    mse_eta: float = 0.01  # analytic MSE threshold η (data units²); 0.01 = PSNR 20 dB on [0, 1] data
    psnr_eta: float = 20.0  # analytic PSNR threshold (dB)
    attack: bool = False
    trials: int = 100
    attack_seed: int = 0

    def __post_init__(self) -> None:
        if self.prior_size is None and self.kappa is None:
            object.__setattr__(self, "prior_size", 10)  # Hayes, Mahloujifar & Balle's (2023) default prior (κ = 0.1)
        resolve_kappa(self.kappa, self.prior_size)
        v.probability_open("delta", self.delta)
        if self.samples != 0:
            v.integer("samples", self.samples, minimum=100)
        v.seed("seed", self.seed)
        v.probability_open("confidence", self.confidence)
        v.probability_open("fpr", self.fpr)
        v.probability_open("attribute_baseline", self.attribute_baseline)
        v.in_range("diam", self.diam, 0.0, 1e150, high_open=False)
        if self.target_rero is not None:
            v.probability_open("target_rero", self.target_rero)
        for name in ("model_dim", "data_dim"):
            if getattr(self, name) is not None:
                v.max_count(f"--{name.replace('_', '-')}", v.integer(name, getattr(self, name), minimum=1), 10**9)
        if self.min_norm is not None:
            v.positive("min_norm", self.min_norm)
        v.positive("mse_eta", self.mse_eta)
        v.real("psnr_eta", self.psnr_eta)
        v.max_count("--trials", v.integer("trials", self.trials, minimum=1), 10**6, "informed-adversary trials")
        v.seed("attack_seed", self.attack_seed)

    @property
    def kappa_value(self) -> float:
        return resolve_kappa(self.kappa, self.prior_size)

    def to_dict(self) -> dict:
        return asdict(self)


def _na(reason: str, **extra) -> dict:
    return {"applicable": False, "reason": reason, **extra}


# -- ε and ReRo -------------------------------------------------------------------------------
def epsilon_entry(release: Release, delta: float) -> dict:
    """ε at δ as ``reconrisk bound`` reports it (PLD, RDP where the PLD grid cannot hold the loss range)."""
    from ..accounting import epsilon

    try:
        out = {"value": epsilon(release=release, delta=delta), "accountant": "pld", "delta": delta}
    except ReconRiskError as exc:
        if "too small for the PLD accountant" not in str(exc):
            raise
        out = {"value": epsilon(release=release, delta=delta, accountant="rdp"), "accountant": "rdp", "delta": delta}
    out["formula"] = ("smallest eps with delta(eps) <= delta on the pessimistic PLD (an upper bound on the true eps)"
                      if out["accountant"] == "pld" else "RDP conversion min_a eps_a + log((a-1)/a) - (log delta + log a)/(a-1)")
    return out


def rero_entry(release: Release, cfg: ReportConfig, eps: dict, progress: Callable[[int], None] | None = None) -> dict:
    """Every ReRo method of ``bound`` at κ, with the ε-based baselines."""
    from ..bounds.conversions import rero_from_dp
    from ..bounds.rero import has_closed_form, rero_bounds

    k = cfg.kappa_value
    out: dict = {"kappa": k, "prior_size": cfg.prior_size}
    out["pld"] = rero_bounds(release, k, method="pld")[0].summary()
    out["pld"]["formula"] = "B_kappa(mu, nu) bracketed by pessimistic/optimistic PLDs (Hayes, Mahloujifar & Balle 2023, Cor. 4)"
    if has_closed_form(release):
        out["closed_form"] = rero_bounds(release, k, method="closed_form")[0].summary()
        out["closed_form"]["formula"] = "Phi(Phi^-1(kappa) + mu_GDP), mu_GDP = sqrt(sum T_s/sigma_s^2) (q = 1)"
    rdp = rero_bounds(release, k, method="rdp")[0]
    out["rdp"] = {"method": "rdp", "lower": None, "upper": rdp.upper, "orders": rdp.details.get("orders"),
                  "formula": "min over orders a of (kappa*exp(eps_a))^((a-1)/a) (Hayes, Mahloujifar & Balle 2023, Eq. 2)"}
    out["dp"] = {"method": "dp", "lower": None, "upper": float(rero_from_dp(k, eps["value"], cfg.delta)[0]),
                 "formula": "kappa*exp(epsilon) + delta"}
    if cfg.samples:
        mc = rero_bounds(release, k, method="mc", samples=cfg.samples, seed=cfg.seed, confidence=cfg.confidence,
                         progress=progress)[0]
        out["mc"] = mc.summary()
        out["mc"]["formula"] = ("complement estimator of Hayes, Mahloujifar & Balle 2023, Alg. 1 (corrected) with a DKW + Clopper-Pearson "
                                f"{cfg.confidence:g} interval")
    else:
        out["mc"] = _na("Monte Carlo skipped (samples = 0)")
    out["headline"] = "closed_form" if "closed_form" in out else "pld"
    return out


def rero_vs_prior(release: Release, prior_sizes=PRIOR_SIZES) -> dict:
    """PLD bracket, the RDP bound and Fano's bound (as in :func:`fano_entry`) at κ = 1/N for each N."""
    from ..bounds.rero import rero_bounds

    ns = [int(n) for n in prior_sizes]
    kap = np.array([1.0 / n for n in ns])
    from ..bounds.fano import fano_bound, kl_mutual_information

    pld = rero_bounds(release, kap, method="pld")
    rdp = rero_bounds(release, kap, method="rdp")
    kl, kl_err = kl_mutual_information(release)  # the prior-free part of Fano's I, computed once
    fano = [fano_bound(min(kl + kl_err, _closed_form_mi(release, n)), n).success_upper for n in ns]
    return {"prior_size": ns, "kappa": kap.tolist(), "lower": [r.lower for r in pld], "upper": [r.upper for r in pld],
            "rdp": [r.upper for r in rdp], "fano": fano}


def _closed_form_mi(release: Release, n: int) -> float:
    """Hayes, Mahloujifar & Balle 2023, App. H's Gaussian closed form at Δ = 2C over every full-batch step (inf when q < 1)."""
    from ..bounds.fano import gaussian_mutual_information

    if not release.full_batch:
        return math.inf
    r2 = sum(seg.steps * (2.0 / seg.noise_multiplier) ** 2 for seg in release.segments)
    return gaussian_mutual_information(n, math.sqrt(r2))


# -- curve and operational risks ---------------------------------------------------------------
def tradeoff_entry(release: Release) -> dict:
    from ..bounds.tradeoff import tradeoff

    lo, hi, n = TRADEOFF_ALPHA
    d = tradeoff(release, np.logspace(np.log10(lo), np.log10(hi), n)).to_dict()
    d["formula"] = ("beta_lower <= f(alpha) <= beta_upper: exact GDP curve (q = 1) or the optimistic/pessimistic "
                    "PLDs' Neyman-Pearson tests (Dong, Roth, Su 2022)")
    return d


def risks_entry(release: Release, cfg: ReportConfig) -> list[dict]:
    """``risk --measure all`` (with the report's baseline and --fpr) and attribute inference at its baseline."""
    from ..bounds.risk import all_risks, risk

    base = {"prior_size": cfg.prior_size} if cfg.prior_size is not None else {"kappa": cfg.kappa}
    rows = [r.to_dict() for r in all_risks(release, fpr=cfg.fpr, **base)]
    rows.insert(2 if cfg.prior_size is not None else 1,
                risk(release, "attribute", baseline=cfg.attribute_baseline).to_dict())
    rel_keys = set(release.to_dict())
    return [{k: x for k, x in r.items() if k not in rel_keys} for r in rows]


# -- information-theoretic and MSE families ----------------------------------------------------
def fano_entry(release: Release, cfg: ReportConfig) -> dict:
    from ..bounds.fano import fano_bound, release_mutual_information

    if cfg.prior_size is None:
        return _na("Fano needs a uniform prior over N candidates (--prior-size), not only kappa")
    mi = release_mutual_information(release, cfg.prior_size)
    fb = fano_bound(mi["mutual_information"], cfg.prior_size)
    return {"applicable": True, **fb.to_dict(), "information": mi,
            "source": "Guo et al. 2022b via Hayes, Mahloujifar & Balle 2023, App. H; I bounded by " + mi["source"].replace("_", " ")}


def mse_entry(release: Release, cfg: ReportConfig) -> dict:
    from ..bounds.mse import mse_bound

    d = mse_bound(release=release, diam=cfg.diam).to_dict()
    d["formula"] = "MSE >= diam^2/(4(e^eps2 - 1)), eps2 = RDP at order 2 (Guo, Karrer, Chaudhuri & van der Maaten 2022, Thm 1; Guo et al. 2022a)"
    d["applies_to"] = "unbiased reconstruction attacks, data in a box of per-coordinate diameter diam"
    return d


ANALYTIC_ASSUMPTIONS = (
    "the adversary controls the model: a malicious linear layer whose rows all copy the target (Riess et al. 2024, Prop. 1)",
    "the target is alone in its batch (B = 1) and the scales are known to the adversary (Riess et al. 2024, §4)",
    "full batch (q = 1): the target is in every step, and the T reconstructions are matched and averaged (Prop. 7)",
)


def analytic_entry(release: Release, cfg: ReportConfig) -> dict:
    """Riess et al.'s (2024) optimal analytic attack, only where its assumptions hold (q = 1, one (σ, q) segment)."""
    from ..bounds.analytic import analytic_bound

    if not release.homogeneous or release.sample_rate != 1.0:
        return _na("Riess et al.'s (2024) bounds are single-step and need the target in every step (q = 1, one segment); "
                   "subsampled composition is not in the paper", assumptions=list(ANALYTIC_ASSUMPTIONS))
    if cfg.data_dim is None or cfg.min_norm is None:
        return _na("needs the input dimension and smallest nonzero data norm (--data-dim, --min-norm)",
                   assumptions=list(ANALYTIC_ASSUMPTIONS))
    common = dict(min_norm=cfg.min_norm, clip_norm=release.clip_norm, averaged=release.steps)
    mse = analytic_bound("mse", release.noise_multiplier, cfg.data_dim, eta=cfg.mse_eta, **common)
    psnr = analytic_bound("psnr", release.noise_multiplier, cfg.data_dim, eta=cfg.psnr_eta, **common)
    drop = lambda d: {k: x for k, x in d.items() if x is not None}  # noqa: E731  (as ``analytic bound --json``)
    return {"applicable": True, "assumptions": list(ANALYTIC_ASSUMPTIONS), "mse": drop(mse.to_dict()),
            "psnr": drop(psnr.to_dict()),
            "formula": "P(MSE <= eta) (Prop. 3) and P(PSNR >= eta) (Prop. 5) of X_hat ~ N(X, sigma^2 m^2/T I_N): exact"}


def capacity_entry(release: Release, cfg: ReportConfig) -> dict:
    from ..bounds.capacity import log_capacity_gaussian

    if cfg.model_dim is None:
        return _na("Bayes' capacity of the Gaussian mechanism grows with the dimension p of the released gradient; "
                   "give it with --model-dim")
    steps, total = [], 0.0
    for seg in release.segments:
        lc1 = log_capacity_gaussian(seg.noise_multiplier * release.clip_norm, release.clip_norm, cfg.model_dim)
        # log(1 − q + q·C1) = log C1 + log(q + (1 − q)/C1), stable for huge C1
        lcq = lc1 if seg.sample_rate == 1.0 else lc1 + math.log(seg.sample_rate + (1 - seg.sample_rate) * math.exp(-lc1))
        steps.append({"sigma": seg.noise_multiplier * release.clip_norm, "radius": release.clip_norm,
                      "dim": cfg.model_dim, "log_capacity_step": lc1, "log_capacity_subsampled_step": lcq,
                      "steps": seg.steps})
        total += seg.steps * lcq
    k = cfg.kappa_value
    log_succ = math.log(k) + total
    return {"applicable": True, "log_capacity": total, "segments": steps,
            "success_upper": math.exp(min(0.0, log_succ)), "log10_success_upper": min(0.0, log_succ) / math.log(10),
            "formula": "log C <= sum_s T_s log(1 - q_s + q_s C_1(sigma_s C, C, p)); success <= kappa * C "
                       "(Biswas et al. 2024, Thm 5 corrected, Eq. 13; natural log)"}


# -- calibration and the empirical attack ------------------------------------------------------
def calibration_entry(release: Release, cfg: ReportConfig) -> dict:
    """``calibrate --target-rero``: the smallest σ at this q, T with certified ReRo ≤ target, ε and the bound."""
    from ..api import calibrate_noise
    from ..bounds.rero import rero_bounds

    if cfg.target_rero is None:
        return _na("no target risk given (--target-rero)")
    if not release.homogeneous:
        return _na("calibration solves for one noise multiplier at one (q, T); this release has several segments")
    k = cfg.kappa_value
    if cfg.target_rero <= k:
        return _na(f"target_rero={cfg.target_rero:g} is at or below the blind guess kappa={k:g}: no noise reaches it")
    try:
        d = calibrate_noise(cfg.target_rero, release.sample_rate, release.steps, kappa=k, delta=cfg.delta)
    except ReconRiskError as exc:  # e.g. a target above the noiseless success at this q, T: say so on the page
        return _na(f"calibrate: {exc}")
    d["prior_size"] = cfg.prior_size
    d["noise_multiplier_bracket"] = d.pop("bracket")
    upper = d.pop("rero_upper")
    method = d.pop("method", "pld")
    b = rero_bounds(Release(d["noise_multiplier"], d["sample_rate"], d["steps"]), d["kappa"],
                    method="closed_form" if method == "closed_form" else "pld")[0]
    d["rero"] = {"method": method, "lower": b.lower, "upper": min(upper, b.upper)}
    d["applicable"] = True
    d["formula"] = ("bisection on log sigma of the certified ReRo upper end (closed form solved exactly at q = 1); "
                    "error: noise_multiplier_bracket")
    d["current_noise_multiplier"] = release.noise_multiplier
    d["meets_target_now"] = release.noise_multiplier >= d["noise_multiplier"]
    return d


def attack_entry(release: Release, cfg: ReportConfig, progress: Callable[[int], None] | None = None) -> dict:
    """``audit`` at this release: the informed adversary's empirical success with its Clopper–Pearson CI."""
    if not cfg.attack:
        return _na("not requested (--attack)")
    if cfg.prior_size is None:
        return _na("the attack draws a prior of N candidates from the data: give --prior-size")
    if not release.homogeneous:
        return _na("the audit trains one (sigma, q) run; this release has several segments")
    from ..data import load_dataset
    from .audit import AuditSetting, run_setting

    attacks = ("alg2",) if release.sample_rate >= 1.0 else ("alg3", "alg2", "loglik")  # ``audit``'s defaults
    setting = AuditSetting(release, prior_size=cfg.prior_size, trials=cfg.trials, delta=cfg.delta,
                           attacks=attacks, seed=cfg.attack_seed)
    res = run_setting(setting, load_dataset("digits"), progress=progress)
    d = res.to_dict()
    d.update(applicable=True, dataset="digits", model=setting.model,
             formula="success rate over trials of the prior-aware attack (Hayes, Mahloujifar & Balle 2023, Alg. 2/3), Clopper-Pearson 95% CI")
    return d


# -- the report ---------------------------------------------------------------------------------
def summary_entry(report: dict, cfg: ReportConfig) -> dict:
    """The numbers of the plain-language summary (the page words them; nothing here is hard-coded)."""
    rr = report["rero"]
    head = rr[rr["headline"]]
    out = {"kappa": rr["kappa"], "prior_size": cfg.prior_size, "rero_upper": head["upper"], "method": head["method"],
           "epsilon": report["epsilon"]["value"], "delta": cfg.delta}
    for r in report["risks"]:
        if r["measure"] == "membership-advantage":
            out["membership_advantage_upper"] = r["upper"]
    cal = report["calibration"]
    if cal.get("applicable"):
        out["target_rero"] = cal["target_rero"]
        out["calibrated_noise_multiplier"] = cal["noise_multiplier"]
        out["meets_target_now"] = cal["meets_target_now"]
    return out


def risk_report(release: Release, config: ReportConfig | None = None, *,
                progress: Callable[[str], None] | None = None,
                mc_progress: Callable[[int], None] | None = None) -> dict:
    """Every bound family for one release and prior (see the module docstring); ``progress(stage)`` names each."""
    gaussian_release(release, "reconrisk report")
    cfg = config or ReportConfig()
    note = progress or (lambda stage: None)
    out: dict = {"release": release.to_dict(), "config": cfg.to_dict()}
    note("epsilon")
    out["epsilon"] = epsilon_entry(release, cfg.delta)
    note("ReRo")
    out["rero"] = rero_entry(release, cfg, out["epsilon"], mc_progress)
    out["rero_vs_prior"] = rero_vs_prior(release)
    note("trade-off curve")
    out["tradeoff"] = tradeoff_entry(release)
    note("risk measures")
    out["risks"] = risks_entry(release, cfg)
    note("Fano, MSE, analytic, capacity")
    out["fano"] = fano_entry(release, cfg)
    out["mse"] = mse_entry(release, cfg)
    out["analytic"] = analytic_entry(release, cfg)
    out["capacity"] = capacity_entry(release, cfg)
    note("calibration")
    out["calibration"] = calibration_entry(release, cfg)
    note("attack")
    out["attack"] = attack_entry(release, cfg)
    out["summary"] = summary_entry(out, cfg)
    return out
