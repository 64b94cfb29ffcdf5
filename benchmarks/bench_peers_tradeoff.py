"""Trade-off curve against riskcal (Kulynych et al.): 1,000 α values, time, and α where riskcal leaves our bracket.

(The trade-off section of ``benchmarks/bench_peers.py``; kept in its own file
until that file is merged.) riskcal is never a dependency: run this in a
throwaway virtual environment that has it, e.g.

    python3.11 -m venv --system-site-packages /tmp/peervenv && /tmp/peervenv/bin/pip install riskcal
    PYTHONPATH=src /tmp/peervenv/bin/python benchmarks/bench_peers_tradeoff.py [--all]

For each setting both tools compute f(α) at the same 1,000 log-spaced α in
[1e-12, 0.5]. Printed: each tool's wall time and the ratio, our widest
bracket, and how many of riskcal's values lie **above** our certified upper
end (riskcal claims more privacy than is certified: unsound) or **below** our
lower end (looser than the exact curve), and how many of the former put the
attack's TPR more than 1 % below our certified lower end. riskcal's public ``get_beta_for_dpsgd``
returns the curve *symmetrised* over add and remove neighbours (Dong et al.,
Def. F.1), which is ≤ the remove-direction curve that reconrisk brackets (the
one that bounds membership and reconstruction attacks on an included target),
so values below our bracket are expected where the symmetrisation binds; we
also report riskcal's un-symmetrised remove-direction curve (its internal
``_plrv._tradeoff_function`` on the same PLD), the like-for-like comparison.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np

from reconrisk import Release
from reconrisk.bounds.tradeoff import tradeoff

SETTINGS = [  # (sigma, q, T) — the settings of the ReRo peer benchmark
    (1.0, 0.01, 1000),
    (2.0, 0.05, 2000),
    (0.8, 0.004, 10_000),
]
EXTRA = [(0.6, 0.001, 100_000)]
GRID_STEP = 1e-4  # riskcal's default PLD discretisation


def _riskcal(sigma, q, T, alphas):
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--all", action="store_true", help="also sigma=0.6 q=0.001 T=1e5 (slow for both tools)")
    args = ap.parse_args()
    alphas = np.logspace(-12, math.log10(0.5), 1000)
    print(f"1,000 alpha in [1e-12, 0.5]; riskcal grid_step={GRID_STEP:g} (its default)")
    head = f"{'setting':<26} {'ours [s]':>9} {'riskcal [s]':>11} {'ratio':>7} {'max width':>10} {'sym above':>9} {'sym below':>9} {'raw above':>9} {'raw below':>9} {'above, TPR off >1%':>18}"
    print(head)
    for sigma, q, T in SETTINGS + (EXTRA if args.all else []):
        rel = Release(sigma, q, T)
        tradeoff(rel, alphas[:5])  # warm numpy/scipy paths
        t0 = time.perf_counter()
        tr = tradeoff(rel, alphas)
        ours = time.perf_counter() - t0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sym, raw, theirs, pld = _riskcal(sigma, q, T, alphas)
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


if __name__ == "__main__":
    main()
