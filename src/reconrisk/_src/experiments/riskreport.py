"""One risk report for one release: every bound family side by side (computation only; ``report/html.py`` draws).

:func:`risk_report` takes a :class:`~reconrisk._src.release.Release` and a prior (κ, or a uniform prior over N
candidates) and returns a JSON-ready dict. Each family calls **the same function, with the same defaults,
as the command that prints it alone**, so the numbers equal that command's ``--json`` output
(``tests/test_report.py`` checks this field by field):

============================  =========================================================  ==========================
family                        function (source)                                          command
============================  =========================================================  ==========================
ε at δ                        ``accounting.epsilon`` (PLD; RDP where PLD's grid fails)   ``bound``
ReRo, PLD bracket / closed    ``measures.rero.rero_bounds(method="pld"/"closed_form")``  ``bound --method all``
ReRo, RDP optimal conversion  ``rdp_tradeoff.rero_release_rdp``                          ``bound`` (baselines.rdp)
ReRo, RDP Eq. (2) (JSON)      ``rero_bounds(method="rdp")``                              ``bound`` (baselines.rdp_hayes2023_eq2)
ReRo, Monte Carlo + CI        ``start_monte_carlo(samples, seed, confidence)`` (= mc)    ``bound --method mc``
trade-off curve f(α)          ``measures.tradeoff.tradeoff`` on the ``tradeoff`` α grid  ``tradeoff``
operational risks             ``measures.risk.all_risks`` (+ ``risk(.., "attribute")``)  ``risk --measure all``
Fano (Hayes, Mahloujifar & Balle 2023, App. H)        ``theory.fano`` (new; no command of its own)               —
Guo's RDP MSE bound           ``theory.mse.mse_bound(release=…)``                        ``mse-bound``
analytic MSE/PSNR ReRo        ``theory.analytic.analytic_bound`` (averaged = T)          ``analytic bound``
Bayes' capacity               ``theory.capacity.log_capacity_gaussian`` per step         ``capacity gaussian``
calibrated σ                  ``calibrate`` (+ the certified bound at σ)                 ``calibrate``
empirical attack (--attack)   ``experiments.audit.run_setting``                          ``audit``
============================  =========================================================  ==========================

Each entry carries its formula/source and its error: a certified bracket (``lower``/``upper``), a
confidence interval (Monte Carlo, attacks), or ``exact``. Families whose assumptions fail for this release
are kept with ``"applicable": false`` and the reason, never dropped silently.

A ``dp_accounting`` event that is not DP-SGD with Gaussian noise (a release file of Laplace events) gets
its :class:`~reconrisk._src.analysis.events.EventAnalysis`: ε, the ReRo bracket, the trade-off curve and every
operational risk are certified two-sided from the event's distributions; the families that read σ, q, T
(RDP baseline, Monte Carlo, Fano, MSE, analytic attack, capacity, calibration, attack) say in one line that
they are not defined for the event, naming it.

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
from ..accounting import epsilon
from ..analysis.base import RELEASE_ONLY
from ..analysis.calibrate import calibrate, meets
from ..analysis.dispatch import analyse
from ..analysis.privacy import PrivacyAnalysis
from ..data import load_dataset
from ..errors import ReconRiskError
from ..measures.conversions import rero_from_dp
from ..results import below_certified
from ..measures.rdp_tradeoff import rero_release_rdp
from ..measures.rero import start_monte_carlo
from ..measures.risk import CLI_NAMES, all_risks
from ..priors import resolve_kappa
from ..release import Release
from ..theory.analytic import analytic_bound
from ..theory.capacity import log_capacity_gaussian
from ..theory.fano import fano_bound, gaussian_mutual_information, kl_mutual_information, release_mutual_information
from ..theory.mse import mse_bound
from .audit import AuditSetting, run_setting

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


def _not_for(analysis, what: str) -> str:
    """Why ``what`` (a family that reads σ, q and T) is not on this page: the analysis's own reason for the
    ``mechanism`` question (:meth:`~reconrisk._src.analysis.base.Analysis.supports`), naming the family."""
    reason = analysis.supports("mechanism").reason
    head = RELEASE_ONLY["mechanism"]
    return what + reason[len(head):] if reason.startswith(head) else f"{what}: {reason}"


# -- ε and ReRo -------------------------------------------------------------------------------
def epsilon_entry(analysis: PrivacyAnalysis, delta: float) -> dict:
    """ε at δ as ``reconrisk bound`` reports it (PLD, RDP where the PLD grid cannot hold the loss range)."""
    analysis = analyse(analysis)
    release = analysis.release
    try:
        b = analysis.epsilon(delta)
        out = {"value": b.upper, "lower": b.lower, "accountant": "pld", "delta": delta}
    except ReconRiskError as exc:
        if "too small for the PLD accountant" not in str(exc):
            raise
        out = {"value": epsilon(release=release, delta=delta, accountant="rdp"), "accountant": "rdp", "delta": delta}
    out["formula"] = ("smallest eps with delta(eps) <= delta on the pessimistic PLD (an upper bound on the true eps)"
                      if out["accountant"] == "pld" else "RDP conversion min_a eps_a + log((a-1)/a) - (log delta + log a)/(a-1)")
    return out


def rero_entry(analysis: PrivacyAnalysis, cfg: ReportConfig, eps: dict,
               progress: Callable[[int], None] | None = None, *, mc=None) -> dict:
    """Every ReRo method of ``bound`` at κ, with the ε-based baselines.

    ``mc``: the Monte Carlo already started (:func:`start_monte_carlo_entry`); its row is then left for
    :func:`finish_monte_carlo_entry` to fill in, so the draws run while the other families are computed."""
    analysis = analyse(analysis)
    k = cfg.kappa_value
    out: dict = {"kappa": k, "prior_size": cfg.prior_size}
    out["pld"] = analysis.rero(k).to_dict()
    if not analysis.supports("mechanism"):  # an event: the PLD bracket and the (eps, delta) baseline only
        out["rdp"] = _na(_not_for(analysis, "the RDP baseline"))
        out["rdp_hayes2023_eq2"] = _na(_not_for(analysis, "the RDP baseline"))
        out["dp"] = {"method": "dp", "lower": None, "upper": float(rero_from_dp(k, eps["value"], cfg.delta)[0]),
                     "formula": "kappa e^epsilon + delta (Balle, Cherubin & Hayes 2022)"}
        out["mc"] = _na(_not_for(analysis, "the Monte-Carlo estimate"))
        out["headline"] = "pld"
        return out
    if analysis.supports("rero_closed_form"):
        out["closed_form"] = analysis.rero(k, method="closed_form").to_dict()
    # the release's own RDP curve: its optimal conversion (the row shown), and Hayes et al.'s Eq. 2 (JSON only)
    out["rdp"] = rero_release_rdp(analysis.release, k)[0].to_dict()
    out["rdp_hayes2023_eq2"] = analysis.rero(k, method="rdp").to_dict()
    out["dp"] = {"method": "dp", "lower": None, "upper": float(rero_from_dp(k, eps["value"], cfg.delta)[0]),
                 "formula": "kappa e^epsilon + delta (Balle, Cherubin & Hayes 2022)"}
    _drop_inconsistent(out)
    if mc is not None:
        out["mc"] = None  # (its place in the JSON; filled in by finish_monte_carlo_entry)
    elif cfg.samples:
        out["mc"] = finish_monte_carlo_entry(start_monte_carlo_entry(analysis, cfg, progress))
    else:
        out["mc"] = _na("Monte Carlo skipped (samples = 0)")
    out["headline"] = "closed_form" if "closed_form" in out else "pld"
    return out


def _drop_inconsistent(out: dict) -> None:
    """An upper-only row below the certified bracket's lower end is a numerical failure: not shown as a bound."""
    certified = [(out[m]["lower"], m) for m in ("pld", "closed_form") if m in out and out[m].get("lower") is not None]
    if not certified:
        return
    lower, which = max(certified)
    for key in ("rdp", "rdp_hayes2023_eq2", "dp"):
        r = out.get(key)
        reason = below_certified(r.get("upper"), lower, what=f"the {key} baseline", against=f"{which} bracket") \
            if r and r.get("applicable", True) else None
        if reason:
            out[key] = _na(reason, value=r["upper"], method=r.get("method"))


def start_monte_carlo_entry(analysis: PrivacyAnalysis, cfg: ReportConfig,
                            progress: Callable[[int], None] | None = None, sampler=None):
    """``bound --method mc`` at the report's κ, started on background threads (None when ``samples`` is 0).

    ``sampler``: the draws already started by the caller (see :func:`~reconrisk._src.measures.rero.start_monte_carlo`)."""
    if not cfg.samples or not analysis.supports("rero_mc"):  # an event without a Gaussian reading: no Monte Carlo
        if sampler is not None:
            sampler.cancel()
        return None
    return start_monte_carlo(analysis, cfg.kappa_value, samples=cfg.samples, seed=cfg.seed,
                             confidence=cfg.confidence, progress=progress, sampler=sampler)


def finish_monte_carlo_entry(mc) -> dict:
    """The Monte-Carlo row: waits for (and helps with) the draws started by :func:`start_monte_carlo_entry`."""
    return mc.bounds()[0].to_dict()


def rero_vs_prior(analysis: PrivacyAnalysis, prior_sizes=PRIOR_SIZES) -> dict:
    """PLD bracket, the RDP bound and Fano's bound (as in :func:`fano_entry`) at κ = 1/N for each N.

    ``rdp`` is the optimal RDP conversion, the same as the table's RDP row (:func:`rero_entry`'s ``rdp``);
    Hayes, Mahloujifar & Balle's (2023) Eq. 2 is kept beside it as ``rdp_hayes2023_eq2`` (not drawn)."""
    analysis = analyse(analysis)
    release = analysis.release
    ns = [int(n) for n in prior_sizes]
    kap = np.array([1.0 / n for n in ns])
    if not analysis.supports("mechanism"):  # an event: its own bracket per prior size (the RDP and Fano bounds read sigma, q, T)
        pld = analysis.rero_many(kap)
        return {"prior_size": ns, "kappa": kap.tolist(), "lower": [r.lower for r in pld],
                "upper": [r.upper for r in pld], "rdp": None, "rdp_method": None, "rdp_hayes2023_eq2": None, "fano": None}
    pld = analysis.rero_many(kap, method="pld")
    rdp = rero_release_rdp(release, kap)  # the conversion of the table's RDP row (rero_entry), at every N
    eq2 = analysis.rero_many(kap, method="rdp")  # Hayes et al.'s Eq. 2: a named baseline, JSON only
    kl, kl_err = kl_mutual_information(release)  # the prior-free part of Fano's I, computed once
    fano = [fano_bound(min(kl + kl_err, _closed_form_mi(release, n)), n).success.upper for n in ns]
    rdp_upper = [None if below_certified(r.upper, b.lower, what="rdp", against="pld") else r.upper
                 for r, b in zip(rdp, pld)]  # below the certified lower end: a numerical failure, not a bound
    return {"prior_size": ns, "kappa": kap.tolist(), "lower": [r.lower for r in pld], "upper": [r.upper for r in pld],
            "rdp": rdp_upper, "rdp_method": rdp[0].method,
            "rdp_hayes2023_eq2": [None if below_certified(r.upper, b.lower, what="rdp_hayes2023_eq2", against="pld")
                                  else r.upper for r, b in zip(eq2, pld)], "fano": fano}


def _closed_form_mi(release: Release, n: int) -> float:
    """Hayes, Mahloujifar & Balle 2023, App. H's Gaussian closed form at Δ = 2C over every full-batch step (inf when q < 1)."""
    if not release.full_batch:
        return math.inf
    r2 = sum(seg.steps * (2.0 / seg.noise_multiplier) ** 2 for seg in release.segments)
    return gaussian_mutual_information(n, math.sqrt(r2))


# -- curve and operational risks ---------------------------------------------------------------
def tradeoff_entry(analysis: PrivacyAnalysis) -> dict:
    analysis = analyse(analysis)
    lo, hi, n = TRADEOFF_ALPHA
    d = analysis.tradeoff(np.logspace(np.log10(lo), np.log10(hi), n)).to_dict()
    d["formula"] = ("beta_lower <= f(alpha) <= beta_upper: exact GDP curve (q = 1) or the optimistic/pessimistic "
                    "PLDs' Neyman-Pearson tests (Dong, Roth, Su 2022)")
    return d


def risks_entry(analysis: PrivacyAnalysis, cfg: ReportConfig) -> list[dict]:
    """``risk --measure all`` (with the report's baseline and --fpr) and attribute inference at its baseline."""
    analysis = analyse(analysis)
    base = {"prior_size": cfg.prior_size} if cfg.prior_size is not None else {"kappa": cfg.kappa}
    rows = [r.to_dict() for r in all_risks(analysis, fpr=cfg.fpr, **base)]
    rows.insert(2 if cfg.prior_size is not None else 1,
                analysis.risk("attribute", baseline=cfg.attribute_baseline).to_dict())
    return [{"measure": CLI_NAMES[r["quantity"]], **r} for r in rows]


# -- information-theoretic and MSE families ----------------------------------------------------
def fano_entry(release: Release, cfg: ReportConfig) -> dict:
    if cfg.prior_size is None:
        return _na("Fano needs a uniform prior over N candidates (--prior-size), not only kappa")
    mi = release_mutual_information(release, cfg.prior_size)
    fb = fano_bound(mi["mutual_information"], cfg.prior_size)
    return {"applicable": True, **fb.to_dict(), "information": mi,
            "source": "Guo, Sablayrolles & Sanjabi 2022 via Hayes, Mahloujifar & Balle 2023, App. H; I bounded by " + mi["source"].replace("_", " ")}


def mse_entry(release: Release, cfg: ReportConfig) -> dict:
    d = mse_bound(release=release, diam=cfg.diam).to_dict()
    d["formula"] = "MSE >= diam^2/(4(e^eps2 - 1)), eps2 = RDP at order 2 (Guo, Karrer, Chaudhuri & van der Maaten 2022, Thm 1)"
    d["applies_to"] = "unbiased reconstruction attacks, data in a box of per-coordinate diameter diam"
    return d


ANALYTIC_ASSUMPTIONS = (
    "the adversary controls the model: a malicious linear layer whose rows all copy the target (Riess et al. 2024, Prop. 1)",
    "the target is alone in its batch (B = 1) and the scales are known to the adversary (Riess et al. 2024, §4)",
    "full batch (q = 1): the target is in every step, and the T reconstructions are matched and averaged (Prop. 7)",
)


def analytic_entry(release: Release, cfg: ReportConfig) -> dict:
    """Riess et al.'s (2024) optimal analytic attack, only where its assumptions hold (q = 1, one (σ, q) segment)."""
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
    if cfg.model_dim is None:
        return _na("Bayes' capacity of the Gaussian mechanism grows with the dimension p of the released gradient; "
                   "give it with --model-dim")
    steps, total = [], 0.0
    for seg in release.segments:
        lc1 = log_capacity_gaussian(seg.noise_multiplier * release.clip_norm, release.clip_norm, cfg.model_dim)
        # log(1 − q + q·C1) = log C1 + log(q + (1 − q)/C1), stable for huge C1
        lcq = lc1 if seg.sample_rate == 1.0 else lc1 + math.log(seg.sample_rate + (1 - seg.sample_rate) * math.exp(-lc1))
        steps.append({"noise_std": seg.noise_multiplier * release.clip_norm, "radius": release.clip_norm,
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
def calibration_entry(analysis: PrivacyAnalysis, cfg: ReportConfig) -> dict:
    """``calibrate --target-rero``: the smallest σ at this q, T with certified ReRo ≤ target, ε and the bound there.

    Whether this release meets the target is decided by the certified bound **at this release** (the same
    bound the calibrator holds against the target), never by comparing σ values.
    """
    analysis = analyse(analysis)
    release = analysis.release
    if cfg.target_rero is None:
        return _na("no target risk given (--target-rero)")
    if not release.homogeneous:
        return _na("calibration solves for one noise multiplier at one (q, T); this release has several segments")
    k = cfg.kappa_value
    if cfg.target_rero <= k:
        return _na(f"target_rero={cfg.target_rero:g} is at or below the blind guess kappa={k:g}: no noise reaches it")
    try:
        cal = calibrate("reconstruction", cfg.target_rero, sample_rate=release.sample_rate, steps=release.steps,
                        kappa=k)
    except ReconRiskError as exc:  # e.g. a target above the noiseless success at this q, T: say so on the page
        return _na(f"calibrate: {exc}")
    now = analysis.risk("reconstruction", kappa=k)
    b = cal.bound
    return {
        "applicable": True, "target_rero": cal.target, "kappa": k, "prior_size": cfg.prior_size,
        "noise_multiplier": cal.noise_multiplier, "sample_rate": cal.sample_rate, "steps": cal.steps,
        "noise_multiplier_bracket": list(cal.bracket), "evaluations": cal.evaluations,
        "rero": {"method": b.method, "lower": b.lower, "upper": b.upper},
        "delta": cfg.delta, "epsilon": PrivacyAnalysis(cal.release).epsilon(cfg.delta).upper,
        "formula": ("smallest sigma whose certified ReRo upper end is <= the target (bisection on log sigma; closed form "
                    "at q = 1); error: noise_multiplier_bracket"),
        "current_noise_multiplier": release.noise_multiplier,
        "current_rero": {"method": now.method, "lower": now.lower, "upper": now.upper},
        "meets_target_now": meets(now, cal.target),
    }


def attack_entry(release: Release, cfg: ReportConfig, progress: Callable[[int], None] | None = None) -> dict:
    """``audit`` at this release: the informed adversary's empirical success with its Clopper–Pearson CI."""
    if not cfg.attack:
        return _na("not requested (--attack)")
    if cfg.prior_size is None:
        return _na("the attack draws a prior of N candidates from the data: give --prior-size")
    if not release.homogeneous:
        return _na("the audit trains one (sigma, q) run; this release has several segments")
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


def risk_report(release, config: ReportConfig | None = None, *,
                progress: Callable[[str], None] | None = None,
                mc_progress: Callable[[int], None] | None = None,
                before_monte_carlo: Callable[[dict], None] | None = None, sampler=None) -> dict:
    """Every bound family for one release and prior (see the module docstring); ``progress(stage)`` names each.

    ``release``: a :class:`~reconrisk._src.release.Release`, a ``dp_accounting`` event or their analysis
    (:func:`~reconrisk._src.analysis.privacy.analyse`: a release is wrapped once, never rebuilt). Every family asks the
    one analysis, so the release's privacy-loss distributions are composed at most once per discretisation
    level; ``out["analysis"]["compositions"]`` says how many were made.

    The Monte-Carlo draws start first, on background threads, and run while the other families are computed
    (numbers as ``bound --method mc``: they depend on the seed only). ``before_monte_carlo(report)``, if given,
    is called with the report whose Monte-Carlo row is not in yet (``report["rero"]["mc"]`` is None), before
    waiting for it — the CLI draws the figures there, which do not show that row. ``sampler``: those draws
    already started by the caller (:class:`~reconrisk._src.measures.montecarlo.LogRatioSampler`; used when it is this
    release's, seed's and sample count's, otherwise cancelled and drawn anew).
    """
    try:
        analysis = analyse(release)
        cfg = config or ReportConfig()
    except BaseException:
        if sampler is not None:
            sampler.cancel()
        raise
    mc = start_monte_carlo_entry(analysis, cfg, mc_progress, sampler)
    try:
        out = _families(analysis, cfg, progress, mc)
        if mc is not None:
            if before_monte_carlo is not None:
                before_monte_carlo(out)
            out["rero"]["mc"] = finish_monte_carlo_entry(mc)
    except BaseException:
        if mc is not None:
            mc.cancel()
        raise
    return out


def _families(analysis: PrivacyAnalysis, cfg: ReportConfig, progress, mc) -> dict:
    """Every family in the page's order. An :class:`~reconrisk._src.analysis.events.EventAnalysis` (no σ, q, T) gets
    the families its distributions answer, and one line naming the event for each family that reads σ, q, T."""
    mechanism = analysis.supports("mechanism")  # σ, q and T known: a DP-SGD release
    release = analysis.release
    note = progress or (lambda stage: None)
    src = analysis.source.to_dict() if mechanism else analysis.describe()  # as run (sampler, σ)
    out: dict = {"release": src, "config": cfg.to_dict()}
    note("epsilon")
    out["epsilon"] = epsilon_entry(analysis, cfg.delta)
    if not mechanism:
        out["epsilon"]["formula"] = ("smallest eps with delta(eps) <= delta on the pessimistic (upper) and "
                                     "optimistic (lower) PLDs of the event")
    note("ReRo")
    out["rero"] = rero_entry(analysis, cfg, out["epsilon"], mc=mc)
    out["rero_vs_prior"] = rero_vs_prior(analysis)
    note("trade-off curve")
    out["tradeoff"] = tradeoff_entry(analysis)
    note("risk measures")
    out["risks"] = risks_entry(analysis, cfg)
    note("Fano, MSE, analytic, capacity")
    if not mechanism:
        for key, what in (("fano", "Fano's bound"), ("mse", "Guo et al.'s MSE bound"),
                          ("analytic", "the analytic attack"), ("capacity", "Bayes' capacity of the Gaussian mechanism")):
            out[key] = _na(_not_for(analysis, what))
    else:
        out["fano"] = fano_entry(release, cfg)
        out["mse"] = mse_entry(release, cfg)
        out["analytic"] = analytic_entry(release, cfg)
        out["capacity"] = capacity_entry(release, cfg)
    note("calibration")
    out["calibration"] = (calibration_entry(analysis, cfg) if analysis.supports("calibrate")
                          else _na(_not_for(analysis, "calibration of sigma")))
    note("attack")
    out["attack"] = (attack_entry(release, cfg) if mechanism
                     else _na(_not_for(analysis, "the informed adversary's audit")))
    out["summary"] = summary_entry(out, cfg)
    out["analysis"] = {"compositions": analysis.composition_count}
    return out
