"""Soundness scan of the sampler and DpEvent brackets (issue 24): lower ≤ exact ≤ upper at random points.

Exact references, independent of the PLD engine (tests/test_samplers.py derives them):

* fixed-size batches without replacement, T = 1, through ``Release.fixed_batch`` and
  :class:`PrivacyAnalysis`: δ(ε) of both orders and ReRo B_κ from Neyman–Pearson on the pair
  (1 − q)N(0, σ²) + qN(2, σ²) against N(0, σ²);
* Laplace (q = 1) through ``PrivacyAnalysis.from_dp_event(LaplaceDpEvent(b))``: the exact
  trade-off curve f(α) and δ(ε) = 1 − e^{(ε − 1/b)/2}.

Each configuration is analysed once and asked many points (the analysis composes once).
σ ∈ [0.5, 20], q ∈ [1e-3, 1] log-uniform; κ, α ∈ [1e-10, 0.5]; ε ∈ [0, 4]; b ∈ [0.2, 10].
Prints the number of points, the number of violations (relative tolerance 1e-9 plus 1e-12
absolute; must be 0) and the worst margins.

    PYTHONPATH=src python3.11 benchmarks/sampler_scan.py --configs 80 --seed 0
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_samplers import laplace_tradeoff, wor_exact_delta, wor_exact_rero  # noqa: E402

from reconrisk import Release  # noqa: E402
from reconrisk._src.analysis.privacy import PrivacyAnalysis  # noqa: E402

REL, ABS = 1e-9, 1e-12


def check(lo, ex, up):
    """(violated, worst margin) for lo ≤ ex ≤ up with the scan's tolerance."""
    bad = (lo > ex * (1 + REL) + ABS) or (ex > up * (1 + REL) + ABS)
    return bad, min(ex - lo, up - ex)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", type=int, default=80, help="configurations of each kind (75 fixed-batch and 60 Laplace points each)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    import dp_accounting as dpa

    n = bad = 0
    worst = {"fixed": math.inf, "laplace": math.inf}
    t0 = time.perf_counter()
    for _ in range(args.configs):
        s = float(np.exp(rng.uniform(math.log(0.5), math.log(20))))
        q = float(np.exp(rng.uniform(math.log(1e-3), 0.0)))
        a = PrivacyAnalysis(Release(s, q, 1, sampler="fixed"))
        kappas = np.exp(rng.uniform(math.log(1e-10), math.log(0.5), 25))
        for k, b in zip(kappas, a.rero_many(kappas)):
            v, m = check(b.lower, wor_exact_rero(float(k), s, q), b.upper)
            n, bad, worst["fixed"] = n + 1, bad + v, min(worst["fixed"], m)
        for eps in rng.uniform(0.0, 4.0, 25):
            d = a.delta(float(eps), two_sided=True)
            rem, add = wor_exact_delta(float(eps), s, q)
            v1, m1 = check(d.lower, rem, d.upper)
            v2, m2 = check(-math.inf, max(rem, add), d.upper)
            n, bad, worst["fixed"] = n + 2, bad + v1 + v2, min(worst["fixed"], m1, m2)
    for _ in range(args.configs):
        b = float(np.exp(rng.uniform(math.log(0.2), math.log(10))))
        a = PrivacyAnalysis.from_dp_event(dpa.LaplaceDpEvent(b))
        alphas = np.exp(rng.uniform(math.log(1e-10), math.log(0.999), 50))
        t = a.tradeoff(alphas)
        lo, up = t.beta_lower, t.beta_upper
        for x, l, u in zip(laplace_tradeoff(alphas, 1 / b), lo, up):
            v, m = check(l, x, u)
            n, bad, worst["laplace"] = n + 1, bad + v, min(worst["laplace"], m)
        for eps in rng.uniform(0.0, 1.0 / b, 10):
            d = a.delta(float(eps))
            v, m = check(d.lower, -math.expm1((eps - 1 / b) / 2), d.upper)
            n, bad, worst["laplace"] = n + 1, bad + v, min(worst["laplace"], m)
    dt = time.perf_counter() - t0
    print(f"points: {n}  violations: {bad}  worst margin (exact - lower, upper - exact): "
          f"fixed batches {worst['fixed']:.3g}, Laplace {worst['laplace']:.3g}  ({dt:.1f} s)")
    if bad:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
