"""Throughput of ``reconrisk sweep``: trials per second in-process, on a process pool and on 1 and 2 local Dask
workers (the same sweep each time, into a fresh store), beside the audit's own executor, and the store's
overhead per trial.

    PYTHONPATH=src python3.11 benchmarks/bench_sweep.py [--trials 600] [--steps 10] [--chunk 50]

Every figure printed is measured in this run. "wall" counts everything a user waits for (process or cluster
start, import, loading the compiled trial function from the shared JAX compilation cache, the trials, the
store); "steady" divides the trials stored after the first by the time between the first and the last store
write, which is the throughput once every worker is running. Ratios are to the in-process sweep (``--pool 0``),
whose jitted function is already compiled when it is timed. The baseline "audit run_trials" is the existing
executor of ``reconrisk audit`` on the same configuration (one seed, trial index keys, no store).
The result tables of all runs are compared: they must be identical.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=600, help="trials per grid point (2 points)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--chunk", type=int, default=50)
    ap.add_argument("--known-size", type=int, default=200)
    args = ap.parse_args()

    from reconrisk._src.experiments.store import ResultStore
    from reconrisk._src.experiments.sweep import load_sweep, run_chunk, run_sweep

    tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    try:
        toml = tmp / "bench.toml"
        toml.write_text(f"""
[sweep]
name = "bench"
seed = 0
trials = {args.trials}
chunk = {args.chunk}
[grid]
noise_multiplier = [1.0, 3.0]
steps = {args.steps}
prior_size = 10
known_size = {args.known_size}
""")
        sweep = load_sweep(toml)
        total = sweep.total_trials
        cache = str(tmp / "jax-cache")
        print(f"sweep: 2 points × {args.trials} trials = {total}; T={args.steps}, |D₋|={args.known_size}, n=10, "
              f"chunk {args.chunk}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f} at start")

        from reconrisk._src.experiments.sweep import configure_compile_cache

        configure_compile_cache(cache)
        t = time.perf_counter()
        run_sweep(sweep, tmp / "warm.db", pool=0, compile_cache=cache)  # compiles once, fills the cache
        print(f"first run (compilation + {total} trials, in-process): {time.perf_counter() - t:.1f} s")

        results = {}
        tables = {}

        def timed(label, **kw):
            store = tmp / f"{label.replace(' ', '-')}.db"
            t0 = time.perf_counter()
            res = run_sweep(sweep, store, compile_cache=cache, **kw)
            wall = time.perf_counter() - t0
            assert res.written == total, (label, res.written)
            with ResultStore.open(store) as s:
                fin = sorted(r["finished"] for r in s.trials())
                tables[label] = s.table(run_columns=False)
            first, last = fin[0], fin[-1]
            steady_n = sum(1 for f in fin if f > first)
            steady = steady_n / (last - first) if last > first else float("nan")
            results[label] = (total / wall, steady, wall)

        timed("in-process", pool=0)
        timed("pool 2", pool=2)
        timed("dask 1 worker", workers=1)
        timed("dask 2 workers", workers=2)

        # the audit's executor on one point (σ = 1), same sizes, compiled first
        from reconrisk._src.data import load_dataset
        from reconrisk._src.experiments.audit import AuditSetting
        from reconrisk._src.experiments.trials import run_trials

        data = load_dataset("digits")
        setting = AuditSetting.of(1.0, 1.0, args.steps, 0.1, prior_size=10, trials=args.trials,
                                  known_size=args.known_size, attacks=("alg2",))
        run_trials(setting, data)
        t0 = time.perf_counter()
        run_trials(setting, data)
        audit_rate = args.trials / (time.perf_counter() - t0)

        # store overhead: write the same number of rows (chunk by chunk) into a fresh store
        rows = []
        with ResultStore.open(tmp / "in-process.db") as s:
            rows = s.trials()
        t0 = time.perf_counter()
        with ResultStore.open(tmp / "overhead.db", create=True) as s:
            for lo in range(0, len(rows), args.chunk):
                s.add_trials(rows[lo:lo + args.chunk])
        write = (time.perf_counter() - t0) / len(rows)
        # compute alone: one chunk in this (warm) process, no store
        from reconrisk._src.experiments.sweep import pending_tasks

        task = pending_tasks(sweep, set(), cache)[1]
        run_chunk(task)
        t0 = time.perf_counter()
        reps = 5
        for _ in range(reps):
            run_chunk(task)
        compute = (time.perf_counter() - t0) / (reps * len(task["trials"]))

        base = results["in-process"][0]
        print(f"\n{'backend':<22}{'trials/s (wall)':>16}{'ratio':>8}{'trials/s (steady)':>19}{'wall s':>9}")
        for label, (wall_rate, steady, wall) in results.items():
            print(f"{label:<22}{wall_rate:>16.1f}{wall_rate / base:>8.2f}{steady:>19.1f}{wall:>9.2f}")
        print(f"{'audit run_trials':<22}{audit_rate:>16.1f}{audit_rate / base:>8.2f}{'':>19}{args.trials / audit_rate:>9.2f}")
        print(f"\nstore: {write * 1e3:.3f} ms to write one trial (chunks of {args.chunk}, WAL, one transaction each) vs "
              f"{compute * 1e3:.3f} ms to compute it → overhead {write / compute:.1%} of compute")
        same = all(t == tables["in-process"] for t in tables.values())
        print(f"identical result tables across backends: {same}")
        print(f"load at end: {os.getloadavg()[0]:.2f}")
        if not same:
            raise SystemExit("result tables differ between backends")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
