"""Risk measures: from a trade-off curve or a guarantee to ReRo and the operational risks.

* :mod:`.rero` (with :mod:`.rero_grid`, :mod:`.rero_analytic`) — the ReRo bound for DP-SGD (Hayes,
  Mahloujifar & Balle 2023, Cor. 4), a certified PLD bracket; :mod:`.rero_zeroout` — replace-one
  releases against the zero-out reference (exact, no PLD); :mod:`.montecarlo` — its Monte-Carlo
  estimate; :mod:`.reference` — exact values for the soundness tests;
* :mod:`.tradeoff` — the certified trade-off curve (Dong, Roth & Su 2022); :mod:`.risk`,
  :mod:`.risk_curves` — every risk measure of ``reconrisk risk`` read off one curve;
* :mod:`.conversions`, :mod:`.baselines` — the papers' conversions of a guarantee to ReRo (Balle,
  Cherubin & Hayes 2022); :mod:`.fdp`, :mod:`.rdp_tradeoff`, :mod:`.vmf_rero` — the tightest ones
  ((ε, δ) and ε-DP trade-off curves; RDP and zCDP through Riess et al.'s 2026 optimal reduction; VMF).

Layer 2, the lowest of its layer: imports the core and :mod:`reconrisk._src.accounting` only. The measures
take an :class:`~reconrisk._src.analysis.base.Analysis` and read it through the contract, so they never import
:mod:`reconrisk._src.analysis`.
"""
