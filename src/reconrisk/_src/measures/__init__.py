"""Risk measures as functions of mathematical objects: a PMF or a curve, an RDP curve, (σ, q, T) and κ.

* :mod:`.rero` (with :mod:`.rero_grid`, :mod:`.rero_analytic`) — the ReRo bound for DP-SGD (Hayes,
  Mahloujifar & Balle 2023, Cor. 4): closed forms, the analytic bracket, the grid choices (the PLD
  bracket that asks a release's distributions is :mod:`reconrisk._src.analysis.privacy_rero`); :mod:`.rero_zeroout` — replace-one
  releases against the zero-out reference (exact, no PLD); :mod:`.montecarlo` — its Monte-Carlo
  estimate; :mod:`.reference` — exact values for the soundness tests;
* :mod:`.tradeoff` — the certified trade-off curve's result and closed forms (Dong, Roth & Su 2022);
  :mod:`.risk`, :mod:`.risk_curves` — the formulas of every risk measure of ``reconrisk risk``, read off a
  curve (the questions that ask an analysis: :mod:`reconrisk._src.analysis.risk`);
* :mod:`.conversions`, :mod:`.baselines` — the papers' conversions of a guarantee to ReRo (Balle,
  Cherubin & Hayes 2022); :mod:`.fdp`, :mod:`.rdp_tradeoff`, :mod:`.vmf_rero` — the tightest ones
  ((ε, δ) and ε-DP trade-off curves; RDP and zCDP through Riess et al.'s 2026 optimal reduction; VMF).

Layer 2, the lowest of its layer: imports the core and :mod:`reconrisk._src.accounting` only. No measure takes an
:class:`~reconrisk._src.analysis.base.Analysis` (``tests/test_one_cache.py``); names that moved up to
:mod:`reconrisk._src.analysis` still read from here, deprecated (:func:`reconrisk._src._deprecated.moved_names`).
"""
