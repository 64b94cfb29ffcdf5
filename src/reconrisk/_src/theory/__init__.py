"""Other papers' bounds on reconstruction, beside ReRo.

* :mod:`.mse` — MSE lower bounds of unbiased reconstruction (Guo, Karrer, Chaudhuri & van der Maaten 2022);
* :mod:`.fano` — Fano's bound (Guo, Sablayrolles & Sanjabi 2022, as compared in Hayes, Mahloujifar &
  Balle 2023, App. H);
* :mod:`.capacity` — Bayes' capacity (Biswas et al. 2024);
* :mod:`.analytic`, :mod:`.analytic_laws` — analytic gradient inversion: bounds, calibration and the
  optimal attack's success laws (Riess et al. 2024).

Layer 2: imports the core, :mod:`reconrisk._src.accounting`, :mod:`reconrisk._src.mechanisms` and
:mod:`reconrisk._src.analysis`; never train, attacks or anything above.
"""
