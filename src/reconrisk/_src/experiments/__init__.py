"""Orchestration, computation half: what runs trials and collects results, never draws them.

The informed-adversary audit behind ``reconrisk audit`` (:mod:`.audit`, :mod:`.trials`), the one-run audit
(:mod:`.onerun`), Guo, Karrer, Chaudhuri & van der Maaten's (2022) FIL experiments (:mod:`.fil`), sweeps of
the certified bound (:mod:`.curves`), Riess et al.'s (2024) simulations (:mod:`.analytic`), the VMF
comparison (:mod:`.mechanisms`), who is at risk (:mod:`.individual`, :mod:`.individual_attack`), sweeps at
scale and their store (:mod:`.sweep`, :mod:`.sweep_file`, :mod:`.store`) and the risk report
(:mod:`.release_source`, :mod:`.riskreport`).

Layer 4: imports anything below (core, accounting, measures, analysis, audit, individual, theory, train,
attacks); never :mod:`reconrisk._src.report` or :mod:`reconrisk._src.cli`, which draw and print what this returns.
"""
