"""Hayes, Mahloujifar & Balle 2023 (*Bounding Training Data Reconstruction in DP-SGD*): Figs. 2, 3 and 5.

* ``hayes-fig2`` — Fig. 2: at ε ∈ {1, 10, 100} (δ = 1e-5, q = 1, T = 100,
  prior size 10) the certified ReRo bound (Cor. 4, PLD bracket), the Rényi-DP
  bound of Balle et al. (Hayes, Mahloujifar & Balle 2023, Eq. 2) and the prior-aware attack (Alg. 2).
* ``hayes-fig3`` — Fig. 3: the bound against the prior size 2…2¹¹ at several
  ε, with the attack for a few prior sizes.
* ``hayes-fig5`` — Fig. 5: at (4, 1e-5)-DP and T = 100, σ calibrated for each
  q ∈ [0.01, 0.99] (PLD accountant, add/remove, Poisson) and the bound γ(q)
  (5a), with the improved prior-aware attack (Alg. 3, 5b) at a few q.

Paper values: Fig. 5's quoted ≈0.20/≈0.35 (bound) and ≈0.15/≈0.32 (attack);
the curves' values are spec_000 §4b (recomputed from the paper's Alg. 1 with
10⁶ samples), held to ±0.01. Departures: the embedded 8×8 digits
and the library's MLP stand in for CIFAR-10/WRN-28-10 (Fig. 2) and MNIST
(Figs. 3, 5); C = 0.1 everywhere so that every gradient is clipped (spec_000
§5.7; Fig. 5 used C = 1 on MNIST).
"""

from __future__ import annotations

import numpy as np

from ..analysis.calibrate import noise_multiplier_for_epsilon
from ..analysis.privacy import PrivacyAnalysis
from ..api import rero_bound
from ..data import load_dataset
from ..experiments.audit import calibrated_settings, run_setting
from ..measures.conversions import rdp_rero_bound
from ..analysis.privacy_rero import pld_bracket
from ..release import Release
from .recipes import Recipe, RecipeOutput, rate_row, register, row, say

DELTA = 1e-5
STEPS = 100
#: spec_000 §4b: γ at q = 1, T = 100 (exact GDP calibration, Alg. 1 with 10⁶ samples) for n = 2, 10, 100, 1024.
FIG3_PAPER = {1.0: (0.6057, 0.1554, 0.0198, 0.0023), 4.0: (0.8225, 0.3607, 0.0805, 0.0149),
              10.0: (0.9773, 0.7639, 0.3722, 0.1364), 100.0: (1.0, 1.0, 1.0, 1.0)}
FIG3_SIZES = (2, 10, 100, 1024)
#: spec_000 §4b: the RDP bound (Eq. 2) at n = 10.
RDP_PAPER = {1.0: 0.1715, 4.0: 0.4745, 10.0: 0.9895, 100.0: 1.0}
#: spec_000 §4b Fig. 5 table: q → (PLD σ, PLD γ) at ε = 4, δ = 1e-5, T = 100, κ = 0.1.
FIG5_PAPER = {0.01: (0.5905, 0.186), 0.02: (0.6877, 0.223), 0.05: (0.9395, 0.282), 0.1: (1.386, 0.319),
              0.2: (2.375, 0.341), 0.5: (5.511, 0.355), 0.99: (10.706, 0.361)}
#: What the paper's text says about Fig. 5 (Sec. 4.3): bound and attack at the two ends of q.
FIG5_TEXT = {0.01: ("≈0.20", "≈0.15", 0.15), 0.99: ("≈0.35", "≈0.32", 0.32)}
_TOL = 0.01


def _audit(epsilons, *, sample_rate, prior_size, trials, known_size, attack, seed, progress, label):
    """Run the informed-adversary audit (experiments.audit) at each ε; σ calibrated with the PLD accountant."""

    ds = load_dataset("digits")
    settings = calibrated_settings(list(epsilons), sample_rate=sample_rate, steps=STEPS, clip_norm=0.1, delta=DELTA,
                                   prior_size=prior_size, trials=trials, known_size=known_size, attacks=(attack,),
                                   seed=seed)
    out = []
    for s in settings:
        say(progress, f"{label}: attack at ε = {s.epsilon:g}, q = {s.sample_rate:g}, n = {prior_size} ({trials} trials)")
        out.append(run_setting(s, ds))
    return out


def _axes(**panels) -> dict:
    return {"axes": panels}


# ----------------------------------------------------------------------------------------
# Fig. 2
# ----------------------------------------------------------------------------------------
def _fig2(p: dict, seed: int, progress) -> RecipeOutput:
    rows = []
    results = _audit(p["epsilons"], sample_rate=1.0, prior_size=10, trials=p["trials"], known_size=p["known_size"],
                     attack="alg2", seed=seed, progress=progress, label="Fig. 2")
    for r in results:
        eps = r.epsilon
        st = f"ε = {eps:g}, σ = {r.setting.noise_multiplier:.4g}"
        rows.append(row("ReRo bound γ (Cor. 4, PLD bracket)", st, r.certificate.rero.upper, lower=r.certificate.rero.lower, upper=r.certificate.rero.upper,
                        error="certified bracket", paper=FIG3_PAPER[eps][1],
                        paper_text="Fig. 2 bound curve (spec_000 §4b, Alg. 1)", tol=_TOL, panel="Fig. 2", x=eps,
                        series="ReRo bound"))
        rdp = float(rdp_rero_bound(r.setting.release.segments, [0.1])[0])
        rows.append(row("RDP bound (Eq. 2, Balle et al.)", st, rdp, paper=RDP_PAPER[eps],
                        paper_text="Fig. 2 RDP bound; trivial at ε ∈ {10, 100}", tol=_TOL, panel="Fig. 2", x=eps,
                        series="RDP bound"))
        rate = r.rates["alg2"]
        rows.append(rate_row("prior-aware attack (Alg. 2)", st, rate, paper_text="close to the bound, below it",
                             empirical=r.empirical("alg2"),
                             agrees=bool(rate.ci[0] <= r.certificate.rero.upper), panel="Fig. 2", x=eps, series="attack (Alg. 2)"))
    info = {"prior_size": 10, "kappa": 0.1, "steps": STEPS, "sample_rate": 1.0, "delta": DELTA, "clip_norm": 0.1,
            "known_size": results[0].known_size, "dataset": "digits",
            **_axes(**{"Fig. 2": {"xlabel": "ε (δ = 1e-5)", "ylabel": "reconstruction success", "xlog": True}})}
    return RecipeOutput(rows, info)


register(Recipe(
    name="hayes-fig2", citation="Hayes, Mahloujifar & Balle 2023",
    paper="Hayes, Mahloujifar, Balle — Bounding Training Data Reconstruction in DP-SGD",
    reproduces="Fig. 2: ReRo bound, RDP bound and prior-aware attack at ε = 1, 10, 100 (q = 1, T = 100, prior 10)",
    sizes={"tiny": {"epsilons": (1.0, 10.0, 100.0), "trials": 24, "known_size": 19},
           "small": {"epsilons": (1.0, 10.0, 100.0), "trials": 200, "known_size": 49},
           "full": {"epsilons": (1.0, 10.0, 100.0), "trials": 10_000, "known_size": 499}},
    scale="small form: 200 attack trials per ε, |D₋| = 49; --full: 10,000 trials, |D₋| = 499 as in the paper",
    compute=_fig2, uses_jax=True,
    departures="digits + MLP instead of CIFAR-10 + WRN-28-10; C = 0.1 (every gradient clipped) instead of C = 1",
))


# ----------------------------------------------------------------------------------------
# Fig. 3
# ----------------------------------------------------------------------------------------
def _fig3(p: dict, seed: int, progress) -> RecipeOutput:
    rows = []
    sizes = tuple(p["bound_sizes"])
    bounds = {}
    say(progress, "Fig. 3: certified bounds")
    for eps in p["epsilons"]:
        sigma = noise_multiplier_for_epsilon(eps, 1.0, STEPS, DELTA)
        lo, up, _ = pld_bracket(PrivacyAnalysis(Release(sigma, 1.0, STEPS)), np.array([1.0 / n for n in sizes]))
        for n, a, b in zip(sizes, lo, up):
            bounds[(eps, n)] = float(b)
            ref = dict(zip(FIG3_SIZES, FIG3_PAPER.get(eps, ()))).get(n)
            rows.append(row("ReRo bound γ (PLD bracket)", f"ε = {eps:g}, n = {n}", b, lower=a, upper=b,
                            error="certified bracket", paper=ref,
                            paper_text="Fig. 3 bound curve (spec_000 §4b)" if ref is not None else "curve only",
                            tol=_TOL if ref is not None else None, panel="bound", x=n, series=f"bound, ε = {eps:g}"))
    for n in p["attack_sizes"]:
        for r in _audit(p["attack_epsilons"], sample_rate=1.0, prior_size=n, trials=p["trials"],
                        known_size=p["known_size"], attack="alg2", seed=seed, progress=progress, label="Fig. 3"):
            rate = r.rates["alg2"]
            rows.append(rate_row("prior-aware attack (Alg. 2)", f"ε = {r.epsilon:g}, n = {n}", rate,
                                 empirical=r.empirical("alg2"),
                                 paper_text="below the bound; tight for ε < 10, n ≤ 2¹⁰",
                                 agrees=bool(rate.ci[0] <= r.certificate.rero.upper), panel="attack", x=n,
                                 series=f"attack, ε = {r.epsilon:g}"))
            rows.append(row("ReRo bound γ (PLD bracket)", f"ε = {r.epsilon:g}, n = {n}", r.certificate.rero.upper,
                            lower=r.certificate.rero.lower, upper=r.certificate.rero.upper, error="certified bracket", panel="attack", x=n,
                            series=f"bound, ε = {r.epsilon:g}", paper_text="(the bound beside the attack)"))
    ax = {"xlabel": "prior size n (κ = 1/n)", "ylabel": "reconstruction success", "xlog": True}
    info = {"steps": STEPS, "sample_rate": 1.0, "delta": DELTA, "clip_norm": 0.1, "dataset": "digits",
            **_axes(bound=ax, attack=ax)}
    return RecipeOutput(rows, info)


register(Recipe(
    name="hayes-fig3", citation="Hayes, Mahloujifar & Balle 2023",
    paper="Hayes, Mahloujifar, Balle — Bounding Training Data Reconstruction in DP-SGD",
    reproduces="Fig. 3: reconstruction bound and prior-aware attack against the prior size, several ε (q = 1, T = 100)",
    # tiny: prior 10 and the trial shape of hayes-fig2's tiny form, so a test session compiles the trial once
    sizes={"tiny": {"epsilons": (1.0, 4.0, 10.0, 100.0), "bound_sizes": FIG3_SIZES, "attack_sizes": (10,),
                    "attack_epsilons": (4.0,), "trials": 24, "known_size": 19},
           "small": {"epsilons": (1.0, 4.0, 10.0, 100.0), "bound_sizes": FIG3_SIZES, "attack_sizes": (8,),
                     "attack_epsilons": (1.0, 4.0, 10.0), "trials": 200, "known_size": 49},
           "full": {"epsilons": (1.0, 4.0, 10.0, 100.0), "bound_sizes": tuple(sorted({2**k for k in range(1, 12)} | {10, 100})),
                    "attack_sizes": (2, 8, 32, 128, 512), "attack_epsilons": (1.0, 4.0, 10.0, 100.0),
                    "trials": 10_000, "known_size": 999}},
    scale="small form: bounds for n = 2, 10, 100, 1024 and the attack at n = 8 (200 trials, |D₋| = 49); "
          "--full: bounds for n = 2…2¹¹, attack at n = 2…512 with 10,000 trials and |D₋| = 999",
    compute=_fig3, uses_jax=True,
    departures="digits + MLP instead of MNIST; the attack's prior stops at 512 (digits hold 1,797 images)",
))


# ----------------------------------------------------------------------------------------
# Fig. 5
# ----------------------------------------------------------------------------------------
def _fig5(p: dict, seed: int, progress) -> RecipeOutput:
    rows = []
    say(progress, "Fig. 5a: σ calibrated per q and the certified bound")
    for q in p["sample_rates"]:
        sigma = noise_multiplier_for_epsilon(4.0, q, STEPS, DELTA)
        b = rero_bound(sigma, q, STEPS, prior_size=10)
        ref_sigma, ref_gamma = FIG5_PAPER.get(q, (None, None))
        text = FIG5_TEXT.get(q, ("",))[0]
        rows.append(row("σ for (4, 1e-5)-DP (PLD)", f"q = {q:g}", sigma, paper=ref_sigma, rel_tol=0.01,
                        error="root to 1e-4 relative",
                        paper_text="Fig. 5 σ axis (spec_000 §4b, dp_accounting PLD)", panel="σ", x=q, series="σ"))
        rows.append(row("ReRo bound γ (PLD bracket)", f"q = {q:g}, σ = {sigma:.4g}", b.upper, lower=b.lower,
                        upper=b.upper, error="certified bracket", paper=ref_gamma, tol=_TOL,
                        paper_text=f"Fig. 5a (spec_000 §4b){'; text: ' + text if text else ''}", panel="Fig. 5",
                        x=q, series="ReRo bound"))
    for q in p["attack_rates"]:
        for r in _audit((4.0,), sample_rate=q, prior_size=10, trials=p["trials"], known_size=p["known_size"],
                        attack="alg3", seed=seed, progress=progress, label="Fig. 5b"):
            text = FIG5_TEXT.get(q)
            rows.append(rate_row("improved prior-aware attack (Alg. 3)", f"q = {q:g}", r.rates["alg3"],
                                 empirical=r.empirical("alg3"),
                                 paper=None if text is None else text[2],
                                 paper_text=(f"Fig. 5b text: {text[1]}" if text else "Fig. 5b (curve only)"),
                                 tol=0.05 if text else None, panel="Fig. 5", x=q, series="attack (Alg. 3)"))
            if text is None:
                rows[-1]["agrees"] = bool(r.rates["alg3"].ci[0] <= r.certificate.rero.upper)
    ax = {"xlabel": "sample rate q", "xlog": True}
    info = {"epsilon": 4.0, "delta": DELTA, "steps": STEPS, "prior_size": 10, "kappa": 0.1, "clip_norm": 0.1,
            "accountant": "pld (add/remove, Poisson)",
            "attack_tolerance": "±0.05 around the paper's '≈' reading, measured from our 95% CI",
            **_axes(**{"Fig. 5": {**ax, "ylabel": "reconstruction success"}, "σ": {**ax, "ylabel": "σ", "ylog": True}})}
    return RecipeOutput(rows, info)


register(Recipe(
    name="hayes-fig5", citation="Hayes, Mahloujifar & Balle 2023",
    paper="Hayes, Mahloujifar, Balle — Bounding Training Data Reconstruction in DP-SGD",
    reproduces="Fig. 5: σ and the ReRo bound against q at (4, 1e-5)-DP, T = 100, prior 10; the attack at q = 0.01 and 0.99",
    sizes={"tiny": {"sample_rates": (0.01, 0.1, 0.99), "attack_rates": (), "trials": 0, "known_size": 19},
           "small": {"sample_rates": (0.01, 0.05, 0.2, 0.99), "attack_rates": (0.99,), "trials": 200,
                     "known_size": 49},
           "full": {"sample_rates": tuple(FIG5_PAPER), "attack_rates": (0.01, 0.05, 0.2, 0.5, 0.99),
                    "trials": 10_000, "known_size": 999}},
    scale="small form: 4 of the 7 bound points (q = 0.01, 0.05, 0.2, 0.99) and the attack at q = 0.99 (200 trials, "
          "|D₋| = 49); --full: all 7 points, the attack at 5 values of q with 10,000 trials and |D₋| = 999",
    compute=_fig5, uses_jax=True,
    departures="digits + MLP instead of MNIST; C = 0.1 instead of C = 1 (every gradient clipped, spec_000 §5.7)",
))
