"""DP-SGD simulator (simulation layer; needs the sim extra: JAX and optax).

* :mod:`.models` — the Hayes, Mahloujifar & Balle 2023 MNIST MLP (input→10→10, eLU), a small CNN and
  logistic regression, written so that every layer exposes its inputs
  ("activations") and accepts an additive perturbation of its outputs, whose
  gradient is the back-propagated signal.
* :mod:`.clipping` — per-example norms, clip factors (hard, GELU soft clip of
  Guo, Karrer, Chaudhuri & van der Maaten 2022) and clipped sums from those two, without per-example gradients.
* :mod:`.noise` — the noise stage, one function per ``Release.noise`` family.
* :mod:`.dpsgd` — the composable step (Poisson batch → clipped sum → noise →
  optax update) and :func:`~.dpsgd.train` with per-step hooks.
* :mod:`.transcript` — what the mechanism releases, streamed to ``.npz``.
* :mod:`.fil` — Guo et al.'s (2022) FIL accounting, a hook on the trainer.
* :mod:`.individual` — per-example norm recording and the individual filter as hooks.
* :mod:`.convex`, :mod:`.shadow`, :mod:`.shadow_dense` — exact convex solvers and vmapped shadow models.

Layer 3: imports the core and layers 1–2 (accounting, mechanisms, individual, theory); JAX through
:mod:`reconrisk._src._jax`. Never attacks, experiments or anything above.
"""
