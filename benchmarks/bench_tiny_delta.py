"""Benchmark: ε at tiny δ (1e-12 … 1e-15), reconrisk's bracket against dp_accounting's PLD and RDP (plain script).

    PYTHONPATH=src python benchmarks/bench_tiny_delta.py

Prints ``uptime``, then per setting: reconrisk's certified bracket [lower, upper] (``PrivacyAnalysis.epsilon``,
two-sided, a fresh analysis each time) and its method, ``dp_accounting``'s pessimistic PLD (``PLDAccountant``,
value_discretization 1e-4) and optimistic PLD (privacy buckets), RDP (``RdpAccountant``), and the wall times
of reconrisk's bracket and of dp_accounting's pessimistic ε with their ratio. Run it twice (the machine is
shared: the second ``uptime`` shows the load). With ``PYTHONPATH`` pointing at another tree it measures that
tree (the "before" figures).
"""

from __future__ import annotations

import logging
import subprocess
import time

import dp_accounting as dpa
from dp_accounting.pld import pld_privacy_accountant, privacy_loss_distribution
from dp_accounting.rdp import rdp_privacy_accountant

from reconrisk import Release
from reconrisk._src.analysis.privacy import PrivacyAnalysis

SETTINGS = [
    ([(1.0, 0.01, 1000)], 1e-12),
    ([(0.9, 0.005, 4000)], 1e-13),
    ([(2.0, 0.05, 500)], 1e-14),
    ([(1.6, 0.03, 800)], 1e-14),
    ([(1.0, 0.01, 300), (1.3, 0.02, 200), (0.8, 0.01, 500)], 1e-15),
]


def _event(s, q):
    return dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(s))


def main() -> None:
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    logging.disable(logging.WARNING)
    print(f"{'setting':<38} {'delta':>7} {'ours [lower, upper]':>24} {'method':>6} {'dpa pess':>9} {'dpa opt':>9} "
          f"{'RDP':>7} {'t ours':>7} {'t dpa':>7} {'dpa/ours':>8}")
    for segs, delta in SETTINGS:
        rel = Release(*segs[0]) if len(segs) == 1 else Release.schedule(segs)
        t0 = time.perf_counter()
        b = PrivacyAnalysis(rel).epsilon(delta, two_sided=True)
        t_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        acc = pld_privacy_accountant.PLDAccountant()
        for s, q, t in segs:
            acc.compose(_event(s, q), t)
        pess = acc.get_epsilon(delta)
        t_dpa = time.perf_counter() - t0
        opt = None
        for s, q, t in segs:
            one = privacy_loss_distribution.from_gaussian_mechanism(
                s, sampling_prob=q, pessimistic_estimate=False, value_discretization_interval=1e-4).self_compose(t)
            opt = one if opt is None else opt.compose(one)
        r = rdp_privacy_accountant.RdpAccountant()
        for s, q, t in segs:
            r.compose(_event(s, q), t)
        name = " + ".join(f"σ{s} q{q} T{t}" for s, q, t in segs)
        lo = "—" if b.lower is None else f"{b.lower:.4f}"
        print(f"{name:<38} {delta:>7.0e} {'[' + lo + ', ' + f'{b.upper:.4f}' + ']':>24} {b.method:>6} {pess:>9.4f} "
              f"{opt.get_epsilon_for_delta(delta):>9.4f} {r.get_epsilon(delta):>7.4f} {t_ours:>6.2f}s {t_dpa:>6.2f}s "
              f"{t_dpa / t_ours:>7.2f}×")
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
