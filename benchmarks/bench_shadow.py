"""Shadow models trained per second: the vectorised program vs sequential Python loops of the same models (Balle, Cherubin & Hayes 2022).

Every path trains the *same* models — θ_i = A(D⁻ ∪ {z_i}), full-batch GD
with momentum (Hayes, Mahloujifar & Balle's (2023) MLP input→10→10 on the 8×8 digits, |D⁻| = 50) —
in the same process on the same CPU, and the script checks that their
parameters agree:

* vectorised: ``train_shadow_models`` — for dense models (with or without
  DP) the batched program of ``train/shadow_dense.py`` (the first layer as
  one shared product per step for all models: (M·h × n)(n × n) in the span
  of the data while |D⁻| < 2d, else (M·h × d)(d × n)), otherwise
  ``jax.vmap`` of the one-model program; one jitted call per chunk of models,
  on CPU two chunks per core at a time (a thread pool: the per-model products
  are too small for XLA to split one program over both cores);
* (a) sequential, one jitted whole-training program per model, called in a
  Python loop. Two such programs exist and the FASTER one is baseline (a):
  ``scan`` (the generic one-model ``lax.scan``) and ``dense`` (the batched
  program above called with one model, i.e. the same algebra as the
  vectorised path, so the ratio against it is the gain of batching alone);
* (b) the ordinary training loop a user would write — a jitted step
  function called T times per model from Python (``program="steps"``).

The ≥ 10× target line is measured against (a), the strongest sequential
baseline. It holds where one model's program is bound by per-operation
overhead (the default |D⁻| = 50; 9.2–15.7× in two quiet runs) and not where
each model's own work is large (|D⁻| = 500: 3.3–3.8×; per CPU-second 1.8–2.1×):
there the one-model program already runs the same large products and the
batched one can add only the second core and the rest of the matrix-product
peak. ``--fixed 50 100 200 500`` prints the whole range. Compilation is excluded (each program is warmed up first) and
reported. Rates are per wall second and per CPU second of this process (the
latter steadier on a shared machine, and free of the thread pool's use of the
second core); "cores busy" = CPU seconds / wall seconds; rounds interleave all
paths.

    PYTHONPATH=src python3.11 benchmarks/bench_shadow.py [--models 1024] [--steps 30] [--dp]
    # GPU (the lead): 10⁴ shadow models, vectorised path only, figure in models/s
    PYTHONPATH=src python3.11 benchmarks/bench_shadow.py --count 10000 --device-only --chunk 2048
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def _cpu() -> float:  # this process's CPU seconds, all threads (process_time: ns clock; os.times ticks at 10 ms)
    return time.process_time()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", "--count", dest="models", type=int, default=4096,
                    help="shadow models in the vectorised run")
    ap.add_argument("--sequential", type=int, default=128, help="models in each sequential loop (rate extrapolates)")
    ap.add_argument("--stepwise", type=int, default=16, help="models in the per-step loop (b)")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--fixed", type=int, nargs="+", default=[50],
                    help="|D-| (several values: one measurement each, then a summary line per value)")
    ap.add_argument("--chunk", type=int, default=None,
                    help="models per vectorised program call (default: the library's, train.shadow.default_chunk)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (medians are reported)")
    ap.add_argument("--program", default="auto", choices=("auto", "dense", "vmap"), help="vectorised program")
    ap.add_argument("--dp", action="store_true", help="DP-GD (σ = 2, C = 1) instead of plain GD")
    ap.add_argument("--device-only", action="store_true", help="time the vectorised path only (no sequential loops)")
    args = ap.parse_args()

    from reconrisk._src._jax import jax
    from reconrisk._src.data import load_digits
    from reconrisk._src.train.models import get_model

    ds = load_digits()
    model = get_model("mlp", ds.image_shape)
    dev = jax.devices()[0]
    print(f"device: {dev.platform} ({dev.device_kind}); jax {jax.__version__}")
    print(f"cpu cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}")
    summary = [measure(args, ds, model, fixed) for fixed in args.fixed]
    if len(summary) > 1 and not args.device_only:
        print("summary (wall speed-ups; target >= 10x against (a)):")
        for fixed, line in zip(args.fixed, summary):
            print(f"  |D-| = {fixed:4d}: {line}")


def measure(args, ds, model, fixed: int) -> str:
    """Time every path at |D⁻| = ``fixed``; print the figures; return a one-line summary."""
    from reconrisk._src._jax import jax
    from reconrisk._src.release import Release
    from reconrisk._src.train import shadow as sh

    rel = Release(2.0, 1.0, args.steps, clip_norm=1.0) if args.dp else None
    cfg = sh.ShadowConfig(steps=args.steps, release=rel)
    xf, yf = ds.x[:fixed], ds.y[:fixed]
    idx = np.random.default_rng(0).integers(fixed, len(ds), args.models)
    xt, yt = ds.x[idx], ds.y[idx]
    dev = jax.devices()[0]
    shadow_threads = sh._chunk_workers()
    chunk = args.chunk or sh.default_chunk(model, cfg, fixed, args.program)
    print(f"model: {model.name} on digits ({model.num_params} parameters), |D-| = {fixed}, steps = {args.steps}, "
          f"{'DP-GD' if args.dp else 'GD'} + momentum; vectorised program: {args.program}, chunk {chunk}")

    vec_run = lambda: sh.train_shadow_models(model, xf, yf, xt, yt, cfg, chunk=chunk, pad_chunks=True,  # noqa
                                             program=args.program)
    t = time.perf_counter()
    sh.train_shadow_models(model, xf, yf, xt[:1], yt[:1], cfg, chunk=chunk, pad_chunks=True,
                           program=args.program)
    print(f"compile (excluded below): vectorised {time.perf_counter() - t:.1f} s", end="")

    seq_programs: dict[str, int] = {}
    if not args.device_only:
        seq_programs["scan"] = min(args.sequential, args.models)
        from reconrisk._src.train import shadow_dense
        if shadow_dense.supports(model, cfg.step_config(fixed + 1)):
            seq_programs["dense"] = min(args.sequential, args.models)
        seq_programs["steps"] = min(args.stepwise, args.models)
        for prog in seq_programs:
            t = time.perf_counter()
            sh.train_shadow_models_sequential(model, xf, yf, xt[:1], yt[:1], cfg, program=prog)
            print(f", sequential {prog} {time.perf_counter() - t:.1f} s", end="")
    print()
    # untimed warm-up of every path as timed (the first use of the chunk thread pool and of fresh buffers is slow)
    warm = min(args.models, 2 * chunk)
    sh.train_shadow_models(model, xf, yf, xt[:warm], yt[:warm], cfg, chunk=chunk, pad_chunks=True,
                           program=args.program)
    for prog in seq_programs:
        sh.train_shadow_models_sequential(model, xf, yf, xt[:2], yt[:2], cfg, program=prog)

    wall: dict[str, list] = {"vectorised": [], **{p: [] for p in seq_programs}}
    cpu: dict[str, list] = {k: [] for k in wall}
    results: dict[str, np.ndarray] = {}
    for r in range(args.rounds):
        parts = []
        t, c = time.perf_counter(), _cpu()
        results["vectorised"] = vec_run()
        dt, dc = time.perf_counter() - t, _cpu() - c
        wall["vectorised"].append(args.models / dt)
        cpu["vectorised"].append(args.models / max(dc, 1e-9))
        parts.append(f"vectorised {args.models} in {dt:5.2f} s = {wall['vectorised'][-1]:7.1f}/s")
        for prog, k in seq_programs.items():
            t, c = time.perf_counter(), _cpu()
            results[prog] = sh.train_shadow_models_sequential(model, xf, yf, xt[:k], yt[:k], cfg, program=prog)
            dt, dc = time.perf_counter() - t, _cpu() - c
            wall[prog].append(k / dt)
            cpu[prog].append(k / max(dc, 1e-9))
            parts.append(f"{prog} {k} in {dt:5.2f} s = {wall[prog][-1]:6.1f}/s")
        print(f"round {r + 1}: " + " | ".join(parts) + f" | load {os.getloadavg()[0]:.1f}", flush=True)

    med = {k: float(np.median(w)) for k, w in wall.items()}
    medc = {k: float(np.median(c)) for k, c in cpu.items()}
    print(f"vectorised: {med['vectorised']:.1f} shadow models/s (wall), {medc['vectorised']:.1f} per CPU-second "
          f"[N = {args.models}, {dev.platform}; {shadow_threads} chunk thread(s); "
          f"{med['vectorised'] / medc['vectorised']:.2f} cores busy]")
    if not seq_programs:
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        return f"{med['vectorised']:.1f} models/s"
    for prog in seq_programs:
        err = float(np.abs(results["vectorised"][: seq_programs[prog]] - results[prog]).max())
        print(f"sequential {prog:5s}: {med[prog]:7.1f} models/s (wall), {medc[prog]:7.1f} per CPU-second "
              f"({med[prog] / medc[prog]:.2f} cores busy); "
              f"vectorised / this: {med['vectorised'] / med[prog]:5.1f}x wall, "
              f"{medc['vectorised'] / medc[prog]:5.1f}x per CPU-second; max |vectorised - this| = {err:.1e}")
    one_program = [p for p in seq_programs if p != "steps"]
    best = max(one_program, key=lambda p: med[p])
    print(f"(a) strongest sequential baseline = one jitted whole-training program per model, '{best}': "
          f"speed-up {med['vectorised'] / med[best]:.1f}x wall, {medc['vectorised'] / medc[best]:.1f}x per CPU-second "
          f"(target >= 10x)")
    print(f"(b) ordinary per-step loop (jitted step called {args.steps}x per model): "
          f"speed-up {med['vectorised'] / med['steps']:.1f}x wall, "
          f"{medc['vectorised'] / medc['steps']:.1f}x per CPU-second")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return (f"(a) {med['vectorised'] / med[best]:5.1f}x ('{best}'), against 'scan' "
            f"{med['vectorised'] / med['scan']:5.1f}x, (b) {med['vectorised'] / med['steps']:5.1f}x; "
            f"{med['vectorised']:.0f} models/s")


if __name__ == "__main__":
    main()
