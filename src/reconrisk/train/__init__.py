"""DP-SGD simulator (simulation layer; needs the sim extra: JAX and optax).

* :mod:`.models` — the seed 000 MNIST MLP (input→10→10, eLU), a small CNN and
  logistic regression, written so that every layer exposes its inputs
  ("activations") and accepts an additive perturbation of its outputs, whose
  gradient is the back-propagated signal. Per-example gradient norms and
  clipped sums follow from those two without per-example gradients.
* :mod:`.dpsgd` — clipping (hard, GELU soft clip of seed 001), DP-SGD steps,
  training with a :class:`~.dpsgd.Transcript` of what the mechanism releases.
"""
