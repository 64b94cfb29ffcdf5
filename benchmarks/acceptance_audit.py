"""Hayes, Mahloujifar & Balle 2023 acceptance checks for the audit at larger trial counts than the test suite.

Prints, on the digits data with the Hayes, Mahloujifar & Balle 2023 MLP:
  1. soundness: every attack's Clopper–Pearson lower end against the certified
     bound over ε ∈ {1, 4, 10, 32} × prior sizes (default {2, 10, 100});
  2. tightness: Alg. 2 at ε = 4, prior 10, q = 1, T = 100 (C = 0.1, all clipped);
  3. Alg. 3 against Alg. 2 at q = 0.02, T = 1000, |D₋| = 499 (Hayes, Mahloujifar & Balle 2023, Fig. 4);
  4. gradient inversion: mean MSE and nearest-neighbour success against ε
     beside the prior-aware attack (Hayes, Mahloujifar & Balle 2023, Fig. 1 / App. D shape).

    PYTHONPATH=src python benchmarks/acceptance_audit.py [--trials 300] [--only 1,2,3,4]
"""

from __future__ import annotations

import argparse
import time


def fmt(rate) -> str:
    lo, hi = rate.ci
    return f"{rate.rate:.3f} [{lo:.3f}, {hi:.3f}]"


def main() -> None:
    import reconrisk as rr
    from reconrisk._src.data import load_digits
    from reconrisk._src.experiments.audit import AuditSetting, calibrated_settings, run_setting

    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--prior-sizes", default="2,10,100")
    ap.add_argument("--tight-trials", type=int, default=1000)
    ap.add_argument("--minibatch-trials", type=int, default=200)
    ap.add_argument("--inversion-trials", type=int, default=32)
    ap.add_argument("--only", default="1,2,3,4")
    args = ap.parse_args()
    only = set(args.only.split(","))
    data = load_digits()
    t0 = time.perf_counter()

    if "1" in only:
        print("1. soundness: attack CP lower end <= certified bound (q=1, T=100, C=0.1)")
        worst = -1.0
        for n in [int(s) for s in args.prior_sizes.split(",")]:
            for s in calibrated_settings([1.0, 4.0, 10.0, 32.0], trials=args.trials, prior_size=n,
                                         attacks=("alg2", "loglik", "no_deduction"), seed=7):
                r = run_setting(s, data)
                gap = max(rate.ci[0] - r.rero_upper for rate in r.rates.values())
                worst = max(worst, gap)
                print(f"   n={n:3d} ε={s.epsilon:5g} bound={r.rero_upper:.3f}  "
                      + "  ".join(f"{k}={fmt(v)}" for k, v in r.rates.items())
                      + f"  max(CP low − bound)={gap:+.3f}", flush=True)
        print(f"   => {'PASS' if worst <= 0 else 'FAIL'}: largest (CP lower end − bound) = {worst:+.3f}\n")

    if "2" in only:
        (s,) = calibrated_settings([4.0], trials=args.tight_trials, attacks=("alg2", "no_deduction"), seed=11)
        r = run_setting(s, data)
        a = r.rates["alg2"]
        print(f"2. tightness: ε=4, n=10: bound {r.rero_upper:.4f}, Alg. 2 {fmt(a)} over {a.trials} trials, "
              f"gap {r.rero_upper - a.rate:.3f} (target < 0.08); clipped {r.clipped_fraction:.0%}; "
              f"no-deduction {fmt(r.rates['no_deduction'])}\n", flush=True)

    if "3" in only:
        print("3. mini-batch: q=0.02, T=1000, |D₋|=499, n=10")
        for eps in (10.0, 32.0):
            (s,) = calibrated_settings([eps], sample_rate=0.02, steps=1000, trials=args.minibatch_trials,
                                       known_size=499, attacks=("alg3", "alg2", "loglik"), seed=3)
            r = run_setting(s, data)
            print(f"   ε={eps:g} σ={s.noise_multiplier:.3f} bound={r.rero_upper:.3f}  "
                  + "  ".join(f"{k}={fmt(v)}" for k, v in r.rates.items())
                  + f"  clipped {r.clipped_fraction:.0%}", flush=True)
        print()

    if "4" in only:
        print("4. gradient inversion (q=1, T=20, |D₋|=200, n=10, 300 Adam steps × 3 restarts)")
        for sigma in (20.0, 2.0, 0.2, 0.02):
            s = AuditSetting.of(sigma, 1.0, 20, trials=args.inversion_trials, prior_size=10, known_size=200,
                             attacks=("gradient_inversion", "alg2"), inversion_steps=300, inversion_restarts=3, seed=5)
            r = run_setting(s, data)
            eps = rr.epsilon(sigma, 1.0, 20)
            print(f"   σ={sigma:<5g} ε={eps:10.4g}  MSE={r.mse['mean']:.4f}±{r.mse['std']:.4f}  "
                  f"GI+NN={fmt(r.rates['gradient_inversion'])}  Alg.2={fmt(r.rates['alg2'])}  bound={r.rero_upper:.3f}",
                  flush=True)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
