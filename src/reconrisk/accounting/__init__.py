"""Privacy accounting: ε(σ, q, T, δ) and its inverses, privacy-loss distributions, RDP, Gaussian DP.

* :mod:`.epsilon` — ε for a :class:`~reconrisk.Release` and σ for a target ε (PLD, RDP, dp_accounting);
* :mod:`.pld` — reconrisk's own privacy-loss-distribution engine (pessimistic and optimistic);
* :mod:`.rdp` — Rényi-DP curves of the subsampled Gaussian and of schedules;
* :mod:`.gaussian` — the Gaussian mechanism's exact privacy profile and Gaussian DP (μ).

This package sits below :mod:`reconrisk.measures` and :mod:`reconrisk.analysis`: they read accountants, never the reverse.
"""

from .epsilon import ACCOUNTANTS, EPSILON_CAP, PLD_DISCRETIZATION, epsilon

__all__ = ["ACCOUNTANTS", "EPSILON_CAP", "PLD_DISCRETIZATION", "epsilon"]
