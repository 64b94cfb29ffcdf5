"""Per-example-clipped DP-SGD steps per second on CPU at batch 256: reconrisk (JAX) vs Opacus.

Models (MNIST-shaped inputs, 28×28×1, 10 classes, eLU):
  * Hayes, Mahloujifar & Balle 2023 MLP 784→10→10
  * MLP 784→256→256→10
  * small CNN: conv3×3/2 (16) → conv3×3/2 (32) → dense 10

Each step is the whole DP-SGD update: per-example gradient norms, clipping,
the clipped sum, Gaussian noise N(0, σ²C²) on the sum, and the SGD update.
reconrisk runs its steps as its trainer does (``train()``: a jitted
``lax.scan`` over a chunk of steps, here 16 per call; column "reconrisk");
the column "per call" runs one jitted step per Python call and waits for it,
as the Opacus loop does (the ratios are printed for both).
Opacus (PyTorch) runs in its default mode (``grad_sample_mode="hooks"``) and
in its fastest mode (``grad_sample_mode="ghost"``, fast gradient clipping);
the batch is fixed at 256 for all. A naive JAX ``vmap(grad)`` step (it
materialises every per-example gradient) is shown for reference. Finally the
script times the full audit loop (train + adversary, Hayes, Mahloujifar & Balle 2023 default setting
on the digits data) in trials per second.

Opacus and torch are NOT reconrisk dependencies; install them beside it to run
this script, e.g. in a virtual environment:

    python -m venv --system-site-packages /tmp/benchvenv
    /tmp/benchvenv/bin/pip install "torch==2.13.0+cpu" opacus
    PYTHONPATH=src /tmp/benchvenv/bin/python benchmarks/bench_dpsgd.py

Without torch/opacus the Opacus columns are skipped.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore")

BATCH = 256
SIGMA = 1.0
CLIP = 1.0
LR = 0.1


def _timeit(step, min_seconds: float, min_steps: int = 5) -> float:
    """Steps per second of ``step()`` (which must block until done) after one warm-up call."""
    step()
    n, t0 = 0, time.perf_counter()
    while True:
        step()
        n += 1
        dt = time.perf_counter() - t0
        if dt >= min_seconds and n >= min_steps:
            return n / dt


# -- reconrisk / JAX ---------------------------------------------------------------------
def jax_models():
    from reconrisk._src.train import models

    return {
        "seed000 MLP 784-10-10": models.mlp((28, 28, 1), (10,)),
        "MLP 784-256-256-10": models.mlp((28, 28, 1), (256, 256)),
        "small CNN": models.cnn((28, 28, 1)),
    }


#: Steps per jitted call in the scanned loop (``train()`` scans chunks of up to 256 steps).
SCAN_STEPS = 16


def bench_jax(model, x, y, seconds: float, naive: bool = False, scan: bool = False) -> float:
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    from reconrisk._src.train import dpsgd

    cfg = dpsgd.StepConfig(1.0, CLIP, LR, "hard", None, float(BATCH))
    noise_std = jnp.float32(SIGMA * CLIP)
    xs, ys = jnp.asarray(x), jnp.asarray(y)
    key = jax.random.PRNGKey(0)

    if scan:  # the trainer's loop: the same step, SCAN_STEPS of them per jitted lax.scan
        @jax.jit
        def chunk(params, t0):
            def body(p, t):
                return dpsgd.dpsgd_step(model, cfg, p, key, t, xs, ys, noise_std)[0], None

            return jax.lax.scan(body, params, t0 + jnp.arange(SCAN_STEPS))[0]

        state = {"p": model.init(jax.random.PRNGKey(1)), "t": 0}

        def run_chunk():
            state["p"] = chunk(state["p"], state["t"])
            state["t"] += SCAN_STEPS
            jax.block_until_ready(state["p"])

        return SCAN_STEPS * _timeit(run_chunk, seconds, min_steps=2)

    if not naive:
        @jax.jit
        def step(params, t):
            return dpsgd.dpsgd_step(model, cfg, params, key, t, xs, ys, noise_std)[0]
    else:
        @jax.jit
        def step(params, t):
            summed, _ = dpsgd.naive_clipped_sum(model, params, xs, ys, CLIP)
            flat, unravel = ravel_pytree(summed)
            noise = jax.random.normal(jax.random.fold_in(key, t), flat.shape) * SIGMA * CLIP
            theta, _ = ravel_pytree(params)
            return unravel(theta - LR * (flat + noise) / BATCH)

    state = {"p": model.init(jax.random.PRNGKey(1)), "t": 0}

    def run():
        state["p"] = step(state["p"], state["t"])
        state["t"] += 1
        jax.block_until_ready(state["p"])

    return _timeit(run, seconds)


# -- Opacus --------------------------------------------------------------------------------
def torch_models():
    import torch.nn as nn

    return {
        "seed000 MLP 784-10-10": lambda: nn.Sequential(nn.Flatten(), nn.Linear(784, 10), nn.ELU(), nn.Linear(10, 10)),
        "MLP 784-256-256-10": lambda: nn.Sequential(
            nn.Flatten(), nn.Linear(784, 256), nn.ELU(), nn.Linear(256, 256), nn.ELU(), nn.Linear(256, 10)
        ),
        "small CNN": lambda: nn.Sequential(
            nn.Conv2d(1, 16, 3, 2, 1), nn.ELU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ELU(), nn.Flatten(), nn.Linear(32 * 7 * 7, 10)
        ),
    }


def bench_opacus(make_model, x, y, mode: str, seconds: float) -> float:
    import torch
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    xt = torch.tensor(x.reshape(-1, 1, 28, 28))
    yt = torch.tensor(y, dtype=torch.long)
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    loader = DataLoader(TensorDataset(xt, yt), batch_size=BATCH)
    criterion = torch.nn.CrossEntropyLoss()
    engine = PrivacyEngine()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if mode == "ghost":
            model, opt, criterion, loader = engine.make_private(
                module=model, optimizer=opt, data_loader=loader, noise_multiplier=SIGMA, max_grad_norm=CLIP,
                grad_sample_mode="ghost", criterion=criterion, poisson_sampling=False,
            )
        else:
            model, opt, loader = engine.make_private(
                module=model, optimizer=opt, data_loader=loader, noise_multiplier=SIGMA, max_grad_norm=CLIP,
                grad_sample_mode=mode, poisson_sampling=False,
            )

    def run():
        opt.zero_grad()
        loss = criterion(model(xt), yt)
        loss.backward()
        opt.step()

    return _timeit(run, seconds)


# -- the audit loop --------------------------------------------------------------------------
def bench_audit(trials: int) -> tuple[float, dict]:
    from reconrisk._src.data import load_digits
    from reconrisk._src.experiments.audit import calibrated_settings, run_setting

    data = load_digits()
    (s,) = calibrated_settings([4.0], trials=trials, attacks=("alg2",))
    run_setting(s, data)  # compile
    t0 = time.perf_counter()
    r = run_setting(s, data)
    return trials / (time.perf_counter() - t0), r.rates["alg2"].to_dict()


def profile_default_audit(trials: int) -> None:
    """The default ``reconrisk audit`` (4 ε) profiled: time to the certified bounds, compile, trial loop, compilations."""
    from reconrisk._src.data import load_digits
    from reconrisk._src.experiments import trials as tr
    from reconrisk._src.experiments.audit import calibrated_settings, certify, run_setting

    t0 = time.perf_counter()
    data = load_digits()
    settings = calibrated_settings([1.0, 4.0, 10.0, 32.0], trials=trials, attacks=("alg2",))
    certs = [certify(s) for s in settings]
    t_bounds = time.perf_counter() - t0
    print(f"\ndefault audit profile (4 ε × {trials} trials, alg2; machine load {os.getloadavg()[0]:.1f}):")
    print(f"  certified bounds ready after {t_bounds:.2f} s (σ calibration + ReRo bound, no JAX)")
    seconds, cpus = [], []

    def cpu() -> float:  # this process's CPU seconds, all threads (steadier than wall on a shared machine)
        t = os.times()
        return t.user + t.system

    for s, c in zip(settings, certs):
        t, c0 = time.perf_counter(), cpu()
        r = run_setting(s, data, certificate=c)
        seconds.append(time.perf_counter() - t)
        cpus.append(cpu() - c0)
        print(f"  ε={s.epsilon:<4g} {seconds[-1]:7.2f} s  {trials / seconds[-1]:6.1f} trials/s  "
              f"({cpus[-1]:6.2f} CPU-s, {trials / cpus[-1]:5.1f} trials per CPU-s)  alg2 {r.rates['alg2'].rate:.3f}",
              flush=True)
    info = tr._trial_functions.cache_info()
    compiled = sum(f._cache_size() for f in _cached_trial_fns())
    print(f"  trial-function builds: {info.misses} (cache hits {info.hits}); XLA compilations of trial batches: {compiled}")
    print(f"  first ε (includes compile) {seconds[0]:.2f} s; later ε mean {np.mean(seconds[1:]):.2f} s; "
          f"total wall {t_bounds + sum(seconds):.1f} s (extrapolated to 1000 trials/ε: "
          f"{t_bounds + seconds[0] + np.mean(seconds[1:]) * (4 * 1000 / trials - 1):.0f} s)")
    print(f"  CPU: first ε {cpus[0]:.1f} CPU-s, later ε mean {np.mean(cpus[1:]):.2f} CPU-s; extrapolated to 1000 trials/ε: "
          f"{cpus[0] + np.mean(cpus[1:]) * (4 * 1000 / trials - 1):.0f} CPU-s (an idle 2-core machine runs the trial "
          f"batches on both cores)")


def _cached_trial_fns():
    """The jitted trial functions built so far (for counting compilations)."""
    import gc

    return [o for o in gc.get_objects()
            if type(o).__name__ == "PjitFunction" and getattr(o, "__name__", "").endswith("_trial")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1.5, help="minimum timing window per measurement")
    ap.add_argument("--no-naive", action="store_true", help="skip the naive vmap(grad) JAX reference")
    ap.add_argument("--audit-trials", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the best of each is reported")
    ap.add_argument("--profile-audit", type=int, default=0, metavar="TRIALS",
                    help="only profile the default audit (4 ε) with TRIALS trials per ε")
    args = ap.parse_args()
    if args.profile_audit:
        profile_default_audit(args.profile_audit)
        return

    rng = np.random.default_rng(0)
    x = rng.random((BATCH, 784), dtype=np.float32)
    y = rng.integers(0, 10, BATCH).astype(np.int64)
    try:
        import opacus
        import torch

        have_opacus = True
        versions = f"torch {torch.__version__} (threads {torch.get_num_threads()}), opacus {opacus.__version__}"
    except ImportError:
        have_opacus = False
        versions = "torch/opacus not installed: Opacus columns skipped"
    import jax

    print(f"CPU cores visible: {os.cpu_count()}; jax {jax.__version__}; {versions}; "
          f"load average {os.getloadavg()[0]:.2f} (1 min)")
    print(f"batch {BATCH}, σ = {SIGMA}, C = {CLIP}; steps per second (higher is better)\n")
    header = (f"{'model':24s} {'params':>8s} {'reconrisk':>10s} {'per call':>9s} {'jax naive':>10s} {'opacus':>9s} "
              f"{'op.ghost':>9s} {'×opacus':>8s} {'×ghost':>7s} {'×ghost per call':>16s}")
    print(header)
    print("-" * len(header))
    tms = torch_models() if have_opacus else {}
    for name, model in jax_models().items():
        # the machine is shared: interleave the contenders for several rounds and keep each one's best
        best = {"ours": 0.0, "call": 0.0, "hooks": float("nan"), "ghost": float("nan")}
        runners = {"ours": lambda: bench_jax(model, x, y.astype(np.int32), args.seconds, scan=True),
                   "call": lambda: bench_jax(model, x, y.astype(np.int32), args.seconds)}
        if have_opacus:
            runners["hooks"] = lambda: bench_opacus(tms[name], x, y, "hooks", args.seconds)
            runners["ghost"] = lambda: bench_opacus(tms[name], x, y, "ghost", args.seconds)
        for _ in range(args.rounds):
            for key, fn in runners.items():
                val = fn()
                best[key] = val if not best[key] == best[key] else max(best[key], val)  # nan-safe max
        ours, call, hooks, ghost = best["ours"], best["call"], best["hooks"], best["ghost"]
        naive = float("nan") if args.no_naive else bench_jax(model, x, y.astype(np.int32), min(args.seconds, 2.0), naive=True)
        print(f"{name:24s} {model.num_params:8d} {ours:10.1f} {call:9.1f} {naive:10.1f} {hooks:9.1f} {ghost:9.1f} "
              f"{ours / hooks:8.2f} {ours / ghost:7.2f} {call / ghost:16.2f}", flush=True)
    if args.audit_trials > 0:
        tps, rate = bench_audit(args.audit_trials)
        print(f"\nfull audit loop (digits, MLP 64-10-10, |D₋| = 999, q = 1, T = 100, prior 10, ε = 4, "
              f"train + adversary): {tps:.1f} trials/s  (alg2 {rate['rate']:.3f} over {rate['trials']} trials)")


if __name__ == "__main__":
    main()
