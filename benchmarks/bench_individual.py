"""Per-example accounting at scale (issue 42, item 4): 6,000 and 60,000 examples × 1,000 steps.

Random clipped-gradient norms (uniform on [0, 1.5]·C, clipped to C) from a seeded ``np.random.Generator``,
generated in chunks of 1,000 examples; σ = 1, q = 0.01, T = 1,000, 32 levels, δ = 1e-5. Each size runs in a
fresh process (its peak resident memory is the process's): ``individual_analysis`` + ``ex_post_epsilon(δ)``
(the reported numbers), then ``ex_post_epsilon_lower(δ)`` (the coarsening's lower end, when the code has it),
wall and CPU seconds. The norms are streamed as an iterator of blocks when the code accepts one, else (main's
code before issue 42) assembled into one (n, T) array. Target: 60k / 6k ≤ 3.

Peer: the straightforward per-example accounting — one dp_accounting PLD per distinct example schedule
(``from_gaussian_mechanism(σ/u_k, sampling_prob=q)`` per level, ``self_compose(c_k)``, composed; its
``get_epsilon_for_delta``), at the same loss grid (1e-3), timed on a subsample of examples and
**extrapolated** linearly to n (every example's schedule is distinct here, so that is its cost).

    PYTHONPATH=src python benchmarks/bench_individual.py [--sizes 6000 60000] [--peer-sample 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

SIGMA, Q, T, DELTA, SEED, CHUNK = 1.0, 0.01, 1000, 1e-5, 0, 1000


def _chunks(n: int):
    rng = np.random.default_rng(SEED)
    for start in range(0, n, CHUNK):
        yield np.minimum(rng.uniform(0.0, 1.5, size=(min(CHUNK, n - start), T)), 1.0)


def one(n: int) -> dict:
    import inspect

    from reconrisk import Release
    from reconrisk._src.individual.privacy import individual_analysis

    rel = Release(SIGMA, Q, T, clip_norm=1.0)
    streams = "blocks" in inspect.signature(individual_analysis).parameters
    w0, c0 = time.perf_counter(), time.process_time()
    norms = _chunks(n) if streams else np.concatenate(list(_chunks(n)))
    ip = individual_analysis(rel, norms)
    eps = ip.ex_post_epsilon(DELTA)
    w1, c1 = time.perf_counter(), time.process_time()
    out = {"n": n, "wall": w1 - w0, "cpu": c1 - c0, "streamed": streams, "groups": int(ip.groups),
           "compositions": int(getattr(ip, "compositions", ip.groups)), "eps_median": float(np.median(eps)),
           "eps_max": float(eps.max())}
    if hasattr(ip, "ex_post_epsilon_lower"):
        low = ip.ex_post_epsilon_lower(DELTA)
        w2, c2 = time.perf_counter(), time.process_time()
        out.update(wall_lower=w2 - w1, cpu_lower=c2 - c1,
                   max_rel_width=float(np.max((eps - low) / eps)), median_rel_width=float(np.median((eps - low) / eps)))
    out["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def peer(sample: int) -> dict:
    """dp_accounting, one PLD per example schedule, for the first ``sample`` examples: seconds per example."""
    from dp_accounting.pld import privacy_loss_distribution as pldm

    from reconrisk._src.individual.levels import level_counts, sensitivity_levels
    from reconrisk import Release

    levels = sensitivity_levels(32)
    norms = next(_chunks(sample))
    counts = level_counts(norms, Release(SIGMA, Q, T, clip_norm=1.0), levels)[:, 0]
    t0 = time.perf_counter()
    eps = []
    for row in counts:
        total = None
        for k in np.flatnonzero(row[1:]) + 1:
            p = pldm.from_gaussian_mechanism(standard_deviation=SIGMA / levels[k], sampling_prob=Q,
                                             value_discretization_interval=1e-3).self_compose(int(row[k]))
            total = p if total is None else total.compose(p)
        eps.append(total.get_epsilon_for_delta(DELTA))
    return {"per_example": (time.perf_counter() - t0) / sample, "eps": eps}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[6000, 60000])
    ap.add_argument("--peer-sample", type=int, default=3)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print(f"sigma={SIGMA} q={Q} T={T} delta={DELTA} uniform norms (seed {SEED}), 32 levels")
    rows = []
    for n in args.sizes:
        res = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True)
        rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
    print(f"{'n':>7} {'wall s':>8} {'cpu s':>7} {'+lower wall':>11} {'peak MiB':>9} {'groups':>7} {'comps':>6} "
          f"{'eps med':>8} {'eps max':>8} {'bracket max/med rel':>20}")
    for r in rows:
        lw = f"{r['wall_lower']:.2f}" if "wall_lower" in r else "-"
        br = f"{r['max_rel_width']:.4f}/{r['median_rel_width']:.4f}" if "max_rel_width" in r else "-"
        print(f"{r['n']:>7} {r['wall']:>8.2f} {r['cpu']:>7.2f} {lw:>11} {r['peak_mib']:>9.0f} {r['groups']:>7} "
              f"{r['compositions']:>6} {r['eps_median']:>8.4f} {r['eps_max']:>8.4f} {br:>20}")
    if len(rows) >= 2:
        a, b = rows[0], rows[-1]
        both = [(r["wall"] + r.get("wall_lower", 0.0)) for r in (a, b)]
        print(f"ratio {b['n']}/{a['n']}: wall {b['wall'] / a['wall']:.2f}, cpu {b['cpu'] / a['cpu']:.2f}, "
              f"with the lower end {both[1] / both[0]:.2f} (target <= 3)")
    p = peer(args.peer_sample)
    print(f"peer (dp_accounting, one PLD per example schedule, grid 1e-3): {p['per_example']:.2f} s per example on "
          f"{args.peer_sample} examples (eps {', '.join(f'{e:.4f}' for e in p['eps'])}), extrapolated:")
    for r in rows:
        est = p["per_example"] * r["n"]
        print(f"  n={r['n']}: peer ~{est:,.0f} s (extrapolated) vs reconrisk {r['wall']:.2f} s: ratio {est / r['wall']:.0f}x")
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
