"""Conversions of a guarantee alone (issue 24 item 3): measured figures, gains over the papers' conversions, times.

    PYTHONPATH=src python3.11 benchmarks/bench_conversions.py

For each case it prints the optimal conversion, the conversion it replaces (Balle, Cherubin & Hayes
2022: Thm 2 / Cor. 3 / Cor. 4), the exact risk where reconrisk has one (PLD bracket or closed form)
and the wall time of one call (median of 5). Every figure is measured in this run.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from reconrisk._src.measures.conversions import rdp_rero_bound, rero_from_dp, rero_from_zcdp
from reconrisk._src.measures.fdp import rero_dp
from reconrisk._src.measures.rdp_tradeoff import release_rdp_power, rero_rdp_curve, tradeoff_release_rdp, zcdp_power
from reconrisk._src.analysis.privacy_rero import rero_bounds
from reconrisk._src.measures.vmf_rero import rero_vmf
from reconrisk._src.release import Release
from reconrisk._src.analysis.privacy import PrivacyAnalysis


def timed(fn, reps=5):
    ts, out = [], None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return out, statistics.median(ts)


def row(name, new, old, exact, secs):
    ex = "" if exact is None else f"{exact:.4f}"
    print(f"{name:<44} {new:>8.4f} {old:>8.4f} {ex:>8} {secs * 1e3:>9.1f}")


def main() -> None:
    print(f"{'case':<44} {'optimal':>8} {'paper':>8} {'exact':>8} {'ms/call':>9}")
    (b, s) = timed(lambda: rero_dp(0.6, 1.0))
    row("(1, 0)-DP, kappa 0.6", b.upper, rero_from_dp(0.6, 1.0)[0], None, s)
    (b, s) = timed(lambda: rero_dp(0.3, 2.0, 1e-5))
    row("(2, 1e-5)-DP, kappa 0.3", b.upper, rero_from_dp(0.3, 2.0, 1e-5)[0], None, s)
    (b, s) = timed(lambda: zcdp_power(0.01, 0.5))
    row("0.5-zCDP, kappa 0.01", b[0], rero_from_zcdp(0.01, 0.5)[0], None, s)
    orders = np.concatenate([[1.0], 1 + np.geomspace(1e-3, 100, 60)])
    (b, s) = timed(lambda: rero_rdp_curve(0.1, orders, 2.0 * orders))
    row("RDP curve of 61 points (eps = 2a), kappa 0.1", b.upper, b.balle2022_upper, None, s)
    for sig, q, T, k in [(1.0, 0.01, 1000, 0.1), (1.0, 0.01, 1000, 0.5), (5.0, 1.0, 100, 0.1), (0.8, 0.05, 200, 0.01)]:
        rel = Release(sig, q, T)
        for sym in (False, True):
            (p, s) = timed(lambda: release_rdp_power(rel, k, symmetric=sym), reps=3)
            ex = rero_bounds(PrivacyAnalysis(rel), k, method="pld")[0]
            tag = "one-sided" if not sym else "both dirs"
            row(f"sigma {sig} q {q} T {T} kappa {k} ({tag})", p[0], float(rdp_rero_bound(rel.segments, [k])[0]),
                ex.upper, s)
    alphas = np.linspace(0.005, 0.995, 199)
    (_, s) = timed(lambda: tradeoff_release_rdp(Release(1.0, 0.01, 1000), alphas), reps=3)
    print(f"{'trade-off curve, 199 alphas, sigma 1 q 0.01 T 1000':<44} {'':>8} {'':>8} {'':>8} {s * 1e3:>9.1f}")
    for c, n in [(100.0, 3), (100.0, 1406), (300.0, 3)]:
        (b, s) = timed(lambda: rero_vmf(0.1, c, 13700, 128 / 60000, n), reps=3)
        row(f"VMF conc {c:g} p 13700 q 128/60000 N {n}, k 0.1", b.upper, b.balle2022_upper, None, s)


if __name__ == "__main__":
    main()
