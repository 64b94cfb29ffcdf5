"""Paper reproductions behind ``reconrisk reproduce RECIPE``.

* :mod:`.recipes` — the registry: a recipe names its paper, tiny/small/full parameters and a compute
  function returning rows with the paper's number beside ours and their tolerance;
* one module per paper, which only calls library functions: :mod:`.hayes` (Hayes, Mahloujifar & Balle
  2023), :mod:`.guo` (Guo, Karrer, Chaudhuri & van der Maaten 2022), :mod:`.balle` (Balle, Cherubin &
  Hayes 2022), :mod:`.fmte` (Riess et al. 2024), :mod:`.vmf` (Biswas et al. 2024).

Layer 4: imports anything below (core to experiments); :mod:`reconrisk._src.report` draws what it returns.
"""
