"""VMF sampler and log I_ν speed (Biswas et al. 2024; spec_004 §10.3).

Prints, at p = 13,700 (the Biswas et al. 2024 MLP) and smaller p:
  1. samples per second of reconrisk's Wood + Householder sampler (numpy; and the JAX one),
     against ``scipy.stats.vonmises_fisher.rvs`` run in a subprocess with a time limit;
  2. the cost of ``log_iv`` per call (scalar and per element of a vector), beside scipy's ``ive``.

    PYTHONPATH=src python benchmarks/bench_vmf.py [--scipy-timeout 120] [--n 2000]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time

import numpy as np


def _scipy_rvs(p: int, kappa: float, n: int, q) -> None:
    from scipy import stats

    mu = np.zeros(p)
    mu[0] = 1.0
    t = time.perf_counter()
    stats.vonmises_fisher(mu, kappa).rvs(n, random_state=np.random.default_rng(0))
    q.put(time.perf_counter() - t)


def scipy_rate(p: int, kappa: float, n: int, timeout: float) -> str:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_scipy_rvs, args=(p, kappa, n, q))
    t = time.perf_counter()
    proc.start()
    proc.join(timeout)
    if proc.is_alive():
        proc.terminate()
        proc.join()
        return f"did not finish {n} samples in {timeout:.0f} s (< {n / timeout:.3g} samples/s)"
    elapsed = q.get() if not q.empty() else time.perf_counter() - t
    return f"{n / elapsed:.3g} samples/s ({n} in {elapsed:.2f} s)"


def ours_rate(p: int, kappa: float, n: int) -> float:
    from reconrisk._src.mechanisms.vmf import sample_vmf

    rng = np.random.default_rng(0)
    mu = rng.standard_normal(p)
    sample_vmf(mu, kappa, 10, rng)  # warm-up
    t = time.perf_counter()
    sample_vmf(mu, kappa, n, rng)
    return n / (time.perf_counter() - t)


def jax_rate(p: int, kappa: float, n: int) -> float:
    import jax
    import jax.numpy as jnp

    from reconrisk._src.mechanisms.vmf import sample_vmf_jax

    mu = jnp.zeros(p).at[0].set(1.0)
    f = jax.jit(jax.vmap(lambda k: sample_vmf_jax(k, mu, kappa)))
    f(jax.random.split(jax.random.PRNGKey(0), n)).block_until_ready()  # compile
    t = time.perf_counter()
    f(jax.random.split(jax.random.PRNGKey(1), n)).block_until_ready()
    return n / (time.perf_counter() - t)


def per_call(fn, reps: int) -> float:
    fn()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t) / reps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scipy-timeout", type=float, default=120.0)
    ap.add_argument("--n", type=int, default=2000)
    args = ap.parse_args()
    from scipy import special

    from reconrisk._src.mechanisms.vmf import log_iv

    print("1. VMF sampling (κ = 75)")
    for p, n_scipy in ((1000, 10), (2000, 10), (13700, 10)):
        ours = ours_rate(p, 75.0, args.n)
        sc = scipy_rate(p, 75.0, n_scipy, args.scipy_timeout)
        print(f"   p = {p:>5}: reconrisk numpy {ours:10.1f} samples/s | scipy.stats.vonmises_fisher: {sc}")
    try:
        print(f"   p = 13700: reconrisk JAX  {jax_rate(13700, 75.0, 500):10.1f} samples/s (vmap, compiled)")
    except ImportError:
        print("   JAX not installed: JAX sampler skipped")

    print("2. log I_ν cost")
    t_ours = per_call(lambda: log_iv(6849.0, 500.0), 2000)
    t_sc = per_call(lambda: special.ive(6849.0, 500.0), 2000)
    print(f"   scalar, ν = 6849, x = 500: log_iv {t_ours * 1e6:.1f} µs/call; scipy ive {t_sc * 1e6:.2f} µs/call "
          f"(ratio {t_ours / t_sc:.1f}×; scipy returns {special.ive(6849.0, 500.0)}, i.e. underflows)")
    x = np.linspace(1.0, 1e5, 100_000)
    t_vec = per_call(lambda: log_iv(6849.0, x), 20)
    t_vec_sc = per_call(lambda: special.ive(6849.0, x), 20)
    print(f"   vector of 1e5, ν = 6849: log_iv {t_vec / x.size * 1e9:.1f} ns/element; "
          f"scipy ive {t_vec_sc / x.size * 1e9:.1f} ns/element (ratio {t_vec / t_vec_sc:.2f}×)")
    nu_small = np.full(100_000, 10.0)
    t_small = per_call(lambda: log_iv(nu_small, x), 10)
    print(f"   vector of 1e5, ν = 10 (scipy branch): log_iv {t_small / x.size * 1e9:.1f} ns/element")


if __name__ == "__main__":
    main()
