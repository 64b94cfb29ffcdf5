"""The analyses: one contract, its three implementations, the dispatch and the calibrator.

* :mod:`.base` — :class:`~.base.Analysis` (``epsilon``, ``delta``, ``rero``, ``tradeoff``, ``risk``,
  ``gdp_mu``, ``supports(question)``) and :class:`~.base.Support`;
* :mod:`.privacy` — :class:`~.privacy.PrivacyAnalysis`, a DP-SGD release analysed once;
* :mod:`.events`, :mod:`.event_leaves` — :class:`~.events.EventAnalysis`, any ``dp_accounting`` event
  with a privacy-loss distribution;
* :mod:`.guarantee` — :class:`~.guarantee.GuaranteeAnalysis`, what a guarantee alone certifies;
* :mod:`.dispatch` — :func:`analyse`, from a release, an event or an analysis to its analysis;
* :mod:`.calibrate` (and the deprecated :mod:`.calibrate_risk`) — the one calibrator.

Layer 2: imports the core, :mod:`reconrisk._src.accounting` and :mod:`reconrisk._src.measures` (which reads an
analysis through the contract and never imports this package). Nothing here imports ``theory``,
``individual``, ``audit`` or anything above.
"""

from .dispatch import analyse

__all__ = ["analyse"]
