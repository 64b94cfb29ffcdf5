"""ε of reconrisk's Flower accountant against Flower's own RDP accountant, across Flower's sampling modes.

    PYTHONPATH=src python benchmarks/bench_flower.py [--runtimes]

Prints one row per setting: ε (δ = 1e-5) from ``ReconRiskAccountant`` (PLD; exact Gaussian DP at q = 1),
from Flower's ``RdpAccountant`` (dp_accounting's RDP) and, under without-replacement, from dp_accounting's
RDP at σ/2 (the release Flower's noise actually gives under replace-one: the clipped sum moves by 2C), with
the ratio and what the gap is made of. Also the time each accountant takes (measured here, not asserted).

``--runtimes``: the wall time of one accounted Flower run (tests/test_flower.py's MLP on the digits, 10
clients, 5 a round, 6 rounds, σ 3) in Flower's simulation runtime (``run_simulation``, Ray on 1 CPU,
Ray's start and stop included) and in reconrisk's in-process runtime, and their ratio; the machine's
load average is printed beside them (shared machines make these numbers noisy).
"""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

import dp_accounting as dpa
from flwr.serverapp import GaussianPrivacyEvent, NeighboringRelation, PrivacyConfig, RdpAccountant, SamplingMethod

from reconrisk.integrations.flower import ReconRiskAccountant, epsilon_gap_note

DELTA = 1e-5
RELATION = {"poisson": NeighboringRelation.ADD_OR_REMOVE_ONE, "no-amplification": NeighboringRelation.ADD_OR_REMOVE_ONE,
            "without-replacement": NeighboringRelation.REPLACE_ONE}
SETTINGS = [  # (mode, sigma, clients per round, clients, rounds)
    ("poisson", 1.0, 10, 1000, 100), ("poisson", 0.8, 50, 1000, 200), ("poisson", 2.0, 100, 10000, 1000),
    ("no-amplification", 1.0, 10, 1000, 100), ("no-amplification", 10.0, 10, 100, 50),
    ("no-amplification", 6.562, 5, 10, 20), ("no-amplification", 4.0, 8, 10, 30), ("no-amplification", 3.0, 10, 10, 20),
    ("without-replacement", 1.0, 10, 1000, 100), ("without-replacement", 2.0, 50, 1000, 200),
]


def same_release_rdp(sigma, m, n, t):
    acc = dpa.rdp.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    acc.compose(dpa.SelfComposedDpEvent(dpa.SampledWithoutReplacementDpEvent(n, m, dpa.GaussianDpEvent(sigma / 2)), t))
    return acc.get_epsilon(DELTA)


def main() -> None:
    print(f"{'mode':<20} {'sigma':>5} {'m/N':>10} {'T':>5} {'ours (PLD)':>10} {'Flower RDP':>10} "
          f"{'RDP same rel.':>13} {'ratio':>6} {'t ours':>7} {'t RDP':>6}  gap")
    for mode, sigma, m, n, t in SETTINGS:
        cfg = PrivacyConfig(DELTA, n, RELATION[mode], SamplingMethod(mode))
        ev = GaussianPrivacyEvent(sigma, m, n)
        t0 = time.perf_counter()
        ours = ReconRiskAccountant(cfg)
        ours.compose(ev, t)
        e_ours = ours.get_epsilon(DELTA)
        t1 = time.perf_counter()
        rdp = RdpAccountant(cfg)
        rdp.compose(ev, t)
        e_rdp = rdp.get_epsilon(DELTA)
        t2 = time.perf_counter()
        # without replacement, and no amplification with m < n (the refilled cohort): the same release is m of n
        # without replacement at shift 2C, dp_accounting's RDP at sigma/2
        refilled = mode == "without-replacement" or (mode == "no-amplification" and m < n)
        same = same_release_rdp(sigma, m, n, t) if refilled else e_rdp
        print(f"{mode:<20} {sigma:>5g} {f'{m}/{n}':>10} {t:>5} {e_ours:>10.3f} {e_rdp:>10.3f} {same:>13.3f} "
              f"{e_ours / same:>6.3f} {t1 - t0:>6.2f}s {t2 - t1:>5.2f}s  {epsilon_gap_note(mode)}")
    print("ratio = ours / RDP of the same release (without replacement, and no amplification with m < n: "
          "dp_accounting's RDP at sigma/2)")


def runtimes(rounds: int = 6) -> None:
    import numpy as np
    from flwr.app import ConfigRecord
    from flwr.serverapp import ServerApp
    from flwr.simulation import run_simulation

    from reconrisk.integrations.flower_runtime import run_in_process

    os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import test_flower as tf

    def once(runner) -> tuple[float, int]:
        acct = ReconRiskAccountant(tf.config())
        strategy = tf.dp_strategy(acct, sigma=3.0)
        server = ServerApp()

        @server.main()
        def main_(grid, context):
            strategy.start(grid=grid, initial_arrays=tf.init_arrays(), num_rounds=rounds, train_config=ConfigRecord({}))

        random.seed(0)
        np.random.seed(0)
        t0 = time.perf_counter()
        runner(server)
        return time.perf_counter() - t0, acct.num_releases

    t_in, n_in = once(lambda s: run_in_process(s, tf.make_client_app(), tf.N_CLIENTS))
    t_ray, n_ray = once(lambda s: run_simulation(server_app=s, client_app=tf.make_client_app(),
                                                 num_supernodes=tf.N_CLIENTS, backend_config=tf.RAY_BACKEND))
    load = os.getloadavg()[0]
    print(f"{rounds} accounted rounds ({n_in}, {n_ray} releases): in-process {t_in:.2f} s, Flower's simulation "
          f"runtime (Ray, 1 CPU) {t_ray:.2f} s, ratio {t_ray / t_in:.1f}; load average {load:.1f} on "
          f"{os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
    if "--runtimes" in sys.argv[1:]:
        runtimes()
