"""One-run audit of DP-SGD on the digits: the one-run ε lower bound beside the certified ε, and its time on this CPU.

One training run per noise level (full batch, T = 100, C = 0.1, |D₋| = 500 real digits, m = 1,000 canary slots
of k = 10 sparse random binary candidates each); the transcript attack and the last-iterate attack audit the same
run (reconrisk._src.experiments.onerun; the analysis is reconrisk._src.audit.onerun, Mahloujifar, Melis & Chaudhuri 2025
with Steinke, Nasr & Jagielski 2023). Printed per row: correct guesses at each number of guesses, the one-run
ε lower bound at δ = 1e-5 (no assumption on the curve) and μ lower bound (Gaussian curves), the certified
replace-one ε and μ of the same release (exact for q = 1) and the release's add/remove ε; then wall seconds of
training, attack and analysis (compilation included in the first run of each model; a second call is timed
with ``--repeat``).

    PYTHONPATH=src python3.11 benchmarks/bench_onerun.py [--models mlp mlp:256] [--epsilons 4 32] [--repeat]

Measured (2-core machine shared with other jobs, seed 0): digits MLP, transcript attack, 192/1000 and 211/1000
slots right (blind guess: 100) at add/remove ε = 4 and 32 → one-run ε ≥ 1.01 and 0.96 against the certified
replace-one ε = 9.08 and 88.4 (μ ≥ 0.33 and 0.32 against 1.85 and 9.76); last iterate: ε ≥ 0.05 and 0.12.
mlp:256: transcript ε ≥ 0.69 and 1.21, last iterate 0.28 and 0.45. The count barely moves with the noise: the
other 999 canaries, not the DP noise, limit the attack (760 parameters cannot carry 3,300 bits of choices).
One run with both attacks: 9–27 s wall for the MLP (training 0.1 s compiled, transcript attack 4–5 s,
analysis ≤ 1 s), 25–45 s for mlp:256.

``--analysis`` times the analysis alone (numpy only, no training): one level test (``rejects``) and one whole
result (``onerun_lower_bounds``: ε and μ lower bounds by bisection, 4 guess counts, δ = 1e-5) with the linear
test against the former quadratic one (every start ≤ the observed count; its code is kept below as the
baseline) up to m = ``--old-max`` canaries, the new one alone up to 10⁶, the ratio, and whether the two
results are equal float for float.

    PYTHONPATH=src python3.11 benchmarks/bench_onerun.py --analysis [--old-max 4000]

Measured (2-core machine shared with other jobs): one test near the ε where it flips, quadratic → linear:
0.030 → 0.00004 s at c = 1,000, 0.088 → 0.00005 s at 2,000, 0.27 → 0.00007 s at 4,000 (ratio 745, 1,639,
4,085); 0.004 s at c = 10⁵. One whole result: 1.65 → 0.010 s at m = 1,000 (k = 2), 3.27 → 0.006 s at 2,000,
12.6 → 0.007 s at 4,000 (ratio 166, 508, 1,896), equal float for float at every m the baseline ran; 0.017 s
at m = 10⁶ (k = 2 and 10), plus 0.2 s to guess from 10⁶ slots' scores.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from reconrisk._src.api import noise_multiplier_for_epsilon
from reconrisk._src.audit import onerun
from reconrisk._src.release import Release


# The former O(c²) test, kept once as the suite's reference (tests/test_onerun_bounds.py): the baseline here.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_onerun_bounds import _reference_rejects as _quadratic_rejects  # noqa: E402


def _game(m: int, k: int):
    """A guessing game's counts: 10, 25, 50 and 100 % of the slots guessed, the most confident guessed best."""
    blind = 1.0 / k
    counts = tuple(sorted({max(1, round(f * m)) for f in (0.1, 0.25, 0.5, 1.0)}))
    right = tuple(round(g * (blind + (1 - blind) * (0.25 + 0.15 * (1 - g / m)))) for g in counts)
    return onerun.Guesses(m, k, counts, right)


def _timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def analysis(old_max: int) -> None:
    print(f"CPU cores visible: {os.cpu_count()}; delta = 1e-5, one-sided 95 %, per-test alpha = 0.05/4")
    print("one level test at the observed count c (m = c' = c/0.6, k = 2, the (eps, delta) curve at the eps where "
          "the decision flips)")
    print(f"{'c':>9} {'quadratic s':>12} {'linear s':>10} {'ratio':>8} {'same':>5}")
    for c in (1000, 2000, 4000, 100_000, 1_000_000):
        g = round(c / 0.6)
        m = max(g, c)
        if m > 1_000_000:
            g = m = 1_000_000
            c = 600_000
        eps = onerun._sup_refuted(lambda x: onerun.rejects(c, g, m, 2, 0.0125, onerun.dp_blowup_inverse(x, 1e-5)),
                                  onerun.EPS_CAP)
        inv = onerun.dp_blowup_inverse(eps, 1e-5)
        new, t_new = _timed(onerun.rejects, c, g, m, 2, 0.0125, inv)
        if c <= old_max:
            old, t_old = _timed(_quadratic_rejects, c, g, m, 2, 0.0125, inv)
            print(f"{c:9,} {t_old:12.4f} {t_new:10.5f} {t_old / t_new:8.0f} {str(old == new):>5}")
        else:
            print(f"{c:9,} {'-':>12} {t_new:10.5f} {'-':>8} {'-':>5}")
    print("one whole result (onerun_lower_bounds: eps and mu, 4 guess counts)")
    print(f"{'m':>9} {'k':>3} {'eps_lo':>7} {'mu_lo':>6} {'quadratic s':>12} {'linear s':>9} {'ratio':>7} {'equal':>5}")
    for m in (1000, 2000, 4000, 10_000, 100_000, 1_000_000):
        for k in (2, 10):
            game = _game(m, k)
            new, t_new = _timed(onerun.onerun_lower_bounds, game, delta=1e-5)
            row = f"{m:9,} {k:3} {new['epsilon'].lower:7.4f} {new['gdp_mu'].lower:6.4f}"
            if m <= old_max:
                saved = onerun.rejects
                onerun.rejects = _quadratic_rejects
                try:
                    old, t_old = _timed(onerun.onerun_lower_bounds, game, delta=1e-5)
                finally:
                    onerun.rejects = saved
                same = all(old[q].lower == new[q].lower for q in ("epsilon", "gdp_mu"))
                print(f"{row} {t_old:12.2f} {t_new:9.3f} {t_old / t_new:7.0f} {str(same):>5}")
            else:
                print(f"{row} {'-':>12} {t_new:9.3f} {'-':>7} {'-':>5}")
    rng = np.random.default_rng(0)
    scores, truth = rng.standard_normal((1_000_000, 2)), rng.integers(0, 2, 1_000_000)
    scores[np.arange(1_000_000), truth] += 0.5
    game, t_guess = _timed(onerun.Guesses.from_scores, scores, truth, (100_000, 250_000, 500_000, 1_000_000))
    _, t_bound = _timed(onerun.onerun_lower_bounds, game, delta=1e-5)
    print(f"OneRunAudit.result's analysis at m = 10^6, k = 2 (guessing from scores, then the bounds): "
          f"{t_guess:.3f} + {t_bound:.3f} = {t_guess + t_bound:.3f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--analysis", action="store_true", help="time the analysis alone, linear against quadratic")
    ap.add_argument("--old-max", type=int, default=4000, help="largest m the quadratic baseline is run at")
    ap.add_argument("--models", nargs="+", default=["mlp", "mlp:256"])
    ap.add_argument("--epsilons", nargs="+", type=float, default=[4.0, 32.0],
                    help="add/remove ε of the release (σ calibrated with the PLD accountant)")
    ap.add_argument("--canaries", type=int, default=1000)
    ap.add_argument("--options", type=int, default=10)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", action="store_true", help="time a second, compiled run too")
    a = ap.parse_args()
    if a.analysis:
        analysis(a.old_max)
        return
    from reconrisk._src.data import load_dataset
    from reconrisk._src.experiments.onerun import OneRunSetting, run_onerun

    data = load_dataset("digits")
    print(f"CPU cores visible: {os.cpu_count()}; m = {a.canaries} canaries, k = {a.options} options, T = {a.steps}, "
          f"q = 1, C = 0.1, |D-| = 500, one-sided 95 %, delta = 1e-5")
    head = (f"{'model':8} {'eps(a/r)':>8} {'sigma':>7} {'threat':12} {'correct @ guesses':28} {'eps_lo':>7} "
            f"{'eps_cert':>8} {'ratio':>6} {'mu_lo':>6} {'mu_cert':>7} {'train s':>8} {'attack s':>8} {'bound s':>7}")
    print(head)
    for model in a.models:
        for eps in a.epsilons:
            sigma = noise_multiplier_for_epsilon(eps, 1.0, a.steps, 1e-5)
            setting = OneRunSetting(Release(sigma, 1.0, a.steps, 0.1), canaries=a.canaries, options=a.options,
                                    model=model, seed=a.seed,
                                    guess_counts=tuple(g for g in (100, 250, 500, 1000) if g <= a.canaries))
            for attempt in range(2 if a.repeat else 1):
                t0 = time.perf_counter()
                results = run_onerun(setting, data)
                total = time.perf_counter() - t0
                for r in results:
                    lo, mu = r.bounds["epsilon"], r.bounds["gdp_mu"]
                    counts = " ".join(f"{c}/{g}" for g, c in zip(r.guesses.guesses, r.guesses.correct))
                    print(f"{model:8} {eps:8g} {sigma:7.3f} {r.threat_model:12} {counts:28} {lo.lower:7.3f} "
                          f"{r.certified['epsilon']:8.2f} {lo.details['ratio_to_certified']:6.1%} {mu.lower:6.3f} "
                          f"{r.certified['gdp_mu']:7.3f} {r.train_seconds:8.2f} {r.attack_seconds:8.2f} "
                          f"{r.bound_seconds:7.2f}")
                print(f"  {'compiled' if attempt else 'first'} call, both threat models: {total:.1f} s wall; "
                      f"add/remove eps of this release {results[0].certified['epsilon_add_remove']:.3g}")


if __name__ == "__main__":
    main()
