"""ε (reconrisk's certified bracket vs jax-privacy's own PLD and RDP accountants) and ReRo at κ = 0.1 for runs
jax-privacy trains: Poisson, fixed batches, noise and batch-size schedules, BandMF cycles, truncation, user level.

    PYTHONPATH=src python tools/jaxp_table.py        # a few minutes on 2 cores (jax-privacy's own PLD is the slow part)

Each row says what the gap between the numbers is made of.
"""

from __future__ import annotations

import time

from jax_privacy.accounting import (DpParams, DpsgdTrainingAccountant, DpsgdTrainingUserLevelAccountant,
                                    PldAccountantConfig, RdpAccountantConfig, SamplingMethod)

from reconrisk.integrations.jax_privacy import ReconRiskAccountant

DELTA, KAPPA = 1e-5, 0.1
FIXED = SamplingMethod.FIXED_BATCH_SIZE

SAME = "same dominating pair on the same 1e-4 grid; ours adds its certified round-off allowance"
SETTINGS = [
    ("Poisson s=1 B=256/60000", 1000, dict(noise_multipliers=1.0, num_samples=60000, batch_size=256), SAME),
    ("fixed batch s=1 B=100/10000", 200, dict(noise_multipliers=1.0, num_samples=10000, batch_size=100,
                                              sampling_method=FIXED),
     "orientation: ours composes the symmetrised per-step curve (Dong, Roth & Su 2022, Thm 4.2: a replace-one "
     "adversary picks each step's orientation); jax-privacy one orientation of the Poisson pair at s/2"),
    ("schedule s 1.2->0.9@500, B 256->512@300", 1000,
     dict(noise_multipliers=[(0, 1.2), (500, 0.9)], num_samples=60000, batch_size=256,
          batch_size_scale_schedule={300: 2}),
     "jax-privacy hands dp_accounting the schedule's float32 jax scalars; dp_accounting given Python floats "
     "agrees with ours (1.5552)"),
    ("BandMF c=10 s=2 B=500/50000", 2000, dict(noise_multipliers=2.0, num_samples=50000, batch_size=500,
                                              cycle_length=10), SAME + " (ceil(T/c) Poisson steps, q=B/(n//c))"),
    ("truncated Poisson s=1 B=100 cap 110", 200, dict(noise_multipliers=1.0, num_samples=10000, batch_size=100,
                                                    truncated_batch_size=110),
     SAME + " (truncated-Poisson pair); jax-privacy's RDP refuses truncation"),
    ("truncated BandMF c=3 s=1 B=20 cap 24", 300, dict(noise_multipliers=1.0, num_samples=6000, batch_size=20,
                                                     truncated_batch_size=24, cycle_length=3),
     SAME + " (truncated-Poisson pair, n//c examples)"),
    ("user level k=2 s=4 B=20/1000", 20, dict(noise_multipliers=4.0, num_samples=1000, batch_size=20,
                                             examples_per_user=2),
     "same mixture of Gaussians (Binomial(k, q) sensitivities); jax-privacy's user-level RDP refuses it"),
]


def _theirs(config, T, p) -> str:
    cls = DpsgdTrainingUserLevelAccountant if p.examples_per_user else DpsgdTrainingAccountant
    try:
        return f"{cls(config).compute_epsilon(T, p):.6f}"
    except ValueError:
        return "refused"


def main() -> None:
    ours = ReconRiskAccountant()
    print("| setting | T | eps ours | eps bracket | jax-privacy PLD | jax-privacy RDP | ReRo(0.1) ours | gap made of |")
    print("|---|---|---|---|---|---|---|---|")
    for name, T, kw, why in SETTINGS:
        t0 = time.time()
        p = DpParams(delta=DELTA, **kw)
        eps = ours.compute_epsilon(T, p)
        a = ours.analysis(T, p)
        b = a.epsilon(DELTA, two_sided=True)
        r = a.rero(KAPPA)
        pld, rdp = _theirs(PldAccountantConfig(), T, p), _theirs(RdpAccountantConfig(), T, p)
        print(f"| {name} | {T} | {eps:.6f} | [{b.lower:.6f}, {b.upper:.6f}] | {pld} | {rdp} | "
              f"[{r.lower:.4f}, {r.upper:.4f}] | {why} |  <!-- {time.time() - t0:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
