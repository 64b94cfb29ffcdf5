"""Benchmark of the ReRo engine: certified PLD bracket against Monte Carlo (seed 000 Algorithm 1).

Prints, for each setting, the wall time and error width of both methods and
their ratios. Target (issue 2): PLD at least 20x faster than Monte Carlo with
a narrower error, and T = 1e5 in under 2 s. Also times the `reconrisk bound`
command end to end (process start included).

    python benchmarks/bench_rero.py            # full: 1e6 MC samples at T = 1000
    python benchmarks/bench_rero.py --quick    # 1e5 samples, for a smoke run
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import reconrisk as rr

SETTINGS = [
    # (sigma, q, T, kappa, MC samples)
    (1.0, 0.01, 1000, 0.01, 1_000_000),
    (0.8, 0.004, 100_000, 1e-3, 10_000),
]


def timed(fn, repeat: int = 1):
    best = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


#: Issue 9 tightness and reach targets: (sigma, q, T, kappa, max seconds); relative width <= 1 %.
TARGETS = [
    (0.8, 0.004, 10_000, 1e-3, 1.0),
    (0.6, 0.001, 100_000, 1e-4, 1.0),
    (0.5, 0.5, 100_000, 1e-6, 1.0),
    (0.5, 0.01, 100_000, 1e-6, 1.0),
    (2.0, 0.05, 2000, 0.1, 1.0),
    (1.0, 0.01, 1000, 1e-6, 1.0),
    (0.3, 1e-6, 1000, 1e-12, 1.0),
    (1.0, 0.5, 1_000_000, 0.1, 10.0),
    (1.0, 0.01, 1_000_000, 0.01, 10.0),
    (1.0, 0.5, 10_000_000, 0.1, 10.0),
    (5.0, 0.001, 10_000_000, 0.01, 10.0),
]


def targets() -> None:
    """Relative width, time and peak memory (tracemalloc, numpy buffers included) per target setting."""
    import tracemalloc

    print(f"{'setting':<44} {'time [s]':>9} {'limit':>6} {'lower':>11} {'upper':>11} {'rel width':>10} {'peak MiB':>9}  verdict")
    for sigma, q, T, kappa, limit in TARGETS:
        tracemalloc.start()
        t0 = time.perf_counter()
        b = rr.rero_bound(sigma, q, T, kappa=kappa)
        dt = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        rel = (b.upper - b.lower) / b.upper
        ok = rel <= 0.01 and dt <= limit and peak <= 2048
        label = f"sigma={sigma} q={q} T={T:.0e} kappa={kappa:g}"
        print(f"{label:<44} {dt:9.3f} {limit:6.0f} {b.lower:11.5g} {b.upper:11.5g} {rel:10.2e} {peak:9.0f}  "
              f"{'met' if ok else 'MISSED'}{'' if b.converged else ' (stopped short)'}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10x fewer Monte-Carlo samples")
    ap.add_argument("--targets-only", action="store_true", help="only the issue 9 tightness/reach table")
    args = ap.parse_args()
    targets()
    if args.targets_only:
        return
    print(f"{'setting':<40} {'method':<6} {'time [s]':>9} {'lower':>9} {'upper':>9} {'width':>10}")
    for sigma, q, T, kappa, n_mc in SETTINGS:
        if args.quick:
            n_mc //= 10
        label = f"sigma={sigma} q={q} T={T} kappa={kappa:g}"
        pld, t_pld = timed(lambda: rr.rero_bound(sigma, q, T, kappa=kappa), repeat=3)
        mc, t_mc = timed(lambda: rr.rero_bound(sigma, q, T, kappa=kappa, method="mc", samples=n_mc, seed=0))
        print(f"{label:<40} {'pld':<6} {t_pld:9.3f} {pld.lower:9.5f} {pld.upper:9.5f} {pld.width:10.2e}")
        print(f"{'':<40} {'mc':<6} {t_mc:9.3f} {mc.lower:9.5f} {mc.upper:9.5f} {mc.width:10.2e}"
              f"   (N={n_mc:.0e}, 95% CI, estimate {mc.estimate:.5f})")
        print(f"{'':<40} ratio: PLD is {t_mc / t_pld:,.0f}x faster and its error is {mc.width / pld.width:,.0f}x narrower"
              f"  (PLD grid h={pld.details['discretization']:.2e})")
    cmd = [sys.executable, "-m", "reconrisk", "bound", "-s", "1", "-q", "0.01", "-T", "1000", "-n", "100", "--json"]
    _, t_cli = timed(lambda: subprocess.run(cmd, check=True, capture_output=True), repeat=3)
    print(f"`reconrisk bound -s 1 -q 0.01 -T 1000 -n 100 --json` wall time (process start included): {t_cli:.3f} s")


if __name__ == "__main__":
    main()
