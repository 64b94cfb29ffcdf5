"""Integrations with other frameworks, each an optional extra imported on its own (nothing is imported here).

:mod:`reconrisk.integrations.opacus` (``ReconRiskAccountant``, ``make_private_with_risk``), ``.opacus_audit``
(``OneRunAudit``), ``.opacus_individual`` (``PerSampleNorms``, ``IndividualFilterHook``) need the ``opacus``
extra; :mod:`reconrisk.integrations.flower` (``ReconRiskAccountant``, ``StopBeforeBudget``,
``calibrate_flower``), ``.flower_adaptive``, ``.flower_local``, ``.flower_release`` and ``.flower_runtime``
the ``flower`` extra. Each public path is the implementation module in ``reconrisk._src.integrations`` itself.
"""
# reconrisk's public face: the modules here stand for reconrisk._src.integrations.*
