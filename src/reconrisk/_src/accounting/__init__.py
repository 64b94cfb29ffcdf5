"""Privacy accounting: ε(σ, q, T, δ) and its inverses, privacy-loss distributions, RDP, Gaussian DP.

* :mod:`.epsilon` — ε read off composed distributions (:func:`~.epsilon.epsilon_from_pmfs`), the closed forms
  and the RDP conversion; the door ``reconrisk.epsilon`` is :func:`reconrisk._src.analysis.accountant.epsilon`, which
  asks the release's cached analysis (the name here forwards to it, deprecated);
* :mod:`.pld` and its seams (:mod:`.pmf`, :mod:`.fft_roundoff`, :mod:`.pld_step`, :mod:`.pld_rounding`,
  :mod:`.pld_optimistic`, :mod:`.pld_tilt`, :mod:`.pld_batch`) — reconrisk's own privacy-loss-distribution
  engine, pessimistic and optimistic, and its batched per-example composition;
* :mod:`.rdp`, :mod:`.order2`, :mod:`.hull` — Rényi-DP curves of the subsampled Gaussian and of schedules;
* :mod:`.gaussian` — the Gaussian mechanism's exact privacy profile and Gaussian DP (μ);
* :mod:`.subsampling` — Guo, Karrer, Chaudhuri & van der Maaten's (2022) subsampling factor;
* :mod:`.vmf` — the von Mises–Fisher mechanism's RDP (Biswas et al. 2024).

Layer 1: imports the core (``release``, ``errors``, ``_validate``, …) and :mod:`reconrisk._src.mechanisms` only.
:mod:`reconrisk._src.measures` and :mod:`reconrisk._src.analysis` read accountants, never the reverse.
"""

from .epsilon import ACCOUNTANTS, EPSILON_CAP, PLD_DISCRETIZATION, epsilon

__all__ = ["ACCOUNTANTS", "EPSILON_CAP", "PLD_DISCRETIZATION", "epsilon"]
