"""The analyses: one contract, its three implementations, the dispatch and the calibrator.

* :mod:`.base` — :class:`~.base.Analysis` (``epsilon``, ``delta``, ``rero``, ``tradeoff``, ``risk``,
  ``gdp_mu``, ``supports(question)``) and :class:`~.base.Support`;
* :mod:`.privacy` — :class:`~.privacy.PrivacyAnalysis`, a DP-SGD release analysed once;
* :mod:`.events` — :class:`~.events.EventAnalysis`, any ``dp_accounting`` event (or steps) whose every step
  has a privacy-loss distribution (each step's own, :mod:`reconrisk.mechanisms`);
* :mod:`.guarantee` — :class:`~.guarantee.GuaranteeAnalysis`, what a guarantee alone certifies;
* :mod:`.dispatch` — :func:`analyse`, from a release, an event, steps or an analysis to its analysis (steps
  without a PLD: the composed RDP curve as a guarantee);
* :mod:`.calibrate` (and the deprecated :mod:`.calibrate_risk`) — the one calibrator.

Layer 2: imports the core, :mod:`reconrisk.accounting`, :mod:`reconrisk.mechanisms` and :mod:`reconrisk.measures` (which reads an
analysis through the contract and never imports this package). Nothing here imports ``theory``,
``individual``, ``audit`` or anything above.
"""

from .dispatch import analyse

__all__ = ["analyse"]
