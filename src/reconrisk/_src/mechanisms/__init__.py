"""Every mechanism and sampler, one module each, registered in one registry (:mod:`.base`).

* :mod:`.base` — :class:`~.base.Mechanism`, :class:`~.base.Sampler`, :class:`~.base.Step`, the registry
  (``register``/``by_name``/``for_event``/``registered``) and the simulator hook (``attach_simulator``);
* :mod:`.samplers` — Poisson, fixed batch (replace-one), no amplification, shuffled (the stand-in);
* :mod:`.gaussian`, :mod:`.laplace`, :mod:`.discrete_laplace`, :mod:`.randomized_response`,
  :mod:`.mixture_gaussians`, :mod:`.von_mises_fisher` — the mechanisms; :mod:`.pld_build` builds the
  distributions of those that are not reconrisk's Gaussian engine;
* :mod:`.vmf` — the von Mises–Fisher law (Biswas et al. 2024): stable log I_ν, normaliser and density,
  Wood's sampler with a Householder reflection in numpy and JAX;
* :mod:`.traverse` — a ``dp_accounting`` event → steps, one traversal;
* the ``dp_accounting`` events once refused, one module each: :mod:`.truncated_poisson`
  (``TruncatedSubsampledGaussianDpEvent``: the ``TruncatedPoisson`` sampler and its Gaussian step's PLD),
  :mod:`.tree_aggregation` (DP-FTRL), :mod:`.repeat_select` (private tuning), :mod:`.zcdp`, read under
  the no-amplification sampler where the guarantee is stated for the whole step (never amplified again); :mod:`.checks` holds the one-line
  checks of events handed to ``dp_accounting``'s constructors (mixture of Gaussians).

Layer 1: imports the core and :mod:`reconrisk._src.accounting` (JAX through :mod:`reconrisk._src._jax`, inside functions).
Importing the package registers the classes a :class:`~reconrisk._src.release.Release` can hold (numpy only: ``import
reconrisk._src.release`` loads no scipy); :func:`.traverse.steps` imports (and so registers) every other mechanism
module the first time it reads an event.
"""

from . import base, samplers  # noqa: F401
from . import gaussian, von_mises_fisher  # noqa: F401
