"""Noise mechanisms beyond the Gaussian (which needs no module of its own).

* :mod:`.vmf` — the von Mises–Fisher law (Biswas et al. 2024): a stable log I_ν (Debye's expansion or
  scipy/series), its normaliser and density, and Wood's sampler with a Householder reflection in numpy and
  JAX.

Layer 1: imports the core only (JAX through :mod:`reconrisk._src._jax`, inside functions).
"""
