"""Soundness scan of the certified ReRo bracket (issue 9): lower ≤ exact ≤ upper at random points.

Exact references are independent of the PLD engine (reconrisk._src.measures.reference):
T = 1 closed form (any q), q = 1 closed form (any T, engine run directly since
the public path short-cuts it), and T = 2 by 1-D quadrature. Points are drawn
log-uniformly: σ ∈ [0.3, 200], q ∈ [1e-5, 0.9], κ ∈ [1e-12, 0.5]; the grid is
the adaptive default or a fixed h ∈ {1e-3, 1e-4, 1e-5}. Prints the number of
violations (relative tolerance 1e-9; must be 0) and the worst relative margin
min((exact − lower)/exact, (upper − exact)/exact) (negative = violation).

    PYTHONPATH=src python3.11 benchmarks/soundness_scan.py --points 10000 --seed 0
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from reconrisk import Release
from reconrisk._src.accounting.pld import compose_segments
from reconrisk._src.measures import reference as ref
from reconrisk._src.analysis.privacy_rero import pld_bracket
from reconrisk._src.analysis.privacy import PrivacyAnalysis

REL = 1e-9


def draw(rng):
    s = float(np.exp(rng.uniform(math.log(0.3), math.log(200))))
    q = float(np.exp(rng.uniform(math.log(1e-5), math.log(0.9))))
    k = float(np.exp(rng.uniform(math.log(1e-12), math.log(0.5))))
    kind = rng.choice(["t1", "t1", "t1", "q1", "t2"], p=[0.3, 0.2, 0.2, 0.2, 0.1])
    h = [None, 1e-3, 1e-4, 1e-5][int(rng.integers(0, 4))]
    return s, q, k, str(kind), h


def one(s, q, k, kind, h):
    kk = np.array([k])
    if kind == "q1":
        T = int(np.random.default_rng(int(s * 1e6) % 2**31).choice([1, 3, 10, 50]))
        hh = h or 1e-3
        if hh < 1e-4 and s < 0.6:
            hh = 1e-4  # keep the per-step grid under the engine's atom limit (a clean error otherwise)
        segs = Release(s, 1.0, T).segments
        cap = -math.log(k) + 40
        up = max(compose_segments(segs, hh, pessimistic=True, loss_cap=cap).blowup(kk)[0], k)
        lo = compose_segments(segs, hh, pessimistic=False, loss_cap=cap).blowup(kk)[0]
        return lo, ref.exact_full_batch(math.sqrt(T) / s, k), up
    T = 1 if kind == "t1" else 2
    if h is not None and h < 1e-4 and s < 0.6:
        h = 1e-4  # keep the per-step grid small
    lo, up, _ = pld_bracket(PrivacyAnalysis(Release(s, q, T)), kk, discretization=h)
    ex = ref.exact_single_step(s, q, k) if T == 1 else ref.exact_two_steps(s, q, s, q, k)
    return lo[0], ex, up[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    bad, worst, worst_at, errors = 0, math.inf, None, 0
    for i in range(args.points):
        s, q, k, kind, h = draw(rng)
        try:
            lo, ex, up = one(s, q, k, kind, h)
        except Exception as exc:  # noqa: BLE001 - count, print, go on
            errors += 1
            print(f"error at sigma={s:.4g} q={q:.3g} kappa={k:.3g} {kind} h={h}: {exc}")
            continue
        m = min((ex - lo) / ex, (up - ex) / ex)
        if m < -REL:
            bad += 1
            print(f"VIOLATION sigma={s:.6g} q={q:.6g} kappa={k:.6g} {kind} h={h}: [{lo:.12g}, {up:.12g}] exact {ex:.12g}")
        if m < worst:
            worst, worst_at = m, (s, q, k, kind, h)
        if (i + 1) % 1000 == 0:
            print(f"  {i + 1} points, {bad} violations, worst margin {worst:.3e}, {time.perf_counter() - t0:.0f} s")
    print(f"points: {args.points}  violations: {bad}  errors: {errors}  worst relative margin: {worst:.3e} at {worst_at}")
    print(f"wall time: {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
