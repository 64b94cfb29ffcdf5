"""reconrisk against peer tools on the same DP-SGD settings (issue 9, item 6).

Peer: riskcal (Kulynych et al., NeurIPS 2024), which computes the trade-off
curve β(α) from dp_accounting's PLD and so gives ReRo = 1 − β(κ); it is
installed ONLY in a throwaway venv, never a dependency:

    python3.11 -m venv --system-site-packages /tmp/peervenv && /tmp/peervenv/bin/pip install riskcal
    PYTHONPATH=src /tmp/peervenv/bin/python benchmarks/bench_peers.py [--calibration-limit 120]

Sections are functions taking the settings (``rero_section``,
``calibration_section``); a trade-off-curve section can be added beside them
(H-risk). Every figure printed is measured in this run.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time

import numpy as np

import reconrisk as rr

SETTINGS = [
    # (sigma, q, T, kappa)
    (1.0, 0.01, 1000, 0.01),
    (0.8, 0.004, 10_000, 1e-3),
    (2.0, 0.05, 2000, 0.1),
    (0.6, 0.001, 100_000, 1e-4),
]
#: calibration: (target ReRo, kappa, q, T)
CALIBRATION = (0.05, 0.01, 0.01, 1000)


def _riskcal_beta(alpha: float, sigma: float, q: float, T: int) -> float:
    try:  # riskcal >= 1.5
        from riskcal.calibration.dpsgd import get_beta_for_dpsgd  # noqa: PLC0415 - the peer, throwaway venv only
    except ImportError:  # older releases
        from riskcal.dpsgd import get_beta_for_dpsgd  # noqa: PLC0415
    b = get_beta_for_dpsgd(alpha=np.array([alpha]), noise_multiplier=sigma, sample_rate=q, num_steps=T)
    return float(np.atleast_1d(b)[0])


def _riskcal_calibrate(target: float, kappa: float, q: float, T: int, out) -> None:
    try:
        from riskcal.calibration.dpsgd import find_noise_multiplier_for_err_rates  # noqa: PLC0415
    except ImportError:
        from riskcal.dpsgd import find_noise_multiplier_for_err_rates  # noqa: PLC0415

    t0 = time.perf_counter()
    s = find_noise_multiplier_for_err_rates(beta=1 - target, alpha=kappa, sample_rate=q, num_steps=T)
    out.put((float(s), time.perf_counter() - t0))


def rero_section(settings=SETTINGS) -> None:
    print("ReRo at fixed settings: riskcal 1 - beta(kappa) against reconrisk's certified bracket")
    print(f"{'setting':<34} {'riskcal':>11} {'t [s]':>7} {'ours lower':>11} {'ours upper':>11} {'t [s]':>7} {'ratio':>6}  peer outside bracket?")
    for sigma, q, T, kappa in settings:
        t0 = time.perf_counter()
        try:
            peer = 1.0 - _riskcal_beta(kappa, sigma, q, T)
        except Exception as exc:  # noqa: BLE001
            peer = float("nan")
            print(f"  riskcal failed: {exc}")
        t_peer = time.perf_counter() - t0
        t0 = time.perf_counter()
        b = rr.rero_bound(sigma, q, T, kappa=kappa)
        t_ours = time.perf_counter() - t0
        outside = "below" if peer < b.lower else ("above" if peer > b.upper else "no")
        label = f"s={sigma} q={q} T={T:g} k={kappa:g}"
        print(f"{label:<34} {peer:11.6g} {t_peer:7.2f} {b.lower:11.6g} {b.upper:11.6g} {t_ours:7.2f} {t_peer / t_ours:6.1f}  {outside}")


def calibration_section(setting=CALIBRATION, limit: float = 120.0) -> None:
    target, kappa, q, T = setting
    print(f"\nsigma calibration for ReRo <= {target} at kappa={kappa}, q={q}, T={T}")
    t0 = time.perf_counter()
    c = rr.calibrate_noise(target, q, T, kappa=kappa)
    t_ours = time.perf_counter() - t0
    print(f"  reconrisk: sigma={c['noise_multiplier']:.5f} certified upper {c['rero_upper']:.6f}  time {t_ours:.2f} s")
    ctx = mp.get_context("fork")
    qout = ctx.Queue()
    p = ctx.Process(target=_riskcal_calibrate, args=(target, kappa, q, T, qout))
    t0 = time.perf_counter()
    p.start()
    p.join(limit)
    if p.is_alive():
        p.terminate()
        p.join()
        print(f"  riskcal: no answer within the {limit:.0f} s limit (stopped)")
        return
    if qout.empty():
        print(f"  riskcal: failed (exit code {p.exitcode}) after {time.perf_counter() - t0:.1f} s")
        return
    s, dt = qout.get()
    ours_at = rr.rero_bound(s, q, T, kappa=kappa)
    print(f"  riskcal: sigma={s:.5f}  time {dt:.2f} s  (our certified bracket at that sigma: [{ours_at.lower:.6f}, {ours_at.upper:.6f}])")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calibration-limit", type=float, default=120.0, help="seconds allowed for riskcal's calibration")
    args = ap.parse_args()
    try:
        import riskcal  # noqa: F401, PLC0415
    except ImportError:
        raise SystemExit("riskcal is not installed here; see the module docstring (throwaway venv only)") from None
    rero_section()
    calibration_section(limit=args.calibration_limit)


if __name__ == "__main__":
    main()
