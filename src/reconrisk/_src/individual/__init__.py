"""Per-example privacy: who is at risk, and a per-example budget fixed before training.

* :mod:`.levels` — the sensitivity levels each clipped-gradient norm is rounded up onto;
* :mod:`.privacy` — :func:`~.privacy.individual_analysis`: each example's privacy from the norms a run
  produced (ex-post estimates, Yu et al. 2023) beside the certified worst case;
* :mod:`.filter` — :class:`~.filter.IndividualFilter`, Feldman & Zrnic's (2021) individual Rényi filter:
  the certificate, one budget for every example.

Layer 2: imports the core, :mod:`reconrisk._src.accounting`, :mod:`reconrisk._src.measures` and
:mod:`reconrisk._src.analysis`; :mod:`reconrisk._src.train` and the integrations call it, never the reverse.
"""
