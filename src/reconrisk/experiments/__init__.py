"""Orchestration, computation half: the informed-adversary trial runner behind ``reconrisk audit``
(:mod:`.audit`, :mod:`.trials`), seed 001's FIL experiments (:mod:`.fil`), sweeps of the certified bound (:mod:`.curves`) and
seed 003's simulations (:mod:`.analytic`). Results are returned, never drawn: :mod:`reconrisk.report` draws them.
"""
