"""reconrisk against peer tools on the same DP-SGD settings (issue 9, item 6).

Peer: riskcal (Kulynych et al., NeurIPS 2024), which computes the trade-off
curve β(α) from dp_accounting's PLD and so gives ReRo = 1 − β(κ); it is
installed ONLY in a throwaway venv, never a dependency:

    python3.11 -m venv --system-site-packages /tmp/peervenv && /tmp/peervenv/bin/pip install riskcal
    PYTHONPATH=src /tmp/peervenv/bin/python benchmarks/bench_peers.py [--calibration-limit 120]

Sections are functions: ``rero_section`` (ReRo values, times, our bracket),
``tradeoff_section`` (issue 11: 1,000 α of the trade-off curve) and
``calibration_section`` (σ for a target ReRo). Every figure printed is
measured in this run.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import time
import warnings

import numpy as np

import reconrisk as rr
from reconrisk import Release
from reconrisk._src.api import tradeoff

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


TRADEOFF_SETTINGS = [  # (sigma, q, T) — the settings of the ReRo section
    (1.0, 0.01, 1000),
    (2.0, 0.05, 2000),
    (0.8, 0.004, 10_000),
]
TRADEOFF_EXTRA = [(0.6, 0.001, 100_000)]
GRID_STEP = 1e-4  # riskcal's default PLD discretisation


def _riskcal_curve(sigma, q, T, alphas):
    from dp_accounting.pld import privacy_loss_distribution as pld_module
    from riskcal.analysis import _plrv
    from riskcal.analysis.conversions import pld_to_plrvs

    t0 = time.perf_counter()
    pld = pld_module.from_gaussian_mechanism(
        standard_deviation=sigma, sampling_prob=q, use_connect_dots=True, value_discretization_interval=GRID_STEP
    ).self_compose(T)
    plrvs = pld_to_plrvs(pld)
    sym = _plrv.get_beta(plrvs, alphas)  # what riskcal.calibration.dpsgd.get_beta_for_dpsgd returns
    elapsed = time.perf_counter() - t0
    # the two un-symmetrised orientations of the same pair
    raw = [_plrv._tradeoff_function(plrvs, alphas.copy()), _plrv._inverse_tradeoff_function(plrvs, alphas.copy())]
    return np.asarray(sym), [np.asarray(r) for r in raw], elapsed, pld


def _np_upper_tpr(pld, alpha: float) -> float:
    """Independent upper bound on the TPR 1 − f(α): min over an ε grid of e^ε α + δ(ε), δ from dp_accounting's
    pessimistic remove-direction PMF (each ε gives a valid bound)."""
    eps = np.linspace(0.0, 40.0, 801)
    d = np.array([pld._pmf_remove.get_delta_for_epsilon(float(e)) for e in eps])
    return float(np.min(np.exp(eps) * alpha + d))


def tradeoff_section(include_slow: bool = False) -> None:
    """Trade-off curve (issue 11): 1,000 α in [1e-12, 0.5] from both tools; time and α where riskcal leaves our bracket.

    riskcal's public ``get_beta_for_dpsgd`` returns the curve *symmetrised* over
    add and remove neighbours (Dong et al., Def. F.1), which is ≤ the
    remove-direction curve that reconrisk brackets (the one that bounds
    membership and reconstruction attacks on an included target), so values
    below our bracket are expected where the symmetrisation binds; riskcal's
    un-symmetrised remove-direction curve (its internal
    ``_plrv._tradeoff_function`` on the same PLD) is the like-for-like
    comparison. "above" counts α where riskcal claims more privacy than is
    certified (unsound); the last column counts those where the attack's TPR is
    more than 1 % below our certified lower end.
    """
    print("\n== trade-off curve ==")
    alphas = np.logspace(-12, math.log10(0.5), 1000)
    print(f"1,000 alpha in [1e-12, 0.5]; riskcal grid_step={GRID_STEP:g} (its default)")
    head = f"{'setting':<26} {'ours [s]':>9} {'riskcal [s]':>11} {'ratio':>7} {'max width':>10} {'sym above':>9} {'sym below':>9} {'raw above':>9} {'raw below':>9} {'above, TPR off >1%':>18}"
    print(head)
    for sigma, q, T in TRADEOFF_SETTINGS + (TRADEOFF_EXTRA if include_slow else []):
        rel = Release(sigma, q, T)
        tradeoff(rel, alphas[:5])  # warm numpy/scipy paths
        t0 = time.perf_counter()
        tr = tradeoff(rel, alphas)
        ours = time.perf_counter() - t0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sym, raw, theirs, pld = _riskcal_curve(sigma, q, T, alphas)
        lo, up = tr.beta_lower, tr.beta_upper
        # the raw orientation that matches ours is the one closer to our bracket
        best = min(raw, key=lambda r: float(np.mean(np.abs(r - 0.5 * (lo + up)))))
        label = f"sigma={sigma:g} q={q:g} T={T}"
        print(
            f"{label:<26} {ours:9.3f} {theirs:11.3f} {theirs / ours:6.1f}x {float(np.max(tr.width)):10.2e} "
            f"{int(np.sum(sym > up)):9d} {int(np.sum(sym < lo)):9d} {int(np.sum(best > up)):9d} {int(np.sum(best < lo)):9d} "
            f"{int(np.sum((sym > up) & (1 - sym < 0.99 * tr.power_lower))):18d}"
        )
        worst = int(np.argmax((sym - up) / np.maximum(1 - up, 1e-300)))
        if sym[worst] > up[worst]:
            a = float(alphas[worst])
            print(f"{'':<26} worst (relative, in TPR) riskcal excess at alpha={a:.3g}: riskcal TPR={1 - sym[worst]:.6g}, "
                  f"ours in [{tr.power_lower[worst]:.6g}, {tr.power_upper[worst]:.6g}], "
                  f"dp_accounting NP upper {_np_upper_tpr(pld, a):.6g}")
        worst = int(np.argmax(lo - best))
        if best[worst] < lo[worst]:
            print(f"{'':<26} worst raw shortfall below our lower end: alpha={alphas[worst]:.3g} riskcal={best[worst]:.6g} ours>={lo[worst]:.6g}")


#: fixed-size batches: (sigma, q, T) whose pair quantities compose the symmetrised per-step curve
FIXED_SETTINGS = [(2.0, 0.1, 10), (1.0, 0.01, 1000), (0.8, 0.004, 10_000)]


def fixed_batch_section(settings=FIXED_SETTINGS) -> None:
    """Time of ε(1e-5) (two-sided) and the membership advantage of a fixed-batch release: now (the
    symmetrised composition) against before (the Poisson pair at σ/2, both directions — the number the
    library used to certify, which an adaptive replace-one adversary can exceed). No peer needed."""
    from reconrisk._src.analysis.privacy import PrivacyAnalysis

    print("fixed-size batches: eps(1e-5) two-sided + membership advantage, fresh analysis each")
    for sigma, q, T in settings:
        row = []
        for name, rel in (("before (Poisson pair at sigma/2)", Release(sigma / 2, q, T)),
                          ("now (symmetrised C_q)", Release(sigma, q, T, sampler="fixed"))):
            t0 = time.perf_counter()
            a = PrivacyAnalysis(rel)
            e = a.epsilon(1e-5, two_sided=True)
            m = a.risk("membership_advantage")
            dt = time.perf_counter() - t0
            row.append(dt)
            print(f"  sigma={sigma:g} q={q:g} T={T:<6} {name:<33} eps [{e.lower:.4f}, {e.upper:.4f}]  "
                  f"advantage <= {m.upper:.4f}  {dt:6.2f} s")
        print(f"  {'':<26} ratio now/before: {row[1] / row[0]:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calibration-limit", type=float, default=120.0, help="seconds allowed for riskcal's calibration")
    ap.add_argument("--all", action="store_true", help="trade-off section: also sigma=0.6 q=0.001 T=1e5 (slow for both tools)")
    ap.add_argument("--fixed-batch", action="store_true", help="only the fixed-batch section (no peer needed)")
    args = ap.parse_args()
    if args.fixed_batch:
        fixed_batch_section()
        return
    try:
        import riskcal  # noqa: F401, PLC0415
    except ImportError:
        raise SystemExit("riskcal is not installed here; see the module docstring (throwaway venv only)") from None
    rero_section()
    tradeoff_section(include_slow=args.all)
    calibration_section(limit=args.calibration_limit)


if __name__ == "__main__":
    main()
