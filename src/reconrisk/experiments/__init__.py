"""Orchestration, computation half: the informed-adversary trial runner behind ``reconrisk audit``
(:mod:`.audit`, :mod:`.trials`), Guo, Karrer, Chaudhuri & van der Maaten's (2022) FIL experiments (:mod:`.fil`), sweeps of the certified bound (:mod:`.curves`) and
Riess et al.'s (2024) simulations (:mod:`.analytic`). Results are returned, never drawn: :mod:`reconrisk.report` draws them.
"""
