"""The analyses: one contract, its three implementations, the dispatch and the calibrator.

* :mod:`.base` — :class:`~.base.Analysis` (``epsilon``, ``delta``, ``rero``, ``tradeoff``, ``risk``,
  ``gdp_mu``, ``supports(question)``) and :class:`~.base.Support`;
* :mod:`.privacy` — :class:`~.privacy.PrivacyAnalysis`, a DP-SGD release analysed once; its questions'
  bodies: :mod:`.privacy_rero` (the ReRo bracket and methods, the trade-off curve) and :mod:`.privacy_risk`
  (total variation, the best success over a prior);
* :mod:`.events` — :class:`~.events.EventAnalysis`, any ``dp_accounting`` event (or steps) whose every step
  has a privacy-loss distribution (each step's own, :mod:`reconrisk._src.mechanisms`); :mod:`.events_risk`, its total
  variation and best success over a prior;
* :mod:`.guarantee` — :class:`~.guarantee.GuaranteeAnalysis`, what a guarantee alone certifies;
* :mod:`.risk` — the risk measures of ``reconrisk risk``, asked of any analysis through the contract;
* :mod:`.dispatch` — :func:`analyse`, from a release, an event, steps or an analysis to its analysis (steps
  without a PLD: the composed RDP curve as a guarantee); :mod:`.accountant` — the shared cache of analyses by
  release and ``reconrisk.epsilon``;
* :mod:`.calibrate` (and the deprecated :mod:`.calibrate_risk`) — the one calibrator.

Layer 2: imports the core, :mod:`reconrisk._src.accounting`, :mod:`reconrisk._src.mechanisms` and :mod:`reconrisk._src.measures`
(functions of distributions, curves and (σ, q, T), which never see an analysis nor import this package). Nothing here imports ``theory``,
``individual``, ``audit`` or anything above.
"""

from .dispatch import analyse

__all__ = ["analyse"]
