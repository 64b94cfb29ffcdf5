"""Benchmark of the ReRo engine: certified PLD bracket against Monte Carlo (Hayes, Mahloujifar & Balle 2023, Algorithm 1).

First the issue 9 item 4 table: each tightness/reach setting runs in its own
process (address space capped at 3x the 2 GiB target, so a blow-up is a
MemoryError, not the OOM killer) and prints wall time, peak memory (getrusage,
whole process), the bracket, its relative width, converged, and whether the
target is met — or by how much it is missed. Then, for each setting, the wall
time and error width of PLD and Monte Carlo and their ratios. Target (issue 2):
PLD at least 20x faster than Monte Carlo with a narrower error, and T = 1e5 in
under 2 s. Also times the `reconrisk bound` command end to end (process start
included).

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


#: Issue 9 item 4, tightness: relative width <= 1 % in <= 1 s for kappa >= 1e-6, T <= 1e5, sigma >= 0.5,
#: q <= 0.5 (corners and the issue's examples); reach: T up to 1e7 in <= 10 s and <= 2 GiB, certified.
#: (sigma, q, T, kappa, max seconds)
TARGETS = [
    (0.8, 0.004, 10_000, 1e-3, 1.0),
    (0.6, 0.001, 100_000, 1e-4, 1.0),
    (0.5, 0.01, 100_000, 1e-6, 1.0),
    (0.5, 0.5, 100_000, 1e-6, 1.0),
    (0.5, 0.001, 100_000, 1e-6, 1.0),
    (0.5, 1e-4, 100_000, 1e-6, 1.0),
    (0.5, 0.1, 1000, 1e-6, 1.0),
    (0.5, 0.5, 10, 1e-6, 1.0),
    (2.0, 0.05, 2000, 0.1, 1.0),
    (1.0, 0.01, 1000, 1e-6, 1.0),
    (5.0, 0.001, 100_000, 1e-6, 1.0),
    (1.0, 0.01, 1_000_000, 0.01, 10.0),
    (1.0, 0.5, 1_000_000, 0.1, 10.0),
    (0.5, 1e-4, 1_000_000, 1e-6, 10.0),
    (1.0, 0.001, 10_000_000, 0.01, 10.0),
    (0.6, 0.01, 10_000_000, 0.01, 10.0),
    (1.0, 0.5, 10_000_000, 0.1, 10.0),
    (5.0, 0.001, 10_000_000, 0.01, 10.0),
    (0.5, 1e-4, 10_000_000, 1e-6, 10.0),
]
#: Outside item 4 (kappa < 1e-6, sigma < 0.5): printed for the record, no target.
EXTRA = [
    (0.3, 1e-6, 1000, 1e-12, None),
]
MEMORY_LIMIT_MIB = 2048
_CHILD = r"""
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[5]) * 2**20, int(sys.argv[5]) * 2**20))
import reconrisk as rr
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
s, q, T, k = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
t0 = time.perf_counter()
try:
    b = rr.rero_bound(s, q, T, kappa=k)
    out = dict(lower=b.lower, upper=b.upper, converged=b.converged, error=None)
except MemoryError:
    out = dict(error="MemoryError")
except rr.ReconRiskError as exc:
    out = dict(error=str(exc))
out["time"] = time.perf_counter() - t0
out["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["import_mib"] = base / 1024
print(json.dumps(out))
"""


def _run_child(sigma, q, T, kappa, timeout=120.0):
    """One setting in a fresh process: wall time of the call, peak RSS (getrusage), address space capped."""
    import json

    cmd = [sys.executable, "-c", _CHILD, repr(sigma), repr(q), str(T), repr(kappa), str(3 * MEMORY_LIMIT_MIB)]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    if res.returncode != 0:
        return {"error": f"exit {res.returncode}: {res.stderr.strip().splitlines()[-1:] }"}
    return json.loads(res.stdout.strip().splitlines()[-1])


def targets() -> None:
    """Time, peak memory (whole process, getrusage), relative width, converged and verdict per setting."""
    import os

    print(f"load average at start: {os.getloadavg()[0]:.2f} (2-core machine; times scale with load)")
    print(f"{'setting':<40} {'time [s]':>9} {'limit':>6} {'peak MiB':>9} {'lower':>11} {'upper':>11} "
          f"{'rel width':>10} {'conv':>5}  verdict")
    for sigma, q, T, kappa, limit in TARGETS + EXTRA:
        label = f"sigma={sigma} q={q} T={T:.0e} kappa={kappa:g}"
        r = _run_child(sigma, q, T, kappa)
        if r.get("error"):
            print(f"{label:<40} {'':>9} {'' if limit is None else f'{limit:6.0f}'} ERROR: {r['error']}")
            continue
        rel = (r["upper"] - r["lower"]) / r["upper"]
        miss = []
        if rel > 0.01:
            miss.append(f"width x{rel / 0.01:.1f}")
        if limit is not None and r["time"] > limit:
            miss.append(f"time x{r['time'] / limit:.1f}")
        if r["peak_mib"] > MEMORY_LIMIT_MIB:
            miss.append(f"memory x{r['peak_mib'] / MEMORY_LIMIT_MIB:.1f}")
        verdict = "no target" if limit is None else ("met" if not miss else "MISSED " + ", ".join(miss))
        lim = "-" if limit is None else f"{limit:.0f}"
        print(f"{label:<40} {r['time']:9.3f} {lim:>6} {r['peak_mib']:9.0f} {r['lower']:11.5g} {r['upper']:11.5g} "
              f"{rel:10.2e} {str(r['converged']):>5}  {verdict}")
    print(f"(peak MiB is the whole process, Python + numpy + scipy included: {r.get('import_mib', float('nan')):.0f} MiB "
          "after import)")


#: Issue 22 part 5 (a), tiny κ: relative width <= 1 % at κ down to 1e-12, T <= 1e5, in <= 2 s.
TINY = [
    (0.5, 1e-4, 1000, 1e-12, 2.0),
    (2.101, 5.13e-4, 69_118, 1.17e-12, 2.0),
    (1.0, 0.02, 500, 1e-12, 2.0),
    (0.3, 1e-6, 1000, 1e-12, 2.0),
    (1.0, 0.01, 1000, 1e-10, 2.0),
    (0.8, 0.004, 100_000, 1e-10, 2.0),
    (0.5, 1e-4, 100_000, 1e-12, 2.0),
]


def tiny() -> None:
    """The tiny-κ table (each setting in a fresh process, as :func:`targets`). Run it with
    ``PYTHONPATH=<old checkout>/src`` for the before figures."""
    print(f"{'tiny kappa setting':<44} {'time [s]':>9} {'limit':>6} {'lower':>11} {'upper':>11} {'rel width':>10} {'conv':>5}  verdict")
    for sigma, q, T, kappa, limit in TINY:
        label = f"sigma={sigma} q={q} T={T:.0e} kappa={kappa:g}"
        r = _run_child(sigma, q, T, kappa, timeout=300.0)
        if r.get("error"):
            print(f"{label:<44} ERROR: {r['error']}")
            continue
        rel = (r["upper"] - r["lower"]) / r["upper"]
        miss = ([f"width x{rel / 0.01:.1f}"] if rel > 0.01 else []) + ([f"time x{r['time'] / limit:.1f}"] if r["time"] > limit else [])
        print(f"{label:<44} {r['time']:9.3f} {limit:6.0f} {r['lower']:11.5g} {r['upper']:11.5g} {rel:10.2e} "
              f"{str(r['converged']):>5}  {'met' if not miss else 'MISSED ' + ', '.join(miss)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10x fewer Monte-Carlo samples")
    ap.add_argument("--targets-only", action="store_true", help="only the issue 9 tightness/reach table")
    ap.add_argument("--tiny-only", action="store_true", help="only the issue 22 tiny-kappa table")
    args = ap.parse_args()
    tiny()
    if args.tiny_only:
        return
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
