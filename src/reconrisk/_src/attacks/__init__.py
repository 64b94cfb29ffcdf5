"""Reconstruction attacks (simulation layer; needs the ``sim`` extra: JAX).

* :mod:`.prior_aware` — the prior-aware attack (Hayes, Mahloujifar & Balle 2023, Alg. 2/3);
* :mod:`.gradient_inversion` — gradient inversion (Hayes, Mahloujifar & Balle 2023, Eq. 1; Biswas et al. 2024);
* :mod:`.glm`, :mod:`.closed_form` — the closed-form attack on GLMs (Balle, Cherubin & Hayes 2022; Guo,
  Karrer, Chaudhuri & van der Maaten 2022);
* :mod:`.reconstructor` — the reconstructor network on shadow models (Balle, Cherubin & Hayes 2022);
* :mod:`.analytic`, :mod:`.analytic_step` — the optimal analytic attack (Riess et al. 2024).

Layer 3: imports the core, layers 1–2 and :mod:`reconrisk._src.train`; JAX through :mod:`reconrisk._src._jax`.
"""
