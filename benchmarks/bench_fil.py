"""Cost of Fisher-information-leakage accounting (Guo, Karrer, Chaudhuri & van der Maaten 2022, Algorithm 1) on CPU.

Part 1 — per-example FIL cost per step, for a batch of B examples, by
estimator: the sampled trace (Eq. 5: m = 50 forward-over-reverse JVPs per
example), the exact trace from the full input Jacobian of the clipped
gradient (``jax.jacfwd``: d JVPs) and the spectral norm by power iteration
(20 JVP + VJP pairs). Models (eLU, GELU soft clip):
  * the Hayes, Mahloujifar & Balle 2023 MLP (input → 10 → 10) and the small CNN
    (conv3×3/2 (16) → conv3×3/2 (32) → dense 10)
  * on the digits' 8×8 inputs (d = 64) and on MNIST-shaped 28×28 inputs
    (d = 784, random pixels: the cost does not depend on the values).

Part 2 — overhead of FIL accounting relative to plain DP-SGD training: the
same jitted ``lax.scan`` of :func:`reconrisk._src.train.dpsgd.dpsgd_step` on the
digits training split (n = 1347, q = 0.05, T = 200 steps), without and with
the FIL step, timed after compilation, for each trace method on the route
``per_example_fil`` takes (first-layer reduction for MLPs, all-pixel tables
for the digits CNN, with the batched ghost tangents they replaced beside them,
"previous", not in the verdict), and the per-example JVP path ("before",
on fewer steps: it is slow; ratios are per step against plain DP-SGD on the
same T). One verdict line per model: overhead ≤ ×10 (issue 8) or not.

    PYTHONPATH=src python benchmarks/bench_fil.py [--batch 64] [--quick]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def _best_time(fn, repeats: int) -> float:
    fn()  # compile / warm up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def per_example_costs(batches: dict, repeats: int, shapes) -> list[tuple]:
    import jax
    import jax.numpy as jnp

    from reconrisk._src.train import fil as F
    from reconrisk._src.train import models

    rows = []
    for shape in shapes:
        d = int(np.prod(shape))
        batch = batches[d]
        rng = np.random.default_rng(0)
        x = jnp.asarray(rng.uniform(size=(batch, d)), jnp.float32)
        y = jnp.asarray(rng.integers(0, 10, batch), jnp.int32)
        for name in ("mlp", "cnn"):
            model = models.get_model(name, shape)
            params = model.init(jax.random.PRNGKey(0))
            timings = {}
            for method in ("plain_grad", "trace_sampled", "trace_exact", "spectral"):
                if method == "plain_grad":
                    from reconrisk._src.train.dpsgd import clipped_grad_sum

                    f = jax.jit(lambda p, x, y: clipped_grad_sum(model, p, x, y, 1.0, mode="gelu")[1])
                else:
                    f = jax.jit(lambda p, x, y, m=method: F.per_example_fil(
                        model, p, x, y, clip_norm=1.0, noise_std=1.0, method=m, key=jax.random.PRNGKey(1)))
                timings[method] = _best_time(lambda: f(params, x, y).block_until_ready(), repeats)
            rows.append((name, shape, d, model.num_params, batch, timings))
    return rows


def _fil_time(model, release, xtr, ytr, method: str, steps: int, repeats: int, route: str | None = None) -> float:
    """Seconds of ``train_dpsgd_with_fil`` (after compilation); ``route`` forces one path of ``per_example_fil``."""
    from reconrisk._src.train import dpsgd
    from reconrisk._src.train import fil as F

    conf = F.FILConfig(method=method, learning_rate=0.5, momentum=0.0)
    real = F._route
    if route is not None:
        F._route = lambda *a: route
        dpsgd._chunk_runner.cache_clear()  # the compiled trainer is cached on (model, config, hook): rebuild it
    try:
        return _best_time(lambda: F.train_dpsgd_with_fil(model, release, xtr, ytr, config=conf, chunk_steps=steps),
                          repeats)
    finally:
        F._route = real
        if route is not None:
            dpsgd._chunk_runner.cache_clear()


def overhead(steps: int, repeats: int, names=("mlp", "cnn"), before_steps: int = 20) -> list[tuple]:
    """Per model: {label: (seconds, steps)} for plain DP-SGD, FIL by each trace method, and the JVP path ("before")."""
    import jax
    import jax.numpy as jnp

    from reconrisk import Release
    from reconrisk._src.experiments.fil import digits_split
    from reconrisk._src.train import fil as F
    from reconrisk._src.train import models
    from reconrisk._src.train.dpsgd import dpsgd_step, make_step_config

    xtr, ytr, _, _, shape = digits_split(0)
    rows = []
    for name in names:
        model = models.get_model(name, shape)
        out = {}
        for n_steps in sorted({steps, before_steps}):
            release = Release(1.0, 0.05, n_steps, clip_norm=1.0)
            cfg = make_step_config(release, xtr.shape[0], 0.5, "gelu")
            xs, ys = jnp.asarray(xtr), jnp.asarray(ytr)
            key = jax.random.PRNGKey(0)
            noise_std = jnp.float32(release.noise_std)

            @jax.jit
            def plain(params, ts):
                def body(p, t):
                    return dpsgd_step(model, cfg, p, key, t, xs, ys, noise_std)[0], None

                return jax.lax.scan(body, params, ts)[0]

            params = model.init(key)
            ts = jnp.arange(n_steps)
            t_plain = _best_time(lambda: jax.block_until_ready(plain(params, ts)), repeats)
            if n_steps == steps:
                out["plain DP-SGD"] = (t_plain, n_steps)
                for method in ("trace_sampled", "trace_exact"):
                    route = F._route(model, method, F.DEFAULT_NUM_COORDS)
                    label = {"dense": "first-layer reduction", "pixel": "pixel tables", "ghost": "ghost tangents",
                             "jvp": "JVPs"}[route]
                    out[f"DP-SGD + FIL ({method}, {label})"] = (
                        _fil_time(model, release, xtr, ytr, method, n_steps, repeats), n_steps)
                    if route == "pixel":  # the route the pixel tables replaced, same T (not in the verdict)
                        out[f"DP-SGD + FIL ({method}, ghost tangents: previous)"] = (
                            _fil_time(model, release, xtr, ytr, method, n_steps, repeats, route="ghost"), n_steps)
            if n_steps == before_steps:  # the per-example JVP path the fast routes replace, fewer steps (it is slow)
                out[f"plain DP-SGD (T = {n_steps})"] = (t_plain, n_steps)
                out["DP-SGD + FIL (trace_sampled, JVPs: before)"] = (
                    _fil_time(model, release, xtr, ytr, "trace_sampled", n_steps, repeats, route="jvp"), n_steps)
        rows.append((name, out))
    return rows


TARGET_OVERHEAD = 10.0  # issue 8: FIL accounting ≤ ×10 of plain DP-SGD on CPU, every model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=64, help="batch for the 8×8 inputs")
    ap.add_argument("--batch-large", type=int, default=8, help="batch for the 28×28 inputs")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--quick", action="store_true", help="digits shape only, fewer steps")
    ap.add_argument("--models", default="mlp,cnn", help="models of Part 2 (comma-separated)")
    ap.add_argument("--skip-part1", action="store_true", help="only the training overhead (Part 2)")
    ap.add_argument("--before-steps", type=int, default=20, help="steps for the slow JVP path ('before')")
    args = ap.parse_args()
    import jax

    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, {os.cpu_count()} CPU cores visible")
    shapes = [(8, 8, 1)] if args.quick else [(8, 8, 1), (28, 28, 1)]
    if args.skip_part1:
        shapes = []
    print(f"\nPart 1: per-example FIL cost per step (median of {args.repeats} after warm-up; ms per example)")
    print(f"{'model':5} {'input':>8} {'d':>4} {'params':>7} {'batch':>5} | {'clipped grad':>12} {'JVP m=50':>9} {'exact Jac':>9} "
          f"{'spectral':>9} | {'exact/JVP':>9} {'JVP/grad':>8}")
    for name, shape, d, p, b, t in per_example_costs({64: args.batch, 784: args.batch_large}, args.repeats, shapes):
        ms = {k: 1e3 * val / b for k, val in t.items()}
        print(f"{name:5} {'x'.join(map(str, shape[:2])):>8} {d:>4} {p:>7} {b:>5} | {ms['plain_grad']:>12.4f} "
              f"{ms['trace_sampled']:>9.4f} {ms['trace_exact']:>9.4f} {ms['spectral']:>9.4f} | "
              f"{t['trace_exact'] / t['trace_sampled']:>9.2f} {t['trace_sampled'] / t['plain_grad']:>8.1f}")
    steps = 60 if args.quick else args.steps
    print(f"\nPart 2: training time on digits (n = 1347, q = 0.05, T = {steps}; seconds after compilation)")
    print(f"  (load average {os.getloadavg()[0]:.1f})")
    for name, out in overhead(steps, args.repeats, tuple(args.models.split(",")), args.before_steps):
        base = out["plain DP-SGD"][0] / steps
        base_before = next(v[0] / v[1] for k, v in out.items() if k.startswith("plain DP-SGD (T"))
        worst = 0.0
        for k, (val, n) in out.items():
            if k.startswith("plain"):
                ratio = 1.0
            else:
                ratio = (val / n) / (base_before if "before" in k else base)
                if "before" not in k and "previous" not in k:
                    worst = max(worst, ratio)
            print(f"  {name:4} {k:50} T={n:<4d} {val:8.3f} s   ×{ratio:6.1f}   {1e3 * val / n:8.2f} ms/step")
        verdict = "PASS" if worst <= TARGET_OVERHEAD else "FAIL"
        print(f"  {name:4} verdict: FIL overhead ≤ ×{TARGET_OVERHEAD:g} of plain DP-SGD on every trace method: "
              f"{verdict} (worst ×{worst:.1f}; load average {os.getloadavg()[0]:.1f})")

if __name__ == "__main__":
    main()
