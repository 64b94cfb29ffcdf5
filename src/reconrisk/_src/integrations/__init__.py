"""Integrations with other frameworks, each an optional extra imported on its own.

* :mod:`reconrisk.integrations.opacus` — Opacus (``pip install reconrisk[opacus]``):
  ``ReconRiskAccountant`` and ``make_private_with_risk``; :mod:`.opacus_audit` — the one-run audit as a
  hook in a user's loop; :mod:`.opacus_individual` — per-sample norms and the individual filter as hooks;
* :mod:`reconrisk.integrations.flower` — Flower (``pip install reconrisk[flower]``):
  a PLD accountant for Flower's ``PrivacyAccountant`` protocol with client-level
  reconstruction risk, stopping before a round would pass a target, and noise
  calibration; :mod:`.flower_release` — the release each sampling mode means (the refilled cohort
  of no-amplification with m < n); :mod:`.flower_adaptive` — adaptive clipping accounted (update and
  clipped count); :mod:`reconrisk._src.integrations.flower_local` — the analytic (unbiased) attack's error
  law (Riess et al. 2024) and the ReRo of ``LocalDpMod`` updates; :mod:`.flower_runtime` — an
  in-process ``Grid``;
* :mod:`.jax_privacy_keras` — ``keras_config_for_rero``: jax-privacy's Keras ``DPKerasConfig`` with the noise
  multiplier that meets a ReRo target (re-exported by ``reconrisk.integrations.jax_privacy``; ``pip install
  reconrisk[jax-privacy,keras]``).

Layer 4: imports the core, accounting, measures, analysis, audit, individual and theory; never train,
attacks, experiments, report or cli. Nothing here is imported by ``import reconrisk``: importing this
package does not import any framework.
"""
