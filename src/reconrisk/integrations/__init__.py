"""Integrations with other frameworks, each an optional extra imported on its own.

* :mod:`reconrisk.integrations.flower` — Flower (``pip install reconrisk[flower]``):
  a PLD accountant for Flower's ``PrivacyAccountant`` protocol with client-level
  reconstruction risk, stopping before a round would pass a target, and noise
  calibration; :mod:`reconrisk.integrations.flower_local` — the analytic
  reconstruction bounds (Riess et al. 2024) of ``LocalDpMod`` updates.

Nothing here is imported by ``import reconrisk``: importing this package does not import
any framework.
"""
