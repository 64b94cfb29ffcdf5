"""Shadow models trained per second: one vmapped, jitted program vs a sequential Python loop (seed 002 RecoNN).

Both paths train the *same* models — θ_i = A(D⁻ ∪ {z_i}), full-batch DP-GD
with momentum from the shared step of ``train/dpsgd.py`` (seed 000's MLP
input→10→10 on the 8×8 digits, |D⁻| = 50) — in the same process on the same
CPU, and the script checks that their parameters agree:

* vectorised: ``train_shadow_models`` (``jax.vmap`` over targets and keys of
  a ``lax.scan`` over steps, one program per chunk of models);
* sequential: ``train_shadow_models_sequential`` (a Python loop calling one
  jitted single-model program per model) — the paper's "one by one".

Compilation is excluded from both (each program is warmed up first) and
reported separately. The target is a ratio ≥ 10×. Without DP both paths take
the plain batch gradient (no per-example norms, no noise draw). Rates are
printed per wall second and per CPU second of this process (the latter is
steadier on a shared machine).

    PYTHONPATH=src python3.11 benchmarks/bench_shadow.py [--models 1024] [--steps 30]

This task has no GPU: the figures are CPU figures. On a GPU machine the same
script reports the device JAX uses (``--models 10000`` for the issue's figure).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=1024, help="shadow models in the vectorised run")
    ap.add_argument("--sequential", type=int, default=128, help="models in the sequential loop (rate extrapolates)")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--fixed", type=int, default=50)
    ap.add_argument("--chunk", type=int, default=128, help="models per vmapped program call")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (medians are reported)")
    ap.add_argument("--dp", action="store_true", help="DP-GD (σ = 2, C = 1) instead of plain GD")
    args = ap.parse_args()

    import jax

    from reconrisk.data import load_digits
    from reconrisk.release import Release
    from reconrisk.train.models import get_model
    from reconrisk.train.shadow import ShadowConfig, train_shadow_models, train_shadow_models_sequential

    ds = load_digits()
    model = get_model("mlp", ds.image_shape)
    rel = Release(2.0, 1.0, args.steps, clip_norm=1.0) if args.dp else None
    cfg = ShadowConfig(steps=args.steps, release=rel)
    xf, yf = ds.x[: args.fixed], ds.y[: args.fixed]
    rng = np.random.default_rng(0)
    idx = rng.integers(args.fixed, len(ds), args.models)
    xt, yt = ds.x[idx], ds.y[idx]
    print(f"device: {jax.devices()[0].platform} ({jax.devices()[0].device_kind}); no GPU in this task" if
          jax.devices()[0].platform == "cpu" else f"device: {jax.devices()[0]}")
    print(f"cpu cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}")
    print(f"model: {model.name} on digits ({model.num_params} parameters), |D-| = {args.fixed}, steps = {args.steps}, "
          f"{'DP-GD' if args.dp else 'GD'} + momentum")

    t = time.perf_counter()
    train_shadow_models(model, xf, yf, xt[: args.chunk], yt[: args.chunk], cfg, chunk=args.chunk, pad_chunks=True)
    compile_vec = time.perf_counter() - t
    k = min(args.sequential, args.models)
    t = time.perf_counter()
    train_shadow_models_sequential(model, xf, yf, xt[:1], yt[:1], cfg)
    compile_seq = time.perf_counter() - t
    print(f"compile (excluded below): vectorised {compile_vec:.1f} s, sequential {compile_seq:.1f} s")

    # interleaved rounds: on a shared machine the load drifts, so each round times both paths back to back
    def cpu() -> float:  # this process's CPU seconds (all threads): robust to other jobs on a shared machine
        t = os.times()
        return t.user + t.system

    rates_vec, rates_seq, cpu_vec, cpu_seq = [], [], [], []
    for r in range(args.rounds):
        t, c = time.perf_counter(), cpu()
        vec = train_shadow_models(model, xf, yf, xt, yt, cfg, chunk=args.chunk, pad_chunks=True)
        t_vec, c_vec = time.perf_counter() - t, cpu() - c
        t, c = time.perf_counter(), cpu()
        seq = train_shadow_models_sequential(model, xf, yf, xt[:k], yt[:k], cfg)
        t_seq, c_seq = time.perf_counter() - t, cpu() - c
        rates_vec.append(args.models / t_vec)
        rates_seq.append(k / t_seq)
        cpu_vec.append(args.models / max(c_vec, 1e-9))
        cpu_seq.append(k / max(c_seq, 1e-9))
        print(f"round {r + 1}: vectorised {args.models} models in {t_vec:6.2f} s = {rates_vec[-1]:8.1f} models/s | "
              f"sequential {k} models in {t_seq:6.2f} s = {rates_seq[-1]:7.1f} models/s | ratio "
              f"{rates_vec[-1] / rates_seq[-1]:5.1f}x (per CPU-second: {cpu_vec[-1] / cpu_seq[-1]:5.1f}x) | "
              f"load {os.getloadavg()[0]:.1f}")
    err = float(np.abs(vec[:k] - seq).max())
    r_vec, r_seq = float(np.median(rates_vec)), float(np.median(rates_seq))
    print(f"max |vectorised - sequential| over the {k} shared models: {err:.2e}")
    print(f"median: vectorised {r_vec:.1f} models/s, sequential {r_seq:.1f} models/s")
    print(f"speed-up vectorised / sequential (ratio of medians): {r_vec / r_seq:.1f}x (target >= 10x)")
    c_vec, c_seq = float(np.median(cpu_vec)), float(np.median(cpu_seq))
    print(f"per CPU-second (process CPU time, both cores): vectorised {c_vec:.1f}, sequential {c_seq:.1f} models; "
          f"ratio {c_vec / c_seq:.1f}x")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
