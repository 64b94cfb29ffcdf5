"""Benchmark of Riess et al.'s (2024) analytic bounds and attack (plain script; prints measured figures).

    PYTHONPATH=src python benchmarks/bench_analytic.py            # full: 10⁶ γ values, 10⁴ reconstructions
    PYTHONPATH=src python benchmarks/bench_analytic.py --quick    # 10⁵ γ values, 500 reconstructions

1. Time to evaluate 10⁶ ReRo values γ(η) (Prop. 3 MSE CDF, Prop. 5 PSNR
   survival, and their log forms) at N = 224·224·3, against scipy's
   ``chi2.cdf`` as the baseline.
2. Time to simulate 10⁴ reconstructions of one 224×224×3 image (all pixels
   0.5 plus a gradient; ‖X‖ ≈ 200) by the fast path (numpy, exact law) and by
   the explicit JAX linear layer through a real DP-SGD step, at C = 1 where
   the optimal layer has M = ⌈(C/‖X‖)²⌉ = 1 row (the paper's Fig. 6 setting),
   and per reconstruction at the Fig. 1 setting C = 5000, M = 665
   (extrapolated from a few samples: one sample is M·N ≈ 10⁸ floats);
   and by ``mode="law"``, which samples each reconstruction's (MSE, NCC)
   from their exact joint law without forming it (a labelled shortcut,
   KS-tested against the explicit step in tests/test_analytic_law.py).
Reconstructions are produced in batches and reduced to their MSE on the fly so
that memory stays bounded. Each row also prints the process's CPU time per
reconstruction (all threads; on a loaded machine the wall time grows, the CPU
time much less): the explicit step runs in cache-sized blocks
(attacks/analytic_step.py), so its floor is the normal generation (Threefry +
erfinv, ~1 ms of CPU per 150,528 numbers here), split over the cores.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time

import numpy as np
from scipy import stats

from reconrisk._src.attacks.analytic import mse, simulate_attack, simulate_success
from reconrisk._src.theory.analytic import rero_mse, rero_psnr
from reconrisk._src.theory.analytic_laws import mse_law


def timed(fn, repeat: int = 3):
    best, out = math.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def image(h: int = 224, w: int = 224, c: int = 3) -> np.ndarray:
    yy, xx = np.meshgrid(np.linspace(0, 1, h), np.linspace(0, 1, w), indexing="ij")
    base = np.stack([0.5 + 0.2 * (xx - 0.5), 0.5 + 0.2 * (yy - 0.5), 0.5 * np.ones_like(xx)][:c], axis=-1)
    return base.reshape(-1)


def bench_gamma(count: int) -> None:
    n = 224 * 224 * 3
    sigma, m = 1e-3, math.sqrt(0.25 * n)
    v = sigma**2 * m**2
    eta = np.linspace(0.5 * v, 1.5 * v, count)
    eta_db = np.linspace(-10.0, 30.0, count)
    rows = [
        ("MSE γ(η), Prop. 3", lambda: rero_mse(eta, sigma, n, min_norm=m)),
        ("MSE log γ(η)", lambda: rero_mse(eta, sigma, n, min_norm=m, log=True)),
        ("PSNR γ(η), Prop. 5", lambda: rero_psnr(eta_db, sigma, n, min_norm=m)),
        ("PSNR log γ(η)", lambda: rero_psnr(eta_db, sigma, n, min_norm=m, log=True)),
        ("baseline scipy chi2.cdf", lambda: stats.chi2.cdf(n * eta / v, n)),
    ]
    print(f"\n[1] {count:,} γ values at N = {n:,} (best of 3)")
    for name, fn in rows:
        t, out = timed(fn)
        tail = np.sum(np.asarray(out) < (math.log(1e-300) if "log" in name else 1e-300))
        print(f"  {name:28s} {t * 1e3:9.1f} ms   {t / count * 1e9:7.1f} ns/value   (values below 1e-300: {tail:,})")
    law = mse_law(sigma, m, n)
    t, lg = timed(lambda: law.logcdf(np.linspace(0.2 * v, 0.9 * v, count)))
    print(f"  {'MSE logcdf, deep tail only':28s} {t * 1e3:9.1f} ms   {t / count * 1e9:7.1f} ns/value   (log γ from {lg.max():.4g} down to {lg.min():.4g})")


def bench_sim(count: int, batch: int, args_skip_fig1: bool = False) -> None:
    x = image()
    n = x.size
    norm = float(np.linalg.norm(x))
    sigma, clip = 1e-3, 1.0
    rows = max(1, math.ceil((clip / norm) ** 2))
    print(f"\n[2] {count:,} reconstructions of a 224×224×3 image (N = {n:,}, ‖X‖ = {norm:.2f}), σ = {sigma}, C = {clip}, M = {rows}")
    expected = sigma**2 * norm**2

    def run(mode: str) -> np.ndarray:
        if mode in ("device", "law"):  # one call: the image attacked `count` times (repeats), data kept on the device
            sim_mode = "explicit" if mode == "device" else "law"
            return simulate_success(x[None, :], [sigma], clip, rows, mode=sim_mode, seed=0, repeats=count).mse[0]
        errs = np.empty(count)
        xb = np.broadcast_to(x, (batch, n))
        for start in range(0, count, batch):
            k = min(batch, count - start)
            xh = simulate_attack(xb[:k], sigma, clip, rows, mode=mode, seed=start)
            errs[start : start + k] = mse(x, xh)
        return errs

    # compile the explicit paths outside the timing (the device path at its timed shapes)
    simulate_attack(np.broadcast_to(x, (batch, n)), sigma, clip, rows, mode="explicit", seed=0)
    simulate_success(x[None, :], [sigma], clip, rows, mode="explicit", seed=1, repeats=count)
    print(f"  (machine load {os.getloadavg()[0]:.1f}; 'explicit' returns reconstructions in batches of {batch}; 'device' is"
          f" one simulate_success(mode='explicit', repeats={count:,}) call: the real DP-SGD step per reconstruction, the"
          f" image sent to the device once, only MSE and NCC back; 'law' samples (MSE, NCC) from their exact joint law,"
          f" KS-tested against 'explicit')")
    per = {}
    for mode in ("fast", "explicit", "device", "law"):
        c0, t0 = time.process_time(), time.perf_counter()
        errs = run(mode)
        t = time.perf_counter() - t0
        cpu = time.process_time() - c0  # CPU seconds of this process (all threads; ns clock): robust to load
        per[mode] = t / count
        se = errs.std() / math.sqrt(count)
        print(
            f"  {mode:9s} {t:8.3f} s total   {t / count * 1e3:7.3f} ms/reconstruction   (CPU {cpu / count * 1e3:6.3f} ms)   "
            f"mean MSE {errs.mean():.6f} ± {se:.6f} (theory σ²‖X‖² = {expected:.6f})", flush=True
        )
    old_ms = {"fast": 3.6, "explicit": 6.8}  # the CPU rates before issue 8's speed work (2-core machine, idle)
    print("  rate vs the explicit step in this run: " + ", ".join(f"{m} ×{per['explicit'] / per[m]:.1f}" for m in per)
          + f";  vs the old CPU explicit rate ({old_ms['explicit']} ms): "
          + ", ".join(f"{m} ×{old_ms['explicit'] * 1e-3 / per[m]:.1f}" for m in per))
    if args_skip_fig1:
        return
    # Fig. 1 setting: C = 5000, M = ⌈(C/‖X‖)²⌉ — a 10⁸-float gradient per sample
    clip1 = 5000.0
    rows1 = math.ceil((clip1 / norm) ** 2)
    few = 4
    simulate_attack(x[None, :], 5e-4, clip1, rows1, mode="explicit", seed=0)  # compile
    t, xh = timed(lambda: simulate_attack(np.broadcast_to(x, (few, n)), 5e-4, clip1, rows1, mode="explicit", seed=1), repeat=1)
    tf, _ = timed(lambda: simulate_attack(np.broadcast_to(x, (few, n)), 5e-4, clip1, rows1, mode="fast", seed=1))
    sd = float(np.std(xh - x))
    print(
        f"  Fig. 1 setting C = 5000, M = {rows1}: explicit {t / few:.2f} s/reconstruction "
        f"(≈ {t / few * count / 3600:.1f} h for {count:,}), fast {tf / few * 1e3:.2f} ms/reconstruction; "
        f"noise std {sd:.5f} (theory {5e-4 * norm:.5f})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="10⁵ γ values and 500 reconstructions")
    ap.add_argument("--batch", type=int, default=50, help="reconstructions per batch")
    ap.add_argument("--count", type=int, default=0, help="reconstructions to simulate (default 10⁴, 500 with --quick)")
    ap.add_argument("--no-gamma", action="store_true", help="skip the γ-evaluation part [1]")
    ap.add_argument("--no-fig1", action="store_true", help="skip the Fig. 1 setting (C = 5000, M = 665)")
    args = ap.parse_args()
    import jax

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs visible, "
        f"python {platform.python_version()}, numpy {np.__version__}, jax {jax.__version__} ({jax.default_backend()})"
    )
    if not args.no_gamma:
        bench_gamma(10**5 if args.quick else 10**6)
    bench_sim(args.count or (500 if args.quick else 10**4), args.batch, args_skip_fig1=args.no_fig1)


if __name__ == "__main__":
    main()
