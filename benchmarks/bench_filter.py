"""Training with a per-example reconstruction budget (the individual Rényi filter) against plain DP-SGD (issue 26).

Embedded digits (first 1347 images train, the other 450 test), the default MLP, σ = 1, q = 0.05, C = 1,
learning rate 0.5 — a setting where most examples' gradients shrink well below C after a few epochs.
Three runs at the same σ, per seed:

* plain DP-SGD for T steps: its worst-case ReRo (every example at C on every step) is above the target;
* plain DP-SGD for the largest T' that meets the target by the tightest worst-case accounting reconrisk has
  (the PLD bracket, through the one calibrator) — the usual way to meet a budget;
* filtered DP-SGD for T steps with ``IndividualFilter(target_rero=γ, kappa=κ)``: every example is certified
  at ≤ γ (Feldman & Zrnic 2021; RDP accounting, optimal conversion), examples stop contributing when their
  own accumulated loss would pass the budget, the others train for all T steps.

Printed: test accuracy, the share of examples the filter stopped (and when), the certified per-example
ReRo (the budget's, the same for every example), what each example spent (max and median: ex-post estimates,
not guarantees), the budget in full-sensitivity steps. Plain runs print their worst-case bound.

    PYTHONPATH=src python benchmarks/bench_filter.py [--steps 1000] [--target 0.5] [--seeds 2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--target", type=float, default=0.5, help="target ReRo γ at κ")
    ap.add_argument("--kappa", type=float, default=0.1)
    ap.add_argument("--noise-multiplier", type=float, default=1.0)
    ap.add_argument("--sample-rate", type=float, default=0.05)
    ap.add_argument("--clip-norm", type=float, default=1.0)
    ap.add_argument("--learning-rate", type=float, default=0.5)
    ap.add_argument("--seeds", type=int, default=2)
    args = ap.parse_args()

    from reconrisk import Release
    from reconrisk._src.analysis.privacy import PrivacyAnalysis
    from reconrisk._src.analysis.calibrate import calibrate
    from reconrisk._src.individual.privacy import IndividualFilter
    from reconrisk._src.data import load_digits
    from reconrisk._src.train import dpsgd, models

    d = load_digits()
    x, y, xt, yt = d.x[:1347], d.y[:1347], d.x[1347:], d.y[1347:]
    model = models.get_model("mlp", d.image_shape)
    sig, q, C, T, k, g = (args.noise_multiplier, args.sample_rate, args.clip_norm, args.steps, args.kappa,
                          args.target)
    rel = Release(sig, q, T, clip_norm=C)
    t_cal = calibrate("reconstruction", g, solve="steps", noise_multiplier=sig, sample_rate=q, kappa=k)
    t_plain = int(t_cal.steps)
    rel_short = Release(sig, q, t_plain, clip_norm=C)
    proto = IndividualFilter(rel, target_rero=g, kappa=k)
    print(f"digits: {len(x)} train / {len(xt)} test, MLP, sigma={sig}, q={q}, C={C}, lr={args.learning_rate}, "
          f"target ReRo {g} at kappa={k}")
    print(f"  worst-case ReRo (PLD) of T={T}: {PrivacyAnalysis(rel).rero(k).upper:.4f}; the calibrator's largest T "
          f"meeting {g}: T'={t_plain} (ReRo {PrivacyAnalysis(rel_short).rero(k).upper:.4f})")
    print(f"  filter budget: the RDP curve of {proto.budget_steps:.1f} steps at C (its ReRo "
          f"{proto.budget_rero(k):.4f}, optimal RDP conversion)")
    rows = {"plain T": [], "plain T'": [], "filtered T": []}
    extra = []
    for seed in range(args.seeds):
        t0 = time.perf_counter()
        r = dpsgd.train(model, rel, x, y, seed=seed, learning_rate=args.learning_rate, record=False)
        rows["plain T"].append(dpsgd.model_accuracy(model, r.params, xt, yt))
        r = dpsgd.train(model, rel_short, x, y, seed=seed, learning_rate=args.learning_rate, record=False)
        rows["plain T'"].append(dpsgd.model_accuracy(model, r.params, xt, yt))
        f = proto.fresh()
        r = dpsgd.train(model, rel, x, y, seed=seed, learning_rate=args.learning_rate, record=False,
                        individual_filter=f)
        rows["filtered T"].append(dpsgd.model_accuracy(model, r.params, xt, yt))
        spent = f.spent_rero_estimate(k)  # ex post: what each example spent (the certificate is the budget's)
        stops = f.stopped_at[f.filtered]
        extra.append((float(np.mean(f.filtered)), float(np.median(stops)) if stops.size else float("nan"),
                      float(spent.max()), float(np.median(spent))))
        print(f"  seed {seed}: {time.perf_counter() - t0:.1f} s")
    share, stop, mx, med = (float(np.mean([e[i] for e in extra])) for i in range(4))
    table = [("plain T", T, rows["plain T"], f"worst case {PrivacyAnalysis(rel).rero(k).upper:.4f}"),
             ("plain T'", t_plain, rows["plain T'"], f"worst case {PrivacyAnalysis(rel_short).rero(k).upper:.4f}"),
             ("filtered T", T, rows["filtered T"], f"budget {proto.certificate_rero(k):.4f}")]
    print(f"{'run':<12} {'steps':>6} {'test acc (mean over seeds)':>27} {'certified ReRo per example':>28}")
    for name, steps, acc, cert in table:
        print(f"{name:<12} {steps:>6} {np.mean(acc):>27.4f} {cert:>28}")
    print(f"filtered: {100 * share:.1f} % of examples stopped (median stop at step {stop:.0f} of {T}); every example "
          f"certified at {proto.certificate_rero(k):.4f} <= target {g}; what each spent (ex-post estimate, RDP): "
          f"median {med:.4f}, max {mx:.4f}")


if __name__ == "__main__":
    main()
