"""Noise mechanisms beyond the Gaussian (which needs no module of its own).

* :mod:`.vmf` — the von Mises–Fisher law (Biswas et al. 2024): a stable log I_ν (Debye's expansion or
  scipy/series), its normaliser and density, and Wood's sampler with a Householder reflection in numpy and
  JAX.
* the ``dp_accounting`` events once refused, one module each, registered on import (:mod:`.base`):
  :mod:`.truncated_poisson` (``TruncatedSubsampledGaussianDpEvent``: the ``TruncatedPoisson`` sampler and its
  Gaussian step's PLD), :mod:`.tree_aggregation` (DP-FTRL), :mod:`.repeat_select` (private tuning), :mod:`.zcdp`,
  read under :mod:`.as_stated`'s sampler where the guarantee is stated for the whole step; :mod:`.checks` holds the
  one-line checks of events handed to ``dp_accounting``'s constructors (mixture of Gaussians).

Layer 1: imports the core and, for the PLD engine and RDP curves, :mod:`reconrisk.accounting` (the same layer; JAX
through :mod:`reconrisk._jax`, inside functions).
"""
